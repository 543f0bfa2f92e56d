//! Who is a "client" for the HTTP side door's limits, and how many connections each holds.
//!
//! A client is an IPv4 address or an IPv6 /64 (one host usually owns a whole /64, so counting
//! single IPv6 addresses would bound nothing). [`Clients`] counts the connections each client
//! holds in the ordinary pool, so that one address cannot take every slot; the count drops
//! when the connection's [`Slot`] does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;

/// The unit the limits count by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ClientKey(u128);

impl ClientKey {
    /// The client `ip` belongs to (IPv4-mapped IPv6 addresses count as IPv4).
    pub(super) fn of(ip: IpAddr) -> ClientKey {
        match ip.to_canonical() {
            IpAddr::V4(v4) => ClientKey(u32::from(v4) as u128),
            IpAddr::V6(v6) => ClientKey((u128::from(v6) & !((1u128 << 64) - 1)) | 1 << 32),
        }
    }
}

/// Connections per client.
#[derive(Debug)]
pub(super) struct Clients {
    per_client: usize,
    /// A short lock, taken once when a connection opens and once when it closes.
    held: Mutex<HashMap<ClientKey, usize>>,
}

impl Clients {
    /// At most `per_client` connections per client.
    pub(super) fn new(per_client: usize) -> Arc<Clients> {
        Arc::new(Clients {
            per_client,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a connection of `ip`'s client, or `None` if it holds its share already.
    pub(super) fn take(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let key = ClientKey::of(ip);
        let mut held = self.held.lock();
        let count = held.entry(key).or_insert(0);
        if *count >= self.per_client {
            return None;
        }
        *count += 1;
        Some(Slot {
            clients: self.clone(),
            key,
        })
    }
}

/// One connection counted against its client until dropped.
#[derive(Debug)]
pub(super) struct Slot {
    clients: Arc<Clients>,
    key: ClientKey,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.clients.held.lock();
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_client_is_an_ipv4_address_or_an_ipv6_64() {
        assert_eq!(
            ClientKey::of(ip("10.0.0.1")),
            ClientKey::of(ip("::ffff:10.0.0.1"))
        );
        assert_ne!(ClientKey::of(ip("10.0.0.1")), ClientKey::of(ip("10.0.0.2")));
        assert_eq!(
            ClientKey::of(ip("2001:db8::1")),
            ClientKey::of(ip("2001:db8::ffff:2"))
        );
        assert_ne!(
            ClientKey::of(ip("2001:db8::1")),
            ClientKey::of(ip("2001:db8:0:1::1"))
        );
        // No IPv6 /64 collides with an IPv4 address.
        assert_ne!(ClientKey::of(ip("::")), ClientKey::of(ip("0.0.0.0")));
    }

    #[test]
    fn each_client_gets_its_share_and_gets_it_back() {
        let clients = Clients::new(2);
        let a = [clients.take(ip("10.0.0.1")), clients.take(ip("10.0.0.1"))];
        assert!(a.iter().all(Option::is_some));
        assert!(clients.take(ip("10.0.0.1")).is_none());
        assert!(
            clients.take(ip("10.0.0.2")).is_some(),
            "others are not affected"
        );
        drop(a);
        assert!(clients.take(ip("10.0.0.1")).is_some());
        assert!(
            clients.held.lock().is_empty(),
            "no entry outlives its connections"
        );
    }
}
