//! One budget for every byte the server buffers on behalf of its connections: partial
//! request frames and responses waiting to be written (`maxBufferedBytes`), and, before that,
//! what a connection's prelude holds (a PROXY header being read, a TLS handshake waiting for
//! its client).
//!
//! Each connection has a [`Holding`] from its accept on and reports what its buffers hold
//! after every change.
//! Two rules keep the total bounded while well-behaved clients carry on:
//!
//! - **Stop reading the heaviest.** Once more than half the budget is in use, a connection
//!   whose queued responses exceed its fair share (half the budget divided among the
//!   connections holding anything, and never less than [`LIGHT`]) handles no further request
//!   until its peer has read them. A client that reads its answers never reaches that.
//! - **Close the worst offender.** When a report takes the total past the budget, the
//!   connection holding the most is closed at once, and the next, until the total is a
//!   sixteenth below the budget again. Its bytes leave the count when it is chosen; its buffers are freed as
//!   its task ends. A partial frame cannot drain without more reading, so this rule is what
//!   bounds many large partial frames.
//!
//! Reports are atomic operations; only closing a connection takes the lock over the
//! registry. The total overshoots the budget at most by what the connections being handled
//! at that moment have just added (a response or a read each).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::log_limit::LogLimit;
use crate::state::ConnId;

/// Below this, a connection's queued responses never stop it being read: an ordinary
/// request and response are far smaller.
pub(super) const LIGHT: usize = 64 * 1024;

/// The server-wide budget.
#[derive(Debug)]
pub(super) struct Budget {
    limit: usize,
    /// Bytes held by connections not yet closed for the budget. Signed: a report's two
    /// halves may briefly cross another's.
    used: AtomicIsize,
    /// Connections holding at least one byte.
    holders: AtomicUsize,
    accounts: Mutex<HashMap<ConnId, Arc<Account>>>,
    closings: Mutex<LogLimit>,
}

#[derive(Debug)]
struct Account {
    /// The client, as logged when the budget closes the connection: the socket's peer until a
    /// PROXY header names another.
    peer: Mutex<SocketAddr>,
    held: AtomicUsize,
    closed: AtomicBool,
    close: Notify,
}

