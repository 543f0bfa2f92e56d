//! The accounts file: YAML with the names of RocketMQ 4.x's `plain_acl.yml`, read into a
//! [`Policy`]. Every mistake is an error naming the file, the line and the column, so a bad
//! edit can be found — and, on reload, the previous accounts stay in force.
//!
//! ```yaml
//! signatureRequired: [admin]            # classes that need a signature: read, broker, admin
//! globalWhiteRemoteAddresses:           # read and broker requests from here pass unsigned
//!   - 10.0.1.*
//! accounts:
//!   - accessKey: rocketmq2              # more than 6 characters, as in Java
//!     secretKey: "12345678"             # more than 6 characters
//!     admin: true                       # may send every request
//!     whiteRemoteAddress: 192.168.1.*   # only from here (optional)
//!   - accessKey: broker-user
//!     secretKey: broker-secret
//!     broker: true                      # may register brokers (default false)
//!     read: true                        # may read routes and lists (default true)
//! ```
//!
//! `plain_acl.yml`'s per-topic and per-group keys (`defaultTopicPerm`, `defaultGroupPerm`,
//! `topicPerms`, `groupPerms`) and its `dataVersion` are accepted and ignored: a name server
//! has no topics or groups to guard. Any other unknown key is an error, so a misspelt one is
//! not silently ignored.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_saphyr::Spanned;

use super::policy::{Account, Permission, Policy};
use crate::addr::AddressPattern;

/// Why the accounts file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read the accounts file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid, at the given place.
    #[error("accounts file {path}, line {line}, column {column}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line (0 when unknown).
        line: u64,
        /// 1-based column (0 when unknown).
        column: u64,
        /// What is wrong.
        message: String,
    },
    /// The file has address rules while any peer may send a PROXY header: any client could
    /// claim an address the rules trust ([`super::trust`]).
    #[error(
        "accounts file {path}: its address rules ({rules}) cannot be trusted while \
         proxyProtocolAllowedAddresses=* lets any client claim any address in a PROXY header \
         (authMode is not off): set proxyProtocolAllowedAddresses to your proxies' addresses, \
         or empty to refuse PROXY headers"
    )]
    ProxyTrust {
        /// The file.
        path: String,
        /// The keys of the rules it has (`globalWhiteRemoteAddresses`, `whiteRemoteAddress`).
        rules: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileDoc {
    signature_required: Option<Spanned<Vec<Spanned<String>>>>,
    global_white_remote_addresses: Option<Vec<Spanned<String>>>,
    accounts: Option<Vec<AccountDoc>>,
    /// Written back by Java's admin updates; meaningless here.
    #[allow(dead_code)] // accepted so that a plain_acl.yml loads
    data_version: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AccountDoc {
    access_key: Spanned<String>,
    secret_key: Spanned<String>,
    admin: Option<bool>,
    broker: Option<bool>,
    read: Option<bool>,
    /// `Some(None)` when the key is there without a value (`whiteRemoteAddress:`).
    #[serde(default, deserialize_with = "present")]
    white_remote_address: Option<Option<Spanned<String>>>,
    // plain_acl.yml's broker-side permissions, accepted and ignored.
    #[allow(dead_code)]
    default_topic_perm: Option<IgnoredAny>,
    #[allow(dead_code)]
    default_group_perm: Option<IgnoredAny>,
    #[allow(dead_code)]
    topic_perms: Option<IgnoredAny>,
    #[allow(dead_code)]
    group_perms: Option<IgnoredAny>,
}

/// A key that is present, with or without a value (serde reads a bare `key:` as absent).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Reads and validates the accounts file at `path`.
pub(crate) fn load(path: &Path) -> Result<Policy, LoadError> {
    let shown = path.display().to_string();
    // A regular file of a few MiB at most: a FIFO or a huge file fails the load, not blocks it.
    let bytes = crate::durable::read::read_small(path).map_err(|source| LoadError::Read {
        path: shown.clone(),
        source,
    })?;
    parse(&bytes, &shown)
}

/// Parses accounts-file text; `path` names it in errors.
pub(crate) fn parse(bytes: &[u8], path: &str) -> Result<Policy, LoadError> {
    let invalid = |line, column, message: String| LoadError::Invalid {
        path: path.to_owned(),
        line,
        column,
        message,
    };
    let at =
        |loc: serde_saphyr::Location, message: String| invalid(loc.line(), loc.column(), message);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        invalid(line as u64, 0, "the file is not UTF-8 text".to_owned())
    })?;
    // An empty file (or one holding only comments) is no accounts and the default policy.
    let doc: Option<FileDoc> = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        invalid(line, column, first_line(&e.without_snippet().to_string()))
    })?;
    let doc = doc.unwrap_or(FileDoc {
        signature_required: None,
        global_white_remote_addresses: None,
        accounts: None,
        data_version: None,
    });

    let mut policy = Policy::default();
    match &doc.signature_required {
        None => policy.signature_required[Permission::Admin as usize] = true,
        Some(list) => {
            for name in &list.value {
                let class = Permission::ALL
                    .into_iter()
                    .find(|c| c.name() == name.value.trim())
                    .ok_or_else(|| {
                        at(
                            name.referenced,
                            format!(
                                "signatureRequired: unknown request class {:?} (expected read, broker or admin)",
                                name.value
                            ),
                        )
                    })?;
                policy.signature_required[class as usize] = true;
            }
        }
    }
    for entry in doc.global_white_remote_addresses.iter().flatten() {
        let pattern = AddressPattern::parse(&entry.value)
            .map_err(|e| at(entry.referenced, format!("globalWhiteRemoteAddresses: {e}")))?;
        policy.global_white_remote_addresses.push(pattern);
    }
    let mut accounts = HashMap::new();
    for doc in doc.accounts.into_iter().flatten() {
        let (key, account) = account(doc).map_err(|(loc, message)| at(loc, message))?;
        if accounts.contains_key(&key.value) {
            return Err(at(
                key.referenced,
                format!("accessKey {} is listed twice", key.value),
            ));
        }
        accounts.insert(key.value, account);
    }
    policy.accounts = accounts;
    Ok(policy)
}

