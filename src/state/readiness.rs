//! Readiness: whether clients should be sent to this server now. It is what `/readyz`
//! answers and `namesrv_ready` exports, so a Kubernetes rolling restart never routes clients
//! to a name server that would refuse their route lookups or knows no brokers yet. On a
//! controller node the side door adds one reason of its own ([`NotReady::NoControllerLeader`],
//! decided in `crate::http`, since the name server never reads the controller).

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::Namesrv;

/// Why the server is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// `needWaitForService` holds route lookups back for this much longer.
    WaitingForService(Duration),
    /// Shutdown has begun; connections are draining.
    ShuttingDown,
    /// Fewer live brokers than `httpReadyMinLiveBrokers`.
    TooFewBrokers {
        /// Live brokers now.
        live: usize,
        /// The configured minimum.
        wanted: usize,
    },
    /// The controller this process runs knows no leader of its group: its leader-only
    /// requests would all be refused (CONTROLLER_NOT_LEADER with nobody to redirect to).
    /// Decided beside the controller (`crate::http`), which the name server never reads.
    NoControllerLeader {
        /// The `controllerDLegerGroup`.
        group: String,
    },
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotReady::WaitingForService(left) => write!(
                f,
                "needWaitForService: route lookups refused for {} s more",
                left.as_secs_f64().ceil()
            ),
            NotReady::ShuttingDown => f.write_str("shutting down"),
            NotReady::TooFewBrokers { live, wanted } => {
                write!(f, "{live} live broker(s), httpReadyMinLiveBrokers={wanted}")
            }
            NotReady::NoControllerLeader { group } => {
                write!(f, "controller group {group}: no leader known to this node")
            }
        }
    }
}

impl Namesrv {
    /// Every reason the server is not ready at `now`; empty when it is ready.
    pub(crate) fn readiness(&self, now: Instant) -> Vec<NotReady> {
        let (wait, min_live) = {
            let config = self.config();
            let s = &config.settings;
            (
                s.service_wait(),
                s.http_ready_min_live_brokers.max(0) as usize,
            )
        };
        let mut reasons = Vec::new();
        if let Some(wait) = wait {
            let waited = now.saturating_duration_since(self.started());
            if waited < wait {
                reasons.push(NotReady::WaitingForService(wait - waited));
            }
        }
        if self.shutting_down() {
            reasons.push(NotReady::ShuttingDown);
        }
        if min_live > 0 {
            let live = self.routes().live_count();
            if live < min_live {
                reasons.push(NotReady::TooFewBrokers {
                    live,
                    wanted: min_live,
                });
            }
        }
        reasons
    }
}
