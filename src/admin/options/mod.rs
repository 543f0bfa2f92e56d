//! mqadmin's command line, reproduced: a table of sub-commands with commons-cli style options,
//! the parser (Apache Commons CLI `DefaultParser` rules and messages) and the help texts
//! (`HelpFormatter`, width 110).
//!
//! This is stage one of the CLI: it turns `argv` into a [`Parsed`] set of raw option values
//! for one [`CommandSpec`]. Stage two, in `commands`, reads typed values from it. clap is not
//! used because scripts and runbooks written for mqadmin rely on commons-cli's behaviour
//! (case-insensitive command names, `-tTopic`, `-topic` as a long option, unique prefixes of
//! long options) and its usage format, which clap cannot reproduce.

use std::fmt::Write as _;

mod table;

pub(crate) use table::COMMANDS;
use table::COMMON;

/// One option of a sub-command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptSpec {
    /// The short name (`-n`; mqadmin has a few of two letters, `-bn`), if any.
    pub(crate) short: Option<&'static str>,
    /// The long name (`--namesrvAddr`).
    pub(crate) long: &'static str,
    /// Whether the option takes a value.
    pub(crate) takes_value: bool,
    /// Whether the option must be given.
    pub(crate) required: bool,
    /// The help text.
    pub(crate) desc: &'static str,
}

impl OptSpec {
    /// commons-cli's key: the short name, else the long one.
    fn key(&self) -> String {
        self.short.unwrap_or(self.long).to_owned()
    }
}

/// Which sub-command a spec describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandKind {
    ClusterList,
    TopicList,
    TopicRoute,
    TopicClusterList,
    GetNamesrvConfig,
    UpdateNamesrvConfig,
    UpdateKvConfig,
    DeleteKvConfig,
    UpdateOrderConf,
    WipeWritePerm,
    AddWritePerm,
    DeleteTopic,
    GetSyncStateSet,
    GetBrokerEpoch,
    GetControllerMetaData,
    GetControllerConfig,
    UpdateControllerConfig,
    ElectMaster,
    CleanBrokerMetadata,
    Diff,
}

impl CommandKind {
    /// Whether the command, with these options, asks a name server (so needs `-n` or
    /// `NAMESRV_ADDR`). The controller commands reach the controller through `-a` and ask a
    /// name server only to list a cluster's (or a broker name's) brokers.
    pub(crate) fn needs_name_server(self, parsed: &Parsed) -> bool {
        match self {
            CommandKind::GetSyncStateSet => !parsed.has("brokerName") && parsed.has("clusterName"),
            CommandKind::GetBrokerEpoch => parsed.has("brokerName") || parsed.has("clusterName"),
            CommandKind::GetControllerMetaData
            | CommandKind::GetControllerConfig
            | CommandKind::UpdateControllerConfig
            | CommandKind::ElectMaster
            | CommandKind::CleanBrokerMetadata => false,
            _ => true,
        }
    }

    /// How long to wait for an answer unless `--timeout` says: mqadmin waits 3000 ms for
    /// the controller's leader-discovery and leader-only requests and for a broker's epoch
    /// cache, 5000 ms for everything else.
    pub(crate) fn default_timeout_ms(self) -> u64 {
        match self {
            CommandKind::GetSyncStateSet
            | CommandKind::GetBrokerEpoch
            | CommandKind::GetControllerMetaData
            | CommandKind::ElectMaster
            | CommandKind::CleanBrokerMetadata => 3000,
            _ => 5000,
        }
    }
}

/// A sub-command: its name, one-line description and options (besides the common ones).
#[derive(Debug)]
pub(crate) struct CommandSpec {
    /// The name as mqadmin spells it (matched ignoring case).
    pub(crate) name: &'static str,
    /// The description listed by `nsadmin` without arguments.
    pub(crate) desc: &'static str,
    /// The command's own options.
    pub(crate) options: &'static [OptSpec],
    /// Which command this is.
    pub(crate) kind: CommandKind,
}

