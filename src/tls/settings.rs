//! The `tls.*` keys (Java's `TlsSystemConfig` and `TlsHelper`): their Java names, defaults and parse rules, and where
//! their values come from.
//!
//! Sources, later ones winning (Java has only the last two, in this order):
//!
//! 1. the defaults (permissive mode, test mode on, `/etc/rocketmq/tls.properties`);
//! 2. `tls.*` lines of our own config file (`-c`), for people who start the binary directly;
//! 3. Java system properties (`-Dtls.server.mode=enforcing`), which `bin/mqnamesrv` takes from
//!    `JAVA_OPT` / `JAVA_OPT_EXT` as Java's `runserver.sh` does;
//! 4. the file named by `tls.config.file`, for every key but `tls.server.mode`, `tls.enable`
//!    and `tls.config.file` (Java reads those three from system properties only). A file that
//!    does not exist is skipped, as in Java.
//!
//! Values parse as Java parses them: `tls.server.mode` matches exactly (anything else is
//! `permissive`), `tls.server.need.client.auth` ignores case (anything else is `none`),
//! booleans are true only for `true` in any case. A value Java would silently turn into its
//! default is logged as a warning here.

use std::path::{Path, PathBuf};

/// Where `tls.config.file` points by default.
pub(crate) const DEFAULT_CONFIG_FILE: &str = "/etc/rocketmq/tls.properties";

/// The server's TLS mode (`tls.server.mode`), decided per connection on its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMode {
    /// TLS clients are closed; plaintext is served.
    Disabled,
    /// TLS and plaintext are both served (Java's default).
    Permissive,
    /// Plaintext clients are closed; TLS is served.
    Enforcing,
}

impl ServerMode {
    /// The value's Java name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ServerMode::Disabled => "disabled",
            ServerMode::Permissive => "permissive",
            ServerMode::Enforcing => "enforcing",
        }
    }

    /// Java's `TlsMode.parse`: an exact, case-sensitive match, anything else permissive.
    fn parse_java(text: &str) -> (ServerMode, bool) {
        match text {
            "disabled" => (ServerMode::Disabled, true),
            "permissive" => (ServerMode::Permissive, true),
            "enforcing" => (ServerMode::Enforcing, true),
            _ => (ServerMode::Permissive, false),
        }
    }
}

/// Whether the server asks for a client certificate (`tls.server.need.client.auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate request.
    None,
    /// A certificate is requested; a client without one is served.
    Optional,
    /// A client without a certificate fails the handshake.
    Require,
}

impl ClientAuth {
    /// The value's Java name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Require => "require",
        }
    }

    fn parse_java(text: &str) -> (ClientAuth, bool) {
        match text.to_ascii_lowercase().as_str() {
            "none" => (ClientAuth::None, true),
            "optional" => (ClientAuth::Optional, true),
            "require" => (ClientAuth::Require, true),
            // Java: blank is none without a word; anything else too.
            t => (ClientAuth::None, t.trim().is_empty()),
        }
    }
}

/// Every effective `tls.*` value.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `tls.server.mode`.
    pub mode: ServerMode,
    /// `tls.enable`: clients (nsadmin) use TLS.
    pub enable: bool,
    /// `tls.config.file`.
    pub config_file: PathBuf,
    /// `tls.test.mode.enable`: a generated self-signed certificate; clients trust anything.
    pub test_mode: bool,
    /// `tls.server.need.client.auth`.
    pub need_client_auth: ClientAuth,
    /// `tls.server.keyPath`.
    pub server_key_path: Option<String>,
    /// `tls.server.keyPassword`.
    pub server_key_password: Option<String>,
    /// `tls.server.certPath`.
    pub server_cert_path: Option<String>,
    /// `tls.server.authClient`: verify client certificates against the trust bundle.
    pub server_auth_client: bool,
    /// `tls.server.trustCertPath`.
    pub server_trust_cert_path: Option<String>,
    /// `tls.client.keyPath`.
    pub client_key_path: Option<String>,
    /// `tls.client.keyPassword`.
    pub client_key_password: Option<String>,
    /// `tls.client.certPath`.
    pub client_cert_path: Option<String>,
    /// `tls.client.authServer`: verify the server's chain against the trust bundle.
    pub client_auth_server: bool,
    /// `tls.client.trustCertPath`.
    pub client_trust_cert_path: Option<String>,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            mode: ServerMode::Permissive,
            enable: false,
            config_file: PathBuf::from(DEFAULT_CONFIG_FILE),
            test_mode: true,
            need_client_auth: ClientAuth::None,
            server_key_path: None,
            server_key_password: None,
            server_cert_path: None,
            server_auth_client: false,
            server_trust_cert_path: None,
            client_key_path: None,
            client_key_password: None,
            client_cert_path: None,
            client_auth_server: false,
            client_trust_cert_path: None,
        }
    }
}

