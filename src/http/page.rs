//! The status page at `/`: server-rendered HTML with inline style and script (no build step,
//! nothing fetched from elsewhere), readable on a laptop and a phone, reloading itself every
//! 10 s. It shows the same data as the JSON API, from the same cached overview, and the
//! last hour's trends as inline SVG charts (`trends`); it is rendered on the blocking pool
//! ([`super::views`]). On a controller node it has a "Controller" section
//! (`super::controller::page`); a standalone controller's page leaves out the name server's
//! routes, topics and KV, which it never holds.
//!
//! Its `Content-Security-Policy` allows its own inline style and script, by their SHA-256, and
//! nothing else: no other script, no framing, no form posting elsewhere.

use std::sync::LazyLock;

use axum::extract::{Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{Html as HtmlResponse, IntoResponse, Response};
use base64::Engine as _;
use serde_json::Value;
use tokio::time::Instant;

use super::api::client_route;
use super::html::{Html, age, utc};
use super::views::Overview;
use super::{App, readiness, visible_config, with_overview};
use crate::protocol::code::version;
use crate::state::route_table::overview::{ClusterView, GroupView, find_topics};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Topic names listed for one search.
const TOPICS_LISTED: usize = 50;
/// KV entries listed per namespace.
const KV_ENTRIES_LISTED: usize = 200;

/// The page's query: `?topic=NAME` searches topics and shows NAME's route.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct PageQuery {
    #[serde(default)]
    topic: String,
}

/// The page's `Content-Security-Policy`.
static POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    let policy = format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; img-src data:; \
         form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        sha256(SCRIPT),
        sha256(STYLE)
    );
    HeaderValue::from_str(&policy).expect("base64 and ASCII only")
});

