//! One simulated run: three controller nodes and one or two broker sets of three replicas,
//! a warm-up until every set has a master, the faults of a [`Schedule`] (or a scenario's own
//! steps), the heal, a recovery in which every set must have a live master again, then the
//! stop and the checks. Each run has its own current-thread runtime on tokio's paused
//! clock, so simulated minutes take real milliseconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;

use super::broker::{self, Broker, World};
use super::check::{self, Evidence, Violation};
use super::cluster::{self, Cluster, NODES};
use super::history::{History, Reg, Sample};
use super::net::{BROKER_BASE, Faults};
use super::schedule::{Schedule, Step};
use crate::controller::raft;

/// How long a set may stay masterless after the heal.
pub(super) const RECOVERY: Duration = Duration::from_secs(30);
/// How long the warm-up may take to elect the first masters.
const WARMUP: Duration = Duration::from_secs(30);

/// What a run found.
pub(super) struct Report {
    pub(super) schedule: String,
    pub(super) violations: Vec<Violation>,
    pub(super) history: History,
    /// Master changes the committed log holds (every set).
    pub(super) elections: usize,
}

impl Report {
    /// The violations, the schedule and the history around each violation.
    pub(super) fn explain(&self) -> String {
        let mut text = format!("schedule: {}\n", self.schedule);
        for (at, fault) in self.history.faults() {
            text.push_str(&format!("  fault [{at:>6}] {fault}\n"));
        }
        for v in &self.violations {
            text.push_str(&format!("violation: {v}\n"));
            let from = v.from.saturating_sub(2_000);
            for op in self.history.around(&v.set, from, v.to) {
                text.push_str(&format!("    {op}\n"));
            }
        }
        text
    }
}

/// A run in progress.
pub(super) struct Sim {
    pub(super) cluster: Arc<Cluster>,
    pub(super) world: World,
    pub(super) sets: Vec<String>,
    seed: u64,
    pub(super) base: Faults,
    pub(super) tasks: Mutex<Vec<Option<JoinHandle<()>>>>,
    samples: Arc<Mutex<Vec<Sample>>>,
    timeline: Mutex<Vec<(u64, Faults)>>,
    pub(super) incarnations: Arc<[AtomicUsize; NODES]>,
    monitor: JoinHandle<()>,
    _dir: tempfile::TempDir,
}

/// Runs `run` to completion on its own current-thread runtime with a paused clock.
pub(super) fn block_on<F: std::future::Future>(run: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(run)
}

/// Runs `schedule` on its own paused-clock runtime.
pub(super) fn run_schedule(schedule: &Schedule) -> Report {
    block_on(async {
        let sim = Sim::start(schedule).await;
        for step in &schedule.steps {
            sim.step(step).await;
        }
        sim.finish().await
    })
}

fn temp_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm),
        false => tempfile::tempdir(),
    }
    .expect("a temporary directory")
}

impl Sim {
    /// Starts the nodes and brokers of `schedule` and waits for the first masters.
    pub(super) async fn start(schedule: &Schedule) -> Sim {
        let dir = temp_dir();
        let cluster = Cluster::new(dir.path().to_owned(), schedule.seed, schedule.read_barrier);
        for i in 0..NODES {
            cluster.start(i).await;
        }
        let sets: Vec<String> = (0..schedule.sets).map(|s| format!("set{s}")).collect();
        let brokers = (0..schedule.sets * 3)
            .map(|k| Broker::new(&sets[k / 3], BROKER_BASE + k))
            .collect();
        let world = World {
            cluster: cluster.clone(),
            history: History::new(),
            brokers: Arc::new(brokers),
        };
        let mut base = Faults::healthy();
        if let Some((loss, delay)) = schedule.background {
            base.drop_pct = loss;
            base.delay = (1, delay);
        }
        cluster.net.update(|f| *f = base.clone());
        let samples = Arc::new(Mutex::new(Vec::new()));
        let incarnations = Arc::new([0, 0, 0].map(AtomicUsize::new));
        let monitor = tokio::spawn(monitor(
            cluster.clone(),
            world.history.clone(),
            sets.clone(),
            samples.clone(),
            incarnations.clone(),
        ));
        let sim = Sim {
            cluster,
            world,
            sets,
            seed: schedule.seed,
            base,
            tasks: Mutex::new(Vec::new()),
            samples,
            timeline: Mutex::new(Vec::new()),
            incarnations,
            monitor,
            _dir: dir,
        };
        sim.mark();
        for k in 0..sim.world.brokers.len() {
            let task = sim.spawn_broker(k);
            sim.tasks.lock().push(Some(task));
        }
        if sim.wait_masters(WARMUP).await.is_none() {
            sim.world
                .history
                .fault("warm-up: no master for every set".into());
        }
        sim
    }

    pub(super) fn spawn_broker(&self, k: usize) -> JoinHandle<()> {
        let b = self.world.brokers[k].clone();
        tokio::spawn(broker::run(self.world.clone(), b, self.seed))
    }

    /// Records the faults now in force.
    pub(super) fn mark(&self) {
        let now = self.world.history.now();
        self.timeline.lock().push((now, self.cluster.net.faults()));
    }

