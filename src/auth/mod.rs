//! Authentication and authorization: the one check every request passes before its handler
//! (RocketMQ's ACL scheme: `AclClientRPCHook` signs, `PlainAccessValidator` checks). The Java
//! name server checks nothing; with `authMode=off` (the default) neither do we, at the cost
//! of one branch.
//!
//! With `audit` or `enforce`, [`Gate::admit`] is handed the request's `Access` (its class —
//! read, broker, admin — and audit fields, from its request table row), and for the classes
//! the accounts file requires a signature for, verifies the `AccessKey`/`Signature` ext fields
//! that RocketMQ's `AclClientRPCHook` adds ([`crate::protocol::signature`]) against the
//! account's secret key, its address allow-list and its permissions (`policy`). `enforce` refuses what fails (the dispatcher answers
//! `NO_PERMISSION`); `audit` lets it through and logs what would have been refused. Admin
//! requests of the codes the server serves that are let through get an audit line
//! (`audit`), within a budget of lines per window.
//!
//! The accounts (`accounts`) are swapped as a whole when the file changes or a reload is
//! requested (`watch`); a file that does not load leaves the previous accounts in force, and
//! so, on a file change, does one that would loosen the policy (`loosening`): that takes a
//! reload request (SIGHUP) or a restart.
//! Handlers never see any of this: `dispatch` calls the gate once, before the handler.

pub(crate) mod access;
pub(crate) mod accounts;
pub(crate) mod audit;
mod loosening;
pub(crate) mod policy;
pub(crate) mod stats;
mod trust;
pub(crate) mod watch;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

pub(crate) use access::Access;
pub(crate) use accounts::LoadError;
pub(crate) use audit::{Audit, Ticket};
pub(crate) use policy::{Admission, Refusal};
pub use policy::{Permission, Reason};
pub(crate) use stats::AuthStats;

use crate::config::{AuthMode, Settings};
use crate::file_watch::{Fingerprint, Trigger, fingerprint};
use crate::log_limit::LogLimit;
use crate::protocol::RemotingCommand;
use audit::{AUDIT_PER_WINDOW, AuditEntry, RefusalLog};
use policy::Policy;
use stats::Counters;

/// The request gate: a cheap handle, off unless `authMode` says otherwise.
#[derive(Clone, Default)]
pub struct Gate(Option<Arc<Shared>>);

struct Shared {
    mode: AuthMode,
    path: PathBuf,
    /// Read on every checked request, replaced whole on reload: an `ArcSwap` so that readers
    /// never wait for a reload and take no lock.
    policy: ArcSwap<Policy>,
    counters: Counters,
    /// A short lock, taken only to log a refusal.
    refusal_log: Mutex<RefusalLog>,
    /// A short lock, taken only for an admin request's audit line.
    audit_budget: Mutex<LogLimit>,
    /// The file's fingerprint at the last load attempt (the watcher reloads when it changes).
    seen: Mutex<Option<Fingerprint>>,
    /// Any peer may send a PROXY header: accounts with address rules are refused ([`trust`]).
    proxy_from_anyone: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Gate(off)"),
            Some(s) => f
                .debug_struct("Gate")
                .field("mode", &s.mode)
                .field("path", &s.path)
                .finish_non_exhaustive(),
        }
    }
}

impl Gate {
    /// A gate that lets everything through and costs nothing.
    pub fn off() -> Gate {
        Gate(None)
    }

    /// The gate `authMode`/`authConfigPath` ask for; with `off`, no file is read.
    pub fn load(settings: &Settings) -> Result<Gate, LoadError> {
        if settings.auth_mode == AuthMode::Off {
            return Ok(Gate::off());
        }
        let path = PathBuf::from(&settings.auth_config_path);
        let seen = fingerprint(&path);
        let policy = accounts::load(&path)?;
        let proxy_from_anyone = trust::proxy_from_anyone(settings);
        trust::check(proxy_from_anyone, &policy, &path)?;
        watch::warn_if_exposed(&path);
        if policy.account_count() == 0 {
            // Loaded as asked (a restart is the operator's decision), but rarely meant.
            tracing::warn!(file = %path.display(), "the accounts file has no accounts: no signed request can pass");
        }
        let required: Vec<&str> = Permission::ALL
            .into_iter()
            .filter(|&c| policy.signature_required(c))
            .map(Permission::name)
            .collect();
        tracing::info!(
            mode = settings.auth_mode.name(),
            file = %path.display(),
            accounts = policy.account_count(),
            signature_required = ?required,
            "authentication on"
        );
        Ok(Gate(Some(Arc::new(Shared {
            mode: settings.auth_mode,
            path,
            policy: ArcSwap::from_pointee(policy),
            counters: Counters::default(),
            refusal_log: Mutex::new(RefusalLog::default()),
            audit_budget: Mutex::new(LogLimit::lines(AUDIT_PER_WINDOW, audit::WINDOW)),
            seen: Mutex::new(seen),
            proxy_from_anyone,
        }))))
    }

    /// The mode (`off` for a gate that is off).
    pub(crate) fn mode(&self) -> AuthMode {
        self.0.as_ref().map_or(AuthMode::Off, |s| s.mode)
    }

