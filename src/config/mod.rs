//! Configuration: Java's `NamesrvConfig` and `NettyServerConfig` keys read from a Java
//! properties file, parsed into typed values and validated once at start-up, and updated at run
//! time by UPDATE_NAMESRV_CONFIG (Java's `NamesrvController#updateConfig` path), which re-parses
//! and re-validates the keys it changes.
//!
//! Precedence: defaults, then the file. Keys this server does not know are kept and listed
//! (GET_NAMESRV_CONFIG, `-p`), as Java keeps a config file's extra properties. A value that
//! does not parse is an error naming the file, the key and the value.

pub mod controller;
mod guard;
pub mod properties;
pub(crate) mod reload;
pub(crate) mod settings;
mod validate;
mod value;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use guard::STEERING_KEYS;
pub(crate) use settings::Group;
pub use settings::{Apply, AuthMode, Env, Settings};
pub(crate) use value::InvalidSetting;
pub use value::Seconds;

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid properties text.
    #[error("config file {path}")]
    Syntax {
        /// The file.
        path: String,
        /// The syntax error.
        source: properties::PropertiesError,
    },
    /// A key has a value that does not parse or is out of range.
    #[error("{origin}: {invalid}")]
    Value {
        /// The file, or "defaults".
        origin: String,
        /// The key, its value and what was expected.
        invalid: InvalidSetting,
    },
}

/// Why an UPDATE_NAMESRV_CONFIG was refused.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// A black-listed key was present.
    #[error("Can not update config in black list.")]
    BlackListed,
    /// A key only the config file may set (`startupOnlyConfigKeys`, or a steering key while
    /// `authMode` is not `enforce`).
    #[error("{key} is set at start-up only ({unless}): change it in the config file and restart")]
    StartupOnly {
        /// The key.
        key: String,
        /// What makes it so: `startupOnlyConfigKeys`, or the condition that would lift it.
        unless: &'static str,
    },
    /// A value that parses but would break the next start or not read back as written.
    #[error("{key}: {reason}")]
    Refused {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A value does not parse or is out of range; nothing was changed.
    #[error("{0}")]
    Value(InvalidSetting),
    /// The new configuration could not be written to `configStorePath`; nothing changed.
    #[error("cannot persist the name server config")]
    Persist(#[source] std::io::Error),
}

/// The name server's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Every known setting.
    pub settings: Settings,
    /// Properties from the file that are not settings, kept verbatim.
    pub extra: BTreeMap<String, String>,
    /// This server's own keys that were set explicitly, and are therefore listed.
    shown_extensions: BTreeSet<&'static str>,
    /// The file given with `-c`, if any.
    pub(crate) config_file: Option<PathBuf>,
    /// Keys UPDATE_NAMESRV_CONFIG refuses (fixed at start, as in Java).
    black_list: BTreeSet<String>,
    /// The environment the defaults came from, for a reload.
    env: Env,
    /// The file's `tls.*` lines (`is_tls_key`; `crate::tls::settings` reads them): kept for
    /// persisting, never listed by GET_NAMESRV_CONFIG (they may hold a key password).
    pub tls_lines: Vec<(String, String)>,
}

impl Config {
    /// Defaults only.
    pub fn defaults(env: &Env) -> Config {
        Self::from_properties(&[], "defaults", env).expect("defaults are valid")
    }

    /// Loads the configuration: the `-c` file if given (which then becomes
    /// `configStorePath`), otherwise the persisted `configStorePath` if it exists.
    pub fn load(config_file: Option<&Path>, env: &Env) -> Result<Config, ConfigError> {
        let defaults = Settings::defaults(env);
        let path = match config_file {
            Some(p) => p.to_path_buf(),
            None => {
                let persisted = PathBuf::from(&defaults.config_store_path);
                if !persisted.is_file() {
                    return Ok(Self::defaults(env));
                }
                persisted
            }
        };
        let shown = path.display().to_string();
        let props = read_properties(&path)?;
        let mut config = Self::from_properties(&props, &format!("config file {shown}"), env)?;
        if config_file.is_some() {
            config.settings.config_store_path = shown;
        }
        config.config_file = config_file.map(Path::to_path_buf);
        Ok(config)
    }