/// Keys the `tls.config.file` may not set (Java reads them from system properties only).
const SYSTEM_PROPERTY_ONLY: [&str; 3] = ["tls.server.mode", "tls.enable", "tls.config.file"];

/// Where a value came from, for warnings.
#[derive(Debug, Clone, Copy)]
enum Origin<'a> {
    Config,
    SystemProperty,
    File(&'a Path),
}

impl std::fmt::Display for Origin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Config => f.write_str("the config file"),
            Origin::SystemProperty => f.write_str("a system property"),
            Origin::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl TlsSettings {
    /// Resolves the settings from the `-c` file's `tls.*` lines and the system properties,
    /// then the `tls.config.file` they name (see the module docs for the order).
    #[cfg(test)]
    pub(crate) fn resolve(
        config_lines: &[(String, String)],
        system: &[(String, String)],
    ) -> TlsSettings {
        Self::reread(&Self::resolve_base(config_lines, system))
    }

    /// Re-reads `tls.config.file` on top of `base` (the settings before the file was read):
    /// what a certificate reload does, as Java re-reads the file for every new context.
    pub fn reread(base: &TlsSettings) -> TlsSettings {
        let mut s = base.clone();
        s.apply_config_file();
        s
    }

    /// The settings before `tls.config.file` was applied, for [`TlsSettings::reread`].
    pub fn resolve_base(
        config_lines: &[(String, String)],
        system: &[(String, String)],
    ) -> TlsSettings {
        let mut s = TlsSettings::default();
        s.apply_all(config_lines, Origin::Config);
        s.apply_all(system, Origin::SystemProperty);
        s
    }

    fn apply_config_file(&mut self) {
        let path = self.config_file.clone();
        let text = match crate::durable::read::read_small(&path) {
            Ok(bytes) => crate::config::properties::decode_file_bytes(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::debug!(file = %path.display(), "Tls config file doesn't exist, skip it");
                return;
            }
            // A directory, FIFO or oversized file: not read (it could block or fill memory).
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read the TLS config file; ignoring it");
                return;
            }
        };
        match crate::config::properties::parse(&text) {
            Ok(props) => {
                let allowed: Vec<(String, String)> = props
                    .into_iter()
                    .filter(|(k, _)| !SYSTEM_PROPERTY_ONLY.contains(&k.as_str()))
                    .collect();
                self.apply_all(&allowed, Origin::File(&path));
            }
            // Java swallows load errors and keeps what it read; our parser is all-or-nothing,
            // so say why the file was not used.
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot parse the TLS config file; ignoring it")
            }
        }
    }

    fn apply_all(&mut self, props: &[(String, String)], origin: Origin<'_>) {
        for (key, value) in props {
            self.apply(key, value, origin);
        }
    }

    /// Sets one key from text, as Java parses it. Unknown `tls.*` keys are ignored.
    fn apply(&mut self, key: &str, value: &str, origin: Origin<'_>) {
        let path = || Some(value.to_owned()).filter(|v| !v.is_empty());
        let boolean = |name: &str| {
            let b = value.eq_ignore_ascii_case("true");
            if !b && !value.eq_ignore_ascii_case("false") {
                tracing::warn!(key = name, value, from = %origin, "not true or false: read as false, as Java does");
            }
            b
        };
        match key {
            "tls.server.mode" => {
                let (mode, known) = ServerMode::parse_java(value);
                if !known {
                    tracing::warn!(key, value, from = %origin, "unknown TLS mode (Java's names are disabled, permissive and enforcing, lower case): running permissive, as Java does");
                }
                self.mode = mode;
            }
            "tls.enable" => self.enable = boolean(key),
            "tls.config.file" => self.config_file = PathBuf::from(value),
            "tls.test.mode.enable" => self.test_mode = boolean(key),
            "tls.server.need.client.auth" => {
                let (auth, known) = ClientAuth::parse_java(value);
                if !known {
                    tracing::warn!(key, value, from = %origin, "unknown client-auth value (none, optional or require): read as none, as Java does");
                }
                self.need_client_auth = auth;
            }
            "tls.server.keyPath" => self.server_key_path = path(),
            "tls.server.keyPassword" => self.server_key_password = path(),
            "tls.server.certPath" => self.server_cert_path = path(),
            "tls.server.authClient" => self.server_auth_client = boolean(key),
            "tls.server.trustCertPath" => self.server_trust_cert_path = path(),
            "tls.client.keyPath" => self.client_key_path = path(),
            "tls.client.keyPassword" => self.client_key_password = path(),
            "tls.client.certPath" => self.client_cert_path = path(),
            "tls.client.authServer" => self.client_auth_server = boolean(key),
            "tls.client.trustCertPath" => self.client_trust_cert_path = path(),
            _ => {}
        }
    }

    /// The files a server reload watches: the config file and the server's material.
    pub(crate) fn watched_files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.config_file.clone()];
        for p in [
            &self.server_cert_path,
            &self.server_key_path,
            &self.server_trust_cert_path,
        ]
        .into_iter()
        .flatten()
        {
            files.push(PathBuf::from(p));
        }
        files
    }

    /// `key=value` lines of every effective value, sorted, for `-p` and the start-up log. Key
    /// passwords are never shown: a comment line says whether one is set.
    pub fn render(&self) -> String {
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut lines = vec![
            ("tls.client.authServer", self.client_auth_server.to_string()),
            ("tls.client.certPath", opt(&self.client_cert_path)),
            ("tls.client.keyPath", opt(&self.client_key_path)),
            (
                "tls.client.trustCertPath",
                opt(&self.client_trust_cert_path),
            ),
            ("tls.config.file", self.config_file.display().to_string()),
            ("tls.enable", self.enable.to_string()),
            ("tls.server.authClient", self.server_auth_client.to_string()),
            ("tls.server.certPath", opt(&self.server_cert_path)),
            ("tls.server.keyPath", opt(&self.server_key_path)),
            ("tls.server.mode", self.mode.name().to_owned()),
            (
                "tls.server.need.client.auth",
                self.need_client_auth.name().to_owned(),
            ),
            (
                "tls.server.trustCertPath",
                opt(&self.server_trust_cert_path),
            ),
            ("tls.test.mode.enable", self.test_mode.to_string()),
        ];
        lines.sort();
        let mut out =
            crate::config::properties::render_raw(lines.iter().map(|(k, v)| (*k, v.as_str())));
        for (key, set) in [
            ("tls.client.keyPassword", self.client_key_password.is_some()),
            ("tls.server.keyPassword", self.server_key_password.is_some()),
        ] {
            if set {
                out.push_str(&format!("# {key} is set (not shown)\n"));
            }
        }
        out
    }
}

