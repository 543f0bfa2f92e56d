use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::state::route_table::testing::*;

const NOW: i64 = 1_800_000_000_000;

fn meta(written_at_millis: i64) -> Meta {
    Meta {
        written_at_millis,
        pid: 42,
        reason: Reason::Shutdown,
    }
}

/// What restoring [`table`] reports.
const ALL_OF_TABLE: Restored = Restored::Routes {
    brokers: 3,
    topics: 4,
};

/// A table with two groups (one zoned, one wiped), a slave, filter servers and a mapping.
fn table(now: Instant) -> RouteTable {
    let mut t = RouteTable::new();
    register(
        &mut t,
        &reg("b-1", "10.0.0.1:10911", 0, 1),
        &body(3, &["T1", "T2", "Ünïcødé-topic"]),
        now,
    );
    let mut slave = reg("b-1", "10.0.0.2:10911", 1, 2);
    slave.heartbeat_timeout_millis = Some(30_000);
    register(&mut t, &slave, &body(3, &["T1", "T2"]), now);
    let mut zoned = reg("b-2", "10.0.0.3:10911", 0, 3);
    zoned.zone_name = Some("zone-a");
    register(
        &mut t,
        &zoned,
        &body_with(7, 2, &[("T1", 8, 8, 6, 0), ("T3", 1, 2, 7, 1)]),
        now,
    );
    t.wipe_write_perm("b-2");
    t
}

#[test]
fn encode_decode_round_trips_everything() {
    let now = Instant::now();
    let mut parts = table(now).to_parts(now + Duration::from_secs(3));
    let key = parts.live[0].0.clone();
    parts
        .filter_servers
        .push((key, vec!["10.0.0.9:30000".into()]));
    let mapping = crate::protocol::body::MappingInfo::from_json(
        br#"{"topic":"T1","bname":"b-1","totalQueues":2,"epoch":5,"dirty":true,"currIdMap":{0:0,1:1}}"#,
    )
    .unwrap();
    parts
        .mappings
        .push(("T1".into(), vec![("b-1".into(), mapping)]));
    let bytes = encode(&meta(NOW), &parts);
    let (m, back) = decode(&bytes).unwrap();
    assert_eq!(m, meta(NOW));
    assert_eq!(back, parts);
    // Names are shared again, as registrations share them.
    let group = &back.groups[0].broker_name;
    let queue = &back.topics[0].1[0].broker_name;
    assert!(std::sync::Arc::ptr_eq(group, queue));
}

#[test]
fn damage_of_every_kind_is_recognised() {
    let now = Instant::now();
    let good = encode(&meta(NOW), &table(now).to_parts(now));
    let err = |bytes: &[u8]| decode(bytes).unwrap_err().to_string();
    assert!(err(&good[..good.len() - 10]).contains("truncated"));
    assert!(err(&[good.as_slice(), b"x"].concat()).contains("truncated"));
    let mut flipped = good.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x20;
    assert!(err(&flipped).contains("checksum"));
    assert!(err(b"").contains("not a route snapshot"));
    assert!(err(b"{\"json\":true}\n").contains("not a route snapshot"));
    assert!(err(&good[..5]).contains("not a route snapshot"));
    let newer =
        String::from_utf8_lossy(&good).replacen("namesrv-routes 1 ", "namesrv-routes 2 ", 1);
    assert!(err(newer.as_bytes()).contains("format 2, newer"));
    // A body that matches its checksum but is not the expected document.
    let body = br#"{"writtenAtMillis":1}"#;
    let forged = [
        format!(
            "namesrv-routes 1 {} {:08x}\n",
            body.len(),
            crc32fast::hash(body)
        )
        .as_bytes(),
        body,
    ]
    .concat();
    assert!(err(&forged).contains("unreadable"));
}

#[test]
fn load_ages_brokers_by_the_time_passed_and_refuses_stale_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("routes.snapshot");
    assert!(load(&path, NOW).unwrap().is_none());
    let now = Instant::now();
    let parts = table(now).to_parts(now + Duration::from_secs(5));
    save(&path, &meta(NOW), &parts).unwrap();
    let (_, loaded) = load(&path, NOW + 20_000).unwrap().unwrap();
    assert!(
        loaded
            .live
            .iter()
            .all(|(_, l)| l.age == Duration::from_secs(25))
    );
    // A clock set back counts as no time passed.
    let (_, loaded) = load(&path, NOW - 60_000).unwrap().unwrap();
    assert!(
        loaded
            .live
            .iter()
            .all(|(_, l)| l.age == Duration::from_secs(5))
    );
    // The longest timeout in it is the default 120 s (the slave declared 30 s).
    assert!(load(&path, NOW + 120_000).is_ok());
    let stale = load(&path, NOW + 120_001).unwrap_err();
    assert!(matches!(stale, SnapshotError::Stale { .. }), "{stale}");
    assert!(stale.to_string().contains("120 s"), "{stale}");
}

