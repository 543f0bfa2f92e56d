//! What the gate writes down: one audit line per admin request of a code the server serves
//! (target [`AUDIT_TARGET`], which `telemetry` can send to a file of its own), and warnings
//! about refusals. Both are limited per [`WINDOW`] ([`RefusalLog::PER_WINDOW`]
//! refusals, [`AUDIT_PER_WINDOW`] audit lines), and the next line after a quiet spell says how
//! many were left out, so that a flood of requests cannot flood the log.
//!
//! An audit line says who (access key, or how an unsigned request got in), from where, which
//! request and a few of its fields — only those its code's [`Audit`] names, each cut short
//! and escaped, the whole at most [`FIELDS_MAX`] bytes; for UPDATE_NAMESRV_CONFIG the names
//! of the keys it sets — and the response code. Never a secret, a KV value or the body. Which
//! codes are audited, and with which fields, is each request table row's [`Audit`].

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use super::policy::{Refusal, echo_within};
use crate::log_limit::LogLimit;
use crate::protocol::RemotingCommand;
use crate::telemetry::AUDIT_TARGET;

/// Audit lines written per [`WINDOW`] at most. More than an operator's tools send
/// (a few requests per `mqadmin` command), far less than a flood.
pub(super) const AUDIT_PER_WINDOW: u32 = 30;

/// Most bytes of the `fields` of one audit line.
const FIELDS_MAX: usize = 256;

/// Most characters of one field value or config key name in an audit line.
const VALUE_MAX: usize = 48;

/// Most config key names of an UPDATE_NAMESRV_CONFIG line.
const KEYS_MAX: usize = 8;

/// How a request code is audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Audit {
    /// The `request` value of its lines: the name of Java's `RequestCode` constant.
    pub(crate) request: &'static str,
    /// The ext fields a line may show: those that say what the request acts on. An
    /// allow-list, so that a value (PUT_KV_CONFIG's `value`, a field a client adds) never
    /// reaches a log line.
    pub(crate) fields: &'static [&'static str],
    /// Whether the line also names the configuration keys the body sets
    /// (UPDATE_NAMESRV_CONFIG).
    pub(crate) config_keys: bool,
}

/// Issued when a request is let through; for admin requests it carries what the audit line
/// needs once the response is known.
#[derive(Debug)]
#[must_use = "record the ticket once the response is known"]
pub struct Ticket(pub(super) Option<Box<AuditEntry>>);

#[derive(Debug)]
pub(super) struct AuditEntry {
    /// How the request's code is audited.
    pub(super) audit: Audit,
    /// Access key, or how the request got in without one.
    pub(super) who: String,
    /// In audit mode, the refusal enforce mode would have given.
    pub(super) would_refuse: Option<String>,
    /// Audit lines left out since the last one written.
    pub(super) left_out: u64,
}

impl Ticket {
    /// A ticket that records nothing (auth off, or a request that is not admin).
    pub(crate) const NONE: Ticket = Ticket(None);

    /// Writes the audit line of an admin request, with the code of its `response` (`None` for
    /// one-way requests).
    pub(crate) fn record(self, req: &RemotingCommand, peer: SocketAddr, response: Option<i32>) {
        let Some(entry) = self.0 else {
            return;
        };
        let fields = key_fields(&entry.audit, req);
        let response = response.map_or_else(|| "none (one-way)".to_owned(), |c| c.to_string());
        tracing::info!(
            target: AUDIT_TARGET,
            peer = %peer.ip(),
            access_key = %entry.who,
            code = req.code,
            request = entry.audit.request,
            fields = %fields,
            response = %response,
            // Only in audit mode: what enforce would have answered.
            would_refuse = entry.would_refuse.as_deref(),
            // Only after lines were left out for the budget.
            left_out = (entry.left_out > 0).then_some(entry.left_out),
            "admin request"
        );
    }
}

/// The window audit lines and refusal warnings are counted in.
pub(super) const WINDOW: Duration = Duration::from_secs(10);

/// Limits refusal warnings to [`RefusalLog::PER_WINDOW`] per [`WINDOW`].
#[derive(Debug)]
pub(super) struct RefusalLog(LogLimit);

impl Default for RefusalLog {
    fn default() -> RefusalLog {
        RefusalLog(LogLimit::lines(Self::PER_WINDOW, WINDOW))
    }
}

impl RefusalLog {
    const PER_WINDOW: u32 = 10;

