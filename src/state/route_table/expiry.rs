//! Removing brokers for silence (`RouteInfoManager#scanNotActiveBroker`, and the idle
//! connection event of `BrokerHousekeepingService`): the expiry scan and the idle
//! timeout, both under eviction protection ([`crate::state::protection`]).
//!
//! Silence is the only thing protection holds. When it is off, or does not trigger, these
//! remove exactly the brokers Java removes at the same moment: the scan every broker past its
//! timeout, the idle timeout the brokers registered on the idle connection. When it triggers,
//! the due brokers stay (their routes served, their connections left open) until a later
//! decision evicts them. Closed connections and UNREGISTER_BROKER ([`super::unregister`])
//! are never held.

use tokio::time::Instant;

use super::{BrokerAddr, ConnId, RouteTable};
use crate::state::protection::{Decision, Judged, Policy, ProtectionStatus, decide};

impl RouteTable {
    /// Java's expiry scan, without protection: unregisters every broker silent for longer
    /// than its timeout at `now`, and returns them with their connections.
    pub fn expire(&mut self, now: Instant) -> Vec<(BrokerAddr, ConnId)> {
        self.scan(now, &Policy::OFF)
    }

    /// The expiry scan: unregisters the due brokers `policy` does not hold at `now`. Returns
    /// the removed brokers with the connections they were registered on, which the caller
    /// closes, as Java does.
    pub fn scan(&mut self, now: Instant, policy: &Policy) -> Vec<(BrokerAddr, ConnId)> {
        let decision = self.decide(now, policy);
        self.holds.record_scan(now, policy, &decision);
        if decision.evict.is_empty() {
            return Vec::new();
        }
        let expired: Vec<(BrokerAddr, ConnId)> = decision
            .evict
            .into_iter()
            .map(|(key, _)| {
                let live = &self.live[&key];
                let (conn, timeout) = (live.conn, live.timeout);
                tracing::warn!(cluster = %key.cluster, addr = %key.addr, ?timeout, "broker expired");
                (key, conn)
            })
            .collect();
        let keys: Vec<BrokerAddr> = expired.iter().map(|(k, _)| k.clone()).collect();
        self.unregister_keys(&keys);
        expired
    }

    /// A connection idled out (the server closed it after no traffic for
    /// `serverChannelMaxIdleTimeSeconds`). Its brokers are unregistered at once, as Java
    /// does, unless `policy` holds them as part of a mass silence; then they stay, due for
    /// eviction, until a scan decides. Returns the brokers removed.
    pub(crate) fn connection_idled_out(
        &mut self,
        conn: ConnId,
        now: Instant,
        policy: &Policy,
    ) -> Vec<BrokerAddr> {
        let mut keys = Vec::new();
        for (key, live) in self.live.iter_mut().filter(|(_, l)| l.conn == conn) {
            live.idled_out = true;
            keys.push(key.clone());
        }
        if keys.is_empty() {
            return keys;
        }
        let mut decision = self.decide(now, policy);
        // Only this connection's brokers are decided here: other due brokers wait for the
        // scan, as they would in Java.
        decision.hold.retain(|(k, _)| keys.contains(k));
        self.holds.record_idle(now, policy, &decision);
        let removed: Vec<BrokerAddr> = keys
            .into_iter()
            .filter(|k| !decision.hold.iter().any(|(h, _)| h == k))
            .collect();
        if !removed.is_empty() {
            tracing::info!(brokers = ?removed, "broker connection idle: unregistering at once");
            self.unregister_keys(&removed);
        }
        removed
    }

    /// What eviction protection is doing.
    pub(crate) fn protection_status(&self) -> ProtectionStatus {
        self.holds
            .status(|key| self.live.get(key).map(|l| l.last_update))
    }

    pub(super) fn decide(&self, now: Instant, policy: &Policy) -> Decision<Judged> {
        // Decided over borrowed keys: only the few brokers named in the decision are cloned.
        let live = self
            .live
            .iter()
            .map(|(key, live)| ((key, live.last_update), live.heard()));
        decide(policy, now, live).map(|(key, last)| (key.clone(), last))
    }
}
