//! The sub-commands: stage two of the command line (typed values from the parsed options),
//! the requests, and the output. Reads go to one name server (the next one on a connection
//! failure, as mqadmin's client does); writes go to every name server of `-n`. The controller
//! commands (`controller`, `replicas`) talk to the controller nodes of `-a` instead.
//!
//! Output goes to stdout as mqadmin prints it (or as JSON with `--json`); every failure is
//! collected as a [`Problem`] for the caller to print on stderr.

mod cluster;
mod controller;
mod read;
mod replicas;
mod write;

use std::hash::{BuildHasher, Hasher};
use std::io::Write;

use super::options::{CommandKind, CommandSpec, Parsed};
use super::{EXIT_USAGE, Problem, Setup, bad_answer};
use crate::protocol::RemotingCommand;
use crate::remoting_client::{CallError, Client, Failure, Request};

/// What a command leaves behind: the failures to report, and an exit code that replaces the
/// one derived from them (`diff`'s 0/1/2).
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Failures, one stderr line each.
    pub(crate) problems: Vec<Problem>,
    /// The exit code, when the command decides it itself.
    pub(crate) exit: Option<u8>,
    /// How many of `problems` were already printed (by `clusterList -i` as it goes).
    pub(crate) printed: usize,
}

/// Runs the command `spec` with its parsed options.
pub(crate) async fn execute(
    spec: &CommandSpec,
    parsed: &Parsed,
    setup: Setup,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    let mut ctx = Ctx::new(setup, parsed.has("json"), out, err);
    let result = match spec.kind {
        CommandKind::ClusterList => cluster::cluster_list(&mut ctx, parsed).await,
        CommandKind::TopicList => read::topic_list(&mut ctx, parsed).await,
        CommandKind::TopicRoute => read::topic_route(&mut ctx, parsed).await,
        CommandKind::TopicClusterList => read::topic_cluster_list(&mut ctx, parsed).await,
        CommandKind::GetNamesrvConfig => read::get_namesrv_config(&mut ctx).await,
        CommandKind::UpdateNamesrvConfig => write::update_namesrv_config(&mut ctx, parsed).await,
        CommandKind::UpdateKvConfig => write::update_kv_config(&mut ctx, parsed).await,
        CommandKind::DeleteKvConfig => write::delete_kv_config(&mut ctx, parsed).await,
        CommandKind::UpdateOrderConf => write::update_order_conf(&mut ctx, parsed).await,
        CommandKind::WipeWritePerm => write::change_write_perm(&mut ctx, parsed, true).await,
        CommandKind::AddWritePerm => write::change_write_perm(&mut ctx, parsed, false).await,
        CommandKind::DeleteTopic => write::delete_topic(&mut ctx, parsed).await,
        CommandKind::GetSyncStateSet => replicas::get_sync_state_set(&mut ctx, parsed).await,
        CommandKind::GetBrokerEpoch => replicas::get_broker_epoch(&mut ctx, parsed).await,
        CommandKind::GetControllerMetaData => {
            controller::get_controller_metadata(&mut ctx, parsed).await
        }
        CommandKind::GetControllerConfig => {
            controller::get_controller_config(&mut ctx, parsed).await
        }
        CommandKind::UpdateControllerConfig => {
            controller::update_controller_config(&mut ctx, parsed).await
        }
        CommandKind::ElectMaster => controller::elect_master(&mut ctx, parsed).await,
        CommandKind::CleanBrokerMetadata => {
            controller::clean_broker_metadata(&mut ctx, parsed).await
        }
        CommandKind::Diff => {
            let servers = ctx.servers.clone();
            let (problems, exit) =
                super::diff::run(&mut ctx.client, &servers, parsed, ctx.json, ctx.out).await;
            ctx.problems.extend(problems);
            return Outcome {
                problems: ctx.problems,
                exit: Some(exit),
                printed: 0,
            };
        }
    };
    if let Err(p) = result {
        ctx.problems.push(p);
    }
    Outcome {
        problems: ctx.problems,
        exit: None,
        printed: ctx.printed,
    }
}