/// One connection's share of the budget; gives it back when dropped.
#[derive(Debug)]
pub(super) struct Holding {
    budget: Arc<Budget>,
    conn: ConnId,
    account: Arc<Account>,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub(super) fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicIsize::new(0),
            holders: AtomicUsize::new(0),
            accounts: Mutex::new(HashMap::new()),
            closings: Mutex::new(LogLimit::new(Duration::from_secs(10))),
        })
    }

    /// Opens the account of a new connection.
    pub(super) fn open(self: &Arc<Self>, conn: ConnId, peer: SocketAddr) -> Holding {
        let account = Arc::new(Account {
            peer: Mutex::new(peer),
            held: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            close: Notify::new(),
        });
        self.accounts.lock().insert(conn, account.clone());
        Holding {
            budget: self.clone(),
            conn,
            account,
        }
    }

    /// Bytes held now.
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire).max(0) as usize
    }

    /// Moves an account from `old` to `new` bytes (after its `held` was swapped from `old`).
    fn moved(&self, old: usize, new: usize) {
        // Add before subtracting, so the total never dips below what is really held.
        self.used.fetch_add(new as isize, Ordering::AcqRel);
        self.used.fetch_sub(old as isize, Ordering::AcqRel);
        match (old, new) {
            (0, n) if n > 0 => {
                self.holders.fetch_add(1, Ordering::AcqRel);
            }
            (o, 0) if o > 0 => {
                self.holders.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
    }

    /// Closes the connections holding the most until the total is back under
    /// [`Budget::target`]. One pass ranks every account, so a flood of heavy connections (a
    /// reconnecting attacker's stalled handshakes, say) costs one pass per sixteenth of the
    /// budget, not one per connection.
    fn enforce(&self) {
        if self.used() <= self.limit {
            return;
        }
        let accounts = self.accounts.lock();
        let target = self.target();
        let mut ranked: Vec<(usize, &Arc<Account>)> = accounts
            .values()
            .filter(|a| !a.closed.load(Ordering::Acquire))
            .map(|a| (a.held.load(Ordering::Acquire), a))
            .filter(|(held, _)| *held > 0)
            .collect();
        ranked.sort_unstable_by_key(|(held, _)| std::cmp::Reverse(*held));
        for (_, account) in ranked {
            if self.used() <= target {
                break;
            }
            account.closed.store(true, Ordering::Release);
            let held = account.held.swap(0, Ordering::AcqRel);
            self.moved(held, 0);
            account.close.notify_one();
            if let Some(suppressed) = self.closings.lock().ready() {
                tracing::warn!(
                    peer = %account.peer.lock(),
                    held,
                    budget = self.limit,
                    closed_since_last_report = suppressed,
                    "buffer budget exceeded: closing the connection holding the most"
                );
            }
        }
    }

    /// Where closing stops once the budget was exceeded: a sixteenth below it.
    fn target(&self) -> usize {
        self.limit - self.limit / 16
    }
}

impl Holding {
    /// The connection this share belongs to.
    pub(super) fn conn(&self) -> ConnId {
        self.conn
    }

    /// Names `peer` as the connection's client from now on (a PROXY header's source).
    pub(super) fn relabel(&self, peer: SocketAddr) {
        *self.account.peer.lock() = peer;
    }

    /// Records that the connection's buffers now hold `bytes`. `false` when the connection
    /// has been closed for the budget (possibly by this very report): it must end now.
    pub(super) fn report(&self, bytes: usize) -> bool {
        if self.is_closed() {
            return false;
        }
        let old = self.account.held.swap(bytes, Ordering::AcqRel);
        self.budget.moved(old, bytes);
        if self.is_closed() {
            // Closed meanwhile: whatever this report added leaves the count with it.
            let held = self.account.held.swap(0, Ordering::AcqRel);
            self.budget.moved(held, 0);
            return false;
        }
        if bytes > old {
            self.budget.enforce();
        }
        !self.is_closed()
    }

    /// Whether the connection must let its queued responses drain before handling more
    /// requests: the budget is more than half used and it holds more than its share.
    pub(super) fn over_share(&self) -> bool {
        let b = &self.budget;
        let used = b.used();
        if used <= b.limit / 2 {
            return false;
        }
        let held = self.account.held.load(Ordering::Acquire);
        let share = (b.limit / 2 / b.holders.load(Ordering::Acquire).max(1)).max(LIGHT);
        held > share
    }

    /// Whether the connection has been closed for the budget.
    pub(super) fn is_closed(&self) -> bool {
        self.account.closed.load(Ordering::Acquire)
    }

    /// Completes once the connection has been closed for the budget.
    pub(super) async fn closed(&self) {
        loop {
            let notified = self.account.close.notified();
            if self.is_closed() {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let held = self.account.held.swap(0, Ordering::AcqRel);
        self.budget.moved(held, 0);
        self.budget.accounts.lock().remove(&self.conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[test]
    fn the_heaviest_connection_is_closed_when_the_budget_is_exceeded() {
        let budget = Budget::new(1000);
        let a = budget.open(ConnId(1), peer());
        let b = budget.open(ConnId(2), peer());
        let c = budget.open(ConnId(3), peer());
        assert!(a.report(600));
        assert!(b.report(300));
        assert_eq!(budget.used(), 900);
        // c's report takes the total to 1 100: a, holding the most, is closed.
        assert!(c.report(200));
        assert!(a.is_closed() && !b.is_closed() && !c.is_closed());
        assert_eq!(budget.used(), 500);
        assert!(!a.report(10), "a closed connection reports no more");
        assert_eq!(budget.used(), 500);
        // A report that makes its own connection the heaviest closes it.
        assert!(!b.report(900));
        assert_eq!(budget.used(), 200);
        drop((a, b));
        assert_eq!(budget.used(), 200);
        drop(c);
        assert_eq!(budget.used(), 0);
        assert!(budget.accounts.lock().is_empty());
    }

    #[test]
    fn only_connections_over_their_share_stop_under_pressure() {
        let budget = Budget::new(1 << 20);
        let heavy = budget.open(ConnId(1), peer());
        let light = budget.open(ConnId(2), peer());
        assert!(heavy.report(400 << 10));
        assert!(light.report(1024));
        assert!(!heavy.over_share(), "under half the budget nobody stops");
        assert!(heavy.report(600 << 10));
        assert!(heavy.over_share());
        assert!(!light.over_share());
        assert!(heavy.report(0));
        assert!(!heavy.over_share());
    }

    #[tokio::test]
    async fn closing_wakes_the_connection() {
        let budget = Budget::new(100);
        let a = budget.open(ConnId(1), peer());
        let b = budget.open(ConnId(2), peer());
        assert!(a.report(80));
        let waiting = tokio::spawn(async move {
            a.closed().await;
            a.is_closed()
        });
        tokio::task::yield_now().await;
        assert!(b.report(50));
        assert!(waiting.await.unwrap());
    }
}
