//! The status page's "Controller" section: the group (this node, leader, term, indexes and
//! each peer's reachability), every broker set (master, epochs, each replica in sync and
//! alive or not) and the recent elections, newest first. Everything shown goes through
//! [`Html::text`], as on the rest of the page.

use tokio::time::Instant;

use super::{apply_lag, master_address, wall_millis};
use crate::controller::consensus::GroupStatus;
use crate::controller::elections::ElectionRecord;
use crate::controller::{BrokerSetStatus, Controller, ControllerStatus};
use crate::http::html::{Html, age, utc};

/// Elections listed on the page (the API lists every kept one).
const ELECTIONS_LISTED: usize = 20;

/// The section, from one status snapshot of `controller`.
pub(crate) fn section(h: &mut Html, controller: &Controller) {
    let status = controller.status();
    let group = controller.settings().group;
    h.raw("<section id=\"controller\"><h2>Controller <span class=\"tag\">group ")
        .text(&group)
        .raw("</span></h2>");
    cards(h, &status);
    peers(h, &status.group);
    broker_sets(h, &status.broker_sets);
    elections(h, &status.elections);
    h.raw("</section>");
}

fn card(h: &mut Html, value: &str, label: &'static str) {
    h.raw("<div class=\"card\"><b>")
        .text(value)
        .raw("</b><span>")
        .raw(label)
        .raw("</span></div>");
}

fn index(i: Option<u64>) -> String {
    i.map_or("–".to_owned(), |i| i.to_string())
}

fn cards(h: &mut Html, status: &ControllerStatus) {
    let g = &status.group;
    let (leader, label) = match (&g.leader_id, g.is_leader) {
        (Some(id), true) => (id.as_str(), "leader (this node)"),
        (Some(id), false) => (id.as_str(), "leader"),
        (None, _) => ("none known", "leader"),
    };
    let elections: u64 = status.elections_by_reason.iter().map(|(_, n)| n).sum();
    h.raw("<div class=\"cards\" id=\"controller-summary\">");
    card(h, leader, label);
    card(h, &g.term.to_string(), "term");
    let indexes = format!("{} / {}", index(g.committed), index(g.applied));
    card(h, &indexes, "commit / apply index");
    card(h, &apply_lag(status).to_string(), "apply lag");
    card(h, &index(g.snapshot), "snapshot index");
    card(h, &elections.to_string(), "elections (as leader)");
    h.raw("</div>");
}

fn peers(h: &mut Html, g: &GroupStatus) {
    h.raw("<h3>Nodes</h3><div class=\"scroll\"><table id=\"controller-peers\"><thead><tr>")
        .raw("<th>id</th><th>address</th><th>role</th><th>reachable</th><th>matched index</th>")
        .raw("</tr></thead><tbody>");
    for p in &g.peers {
        h.raw("<tr>").cell(&p.id).cell(&p.addr).raw("<td>");
        if g.leader_id.as_deref() == Some(p.id.as_str()) {
            h.raw("<span class=\"tag ok\">leader</span>");
        } else {
            h.raw("<span class=\"tag\">follower</span>");
        }
        if p.id == g.self_id {
            h.raw("<span class=\"tag\">this node</span>");
        }
        h.raw("</td>");
        match (p.reachable, p.id == g.self_id) {
            (_, true) => h.raw("<td>–</td>"),
            (Some(true), _) => h.raw("<td class=\"ok\">yes</td>"),
            (Some(false), _) => h.raw("<td class=\"bad\">no</td>"),
            (None, _) => h.raw("<td class=\"empty\">known to the leader</td>"),
        };
        h.cell(&index(p.matched)).raw("</tr>");
    }
    h.raw("</tbody></table></div>");
}

fn broker_sets(h: &mut Html, sets: &[BrokerSetStatus]) {
    h.raw("<h3>Broker sets</h3>");
    if sets.is_empty() {
        h.raw("<p class=\"empty\">No broker has asked the controller for an id yet.</p>");
    }
    for s in sets {
        h.raw("<div class=\"group controller-set\"><h4>")
            .text(&s.broker_name)
            .raw("<span class=\"tag\">cluster ")
            .text(&s.cluster)
            .raw("</span>");
        match (s.master, master_address(s)) {
            (Some(id), addr) => h
                .raw("<span class=\"tag ok\">master ")
                .num(id)
                .raw(" ")
                .text(addr.unwrap_or(""))
                .raw("</span>"),
            (None, _) => h.raw("<span class=\"tag bad\">no master</span>"),
        };
        h.raw("<span class=\"tag\">master epoch ")
            .num(s.master_epoch)
            .raw("</span><span class=\"tag\">sync-state-set epoch ")
            .num(s.sync_state_set_epoch)
            .raw("</span></h4>");
        h.raw("<div class=\"scroll\"><table><thead><tr><th>id</th><th>address</th>")
            .raw("<th>in sync</th><th>alive</th></tr></thead><tbody>");
        for r in &s.replicas {
            h.raw("<tr><td>").num(r.broker_id);
            h.raw(if s.master == Some(r.broker_id) {
                " (master)"
            } else {
                ""
            });
            h.raw("</td>").cell(&r.address);
            h.raw(if r.in_sync {
                "<td class=\"ok\">in sync</td>"
            } else {
                "<td>no</td>"
            });
            h.raw(if r.alive {
                "<td class=\"ok\">alive</td>"
            } else {
                "<td class=\"bad\">not alive</td>"
            });
            h.raw("</tr>");
        }
        h.raw("</tbody></table></div></div>");
    }
}

fn elections(h: &mut Html, elections: &[ElectionRecord]) {
    h.raw("<h3>Recent elections</h3>");
    if elections.is_empty() {
        h.raw("<p class=\"empty\">No election since this node became leader.</p>");
        return;
    }
    let now = Instant::now();
    h.raw("<div class=\"scroll\"><table id=\"controller-elections\"><thead><tr><th>time</th>")
        .raw("<th>broker set</th><th>master</th><th>epoch</th><th>reason</th><th>failover</th>")
        .raw("</tr></thead><tbody>");
    for e in elections.iter().rev().take(ELECTIONS_LISTED) {
        let old = e.old_master.map_or("none".to_owned(), |id| id.to_string());
        h.raw("<tr>")
            .cell(&format!(
                "{} ({} ago)",
                utc(wall_millis(e.at, now)),
                age(now.saturating_duration_since(e.at))
            ))
            .cell(&e.broker_name)
            .cell(&format!("{old} → {}", e.new_master))
            .cell(&e.master_epoch.to_string())
            .cell(e.reason.label());
        h.cell(&e.failover.map_or("–".to_owned(), age)).raw("</tr>");
    }
    h.raw("</tbody></table></div>");
}