/// One system property as `-D` gives it (`key=value`; `key` alone is `key=""`, as in Java).
pub fn system_property(text: &str) -> (String, String) {
    match text.split_once('=') {
        Some((k, v)) => (k.to_owned(), v.to_owned()),
        None => (text.to_owned(), String::new()),
    }
}

/// The `-D` system properties among command-line words (`-Dkey=value`, as in `JAVA_OPT`);
/// other words are skipped.
pub(crate) fn system_properties<'a>(
    words: impl IntoIterator<Item = &'a str>,
) -> Vec<(String, String)> {
    words
        .into_iter()
        .filter_map(|w| w.strip_prefix("-D"))
        .filter(|w| !w.is_empty())
        .map(system_property)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_javas() {
        let s = TlsSettings::resolve(&[], &kv(&[("tls.config.file", "/nonexistent/x")]));
        assert_eq!(s.mode, ServerMode::Permissive);
        assert!(s.test_mode && !s.enable && !s.server_auth_client);
        assert_eq!(s.need_client_auth, ClientAuth::None);
        assert_eq!(
            TlsSettings::default().config_file,
            Path::new(DEFAULT_CONFIG_FILE)
        );
    }

    #[test]
    fn values_parse_as_java_parses_them() {
        let s = TlsSettings::resolve_base(
            &[],
            &kv(&[
                ("tls.server.mode", "Enforcing"),
                ("tls.server.need.client.auth", "REQUIRE"),
                ("tls.test.mode.enable", "TRUE "),
                ("tls.server.authClient", "True"),
            ]),
        );
        assert_eq!(s.mode, ServerMode::Permissive, "case-sensitive, as Java");
        assert_eq!(s.need_client_auth, ClientAuth::Require);
        assert!(!s.test_mode, "Boolean.parseBoolean does not trim");
        assert!(s.server_auth_client);
        let s = TlsSettings::resolve_base(&[], &kv(&[("tls.server.need.client.auth", "maybe")]));
        assert_eq!(s.need_client_auth, ClientAuth::None);
    }

    #[test]
    fn precedence_config_then_system_then_file() {
        let (_dir, file) = crate::durable::temp_file(
            "tls.properties",
            "tls.test.mode.enable=false\ntls.server.certPath=/file/cert.pem\n\
             tls.server.mode=disabled\ntls.config.file=/elsewhere\n",
        );
        let config = kv(&[
            ("tls.server.mode", "disabled"),
            ("tls.server.certPath", "/config/cert.pem"),
            ("tls.server.keyPath", "/config/key.pem"),
            ("tls.config.file", file.to_str().unwrap()),
        ]);
        let system = kv(&[("tls.server.mode", "enforcing")]);
        let s = TlsSettings::resolve(&config, &system);
        assert_eq!(
            s.mode,
            ServerMode::Enforcing,
            "system property over config; never from the file"
        );
        assert_eq!(s.server_cert_path.as_deref(), Some("/file/cert.pem"));
        assert_eq!(s.server_key_path.as_deref(), Some("/config/key.pem"));
        assert_eq!(
            s.config_file, file,
            "tls.config.file is not read from the file"
        );
        assert!(!s.test_mode);
        let base = TlsSettings::resolve_base(&config, &system);
        assert_eq!(TlsSettings::reread(&base), s);
    }

    #[test]
    fn render_never_shows_a_password() {
        let s = TlsSettings::resolve_base(
            &kv(&[
                ("tls.server.keyPassword", "hunter2"),
                ("tls.server.keyPath", "/k.pem"),
            ]),
            &[],
        );
        let text = s.render();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("# tls.server.keyPassword is set (not shown)\n"));
        assert!(text.contains("tls.server.keyPath=/k.pem\n"));
        assert!(text.contains("tls.server.mode=permissive\n"));
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn system_properties_are_the_dash_d_words() {
        let words =
            "-server -Xms4g -Dtls.server.mode=enforcing -Drocketmq.x -Dtls.config.file=/a=b -D";
        assert_eq!(
            system_properties(words.split_whitespace()),
            kv(&[
                ("tls.server.mode", "enforcing"),
                ("rocketmq.x", ""),
                ("tls.config.file", "/a=b"),
            ])
        );
    }
}