    /// Builds a configuration from parsed properties; `origin` names their source in errors.
    pub fn from_properties(
        props: &[(String, String)],
        origin: &str,
        env: &Env,
    ) -> Result<Config, ConfigError> {
        let mut settings = Settings::defaults(env);
        let mut extra = BTreeMap::new();
        let mut shown_extensions = BTreeSet::new();
        let mut tls_lines = Vec::new();
        for (key, value) in props {
            if is_tls_key(key) {
                tls_lines.push((key.clone(), value.clone()));
                continue;
            }
            let invalid = |invalid| ConfigError::Value {
                origin: origin.to_owned(),
                invalid,
            };
            let known = settings.set(key, value).map_err(invalid)?;
            match Settings::key_info(key) {
                Some(info) if known && info.group == Group::Extension => {
                    shown_extensions.insert(info.name);
                }
                Some(_) => {}
                None => {
                    extra.insert(key.clone(), value.clone());
                }
            }
        }
        // Warm restart: the snapshot's default place follows kvConfigPath.
        if settings.route_snapshot_path.is_empty() {
            settings.route_snapshot_path = settings.route_snapshot_file().display().to_string();
        }
        settings.validate().map_err(|invalid| ConfigError::Value {
            origin: origin.to_owned(),
            invalid,
        })?;
        let mut black_list: BTreeSet<String> = [
            "configBlackList",
            "configStorePath",
            "kvConfigPath",
            "rocketmqHome",
            // Who is trusted and where the audit trail goes are not for a request to change.
            "authMode",
            "authConfigPath",
            "authAuditLog",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        black_list.extend(java_split(&settings.config_black_list, ';').map(str::to_owned));
        Ok(Config {
            settings,
            extra,
            shown_extensions,
            config_file: None,
            black_list,
            env: env.clone(),
            tls_lines,
        })
    }

    /// Java's "all configs": every NamesrvConfig and NettyServerConfig value (nulls
    /// omitted), the file's extra properties, and this server's keys that were set.
    pub fn all_properties(&self) -> BTreeMap<String, String> {
        let mut all = self.extra.clone();
        for info in Settings::KEYS {
            if info.group == Group::Extension && !self.shown_extensions.contains(info.name) {
                continue;
            }
            if let Some(v) = self.settings.get(info.name) {
                all.insert(info.name.to_owned(), v);
            }
        }
        all
    }

    /// The GET_NAMESRV_CONFIG body: `key=value\n` sorted by key, unescaped, as Java; `status`
    /// adds lines of live state (never stored) among them.
    pub(crate) fn render(&self, status: impl IntoIterator<Item = (String, String)>) -> String {
        let mut all = self.all_properties();
        all.extend(status);
        properties::render_raw(all.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Every effective key and value, this server's own keys included (for `-p`).
    pub fn render_effective(&self) -> String {
        let all = self.effective_properties();
        properties::render_raw(all.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The NettyServerConfig keys and values, sorted by key (a standalone controller's `-p`).
    pub fn render_netty(&self) -> String {
        let netty = Settings::KEYS.iter().filter(|i| i.group == Group::Netty);
        let all: BTreeMap<&str, String> = netty
            .map(|i| (i.name, self.settings.get(i.name).unwrap_or_default()))
            .collect();
        properties::render_raw(all.iter().map(|(k, v)| (*k, v.as_str())))
    }

    /// Every effective key and value, this server's own keys included, sorted by key.
    pub(crate) fn effective_properties(&self) -> BTreeMap<String, String> {
        let mut all = self.all_properties();
        for info in Settings::KEYS {
            all.entry(info.name.to_owned())
                .or_insert_with(|| self.settings.get(info.name).unwrap_or_default());
        }
        all
    }

    /// Applies UPDATE_NAMESRV_CONFIG properties sent by a client: [`Config::update`], after
    /// refusing the keys that decide where clients are sent or whether this server is ready
    /// unless `authMode=enforce` ([`STEERING_KEYS`]).
    pub(crate) fn update_from_request(
        &mut self,
        props: &[(String, String)],
    ) -> Result<Vec<String>, UpdateError> {
        self.apply(props, true)
    }

    /// Applies UPDATE_NAMESRV_CONFIG properties. All-or-nothing: a black-listed key or a bad
    /// value changes nothing. Returns the updated keys that only take effect on restart.
    pub fn update(&mut self, props: &[(String, String)]) -> Result<Vec<String>, UpdateError> {
        self.apply(props, false)
    }

    /// [`Config::update`], with the sender check of [`Config::update_from_request`] when
    /// `from_client`. The refusals come in one order whoever asks: a black-listed key, then
    /// a steering key, then start-up-only keys and control characters.
    fn apply(
        &mut self,
        props: &[(String, String)],
        from_client: bool,
    ) -> Result<Vec<String>, UpdateError> {
        if props.iter().any(|(k, _)| self.black_list.contains(k)) {
            return Err(UpdateError::BlackListed);
        }
        if from_client {
            guard::check_sender(self, props)?;
        }
        guard::check_request(self, props)?;
        let mut next = self.clone();
        let mut restart = Vec::new();
        for (key, value) in props {
            match Settings::key_info(key) {
                Some(info) => {
                    next.settings.set(key, value).map_err(UpdateError::Value)?;
                    if info.group == Group::Extension {
                        next.shown_extensions.insert(info.name);
                    }
                    if info.apply == Apply::Restart {
                        restart.push(key.clone());
                    }
                }
                // Java only updates extra properties it already has.
                None => {
                    if let Some(slot) = next.extra.get_mut(key) {
                        *slot = value.clone();
                    }
                }
            }
        }
        next.settings.validate().map_err(UpdateError::Value)?;
        *self = next;
        Ok(restart)
    }

    /// Refuses `next` (this configuration after an update) if the server could not bind the
    /// address and port it names at its next start. Binds sockets: call it off the runtime's
    /// workers.
    pub(crate) fn check_startable(&self, next: &Config) -> Result<(), UpdateError> {
        guard::check_bindable(self, next)
    }

    /// Writes all properties to `configStorePath`, durably (escaped so they read back
    /// exactly).
    pub(crate) fn persist(&self) -> std::io::Result<()> {
        let mut all = self.all_properties();
        all.extend(self.tls_lines.iter().cloned());
        let text = properties::render_escaped(all.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let path = Path::new(&self.settings.config_store_path);
        match self.config_file {
            // The `-c` file is written through a symbolic link, as Java rewrites it in place.
            Some(_) => crate::durable::replace_through_link(path, text.as_bytes()),
            None => crate::durable::replace(path, text.as_bytes()),
        }
    }
}

/// The properties of the config file `path`, in file order (the controller reads its keys
/// from the same file as the name server).
pub fn read_properties(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let shown = path.display().to_string();
    // A regular file of a few MiB at most: a FIFO or a huge file fails the load, not blocks it.
    let bytes = crate::durable::read::read_small(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let text = properties::decode_file_bytes(&bytes);
    properties::parse(&text).map_err(|source| ConfigError::Syntax {
        path: shown,
        source,
    })
}

/// Whether a config-file key is one of the `tls.*` keys, which Java reads from system
/// properties and `tls.config.file` (`TlsSystemConfig`) rather than from `NamesrvConfig`.
pub(crate) fn is_tls_key(key: &str) -> bool {
    key.starts_with("tls.")
}

/// Java's `String.split` on one character: trailing empty parts are dropped, except that an
/// empty string gives one empty part.
fn java_split(text: &str, sep: char) -> impl Iterator<Item = &str> {
    let mut parts: Vec<&str> = text.split(sep).collect();
    if !text.is_empty() {
        while parts.last() == Some(&"") {
            parts.pop();
        }
    }
    parts.into_iter()
}

#[cfg(test)]
mod tests;
