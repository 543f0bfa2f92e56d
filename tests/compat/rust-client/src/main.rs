//! Compatibility checks of a RocketMQ name server driven by the published
//! `rocketmq-client-rust` 1.0.0 crate: admin API, producer and push consumer.
//!
//! A broker (run.sh starts the rocketmq-rust 1.0.0 broker) must be registering with the name
//! server given by `--namesrv`. Every step prints one line:
//!
//! ```text
//! PASS rocketmq-client-rust: step <name> (request code <N>): <detail>
//! FAIL rocketmq-client-rust: step <name> (request code <N>) failed: <what went wrong>
//! ```
//!
//! and the process exits 1 if any step failed (2 on usage errors).
//!
//! Usage: `namesrv-compat-rust-client --namesrv HOST:PORT [--broker-name broker-a]
//! [--cluster DefaultCluster] [--count 100] [--wait-secs 60] [--expect-config KEY=VALUE]...`
//!
//! `namesrv-compat-rust-client auth ...` runs the ACL-hook checks against name servers with
//! authentication on instead (see `auth.rs`); `namesrv-compat-rust-client tls ...` the checks
//! with TLS turned on (see `tls.rs`). With `--restarts LABEL --stop-file FILE
//! [--expect-warm]` it runs the restart experiment of [`restarts`] instead of the checks.

mod auth;
mod restarts;
mod tls;

use std::any::Any;
use std::collections::HashMap;
use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;
use std::time::UNIX_EPOCH;

use cheetah_string::CheetahString;
use rocketmq_client_rust::BrokerAdmin;
use rocketmq_client_rust::ClientError;
use rocketmq_client_rust::ClientResult;
use rocketmq_client_rust::ClientRuntime;
use rocketmq_client_rust::ClientRuntimeConfig;
use rocketmq_client_rust::ConsumeConcurrentlyContext;
use rocketmq_client_rust::ConsumeConcurrentlyStatus;
use rocketmq_client_rust::DefaultMQAdminExt;
use rocketmq_client_rust::DefaultMQProducer;
use rocketmq_client_rust::DefaultMQPushConsumer;
use rocketmq_client_rust::MQClientException;
use rocketmq_client_rust::MQPushConsumer;
use rocketmq_client_rust::MessageListenerConcurrently;
use rocketmq_client_rust::RouteAdmin;
use rocketmq_client_rust::SendStatus;
use rocketmq_client_rust::TelemetryHandle;
use rocketmq_client_rust::TopicAdmin;
use rocketmq_model::common::config::TopicConfig;
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_protocol::protocol::route::topic_route_data::TopicRouteData;
use rocketmq_runtime::RuntimeConfig;
use rocketmq_runtime::RuntimeOwner;

const CLIENT: &str = "rocketmq-client-rust";
const PERM_WRITE: u32 = 2;
const PERM_READ: u32 = 4;
const QUEUES: u32 = 4;
/// Consumer batch size: larger bursts overflow the client's listener lane on 2-core machines.
const CONSUME_BATCH: u32 = 16;
/// Worker parallelism for the client runtime (the default sizes it from the CPU count).
const PARALLELISM: usize = 8;
const STACK_SIZE: usize = 16 * 1024 * 1024;
const KV_NAMESPACE: &str = "NAMESRV_COMPAT";
const ORDER_NAMESPACE: &str = "ORDER_TOPIC_CONFIG";

// Request codes named in the step lines.
const PUT_KV_CONFIG: &str = "100";
const GET_KV_CONFIG: &str = "101";
const DELETE_KV_CONFIG: &str = "102";
const GET_ROUTEINFO_BY_TOPIC: &str = "105";
const GET_BROKER_CLUSTER_INFO: &str = "106";
const WIPE_WRITE_PERM_OF_BROKER: &str = "205";
const GET_ALL_TOPIC_LIST: &str = "206";
const GET_KVLIST_BY_NAMESPACE: &str = "219";
const GET_TOPICS_BY_CLUSTER: &str = "224";
const UPDATE_NAMESRV_CONFIG: &str = "318";
const GET_NAMESRV_CONFIG: &str = "319";
const ADD_WRITE_PERM_OF_BROKER: &str = "327";

struct Opts {
    namesrv: String,
    broker_name: String,
    cluster: String,
    count: usize,
    wait: Duration,
    /// `KEY=VALUE` pairs GET_NAMESRV_CONFIG must report (listenPort is always checked).
    expect: Vec<(String, String)>,
    run_id: u128,
    /// `--restarts`: the restart experiment instead of the checks.
    restarts: Option<restarts::RestartOpts>,
}

