//! `nsadmin`: mqadmin's name-server and controller commands, without a JVM, plus `diff`, a
//! check that the name servers of a cluster agree.
//!
//! Layers: `options` parses the command line as mqadmin (commons-cli) does; `commands`
//! runs one sub-command over a `Client` and prints mqadmin's output formats
//! (`format`) or JSON; `diff` compares the name servers; `credentials` finds
//! `tools.yml`. The client and the decoders of the answers' bodies are the crate's one
//! remoting client (`crate::remoting_client`), shared with the daemon's peer checks: the
//! admin tool never touches the server's state.
//!
//! Exit codes (unlike mqadmin, which exits 0 after a failure): 0 success; 1 the command line
//! was wrong (or, for `diff`, the name servers differ); 2 a server could not be asked
//! (connection refused, timeout, connection lost, no address); 3 a server refused the request
//! (a non-success response code) or answered with something unreadable. Each failure is one
//! line on stderr naming the server, the request and the code/remark. The controller commands
//! fit the same scheme: a controller group that knows no leader cannot be asked (2), a
//! controller's non-zero answer (`CODE: 2007  DESC: …`) is a refusal (3), and a name or
//! cluster the name server does not list is a refusal too (3).

pub(crate) mod commands;
pub(crate) mod credentials;
pub(crate) mod diff;
pub(crate) mod format;
pub(crate) mod options;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use options::{CommandSpec, UsageError};

use crate::protocol::SerializeType;
// `format` reads the bodies through `super::decode`.
use crate::remoting_client::decode;
use crate::remoting_client::{CallError, ClientOptions};

/// Success.
pub(crate) const EXIT_OK: u8 = 0;
/// Wrong command line; for `diff`: the name servers differ.
pub(crate) const EXIT_USAGE: u8 = 1;
/// A server could not be asked.
pub const EXIT_UNREACHABLE: u8 = 2;
/// A server refused the request or answered with something unreadable.
pub(crate) const EXIT_REFUSED: u8 = 3;

/// The environment variables the tool reads, gathered once by the binary.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `NAMESRV_ADDR`: the address list when `-n` is absent.
    pub(crate) namesrv_addr: Option<String>,
    /// `ROCKETMQ_HOME`: where `conf/tools.yml` lives.
    pub rocketmq_home: Option<PathBuf>,
    /// `NSADMIN_CREDENTIALS`: a credentials file, used unless `--credentials` is given.
    pub(crate) credentials_file: Option<PathBuf>,
    /// `ROCKETMQ_SERIALIZE_TYPE`: `JSON` (default) or `ROCKETMQ` request headers.
    pub(crate) serialize_type: Option<String>,
    /// `JAVA_OPT`: its `-Dtls.*` system properties configure TLS, as for mqadmin.
    pub(crate) java_opt: Option<String>,
}

impl Env {
    /// Reads the variables from the process environment.
    pub fn from_process() -> Self {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Env {
            namesrv_addr: var("NAMESRV_ADDR"),
            rocketmq_home: var("ROCKETMQ_HOME").map(PathBuf::from),
            credentials_file: var("NSADMIN_CREDENTIALS").map(PathBuf::from),
            serialize_type: var("ROCKETMQ_SERIALIZE_TYPE"),
            java_opt: var("JAVA_OPT"),
        }
    }
}

/// A failure to report: one stderr line and the exit code it implies.
#[derive(Debug)]
pub(crate) struct Problem {
    /// The line (without the `nsadmin: ` prefix).
    pub(crate) text: String,
    /// [`EXIT_UNREACHABLE`] or [`EXIT_REFUSED`] (or [`EXIT_USAGE`]).
    pub(crate) exit: u8,
}

impl From<CallError> for Problem {
    fn from(e: CallError) -> Self {
        let exit = if e.failure.is_refusal() {
            EXIT_REFUSED
        } else {
            EXIT_UNREACHABLE
        };
        Problem {
            text: e.to_string(),
            exit,
        }
    }
}

/// A problem with an answer (exit 3), naming the server.
pub(crate) fn bad_answer(server: &str, what: impl std::fmt::Display) -> Problem {
    Problem {
        text: format!("{server}: {what}"),
        exit: EXIT_REFUSED,
    }
}

impl From<UsageError> for Problem {
    fn from(e: UsageError) -> Self {
        Problem {
            text: e.0,
            exit: EXIT_USAGE,
        }
    }
}

