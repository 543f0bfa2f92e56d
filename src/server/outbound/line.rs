//! One connection's line: the requests queued for it to write and the requests waiting for
//! its client's responses, both bounded and both free while empty.

use std::future::Future;
use std::task::{Poll, Waker};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::{OutboundError, QUEUE_MAX, WAITING_MAX};
use crate::protocol::RemotingCommand;

/// One connection's side of the seam, shared by the connection and the senders.
///
/// The connection's task waits for queued requests through the waker kept here rather than
/// a `Notify`: every connection carries a line, and an idle one's whole cost is counted
/// (`tests/idle_memory.rs`), so the line is a few words until something is sent.
#[derive(Debug, Default)]
pub(in crate::server) struct Line {
    state: Mutex<LineState>,
}

#[derive(Debug, Default)]
struct LineState {
    /// The connection's task while it waits for requests to write.
    waker: Option<Waker>,
    /// Allocated only while something is queued or waited for.
    tables: Option<Box<Tables>>,
    /// The connection ended: nothing more is accepted.
    closed: bool,
}

#[derive(Debug, Default)]
struct Tables {
    queue: Vec<RemotingCommand>,
    /// Opaque → the waiter of the response. A short list, searched only when a response
    /// arrives or a waiter gives up.
    waiting: Vec<(i32, oneshot::Sender<RemotingCommand>)>,
}

impl LineState {
    fn tables(&mut self) -> &mut Tables {
        self.tables.get_or_insert_with(Box::default)
    }

    /// Frees the tables once nothing is queued or waited for.
    fn tidy(&mut self) {
        if let Some(t) = &self.tables
            && t.queue.is_empty()
            && t.waiting.is_empty()
        {
            self.tables = None;
        }
    }
}

impl Line {
    /// Queues `request`, and its waiter when it expects a response.
    pub(super) fn queue(
        &self,
        request: RemotingCommand,
        waiter: Option<oneshot::Sender<RemotingCommand>>,
    ) -> Result<(), OutboundError> {
        let mut state = self.state.lock();
        if state.closed {
            return Err(OutboundError::Closed);
        }
        let tables = state.tables();
        let full = tables.queue.len() >= QUEUE_MAX
            || (waiter.is_some() && tables.waiting.len() >= WAITING_MAX);
        if full {
            state.tidy();
            return Err(OutboundError::QueueFull);
        }
        if let Some(tx) = waiter {
            tables.waiting.push((request.opaque, tx));
        }
        tables.queue.push(request);
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Completes once requests are queued (at once if some are already).
    pub(in crate::server) fn queued(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            let mut state = self.state.lock();
            if state.tables.as_ref().is_some_and(|t| !t.queue.is_empty()) {
                return Poll::Ready(());
            }
            if !state
                .waker
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                state.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// The requests to write, oldest first; the queue gives its memory back.
    pub(in crate::server) fn take_queued(&self) -> Vec<RemotingCommand> {
        let mut state = self.state.lock();
        let Some(tables) = &mut state.tables else {
            return Vec::new();
        };
        let queue = std::mem::take(&mut tables.queue);
        state.tidy();
        queue
    }

    /// Hands `response` to the request waiting for its opaque; gives it back if none is
    /// (unknown, timed out, or answered already).
    pub(in crate::server) fn deliver(
        &self,
        response: RemotingCommand,
    ) -> Result<(), RemotingCommand> {
        match self.take_waiter(response.opaque) {
            Some(tx) => {
                // A waiter that gave up meanwhile just drops it.
                let _ = tx.send(response);
                Ok(())
            }
            None => Err(response),
        }
    }

    /// How many requests wait for their responses.
    pub(super) fn waiting(&self) -> usize {
        let state = self.state.lock();
        state.tables.as_ref().map_or(0, |t| t.waiting.len())
    }

    pub(super) fn take_waiter(&self, opaque: i32) -> Option<oneshot::Sender<RemotingCommand>> {
        let mut state = self.state.lock();
        let waiting = &mut state.tables.as_mut()?.waiting;
        let at = waiting.iter().position(|(o, _)| *o == opaque)?;
        let (_, tx) = waiting.swap_remove(at);
        state.tidy();
        Some(tx)
    }

    /// Refuses everything from now on; every waiter learns the connection closed.
    pub(super) fn close(&self) {
        let closed = LineState {
            closed: true,
            ..LineState::default()
        };
        let open = std::mem::replace(&mut *self.state.lock(), closed);
        // Dropped outside the lock: each dropped sender wakes its waiter.
        drop(open);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping() -> RemotingCommand {
        RemotingCommand::request(1, 77)
    }

    #[test]
    fn an_answered_line_keeps_nothing() {
        let line = Line::default();
        let (tx, mut rx) = oneshot::channel();
        line.queue(ping(), Some(tx)).unwrap();
        assert_eq!(line.take_queued().len(), 1);
        assert_eq!(line.waiting(), 1);
        let mut response = RemotingCommand::success();
        response.opaque = 77;
        assert!(line.deliver(response).is_ok());
        assert_eq!(rx.try_recv().unwrap().opaque, 77);
        assert!(line.state.lock().tables.is_none(), "the tables are freed");
    }

    #[test]
    fn both_tables_are_bounded() {
        let line = Line::default();
        for _ in 0..QUEUE_MAX {
            line.queue(ping(), None).unwrap();
        }
        assert_eq!(line.queue(ping(), None), Err(OutboundError::QueueFull));
        let mut waiters = Vec::new();
        for opaque in 0..WAITING_MAX as i32 {
            line.take_queued();
            let (tx, rx) = oneshot::channel();
            let mut request = ping();
            request.opaque = opaque;
            line.queue(request, Some(tx)).unwrap();
            waiters.push(rx);
        }
        let (tx, _rx) = oneshot::channel();
        assert_eq!(line.queue(ping(), Some(tx)), Err(OutboundError::QueueFull));
        assert_eq!(
            line.take_queued().len(),
            1,
            "the refused request was not queued"
        );
    }
}
