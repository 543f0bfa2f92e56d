//! Requests the server sends to its connected clients, over the connection the client opened:
//! Java's `RemotingServer#invokeSync` / `#invokeOneway` on a channel, as `Broker2Client` uses
//! them to reach consumers and producers. (Java's controller tells brokers of role changes
//! differently: `ControllerManager#doNotifyBrokerRoleChanged` dials the broker's own address
//! with a remoting client.)
//!
//! [`Outbound`] is a cheap handle, made by whoever calls [`super::run`] and kept by any code
//! that must reach a client by its [`ConnId`]. Each connection attaches a line while it is
//! served: a short queue of requests to write and the table of requests waiting for a
//! response. The handle assigns every request its opaque, as Java's
//! `RemotingCommand#createRequestCommand` does from one counter; the client answers with the
//! same opaque and the response flag set, and the connection hands that response to the
//! waiter instead of dispatching it. A one-way request carries the one-way flag
//! (`RemotingCommand#markOnewayRPC`) and is not answered.
//!
//! Both tables are bounded, and a waiter that gives up (timeout, or its future dropped)
//! takes its entry out itself, so nothing grows without bound. When the connection ends,
//! every waiter learns it at once. A line is a few words, and its tables take no memory while
//! they are empty: thousands of idle connections each carry one.

mod line;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::protocol::RemotingCommand;
use crate::protocol::code::{FLAG_ONEWAY, FLAG_RESPONSE};
use crate::state::ConnId;
pub(super) use line::Line;

/// Requests queued for one connection and not yet taken by it.
const QUEUE_MAX: usize = 64;

/// Requests sent on one connection that may wait for their responses at once.
const WAITING_MAX: usize = 1024;

/// Why a request could not be sent, or got no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    /// No connection with this id is being served (never was, or already closed).
    #[error("connection {0:?} is not connected")]
    NotConnected(ConnId),
    /// The connection closed before the request was answered (or written).
    #[error("the connection closed before the response")]
    Closed,
    /// No response came within the timeout.
    #[error("no response within {0:?}")]
    TimedOut(Duration),
    /// The connection already has 64 requests to write, or 1 024 waiting for their
    /// responses.
    #[error("too many requests queued on the connection")]
    QueueFull,
}

/// Sends requests to connected clients. Clones share the same connections.
#[derive(Debug, Clone, Default)]
pub struct Outbound {
    inner: Arc<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    lines: Mutex<HashMap<ConnId, Arc<Line>>>,
    /// The opaque of the next request; wraps around as Java's `int` does.
    next_opaque: AtomicI32,
}

/// A connection's attachment to the handle; detaches (and closes the line) when dropped.
pub(super) struct Attached {
    registry: Arc<Registry>,
    conn: ConnId,
    line: Arc<Line>,
}

impl Outbound {
    /// A handle with no connections yet.
    pub(crate) fn new() -> Outbound {
        Outbound::default()
    }

    /// Sends `request` to `conn` without waiting for an answer: queued for the connection to
    /// write, with the one-way flag set and an opaque of the server's.
    pub fn oneway(&self, conn: ConnId, mut request: RemotingCommand) -> Result<(), OutboundError> {
        let line = self.line(conn)?;
        request.opaque = self.next_opaque();
        request.flag = (request.flag & !FLAG_RESPONSE) | FLAG_ONEWAY;
        line.queue(request, None)
    }

    /// Sends `request` to `conn` and waits (on tokio's clock) at most `timeout` for the
    /// response with its opaque. The request's opaque and flags are the server's to set.
    pub async fn request(
        &self,
        conn: ConnId,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, OutboundError> {
        let line = self.line(conn)?;
        let opaque = self.next_opaque();
        request.opaque = opaque;
        request.flag &= !(FLAG_RESPONSE | FLAG_ONEWAY);
        let (tx, rx) = oneshot::channel();
        line.queue(request, Some(tx))?;
        // Removes the entry however this future ends: answered, timed out or dropped.
        let _waiting = Waiting {
            line: &line,
            opaque,
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(OutboundError::Closed),
            Err(_) => Err(OutboundError::TimedOut(timeout)),
        }
    }

    /// The connections being served now, in the order they were accepted.
    pub fn connections(&self) -> Vec<ConnId> {
        let mut conns: Vec<ConnId> = self.inner.lines.lock().keys().copied().collect();
        conns.sort_unstable_by_key(|c| c.0);
        conns
    }

    /// How many requests sent on `conn` wait for their responses.
    pub fn waiting(&self, conn: ConnId) -> usize {
        self.line(conn).map_or(0, |line| line.waiting())
    }

    /// Attaches the line of `conn`, served from now until the returned value is dropped.
    pub(super) fn attach(&self, conn: ConnId) -> Attached {
        let line = Arc::new(Line::default());
        self.inner.lines.lock().insert(conn, line.clone());
        Attached {
            registry: self.inner.clone(),
            conn,
            line,
        }
    }

    fn line(&self, conn: ConnId) -> Result<Arc<Line>, OutboundError> {
        let lines = self.inner.lines.lock();
        lines
            .get(&conn)
            .cloned()
            .ok_or(OutboundError::NotConnected(conn))
    }

    fn next_opaque(&self) -> i32 {
        self.inner.next_opaque.fetch_add(1, Ordering::Relaxed)
    }
}

impl Attached {
    /// The line, for work that must deliver responses off the connection's task.
    pub(super) fn line(&self) -> &Arc<Line> {
        &self.line
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.registry.lines.lock().remove(&self.conn);
        self.line.close();
    }
}

/// A request's entry in the waiting table, taken out when the requester stops waiting.
struct Waiting<'a> {
    line: &'a Line,
    opaque: i32,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        drop(self.line.take_waiter(self.opaque));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping() -> RemotingCommand {
        RemotingCommand::request(1, 77)
    }