/// Runs `nsadmin` with `args` (without the program name); returns the exit code.
pub async fn run(args: &[String], env: &Env, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let Some(first) = args.first() else {
        let _ = out.write_all(options::command_list().as_bytes());
        return EXIT_OK;
    };
    match first.as_str() {
        "-h" | "--help" | "help" if args.len() == 1 => {
            let _ = out.write_all(options::command_list().as_bytes());
            return EXIT_OK;
        }
        "--version" | "-V" => {
            let _ = writeln!(out, "nsadmin {}", env!("CARGO_PKG_VERSION"));
            return EXIT_OK;
        }
        "help" if args.len() == 2 => {
            return match options::find(&args[1]) {
                Some(spec) => {
                    let _ = out.write_all(spec.usage().as_bytes());
                    EXIT_OK
                }
                None => unknown_command(&args[1], err),
            };
        }
        _ => {}
    }
    let Some(spec) = options::find(first) else {
        return unknown_command(first, err);
    };
    let parsed = match spec.parse(&args[1..]) {
        Ok(p) if p.has("help") => {
            let _ = out.write_all(spec.usage().as_bytes());
            return EXIT_OK;
        }
        Ok(p) => p,
        Err(e) => return usage_error(spec, &e.0, err),
    };
    let setup = match Setup::new(spec, &parsed, env) {
        Ok(s) => s,
        Err(p) if p.exit == EXIT_USAGE => return usage_error(spec, &p.text, err),
        Err(p) => return report(&[p], 0, err),
    };
    for warning in &setup.warnings {
        let _ = writeln!(err, "nsadmin: warning: {warning}");
    }
    let outcome = commands::execute(spec, &parsed, setup, out, err).await;
    let _ = out.flush();
    // A value the command itself rejects (`-m`, `-i`, a blank `-v`) is a usage error too.
    if let Some(p) = outcome
        .problems
        .iter()
        .find(|p| p.exit == EXIT_USAGE && outcome.exit.is_none())
    {
        return usage_error(spec, &p.text, err);
    }
    let code = report(&outcome.problems, outcome.printed, err);
    outcome.exit.unwrap_or(code)
}

/// What every command needs: the address list and a configured client.
pub(crate) struct Setup {
    /// The `-n` (or `NAMESRV_ADDR`) addresses, in written order, without duplicates; empty
    /// only for a command that does not ask a name server.
    pub(crate) servers: Vec<String>,
    /// Whether the list came from `-n` (mqadmin prints it in some messages only then).
    pub(crate) from_option: bool,
    /// Client settings.
    pub(crate) client: ClientOptions,
    /// Non-fatal notes for stderr (an unusable default `tools.yml`).
    pub(crate) warnings: Vec<String>,
}

impl Setup {
    fn new(spec: &CommandSpec, parsed: &options::Parsed, env: &Env) -> Result<Setup, Problem> {
        let usage = |text: String| Problem {
            text,
            exit: EXIT_USAGE,
        };
        let needs_name_server = spec.kind.needs_name_server(parsed);
        let (list, from_option) = match (parsed.value("namesrvAddr"), &env.namesrv_addr) {
            (Some(n), _) => (n.to_owned(), true),
            (None, Some(n)) => (n.clone(), false),
            (None, None) if !needs_name_server => (String::new(), false),
            (None, None) => {
                return Err(usage(
                    "no name server address: give -n 'host:port;host:port' or set NAMESRV_ADDR"
                        .into(),
                ));
            }
        };
        let servers = split_addrs(&list);
        if servers.is_empty() && needs_name_server {
            return Err(usage(format!("no name server address in '{list}'")));
        }
        let mut client = ClientOptions {
            timeout: Duration::from_millis(spec.kind.default_timeout_ms()),
            ..ClientOptions::default()
        };
        if let Some(ms) = parsed.value("timeout") {
            match ms.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => client.timeout = Duration::from_millis(ms),
                _ => {
                    return Err(usage(format!(
                        "--timeout must be a positive number of milliseconds, not '{ms}'"
                    )));
                }
            }
        }
        if let Some(name) = &env.serialize_type {
            client.serialize_type = SerializeType::from_name(name).ok_or_else(|| {
                usage(format!(
                    "ROCKETMQ_SERIALIZE_TYPE must be JSON or ROCKETMQ, not '{name}'"
                ))
            })?;
        }
        // TLS: mqadmin's convention, -Dtls.enable=true and the tls.client.* keys in
        // JAVA_OPT (then tls.config.file), or --tls.
        let system = crate::tls::settings::system_properties(
            env.java_opt.as_deref().unwrap_or("").split_whitespace(),
        );
        // The file cannot set tls.enable: it is read only when TLS is on.
        let base = crate::tls::TlsSettings::resolve_base(&[], &system);
        if base.enable || parsed.has("tls") {
            let tls = crate::tls::TlsSettings::reread(&base);
            let config =
                crate::tls::client::client_config(&tls).map_err(|e| usage(format!("TLS: {e}")))?;
            client.tls = Some(std::sync::Arc::new(config));
        }
        let mut warnings = Vec::new();
        let found = credentials::find(
            parsed.value("credentials").map(std::path::Path::new),
            env.credentials_file.as_deref(),
            env.rocketmq_home.as_deref(),
        )
        .map_err(|e| usage(e.to_string()))?;
        match found {
            credentials::Found::Sign(c) => client.credentials = Some(c),
            credentials::Found::Unsigned => {}
            credentials::Found::UnsignedWithWarning(w) => warnings.push(w),
        }
        Ok(Setup {
            servers,
            from_option,
            client,
            warnings,
        })
    }
}