fn usage() -> ! {
    eprintln!(
        "usage: namesrv-compat-rust-client --namesrv HOST:PORT [--broker-name NAME] [--cluster NAME] \
         [--count N] [--wait-secs N] [--expect-config KEY=VALUE]... \
         [--restarts LABEL --stop-file FILE [--expect-warm]]"
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        namesrv: String::new(),
        broker_name: "broker-a".into(),
        cluster: "DefaultCluster".into(),
        count: 100,
        wait: Duration::from_secs(60),
        expect: Vec::new(),
        run_id: run_id(),
        restarts: None,
    };
    let (mut label, mut stop_file, mut expect_warm) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--namesrv" => o.namesrv = value(),
            "--broker-name" => o.broker_name = value(),
            "--cluster" => o.cluster = value(),
            "--count" => o.count = value().parse().unwrap_or_else(|_| usage()),
            "--wait-secs" => o.wait = Duration::from_secs(value().parse().unwrap_or_else(|_| usage())),
            "--expect-config" => {
                let pair = value();
                let (k, v) = pair.split_once('=').unwrap_or_else(|| usage());
                o.expect.push((k.to_string(), v.to_string()));
            }
            "--restarts" => label = Some(value()),
            "--stop-file" => stop_file = Some(std::path::PathBuf::from(value())),
            "--expect-warm" => expect_warm = true,
            _ => usage(),
        }
    }
    if !o.namesrv.contains(':') {
        usage()
    }
    o.restarts = match (label, stop_file) {
        (Some(label), Some(stop_file)) => Some(restarts::RestartOpts { stop_file, expect_warm, label }),
        (None, None) if !expect_warm => None,
        _ => usage(),
    };
    o
}

fn run_id() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// What this run checks.
enum Mode {
    Checks(Opts),
    Auth(auth::AuthOpts),
    Tls(tls::TlsOpts),
}

fn cs(s: impl Into<String>) -> CheetahString {
    CheetahString::from(s.into())
}

/// The server's response code carried by a client error, if the error came from a response.
fn response_code(e: &ClientError) -> Option<i32> {
    e.source_ref::<MQClientException>().map(|x| x.response_code())
}

fn show<E: std::fmt::Debug + 'static>(e: E) -> String {
    // The client redacts response remarks in its Debug output; dig out code and remark.
    let text = match (&e as &dyn Any).downcast_ref::<ClientError>() {
        Some(ce) => match ce.source_ref::<MQClientException>() {
            Some(x) => format!("response code {}: {x}", x.response_code()),
            None => format!("{e:?}"),
        },
        None => format!("{e:?}"),
    };
    if text.chars().count() > 500 {
        format!("{}...", text.chars().take(500).collect::<String>())
    } else {
        text
    }
}

// ---------------------------------------------------------------------------------------------
// Step bookkeeping
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Steps {
    passed: usize,
    failed: Vec<String>,
}

impl Steps {
    /// Records one step; returns whether it passed.
    fn record(&mut self, name: &str, code: &str, started: Instant, outcome: Result<String, String>) -> bool {
        let ms = started.elapsed().as_millis();
        match outcome {
            Ok(detail) => {
                println!("PASS {CLIENT}: step {name} (request code {code}) [{ms} ms]: {detail}");
                self.passed += 1;
                true
            }
            Err(why) => {
                println!("FAIL {CLIENT}: step {name} (request code {code}) failed: {why} [{ms} ms]");
                self.failed.push(format!("{name} (request code {code})"));
                false
            }
        }
    }

    async fn run<F>(&mut self, name: &str, code: &str, fut: F) -> bool
    where
        F: Future<Output = Result<String, String>>,
    {
        let started = Instant::now();
        let outcome = fut.await;
        self.record(name, code, started, outcome)
    }

