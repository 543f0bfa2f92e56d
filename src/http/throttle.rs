//! Slows down credential guessing on the operator routes: after [`FREE_FAILURES`] wrong
//! credentials from a client (an IPv4 address or an IPv6 /64), each further attempt from it
//! waits before it is checked — [`FIRST_DELAY`], doubling per failure up to [`MAX_DELAY`] —
//! until it presents the right ones or stays quiet for [`FORGET_AFTER`].
//!
//! The wait comes before the check, for right and wrong credentials alike, so it tells a
//! guesser nothing; with the per-client connection limit it bounds one client to a few
//! guesses a second instead of tens of thousands.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::limits::ClientKey;

/// Failures that cost nothing (typing mistakes).
pub(super) const FREE_FAILURES: u32 = 3;
/// The wait after one failure more than that.
pub(super) const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The longest wait.
pub(super) const MAX_DELAY: Duration = Duration::from_secs(5);
/// A client quiet for this long starts afresh.
pub(super) const FORGET_AFTER: Duration = Duration::from_secs(600);
/// Clients remembered at most (a spray of addresses cannot grow the table without bound).
const MAX_CLIENTS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Record {
    failures: u32,
    last: Instant,
}

/// Recent failures by client.
#[derive(Debug, Default)]
pub(super) struct Failures {
    /// A short lock: one lookup or update per checked request.
    clients: Mutex<HashMap<ClientKey, Record>>,
}

impl Failures {
    /// How long an attempt from `ip` waits before it is checked.
    pub(super) fn delay(&self, ip: IpAddr, now: Instant) -> Duration {
        let clients = self.clients.lock();
        match clients.get(&ClientKey::of(ip)) {
            Some(r) if now.saturating_duration_since(r.last) < FORGET_AFTER => wait(r.failures),
            _ => Duration::ZERO,
        }
    }

    /// An attempt from `ip` failed.
    pub(super) fn failed(&self, ip: IpAddr, now: Instant) {
        let mut clients = self.clients.lock();
        if clients.len() >= MAX_CLIENTS {
            clients.retain(|_, r| now.saturating_duration_since(r.last) < FORGET_AFTER);
        }
        if clients.len() >= MAX_CLIENTS {
            // Still full of recent guessers: make room rather than stop counting new ones.
            clients.clear();
        }
        let record = clients.entry(ClientKey::of(ip)).or_insert(Record {
            failures: 0,
            last: now,
        });
        if now.saturating_duration_since(record.last) >= FORGET_AFTER {
            record.failures = 0;
        }
        record.failures = record.failures.saturating_add(1);
        record.last = now;
    }

    /// `ip` presented the right credentials.
    pub(super) fn succeeded(&self, ip: IpAddr) {
        self.clients.lock().remove(&ClientKey::of(ip));
    }
}

/// The wait after `failures` failures.
fn wait(failures: u32) -> Duration {
    match failures.checked_sub(FREE_FAILURES) {
        None => Duration::ZERO,
        Some(extra) => FIRST_DELAY
            .checked_mul(1u32.checked_shl(extra).unwrap_or(u32::MAX))
            .map_or(MAX_DELAY, |d| d.min(MAX_DELAY)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_grows_with_failures_and_is_capped() {
        let waits: Vec<u64> = (0..10).map(|n| wait(n).as_millis() as u64).collect();
        assert_eq!(waits, [0, 0, 0, 250, 500, 1000, 2000, 4000, 5000, 5000]);
        assert_eq!(wait(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn failures_count_per_client_until_forgiven_or_forgotten() {
        let (f, t0) = (Failures::default(), Instant::now());
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for _ in 0..5 {
            f.failed(a, t0);
        }
        assert_eq!(f.delay(a, t0), Duration::from_secs(1));
        assert_eq!(
            f.delay(b, t0),
            Duration::ZERO,
            "other clients are not slowed"
        );
        assert_eq!(f.delay(a, t0 + FORGET_AFTER), Duration::ZERO, "forgotten");
        f.failed(a, t0 + FORGET_AFTER);
        assert_eq!(
            f.delay(a, t0 + FORGET_AFTER),
            Duration::ZERO,
            "counting afresh"
        );
        f.succeeded(a);
        assert!(f.clients.lock().is_empty());
    }
}
