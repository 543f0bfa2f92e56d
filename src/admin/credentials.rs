//! Where the admin tool's signing credentials come from, as mqadmin finds them (its
//! `AclClientRPCHook` reads `conf/tools.yml`),
//! plus an explicit choice: `--credentials FILE`, else `$NSADMIN_CREDENTIALS`, else
//! `$ROCKETMQ_HOME/conf/tools.yml`.
//!
//! The files are mqadmin's `tools.yml`: a flat YAML mapping with `accessKey` and `secretKey`.
//! Only that flat form is read (plain, single- or double-quoted scalars, `#` comments): it is
//! all `tools.yml` ever holds, and it keeps a YAML library out of the tool.

use std::path::{Path, PathBuf};

pub(crate) use crate::remoting_client::Credentials;

/// Why credentials the operator asked for could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CredentialsError {
    /// The file could not be read.
    #[error("cannot read credentials file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file lacks a non-blank `accessKey` or `secretKey`.
    #[error("credentials file {0} has no non-blank accessKey and secretKey")]
    Incomplete(PathBuf),
}

/// The outcome of looking for credentials.
#[derive(Debug)]
pub(crate) enum Found {
    /// Sign with these.
    Sign(Credentials),
    /// Send unsigned (no file anywhere, as mqadmin without `tools.yml`).
    Unsigned,
    /// mqadmin's default file exists but cannot be used: unsigned, with this warning.
    UnsignedWithWarning(String),
}

/// Finds the credentials: an explicit file (`option`, else `env_file`) must be usable; the
/// default `$ROCKETMQ_HOME/conf/tools.yml` is optional, as for mqadmin.
pub(crate) fn find(
    option: Option<&Path>,
    env_file: Option<&Path>,
    rocketmq_home: Option<&Path>,
) -> Result<Found, CredentialsError> {
    if let Some(path) = option.or(env_file) {
        return read(path).map(Found::Sign);
    }
    let Some(home) = rocketmq_home else {
        return Ok(Found::Unsigned);
    };
    let path = home.join("conf").join("tools.yml");
    if !path.exists() {
        return Ok(Found::Unsigned);
    }
    match read(&path) {
        Ok(cred) => Ok(Found::Sign(cred)),
        Err(e) => Ok(Found::UnsignedWithWarning(format!(
            "{e}; sending unsigned requests"
        ))),
    }
}

/// Reads `accessKey` and `secretKey` from a `tools.yml`-style file.
pub(crate) fn read(path: &Path) -> Result<Credentials, CredentialsError> {
    let text = std::fs::read_to_string(path).map_err(|source| CredentialsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let (mut access_key, mut secret_key) = (None, None);
    for (key, value) in flat_yaml(&text) {
        match key {
            "accessKey" => access_key = Some(value),
            "secretKey" => secret_key = Some(value),
            _ => {}
        }
    }
    match (access_key, secret_key) {
        (Some(a), Some(s)) if !a.trim().is_empty() && !s.trim().is_empty() => Ok(Credentials {
            access_key: a,
            secret_key: s,
        }),
        _ => Err(CredentialsError::Incomplete(path.to_owned())),
    }
}

/// The top-level `key: value` pairs of a flat YAML mapping.
fn flat_yaml(text: &str) -> impl Iterator<Item = (&str, String)> {
    text.lines().filter_map(|line| {
        if line.starts_with([' ', '\t', '#', '-']) {
            return None;
        }
        let (key, rest) = line.split_once(':')?;
        Some((key.trim(), scalar(rest.trim())))
    })
}

/// A YAML scalar: quoted (`'it''s'`, `"a\"b"`) or plain with an optional ` #` comment.
fn scalar(text: &str) -> String {
    if let Some(inner) = text.strip_prefix('\'') {
        let end = inner.rfind('\'').unwrap_or(inner.len());
        return inner[..end].replace("''", "'");
    }
    if let Some(inner) = text.strip_prefix('"') {
        let end = inner.rfind('"').unwrap_or(inner.len());
        return inner[..end].replace("\\\"", "\"").replace("\\\\", "\\");
    }
    let plain = match text.find(" #") {
        Some(at) => &text[..at],
        None => text,
    };
    plain.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let (dir, path) = crate::durable::temp_file("tools.yml", text);
        (dir, path)
    }

    #[test]
    fn reads_the_stock_tools_yml_and_quoted_forms() {
        let (_d, p) = write("# comment\naccessKey: rocketmq2\nsecretKey: 12345678\n");
        let c = read(&p).unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.secret_key.as_str()),
            ("rocketmq2", "12345678")
        );
        let (_d, p) = write("accessKey: 'it''s'  \nsecretKey: \"s#1\" # note\n");
        let c = read(&p).unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.secret_key.as_str()),
            ("it's", "s#1")
        );
        assert!(
            !format!("{c:?}").contains("s#1"),
            "Debug never shows the secret"
        );
    }

    #[test]
    fn explicit_files_must_work_and_the_default_one_is_optional() {
        let (_d, blank) = write("accessKey: ak\nsecretKey:\n");
        assert!(matches!(read(&blank), Err(CredentialsError::Incomplete(_))));
        assert!(find(Some(&blank), None, None).is_err());
        assert!(find(None, Some(Path::new("/nonexistent/x.yml")), None).is_err());
        let home = tempfile::tempdir().unwrap();
        assert!(matches!(
            find(None, None, Some(home.path())).unwrap(),
            Found::Unsigned
        ));
        std::fs::create_dir(home.path().join("conf")).unwrap();
        std::fs::write(home.path().join("conf/tools.yml"), "accessKey: x\n").unwrap();
        assert!(matches!(
            find(None, None, Some(home.path())).unwrap(),
            Found::UnsignedWithWarning(_)
        ));
        std::fs::write(
            home.path().join("conf/tools.yml"),
            "accessKey: rocketmq2\nsecretKey: 12345678\n",
        )
        .unwrap();
        assert!(matches!(
            find(None, None, Some(home.path())).unwrap(),
            Found::Sign(_)
        ));
    }
}
