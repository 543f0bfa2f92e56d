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

/// One option of a sub-command.
#[derive(Debug, Clone, Copy)]
pub struct OptSpec {
    /// The one-letter name (`-n`), if any.
    pub short: Option<char>,
    /// The long name (`--namesrvAddr`).
    pub long: &'static str,
    /// Whether the option takes a value.
    pub takes_value: bool,
    /// Whether the option must be given.
    pub required: bool,
    /// The help text.
    pub desc: &'static str,
}

impl OptSpec {
    /// commons-cli's key: the short name, else the long one.
    fn key(&self) -> String {
        self.short
            .map_or_else(|| self.long.to_owned(), String::from)
    }
}

/// A flag or valued option with a short and a long name.
const fn opt(
    short: char,
    long: &'static str,
    takes_value: bool,
    required: bool,
    desc: &'static str,
) -> OptSpec {
    OptSpec {
        short: Some(short),
        long,
        takes_value,
        required,
        desc,
    }
}

/// An nsadmin-only option: long name only, so it can never clash with an mqadmin letter.
const fn long_only(long: &'static str, takes_value: bool, desc: &'static str) -> OptSpec {
    OptSpec {
        short: None,
        long,
        takes_value,
        required: false,
        desc,
    }
}

/// `-h`, `-n` and nsadmin's connection options: every command has them.
const COMMON: [OptSpec; 4] = [
    opt('h', "help", false, false, "Print help"),
    opt(
        'n',
        "namesrvAddr",
        true,
        false,
        "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'",
    ),
    long_only(
        "credentials",
        true,
        "tools.yml-style file with accessKey/secretKey to sign requests with",
    ),
    long_only(
        "timeout",
        true,
        "milliseconds to wait for each answer (default 5000)",
    ),
];

/// `--json`, offered by every read command.
const JSON: OptSpec = long_only(
    "json",
    false,
    "print one JSON document instead of the table",
);

/// Which sub-command a spec describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    #[allow(missing_docs)]
    ClusterList,
    #[allow(missing_docs)]
    TopicList,
    #[allow(missing_docs)]
    TopicRoute,
    #[allow(missing_docs)]
    TopicClusterList,
    #[allow(missing_docs)]
    GetNamesrvConfig,
    #[allow(missing_docs)]
    UpdateNamesrvConfig,
    #[allow(missing_docs)]
    UpdateKvConfig,
    #[allow(missing_docs)]
    DeleteKvConfig,
    #[allow(missing_docs)]
    UpdateOrderConf,
    #[allow(missing_docs)]
    WipeWritePerm,
    #[allow(missing_docs)]
    AddWritePerm,
    #[allow(missing_docs)]
    DeleteTopic,
    #[allow(missing_docs)]
    Diff,
}

/// A sub-command: its name, one-line description and options (besides the common ones).
#[derive(Debug)]
pub struct CommandSpec {
    /// The name as mqadmin spells it (matched ignoring case).
    pub name: &'static str,
    /// The description listed by `nsadmin` without arguments.
    pub desc: &'static str,
    /// The command's own options.
    pub options: &'static [OptSpec],
    /// Which command this is.
    pub kind: CommandKind,
}

