//! SIGHUP re-reads the config file: every changed key that can apply at once is applied as
//! UPDATE_NAMESRV_CONFIG would apply it, keys that need a restart or are black-listed are
//! named in the log, and a file that does not read or parse changes nothing (the log names
//! the file, the key and the value). See [`crate::config::reload`].

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::reload::ReloadPlan;
use crate::state::Namesrv;

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Re-reads the config file and applies what can apply now. Returns the plan it followed, or
/// `None` when nothing changed because the file could not be used (logged).
async fn reload(state: &Namesrv) -> Option<ReloadPlan> {
    let current = state.config().clone();
    let fresh = match tokio::task::spawn_blocking(move || current.reread()).await {
        Ok(Ok(fresh)) => fresh,
        Ok(Err(e)) => {
            tracing::warn!("config reload failed, nothing changed: {}", chain(&e));
            return None;
        }
        Err(e) => {
            tracing::error!(error = %e, "config reload failed, nothing changed");
            return None;
        }
    };
    let plan = state.config().reload_plan(&fresh);
    if !plan.apply.is_empty() {
        let applied = state.update_config(|c| c.update(&plan.apply).map(drop), |_| Ok(()));
        match applied {
            Ok(()) => tracing::info!(keys = ?plan.apply, "config reloaded: applied"),
            Err(e) => {
                tracing::warn!(keys = ?plan.apply, "config reload refused, nothing changed: {}", chain(&e));
                return None;
            }
        }
    }
    if !plan.restart.is_empty() {
        tracing::warn!(keys = ?plan.restart, "config reload: changed keys that take effect only at a restart were not applied");
    }
    if !plan.refused.is_empty() {
        tracing::warn!(keys = ?plan.refused, "config reload: changed keys on the update black list (configBlackList) were not applied");
    }
    if plan.is_empty() {
        tracing::info!("config reload: the file changes nothing");
    }
    Some(plan)
}

/// Reloads on every request of `reloads` (bursts coalesce into one) until `cancel` fires.
pub(super) async fn run(
    state: Namesrv,
    mut reloads: watch::Receiver<u64>,
    cancel: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            changed = reloads.changed() => {
                if changed.is_err() {
                    // The handle is gone: no reload can come any more.
                    cancel.cancelled().await;
                    return;
                }
            }
        }
        reload(&state).await;
    }
}