    /// The ready leader, or the first node up.
    pub(super) fn leader(&self) -> usize {
        self.cluster
            .leader()
            .or_else(|| (0..NODES).find(|&i| self.cluster.is_up(i)))
            .unwrap_or(0)
    }

    /// Set `set`'s register on the leader.
    pub(super) fn state(&self, set: usize) -> Option<Reg> {
        let machine = self.cluster.machine(self.cluster.leader()?)?;
        let machine = machine.read();
        let sync = machine.sync_state(&self.sets[set])?;
        Some(Reg {
            master: sync.master_broker_id,
            epoch: sync.master_epoch,
            sss: sync.sync_state_set.clone(),
            sss_epoch: sync.sync_state_set_epoch,
        })
    }

    /// The broker of `set` with id `id`.
    pub(super) fn broker(
        &self,
        set: usize,
        id: crate::controller::machine::BrokerId,
    ) -> Option<Arc<Broker>> {
        let name = &self.sets[set];
        let mut all = self.world.brokers.iter();
        all.find(|b| &b.set == name && b.id() == Some(id)).cloned()
    }

    /// The master of `set` per the leader, if it is a live broker.
    pub(super) fn master(&self, set: usize) -> Option<Arc<Broker>> {
        let b = self.broker(set, self.state(set)?.master?)?;
        (!b.down.load(Ordering::SeqCst)).then_some(b)
    }

    /// Waits until every set has a live master; how long it took.
    pub(super) async fn wait_masters(&self, bound: Duration) -> Option<Duration> {
        let start = tokio::time::Instant::now();
        while start.elapsed() < bound {
            if (0..self.sets.len()).all(|s| self.master(s).is_some()) {
                return Some(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// One step: the fault, its hold, the heal, the gap.
    pub(super) async fn step(&self, step: &Step) {
        self.begin(step.fault).await;
        tokio::time::sleep(Duration::from_millis(step.hold_ms)).await;
        if step.overlap {
            return;
        }
        self.heal().await;
        tokio::time::sleep(Duration::from_millis(step.gap_ms)).await;
    }

    /// Heals, waits for the recovery, stops everything and checks the run.
    pub(super) async fn finish(self) -> Report {
        self.heal().await;
        let mut violations = Vec::new();
        if self.wait_masters(RECOVERY).await.is_none() {
            let now = self.world.history.now();
            let states: Vec<String> = (0..self.sets.len())
                .map(|s| self.state(s).map_or("no leader".into(), |r| r.to_string()))
                .collect();
            violations.push(Violation {
                what: format!(
                    "no live master {} s after the heal: {states:?}",
                    RECOVERY.as_secs()
                ),
                set: self.sets[0].clone(),
                from: now.saturating_sub(RECOVERY.as_millis() as u64),
                to: now,
            });
        }
        // Let the followers learn the last commits, then stop the clients first.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for task in self.tasks.lock().iter_mut().filter_map(Option::take) {
            task.abort();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.monitor.abort();
        self.cluster.stop_all().await;
        let mut logs = Vec::new();
        for i in 0..NODES {
            let settings = cluster::settings(&self.cluster.dir, i);
            match raft::committed_events(&settings).await {
                Ok(log) => logs.push(log),
                Err(e) => panic!("n{i}'s log cannot be read: {e}"),
            }
        }
        let ops = self.world.history.ops();
        let samples = self.samples.lock().clone();
        let timeline = self.timeline.lock().clone();
        let evidence = Evidence {
            logs: &logs,
            samples: &samples,
            ops: &ops,
            timeline: &timeline,
            sets: &self.sets,
        };
        violations.extend(check::check(&evidence));
        let longest = logs
            .iter()
            .max_by_key(|l| l.len())
            .map_or(&[][..], Vec::as_slice);
        let (seqs, _) = check::sequences(longest);
        let changes = seqs.values().flat_map(|seq| seq.windows(2));
        let elections = changes.filter(|p| p[0].epoch != p[1].epoch).count();
        Report {
            schedule: String::new(),
            violations,
            history: self.world.history.clone(),
            elections,
        }
    }
}

/// Samples every running node's applied registers every 100 ms (a change only), keyed by
/// node and incarnation (a restarted node replays its log from the start).
async fn monitor(
    cluster: Arc<Cluster>,
    history: History,
    sets: Vec<String>,
    samples: Arc<Mutex<Vec<Sample>>>,
    incarnations: Arc<[AtomicUsize; NODES]>,
) {
    let mut last: Vec<Option<Reg>> = vec![None; NODES * sets.len() * 64];
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for i in 0..NODES {
            let Some(machine) = cluster.machine(i) else {
                continue;
            };
            let inc = incarnations[i].load(Ordering::SeqCst) % 64;
            for (s, set) in sets.iter().enumerate() {
                let reg = machine.read().sync_state(set).map(|sync| Reg {
                    master: sync.master_broker_id,
                    epoch: sync.master_epoch,
                    sss: sync.sync_state_set.clone(),
                    sss_epoch: sync.sync_state_set_epoch,
                });
                let Some(reg) = reg else { continue };
                let slot = (inc * NODES + i) * sets.len() + s;
                if last[slot].as_ref() != Some(&reg) {
                    last[slot] = Some(reg.clone());
                    samples
                        .lock()
                        .push((i | inc << 8, history.now(), set.clone(), reg));
                }
            }
        }
    }
}
