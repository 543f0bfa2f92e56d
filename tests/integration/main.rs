//! Integration tests: the real server on 127.0.0.1:0, driven with raw frames.

mod harness;

mod broker;
mod cli;
mod conf;
mod kv;
mod protocol;
mod scale;
mod shutdown;
mod topics;
mod wire;