/// The base64 SHA-256 of `text`, as CSP hash sources write it.
fn sha256(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// `GET /`.
pub(super) async fn status_page(
    State(app): State<App>,
    Query(query): Query<PageQuery>,
) -> Response {
    with_overview(app, move |app, overview| {
        let page = render(app, overview, query.topic.trim());
        let policy = [(header::CONTENT_SECURITY_POLICY, POLICY.clone())];
        (policy, HtmlResponse(page)).into_response()
    })
    .await
}

fn render(app: &App, overview: &Overview, topic: &str) -> String {
    let mut h = Html::default();
    h.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .raw("<link rel=\"icon\" href=\"data:,\">")
        .raw("<title>namesrv ")
        .text(&app.remoting.to_string())
        .raw("</title><style>")
        .raw(STYLE)
        .raw("</style><noscript><meta http-equiv=\"refresh\" content=\"10\"></noscript></head><body>");
    header(&mut h, app);
    h.raw("<main>");
    cards(&mut h, app, overview);
    if let Some(controller) = &app.side.controller {
        super::controller::page::section(&mut h, controller);
    }
    let uptime = Instant::now().saturating_duration_since(app.state.started());
    super::trends::section(&mut h, &app.state.history().view(), uptime);
    // A standalone controller serves no name-server requests: its routes and KV are empty
    // by construction, not for want of brokers.
    if !app.side.standalone {
        clusters_section(&mut h, &overview.clusters);
        topics_section(&mut h, app, overview, topic);
        kv_section(&mut h, app);
    }
    config_section(&mut h, app);
    h.raw("</main><footer>JSON for scripts: ");
    if app.side.controller.is_some() {
        h.raw("<a href=\"/api/controller\">/api/controller</a> · ");
    }
    h.raw(
        "<a href=\"/api/status\">/api/status</a> · <a href=\"/api/clusters\">/api/clusters</a> · ",
    )
    .raw("<a href=\"/api/brokers\">/api/brokers</a> · <a href=\"/api/topics\">/api/topics</a> · ")
    .raw("<a href=\"/api/kv\">/api/kv</a> · <a href=\"/api/config\">/api/config</a> · ")
    .raw("<a href=\"/api/history\">/api/history</a> · ")
    .raw("<a href=\"/metrics\">/metrics</a> · <a href=\"/readyz\">/readyz</a>. ")
    .raw("This page reloads itself every 10 s.</footer><script>")
    .raw(SCRIPT)
    .raw("</script></body></html>");
    h.finish()
}

fn header(h: &mut Html, app: &App) {
    let now = Instant::now();
    let not_ready = readiness(&app.state, app.side.controller.as_ref(), now);
    h.raw("<header><h1>namesrv <small>")
        .text(env!("CARGO_PKG_VERSION"))
        .raw("</small></h1> ");
    if not_ready.is_empty() {
        h.raw("<span class=\"badge ok\" id=\"readiness\">ready</span>");
    } else {
        let reasons: Vec<String> = not_ready.iter().map(ToString::to_string).collect();
        h.raw("<span class=\"badge bad\" id=\"readiness\">not ready: ")
            .text(&reasons.join("; "))
            .raw("</span>");
    }
    h.raw(match app.side.standalone {
        true => "<div class=\"meta\">RocketMQ controller at ",
        false => "<div class=\"meta\">RocketMQ name server at ",
    })
    .text(&app.remoting.to_string())
    .raw(" · up ")
    .text(&age(now.saturating_duration_since(app.state.started())))
    .raw("</div></header>");
}

fn card(h: &mut Html, value: impl std::fmt::Display, label: &'static str, note: &str) {
    h.raw("<div class=\"card\"><b>")
        .num(value)
        .raw("</b><span>")
        .raw(label)
        .text(note)
        .raw("</span></div>");
}

fn cards(h: &mut Html, app: &App, overview: &Overview) {
    let clusters = &overview.clusters;
    let groups: usize = clusters.iter().map(|c| c.groups.len()).sum();
    let (live, topics) = (overview.live, overview.topics.len());
    let (namespaces, entries) = app.state.kv().counts();
    let m = app.state.metrics();
    h.raw("<section class=\"cards\" id=\"summary\">");
    if !app.side.standalone {
        card(h, clusters.len(), "clusters", "");
        card(h, groups, "broker groups", "");
        card(h, live, "live brokers", "");
        card(h, topics, "topics", "");
    }
    let refused = m.connections_refused();
    let note = format!(
        " ({} accepted, {refused} refused)",
        m.connections_accepted()
    );
    card(h, m.connections_open(), "connections open", &note);
    if !app.side.standalone {
        let note = format!(" in {}", count(namespaces, "namespace"));
        card(h, entries, "KV entries", &note);
    }
    h.raw("</section>");
}

/// `1 key`, `2 keys`.
fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

fn write_state(h: &mut Html, g: &GroupView) {
    match (g.topics, g.writable_topics) {
        (0, _) => h.raw("<span class=\"tag\">no topics</span>"),
        (t, w) if t == w => h.raw("<span class=\"tag ok\">writable</span>"),
        (_, 0) => h.raw("<span class=\"tag bad\">read-only (write permission wiped)</span>"),
        (t, w) => h
            .raw("<span class=\"tag warn\">writable on ")
            .num(w)
            .raw(" of ")
            .num(t)
            .raw(" topics</span>"),
    };
}

fn clusters_section(h: &mut Html, clusters: &[ClusterView]) {
    h.raw("<section id=\"clusters\"><h2>Clusters</h2>");
    if clusters.is_empty() {
        h.raw("<p class=\"empty\">No broker has registered yet.</p>");
    }
    for c in clusters {
        h.raw("<h3>").text(&c.name).raw("</h3>");
        for g in &c.groups {
            h.raw("<div class=\"group\"><h4>").text(&g.name);
            if let Some(zone) = &g.zone {
                h.raw("<span class=\"tag\">zone ").text(zone).raw("</span>");
            }
            if g.enable_acting_master {
                h.raw("<span class=\"tag\">acting master</span>");
            }
            write_state(h, g);
            h.raw("<span class=\"tag\">")
                .text(&count(g.topics, "topic"))
                .raw("</span></h4>");
            h.raw("<div class=\"scroll\"><table><thead><tr><th>id</th><th>address</th>")
                .raw("<th>last heartbeat</th><th>evicted in</th><th>version</th>")
                .raw("<th>data version</th></tr></thead><tbody>");
            for b in &g.brokers {
                h.raw("<tr><td>").num(b.id);
                h.raw(if b.id == 0 { " (master)" } else { "" });
                h.raw("</td>").cell(&b.addr);
                match &b.live {
                    Some(live) => {
                        h.cell(&format!("{} ago", age(live.last_heartbeat_age)));
                        let class = match live.expires_in.as_secs() {
                            0..30 => "<td class=\"bad\">",
                            _ => "<td>",
                        };
                        h.raw(class).text(&age(live.expires_in)).raw("</td>");
                        let dv = &live.data_version;
                        let counter = dv.counter.map_or("null".to_owned(), |c| c.to_string());
                        h.cell(&version::name(live.version)).cell(&format!(
                            "{counter} (state {}) at {}",
                            dv.state_version,
                            utc(dv.timestamp)
                        ));
                    }
                    None => {
                        h.raw("<td colspan=\"4\" class=\"empty\">not in the live table</td>");
                    }
                }
                h.raw("</tr>");
            }
            h.raw("</tbody></table></div></div>");
        }
    }
    h.raw("</section>");
}

fn topics_section(h: &mut Html, app: &App, overview: &Overview, topic: &str) {
    let total = overview.topics.len();
    h.raw("<section id=\"topics\"><h2>Topics <span class=\"tag\">")
        .num(total)
        .raw("</span></h2><form method=\"get\" action=\"/#topics\" role=\"search\">")
        .raw("<input type=\"search\" name=\"topic\" placeholder=\"Topic name or part of it\" value=\"")
        .text(topic)
        .raw("\" aria-label=\"topic\"><button type=\"submit\">Show route</button></form>");
    if topic.is_empty() {
        h.raw("</section>");
        return;
    }
    let (found, matched) = find_topics(&overview.topics, topic, TOPICS_LISTED);
    if let Some(body) = client_route(app, topic) {
        route(h, topic, &body);
    } else {
        h.raw("<p class=\"empty\">No route for <b>")
            .text(topic)
            .raw("</b>.</p>");
    }
    if matched > 0 {
        h.raw("<h3>Topics containing “")
            .text(topic)
            .raw("” (")
            .num(matched)
            .raw(")</h3><p>");
        for name in &found {
            h.raw("<a href=\"/?topic=")
                .param(name)
                .raw("#topics\">")
                .text(name)
                .raw("</a> ");
        }
        if matched > found.len() {
            h.raw("…");
        }
        h.raw("</p>");
    }
    h.raw("</section>");
}

fn perm_name(perm: i64) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [(4, "read"), (2, "write"), (1, "inherit"), (8, "priority")] {
        if perm & bit != 0 {
            parts.push(name);
        }
    }
    format!("{perm} ({})", parts.join(", "))
}

