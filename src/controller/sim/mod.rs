//! A deterministic-as-practical simulation of the controller (issue 24's simulation layer):
//! three real controller nodes — the real [`Controller`](super::Controller) over real
//! openraft nodes on their real file stores — talk over a seeded in-process network
//! (`net`) with delay, loss, one-way and two-way cuts, pauses and crashes; simulated brokers
//! (`broker`) drive them through the controller's own request table and record a history
//! (`history`); random fault schedules (`schedule`) of nemeses (`nemesis`) run on tokio's
//! paused clock (`run`), and every run is checked (`check`) for issue 24's invariants.
//! `scenarios` replays the Java controller bugs the issue names, `tests` runs the random
//! seeds.
//!
//! Reproducibility: the schedule, every delay and every drop come from the seed, and each
//! run has its own current-thread runtime on a paused clock; openraft's election jitter
//! (its own thread-local generator) and the completion order of file writes on tokio's
//! blocking pool are not seeded, so a seed replays the same faults but not always the same
//! interleaving.
//!
//! Fidelity: a crash stops the node's services and raft core and drops them (the stores
//! hold what was synced, which is all openraft was told is durable); a pause loses the
//! node's messages both ways while its own timers still run (unlike SIGSTOP); brokers'
//! heartbeats reach every node, and a closed channel is seen only by the nodes the broker
//! could reach. No snapshots are taken, so the checker can read each node's whole log.

mod broker;
mod check;
mod cluster;
mod history;
mod nemesis;
mod net;
mod rng;
mod run;
mod scenarios;
mod schedule;
mod tests;
