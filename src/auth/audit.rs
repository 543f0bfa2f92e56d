//! What the gate writes down: one audit line per admin request (target [`AUDIT_TARGET`], which
//! `telemetry` can send to a file of its own), and warnings about refusals, at most
//! [`RefusalLog::PER_WINDOW`] per [`RefusalLog::WINDOW`] so that a flood of bad requests cannot
//! flood the log.
//!
//! An audit line says who (access key, or how an unsigned request got in), from where, which
//! request and its key fields — ext fields without `AccessKey`, `Signature` and
//! `SecurityToken`, each cut short, and for UPDATE_NAMESRV_CONFIG the names of the keys it
//! sets — and the response code. Never a secret, never the body.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use super::policy::{Refusal, echo};
use crate::protocol::RemotingCommand;
use crate::protocol::code::request as rc;
use crate::protocol::signature;

/// The `tracing` target of audit lines.
pub const AUDIT_TARGET: &str = "namesrv::audit";

/// Issued when a request is let through; for admin requests it carries what the audit line
/// needs once the response is known.
#[derive(Debug)]
#[must_use = "record the ticket once the response is known"]
pub struct Ticket(pub(super) Option<Box<AuditEntry>>);

#[derive(Debug)]
pub(super) struct AuditEntry {
    /// Access key, or how the request got in without one.
    pub(super) who: String,
    /// In audit mode, the refusal enforce mode would have given.
    pub(super) would_refuse: Option<String>,
}

impl Ticket {
    /// A ticket that records nothing (auth off, or a request that is not admin).
    pub const NONE: Ticket = Ticket(None);

    /// Writes the audit line of an admin request, with the code of its `response` (`None` for
    /// one-way requests).
    pub fn record(self, req: &RemotingCommand, peer: SocketAddr, response: Option<i32>) {
        let Some(entry) = self.0 else {
            return;
        };
        let fields = key_fields(req);
        let response = response.map_or_else(|| "none (one-way)".to_owned(), |c| c.to_string());
        tracing::info!(
            target: AUDIT_TARGET,
            peer = %peer.ip(),
            access_key = %entry.who,
            code = req.code,
            request = code_name(req.code),
            fields = %fields,
            response = %response,
            // Only in audit mode: what enforce would have answered.
            would_refuse = entry.would_refuse.as_deref(),
            "admin request"
        );
    }
}

/// Limits refusal warnings to [`RefusalLog::PER_WINDOW`] per [`RefusalLog::WINDOW`]; the next
/// warning after a quiet spell says how many were left out.
#[derive(Debug, Default)]
pub(super) struct RefusalLog {
    window_start: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

impl RefusalLog {
    const WINDOW: Duration = Duration::from_secs(10);
    const PER_WINDOW: u32 = 10;

    /// Whether to log now; `Some(n)` with the number of warnings left out before this one.
    fn admit(&mut self, now: Instant) -> Option<u64> {
        if self
            .window_start
            .is_none_or(|start| now.duration_since(start) >= Self::WINDOW)
        {
            self.window_start = Some(now);
            self.in_window = 0;
        }
        if self.in_window >= Self::PER_WINDOW {
            self.suppressed += 1;
            return None;
        }
        self.in_window += 1;
        Some(std::mem::take(&mut self.suppressed))
    }

