//! Rate-limited log lines: a flood of the same event (refused or closed connections, audit
//! lines, auth refusals) writes at most a few lines per window, and the next line written
//! says how many were left out. A leaf: the server, the HTTP side door and auth all use it.

use std::time::Duration;

use tokio::time::Instant;

/// When an event may be logged again: at most `lines` lines per window, the window starting
/// at the first line after the previous window ended.
#[derive(Debug)]
pub(crate) struct LogLimit {
    lines: u32,
    window: Duration,
    window_start: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

impl LogLimit {
    /// At most one line per `window`.
    pub(crate) fn new(window: Duration) -> LogLimit {
        LogLimit::lines(1, window)
    }

    /// At most `lines` lines per `window`.
    pub(crate) fn lines(lines: u32, window: Duration) -> LogLimit {
        LogLimit {
            lines,
            window,
            window_start: None,
            in_window: 0,
            suppressed: 0,
        }
    }

    /// Records an occurrence now: see [`LogLimit::ready_at`].
    pub(crate) fn ready(&mut self) -> Option<u64> {
        self.ready_at(Instant::now())
    }

    /// Records an occurrence at `now`: `Some(occurrences not logged since the last line)`
    /// when this one should be logged, `None` when it is suppressed.
    pub(crate) fn ready_at(&mut self, now: Instant) -> Option<u64> {
        if self
            .window_start
            .is_none_or(|start| now.duration_since(start) >= self.window)
        {
            self.window_start = Some(now);
            self.in_window = 0;
        }
        if self.in_window >= self.lines {
            self.suppressed += 1;
            return None;
        }
        self.in_window += 1;
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Test check, shared with the users that build their own limit: a fresh `log` logs `lines`
/// occurrences at the window's start, suppresses the next five until the window ends, and the
/// first line of the next window reports those five.
#[cfg(test)]
pub(crate) fn assert_lines_per_window(mut log: LogLimit, lines: u32, window: Duration) {
    let t0 = Instant::now();
    for _ in 0..lines {
        assert_eq!(log.ready_at(t0), Some(0));
    }
    for _ in 0..5 {
        assert_eq!(log.ready_at(t0 + window - window / 10), None);
    }
    assert_eq!(log.ready_at(t0 + window), Some(5));
    assert_eq!(log.ready_at(t0 + window), Some(0));
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(10);

    #[test]
    fn a_window_takes_its_lines_then_the_next_says_how_many_were_left_out() {
        assert_lines_per_window(LogLimit::lines(10, WINDOW), 10, WINDOW);
    }

    #[test]
    fn one_line_per_window_counts_from_the_line_written() {
        let mut log = LogLimit::new(WINDOW);
        let t0 = Instant::now();
        assert_eq!(log.ready_at(t0), Some(0));
        assert_eq!(log.ready_at(t0 + Duration::from_secs(9)), None);
        assert_eq!(log.ready_at(t0 + Duration::from_secs(12)), Some(1));
        // The window restarted at 12 s, not at 10 s.
        assert_eq!(log.ready_at(t0 + Duration::from_secs(21)), None);
        assert_eq!(log.ready_at(t0 + Duration::from_secs(22)), Some(1));
    }
}
