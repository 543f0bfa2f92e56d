//! What a new version of the accounts file would open up. A change noticed on disk may be an
//! editor's write still under way, or a file someone else emptied: a version that lowers
//! `signatureRequired`, lets an existing account send a class it could not, lifts or changes
//! an account's `whiteRemoteAddress`, adds a `globalWhiteRemoteAddresses` pattern, or leaves
//! no accounts where there were some, is therefore not applied on a file change. The watcher
//! keeps the previous accounts and names these changes; SIGHUP or a restart applies them.
//! Changes that only tighten (a rotated secret, an added or removed account, a narrower
//! permission) apply as soon as the file settles.

use super::policy::{Permission, Policy};

/// The changes from `old` to `new` that loosen the policy, described for the log (access
/// keys and patterns, never a secret). Empty when `new` only tightens or changes nothing.
pub(super) fn between(old: &Policy, new: &Policy) -> Vec<String> {
    let mut found = Vec::new();
    if new.accounts.is_empty() && !old.accounts.is_empty() {
        found.push("the file has no accounts (emptied, or cut short)".to_owned());
    }
    for class in Permission::ALL {
        if old.signature_required(class) && !new.signature_required(class) {
            found.push(format!("signatureRequired drops {}", class.name()));
        }
    }
    for pattern in &new.global_white_remote_addresses {
        if !old.global_white_remote_addresses.contains(pattern) {
            found.push(format!(
                "globalWhiteRemoteAddresses adds {:?}",
                pattern.text()
            ));
        }
    }
    let mut keys: Vec<&String> = new.accounts.keys().collect();
    keys.sort();
    for key in keys {
        let (Some(before), after) = (old.accounts.get(key), &new.accounts[key]) else {
            continue;
        };
        for class in Permission::ALL {
            if after.may(class) && !before.may(class) {
                found.push(format!("account {key:?} gains {}", class.name()));
            }
        }
        if let Some(rule) = &before.white_remote_address
            && after.white_remote_address.as_ref() != Some(rule)
        {
            found.push(format!(
                "account {key:?} loses whiteRemoteAddress {:?}",
                rule.text()
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::accounts::parse;

    fn policy(text: &str) -> Policy {
        parse(text.as_bytes(), "acl.yml").unwrap()
    }

    const BASE: &str = "signatureRequired: [read, broker, admin]\n\
        globalWhiteRemoteAddresses: ['10.0.1.*']\n\
        accounts:\n\
        \x20 - {accessKey: rocketmq2, secretKey: '12345678', admin: true, whiteRemoteAddress: '192.168.1.*'}\n\
        \x20 - {accessKey: reader01, secretKey: '12345678', read: true}\n";

    #[test]
    fn tightening_changes_pass_and_loosening_ones_are_named() {
        let old = policy(BASE);
        assert!(between(&old, &old).is_empty());
        let tighter = "signatureRequired: [read, broker, admin]\naccounts:\n\
            \x20 - {accessKey: rocketmq2, secretKey: 'rotated-1', admin: true, whiteRemoteAddress: '192.168.1.*'}\n\
            \x20 - {accessKey: newuser1, secretKey: '12345678', read: true}\n";
        assert!(between(&old, &policy(tighter)).is_empty());
        let cases = [
            ("", "no accounts"),
            ("accounts:\n", "no accounts"),
            (
                "accounts:\n  - {accessKey: reader01, secretKey: '12345678'}\n",
                "signatureRequired drops read",
            ),
            (
                &BASE.replace("['10.0.1.*']", "['10.0.1.*', '*']"),
                "globalWhiteRemoteAddresses adds \"*\"",
            ),
            (
                &BASE.replace("read: true", "broker: true"),
                "account \"reader01\" gains broker",
            ),
            (
                &BASE.replace(", whiteRemoteAddress: '192.168.1.*'", ""),
                "account \"rocketmq2\" loses whiteRemoteAddress \"192.168.1.*\"",
            ),
            (
                &BASE.replace("'192.168.1.*'", "'*'"),
                "account \"rocketmq2\" loses whiteRemoteAddress",
            ),
        ];
        for (text, expected) in cases {
            let found = between(&old, &policy(text));
            assert!(
                found.iter().any(|f| f.contains(expected)),
                "{text:?}: {found:?}"
            );
        }
    }
}
