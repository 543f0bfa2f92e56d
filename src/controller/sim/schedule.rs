//! Fault schedules: the nemeses a run can apply, and random schedules of them from a seed.
//! A schedule is a list of faults, each held for a while and then healed (the network made
//! whole, crashed nodes and brokers restarted, silenced brokers beating again), with a gap
//! before the next; some schedules add a background of message loss or delay throughout.

use std::fmt;

use super::rng::Rng;

/// One nemesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    /// Every link loses this percentage of messages.
    Drop(u32),
    /// Every message takes this many ms at most (and a fifth of it at least).
    Delay(u64),
    /// The controller leader cut off from both followers (leader in the minority).
    IsolateLeader,
    /// One follower cut off (the leader keeps the majority).
    IsolateFollower,
    /// The two followers cannot talk; the leader still reaches both (a bridge node).
    Bridge,
    /// The leader's messages to one follower are lost, the other way works.
    OneWayFromLeader,
    /// One follower's messages to the leader are lost.
    OneWayToLeader,
    /// apache/rocketmq#4800: only the controller leader loses the set's broker master.
    AsymmetricMaster(usize),
    /// The set's master cannot reach any controller node.
    IsolateMaster(usize),
    /// apache/rocketmq#7017/#6662: the controller leader and the set's master on one side.
    LeaderWithMaster(usize),
    /// A follower crashes (restarted at the heal).
    CrashFollower,
    /// The leader crashes (restarted at the heal).
    CrashLeader,
    /// Every node crashes at once.
    CrashAll,
    /// The leader stops sending and receiving.
    PauseLeader,
    /// A follower stops sending and receiving.
    PauseFollower,
    /// apache/rocketmq#7689: the controller leader and the set's master die together.
    DoubleKill(usize),
    /// The set's master sends no heartbeats.
    SilenceMaster(usize),
    /// The set's master's controller channels close (it reconnects).
    CloseMasterChannel(usize),
    /// The set's master crashes.
    CrashMaster(usize),
    /// A replica of the set that is not its master crashes.
    CrashReplica(usize),
}

impl Fault {
    /// How many kinds [`Fault::random`] draws from.
    pub(super) const KINDS: u64 = 20;

    fn random(rng: &mut Rng, sets: usize) -> Fault {
        let set = rng.below(sets as u64) as usize;
        match rng.below(Self::KINDS) {
            0 => Fault::Drop(rng.range(10, 40) as u32),
            1 => Fault::Delay(rng.range(50, 400)),
            2 => Fault::IsolateLeader,
            3 => Fault::IsolateFollower,
            4 => Fault::Bridge,
            5 => Fault::OneWayFromLeader,
            6 => Fault::OneWayToLeader,
            7 => Fault::AsymmetricMaster(set),
            8 => Fault::IsolateMaster(set),
            9 => Fault::LeaderWithMaster(set),
            10 => Fault::CrashFollower,
            11 => Fault::CrashLeader,
            12 => Fault::CrashAll,
            13 => Fault::PauseLeader,
            14 => Fault::PauseFollower,
            15 => Fault::DoubleKill(set),
            16 => Fault::SilenceMaster(set),
            17 => Fault::CloseMasterChannel(set),
            18 => Fault::CrashMaster(set),
            _ => Fault::CrashReplica(set),
        }
    }
}

/// One step: a fault held for `hold_ms`, then `gap_ms` of healed network — or, when
/// `overlap`, no heal: the next step's fault joins this one (a crash under a partition).
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) fault: Fault,
    pub(super) hold_ms: u64,
    pub(super) gap_ms: u64,
    pub(super) overlap: bool,
}

/// A whole schedule.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    pub(super) seed: u64,
    /// Broker sets in the run (one or two).
    pub(super) sets: usize,
    /// Loss and delay under every step, if any.
    pub(super) background: Option<(u32, u64)>,
    /// The nodes run with `processReadEvent` (leader-only reads pass a read barrier).
    pub(super) read_barrier: bool,
    pub(super) steps: Vec<Step>,
}

impl Schedule {
    /// The schedule of `seed`: 3–6 faults of 1–8 s each.
    pub(super) fn random(seed: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let sets = 1 + rng.below(2) as usize;
        let background = rng
            .chance(25)
            .then(|| (rng.range(0, 10) as u32, rng.range(5, 60)));
        let read_barrier = rng.chance(50);
        let steps = (0..rng.range(3, 8))
            .map(|_| Step {
                fault: Fault::random(&mut rng, sets),
                hold_ms: rng.range(1_000, 8_000),
                gap_ms: rng.range(500, 4_000),
                overlap: rng.chance(25),
            })
            .collect();
        Schedule {
            seed,
            sets,
            background,
            read_barrier,
            steps,
        }
    }

    /// A schedule of the given steps, one set.
    pub(super) fn of(seed: u64, steps: Vec<Step>) -> Schedule {
        Schedule {
            seed,
            sets: 1,
            background: None,
            read_barrier: false,
            steps,
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {} sets {}", self.seed, self.sets)?;
        if self.read_barrier {
            write!(f, " processReadEvent")?;
        }
        if let Some((loss, delay)) = self.background {
            write!(f, " background loss {loss}% delay {delay} ms")?;
        }
        for s in &self.steps {
            match s.overlap {
                true => write!(f, "; {:?} {} ms, then the next too", s.fault, s.hold_ms)?,
                false => write!(f, "; {:?} {} ms, gap {} ms", s.fault, s.hold_ms, s.gap_ms)?,
            }
        }
        Ok(())
    }
}