    fn skip(&mut self, name: &str, code: &str, why: &str) {
        println!("FAIL {CLIENT}: step {name} (request code {code}) failed: not run, {why}");
        self.failed.push(format!("{name} (request code {code}, not run)"));
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn describe(route: &TopicRouteData) -> String {
    let queues: Vec<String> = route
        .queue_datas
        .iter()
        .map(|q| {
            format!(
                "{} r={} w={} perm={} sysFlag={}",
                q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag
            )
        })
        .collect();
    let brokers: Vec<String> = route
        .broker_datas
        .iter()
        .map(|b| {
            let mut addrs: Vec<_> = b.broker_addrs().iter().collect();
            addrs.sort();
            format!("{}@{} {:?}", b.broker_name(), b.cluster(), addrs)
        })
        .collect();
    let order = route.order_topic_conf.as_ref().map(|c| format!(" orderTopicConf={c}")).unwrap_or_default();
    format!("queues=[{}] brokers=[{}]{order}", queues.join(", "), brokers.join(", "))
}

fn perm_of(route: &TopicRouteData, broker: &str) -> Option<u32> {
    route.queue_datas.iter().find(|q| q.broker_name.as_str() == broker).map(|q| q.perm)
}

async fn route(admin: &DefaultMQAdminExt, topic: &str) -> Result<Option<TopicRouteData>, String> {
    TopicAdmin::examine_topic_route_info(admin, cs(topic)).await.map_err(show)
}

/// Polls the route of `topic` until `accept` says yes (bounded by `wait`).
async fn poll_route<F>(admin: &DefaultMQAdminExt, topic: &str, wait: Duration, accept: F) -> Result<String, String>
where
    F: Fn(Option<&TopicRouteData>) -> Result<(), String>,
{
    let deadline = Instant::now() + wait;
    loop {
        let last = match route(admin, topic).await {
            Ok(r) => match accept(r.as_ref()) {
                Ok(()) => return Ok(r.as_ref().map(describe).unwrap_or_else(|| "no route (TOPIC_NOT_EXIST)".into())),
                Err(why) => why,
            },
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(format!("after {} s: {last}", wait.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn namesrv_config(admin: &DefaultMQAdminExt, ns: &CheetahString) -> Result<HashMap<CheetahString, CheetahString>, String> {
    let all = RouteAdmin::get_name_server_config(admin, vec![ns.clone()]).await.map_err(show)?;
    all.get(ns)
        .cloned()
        .or_else(|| all.into_values().next())
        .ok_or_else(|| "no configuration returned".to_string())
}

async fn set_namesrv_config(admin: &DefaultMQAdminExt, ns: &CheetahString, key: &str, value: &str) -> Result<(), String> {
    update_config(admin, ns, key, value).await.map_err(show)
}

async fn update_config(admin: &DefaultMQAdminExt, ns: &CheetahString, key: &str, value: &str) -> ClientResult<()> {
    let mut props = HashMap::new();
    props.insert(cs(key), cs(value));
    RouteAdmin::update_name_server_config(admin, props, Some(vec![ns.clone()])).await
}

struct Counting {
    prefix: String,
    seen: Arc<Mutex<HashSet<String>>>,
    deliveries: Arc<AtomicUsize>,
}

impl MessageListenerConcurrently for Counting {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for msg in msgs {
            self.deliveries.fetch_add(1, Ordering::SeqCst);
            if let Some(body) = msg.body() {
                let text = String::from_utf8_lossy(&body).into_owned();
                if text.starts_with(&self.prefix) {
                    seen.insert(text);
                }
            }
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

/// Waits (bounded by `o.wait`) until the cluster info shows the broker's master; its address.
async fn find_master(admin: &DefaultMQAdminExt, o: &Opts) -> Result<String, String> {
    let deadline = Instant::now() + o.wait;
    loop {
        let last = match RouteAdmin::examine_broker_cluster_info(admin).await {
            Ok(ci) => {
                let members = ci.cluster_addr_table.as_ref().and_then(|t| t.get(o.cluster.as_str()));
                let data = ci.broker_addr_table.as_ref().and_then(|t| t.get(o.broker_name.as_str()));
                match (members, data.and_then(|b| b.broker_addrs().get(&0))) {
                    (Some(m), Some(addr)) if m.iter().any(|n| n.as_str() == o.broker_name) => {
                        return Ok(addr.to_string());
                    }
                    _ => format!(
                        "{} not a master of {}: clusters {:?}, brokers {:?}",
                        o.broker_name,
                        o.cluster,
                        ci.cluster_addr_table,
                        ci.broker_addr_table.map(|t| t.keys().cloned().collect::<Vec<_>>())
                    ),
                }
            }
            Err(e) => show(e),
        };
        if Instant::now() >= deadline {
            return Err(format!("after {} s: {last}", o.wait.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------------------------

async fn checks(admin: &DefaultMQAdminExt, rt: &Arc<ClientRuntime>, o: &Opts, steps: &mut Steps) {
    let ns = cs(o.namesrv.clone());
    let port = o.namesrv.rsplit(':').next().unwrap_or_default().to_string();

    steps
        .run("probe_name_server", GET_NAMESRV_CONFIG, async {
            RouteAdmin::probe_name_server(admin, ns.clone()).await.map(|_| "answered".into()).map_err(show)
        })
        .await;

    // The broker registers on start-up; wait (bounded) until the cluster info shows its master.
    let mut master: Option<String> = None;
    steps
        .run("cluster_list", GET_BROKER_CLUSTER_INFO, async {
            let addr = find_master(admin, o).await?;
            master = Some(addr.clone());
            Ok(format!("{}/{} master {addr}", o.cluster, o.broker_name))
        })
        .await;

    // --- name server configuration ---
    steps
        .run("get_namesrv_config", GET_NAMESRV_CONFIG, async {
            let cfg = namesrv_config(admin, &ns).await?;
            let mut wanted = vec![("listenPort".to_string(), port.clone())];
            wanted.extend(o.expect.iter().cloned());
            let wrong: Vec<String> = wanted
                .iter()
                .filter(|(k, v)| cfg.get(k.as_str()).map(|x| x.as_str()) != Some(v.as_str()))
                .map(|(k, v)| format!("{k}={:?}, expected {v:?}", cfg.get(k.as_str()).map(|x| x.to_string())))
                .collect();
            if !wrong.is_empty() {
                return Err(format!("{} ({} keys returned)", wrong.join("; "), cfg.len()));
            }
            Ok(format!("{} keys; {}", cfg.len(), wanted.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")))
        })
        .await;

    steps
        .run("update_namesrv_config", &format!("{UPDATE_NAMESRV_CONFIG}, {GET_NAMESRV_CONFIG}"), async {
            let before = namesrv_config(admin, &ns).await?;
            let old = before.get("orderMessageEnable").map(|v| v.to_string()).unwrap_or_else(|| "false".into());
            let new = if old == "true" { "false" } else { "true" };
            set_namesrv_config(admin, &ns, "orderMessageEnable", new).await?;
            let read = namesrv_config(admin, &ns).await?.get("orderMessageEnable").map(|v| v.to_string());
            set_namesrv_config(admin, &ns, "orderMessageEnable", &old).await?;
            let restored = namesrv_config(admin, &ns).await?.get("orderMessageEnable").map(|v| v.to_string());
            if read.as_deref() != Some(new) {
                return Err(format!("set orderMessageEnable={new}, read back {read:?}"));
            }
            if restored.as_deref() != Some(old.as_str()) {
                return Err(format!("restored orderMessageEnable={old}, read back {restored:?}"));
            }
            Ok(format!("orderMessageEnable {old} -> {new} -> {old}"))
        })
        .await;

    steps
        .run("update_namesrv_config_black_list", &format!("{UPDATE_NAMESRV_CONFIG}, {GET_NAMESRV_CONFIG}"), async {
            // kvConfigPath is always on the black list: NO_PERMISSION (16), nothing changes.
            let before = namesrv_config(admin, &ns).await?.get("kvConfigPath").map(|v| v.to_string());
            let refused = update_config(admin, &ns, "kvConfigPath", "/nonexistent/kv.json").await;
            let after = namesrv_config(admin, &ns).await?.get("kvConfigPath").map(|v| v.to_string());
            match refused {
                Ok(()) => Err(format!("update of kvConfigPath accepted (kvConfigPath now {after:?})")),
                Err(_) if after != before => Err(format!("refused, but kvConfigPath changed {before:?} -> {after:?}")),
                Err(e) if response_code(&e) == Some(16) => Ok(format!("refused: {}", show(e))),
                Err(e) => Err(format!("expected NO_PERMISSION (16), got {}", show(e))),
            }
        })
        .await;

    // --- KV config ---
    let key = format!("key_{}", o.run_id);
    let value = format!("value_{}", o.run_id);
    steps
        .run("kv_put", PUT_KV_CONFIG, async {
            RouteAdmin::create_and_update_kv_config(admin, cs(KV_NAMESPACE), cs(key.clone()), cs(value.clone()))
                .await
                .map(|_| format!("{KV_NAMESPACE}/{key}={value}"))
                .map_err(show)
        })
        .await;
    steps
        .run("kv_get", GET_KV_CONFIG, async {
            match RouteAdmin::get_kv_config(admin, cs(KV_NAMESPACE), cs(key.clone())).await {
                Ok(v) if v.as_str() == value => Ok(format!("{v}")),
                Ok(v) => Err(format!("got {v:?}, expected {value:?}")),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run("kv_list", GET_KVLIST_BY_NAMESPACE, async {
            match RouteAdmin::get_kv_list_by_namespace(admin, cs(KV_NAMESPACE)).await {
                Ok(t) if t.table.get(key.as_str()).map(|v| v.as_str()) == Some(value.as_str()) => {
                    Ok(format!("{} entr(y/ies) in {KV_NAMESPACE}", t.table.len()))
                }
                Ok(t) => Err(format!("{key} missing or wrong in {:?}", t.table)),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run("kv_delete", DELETE_KV_CONFIG, async {
            RouteAdmin::delete_kv_config(admin, cs(KV_NAMESPACE), cs(key.clone()))
                .await
                .map(|_| "deleted".into())
                .map_err(show)
        })
        .await;
    steps
        .run("kv_get_after_delete", GET_KV_CONFIG, async {
            // QUERY_NOT_FOUND (22) is mapped by the client to an empty value.
            match RouteAdmin::get_kv_config(admin, cs(KV_NAMESPACE), cs(key.clone())).await {
                Ok(v) if v.is_empty() => Ok("not found".into()),
                Ok(v) => Err(format!("still there: {v}")),
                Err(e) => Err(format!("expected QUERY_NOT_FOUND (mapped to an empty value), got {}", show(e))),
            }
        })
        .await;

    // --- topics and routes before our topic exists ---
    steps
        .run("topic_list_before", GET_ALL_TOPIC_LIST, async {
            match TopicAdmin::fetch_all_topic_list(admin).await {
                Ok(l) if l.topic_list.iter().any(|t| t.as_str() == "TBW102") => {
                    Ok(format!("{} topics incl. TBW102", l.topic_list.len()))
                }
                Ok(l) => Err(format!("TBW102 (registered by the broker) missing from {:?}", l.topic_list)),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run("route_TBW102", GET_ROUTEINFO_BY_TOPIC, async {
            match route(admin, "TBW102").await? {
                Some(r) if perm_of(&r, &o.broker_name).is_some() => Ok(describe(&r)),
                Some(r) => Err(format!("no queue data of {}: {}", o.broker_name, describe(&r))),
                None => Err("TOPIC_NOT_EXIST".into()),
            }
        })
        .await;
    let unknown = format!("compat_missing_{}", o.run_id);
    steps
        .run("route_unknown_topic", GET_ROUTEINFO_BY_TOPIC, async {
            match route(admin, &unknown).await {
                Ok(None) => Ok("TOPIC_NOT_EXIST".into()),
                Ok(Some(r)) => Err(format!("unexpected route {}", describe(&r))),
                Err(e) => Err(format!("expected TOPIC_NOT_EXIST (17), got {e}")),
            }
        })
        .await;

    let Some(master) = master else {
        for (name, code) in [
            ("create_topic", "17 to the broker, then 103"),
            ("produce", "105, then 310 to the broker"),
            ("consume", "105, then 11 to the broker"),
            ("wipe_write_perm", WIPE_WRITE_PERM_OF_BROKER),
            ("delete_topic", "215 to the broker, 216"),
        ] {
            steps.skip(name, code, "no master broker registered");
        }
        return;
    };

    // --- our topic: create on the broker, which registers it with the name server ---
    let topic = format!("compat_{}", o.run_id);
    let created = steps
        .run("create_topic", "17 to the broker, then 103 broker->name server", async {
            let cfg = TopicConfig::with_queues(topic.as_str(), QUEUES, QUEUES);
            TopicAdmin::create_and_update_topic_config(admin, cs(master.clone()), cfg)
                .await
                .map(|_| format!("{topic} ({QUEUES} queues) on {master}"))
                .map_err(show)
        })
        .await;
    if !created {
        return;
    }
    let broker = o.broker_name.clone();
    steps
        .run(
            "route_after_create",
            GET_ROUTEINFO_BY_TOPIC,
            poll_route(admin, &topic, o.wait, |r| {
                let r = r.ok_or("TOPIC_NOT_EXIST")?;
                let q = r.queue_datas.iter().find(|q| q.broker_name == broker.as_str());
                let b = r.broker_datas.iter().find(|b| b.broker_name().as_str() == broker);
                match (q, b) {
                    (Some(q), Some(b))
                        if q.read_queue_nums == QUEUES
                            && q.write_queue_nums == QUEUES
                            && q.perm == PERM_READ | PERM_WRITE
                            && b.broker_addrs().get(&0).map(|a| a.as_str()) == Some(master.as_str()) =>
                    {
                        Ok(())
                    }
                    _ => Err(format!("not yet {QUEUES}/{QUEUES} perm 6 on {broker}@{master}: {}", describe(r))),
                }
            }),
        )
        .await;
    steps
        .run("topics_by_cluster", GET_TOPICS_BY_CLUSTER, async {
            match TopicAdmin::fetch_topics_by_cluster(admin, cs(o.cluster.clone())).await {
                Ok(l) if l.topic_list.iter().any(|t| t.as_str() == topic) => {
                    Ok(format!("{} topics in {}", l.topic_list.len(), o.cluster))
                }
                Ok(l) => Err(format!("{topic} missing from {:?}", l.topic_list)),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run("topic_list_after", GET_ALL_TOPIC_LIST, async {
            match TopicAdmin::fetch_all_topic_list(admin).await {
                Ok(l) if l.topic_list.iter().any(|t| t.as_str() == topic) => Ok(format!("{} topics", l.topic_list.len())),
                Ok(l) => Err(format!("{topic} missing from {:?}", l.topic_list)),
                Err(e) => Err(show(e)),
            }
        })
        .await;

    // orderTopicConf: with orderMessageEnable=true the route carries KV ORDER_TOPIC_CONFIG/<topic>.
    let order_conf = format!("{}:{QUEUES}", o.broker_name);
    steps
        .run(
            "route_order_topic_conf",
            &format!("{UPDATE_NAMESRV_CONFIG}, {PUT_KV_CONFIG}, {GET_ROUTEINFO_BY_TOPIC}, {DELETE_KV_CONFIG}"),
            async {
                let old = namesrv_config(admin, &ns)
                    .await?
                    .get("orderMessageEnable")
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "false".into());
                RouteAdmin::create_and_update_kv_config(admin, cs(ORDER_NAMESPACE), cs(topic.clone()), cs(order_conf.clone()))
                    .await
                    .map_err(show)?;
                set_namesrv_config(admin, &ns, "orderMessageEnable", "true").await?;
                let with = route(admin, &topic).await;
                set_namesrv_config(admin, &ns, "orderMessageEnable", &old).await?;
                RouteAdmin::delete_kv_config(admin, cs(ORDER_NAMESPACE), cs(topic.clone())).await.map_err(show)?;
                let without = route(admin, &topic).await;
                let with = with?.ok_or("TOPIC_NOT_EXIST with orderMessageEnable=true")?;
                if with.order_topic_conf.as_deref() != Some(order_conf.as_str()) {
                    return Err(format!("orderMessageEnable=true: orderTopicConf {:?}, expected {order_conf}", with.order_topic_conf));
                }
                let without = without?.ok_or("TOPIC_NOT_EXIST after restoring")?;
                if without.order_topic_conf.is_some() {
                    return Err(format!("after restoring: orderTopicConf {:?}, expected none", without.order_topic_conf));
                }
                Ok(format!("orderTopicConf={order_conf} only while orderMessageEnable=true"))
            },
        )
        .await;

    // --- produce and consume through the routes the name server hands out ---
    let prefix = format!("compat-{}-", o.run_id);
    let mut producer = DefaultMQProducer::builder(rt.clone())
        .producer_group(format!("compat_pg_{}", o.run_id))
        .name_server_addr(o.namesrv.clone())
        .build();
    let produced = steps
        .run("produce", "105, then 310 to the broker", async {
            producer.start().await.map_err(show)?;
            let mut ok = 0;
            let mut first_error = None;
            for i in 0..o.count {
                let body = format!("{prefix}{i}");
                let msg = Message::builder()
                    .topic(topic.as_str())
                    .tags("COMPAT")
                    .body_slice(body.as_bytes())
                    .build()
                    .map_err(|e| format!("message {i}: {}", show(e)))?;
                match producer.send_with_timeout(msg, 3000).await {
                    Ok(Some(r)) if r.send_status == SendStatus::SendOk => ok += 1,
                    Ok(other) => {
                        first_error.get_or_insert(format!("message {i}: {other:?}"));
                    }
                    Err(e) => {
                        first_error.get_or_insert(format!("message {i}: {}", show(e)));
                    }
                }
            }
            if ok == o.count {
                Ok(format!("{ok}/{} SEND_OK", o.count))
            } else {
                Err(format!("{ok}/{} SEND_OK, first problem: {}", o.count, first_error.unwrap_or_default()))
            }
        })
        .await;
    producer.shutdown().await;

    if produced {
        let seen = Arc::new(Mutex::new(HashSet::new()));
        let deliveries = Arc::new(AtomicUsize::new(0));
        let mut consumer = DefaultMQPushConsumer::builder(rt.clone())
            .consumer_group(format!("compat_cg_{}", o.run_id))
            .name_server_addr(o.namesrv.clone())
            .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset)
            .consume_message_batch_max_size(CONSUME_BATCH)
            .build();
        steps
            .run("consume", "105, then 11 to the broker", async {
                consumer.subscribe(topic.as_str(), "*").await.map_err(show)?;
                consumer.register_message_listener_concurrently(Counting {
                    prefix: prefix.clone(),
                    seen: seen.clone(),
                    deliveries: deliveries.clone(),
                });
                consumer.start().await.map_err(show)?;
                let deadline = Instant::now() + o.wait;
                loop {
                    let n = seen.lock().map(|s| s.len()).unwrap_or(0);
                    if n >= o.count {
                        return Ok(format!(
                            "{n}/{} distinct messages in {} deliveries",
                            o.count,
                            deliveries.load(Ordering::SeqCst)
                        ));
                    }
                    if Instant::now() >= deadline {
                        return Err(format!("only {n}/{} distinct messages after {} s", o.count, o.wait.as_secs()));
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
            .await;
        consumer.shutdown().await;
    } else {
        steps.skip("consume", "105, then 11 to the broker", "produce failed");
    }

    steps
        .run("topic_route", GET_ROUTEINFO_BY_TOPIC, async {
            let r = route(admin, &topic).await?.ok_or("TOPIC_NOT_EXIST")?;
            let writable: u32 = r.queue_datas.iter().map(|q| q.write_queue_nums).sum();
            if writable == QUEUES {
                Ok(describe(&r))
            } else {
                Err(format!("{writable} write queues, expected {QUEUES}: {}", describe(&r)))
            }
        })
        .await;
    steps
        .run("topic_cluster_list", &format!("{GET_ROUTEINFO_BY_TOPIC}, {GET_BROKER_CLUSTER_INFO}"), async {
            match RouteAdmin::get_cluster_list(admin, topic.clone()).await {
                Ok(set) if set.iter().any(|c| c.as_str() == o.cluster) => Ok(format!("{set:?}")),
                Ok(set) => Err(format!("{} missing from {set:?}", o.cluster)),
                Err(e) => Err(show(e)),
            }
        })
        .await;

    // --- write permission, name-server side only ---
    steps
        .run("wipe_write_perm", WIPE_WRITE_PERM_OF_BROKER, async {
            match BrokerAdmin::wipe_write_perm_of_broker(admin, ns.clone(), cs(o.broker_name.clone())).await {
                Ok(n) if n >= 1 => Ok(format!("wipeTopicCount={n}")),
                Ok(n) => Err(format!("wipeTopicCount={n}, expected at least 1 (our topic)")),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run(
            "route_perm_wiped",
            GET_ROUTEINFO_BY_TOPIC,
            poll_route(admin, &topic, Duration::from_secs(5), |r| {
                let r = r.ok_or("TOPIC_NOT_EXIST")?;
                match perm_of(r, &broker) {
                    Some(p) if p & PERM_WRITE == 0 && p & PERM_READ != 0 => Ok(()),
                    _ => Err(format!("write bit still set or read bit lost: {}", describe(r))),
                }
            }),
        )
        .await;
    steps
        .run("add_write_perm", ADD_WRITE_PERM_OF_BROKER, async {
            match BrokerAdmin::add_write_perm_of_broker(admin, ns.clone(), cs(o.broker_name.clone())).await {
                Ok(n) if n >= 1 => Ok(format!("addTopicCount={n}")),
                Ok(n) => Err(format!("addTopicCount={n}, expected at least 1 (our topic)")),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run(
            "route_perm_restored",
            GET_ROUTEINFO_BY_TOPIC,
            poll_route(admin, &topic, Duration::from_secs(5), |r| {
                let r = r.ok_or("TOPIC_NOT_EXIST")?;
                match perm_of(r, &broker) {
                    Some(p) if p == PERM_READ | PERM_WRITE => Ok(()),
                    _ => Err(format!("perm not 6: {}", describe(r))),
                }
            }),
        )
        .await;

    // --- delete the topic (broker first, then the name server) ---
    steps
        .run("delete_topic", "215 to the broker, then 216", async {
            TopicAdmin::delete_topic(admin, cs(topic.clone()), cs(o.cluster.clone()))
                .await
                .map(|_| format!("{topic} deleted in {}", o.cluster))
                .map_err(show)
        })
        .await;
    steps
        .run(
            "route_after_delete",
            GET_ROUTEINFO_BY_TOPIC,
            poll_route(admin, &topic, Duration::from_secs(10), |r| match r {
                None => Ok(()),
                Some(r) if r.queue_datas.is_empty() => Ok(()),
                Some(r) => Err(format!("route still served: {}", describe(r))),
            }),
        )
        .await;
    steps
        .run("topic_list_after_delete", GET_ALL_TOPIC_LIST, async {
            match TopicAdmin::fetch_all_topic_list(admin).await {
                Ok(l) if l.topic_list.iter().any(|t| t.as_str() == topic) => Err(format!("{topic} still listed")),
                Ok(l) => Ok(format!("{} topics, {topic} gone", l.topic_list.len())),
                Err(e) => Err(show(e)),
            }
        })
        .await;
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

fn main() {
    let mode = match std::env::args().nth(1).as_deref() {
        Some("auth") => Mode::Auth(auth::parse_opts(std::env::args().skip(2), run_id())),
        Some("tls") => Mode::Tls(tls::parse_opts(std::env::args().skip(2), run_id())),
        _ => Mode::Checks(parse_opts()),
    };
    // Both of rustls' providers are compiled in (through different dependencies): choose one,
    // or the client's TLS connections cannot build their configuration.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    // The client's futures are deep; give every thread a generous stack.
    let code = std::thread::Builder::new()
        .name("compat-main".into())
        .stack_size(STACK_SIZE)
        .spawn(move || run(mode))
        .expect("spawn main thread")
        .join()
        .unwrap_or(1);
    std::process::exit(code);
}

fn run(mode: Mode) -> i32 {
    // Listener callbacks run on the runtime's bounded blocking lane, sized from the parallelism;
    // sized from 2 cores, a burst of 100 messages overflows it and is redelivered ~10 s later.
    let mut cfg = RuntimeConfig::for_parallelism("compat-client", PARALLELISM);
    cfg.thread_stack_size = Some(STACK_SIZE);
    let owner = match RuntimeOwner::plan(cfg).map_err(show).and_then(|plan| plan.build().map_err(show)) {
        Ok(owner) => owner,
        Err(e) => {
            println!("FAIL {CLIENT}: step runtime (request code none) failed: {}", show(e));
            return 1;
        }
    };
    let rt = match ClientRuntime::try_new(
        owner.root_context().component("compat-client"),
        ClientRuntimeConfig::default(),
        TelemetryHandle::noop(),
    ) {
        Ok(rt) => rt,
        Err(e) => {
            println!("FAIL {CLIENT}: step runtime (request code none) failed: {}", show(e));
            return 1;
        }
    };
    let client_rt = rt.clone();
    let code = owner.block_on(async move {
        let mut steps = Steps::default();
        match &mode {
            Mode::Checks(o) => {
                let mut admin = DefaultMQAdminExt::with_timeout(client_rt.clone(), Duration::from_secs(5));
                admin.set_namesrv_addr(o.namesrv.as_str());
                admin.client_config_mut().set_instance_name(cs(format!("compat-admin-{}", o.run_id)));
                let started = Instant::now();
                let ok = match admin.start().await {
                    Ok(()) => steps.record("admin_start", "none", started, Ok("admin client started".into())),
                    Err(e) => steps.record("admin_start", "none", started, Err(show(e))),
                };
                match (&o.restarts, ok) {
                    (Some(r), true) => restarts::run(&admin, &client_rt, o, r, &mut steps).await,
                    (None, true) => checks(&admin, &client_rt, o, &mut steps).await,
                    _ => {}
                }
                admin.shutdown().await;
            }
            Mode::Auth(o) => auth::checks(&client_rt, o, &mut steps).await,
            Mode::Tls(o) => tls::checks(&client_rt, o, &mut steps).await,
        }
        let report = client_rt.shutdown().await;
        if !report.is_healthy() {
            eprintln!("note: client runtime shutdown report: {}", report.to_json());
        }
        println!(
            "{CLIENT}: {} step(s) passed, {} failed{}",
            steps.passed,
            steps.failed.len(),
            if steps.failed.is_empty() { String::new() } else { format!(": {}", steps.failed.join(", ")) }
        );
        i32::from(!steps.failed.is_empty())
    });
    drop(rt);
    let _ = owner.shutdown_runtime_blocking();
    code
}
