//! A simulated broker replica, speaking the controller protocol as a RocketMQ 5 broker in
//! controller mode does (CONTROLLER.md §2, §6): on its first start it asks for the next id,
//! applies it and registers; then every tick it heartbeats every controller node, reads its
//! set's replica info from the node it believes leads (moving on after 2007 or silence),
//! asks to be elected when the set has no master, and, as master, alters the sync-state set
//! to the replicas it can reach. Every request is recorded in the [`History`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use super::cluster::{Cluster, NODES};
use super::history::{History, Op, Outcome, Reg, Value};
use super::net::BROKER_BASE;
use super::rng::Rng;
use crate::controller::code::request as cc;
use crate::controller::code::response as rc;
use crate::controller::machine::BrokerId;
use crate::protocol::{ExtFields, RemotingCommand};
use crate::state::ConnId;

/// The cluster name of every set.
pub(super) const CLUSTER: &str = "SimCluster";
/// How long a broker waits for a controller's answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// The heartbeat timeout brokers announce (`heartbeatTimeoutMills`).
pub(super) const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3);
/// A broker's tick: heartbeats and a replica-info read.
const TICK: Duration = Duration::from_millis(500);

/// One replica; shared by its task and the nemesis.
pub(super) struct Broker {
    pub(super) set: String,
    pub(super) endpoint: usize,
    pub(super) addr: String,
    /// The id it applied (kept across restarts, as the broker's identity file).
    pub(super) id: Mutex<Option<BrokerId>>,
    /// Crashed: its task is gone and it answers nothing.
    pub(super) down: AtomicBool,
    /// Sends no heartbeats (a hung heartbeat thread).
    pub(super) silent: AtomicBool,
    /// Bumped when its channels close: a new generation of connections.
    generation: AtomicU64,
    /// What it last read of its set.
    pub(super) known: Mutex<Option<Reg>>,
    /// Its replicated log's end.
    pub(super) offset: AtomicI64,
    /// The node it believes leads.
    guess: AtomicUsize,
    opaque: AtomicU64,
}

impl Broker {
    pub(super) fn new(set: &str, endpoint: usize) -> Arc<Broker> {
        Arc::new(Broker {
            set: set.to_owned(),
            endpoint,
            addr: format!("10.0.1.{}:10911", endpoint),
            id: Mutex::new(None),
            down: AtomicBool::new(false),
            silent: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            known: Mutex::new(None),
            offset: AtomicI64::new(0),
            guess: AtomicUsize::new(endpoint % NODES),
            opaque: AtomicU64::new(0),
        })
    }

    pub(super) fn id(&self) -> Option<BrokerId> {
        *self.id.lock()
    }

    /// The connection this broker's requests to `node` arrive on.
    pub(super) fn conn(&self, node: usize) -> ConnId {
        let generation = self.generation.load(Ordering::SeqCst);
        ConnId(((self.endpoint as u64) << 32) | ((generation << 8) | node as u64))
    }

