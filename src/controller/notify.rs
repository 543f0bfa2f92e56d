//! NOTIFY_BROKER_ROLE_CHANGED (1008): after an election the controller tells the set's live
//! replicas who the master is now, one-way, by dialling each replica's stored address as
//! Java's `ControllerManager#notifyBrokerRoleChanged` does. The leader queues a [`Notice`]
//! per replica and never waits for it; `send_notices` sends them concurrently, each
//! bounded by Java's 3 s send timeout, and a newer master epoch for an address supersedes a
//! notice still pending for it (as Java cancels the older future).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::code::request::NOTIFY_BROKER_ROLE_CHANGED;
use super::machine::decide::Elected;
use crate::protocol::body::controller::SyncStateSetBody;
use crate::remoting_client::{Client, ClientOptions, Request};

/// Java's send timeout of a notification (`invokeOneway(…, 3000)`).
const SEND_TIMEOUT: Duration = Duration::from_millis(3000);

/// One notification to one replica.
#[derive(Debug, Clone)]
pub struct Notice {
    /// The replica's stored address.
    pub addr: String,
    /// The new master epoch (newer supersedes older for the same address).
    pub master_epoch: i32,
    /// The request to send.
    request: Request,
}

impl Notice {
    /// The notice of `elected` for the replica at `addr`: header `masterAddress`,
    /// `masterEpoch`, `syncStateSetEpoch`, `masterBrokerId`; body the new sync-state set
    /// `{syncStateSet:[master], syncStateSetEpoch}`.
    pub fn new(elected: &Elected, addr: &str) -> Notice {
        let body = SyncStateSetBody {
            sync_state_set: [elected.new_master].into(),
            sync_state_set_epoch: elected.sync_state_set_epoch,
        };
        let request = Request::new(NOTIFY_BROKER_ROLE_CHANGED)
            .field("masterAddress", elected.master_address.clone())
            .field("masterEpoch", elected.master_epoch.to_string())
            .field(
                "syncStateSetEpoch",
                elected.sync_state_set_epoch.to_string(),
            )
            .field("masterBrokerId", elected.new_master.to_string())
            .body(body.to_json());
        Notice {
            addr: addr.to_owned(),
            master_epoch: elected.master_epoch,
            request,
        }
    }

    /// The request's ext fields.
    #[cfg(test)]
    pub fn fields(&self) -> &[(&'static str, String)] {
        &self.request.fields
    }

    /// The request's body.
    #[cfg(test)]
    pub fn body(&self) -> Option<&[u8]> {
        self.request.body.as_deref()
    }
}

/// Where the leader queues notices.
pub(crate) type NoticeSender = mpsc::UnboundedSender<Notice>;

/// Sends queued notices until cancelled (TLS on the dials with `tls`).
pub(crate) async fn send_notices(
    mut notices: mpsc::UnboundedReceiver<Notice>,
    tls: Option<Arc<rustls::ClientConfig>>,
    cancel: CancellationToken,
) {
    {
        let mut sending: JoinSet<(String, i32)> = JoinSet::new();
        let mut pending: HashMap<String, (i32, AbortHandle)> = HashMap::new();
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                Some(done) = sending.join_next(), if !sending.is_empty() => {
                    if let Ok((addr, epoch)) = done
                        && pending.get(&addr).is_some_and(|(e, _)| *e == epoch)
                    {
                        pending.remove(&addr);
                    }
                }
                notice = notices.recv() => {
                    let Some(notice) = notice else { break };
                    if let Some((epoch, older)) = pending.get(&notice.addr) {
                        if *epoch >= notice.master_epoch {
                            continue;
                        }
                        older.abort();
                    }
                    let (addr, epoch) = (notice.addr.clone(), notice.master_epoch);
                    let handle = sending.spawn(send(notice, tls.clone()));
                    pending.insert(addr, (epoch, handle));
                }
            }
        }
        sending.shutdown().await;
    }
}

/// Dials the replica and writes the notice; a failure is logged (the broker's own 5 s poll
/// of CONTROLLER_GET_REPLICA_INFO learns the new master anyway).
async fn send(notice: Notice, tls: Option<Arc<rustls::ClientConfig>>) -> (String, i32) {
    let opts = ClientOptions {
        timeout: SEND_TIMEOUT,
        connect_timeout: SEND_TIMEOUT,
        tls,
        ..ClientOptions::default()
    };
    let mut client = Client::new(opts);
    match client.oneway(&notice.addr, &notice.request).await {
        Ok(()) => {
            tracing::debug!(addr = %notice.addr, epoch = notice.master_epoch, "broker notified of its role")
        }
        Err(e) => tracing::info!(error = %e, "notifying a broker of its role failed"),
    }
    (notice.addr, notice.master_epoch)
}
