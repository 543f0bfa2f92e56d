//! Group commit: writers that arrive while a commit is under way wait, and the next commit
//! takes all of them at once, so concurrent changes share one write and one sync.
//!
//! There is no committing thread: the first waiting writer whose change is still pending when
//! no commit runs becomes the leader, commits every pending change, hands each writer its
//! result and steps down. Callers block (the store is called from the blocking pool, never
//! from a runtime worker).

use std::collections::HashMap;

use parking_lot::{Condvar, Mutex};

/// Pending changes of type `E` with results of type `R`.
#[derive(Debug)]
pub(super) struct GroupCommit<E, R> {
    queue: Mutex<Queue<E, R>>,
    turn: Condvar,
    /// The result of a change whose commit panicked.
    abandoned: fn() -> R,
}

#[derive(Debug)]
struct Queue<E, R> {
    next_ticket: u64,
    pending: Vec<(u64, E)>,
    done: HashMap<u64, R>,
    committing: bool,
}

impl<E, R> GroupCommit<E, R> {
    /// An idle queue; `abandoned` answers writers whose batch's commit panicked.
    pub(super) fn new(abandoned: fn() -> R) -> Self {
        GroupCommit {
            queue: Mutex::new(Queue {
                next_ticket: 0,
                pending: Vec::new(),
                done: HashMap::new(),
                committing: false,
            }),
            turn: Condvar::new(),
            abandoned,
        }
    }

    /// Queues `change` and blocks until it is committed. If this caller leads the commit,
    /// `commit` receives every pending change in arrival order and returns their results in
    /// the same order.
    pub(super) fn submit(&self, change: E, commit: impl FnOnce(Vec<E>) -> Vec<R>) -> R {
        let mut q = self.queue.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.pending.push((ticket, change));
        let mut commit = Some(commit);
        loop {
            if let Some(result) = q.done.remove(&ticket) {
                return result;
            }
            if q.committing {
                self.turn.wait(&mut q);
                continue;
            }
            // This caller's change is still pending (a finished one would be in `done`), so
            // it leads, at most once.
            q.committing = true;
            let (tickets, changes): (Vec<u64>, Vec<E>) =
                std::mem::take(&mut q.pending).into_iter().unzip();
            drop(q);
            let lead = commit.take().expect("a caller leads at most once");
            let mut guard = Abandon {
                owner: self,
                tickets,
            };
            let results = lead(changes);
            q = self.queue.lock();
            let tickets = std::mem::take(&mut guard.tickets);
            assert_eq!(tickets.len(), results.len(), "one result per change");
            q.done.extend(tickets.into_iter().zip(results));
            q.committing = false;
            self.turn.notify_all();
        }
    }
}

/// Answers the writers of a batch whose commit panicked, and frees the queue.
struct Abandon<'a, E, R> {
    owner: &'a GroupCommit<E, R>,
    tickets: Vec<u64>,
}

impl<E, R> Drop for Abandon<'_, E, R> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let mut q = self.owner.queue.lock();
        for t in self.tickets.drain(..) {
            q.done.insert(t, (self.owner.abandoned)());
        }
        q.committing = false;
        self.owner.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn changes_queued_during_a_commit_share_the_next_one() {
        let gc = Arc::new(GroupCommit::<u32, u32>::new(|| u32::MAX));
        let batches = Arc::new(Mutex::new(Vec::new()));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let first = {
            let (gc, batches) = (gc.clone(), batches.clone());
            std::thread::spawn(move || {
                gc.submit(1, |batch| {
                    wait.recv().unwrap();
                    batches.lock().push(batch.clone());
                    batch.into_iter().map(|c| c * 10).collect()
                })
            })
        };
        while !gc.queue.lock().committing {
            std::thread::yield_now();
        }
        let others: Vec<_> = [2u32, 3, 4]
            .into_iter()
            .map(|change| {
                let (gc, batches) = (gc.clone(), batches.clone());
                std::thread::spawn(move || {
                    gc.submit(change, |batch| {
                        batches.lock().push(batch.clone());
                        batch.into_iter().map(|c| c * 10).collect()
                    })
                })
            })
            .collect();
        while gc.queue.lock().pending.len() < 3 {
            std::thread::yield_now();
        }
        release.send(()).unwrap();
        assert_eq!(first.join().unwrap(), 10);
        let mut results: Vec<u32> = others.into_iter().map(|t| t.join().unwrap()).collect();
        results.sort();
        assert_eq!(results, [20, 30, 40]);
        let batches = batches.lock();
        assert_eq!(batches.len(), 2, "{batches:?}");
        let mut second = batches[1].clone();
        second.sort();
        assert_eq!(second, [2, 3, 4]);
    }

    #[test]
    fn a_panicking_commit_answers_its_batch_and_frees_the_queue() {
        let gc = GroupCommit::<u32, u32>::new(|| 0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gc.submit(1, |_| panic!("disk on fire"))
        }));
        assert!(caught.is_err());
        assert_eq!(gc.submit(2, |b| b), 2);
    }
}