    /// Its channels to every controller closed (a crash, or a reset): each node it can
    /// reach sees the close; a new generation of connections follows.
    pub(super) fn close_channels(&self, cluster: &Cluster) {
        for node in 0..NODES {
            let controller = cluster.controller(node);
            let Some(controller) =
                controller.filter(|_| cluster.net.connected(self.endpoint, node))
            else {
                continue;
            };
            controller.connection_closed(self.conn(node), tokio::time::Instant::now());
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn request(&self, code: i32, fields: &[(&str, String)]) -> RemotingCommand {
        let opaque = self.opaque.fetch_add(1, Ordering::Relaxed) as i32;
        let mut req = RemotingCommand::request(code, opaque);
        let mut ext = ExtFields::new();
        for (k, v) in fields {
            ext.insert(*k, v.as_str());
        }
        req.ext_fields = Some(ext);
        req
    }
}

/// What a broker's task needs of the run.
#[derive(Clone)]
pub(super) struct World {
    pub(super) cluster: Arc<Cluster>,
    pub(super) history: History,
    /// Every broker of every set.
    pub(super) brokers: Arc<Vec<Arc<Broker>>>,
}

impl World {
    /// Sends `req` from `b` to `node` and records it as `op`; the answer when one came.
    pub(super) async fn call(
        &self,
        b: &Broker,
        node: usize,
        op: &'static str,
        req: RemotingCommand,
        value: &(dyn Fn(&RemotingCommand) -> Value + Sync),
    ) -> Option<RemotingCommand> {
        let invoke = self.history.now();
        let net = &self.cluster.net;
        let (outcome, answer) = if net.is_down(node) {
            (Outcome::Fail(-1), None)
        } else {
            let exchange = async {
                if !net.hop(b.endpoint, node).await {
                    return std::future::pending().await;
                }
                let answer = self.cluster.serve(node, b.conn(node), req).await?;
                if !net.hop(node, b.endpoint).await {
                    return std::future::pending().await;
                }
                Some(answer)
            };
            match tokio::time::timeout(CALL_TIMEOUT, exchange).await {
                Ok(Some(answer)) if answer.code == 0 => (Outcome::Ok(value(&answer)), Some(answer)),
                Ok(Some(answer)) => (Outcome::Fail(answer.code), Some(answer)),
                _ => (Outcome::Unknown, None),
            }
        };
        if op != "heartbeat" || !matches!(outcome, Outcome::Ok(_)) {
            self.history.record(Op {
                proc: format!("b{}", b.endpoint - BROKER_BASE),
                node,
                op,
                set: b.set.clone(),
                invoke,
                complete: self.history.now(),
                outcome,
            });
        }
        answer
    }

    /// A leader-only request: to the guessed leader; after 2007 or no answer the next
    /// guess is the next node.
    async fn lead(
        &self,
        b: &Broker,
        op: &'static str,
        req: RemotingCommand,
        value: &(dyn Fn(&RemotingCommand) -> Value + Sync),
    ) -> Option<RemotingCommand> {
        let node = b.guess.load(Ordering::SeqCst) % NODES;
        let answer = self.call(b, node, op, req, value).await;
        let refused = answer
            .as_ref()
            .is_none_or(|a| a.code == rc::CONTROLLER_NOT_LEADER);
        if refused {
            b.guess.store(node + 1, Ordering::SeqCst);
        }
        answer.filter(|a| a.code != rc::CONTROLLER_NOT_LEADER)
    }
}

fn num<T: std::str::FromStr>(resp: &RemotingCommand, key: &str) -> Option<T> {
    resp.ext(key).and_then(|v| v.parse().ok())
}

/// The `SyncStateSet` body: the set and its epoch.
fn sss_body(resp: &RemotingCommand) -> Option<(BTreeSet<BrokerId>, i32)> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Body {
        sync_state_set: BTreeSet<BrokerId>,
        sync_state_set_epoch: i32,
    }
    let body: Body = serde_json::from_slice(resp.body.as_deref()?).ok()?;
    Some((body.sync_state_set, body.sync_state_set_epoch))
}

fn read_value(resp: &RemotingCommand) -> Value {
    let Some((sss, sss_epoch)) = sss_body(resp) else {
        return Value::None;
    };
    Value::Read(Reg {
        master: num(resp, "masterBrokerId"),
        epoch: num(resp, "masterEpoch").unwrap_or(-1),
        sss,
        sss_epoch,
    })
}

fn elect_value(resp: &RemotingCommand) -> Value {
    match (num(resp, "masterBrokerId"), num(resp, "masterEpoch")) {
        (Some(master), Some(epoch)) => Value::Elected { master, epoch },
        _ => Value::None,
    }
}

fn none(_: &RemotingCommand) -> Value {
    Value::None
}

/// Runs broker `b` until its task is aborted (a crash) or the run ends.
pub(super) async fn run(w: World, b: Arc<Broker>, seed: u64) {
    let mut rng = Rng::new(seed ^ ((b.endpoint as u64) << 20));
    let mut registered = false;
    loop {
        let jitter = Duration::from_millis(rng.below(100));
        tokio::time::sleep(TICK + jitter).await;
        if b.down.load(Ordering::SeqCst) {
            return;
        }
        if b.id().is_none() {
            apply_id(&w, &b).await;
            continue;
        }
        if !registered {
            registered = register(&w, &b).await;
        }
        if !b.silent.load(Ordering::SeqCst) {
            heartbeat(&w, &b);
        }
        if rng.chance(10) {
            metadata(&w, &b).await;
        }
        let Some(reg) = read(&w, &b).await else {
            continue;
        };
        let me = b.id();
        match reg.master {
            None => elect(&w, &b).await,
            Some(m) if Some(m) == me => {
                b.offset.fetch_add(10, Ordering::SeqCst);
                alter(&w, &b, &reg).await;
            }
            Some(m) => follow(&w, &b, m),
        }
    }
}

async fn apply_id(w: &World, b: &Broker) {
    let base = [
        ("clusterName", CLUSTER.to_owned()),
        ("brokerName", b.set.clone()),
    ];
    let req = b.request(cc::CONTROLLER_GET_NEXT_BROKER_ID, &base);
    let Some(next) = w.lead(b, "next_id", req, &none).await else {
        return;
    };
    let Some(id) = num::<BrokerId>(&next, "nextBrokerId") else {
        return;
    };
    let code = format!("{};{}", b.addr, w.history.now());
    let mut fields = base.to_vec();
    fields.push(("appliedBrokerId", id.to_string()));
    fields.push(("registerCheckCode", code));
    let req = b.request(cc::CONTROLLER_APPLY_BROKER_ID, &fields);
    let addr = b.addr.clone();
    let applied = move |_: &RemotingCommand| Value::Applied {
        id,
        addr: addr.clone(),
    };
    let answer = w.lead(b, "apply_id", req, &applied).await;
    if answer.is_some_and(|a| a.code == 0) {
        *b.id.lock() = Some(id);
    }
}

async fn register(w: &World, b: &Broker) -> bool {
    let Some(id) = b.id() else { return false };
    let fields = [
        ("clusterName", CLUSTER.to_owned()),
        ("brokerName", b.set.clone()),
        ("brokerId", id.to_string()),
        ("brokerAddress", b.addr.clone()),
    ];
    let req = b.request(cc::CONTROLLER_REGISTER_BROKER, &fields);
    w.lead(b, "register", req, &none)
        .await
        .is_some_and(|a| a.code == 0)
}

fn heartbeat(w: &World, b: &Arc<Broker>) {
    let Some(id) = b.id() else { return };
    let epoch = b.known.lock().as_ref().map_or(-1, |k| k.epoch);
    let offset = b.offset.load(Ordering::SeqCst);
    let fields = [
        ("clusterName", CLUSTER.to_owned()),
        ("brokerName", b.set.clone()),
        ("brokerAddr", b.addr.clone()),
        ("brokerId", id.to_string()),
        ("epoch", epoch.to_string()),
        ("maxOffset", offset.to_string()),
        ("confirmOffset", offset.to_string()),
        (
            "heartbeatTimeoutMills",
            HEARTBEAT_TIMEOUT.as_millis().to_string(),
        ),
    ];
    for node in 0..NODES {
        let req = b.request(cc::BROKER_HEARTBEAT, &fields);
        let (w, b) = (w.clone(), b.clone());
        tokio::spawn(async move {
            w.call(&b, node, "heartbeat", req, &none).await;
        });
    }
}

async fn metadata(w: &World, b: &Broker) {
    let node = (b.guess.load(Ordering::SeqCst) + 1) % NODES;
    let req = b.request(cc::CONTROLLER_GET_METADATA_INFO, &[]);
    let Some(answer) = w.call(b, node, "metadata", req, &none).await else {
        return;
    };
    let leader = answer.ext("controllerLeaderId");
    if let Some(i) = leader.and_then(|l| l.strip_prefix('n')?.parse::<usize>().ok()) {
        b.guess.store(i, Ordering::SeqCst);
    }
}

async fn read(w: &World, b: &Broker) -> Option<Reg> {
    let req = b.request(
        cc::CONTROLLER_GET_REPLICA_INFO,
        &[("brokerName", b.set.clone())],
    );
    let answer = w.lead(b, "replica_info", req, &read_value).await?;
    let Value::Read(reg) = read_value(&answer) else {
        return None;
    };
    *b.known.lock() = Some(reg.clone());
    Some(reg)
}

async fn elect(w: &World, b: &Broker) {
    let Some(id) = b.id() else { return };
    let fields = [
        ("clusterName", CLUSTER.to_owned()),
        ("brokerName", b.set.clone()),
        ("brokerId", id.to_string()),
        ("designateElect", "false".to_owned()),
    ];
    let req = b.request(cc::CONTROLLER_ELECT_MASTER, &fields);
    w.lead(b, "elect", req, &elect_value).await;
}

/// The replicas of `b`'s set that `b` can replicate to now (itself included).
fn reachable(w: &World, b: &Broker) -> BTreeSet<BrokerId> {
    let net = &w.cluster.net;
    let peers = w.brokers.iter().filter(|o| o.set == b.set);
    let up = peers.filter(|o| {
        o.endpoint == b.endpoint
            || (!o.down.load(Ordering::SeqCst)
                && net.connected(b.endpoint, o.endpoint)
                && net.connected(o.endpoint, b.endpoint))
    });
    up.filter_map(|o| o.id()).collect()
}

async fn alter(w: &World, b: &Broker, reg: &Reg) {
    let Some(id) = b.id() else { return };
    let wanted = reachable(w, b);
    if wanted == reg.sss || !wanted.contains(&id) {
        return;
    }
    let fields = [
        ("brokerName", b.set.clone()),
        ("masterBrokerId", id.to_string()),
        ("masterEpoch", reg.epoch.to_string()),
    ];
    let body = serde_json::json!({"syncStateSet": &wanted, "syncStateSetEpoch": reg.sss_epoch});
    let req = b
        .request(cc::CONTROLLER_ALTER_SYNC_STATE_SET, &fields)
        .with_body(body.to_string().into_bytes());
    let epoch = reg.epoch;
    let altered = move |a: &RemotingCommand| match num::<i32>(a, "newSyncStateSetEpoch") {
        Some(sss_epoch) => Value::Altered {
            epoch,
            sss: wanted.clone(),
            sss_epoch,
        },
        None => Value::None,
    };
    w.lead(b, "alter_sync", req, &altered).await;
}

/// A replica copies from its master while it can reach it.
fn follow(w: &World, b: &Broker, master: BrokerId) {
    let net = &w.cluster.net;
    let source = w
        .brokers
        .iter()
        .find(|o| o.set == b.set && o.id() == Some(master));
    let live =
        source.filter(|m| !m.down.load(Ordering::SeqCst) && net.connected(m.endpoint, b.endpoint));
    if let Some(m) = live {
        b.offset
            .fetch_max(m.offset.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}