    /// Logs a refusal (`enforced`) or, in audit mode, one that would have happened.
    pub(super) fn log(&mut self, refusal: &Refusal, oneway: bool, enforced: bool) {
        let Some(suppressed) = self.admit(Instant::now()) else {
            return;
        };
        let access_key = refusal.access_key.as_deref().unwrap_or("");
        let reason = refusal.reason.label();
        let (peer, code) = (refusal.peer, refusal.code);
        if enforced {
            tracing::warn!(%peer, access_key, code, reason, oneway, suppressed, "refused: {refusal}");
        } else {
            tracing::warn!(%peer, access_key, code, reason, oneway, suppressed, "audit mode, enforce would refuse: {refusal}");
        }
    }
}

/// The request's ext fields without credentials, sorted, each value cut short and quoted; for
/// UPDATE_NAMESRV_CONFIG also the keys its body sets.
fn key_fields(req: &RemotingCommand) -> String {
    let mut out = String::new();
    let credentials = [
        signature::ACCESS_KEY,
        signature::SIGNATURE,
        signature::SECURITY_TOKEN,
    ];
    let mut fields: Vec<(&str, &str)> = req
        .ext_fields
        .iter()
        .flat_map(|f| f.iter())
        .filter(|(k, _)| !credentials.contains(k))
        .collect();
    fields.sort_unstable();
    for (k, v) in fields {
        let sep = if out.is_empty() { "" } else { " " };
        let _ = write!(out, "{sep}{}={:?}", echo(k), echo(v));
    }
    if req.code == rc::UPDATE_NAMESRV_CONFIG {
        let text = String::from_utf8_lossy(req.body_bytes());
        let keys: Vec<String> = crate::config::properties::parse(&text)
            .map(|props| props.into_iter().map(|(k, _)| echo(&k)).collect())
            .unwrap_or_default();
        let sep = if out.is_empty() { "" } else { " " };
        let _ = write!(out, "{sep}keys=[{}]", keys.join(","));
    }
    out
}

/// Names of the codes that reach the audit log.
fn code_name(code: i32) -> &'static str {
    match code {
        rc::PUT_KV_CONFIG => "PUT_KV_CONFIG",
        rc::DELETE_KV_CONFIG => "DELETE_KV_CONFIG",
        rc::WIPE_WRITE_PERM_OF_BROKER => "WIPE_WRITE_PERM_OF_BROKER",
        rc::DELETE_TOPIC_IN_NAMESRV => "DELETE_TOPIC_IN_NAMESRV",
        rc::UPDATE_NAMESRV_CONFIG => "UPDATE_NAMESRV_CONFIG",
        rc::GET_NAMESRV_CONFIG => "GET_NAMESRV_CONFIG",
        rc::ADD_WRITE_PERM_OF_BROKER => "ADD_WRITE_PERM_OF_BROKER",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ExtFields;

    #[test]
    fn refusal_warnings_are_limited_per_window() {
        let mut log = RefusalLog::default();
        let t0 = Instant::now();
        for _ in 0..RefusalLog::PER_WINDOW {
            assert_eq!(log.admit(t0), Some(0));
        }
        for _ in 0..5 {
            assert_eq!(log.admit(t0 + Duration::from_secs(9)), None);
        }
        assert_eq!(log.admit(t0 + RefusalLog::WINDOW), Some(5));
        assert_eq!(log.admit(t0 + RefusalLog::WINDOW), Some(0));
    }

    #[test]
    fn key_fields_leave_out_credentials_and_body() {
        let mut req = RemotingCommand::request(rc::PUT_KV_CONFIG, 1);
        req.ext_fields = Some(ExtFields::from_iter([
            ("namespace", "ns"),
            ("key", "k"),
            ("value", "v"),
            ("AccessKey", "rocketmq2"),
            ("Signature", "sig"),
            ("SecurityToken", "tok"),
        ]));
        assert_eq!(key_fields(&req), r#"key="k" namespace="ns" value="v""#);
        let mut req = RemotingCommand::request(rc::UPDATE_NAMESRV_CONFIG, 1)
            .with_body(&b"orderMessageEnable=true\nsecretish=1234\n"[..]);
        req.ext_fields = Some(ExtFields::from_iter([("AccessKey", "rocketmq2")]));
        assert_eq!(key_fields(&req), "keys=[orderMessageEnable,secretish]");
        let long = "x".repeat(500);
        req.ext_fields = Some(ExtFields::from_iter([("topic", long.as_str())]));
        req.code = rc::DELETE_TOPIC_IN_NAMESRV;
        assert!(key_fields(&req).len() < 100);
    }
}
