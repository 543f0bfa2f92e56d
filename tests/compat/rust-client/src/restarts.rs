//! `--restarts`: the producer keeps sending while tests/compat/run.sh restarts the name server
//! (kill -9 and start, then SIGTERM and start). Sends go through a long-lived producer (routes
//! cached, refreshed by the client) and, twice a second, through a producer started afresh,
//! which must ask the name server for the route; the admin client reads the route every
//! 100 ms and compares it with the one read before the first restart.
//!
//! Prints `READY` once the topic's route is known (run.sh restarts only after that), runs until
//! the stop file appears, then prints `RESULT` lines and one `PASS`/`FAIL` step: with
//! `--expect-warm`, no send may fail for a missing route and every route read must equal the
//! first; otherwise the numbers are only reported (the cold-restart comparison).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocketmq_client_rust::{DefaultMQAdminExt, DefaultMQProducer, SendStatus, TopicAdmin};
use rocketmq_model::common::config::TopicConfig;
use rocketmq_model::common::message::message_single::Message;

use super::{cs, describe, find_master, response_code, route, show, Opts, Steps, QUEUES};

/// What `--restarts` needs besides the common options.
pub struct RestartOpts {
    pub stop_file: PathBuf,
    pub expect_warm: bool,
    pub label: String,
}

#[derive(Default)]
struct Tally {
    ok: usize,
    missing_route: usize,
    other: usize,
    first_problems: Vec<String>,
}

impl Tally {
    fn failed(&mut self, t: Duration, missing: bool, why: String) {
        if missing {
            self.missing_route += 1;
        } else {
            self.other += 1;
        }
        if self.first_problems.len() < 5 {
            self.first_problems.push(format!("t={:.1}s {why}", t.as_secs_f64()));
        }
    }

    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} ok, {} failed for a missing route, {} failed otherwise{}",
            self.ok,
            self.missing_route,
            self.other,
            if self.first_problems.is_empty() { String::new() } else { format!(" (first: {})", self.first_problems.join("; ")) }
        )
    }
}

/// Whether a send failure says the name server had no route for the topic.
fn is_missing_route(code: Option<i32>, text: &str) -> bool {
    code == Some(17) || text.contains("No route info") || text.contains("TOPIC_NOT_EXIST")
}

async fn send(producer: &mut DefaultMQProducer, topic: &str, body: &str, t: Duration, tally: &mut Tally) {
    let msg = match Message::builder().topic(topic).tags("RESTART").body_slice(body.as_bytes()).build() {
        Ok(m) => m,
        Err(e) => return tally.failed(t, false, show(e)),
    };
    match producer.send_with_timeout(msg, 3000).await {
        Ok(Some(r)) if r.send_status == SendStatus::SendOk => tally.ok += 1,
        Ok(other) => tally.failed(t, false, format!("{other:?}")),
        Err(e) => {
            let code = response_code(&e);
            let text = show(e);
            let missing = is_missing_route(code, &text);
            tally.failed(t, missing, text)
        }
    }
}

pub async fn run(admin: &DefaultMQAdminExt, rt: &std::sync::Arc<rocketmq_client_rust::ClientRuntime>, o: &Opts, r: &RestartOpts, steps: &mut Steps) {
    let topic = format!("compat_restart_{}", o.run_id);
    let started = Instant::now();
    let setup = async {
        let master = find_master(admin, o).await?;
        TopicAdmin::create_and_update_topic_config(admin, cs(master), TopicConfig::with_queues(topic.as_str(), QUEUES, QUEUES))
            .await
            .map_err(show)?;
        let deadline = Instant::now() + o.wait;
        loop {
            if let Ok(Some(route)) = route(admin, &topic).await {
                return Ok::<_, String>(describe(&route));
            }
            if Instant::now() >= deadline {
                return Err(format!("no route for {topic} after {} s", o.wait.as_secs()));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    let baseline = match setup.await {
        Ok(b) => b,
        Err(why) => {
            steps.record(&format!("restarts[{}]", r.label), "105, 310", started, Err(why));
            return;
        }
    };
    let mut long_lived = DefaultMQProducer::builder(rt.clone())
        .producer_group(format!("compat_restart_pg_{}", o.run_id))
        .name_server_addr(o.namesrv.clone())
        .build();
    if let Err(e) = long_lived.start().await {
        steps.record(&format!("restarts[{}]", r.label), "105, 310", started, Err(show(e)));
        return;
    }
    println!("READY {baseline}");
    let clock = Instant::now();
    let (mut kept, mut fresh) = (Tally::default(), Tally::default());
    let (mut same, mut different, mut not_exist, mut unreachable) = (0, 0, 0, 0);
    let mut first_different = None;
    let mut i = 0u64;
    while !r.stop_file.exists() && clock.elapsed() < Duration::from_secs(600) {
        let t = clock.elapsed();
        send(&mut long_lived, &topic, &format!("kept-{i}"), t, &mut kept).await;
        if i % 5 == 0 {
            let mut p = DefaultMQProducer::builder(rt.clone())
                .producer_group(format!("compat_restart_fresh_{}_{i}", o.run_id))
                .name_server_addr(o.namesrv.clone())
                .build();
            match p.start().await {
                Ok(()) => send(&mut p, &topic, &format!("fresh-{i}"), t, &mut fresh).await,
                Err(e) => fresh.failed(t, false, format!("start: {}", show(e))),
            }
            p.shutdown().await;
        }
        match route(admin, &topic).await {
            Ok(Some(route)) if describe(&route) == baseline => same += 1,
            Ok(Some(route)) => {
                different += 1;
                first_different.get_or_insert(format!("t={:.1}s {}", t.as_secs_f64(), describe(&route)));
            }
            Ok(None) => not_exist += 1,
            Err(_) => unreachable += 1,
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    long_lived.shutdown().await;
    let label = &r.label;
    println!("RESULT [{label}] {}", kept.line("long-lived producer sends"));
    println!("RESULT [{label}] {}", fresh.line("fresh producer sends"));
    println!(
        "RESULT [{label}] route reads: {same} equal to the route before the restarts, {different} different{}, \
         {not_exist} TOPIC_NOT_EXIST, {unreachable} while the name server was down",
        first_different.map(|d| format!(" (first: {d})")).unwrap_or_default()
    );
    let missing = kept.missing_route + fresh.missing_route;
    let outcome = if !r.expect_warm {
        Ok(format!("reported only: {missing} send(s) failed for a missing route, {not_exist} route read(s) TOPIC_NOT_EXIST"))
    } else if missing == 0 && different == 0 && not_exist == 0 && same > 0 {
        Ok(format!("{} sends ok, none failed for a missing route; every route read equal to the one before", kept.ok + fresh.ok))
    } else {
        Err(format!("{missing} send(s) failed for a missing route, {not_exist} route read(s) TOPIC_NOT_EXIST, {different} different"))
    };
    let step = format!("restarts[{label}]");
    steps.record(&step, "105, 310 to the broker", started, outcome);
}
