//! The decision: may this request be served? A pure function of the loaded [`Policy`], the
//! request and the peer's address — no I/O, no logging, no counters (the gate in `mod.rs` does
//! those).
//!
//! Every request code belongs to one [`Permission`], named in its request table row. A class
//! the policy does not require a signature for is served whatever the request carries, so
//! unsigned 4.9.x brokers and clients keep working and a stranger's signature cannot get an
//! open request refused. For a class that needs one, the checks run in this order:
//!
//! 1. read and broker requests from a `globalWhiteRemoteAddresses` address pass unsigned
//!    (admin requests never pass by address);
//! 2. `AccessKey` present and known, and no ext field sent twice (the decoder keeps the last
//!    value, another reader of the same bytes might keep the first: a signed request must mean
//!    one thing);
//! 3. `Signature` is the signature of the request as Java's `AclClientRPCHook` computes it
//!    (compared in constant time), also accepted when it only matches without the zone fields
//!    a 5.3.3 client adds after signing;
//! 4. the account's `whiteRemoteAddress`, if set, matches the peer;
//! 5. the account may send the class (`admin` may send everything).

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use crate::addr::AddressPattern;
use crate::protocol::RemotingCommand;
use crate::protocol::signature;

/// Ext fields a 5.3.3 client adds after signing when a zone is configured.
const ZONE_FIELDS: [&str; 2] = ["__ZONE_NAME", "__ZONE_MODE"];

/// Longest access key (in characters, before escaping) echoed in a remark or a log line.
const ECHO_LIMIT: usize = 64;

/// What a request does, for the policy: the permission an account needs to send it (the
/// classes of Java's plain ACL, `PlainAccessResource`, reduced to the name server's codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Route, cluster, topic-list and KV lookups.
    Read,
    /// Broker registration, unregistration, heartbeats and data-version queries.
    Broker,
    /// Everything that changes the name server's data or configuration, and reading that
    /// configuration (GET_NAMESRV_CONFIG shows paths). Codes the server does not serve count as
    /// admin, so a code added later is closed until classified.
    Admin,
}

impl Permission {
    /// Every class, in the order the file and the logs name them.
    pub(crate) const ALL: [Permission; 3] =
        [Permission::Read, Permission::Broker, Permission::Admin];

    /// The class's name in the accounts file (`read`, `broker`, `admin`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Broker => "broker",
            Permission::Admin => "admin",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One account of the accounts file. The secret key never leaves this module's decisions:
/// it is not printed by `Debug` and never part of a remark or log line.
#[derive(Clone)]
pub(crate) struct Account {
    pub(super) secret_key: String,
    /// May send each class, indexed by [`Permission`].
    pub(super) may: [bool; 3],
    pub(super) white_remote_address: Option<AddressPattern>,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("secret_key", &"<redacted>")
            .field("may", &self.may)
            .field("white_remote_address", &self.white_remote_address)
            .finish()
    }
}

impl Account {
    /// Whether the account may send requests of `class`.
    pub(crate) fn may(&self, class: Permission) -> bool {
        self.may[class.index()]
    }
}

/// A loaded accounts file: what needs a signature, trusted addresses and accounts by access
/// key. Replaced as a whole on reload.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// Whether each class needs a signature, indexed by [`Permission`].
    pub(super) signature_required: [bool; 3],
    pub(super) global_white_remote_addresses: Vec<AddressPattern>,
    pub(super) accounts: HashMap<String, Account>,
}

impl Policy {
    /// Whether requests of `class` need a signature.
    pub(crate) fn signature_required(&self, class: Permission) -> bool {
        self.signature_required[class.index()]
    }