/// Shared state of one command run.
pub(crate) struct Ctx<'a> {
    pub(crate) client: Client,
    /// The name servers, in written order.
    pub(crate) servers: Vec<String>,
    /// Whether `-n` gave them (rather than `NAMESRV_ADDR`).
    pub(crate) from_option: bool,
    /// `--json` was given.
    pub(crate) json: bool,
    /// stdout.
    pub(crate) out: &'a mut dyn Write,
    /// stderr, for commands that report while they run.
    err: &'a mut dyn Write,
    /// Failures that do not end the command.
    pub(crate) problems: Vec<Problem>,
    /// How many of `problems` were printed already.
    printed: usize,
    /// The name server reads go to (chosen at random, kept while it answers).
    chosen: usize,
}

impl<'a> Ctx<'a> {
    fn new(setup: Setup, json: bool, out: &'a mut dyn Write, err: &'a mut dyn Write) -> Self {
        let chosen = random_index(setup.servers.len());
        Ctx {
            client: Client::new(setup.client),
            servers: setup.servers,
            from_option: setup.from_option,
            json,
            out,
            err,
            problems: Vec::new(),
            printed: 0,
            chosen,
        }
    }

    /// Writes `text` to stdout.
    pub(crate) fn print(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
    }

    /// Prints the problems recorded so far on stderr now (for commands that never end).
    pub(crate) fn report_now(&mut self) {
        for p in &self.problems[self.printed..] {
            let _ = writeln!(self.err, "nsadmin: {}", p.text);
        }
        self.printed = self.problems.len();
        let _ = self.out.flush();
    }

    /// Prints `value` as one JSON document and a newline.
    pub(crate) fn print_json(&mut self, value: &serde_json::Value) {
        let text = serde_json::to_string_pretty(value).expect("a Value always serializes");
        self.print(&text);
        self.print("\n");
    }

    /// Sends a read to one name server and requires success. A server that cannot be
    /// reached is skipped for the next one, as mqadmin's client does.
    pub(crate) async fn read_one(&mut self, req: &Request) -> Result<RemotingCommand, Problem> {
        let n = self.servers.len();
        let mut last: Option<CallError> = None;
        for step in 0..n {
            let index = (self.chosen + step) % n;
            let addr = self.servers[index].clone();
            match self.client.call_ok(&addr, req).await {
                Ok(answer) => {
                    self.chosen = index;
                    return Ok(answer);
                }
                Err(e) if matches!(e.failure, Failure::Connect(_) | Failure::ConnectTimeout(_)) => {
                    last = Some(e);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.expect("at least one server").into())
    }

    /// The address reads currently go to.
    pub(crate) fn read_server(&self) -> &str {
        &self.servers[self.chosen]
    }

    /// Sends a write to every name server, one after the other; returns the successful
    /// answers with their server and records every failure.
    pub(crate) async fn write_all(&mut self, req: &Request) -> Vec<(String, RemotingCommand)> {
        let mut ok = Vec::new();
        for addr in self.servers.clone() {
            match self.client.call_ok(&addr, req).await {
                Ok(answer) => ok.push((addr, answer)),
                Err(e) => self.problems.push(e.into()),
            }
        }
        ok
    }
}

/// A usage problem (exit 1) with commons-cli's or our own message.
pub(crate) fn usage(text: impl Into<String>) -> Problem {
    Problem {
        text: text.into(),
        exit: EXIT_USAGE,
    }
}

/// The value of a required option, trimmed as mqadmin trims it.
pub(crate) fn required<'p>(parsed: &'p Parsed, long: &str) -> &'p str {
    parsed.value(long).map(str::trim).unwrap_or_default()
}

/// A random index below `n` (mqadmin picks the first name server at random), from the
/// standard library's per-process random hash keys.
fn random_index(n: usize) -> usize {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(n);
    (h.finish() % n.max(1) as u64) as usize
}
