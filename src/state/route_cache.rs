//! Encoded route bodies, kept per topic so that a route is encoded once per change and then
//! served as shared bytes.
//!
//! A cached body is tagged with a [`Stamp`] of everything its content depends on: the topic's
//! revision, the route table's broker epoch, and an external epoch covering configuration and
//! KV changes (`orderMessageEnable`, `supportActingMaster`, ORDER_TOPIC_CONFIG). A lookup with
//! a different stamp misses, so invalidation costs nothing at change time.

use bytes::Bytes;
use parking_lot::Mutex;

use crate::protocol::json::JsonStyle;

/// What a cached body was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// The topic's revision.
    pub(crate) revision: u64,
    /// The route table's broker epoch.
    pub(crate) broker_epoch: u64,
    /// The configuration/KV epoch.
    pub(crate) external_epoch: u64,
}

#[derive(Debug)]
struct Cached {
    stamp: Stamp,
    legacy: Option<Bytes>,
    standard: Option<Bytes>,
}

/// One topic's cache slot: empty until the topic's route is first asked for.
///
/// The mutex is per topic and held only to clone or store a `Bytes`, so lookups of different
/// topics never contend; it sits inside the route table so that a slot lives and dies with
/// its topic.
#[derive(Default)]
pub(crate) struct RouteCache(Mutex<Option<Box<Cached>>>);

impl std::fmt::Debug for RouteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RouteCache")
    }
}

impl RouteCache {
    /// The cached body for `style`, if it was computed under `stamp`.
    pub(crate) fn get(&self, stamp: Stamp, style: JsonStyle) -> Option<Bytes> {
        let slot = self.0.lock();
        let cached = slot.as_ref().filter(|c| c.stamp == stamp)?;
        match style {
            JsonStyle::Legacy => cached.legacy.clone(),
            JsonStyle::Standard => cached.standard.clone(),
        }
    }

    /// Stores a body computed under `stamp`, discarding bodies of older stamps.
    pub(crate) fn put(&self, stamp: Stamp, style: JsonStyle, body: Bytes) {
        let mut slot = self.0.lock();
        let cached = match slot.as_mut() {
            Some(c) if c.stamp == stamp => c,
            _ => slot.insert(Box::new(Cached {
                stamp,
                legacy: None,
                standard: None,
            })),
        };
        match style {
            JsonStyle::Legacy => cached.legacy = Some(body),
            JsonStyle::Standard => cached.standard = Some(body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_stamp_invalidates_both_styles() {
        let cache = RouteCache::default();
        let s1 = Stamp {
            revision: 1,
            broker_epoch: 0,
            external_epoch: 0,
        };
        let s2 = Stamp { revision: 2, ..s1 };
        assert_eq!(cache.get(s1, JsonStyle::Legacy), None);
        cache.put(s1, JsonStyle::Legacy, Bytes::from_static(b"L"));
        cache.put(s1, JsonStyle::Standard, Bytes::from_static(b"S"));
        assert_eq!(cache.get(s1, JsonStyle::Legacy).as_deref(), Some(&b"L"[..]));
        assert_eq!(
            cache.get(s1, JsonStyle::Standard).as_deref(),
            Some(&b"S"[..])
        );
        assert_eq!(cache.get(s2, JsonStyle::Legacy), None);
        cache.put(s2, JsonStyle::Standard, Bytes::from_static(b"S2"));
        assert_eq!(cache.get(s2, JsonStyle::Legacy), None);
        assert_eq!(cache.get(s1, JsonStyle::Standard), None);
    }
}