type Located<T> = Result<T, (serde_saphyr::Location, String)>;

fn account(doc: AccountDoc) -> Located<(Spanned<String>, Account)> {
    let access_key = doc.access_key;
    let secret_key = doc.secret_key;
    // Java's rule (PlainPermissionManager): both longer than 6 characters.
    for (field, what) in [
        (&access_key, format!("accessKey {}", access_key.value)),
        (
            &secret_key,
            format!("the secretKey of {}", access_key.value),
        ),
    ] {
        if field.value.chars().count() <= 6 {
            return Err((
                field.referenced,
                format!("{what} must be longer than 6 characters"),
            ));
        }
    }
    // An empty value is an error, not "any address": a file cut short while being written
    // ends just there, and must not lift the account's address rule.
    let empty = || {
        format!(
            "whiteRemoteAddress of {} is empty: give an address pattern, or remove the line \
             to allow every address",
            access_key.value
        )
    };
    let white_remote_address = match doc.white_remote_address {
        None => None,
        Some(None) => return Err((access_key.referenced, empty())),
        Some(Some(w)) if w.value.trim().is_empty() => return Err((w.referenced, empty())),
        Some(Some(w)) => Some(
            AddressPattern::parse(&w.value)
                .map_err(|e| (w.referenced, format!("whiteRemoteAddress: {e}")))?,
        ),
    };
    let admin = doc.admin.unwrap_or(false);
    let mut may = [false; 3];
    may[Permission::Read as usize] = admin || doc.read.unwrap_or(true);
    may[Permission::Broker as usize] = admin || doc.broker.unwrap_or(false);
    may[Permission::Admin as usize] = admin;
    Ok((
        access_key,
        Account {
            secret_key: secret_key.value,
            may,
            white_remote_address,
        },
    ))
}