    /// The keys of the address rules this policy has: `globalWhiteRemoteAddresses` (when it
    /// lists a pattern) and `whiteRemoteAddress` (when an account sets one).
    pub(crate) fn address_rules(&self) -> Vec<&'static str> {
        let mut rules = Vec::new();
        if !self.global_white_remote_addresses.is_empty() {
            rules.push("globalWhiteRemoteAddresses");
        }
        if self
            .accounts
            .values()
            .any(|a| a.white_remote_address.is_some())
        {
            rules.push("whiteRemoteAddress");
        }
        rules
    }

    /// Number of accounts.
    pub(crate) fn account_count(&self) -> usize {
        self.accounts.len()
    }

    /// Whether `access_key` with `secret_key` names an account allowed to send `class` from
    /// `peer`, for callers that take credentials directly rather than as a signature (the
    /// HTTP side door): the same checks as a signed request, in the same order.
    pub(crate) fn check_credentials(
        &self,
        access_key: &str,
        secret_key: &str,
        class: Permission,
        peer: IpAddr,
    ) -> Result<(), Reason> {
        let account = self
            .accounts
            .get(access_key)
            .ok_or(Reason::UnknownAccessKey)?;
        if !secret_matches(account, access_key, secret_key) {
            return Err(Reason::BadSignature);
        }
        account_admits(account, class, peer.to_canonical())
    }
}

/// The account's own rules, once its key is proven: its address rule, then its permission.
fn account_admits(account: &Account, class: Permission, peer: IpAddr) -> Result<(), Reason> {
    if let Some(white) = &account.white_remote_address
        && !white.matches(peer)
    {
        return Err(Reason::AddressNotAllowed);
    }
    match account.may(class) {
        true => Ok(()),
        false => Err(Reason::NoPermission),
    }
}

/// How a request was let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission<'p> {
    /// Its class needs no signature.
    Open,
    /// It came from a `globalWhiteRemoteAddresses` address.
    ByAddress,
    /// It carried a valid signature of this account.
    Signed {
        /// The signer.
        access_key: &'p str,
    },
}

/// Why a request was (or, in audit mode, would have been) refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// No `AccessKey` on a request whose class needs a signature.
    MissingAccessKey,
    /// The `AccessKey` names no account.
    UnknownAccessKey,
    /// The `Signature` is missing or does not match.
    BadSignature,
    /// The account's `whiteRemoteAddress` does not match the peer.
    AddressNotAllowed,
    /// The account may not send requests of this class.
    NoPermission,
    /// A signed request carried an ext field more than once.
    RepeatedField,
}

impl Reason {
    /// Every reason, for counters.
    pub const ALL: [Reason; 6] = [
        Reason::MissingAccessKey,
        Reason::UnknownAccessKey,
        Reason::BadSignature,
        Reason::AddressNotAllowed,
        Reason::NoPermission,
        Reason::RepeatedField,
    ];

    /// A stable snake_case label (logs, metrics).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Reason::MissingAccessKey => "missing_access_key",
            Reason::UnknownAccessKey => "unknown_access_key",
            Reason::BadSignature => "bad_signature",
            Reason::AddressNotAllowed => "address_not_allowed",
            Reason::NoPermission => "no_permission",
            Reason::RepeatedField => "repeated_field",
        }
    }

    /// Position in [`Reason::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A refusal: the reason and what the remark and the log line say about it. `Display` is the
/// remark sent to the client; it names the access key (never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub(crate) reason: Reason,
    /// The request code.
    pub(crate) code: i32,
    /// The request's class.
    pub(crate) class: Permission,
    /// The access key the request carried, cut to a printable length.
    pub(crate) access_key: Option<String>,
    /// The peer's address.
    pub(crate) peer: IpAddr,
    /// For [`Reason::BadSignature`]: whether the signature was absent rather than wrong.
    pub(crate) signature_missing: bool,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ak = self.access_key.as_deref().unwrap_or("");
        let (code, class) = (self.code, self.class.name());
        match self.reason {
            Reason::MissingAccessKey => write!(
                f,
                "request code {code} ({class}) needs a signature: no AccessKey in the request"
            ),
            Reason::UnknownAccessKey => write!(f, "unknown AccessKey {ak}"),
            Reason::BadSignature if self.signature_missing => {
                write!(f, "no Signature with AccessKey {ak}")
            }
            Reason::BadSignature => write!(f, "check signature failed for AccessKey {ak}"),
            Reason::AddressNotAllowed => {
                write!(
                    f,
                    "AccessKey {ak} is not allowed from address {}",
                    self.peer
                )
            }
            Reason::NoPermission => write!(
                f,
                "AccessKey {ak} has no permission for request code {code} ({class})"
            ),
            Reason::RepeatedField => write!(
                f,
                "request signed by AccessKey {ak} names an ext field more than once"
            ),
        }
    }
}