/// Every sub-command, in the order mqadmin lists them (then nsadmin's own).
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "deleteTopic",
        desc: "Delete topic from NameServer (name servers only: brokers are not touched).",
        options: &[
            opt('t', "topic", true, true, "topic name"),
            opt(
                'c',
                "clusterName",
                true,
                true,
                "delete topic from which cluster",
            ),
        ],
        kind: CommandKind::DeleteTopic,
    },
    CommandSpec {
        name: "topicRoute",
        desc: "Examine topic route info.",
        options: &[
            opt('t', "topic", true, true, "topic name"),
            opt('l', "list", false, false, "Use list format to print data"),
            JSON,
        ],
        kind: CommandKind::TopicRoute,
    },
    CommandSpec {
        name: "topicClusterList",
        desc: "Get cluster info for topic.",
        options: &[opt('t', "topic", true, true, "topic name"), JSON],
        kind: CommandKind::TopicClusterList,
    },
    CommandSpec {
        name: "clusterList",
        desc: "List cluster infos.",
        options: &[
            opt('m', "moreStats", false, false, "Print more stats"),
            opt(
                'i',
                "interval",
                true,
                false,
                "specify intervals numbers, it is in seconds",
            ),
            opt('c', "clusterName", true, false, "which cluster"),
            JSON,
        ],
        kind: CommandKind::ClusterList,
    },
    CommandSpec {
        name: "topicList",
        desc: "Fetch all topic list from name server.",
        options: &[opt('c', "clusterModel", false, false, "clusterModel"), JSON],
        kind: CommandKind::TopicList,
    },
    CommandSpec {
        name: "updateKvConfig",
        desc: "Create or update KV config.",
        options: &[
            opt('s', "namespace", true, true, "set the namespace"),
            opt('k', "key", true, true, "set the key name"),
            opt('v', "value", true, true, "set the key value"),
        ],
        kind: CommandKind::UpdateKvConfig,
    },
    CommandSpec {
        name: "deleteKvConfig",
        desc: "Delete KV config.",
        options: &[
            opt('s', "namespace", true, true, "set the namespace"),
            opt('k', "key", true, true, "set the key name"),
        ],
        kind: CommandKind::DeleteKvConfig,
    },
    CommandSpec {
        name: "wipeWritePerm",
        desc: "Wipe write perm of broker in all name server you defined in the -n param.",
        options: &[opt('b', "brokerName", true, true, "broker name")],
        kind: CommandKind::WipeWritePerm,
    },
    CommandSpec {
        name: "addWritePerm",
        desc: "Add write perm of broker in all name server you defined in the -n param.",
        options: &[opt('b', "brokerName", true, true, "broker name")],
        kind: CommandKind::AddWritePerm,
    },
    CommandSpec {
        name: "updateOrderConf",
        desc: "Create or update or delete order conf.",
        options: &[
            opt('t', "topic", true, true, "topic name"),
            opt(
                'v',
                "orderConf",
                true,
                false,
                "set order conf [eg. brokerName1:num;brokerName2:num]",
            ),
            opt('m', "method", true, true, "option type [eg. put|get|delete"),
            long_only("json", false, "with -m get: print one JSON document"),
        ],
        kind: CommandKind::UpdateOrderConf,
    },
    CommandSpec {
        name: "getNamesrvConfig",
        desc: "Get configs of name server.",
        options: &[JSON],
        kind: CommandKind::GetNamesrvConfig,
    },
    CommandSpec {
        name: "updateNamesrvConfig",
        desc: "Update configs of name server.",
        options: &[
            opt('k', "key", true, true, "config key"),
            opt('v', "value", true, true, "config value"),
        ],
        kind: CommandKind::UpdateNamesrvConfig,
    },
    CommandSpec {
        name: "diff",
        desc: "Check that the name servers of -n agree (exit 0 agree, 1 differ, 2 unreachable).",
        options: &[
            opt(
                't',
                "topic",
                true,
                false,
                "compare only these topics (comma-separated)",
            ),
            opt(
                's',
                "namespace",
                true,
                false,
                "also compare these KV namespaces (comma-separated)",
            ),
            long_only(
                "dataVersion",
                false,
                "also compare brokers' data versions (counts as a broker heartbeat on 5.x)",
            ),
            long_only(
                "ignoreConfig",
                true,
                "config keys not to compare (comma-separated)",
            ),
            JSON,
        ],
        kind: CommandKind::Diff,
    },
];

/// Finds a command by name, ignoring case as mqadmin does.
pub fn find(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name.eq_ignore_ascii_case(name))
}

/// The parsed options of one invocation: `(long name, value)` in command-line order.
#[derive(Debug, Default)]
pub struct Parsed {
    values: Vec<(&'static str, Option<String>)>,
}

impl Parsed {
    /// Whether the option `long` was given.
    pub fn has(&self, long: &str) -> bool {
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
pub struct UsageError(pub String);

impl CommandSpec {
    /// The command's options followed by the common ones.
    pub fn all_options(&self) -> impl Iterator<Item = &OptSpec> {
        self.options.iter().chain(COMMON.iter())
    }

    /// Parses the arguments after the command name.
    pub fn parse(&self, args: &[String]) -> Result<Parsed, UsageError> {
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
            let missing: Vec<String> = self
                .all_options()
                .filter(|o| o.required && !parsed.has(o.long))
                .map(OptSpec::key)
                .collect();
            match missing.len() {
                0 => {}
                1 => {
                    return Err(UsageError(format!(
                        "Missing required option: {}",
                        missing[0]
                    )));
                }
                _ => {
                    return Err(UsageError(format!(
                        "Missing required options: {}",
                        missing.join(", ")
                    )));
                }
            }
        }
        Ok(parsed)
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
        let mut chars = name.chars();
        let first = chars.next().unwrap_or('-');
        if chars.as_str().is_empty()
            && let Some(o) = self.all_options().find(|o| o.short == Some(first))
        {
            return Ok(Some((o, inline)));
        }
        if let Ok(o) = self.long_option(name, token) {
            return Ok(Some((o, inline)));
        }
        let Some(o) = self.all_options().find(|o| o.short == Some(first)) else {
            return Err(UsageError(format!("Unrecognized option: {token}")));
        };
        let after = &rest[first.len_utf8()..];
        if o.takes_value {
            let value = after.strip_prefix('=').unwrap_or(after);
            return Ok(Some((o, Some(value.to_owned()))));
        }
        // A burst of flags: every letter must be a known option; a valued one ends the burst.
        for (at, c) in rest.char_indices() {
            let Some(o) = self.all_options().find(|o| o.short == Some(c)) else {
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

    /// The usage text commons-cli's `HelpFormatter.printHelp(app, options, true)` prints.
    pub fn usage(&self) -> String {
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
            let _ = writeln!(out, "{left:<width$}   {}", o.desc);
        }
        out
    }
}

/// The list printed by `nsadmin` without arguments (mqadmin's `printHelp`).
pub fn command_list() -> String {
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
