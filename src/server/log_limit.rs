//! Rate-limited warnings: a flood of the same event (refused or closed connections) is logged
//! once per interval, with the number of occurrences that were not logged.

use std::time::Duration;

use tokio::time::Instant;

/// When an event may be logged again.
#[derive(Debug)]
pub(crate) struct LogLimit {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl LogLimit {
    /// At most one log line per `interval`.
    pub fn new(interval: Duration) -> LogLimit {
        LogLimit {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// Records an occurrence: `Some(occurrences not logged since the last line)` when this
    /// one should be logged, `None` when it is suppressed.
    pub fn ready(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < self.interval)
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}