#[test]
fn declared_timeouts_neither_make_an_old_snapshot_fresh_nor_survive_a_restart() {
    let now = Instant::now();
    let mut t = RouteTable::new();
    let mut forever = reg("b-1", "10.0.0.1:10911", 0, 1);
    forever.heartbeat_timeout_millis = Some(1_000_000_000_000_000);
    register(&mut t, &forever, &body(1, &["T1", "T2"]), now);
    let mut parts = t.to_parts(now);
    // As a snapshot written before the cap could hold it.
    parts.live[0].1.timeout = Duration::from_millis(1_000_000_000_000_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("routes.snapshot");
    save(&path, &meta(NOW), &parts).unwrap();
    let ninety_days = 90 * 24 * 3600 * 1000;
    let stale = load(&path, NOW + ninety_days).unwrap_err();
    assert!(matches!(stale, SnapshotError::Stale { .. }), "{stale}");
    assert!(
        stale.to_string().contains("default broker timeout (120 s)"),
        "{stale}"
    );
    // Fresh enough to restore: the restored broker gets the capped timeout.
    let (_, parts) = load(&path, NOW + 1_000).unwrap().unwrap();
    let restored = RouteTable::from_parts(parts, now);
    let live = restored.live("DefaultCluster", "10.0.0.1:10911").unwrap();
    assert_eq!(live.timeout, crate::state::route_table::MAX_BROKER_TIMEOUT);
}

fn state(dir: &std::path::Path) -> Namesrv {
    Namesrv::in_dir(dir)
}

#[tokio::test]
async fn restore_uses_the_backup_when_the_file_is_damaged_and_never_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("routes.snapshot");
    let now = Instant::now();
    let parts = table(now).to_parts(now);
    let written = wall_clock_millis();
    assert_eq!(state(dir.path()).restore_routes(&path), Restored::Nothing);
    save(&path, &meta(written), &parts).unwrap();
    save(&path, &meta(written), &parts).unwrap();
    let s = state(dir.path());
    assert_eq!(s.restore_routes(&path), ALL_OF_TABLE);
    assert_eq!(s.routes().all_topics().len(), 4);
    // The restored clusters have their metric series even if they empty before a scrape.
    assert!(!s.metrics().clusters_to_report([]).is_empty());
    // Truncated: the previous snapshot (`.bak`) is used.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let s = state(dir.path());
    assert_eq!(s.restore_routes(&path), ALL_OF_TABLE);
    // Both damaged, or a newer format: ignored, the table stays empty.
    std::fs::write(crate::durable::backup_path(&path), b"garbage").unwrap();
    let s = state(dir.path());
    assert_eq!(s.restore_routes(&path), Restored::Ignored);
    assert_eq!(s.routes().topic_count(), 0);
    let newer =
        String::from_utf8_lossy(&bytes).replacen("namesrv-routes 1 ", "namesrv-routes 9 ", 1);
    std::fs::write(&path, newer).unwrap();
    assert_eq!(state(dir.path()).restore_routes(&path), Restored::Ignored);
    // A directory where the file should be.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert_eq!(state(dir.path()).restore_routes(&path), Restored::Ignored);
}

#[tokio::test(start_paused = true)]
async fn a_restored_broker_expires_when_its_own_timeout_passes_since_its_last_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("routes.snapshot");
    let before = state(dir.path());
    let heard = Instant::now();
    *before.routes_mut() = table(heard);
    tokio::time::advance(Duration::from_secs(20)).await;
    let parts = before.route_parts();
    save(&path, &meta(NOW), &parts).unwrap();
    // Read back 2 s later on the wall clock (the restart's downtime).
    let (_, parts) = load(&path, NOW + 2_000).unwrap().unwrap();
    let after = state(dir.path());
    *after.routes_mut() = RouteTable::from_parts(parts, Instant::now());
    let policy = crate::state::protection::Policy::OFF;
    // The slave declared 30 s: gone 8 s after the restart, and only then.
    tokio::time::advance(Duration::from_millis(7_990)).await;
    assert!(after.routes_mut().scan(Instant::now(), &policy).is_empty());
    tokio::time::advance(Duration::from_millis(20)).await;
    let expired = after.routes_mut().scan(Instant::now(), &policy);
    assert_eq!(expired.len(), 1);
    assert_eq!(&*expired[0].0.addr, "10.0.0.2:10911");
    // The masters keep the default 120 s.
    tokio::time::advance(Duration::from_secs(89)).await;
    assert!(after.routes_mut().scan(Instant::now(), &policy).is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(after.routes_mut().scan(Instant::now(), &policy).len(), 2);
}

#[test]
fn the_change_stamp_follows_heartbeats_and_edits() {
    let now = Instant::now();
    let mut t = table(now);
    let s0 = t.change_stamp();
    assert_eq!(t.change_stamp(), s0);
    t.touch_broker(
        "DefaultCluster",
        "10.0.0.1:10911",
        now + Duration::from_secs(1),
    );
    let s1 = t.change_stamp();
    assert_ne!(s1, s0);
    t.delete_topic("T3", None);
    assert_ne!(t.change_stamp(), s1);
}

#[tokio::test]
async fn a_file_that_is_not_a_snapshot_is_moved_aside_never_overwritten() {
    let (dir, path) = crate::durable::temp_file("routes.snapshot", "precious operator data");
    assert_eq!(state(dir.path()).restore_routes(&path), Restored::Ignored);
    let now = Instant::now();
    let parts = table(now).to_parts(now);
    save(&path, &meta(wall_clock_millis()), &parts).unwrap();
    let aside = dir.path().join("routes.snapshot.not-a-snapshot");
    assert_eq!(std::fs::read(&aside).unwrap(), b"precious operator data");
    assert!(load(&path, wall_clock_millis()).unwrap().is_some());
    // Our own snapshot is replaced in place; nothing more is moved.
    save(&path, &meta(wall_clock_millis()), &parts).unwrap();
    let second = dir.path().join("routes.snapshot.not-a-snapshot.1");
    assert!(std::fs::symlink_metadata(&second).is_err());
    // A planted link is moved too, and its target is never written.
    #[cfg(unix)]
    {
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "system file").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        save(&path, &meta(wall_clock_millis()), &parts).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"system file");
        assert!(std::fs::symlink_metadata(&second).unwrap().is_symlink());
        assert!(load(&path, wall_clock_millis()).unwrap().is_some());
    }
}