/// Decides whether `req` from `peer`, a request of `class`, may be served under `policy`.
pub(crate) fn decide<'p>(
    policy: &'p Policy,
    req: &RemotingCommand,
    peer: IpAddr,
    class: Permission,
) -> Result<Admission<'p>, Refusal> {
    if !policy.signature_required(class) {
        return Ok(Admission::Open);
    }
    let peer = peer.to_canonical();
    if class != Permission::Admin
        && policy
            .global_white_remote_addresses
            .iter()
            .any(|p| p.matches(peer))
    {
        return Ok(Admission::ByAddress);
    }
    let refuse = |reason, access_key: Option<&str>| Refusal {
        reason,
        code: req.code,
        class,
        access_key: access_key.map(echo),
        peer,
        signature_missing: false,
    };
    let Some(access_key) = req.ext(signature::ACCESS_KEY) else {
        return Err(refuse(Reason::MissingAccessKey, None));
    };
    let Some((key, account)) = policy.accounts.get_key_value(access_key) else {
        return Err(refuse(Reason::UnknownAccessKey, Some(access_key)));
    };
    if req
        .ext_fields
        .as_ref()
        .is_some_and(|f| f.had_repeated_keys())
    {
        return Err(refuse(Reason::RepeatedField, Some(access_key)));
    }
    let Some(given) = req.ext(signature::SIGNATURE) else {
        return Err(Refusal {
            signature_missing: true,
            ..refuse(Reason::BadSignature, Some(access_key))
        });
    };
    if !signature_matches(&account.secret_key, req, given) {
        return Err(refuse(Reason::BadSignature, Some(access_key)));
    }
    account_admits(account, class, peer).map_err(|reason| refuse(reason, Some(access_key)))?;
    Ok(Admission::Signed { access_key: key })
}

/// Equal MACs of the two secrets under one key: a constant-time comparison of secrets of any
/// length, reusing the signing code.
fn secret_matches(account: &Account, access_key: &str, secret_key: &str) -> bool {
    let probe = signature::sign(access_key, secret_key.as_bytes());
    signature::verify(access_key, account.secret_key.as_bytes(), &probe)
}

fn signature_matches(secret_key: &str, req: &RemotingCommand, given: &str) -> bool {
    let fields = || req.ext_fields.iter().flat_map(|f| f.iter());
    let body = req.body_bytes();
    if signature::verify(secret_key, &signature::content(fields(), body, &[]), given) {
        return true;
    }
    // A 5.3.3 client with a zone adds the zone fields after signing.
    fields().any(|(k, _)| ZONE_FIELDS.contains(&k))
        && signature::verify(
            secret_key,
            &signature::content(fields(), body, &ZONE_FIELDS),
            given,
        )
}

/// `text` cut to [`ECHO_LIMIT`] characters, for remarks and logs, with control characters
/// escaped (`\n`, `\u{1b}`): a client's value must not start a forged log line or move a
/// terminal's cursor.
pub(crate) fn echo(text: &str) -> String {
    echo_within(text, ECHO_LIMIT)
}

/// [`echo`] with another limit of characters.
pub(crate) fn echo_within(text: &str, limit: usize) -> String {
    let (shown, cut) = match text.char_indices().nth(limit) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    };
    let mut out = String::with_capacity(shown.len() + 3);
    for c in shown.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if cut {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
