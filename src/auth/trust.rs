//! Address rules are only as good as the address they are matched against. Behind a PROXY
//! header that address is whatever the header says, so a server that takes PROXY headers from
//! anyone (`proxyProtocolAllowedAddresses=*`, the default, as Java) lets every client choose the
//! address its `globalWhiteRemoteAddresses` or `whiteRemoteAddress` rule is judged by.
//!
//! That combination is refused wherever accounts are loaded: at start (the server does not
//! start) and on every reload (the previous accounts stay in force). Without address rules, or
//! with PROXY headers limited to the proxies' own addresses, nothing changes.

use std::path::Path;

use super::LoadError;
use super::policy::Policy;
use crate::config::Settings;

/// Whether the settings take PROXY headers from every address.
pub(super) fn proxy_from_anyone(settings: &Settings) -> bool {
    // A list that did not parse (validation refuses it) takes headers from nobody.
    settings
        .proxy_protocol_allowed_addresses
        .value()
        .admits_everyone()
}

/// Refuses `policy` (loaded from `path`) when it has address rules that a PROXY header from
/// anyone could satisfy.
pub(super) fn check(
    proxy_from_anyone: bool,
    policy: &Policy,
    path: &Path,
) -> Result<(), LoadError> {
    let rules = policy.address_rules();
    if !proxy_from_anyone || rules.is_empty() {
        return Ok(());
    }
    Err(LoadError::ProxyTrust {
        path: path.display().to_string(),
        rules: rules.join(", "),
    })
}
