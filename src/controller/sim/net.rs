//! The simulated network: every message between controller nodes (openraft RPCs) and
//! between brokers and controllers (controller requests) crosses [`SimNet::hop`], which
//! applies the current faults — a seeded delay, a drop rate, cut links (one-way or both),
//! paused and crashed endpoints. A lost message never arrives; its sender's deadline ends
//! the call, as a lost TCP segment on a dead path would. Endpoints are numbered: controller
//! nodes `0..3`, brokers from [`BROKER_BASE`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use super::rng::Rng;
use crate::controller::consensus::{Consensus, ConsensusFuture};
use crate::controller::raft::{NodeId, PeerTransport};

/// The first broker endpoint.
pub(super) const BROKER_BASE: usize = 10;

/// The faults in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Faults {
    /// Percent of messages lost on every link.
    pub(super) drop_pct: u32,
    /// Per-message delay bounds in ms.
    pub(super) delay: (u64, u64),
    /// Directed links `(from, to)` that lose everything.
    pub(super) cut: BTreeSet<(usize, usize)>,
    /// Endpoints that neither send nor receive.
    pub(super) paused: BTreeSet<usize>,
    /// Endpoints that are down (a crashed process: connections refused).
    pub(super) down: BTreeSet<usize>,
}

impl Faults {
    /// Nothing wrong: 1–5 ms per message.
    pub(super) fn healthy() -> Faults {
        Faults {
            delay: (1, 5),
            ..Faults::default()
        }
    }

    fn blocks(&self, from: usize, to: usize) -> bool {
        self.cut.contains(&(from, to)) || self.paused.contains(&from) || self.paused.contains(&to)
    }

    /// Cuts both directions between every member of `a` and every member of `b`.
    pub(super) fn split(&mut self, a: &[usize], b: &[usize]) {
        for &x in a {
            for &y in b {
                self.cut.insert((x, y));
                self.cut.insert((y, x));
            }
        }
    }
}

/// The network, shared by every endpoint of one run.
pub(super) struct SimNet {
    faults: Mutex<Faults>,
    rng: Mutex<Rng>,
    /// The running consensus of each controller node, by endpoint.
    consensus: Mutex<Vec<Option<Arc<dyn Consensus>>>>,
    /// Each controller node's raft id, by endpoint.
    ids: Vec<NodeId>,
}

impl SimNet {
    pub(super) fn new(seed: u64, ids: Vec<NodeId>) -> Arc<SimNet> {
        let consensus = Mutex::new(vec![None; ids.len()]);
        Arc::new(SimNet {
            faults: Mutex::new(Faults::healthy()),
            rng: Mutex::new(Rng::new(seed.wrapping_mul(31).wrapping_add(7))),
            consensus,
            ids,
        })
    }

    pub(super) fn faults(&self) -> Faults {
        self.faults.lock().clone()
    }

    pub(super) fn update(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut self.faults.lock());
    }

    pub(super) fn is_down(&self, at: usize) -> bool {
        self.faults.lock().down.contains(&at)
    }

    /// Whether `from` can reach `to` now (no cut, no pause, both up).
    pub(super) fn connected(&self, from: usize, to: usize) -> bool {
        let f = self.faults.lock();
        !f.blocks(from, to) && !f.down.contains(&from) && !f.down.contains(&to)
    }

    pub(super) fn set_consensus(&self, at: usize, consensus: Option<Arc<dyn Consensus>>) {
        self.consensus.lock()[at] = consensus;
    }

    /// One message from `from` to `to`: waits its delay and tells whether it arrived.
    pub(super) async fn hop(&self, from: usize, to: usize) -> bool {
        let (lost_early, delay) = {
            let f = self.faults.lock();
            let mut rng = self.rng.lock();
            let lost = f.blocks(from, to) || rng.chance(f.drop_pct);
            (lost, rng.range(f.delay.0, f.delay.1))
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        // A cut that began while the message was on its way loses it too.
        !lost_early && self.connected(from, to)
    }

    /// The transport of controller node `from`.
    pub(super) fn transport(self: &Arc<SimNet>, from: usize) -> Arc<dyn PeerTransport> {
        Arc::new(Transport {
            net: self.clone(),
            from,
        })
    }
}

struct Transport {
    net: Arc<SimNet>,
    from: usize,
}

impl PeerTransport for Transport {
    fn call(
        &self,
        target: NodeId,
        code: i32,
        body: Vec<u8>,
    ) -> ConsensusFuture<Result<Bytes, String>> {
        let net = self.net.clone();
        let from = self.from;
        Box::pin(async move {
            let Some(to) = net.ids.iter().position(|&id| id == target) else {
                return Err(format!("no node {target}"));
            };
            if net.is_down(to) {
                // A crashed process: the connection is refused after a round trip.
                tokio::time::sleep(Duration::from_millis(2)).await;
                return Err("connection refused".into());
            }
            if !net.hop(from, to).await {
                return std::future::pending().await;
            }
            let consensus = net.consensus.lock()[to].clone();
            let Some(consensus) = consensus else {
                return Err("connection refused".into());
            };
            let answer = consensus.serve_peer(code, Bytes::from(body)).await;
            if !net.hop(to, from).await {
                return std::future::pending().await;
            }
            answer.map_err(|e| e.to_string())
        })
    }
}
