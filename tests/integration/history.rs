//! The status page's trends over real sockets: `/api/history` after a few samples, the charts
//! on the page, and — when Chromium is installed — the page as a browser builds it.

use std::process::Command;
use std::time::Duration;

use namesrv::state::history::sample_now;

use crate::harness::{TestServer, register_master, route};
use crate::http::server_with;

/// A server with one broker and some route lookups between two samples of its history.
async fn sampled() -> TestServer {
    let server = server_with("").await;
    sample_now(&server.state);
    let mut broker = server.client().await;
    register_master(
        &mut broker,
        "broker-a",
        "10.0.0.1:10911",
        &["Orders", "Payments"],
    )
    .await;
    for _ in 0..20 {
        assert_eq!(route(&mut broker, "Orders").await.code, 0);
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    sample_now(&server.state);
    server
}

#[tokio::test]
async fn api_history_has_both_tiers_with_rates_latency_brokers_and_memory() {
    let server = sampled().await;
    let resp = server.get("/api/history").await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.header("x-content-type-options"), Some("nosniff"));
    let h: serde_json::Value = serde_json::from_str(&resp.body).unwrap();
    assert_eq!(h["sampleEverySeconds"], 10);
    let memory = h["memoryBytes"].as_u64().unwrap();
    assert!(memory > 10_000 && memory < 32 * 1024, "{memory}");
    assert_eq!(h["clusters"], serde_json::json!(["DefaultCluster"]));
    assert_eq!(
        h["oneMinute"],
        serde_json::json!([]),
        "none within a minute"
    );
    let fine = h["tenSeconds"].as_array().unwrap();
    assert!(!fine.is_empty(), "{h}");
    let last = fine.last().unwrap();
    for key in [
        "ageSeconds",
        "endUptimeSeconds",
        "spanSeconds",
        "connections",
    ] {
        assert!(last[key].is_number(), "{key}: {last}");
    }
    let classes = last["requestsPerSecond"].as_object().unwrap();
    assert_eq!(classes.len(), 7, "{last}");
    assert!(classes["route"].as_f64().unwrap() > 0.0, "{last}");
    assert!(last["latencyMs"]["p99"]["route"].as_f64().unwrap() > 0.0);
    assert!(last["latencyMs"]["p50"]["all"].is_number());
    assert!(
        last["latencyMs"]["p50"]["kv"].is_null(),
        "no KV request: {last}"
    );
    assert_eq!(last["liveBrokers"]["total"], 1);
    assert_eq!(last["liveBrokers"]["byCluster"]["DefaultCluster"], 1);
    assert_eq!(last["registrations"]["full"], 1, "{last}");
    assert_eq!(last["evictions"]["scan"], 0);
    assert!(last["connections"].as_u64().unwrap() >= 1);
    if cfg!(target_os = "linux") {
        assert!(last["residentBytes"].as_u64().unwrap() > 1 << 20);
    }
}

/// The charts of a page: (figures, drawn lines).
fn charts(page: &str) -> (usize, usize) {
    let trends = page.split("id=\"trends\"").nth(1).unwrap_or("");
    let trends = trends.split("</section>").next().unwrap();
    (
        trends.matches("<figure class=\"chart\"").count(),
        trends.matches("<path class=\"line").count(),
    )
}

#[tokio::test]
async fn the_page_draws_the_last_hour_as_svg_charts() {
    let server = sampled().await;
    let page = server.get("/").await;
    assert_eq!(page.status, 200);
    let (figures, lines) = charts(&page.body);
    assert_eq!(
        figures, 6,
        "requests, latency, brokers, registrations, connections, memory"
    );
    assert!(lines >= 6, "a line per chart at least: {lines}");
    for needle in [
        "<svg viewBox=\"0 0 360 170\"",
        "Requests by class (per second)",
        "<title>",
        "route: ",
        "DefaultCluster",
        "−60 min",
        "/api/history",
    ] {
        assert!(page.body.contains(needle), "{needle}");
    }
    // The policy still allows only the page's own style and script.
    let policy = page.header("content-security-policy").unwrap();
    assert!(
        policy.contains("style-src 'sha256-") && !policy.contains("unsafe"),
        "{policy}"
    );
}

#[tokio::test]
async fn a_fresh_server_shows_empty_charts() {
    let server = server_with("").await;
    let page = server.get("/").await;
    let (figures, _) = charts(&page.body);
    assert_eq!(figures, 6);
    assert!(page.body.contains("no samples yet"));
    let h: serde_json::Value =
        serde_json::from_str(&server.get("/api/history").await.body).unwrap();
    assert_eq!(h["tenSeconds"], serde_json::json!([]));
}

/// Chromium on the PATH, if any.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|name| {
        Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[tokio::test]
async fn chromium_builds_the_charts_with_their_data() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: no chromium on the PATH (the compat browser group installs it)");
        return;
    };
    let server = sampled().await;
    let url = format!("http://{}/", server.http.unwrap());
    let profile = tempfile::tempdir().unwrap();
    let args = [
        "--headless".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        format!("--user-data-dir={}", profile.path().display()),
        "--dump-dom".to_owned(),
        url,
    ];
    let out = tokio::task::spawn_blocking(move || Command::new(browser).args(args).output());
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("chromium within 60 s")
        .unwrap()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let (figures, lines) = charts(&dom);
    assert_eq!(figures, 6, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(lines >= 6, "lines in the DOM: {lines}");
    assert!(
        dom.contains("<circle class=\"dot"),
        "the newest points are drawn"
    );
}
