//! Counters of what the gate decided, kept as atomics on the gate and read as a plain
//! [`AuthStats`] snapshot (for logs, tests and a metrics exporter).

use std::sync::atomic::{AtomicU64, Ordering};

use super::policy::Reason;
use crate::config::AuthMode;

/// The gate's counters.
#[derive(Debug, Default)]
pub(super) struct Counters {
    refused: [AtomicU64; Reason::ALL.len()],
    refused_oneway: AtomicU64,
    would_refuse: [AtomicU64; Reason::ALL.len()],
    accepted_signed: AtomicU64,
    accepted_by_address: AtomicU64,
    http_refused: [AtomicU64; Reason::ALL.len()],
    reloads: AtomicU64,
    reload_failures: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    pub(super) fn refused(&self, reason: Reason, oneway: bool) {
        bump(&self.refused[reason.index()]);
        if oneway {
            bump(&self.refused_oneway);
        }
    }

    pub(super) fn would_refuse(&self, reason: Reason) {
        bump(&self.would_refuse[reason.index()]);
    }

    pub(super) fn accepted_signed(&self) {
        bump(&self.accepted_signed);
    }

    pub(super) fn accepted_by_address(&self) {
        bump(&self.accepted_by_address);
    }

    pub(super) fn http_refused(&self, reason: Reason) {
        bump(&self.http_refused[reason.index()]);
    }

    pub(super) fn reloaded(&self, ok: bool) {
        bump(if ok {
            &self.reloads
        } else {
            &self.reload_failures
        });
    }

    pub(super) fn snapshot(&self, mode: AuthMode, accounts: usize) -> AuthStats {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        AuthStats {
            mode,
            accounts,
            refused: self.refused.each_ref().map(read),
            refused_oneway: read(&self.refused_oneway),
            would_refuse: self.would_refuse.each_ref().map(read),
            accepted_signed: read(&self.accepted_signed),
            accepted_by_address: read(&self.accepted_by_address),
            http_refused: self.http_refused.each_ref().map(read),
            reloads: read(&self.reloads),
            reload_failures: read(&self.reload_failures),
        }
    }
}

/// A snapshot of the gate's counters since start. Requests whose class needs no signature are
/// not counted (they are not checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthStats {
    /// `audit` or `enforce`.
    pub(crate) mode: AuthMode,
    /// Accounts currently loaded.
    pub(crate) accounts: usize,
    /// Requests refused (enforce), by reason: index with [`Reason::index`].
    pub(crate) refused: [u64; Reason::ALL.len()],
    /// Of those, one-way requests (refused without an answer).
    pub refused_oneway: u64,
    /// Requests that would have been refused (audit), by reason.
    pub(crate) would_refuse: [u64; Reason::ALL.len()],
    /// Requests let through on a valid signature.
    pub accepted_signed: u64,
    /// Read and broker requests let through unsigned from a `globalWhiteRemoteAddresses`
    /// address.
    pub accepted_by_address: u64,
    /// HTTP requests for the operator routes refused (authMode=enforce), by reason: no or
    /// unreadable Basic credentials count as [`Reason::MissingAccessKey`], a wrong secret as
    /// [`Reason::BadSignature`].
    pub(crate) http_refused: [u64; Reason::ALL.len()],
    /// Successful reloads of the accounts file.
    pub reloads: u64,
    /// Reloads that failed (the previous accounts stayed in force).
    pub reload_failures: u64,
}

impl AuthStats {
    /// Requests refused for `reason`.
    pub fn refused_for(&self, reason: Reason) -> u64 {
        self.refused[reason.index()]
    }

    /// Requests that would have been refused for `reason` (audit mode).
    pub fn would_refuse_for(&self, reason: Reason) -> u64 {
        self.would_refuse[reason.index()]
    }

    /// HTTP requests for the operator routes refused for `reason`.
    pub(crate) fn http_refused_for(&self, reason: Reason) -> u64 {
        self.http_refused[reason.index()]
    }

    /// All refused requests.
    pub fn refused_total(&self) -> u64 {
        self.refused.iter().sum()
    }
}