/// The parser's message without the position it appends (the error names it already).
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.rfind(" at line ") {
        Some(at) if line[at..].contains(", column ") => line[..at].to_owned(),
        _ => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn parse_ok(text: &str) -> Policy {
        parse(text.as_bytes(), "acl.yml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn parse_err(text: &str) -> String {
        parse(text.as_bytes(), "acl.yml").unwrap_err().to_string()
    }

    #[test]
    fn empty_file_means_admin_needs_a_signature_and_no_accounts() {
        for text in ["", "# only a comment\n", "accounts:\n"] {
            let p = parse_ok(text);
            assert_eq!(p.account_count(), 0);
            assert!(p.signature_required(Permission::Admin));
            assert!(!p.signature_required(Permission::Read));
            assert!(!p.signature_required(Permission::Broker));
        }
    }

    #[test]
    fn the_plain_acl_yml_of_the_4x_distribution_loads() {
        let p = parse_ok(
            "globalWhiteRemoteAddresses:\n  - 10.10.103.*\n  - 192.168.0.*\n\
             accounts:\n\
             \x20 - accessKey: RocketMQ\n    secretKey: 12345678\n    admin: false\n\
             \x20   defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n\
             \x20   topicPerms:\n      - topicA=DENY\n      - topicB=PUB|SUB\n\
             \x20   groupPerms:\n      - groupA=DENY\n\
             \x20 - accessKey: rocketmq2\n    secretKey: 12345678\n    whiteRemoteAddress: 192.168.1.*\n    admin: true\n\
             dataVersion:\n  - counter: 1\n    timestamp: 1700000000000\n",
        );
        assert_eq!(p.account_count(), 2);
        let admin = &p.accounts["rocketmq2"];
        // A YAML number is read as its text.
        assert_eq!(admin.secret_key, "12345678");
        assert!(Permission::ALL.iter().all(|&c| admin.may(c)));
        let user = &p.accounts["RocketMQ"];
        assert!(user.may(Permission::Read));
        assert!(!user.may(Permission::Broker) && !user.may(Permission::Admin));
        assert!(user.white_remote_address.is_none());
        let ip: IpAddr = "192.168.0.7".parse().unwrap();
        assert!(
            p.global_white_remote_addresses
                .iter()
                .any(|w| w.matches(ip))
        );
    }

    #[test]
    fn permissions_and_signature_classes() {
        let p = parse_ok(
            "signatureRequired: [read, broker, admin]\naccounts:\n\
             \x20 - {accessKey: brokers1, secretKey: secret12, broker: true, read: false}\n",
        );
        assert!(Permission::ALL.iter().all(|&c| p.signature_required(c)));
        let a = &p.accounts["brokers1"];
        assert_eq!(a.may, [false, true, false]);
        let p = parse_ok("signatureRequired: []\n");
        assert!(!Permission::ALL.iter().any(|&c| p.signature_required(c)));
    }

    #[test]
    fn errors_name_the_file_line_and_column() {
        let e = parse_err(
            "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admn: true\n",
        );
        assert!(e.starts_with("accounts file acl.yml, line 4"), "{e}");
        assert!(e.contains("admn"), "{e}");
        let e = parse_err("accounts:\n  - accessKey: short\n    secretKey: 12345678\n");
        assert!(
            e.starts_with("accounts file acl.yml, line 2, column 16"),
            "{e}"
        );
        assert!(e.contains("longer than 6"), "{e}");
        let e = parse_err("accounts:\n  - accessKey: rocketmq2\n    secretKey: 123\n");
        assert!(e.contains("line 3") && e.contains("rocketmq2"), "{e}");
        assert!(!e.contains("123\""), "the secret is not echoed: {e}");
        let e = parse_err("globalWhiteRemoteAddresses:\n  - 10.0.0.1\n  - 10.0.0.300\n");
        assert!(e.contains("line 3") && e.contains("10.0.0.300"), "{e}");
        let e = parse_err(
            "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    whiteRemoteAddress: 1.2.3\n",
        );
        assert!(
            e.contains("line 4") && e.contains("whiteRemoteAddress"),
            "{e}"
        );
        let e = parse_err("signatureRequired: [read, write]\n");
        assert!(e.contains("line 1") && e.contains("\"write\""), "{e}");
        let e = parse_err(
            "accounts:\n  - {accessKey: rocketmq2, secretKey: 12345678}\n  - {accessKey: rocketmq2, secretKey: 87654321}\n",
        );
        assert!(e.contains("line 3") && e.contains("twice"), "{e}");
        let e = parse_err("accounts:\n  - accessKey: rocketmq2\n    secretKey: [oops\n");
        assert!(e.contains("line 3") || e.contains("line 4"), "{e}");
        let e = parse_err("accounts:\n  - secretKey: 12345678\n");
        assert!(e.contains("accessKey"), "{e}");
        let e = parse(b"accounts:\n  - accessKey: \xff\n", "acl.yml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn the_shipped_example_loads() {
        let text = include_str!("../../conf/namesrv_acl.yml");
        let p = parse_ok(text);
        assert_eq!(p.account_count(), 3);
        assert!(p.signature_required(Permission::Admin));
        assert!(!p.signature_required(Permission::Read));
        assert!(p.global_white_remote_addresses.is_empty());
        assert!(p.accounts["rocketmq-broker"].may(Permission::Broker));
        assert!(p.accounts["rocketmq2"].white_remote_address.is_some());
    }

    #[test]
    fn an_empty_white_remote_address_is_an_error() {
        for value in ["", " ''", " \"  \""] {
            let e = parse_err(&format!(
                "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n    whiteRemoteAddress:{value}\n"
            ));
            assert!(
                e.contains("whiteRemoteAddress of rocketmq2 is empty"),
                "{value:?}: {e}"
            );
        }
        // Cut short just after the key, as a half-written file is.
        let e = parse_err(
            "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n    whiteRemoteAddress: ",
        );
        assert!(e.contains("is empty"), "{e}");
        // Without the line, every address may use the account.
        let p = parse_ok("accounts:\n  - {accessKey: rocketmq2, secretKey: '12345678'}\n");
        assert!(p.accounts["rocketmq2"].white_remote_address.is_none());
    }

    #[test]
    fn debug_output_hides_secrets() {
        let p = parse_ok("accounts:\n  - {accessKey: rocketmq2, secretKey: s3cr3t-value}\n");
        let shown = format!("{p:?}");
        assert!(!shown.contains("s3cr3t-value"), "{shown}");
    }
}
