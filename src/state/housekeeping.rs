//! The broker-expiry scan: every `scanNotActiveBrokerInterval`, unregister brokers silent for
//! longer than their timeout and close their connections — unless eviction protection holds
//! them ([`super::protection`]).

use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::{ConnId, Namesrv};
use crate::metrics::Eviction;

/// Runs the scan until `cancel` fires; `close` is asked to close each expired broker's
/// connection, as Java closes its channel.
pub(crate) async fn run(
    state: Namesrv,
    interval: Duration,
    cancel: CancellationToken,
    close: impl Fn(ConnId),
) {
    // Java waits one period before the first scan (5 s on develop); so does this.
    let mut ticks = tokio::time::interval_at(Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticks.tick() => {
                // The actual time, not the tick's schedule: a late tick must not judge
                // brokers by an earlier clock. The policy is read each time, so updates to
                // the protection keys apply at the next scan.
                let policy = state.protection_policy();
                let expired = state.routes_mut().scan(Instant::now(), &policy);
                state.metrics().evicted(Eviction::Scan, expired.len());
                for (_, conn) in expired {
                    close(conn);
                }
            }
        }
    }
}