    /// Logs a refusal (`enforced`) or, in audit mode, one that would have happened.
    pub(super) fn log(&mut self, refusal: &Refusal, oneway: bool, enforced: bool) {
        let Some(suppressed) = self.0.ready() else {
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

/// The request's fields `audit` allows, sorted, each value cut short, escaped and quoted;
/// with [`Audit::config_keys`] also (the first few of) the keys its body sets. At most
/// [`FIELDS_MAX`] bytes.
fn key_fields(audit: &Audit, req: &RemotingCommand) -> String {
    let mut out = String::new();
    let allowed = audit.fields;
    let mut fields: Vec<(&str, &str)> = req
        .ext_fields
        .iter()
        .flat_map(|f| f.iter())
        .filter(|(k, _)| allowed.contains(k))
        .collect();
    fields.sort_unstable();
    for (k, v) in fields {
        let sep = if out.is_empty() { "" } else { " " };
        let _ = write!(out, "{sep}{k}={}", quoted(v));
    }
    if audit.config_keys {
        let text = String::from_utf8_lossy(req.body_bytes());
        let keys: Vec<String> = crate::config::properties::parse(&text)
            .map(|props| props.into_iter().map(|(k, _)| k).collect())
            .unwrap_or_default();
        let shown: Vec<String> = keys
            .iter()
            .take(KEYS_MAX)
            .map(|k| echo_within(k, VALUE_MAX))
            .collect();
        let more = keys.len().saturating_sub(KEYS_MAX);
        let more = if more > 0 {
            format!(",+{more}")
        } else {
            String::new()
        };
        let sep = if out.is_empty() { "" } else { " " };
        let _ = write!(out, "{sep}keys=[{}{more}]", shown.join(","));
    }
    cut(out, FIELDS_MAX)
}

/// `value` cut to [`VALUE_MAX`] characters, quoted, with quotes and control characters
/// escaped (`Debug` of `str`).
fn quoted(value: &str) -> String {
    let end = value
        .char_indices()
        .nth(VALUE_MAX)
        .map_or(value.len(), |(i, _)| i);
    let mut out = format!("{:?}", &value[..end]);
    if end < value.len() {
        out.push('…');
    }
    out
}

/// `text` cut to at most `max` bytes, at a character boundary, marked with `…`.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::protocol::ExtFields;
    use crate::protocol::code::request as rc;

    const KV: Audit = Audit {
        request: "PUT_KV_CONFIG",
        fields: &["key", "namespace"],
        config_keys: false,
    };
    const CONFIG: Audit = Audit {
        request: "UPDATE_NAMESRV_CONFIG",
        fields: &[],
        config_keys: true,
    };
    const TOPIC: Audit = Audit {
        request: "DELETE_TOPIC_IN_NAMESRV",
        fields: &["clusterName", "topic"],
        config_keys: false,
    };

    #[test]
    fn refusal_warnings_are_limited_per_window() {
        crate::log_limit::assert_lines_per_window(
            RefusalLog::default().0,
            RefusalLog::PER_WINDOW,
            WINDOW,
        );
    }

    #[test]
    fn key_fields_show_a_few_allowed_fields_never_a_kv_value() {
        let mut req = RemotingCommand::request(rc::PUT_KV_CONFIG, 1);
        let mut pairs = vec![
            ("namespace".to_owned(), "ns".to_owned()),
            ("key".to_owned(), "k\n2026 INFO forged".to_owned()),
            ("value".to_owned(), "kv-secret-value".to_owned()),
        ];
        pairs.extend((0..1000).map(|i| (format!("f{i}\n"), "x".repeat(200))));
        req.ext_fields = Some(ExtFields::from_pairs(pairs));
        let line = key_fields(&KV, &req);
        assert!(!line.contains("kv-secret-value"), "{line}");
        assert!(!line.contains("value"), "{line}");
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(line.len() <= 300, "{} bytes: {line}", line.len());
        assert!(
            line.starts_with(r#"key="k\n2026 INFO forged" namespace="ns""#),
            "{line}"
        );
        let mut req = RemotingCommand::request(rc::UPDATE_NAMESRV_CONFIG, 1);
        let body: String = (0..500).map(|i| format!("key{i}\u{1b}[2J=1\n")).collect();
        req = req.with_body(body.into_bytes());
        let line = key_fields(&CONFIG, &req);
        assert!(line.len() <= 300, "{} bytes: {line}", line.len());
        assert!(!line.chars().any(char::is_control), "{line:?}");
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
        assert_eq!(key_fields(&KV, &req), r#"key="k" namespace="ns""#);
        let mut req = RemotingCommand::request(rc::UPDATE_NAMESRV_CONFIG, 1)
            .with_body(&b"orderMessageEnable=true\nsecretish=1234\n"[..]);
        req.ext_fields = Some(ExtFields::from_iter([("AccessKey", "rocketmq2")]));
        assert_eq!(
            key_fields(&CONFIG, &req),
            "keys=[orderMessageEnable,secretish]"
        );
        let long = "x".repeat(500);
        req.ext_fields = Some(ExtFields::from_iter([("topic", long.as_str())]));
        req.code = rc::DELETE_TOPIC_IN_NAMESRV;
        assert!(key_fields(&TOPIC, &req).len() < 100);
    }
}