    /// The response a client gives to `request`.
    fn answer(request: &RemotingCommand) -> RemotingCommand {
        let mut response = RemotingCommand::success();
        response.opaque = request.opaque;
        response
    }

    #[tokio::test]
    async fn a_response_reaches_the_request_with_its_opaque() {
        let outbound = Outbound::new();
        let attached = outbound.attach(ConnId(7));
        let line = attached.line().clone();
        let client = tokio::spawn(async move {
            line.queued().await;
            let sent = line.take_queued();
            assert_eq!(sent.len(), 1);
            assert!(!sent[0].is_response() && !sent[0].is_oneway());
            let mut stray = answer(&sent[0]);
            stray.opaque += 1;
            assert!(line.deliver(stray).is_err(), "no request has that opaque");
            assert!(line.deliver(answer(&sent[0])).is_ok());
            sent[0].opaque
        });
        let response = outbound
            .request(ConnId(7), ping(), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(response.opaque, client.await.unwrap());
        assert_eq!(outbound.waiting(ConnId(7)), 0);
    }

    #[tokio::test]
    async fn opaques_count_up_and_one_way_requests_are_marked() {
        let outbound = Outbound::new();
        let attached = outbound.attach(ConnId(1));
        outbound.oneway(ConnId(1), ping()).unwrap();
        outbound.oneway(ConnId(1), ping()).unwrap();
        let sent = attached.line().take_queued();
        assert_eq!((sent[0].opaque, sent[1].opaque), (0, 1));
        assert!(sent.iter().all(|r| r.is_oneway() && !r.is_response()));
        assert_eq!(
            outbound.waiting(ConnId(1)),
            0,
            "one-way requests wait for nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_nobody_answers_times_out_and_leaves_no_entry() {
        let outbound = Outbound::new();
        let _attached = outbound.attach(ConnId(1));
        let timeout = Duration::from_secs(3);
        let got = outbound.request(ConnId(1), ping(), timeout).await;
        assert_eq!(got, Err(OutboundError::TimedOut(timeout)));
        assert_eq!(outbound.waiting(ConnId(1)), 0);
    }

    #[tokio::test]
    async fn a_dropped_request_leaves_no_entry() {
        let outbound = Outbound::new();
        let _attached = outbound.attach(ConnId(1));
        let request = outbound.request(ConnId(1), ping(), Duration::from_secs(60));
        tokio::select! {
            _ = request => unreachable!("nobody answers"),
            _ = tokio::task::yield_now() => {}
        }
        assert_eq!(outbound.waiting(ConnId(1)), 0);
    }

    #[tokio::test]
    async fn waiters_learn_at_once_that_the_connection_closed() {
        let outbound = Outbound::new();
        let attached = outbound.attach(ConnId(1));
        let waiter = tokio::spawn({
            let outbound = outbound.clone();
            async move {
                outbound
                    .request(ConnId(1), ping(), Duration::from_secs(3600))
                    .await
            }
        });
        while outbound.waiting(ConnId(1)) == 0 {
            tokio::task::yield_now().await;
        }
        let line = attached.line().clone();
        drop(attached);
        assert_eq!(waiter.await.unwrap(), Err(OutboundError::Closed));
        assert_eq!(
            line.queue(ping(), None),
            Err(OutboundError::Closed),
            "a closed line takes nothing more"
        );
        assert_eq!(
            outbound.oneway(ConnId(1), ping()),
            Err(OutboundError::NotConnected(ConnId(1)))
        );
        assert!(outbound.connections().is_empty());
    }

    #[tokio::test]
    async fn an_unknown_connection_is_not_connected() {
        let outbound = Outbound::new();
        let _attached = outbound.attach(ConnId(1));
        let got = outbound
            .request(ConnId(2), ping(), Duration::from_secs(1))
            .await;
        assert_eq!(got, Err(OutboundError::NotConnected(ConnId(2))));
        assert_eq!(outbound.connections(), vec![ConnId(1)]);
    }
}