    /// Checks `req` from `peer`, whose code's facts are `access`. `Ok` with a ticket to
    /// record once the response is known, or (in enforce mode) the refusal the dispatcher
    /// turns into `NO_PERMISSION`. Refusals and would-be refusals are counted and logged here.
    #[inline]
    pub fn admit(
        &self,
        req: &RemotingCommand,
        peer: SocketAddr,
        access: &Access,
    ) -> Result<Ticket, Refusal> {
        match &self.0 {
            None => Ok(Ticket::NONE),
            Some(shared) => shared.admit(req, peer, access),
        }
    }

    /// Re-reads the accounts file now, as SIGHUP does; `false` (and the previous accounts
    /// kept) if it does not load. Errors are logged with the file and line.
    #[cfg(test)]
    pub(crate) fn reload(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.reload(Trigger::Request))
    }

    /// The counters, or `None` when the gate is off.
    pub fn stats(&self) -> Option<AuthStats> {
        self.0
            .as_ref()
            .map(|s| s.counters.snapshot(s.mode, s.policy.load().account_count()))
    }

    /// [`policy::Policy::check_credentials`] on the current accounts, for HTTP Basic
    /// credentials (`None`: none, or none readable) from `peer`; refusals are counted.
    /// Everything passes when the gate is off.
    pub(crate) fn check_basic(
        &self,
        credentials: Option<(&str, &str)>,
        class: Permission,
        peer: IpAddr,
    ) -> Result<(), Reason> {
        let Some(shared) = &self.0 else {
            return Ok(());
        };
        let verdict = match credentials {
            None => Err(Reason::MissingAccessKey),
            Some((ak, sk)) => shared.policy.load().check_credentials(ak, sk, class, peer),
        };
        if let Err(reason) = verdict {
            shared.counters.http_refused(reason);
        }
        verdict
    }
}

impl Shared {
    fn admit(
        &self,
        req: &RemotingCommand,
        peer: SocketAddr,
        access: &Access,
    ) -> Result<Ticket, Refusal> {
        let policy = self.policy.load();
        let refusal = match policy::decide(&policy, req, peer.ip(), access.permission) {
            Ok(admission) => {
                let who = match admission {
                    Admission::Open => "(unsigned)",
                    Admission::ByAddress => {
                        self.counters.accepted_by_address();
                        "(by address)"
                    }
                    Admission::Signed { access_key } => {
                        self.counters.accepted_signed();
                        access_key
                    }
                };
                return Ok(self.ticket(access, || (who.to_owned(), None)));
            }
            Err(refusal) => refusal,
        };
        let enforced = self.mode == AuthMode::Enforce;
        if enforced {
            self.counters.refused(refusal.reason, req.is_oneway());
        } else {
            self.counters.would_refuse(refusal.reason);
        }
        self.refusal_log
            .lock()
            .log(&refusal, req.is_oneway(), enforced);
        if enforced {
            return Err(refusal);
        }
        Ok(self.ticket(access, || {
            let who = refusal.access_key.clone().unwrap_or_default();
            (who, Some(refusal.to_string()))
        }))
    }

    /// The audit ticket of a request let through: an entry (who, and what enforce would have
    /// answered) for audited admin codes while the audit budget lasts, else none.
    fn ticket(&self, access: &Access, entry: impl FnOnce() -> (String, Option<String>)) -> Ticket {
        let Some(audit) = access.audit else {
            return Ticket::NONE;
        };
        let Some(left_out) = self.audit_budget.lock().ready() else {
            return Ticket::NONE;
        };
        let (who, would_refuse) = entry();
        Ticket(Some(Box::new(AuditEntry {
            audit,
            who,
            would_refuse,
            left_out,
        })))
    }

    /// Loads the file and swaps the accounts in; on failure, or on a file change that would
    /// loosen the policy, logs and keeps the old ones. Reads the file: call it off the
    /// runtime's workers.
    fn reload(&self, trigger: Trigger) -> bool {
        let why = watch::why(trigger);
        *self.seen.lock() = fingerprint(&self.path);
        let loaded = accounts::load(&self.path)
            .and_then(|p| trust::check(self.proxy_from_anyone, &p, &self.path).map(|()| p));
        if let Ok(policy) = &loaded {
            let loosened = loosening::between(&self.policy.load(), policy);
            if !loosened.is_empty() && trigger == Trigger::FileChange {
                tracing::warn!(
                    file = %self.path.display(),
                    changes = ?loosened,
                    "the accounts file changed in a way that loosens the policy: not applied, \
                     the previous accounts stay in force (send SIGHUP or restart to apply it)"
                );
                self.counters.reloaded(false);
                return false;
            }
            if !loosened.is_empty() {
                tracing::warn!(file = %self.path.display(), changes = ?loosened, "accounts reload loosens the policy ({why})");
            }
        }
        match loaded {
            Ok(policy) => {
                watch::warn_if_exposed(&self.path);
                tracing::info!(
                    file = %self.path.display(),
                    accounts = policy.account_count(),
                    "accounts reloaded ({why})"
                );
                self.policy.store(Arc::new(policy));
                self.counters.reloaded(true);
                true
            }
            Err(e) => {
                tracing::error!("{e}; keeping the previous accounts ({why})");
                self.counters.reloaded(false);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests;
