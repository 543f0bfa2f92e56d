//! The nemesis of a run: [`Fault`]s applied to the simulated network, nodes and brokers,
//! resolved against the run's state when they begin (the leader now, the set's master now),
//! and the heal that undoes them all — the network back to the run's background, crashed
//! nodes restarted from their stores, crashed brokers restarted with their ids, silenced
//! brokers beating again.

use std::sync::atomic::Ordering;

use super::broker::Broker;
use super::cluster::NODES;
use super::net::{BROKER_BASE, Faults};
use super::run::Sim;
use super::schedule::Fault;

impl Sim {
    /// Crashes broker `b`: its task ends, its channels close where the close can be seen.
    pub(super) fn crash_broker(&self, b: &Broker) {
        let k = b.endpoint - BROKER_BASE;
        b.down.store(true, Ordering::SeqCst);
        if let Some(task) = self.tasks.lock()[k].take() {
            task.abort();
        }
        b.close_channels(&self.cluster);
        self.cluster.net.update(|f| {
            f.down.insert(b.endpoint);
        });
    }

    pub(super) async fn crash_node(&self, i: usize) {
        self.cluster.crash(i).await;
    }

    /// Applies `fault` now; returns what it did, for the history.
    pub(super) async fn begin(&self, fault: Fault) {
        let leader = self.leader();
        let followers: Vec<usize> = (0..NODES).filter(|&i| i != leader).collect();
        let net = &self.cluster.net;
        let set_of = |s: usize| s.min(self.sets.len() - 1);
        let what = format!("{fault:?} (leader n{leader})");
        match fault {
            Fault::Drop(pct) => net.update(|f| f.drop_pct = pct),
            Fault::Delay(ms) => net.update(|f| f.delay = (ms / 5, ms)),
            Fault::IsolateLeader => net.update(|f| f.split(&[leader], &followers)),
            Fault::IsolateFollower => {
                net.update(|f| f.split(&[followers[0]], &[leader, followers[1]]))
            }
            Fault::Bridge => net.update(|f| f.split(&[leader], &[followers[0]])),
            Fault::OneWayFromLeader => net.update(|f| {
                f.cut.insert((leader, followers[0]));
            }),
            Fault::OneWayToLeader => net.update(|f| {
                f.cut.insert((followers[0], leader));
            }),
            Fault::AsymmetricMaster(s) => {
                if let Some(m) = self.master(set_of(s)) {
                    net.update(|f| f.split(&[leader], &[m.endpoint]));
                }
            }
            Fault::IsolateMaster(s) => {
                if let Some(m) = self.master(set_of(s)) {
                    net.update(|f| f.split(&[m.endpoint], &[0, 1, 2]));
                }
            }
            Fault::LeaderWithMaster(s) => {
                let mut minority = vec![leader];
                minority.extend(self.master(set_of(s)).map(|m| m.endpoint));
                let others = self.world.brokers.iter().map(|b| b.endpoint);
                let mut majority: Vec<usize> = others.filter(|e| !minority.contains(e)).collect();
                majority.extend(&followers);
                net.update(|f| f.split(&minority, &majority));
            }
            Fault::CrashFollower => self.crash_node(followers[0]).await,
            Fault::CrashLeader => self.crash_node(leader).await,
            Fault::CrashAll => {
                for i in 0..NODES {
                    self.crash_node(i).await;
                }
            }
            Fault::PauseLeader => net.update(|f| {
                f.paused.insert(leader);
            }),
            Fault::PauseFollower => net.update(|f| {
                f.paused.insert(followers[0]);
            }),
            Fault::DoubleKill(s) => {
                let master = self.master(set_of(s));
                self.crash_node(leader).await;
                if let Some(m) = master {
                    self.crash_broker(&m);
                }
            }
            Fault::SilenceMaster(s) => {
                if let Some(m) = self.master(set_of(s)) {
                    m.silent.store(true, Ordering::SeqCst);
                }
            }
            Fault::CloseMasterChannel(s) => {
                if let Some(m) = self.master(set_of(s)) {
                    m.close_channels(&self.cluster);
                }
            }
            Fault::CrashMaster(s) => {
                if let Some(m) = self.master(set_of(s)) {
                    self.crash_broker(&m);
                }
            }
            Fault::CrashReplica(s) => {
                let master = self.state(set_of(s)).and_then(|r| r.master);
                let name = &self.sets[set_of(s)];
                let replica = self.world.brokers.iter().find(|b| {
                    &b.set == name
                        && b.id().is_some()
                        && b.id() != master
                        && !b.down.load(Ordering::SeqCst)
                });
                if let Some(r) = replica.cloned() {
                    self.crash_broker(&r);
                }
            }
        }
        self.world.history.fault(what);
        self.mark();
    }

    /// Makes everything whole: the network (back to the run's background), crashed nodes
    /// and brokers restarted, silenced brokers beating.
    pub(super) async fn heal(&self) {
        let base = self.base.clone();
        self.cluster.net.update(|f| {
            let down = std::mem::take(&mut f.down);
            *f = Faults { down, ..base };
        });
        for i in 0..NODES {
            if !self.cluster.is_up(i) {
                self.incarnations[i].fetch_add(1, Ordering::SeqCst);
                self.cluster.start(i).await;
            }
        }
        for (k, b) in self.world.brokers.iter().enumerate() {
            b.silent.store(false, Ordering::SeqCst);
            if b.down.swap(false, Ordering::SeqCst) {
                self.cluster.net.update(|f| {
                    f.down.remove(&b.endpoint);
                });
                let task = self.spawn_broker(k);
                self.tasks.lock()[k] = Some(task);
            }
        }
        self.world.history.fault("heal".into());
        self.mark();
    }
}