/// Finds a command by name, ignoring case as mqadmin does.
pub(crate) fn find(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name.eq_ignore_ascii_case(name))
}

/// The parsed options of one invocation: `(long name, value)` in command-line order.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    values: Vec<(&'static str, Option<String>)>,
}

impl Parsed {
    /// Whether the option `long` was given.
    pub(crate) fn has(&self, long: &str) -> bool {
        self.values.iter().any(|(k, _)| *k == long)
    }

    /// The value of option `long` (the first one, as commons-cli's `getOptionValue`).
    pub fn value(&self, long: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == long)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// Why the command line was refused; the text is commons-cli's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub String);

impl CommandSpec {
    /// The command's options followed by the common ones.
    pub(crate) fn all_options(&self) -> impl Iterator<Item = &OptSpec> {
        self.options.iter().chain(COMMON.iter())
    }

    /// Parses the arguments after the command name.
    pub(crate) fn parse(&self, args: &[String]) -> Result<Parsed, UsageError> {
        let mut parsed = Parsed::default();
        let mut i = 0;
        while i < args.len() {
            let token = &args[i];
            i += 1;
            let (spec, inline) = if let Some(rest) = token.strip_prefix("--") {
                let (name, inline) = split_eq(rest);
                (self.long_option(name, token)?, inline)
            } else if let Some(rest) = token.strip_prefix('-').filter(|r| !r.is_empty()) {
                match self.short_token(rest, token, &mut parsed)? {
                    Some(found) => found,
                    None => continue,
                }
            } else {
                return Err(UsageError(format!("Unexpected argument: {token}")));
            };
            let value = if spec.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None if i < args.len() && !looks_like_option(&args[i]) => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => {
                        return Err(UsageError(format!(
                            "Missing argument for option: {}",
                            spec.key()
                        )));
                    }
                }
            } else {
                None
            };
            parsed.values.push((spec.long, value));
        }
        if !parsed.has("help") {
            self.check_required(&parsed)?;
        }
        Ok(parsed)
    }

    /// Commons CLI's check that every required option was given, naming all that were not.
    fn check_required(&self, parsed: &Parsed) -> Result<(), UsageError> {
        let missing: Vec<String> = self
            .all_options()
            .filter(|o| o.required && !parsed.has(o.long))
            .map(OptSpec::key)
            .collect();
        match missing.len() {
            0 => Ok(()),
            1 => Err(UsageError(format!(
                "Missing required option: {}",
                missing[0]
            ))),
            _ => Err(UsageError(format!(
                "Missing required options: {}",
                missing.join(", ")
            ))),
        }
    }

    /// A `--name`: an exact long name or a unique prefix of one.
    fn long_option(&self, name: &str, token: &str) -> Result<&OptSpec, UsageError> {
        if let Some(o) = self.all_options().find(|o| o.long == name) {
            return Ok(o);
        }
        let matches: Vec<&OptSpec> = self
            .all_options()
            .filter(|o| !name.is_empty() && o.long.starts_with(name))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(UsageError(format!("Unrecognized option: {token}"))),
            many => Err(UsageError(format!(
                "Ambiguous option: '--{name}'  (could be: {})",
                many.iter()
                    .map(|o| format!("'{}'", o.long))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// A single-dash token, resolved as `DefaultParser` does: `-t`, `-topic` (a long name or
    /// prefix), `-tValue`, `-t=Value`, or a burst of flags `-ml`. Bursts record their flags
    /// directly and return `None`.
    fn short_token(
        &self,
        rest: &str,
        token: &str,
        parsed: &mut Parsed,
    ) -> Result<Option<(&OptSpec, Option<String>)>, UsageError> {
        let (name, inline) = split_eq(rest);
        if let Some(o) = self.all_options().find(|o| o.short == Some(name)) {
            return Ok(Some((o, inline)));
        }
        if let Ok(o) = self.long_option(name, token) {
            return Ok(Some((o, inline)));
        }
        let first = name.chars().next().unwrap_or('-');
        let Some(o) = self.short_letter(first) else {
            return Err(UsageError(format!("Unrecognized option: {token}")));
        };
        let after = &rest[first.len_utf8()..];
        if o.takes_value {
            let value = after.strip_prefix('=').unwrap_or(after);
            return Ok(Some((o, Some(value.to_owned()))));
        }
        // A burst of flags: every letter must be a known option; a valued one ends the burst.
        for (at, c) in rest.char_indices() {
            let Some(o) = self.short_letter(c) else {
                return Err(UsageError(format!("Unrecognized option: -{c}")));
            };
            if o.takes_value {
                let value = &rest[at + c.len_utf8()..];
                if value.is_empty() {
                    return Ok(Some((o, None)));
                }
                parsed.values.push((o.long, Some(value.to_owned())));
                return Ok(None);
            }
            parsed.values.push((o.long, None));
        }
        Ok(None)
    }

    /// The option whose short name is the one letter `c`.
    fn short_letter(&self, c: char) -> Option<&OptSpec> {
        let mut buf = [0u8; 4];
        let letter: &str = c.encode_utf8(&mut buf);
        self.all_options().find(|o| o.short == Some(letter))
    }

    /// The usage text commons-cli's `HelpFormatter.printHelp(app, options, true)` prints.
    pub(crate) fn usage(&self) -> String {
        let mut opts: Vec<&OptSpec> = self.all_options().collect();
        opts.sort_by_key(|o| o.key().to_lowercase());
        let mut line = format!("usage: nsadmin {}", self.name);
        for o in &opts {
            let name = match o.short {
                Some(c) => format!("-{c}"),
                None => format!("--{}", o.long),
            };
            let arg = if o.takes_value { " <arg>" } else { "" };
            if o.required {
                let _ = write!(line, " {name}{arg}");
            } else {
                let _ = write!(line, " [{name}{arg}]");
            }
        }
        let mut out = wrap(&line, 110, 7);
        let lefts: Vec<String> = opts
            .iter()
            .map(|o| {
                let arg = if o.takes_value { " <arg>" } else { "" };
                match o.short {
                    Some(c) => format!(" -{c},--{}{arg}", o.long),
                    None => format!("    --{}{arg}", o.long),
                }
            })
            .collect();
        let width = lefts.iter().map(String::len).max().unwrap_or(0);
        for (left, o) in lefts.iter().zip(&opts) {
            let room = 110usize.saturating_sub(width + 3).max(20);
            let desc = wrap_words(o.desc, room, width + 3);
            let _ = writeln!(out, "{left:<width$}   {desc}");
        }
        out
    }
}

/// The list printed by `nsadmin` without arguments (mqadmin's `printHelp`).
pub(crate) fn command_list() -> String {
    let mut out = String::from("The most commonly used nsadmin commands are:\n");
    for c in COMMANDS {
        let _ = writeln!(out, "   {:<35} {}", c.name, c.desc);
    }
    out.push_str("\nSee 'nsadmin help <command>' for more information on a specific command.\n");
    out
}

fn split_eq(s: &str) -> (&str, Option<String>) {
    match s.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (s, None),
    }
}

/// Whether a token would be read as an option rather than a value (commons-cli treats `-`
/// followed by anything as an option, except a lone `-` and negative numbers).
fn looks_like_option(token: &str) -> bool {
    token.len() > 1 && token.starts_with('-') && token[1..].parse::<f64>().is_err()
}

/// An option's description as `HelpFormatter` lays it out: words wrapped to lines of at most
/// `room` characters, continuation lines indented by `indent` (the description column).
fn wrap_words(text: &str, room: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if line_len > 0 && line_len + 1 + word.len() > room {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line_len = 0;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += word.len();
    }
    out
}

/// Wraps `text` at spaces to `width` columns, indenting continuation lines by `indent`.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line = " ".repeat(indent);
        } else if !line.is_empty() && !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests;