/// A route body shown as tables, then as the JSON clients receive.
fn route(h: &mut Html, topic: &str, body: &[u8]) {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    };
    h.raw("<h3 id=\"route\">Route of ").text(topic).raw("</h3>");
    h.raw("<div class=\"scroll\"><table><thead><tr><th>broker group</th><th>read queues</th>")
        .raw("<th>write queues</th><th>permission</th><th>sys flag</th></tr></thead><tbody>");
    for q in parsed["queueDatas"].as_array().into_iter().flatten() {
        h.raw("<tr>")
            .cell(&s(&q["brokerName"]))
            .cell(&s(&q["readQueueNums"]));
        h.cell(&s(&q["writeQueueNums"]))
            .cell(&perm_name(q["perm"].as_i64().unwrap_or(0)))
            .cell(&s(&q["topicSysFlag"]))
            .raw("</tr>");
    }
    h.raw("</tbody></table></div><div class=\"scroll\"><table><thead><tr><th>broker group</th>")
        .raw("<th>cluster</th><th>addresses (id → address)</th><th>zone</th></tr></thead><tbody>");
    for b in parsed["brokerDatas"].as_array().into_iter().flatten() {
        let addrs: Vec<String> = b["brokerAddrs"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(id, addr)| format!("{id} → {}", s(addr)))
            .collect();
        h.raw("<tr>")
            .cell(&s(&b["brokerName"]))
            .cell(&s(&b["cluster"]));
        h.raw("<td class=\"wrap\">")
            .text(&addrs.join(", "))
            .raw("</td>");
        h.cell(&s(&b["zoneName"])).raw("</tr>");
    }
    h.raw("</tbody></table></div>");
    if let Some(conf) = parsed["orderTopicConf"].as_str() {
        h.raw("<p>Order topic configuration: ")
            .text(conf)
            .raw("</p>");
    }
    h.raw("<details id=\"route-json\"><summary>JSON as clients receive it</summary><pre>")
        .text(&String::from_utf8_lossy(body))
        .raw("</pre></details>");
}

fn kv_section(h: &mut Html, app: &App) {
    let table = app.state.kv().overview(KV_ENTRIES_LISTED);
    h.raw("<section id=\"kv\"><h2>KV store</h2>");
    if table.is_empty() {
        h.raw("<p class=\"empty\">No KV namespaces.</p>");
    }
    for ns in &table {
        h.raw("<details id=\"kv-")
            .param(&ns.namespace)
            .raw("\"><summary>")
            .text(&ns.namespace)
            .raw(" <span class=\"tag\">")
            .text(&count(ns.keys, "key"))
            .raw("</span></summary><div class=\"scroll\"><table><tbody>");
        for (k, v) in &ns.first {
            h.raw("<tr>")
                .cell(k)
                .raw("<td class=\"wrap\">")
                .text(v)
                .raw("</td></tr>");
        }
        h.raw("</tbody></table></div>");
        if ns.keys > KV_ENTRIES_LISTED {
            h.raw("<p class=\"empty\">… the rest: <a href=\"/api/kv/")
                .param(&ns.namespace)
                .raw("\">/api/kv/")
                .text(&ns.namespace)
                .raw("</a></p>");
        }
        h.raw("</details>");
    }
    h.raw("</section>");
}

fn config_section(h: &mut Html, app: &App) {
    let config = visible_config(&app.state);
    h.raw("<section id=\"config\"><h2>Configuration</h2><details id=\"config-table\"><summary>")
        .num(config.len())
        .raw(" effective keys (secrets hidden)</summary><div class=\"scroll\"><table><tbody>");
    for (k, v) in &config {
        h.raw("<tr>")
            .cell(k)
            .raw("<td class=\"wrap\">")
            .text(v)
            .raw("</td></tr>");
    }
    h.raw("</tbody></table></div></details></section>");
}
