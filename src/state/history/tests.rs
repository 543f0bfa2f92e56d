use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ring::Ring;
use super::sample::{ALL_CLASSES, Gauges, Reading, Sample, quantile_ms};
use super::*;
use crate::metrics::histogram::BUCKETS;
use crate::metrics::{Eviction, LatencyClass, RegistrationOutcome, RequestSeries};
use crate::state::route_table::testing::{register_topics, register_topics_in};

fn state(dir: &tempfile::TempDir) -> Namesrv {
    Namesrv::in_dir(dir.path())
}

const ROUTE: RequestSeries = RequestSeries {
    slot: 5,
    label: "get_routeinfo_by_topic",
    class: LatencyClass::Route,
};

#[test]
fn a_ring_keeps_the_newest_values_oldest_first() {
    let mut ring = Ring::new(3);
    for n in 1..=2 {
        ring.push(n);
    }
    assert_eq!(ring.iter().copied().collect::<Vec<_>>(), [1, 2]);
    for n in 3..=7 {
        ring.push(n);
        assert!(ring.len() <= 3);
    }
    assert_eq!(ring.iter().copied().collect::<Vec<_>>(), [5, 6, 7]);
    assert_eq!((ring.len(), ring.capacity()), (3, 3));
    ring.push(8);
    assert_eq!(ring.iter().copied().collect::<Vec<_>>(), [6, 7, 8]);
}

#[test]
fn quantiles_interpolate_inside_the_bucket_as_prometheus_does() {
    let mut buckets = [0u64; BUCKETS];
    assert!(quantile_ms(&buckets, 0.5).is_nan());
    // 100 observations at or below 50 µs: the median is half way up the first bucket.
    buckets[0] = 100;
    assert!((quantile_ms(&buckets, 0.5) - 0.025).abs() < 1e-6);
    // One more in (500 µs, 1 ms]: the p99 is still in the first bucket, the max in the fifth.
    buckets[4] = 1;
    assert!(quantile_ms(&buckets, 0.99) < 0.05);
    assert!((quantile_ms(&buckets, 1.0) - 1.0).abs() < 1e-6);
    // Beyond the last bound: the highest finite bound, 1 s.
    let mut slow = [0u64; BUCKETS];
    slow[BUCKETS - 1] = 3;
    assert_eq!(quantile_ms(&slow, 0.99), 1000.0);
}

#[tokio::test(start_paused = true)]
async fn a_sample_is_the_difference_of_two_readings() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir);
    let m = state.metrics();
    m.request(ROUTE, 0, Duration::from_micros(20));
    m.registration(RegistrationOutcome::Full);
    let before = Reading::take(m, Instant::now());
    tokio::time::advance(Duration::from_secs(10)).await;
    for _ in 0..200 {
        m.request(ROUTE, 0, Duration::from_micros(40));
    }
    m.request(RequestSeries::OTHER, 0, Duration::from_millis(3));
    m.registration(RegistrationOutcome::Unchanged);
    m.evicted(Eviction::Scan, 2);
    let after = Reading::take(m, Instant::now());
    let s = Sample::between(&before, &after, Gauges::default(), Duration::from_secs(10));
    assert_eq!(s.span, Duration::from_secs(10));
    assert_eq!(s.requests[LatencyClass::Route as usize], 200);
    assert_eq!(s.requests[LatencyClass::Other as usize], 1);
    assert_eq!(s.per_second(s.requests[0]), Some(20.0));
    assert!(s.p50_ms[LatencyClass::Route as usize] < 0.05);
    assert!(s.p99_ms[LatencyClass::Other as usize] > 2.5);
    assert!(
        s.p99_ms[ALL_CLASSES] < 0.05,
        "1 of 201 is slow: not the p99"
    );
    assert!(
        s.p50_ms[LatencyClass::Kv as usize].is_nan(),
        "no KV request"
    );
    assert_eq!(s.registrations, [0, 1, 0]);
    assert_eq!(s.evictions, [2, 0, 0, 0]);
}

#[tokio::test(start_paused = true)]
async fn the_sampler_fills_both_tiers_and_stops_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(state.clone(), cancel.clone()));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let history = state.history();
    assert_eq!(
        history.view().fine.len(),
        0,
        "the first reading is the baseline"
    );
    for _ in 0..7 {
        state.metrics().request(ROUTE, 0, Duration::from_micros(30));
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    let view = history.view();
    assert_eq!(view.fine.len(), 7);
    assert!(view.fine.iter().all(|s| s.span == SAMPLE_EVERY));
    assert!(view.fine.iter().all(|s| s.requests[0] == 1));
    assert_eq!(view.coarse.len(), 1);
    assert_eq!(view.coarse[0].requests[0], 6);
    assert_eq!(view.coarse[0].span, COARSE_EVERY);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_rings_stay_bounded_and_the_timeline_prefers_fine_samples() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(state.clone(), cancel.clone()));
    let memory = state.history().memory_bytes();
    // Two hours: both rings wrap.
    tokio::time::sleep(Duration::from_secs(2 * 3600) + Duration::from_millis(1)).await;
    let view = state.history().view();
    assert_eq!(
        (view.fine.len(), view.coarse.len()),
        (FINE_KEPT, COARSE_KEPT)
    );
    assert_eq!(view.fine.last().unwrap().end, Duration::from_secs(7200));
    assert_eq!(view.coarse.first().unwrap().end, Duration::from_secs(3660));
    assert_eq!(state.history().memory_bytes(), memory, "no growth");
    assert!(memory < 32 * 1024, "{memory} bytes");
    // The timeline: coarse samples up to where the fine ones start, then the fine ones.
    let timeline = view.timeline();
    let ends: Vec<u64> = timeline.iter().map(|s| s.end.as_secs()).collect();
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
    assert_eq!(ends.len(), 50 + FINE_KEPT);
    assert_eq!(ends[49], 6600);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn clusters_get_a_series_each_up_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir);
    let now = Instant::now();
    // (A one-topic body before a full one is refused: two topics each.)
    register_topics(
        &mut state.routes_mut(),
        ("broker-a", "a:1", 0, 1),
        &["T", "U"],
        now,
    );
    for i in 0..10 {
        let (name, addr) = (format!("b{i}"), format!("b:{i}"));
        let conn = 10 + i as u64;
        let cluster = format!("C{i}");
        let broker = (name.as_str(), addr.as_str(), 0, conn);
        register_topics_in(&mut state.routes_mut(), &cluster, broker, &["T", "U"], now);
    }
    sample_now(&state);
    sample_now(&state);
    let view = state.history().view();
    assert_eq!(view.clusters.len(), CLUSTERS_CHARTED);
    assert_eq!(&*view.clusters[0], "C0");
    let gauges = view.fine[0].gauges;
    assert_eq!(gauges.live_total, 11, "the total counts every cluster");
    assert_eq!(gauges.live.iter().sum::<u32>(), 8);
    assert!(size_of::<Sample>() <= 200, "{}", size_of::<Sample>());
}
