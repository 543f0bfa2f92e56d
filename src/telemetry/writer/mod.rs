//! The writers under the log layers: [`OneLine`] makes every event one line whatever the
//! values it echoes hold, and [`Capped`] stops a log file growing past `--log-max-size` until
//! the next rotation.
//!
//! Both rely on the `fmt` layer writing each event with a single `write_all` of the whole
//! formatted line. Neither knows about `tracing`: they see bytes, which keeps them usable on
//! the log thread, where logging would wait for itself.

use std::borrow::Cow;
use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// A [`MakeWriter`] whose writers escape control characters (`\n` becomes the two characters
/// `\n`) in everything but the line's own end, so that a client's value cannot start a forged
/// line or drive a terminal. With `keep_esc`, ESC is kept for the layer's own colours (stderr
/// on a terminal only).
#[derive(Debug, Clone)]
pub(super) struct OneLine<M> {
    /// The wrapped `MakeWriter`, or in a made writer, the wrapped writer.
    inner: M,
    keep_esc: bool,
}

impl<M> OneLine<M> {
    pub(super) fn new(inner: M, keep_esc: bool) -> OneLine<M> {
        OneLine { inner, keep_esc }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for OneLine<M> {
    type Writer = OneLine<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        OneLine::new(self.inner.make_writer(), self.keep_esc)
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        OneLine::new(self.inner.make_writer_for(meta), self.keep_esc)
    }
}

impl<W: Write> Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write_all(&escape(buf, self.keep_esc))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `line` with its control characters escaped, except a final `\n` (and ESC if `keep_esc`).
/// Borrowed when there is nothing to escape, which is every line in practice.
pub(super) fn escape(line: &[u8], keep_esc: bool) -> Cow<'_, [u8]> {
    let (body, end) = match line.strip_suffix(b"\n") {
        Some(body) => (body, &b"\n"[..]),
        None => (line, &b""[..]),
    };
    // C0 controls and DEL as bytes; C1 controls (U+0080..U+009F) are 0xC2 0x80..=0x9F.
    let plain = |b: &u8| (*b >= 0x20 || (keep_esc && *b == 0x1b)) && *b != 0x7f;
    let c1 = body
        .windows(2)
        .any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]));
    if body.iter().all(plain) && !c1 {
        return Cow::Borrowed(line);
    }
    let text = String::from_utf8_lossy(body);
    let mut out = String::with_capacity(body.len() + 16);
    for c in text.chars() {
        if c.is_control() && !(keep_esc && c == '\u{1b}') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    let mut out = out.into_bytes();
    out.extend_from_slice(end);
    Cow::Owned(out)
}

/// Seconds since the Unix epoch, read by [`Capped`] for its period and its notes.
pub(super) type Clock = fn() -> u64;

/// The wall clock: log files rotate at UTC midnight or on the hour, like the appender's
/// names, so the cap's periods must follow the same clock (not tokio's).
#[allow(clippy::disallowed_methods)]
pub(super) fn wall_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A file writer that writes at most `max` bytes per rotation period (`period` seconds, UTC
/// aligned as the appender's periods are). Past the cap it writes one note and drops lines;
/// the first line of the next period says how many were dropped. The bytes the current file
/// already held at start count toward its cap.
#[derive(Debug)]
pub(super) struct Capped<W> {
    inner: W,
    max: u64,
    period: u64,
    clock: Clock,
    json: bool,
    current: u64,
    written: u64,
    dropped: u64,
}

/// How [`Capped`] is set up.
#[derive(Debug, Clone, Copy)]
pub(super) struct CapOptions {
    /// Most bytes per file.
    pub(super) max: u64,
    /// Length of a rotation period in seconds.
    pub(super) period: u64,
    /// Bytes the current file holds already.
    pub(super) already: u64,
    /// Notes as JSON lines (`--log-format json`).
    pub(super) json: bool,
}

impl<W: Write> Capped<W> {
    pub(super) fn new(inner: W, opts: CapOptions, clock: Clock) -> Capped<W> {
        Capped {
            inner,
            max: opts.max,
            period: opts.period.max(1),
            clock,
            json: opts.json,
            current: clock() / opts.period.max(1),
            written: opts.already,
            dropped: 0,
        }
    }

    fn note(&mut self, now: u64, message: &str) -> io::Result<()> {
        let time = rfc3339(now);
        let line = match self.json {
            true => format!(
                "{{\"timestamp\":\"{time}\",\"level\":\"WARN\",\"fields\":{{\"message\":\"{message}\"}}}}\n"
            ),
            false => format!("{time}  WARN {message}\n"),
        };
        self.written += line.len() as u64;
        self.inner.write_all(line.as_bytes())
    }
}

impl<W: Write> Write for Capped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let now = (self.clock)();
        let period = now / self.period;
        if period != self.current {
            self.current = period;
            self.written = 0;
            if self.dropped > 0 {
                let dropped = std::mem::take(&mut self.dropped);
                self.note(now, &format!("{dropped} log lines were dropped in the previous period: the file had reached --log-max-size"))?;
            }
        }
        if self.written + buf.len() as u64 > self.max {
            if self.dropped == 0 {
                let max = self.max;
                self.note(now, &format!("the log file reached --log-max-size ({max} bytes): dropping lines until the next rotation"))?;
            }
            self.dropped += 1;
            return Ok(buf.len());
        }
        self.written += buf.len() as u64;
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub(super) fn rfc3339(secs: u64) -> String {
    let t = crate::civil::Utc::from_unix_secs(secs as i64);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// Parses a size such as `256M`, `1G`, `65536` or `64K` (binary multiples), for
/// `--log-max-size`; at least 16 KiB, so that a file always has room for its notes.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let scale: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return Err(format!("{text:?}: expected a size such as 256M or 1G")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?}: expected a size such as 256M or 1G"))?;
    let bytes = n
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?}: too large"))?;
    match bytes >= 16 << 10 {
        true => Ok(bytes),
        false => Err(format!("{text:?}: at least 16K")),
    }
}

#[cfg(test)]
mod tests;
