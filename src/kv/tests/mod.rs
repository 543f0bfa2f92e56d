//! Tests of the KV store, one file per topic: the Java file format, recovery and failed
//! writes (`store`), the store against a model across restarts and damaged files (`model`),
//! and the journaled store under crashes and torn records (`journal`).

mod journal;
mod model;
mod store;
