//! Unit tests of the log writer: one line per event (control characters escaped) and the
//! size cap of a log file.

use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

#[test]
fn control_characters_are_escaped_except_the_line_end() {
    assert!(matches!(escape(b"plain line\n", false), Cow::Borrowed(_)));
    let forged = "a key=\"x\nFORGED INFO line\r\u{1b}[2J\u{9b}\u{7f}\"\n";
    let out = escape(forged.as_bytes(), false).into_owned();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "a key=\"x\\nFORGED INFO line\\r\\u{1b}[2J\\u{9b}\\u{7f}\"\n"
    );
    assert_eq!(text.matches('\n').count(), 1);
    // On a terminal the layer's own colours stay; line breaks never do.
    let coloured = "\u{1b}[32mINFO\u{1b}[0m a\nb\n";
    assert_eq!(
        escape(coloured.as_bytes(), true).as_ref(),
        "\u{1b}[32mINFO\u{1b}[0m a\\nb\n".as_bytes()
    );
    // Not UTF-8: replaced, still one line.
    assert_eq!(
        escape(b"\xff\n\n", false).as_ref(),
        "\u{fffd}\\n\n".as_bytes()
    );
}

#[test]
fn one_line_writes_each_event_as_one_line() {
    let mut w = OneLine::new(Vec::new(), false);
    w.write_all(b"x=\"a\nb\"\n").unwrap();
    assert_eq!(w.inner, b"x=\"a\\nb\"\n");
}

/// The clock of one test (tests run in parallel: each has its own).
static NOW: AtomicU64 = AtomicU64::new(0);

/// Cap options: at most `max` bytes a file, periods of `period` seconds, `already` written,
/// notes in JSON when `json`.
fn cap(max: u64, period: u64, already: u64, json: bool) -> CapOptions {
    CapOptions {
        max,
        period,
        already,
        json,
    }
}

fn test_clock() -> u64 {
    NOW.load(Ordering::Relaxed)
}

fn epoch() -> u64 {
    0
}

#[test]
fn capped_files_stop_at_the_cap_and_say_so_in_the_next_period() {
    NOW.store(86_400 * 20_000 + 10, Ordering::Relaxed);
    let opts = cap(1000, 86_400, 100, false);
    let mut w = Capped::new(Vec::new(), opts, test_clock);
    let line = [b'x'; 99];
    for _ in 0..1000 {
        w.write_all(&line).unwrap();
        w.write_all(b"\n").unwrap();
    }
    let text = String::from_utf8(w.inner.clone()).unwrap();
    assert!(w.written <= 1000 + 200, "{}", w.written);
    assert!(text.len() <= 1000 + 200, "{} bytes", text.len());
    assert_eq!(
        text.matches("reached --log-max-size (1000 bytes)").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("2024-10-04T00:00:10Z  WARN the log file reached"),
        "{text}"
    );
    // The next period: a note with the count, then lines again.
    NOW.fetch_add(86_400, Ordering::Relaxed);
    w.inner.clear();
    w.write_all(b"next\n").unwrap();
    let text = String::from_utf8(w.inner.clone()).unwrap();
    assert!(
        text.contains("were dropped in the previous period"),
        "{text}"
    );
    assert!(text.ends_with("next\n"), "{text}");
}

#[test]
fn capped_notes_are_json_lines_in_json_format() {
    let opts = cap(16, 3600, 0, true);
    let mut w = Capped::new(Vec::new(), opts, epoch);
    w.write_all(&[b'y'; 40]).unwrap();
    let text = String::from_utf8(w.inner).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["timestamp"], "1970-01-01T00:00:00Z");
    assert_eq!(v["level"], "WARN");
}

#[test]
fn dates_are_civil_utc() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_796_160_659), "2026-12-01T21:30:59Z");
}

#[test]
fn sizes_take_binary_suffixes_and_a_floor() {
    assert_eq!(parse_size("256M"), Ok(256 << 20));
    assert_eq!(parse_size("1g"), Ok(1 << 30));
    assert_eq!(parse_size("64KiB"), Ok(64 << 10));
    assert_eq!(parse_size("20000"), Ok(20_000));
    for bad in ["", "M", "12X", "1K", "-1M", "99999999999999999G"] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
}