/// Splits an address list as mqadmin does: an `http://…/host:port` value is cut to the text
/// after its last `/`; items are separated by `;`. Unlike mqadmin, items are trimmed, empty
/// items and repeats are dropped, and the written order is kept (mqadmin shuffles).
pub(crate) fn split_addrs(list: &str) -> Vec<String> {
    let list = list.trim();
    let list = match list.strip_prefix("http://") {
        Some(rest) => rest.rsplit('/').next().unwrap_or(rest),
        None => list,
    };
    let mut out: Vec<String> = Vec::new();
    for item in list.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        if !out.iter().any(|s| s == item) {
            out.push(item.to_owned());
        }
    }
    out
}

fn unknown_command(name: &str, err: &mut dyn Write) -> u8 {
    let _ = writeln!(
        err,
        "The sub command {name} not exist.\nSee 'nsadmin' for the list of commands."
    );
    EXIT_USAGE
}

fn usage_error(spec: &CommandSpec, message: &str, err: &mut dyn Write) -> u8 {
    let _ = writeln!(err, "{message}");
    let _ = err.write_all(spec.usage().as_bytes());
    EXIT_USAGE
}

/// Prints each problem (but the first `printed`, already shown) on one stderr line and
/// returns the exit code they imply: the usage code if any, else "unreachable" if any server
/// could not be asked, else "refused".
fn report(problems: &[Problem], printed: usize, err: &mut dyn Write) -> u8 {
    for p in problems.iter().skip(printed) {
        let _ = writeln!(err, "nsadmin: {}", p.text);
    }
    [EXIT_USAGE, EXIT_UNREACHABLE, EXIT_REFUSED, EXIT_OK]
        .into_iter()
        .find(|code| *code == EXIT_OK || problems.iter().any(|p| p.exit == *code))
        .unwrap_or(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lists_split_like_mqadmins() {
        assert_eq!(split_addrs("a:1;b:2;"), ["a:1", "b:2"]);
        assert_eq!(split_addrs(" a:1 ; b:2;;a:1 "), ["a:1", "b:2"]);
        assert_eq!(split_addrs("http://h:9876"), ["h:9876"]);
        assert_eq!(
            split_addrs("http://x/y/h:9876;h2:9876"),
            ["h:9876", "h2:9876"]
        );
        assert!(split_addrs(" ; ").is_empty());
    }

    #[test]
    fn the_exit_code_prefers_usage_then_unreachable_then_refused() {
        let p = |exit| Problem {
            text: String::new(),
            exit,
        };
        let mut sink = Vec::new();
        assert_eq!(report(&[], 0, &mut sink), EXIT_OK);
        assert_eq!(report(&[p(EXIT_OK)], 0, &mut sink), EXIT_OK);
        assert_eq!(
            report(&[p(EXIT_REFUSED), p(EXIT_UNREACHABLE)], 0, &mut sink),
            EXIT_UNREACHABLE
        );
        assert_eq!(report(&[p(EXIT_REFUSED)], 1, &mut sink), EXIT_REFUSED);
        assert_eq!(
            String::from_utf8(sink).unwrap().lines().count(),
            3,
            "printed ones are skipped"
        );
    }
}
