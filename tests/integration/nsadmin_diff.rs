//! `nsadmin diff` over servers in this process: what it names when they disagree, its exit
//! codes, and the node-local config keys it leaves out unless `--compareAll`.

use namesrv::protocol::code::response;

use crate::harness::{Options, TestClient, TestServer, register, register_master};
use crate::nsadmin::{dead_addr, nsadmin};

/// Puts a KV entry on one server.
async fn put_kv(server: &TestServer, ns: &str, key: &str, value: &str) {
    let mut c = server.client().await;
    let resp = crate::harness::put_kv(&mut c, ns, key, value).await;
    assert_eq!(resp.code, response::SUCCESS);
}

/// The line naming the node-local keys a default test server lists (its paths differ from
/// every other's: each has its own directory).
const NODE_LOCAL_LINE: &str =
    "not compared (node-local): bindAddress, configStorePath, kvConfigPath, listenPort";

/// `n` servers, each with broker-a (TopicA, TopicB; data-version counter `counter`) and one
/// KV entry `(namespace, key, value)`; the broker connections keep the registrations alive.
async fn nodes_with_broker_a(
    n: usize,
    counter: i64,
    (ns, key, value): (&str, &str, &str),
) -> (Vec<TestServer>, Vec<TestClient>) {
    let mut servers = Vec::new();
    let mut brokers = Vec::new();
    for _ in 0..n {
        let s = TestServer::start().await;
        let mut broker = s.client().await;
        let topics = ["TopicA", "TopicB"];
        register(
            &mut broker,
            "broker-a",
            "127.0.0.1:1",
            "0",
            counter,
            &topics,
        )
        .await;
        put_kv(&s, ns, key, value).await;
        servers.push(s);
        brokers.push(broker);
    }
    (servers, brokers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_names_the_nodes_that_differ() {
    let (servers, mut brokers) =
        nodes_with_broker_a(3, 1, ("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:8")).await;
    let [a, b, c] = &servers[..] else {
        unreachable!()
    };
    // broker-b's registration reached a and b only.
    for s in [a, b] {
        let mut broker = s.client().await;
        register_master(
            &mut broker,
            "broker-b",
            "127.0.0.1:2",
            &["TopicA", "TopicC"],
        )
        .await;
        brokers.push(broker);
    }
    // b holds another KV value; a had broker-a's write permission wiped.
    put_kv(b, "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4").await;
    let r = nsadmin(&format!("wipeWritePerm -n {} -b broker-a", a.addr)).await;
    assert_eq!(r.code, 0, "{r:?}");

    let list = format!("{};{};{}", a.addr, b.addr, c.addr);
    let args = format!("diff -n {list} -s ORDER_TOPIC_CONFIG");
    let r = nsadmin(&args).await;
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert_eq!(r.err, "");
    let (a, b, c) = (a.addr, b.addr, c.addr);
    let expected = format!(
        "name servers: {a}, {b}, {c}
{NODE_LOCAL_LINE}

clusters: 1 differ
  DefaultCluster
    {a}, {b}: broker-a, broker-b
    {c}: broker-a

brokers: 1 differ
  broker-b
    {a}, {b}: cluster DefaultCluster, {{0=127.0.0.1:2}}
    {c}: (absent)

routes: 3 differ
  TopicA
    {a}: broker-a r4 w4 perm 4 (R--); broker-b r4 w4 perm 6 (RW-)
    {b}: broker-a r4 w4 perm 6 (RW-); broker-b r4 w4 perm 6 (RW-)
    {c}: broker-a r4 w4 perm 6 (RW-)
  TopicB
    {a}: broker-a r4 w4 perm 4 (R--)
    {b}, {c}: broker-a r4 w4 perm 6 (RW-)
  TopicC
    {a}, {b}: broker-b r4 w4 perm 6 (RW-)
    {c}: (absent)

kv ORDER_TOPIC_CONFIG: 1 differ
  TopicA
    {a}, {c}: broker-a:8
    {b}: broker-a:4
"
    );
    assert!(r.out.starts_with(&expected), "{}", r.out);
    let summary = r.out.lines().last().unwrap();
    assert!(summary.starts_with("differ: 6 of "), "{summary}");

    let r = nsadmin(&format!("diff -n {list} -s ORDER_TOPIC_CONFIG --json")).await;
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["agree"], false);
    assert_eq!(v["differences"].as_array().unwrap().len(), 6);
    assert_eq!(v["differences"][1]["kind"], "brokers");
    assert_eq!(
        v["differences"][1]["values"][1]["value"],
        serde_json::Value::Null
    );
    assert_eq!(v["nodeLocal"].as_array().unwrap().len(), 4, "{v}");

    // -t narrows the routes compared.
    let r = nsadmin(&format!("diff -n {list} -t TopicC")).await;
    assert_eq!(r.code, 1);
    assert!(!r.out.contains("TopicB"), "{}", r.out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_exit_codes_agree_and_unreachable() {
    let (servers, _brokers) = nodes_with_broker_a(2, 7, ("NS", "k", "v")).await;
    let list = format!("{};{}", servers[0].addr, servers[1].addr);
    let r = nsadmin(&format!("diff -n {list} -s NS --dataVersion")).await;
    assert_eq!((r.code, r.err.as_str()), (0, ""), "{}", r.out);
    assert!(
        r.out.contains(
            "\nagree (clusters 1, brokers 1, data versions 1, routes 2, kv NS 1, config "
        ),
        "{}",
        r.out
    );

    // --compareAll compares the per-node paths too; --ignoreConfig still leaves keys out.
    let r = nsadmin(&format!("diff -n {list} --compareAll")).await;
    assert_eq!(r.code, 1, "{}", r.out);
    assert!(
        r.out.contains("\nconfig: 2 differ\n  configStorePath\n"),
        "{}",
        r.out
    );
    assert!(!r.out.contains("node-local"), "{}", r.out);
    let ignored = "--ignoreConfig kvConfigPath,configStorePath";
    let r = nsadmin(&format!("diff -n {list} --compareAll {ignored}")).await;
    assert_eq!(r.code, 0, "{}", r.out);

    let dead = dead_addr();
    let r = nsadmin(&format!("diff -n {list};{dead}")).await;
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.out.contains(&format!(
            "not compared on {dead}: clusters, brokers, routes, config"
        )),
        "{r:?}"
    );
    assert!(
        r.err.starts_with(&format!(
            "nsadmin: {dead}: GET_BROKER_CLUSTER_INFO (106): connect failed"
        )),
        "{r:?}"
    );

    // A refused request leaves out only its kind: with the topic list disabled on one node,
    // routes are not compared but everything else is.
    let second = servers[1].addr.to_string();
    let r = nsadmin(&format!(
        "updateNamesrvConfig -n {second} -k enableAllTopicList -v false"
    ))
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    let r = nsadmin(&format!(
        "diff -n {list} -s NS --ignoreConfig enableAllTopicList"
    ))
    .await;
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.out
            .contains(&format!("not compared on {second}: routes (see stderr)")),
        "{r:?}"
    );
    assert!(
        r.out
            .contains("\nagree where compared (clusters 1, brokers 1, routes 2, kv NS 1, config "),
        "{r:?}"
    );
    assert!(
        r.err.starts_with(&format!(
            "nsadmin: {second}: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): CODE: 1  DESC: disable"
        )),
        "{r:?}"
    );

    let r = nsadmin(&format!("diff -n {}", servers[0].addr)).await;
    assert_eq!(r.code, 1, "one name server is a usage error: {r:?}");
}

/// A server whose node-local keys all differ from every other's: the `i`th of a set.
async fn node_with_own_identity(i: usize) -> TestServer {
    let properties = format!(
        "listenPort={}\nhttpListenPort={}\nrouteSnapshotPath=/nonexistent/{i}/routes.snapshot\n",
        19_100 + i,
        18_100 + i
    );
    TestServer::start_with(Options {
        properties,
        rocketmq_home: Some(format!("/opt/rocketmq-{i}")),
        ..Options::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_leaves_node_local_keys_out_unless_compare_all() {
    let mut servers = Vec::new();
    for i in 0..3 {
        servers.push(node_with_own_identity(i).await);
    }
    let addrs: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    let list = addrs.join(";");
    let keys = [
        "configStorePath",
        "httpListenPort",
        "kvConfigPath",
        "listenPort",
        "rocketmqHome",
        "routeSnapshotPath",
    ];

    let r = nsadmin(&format!("diff -n {list}")).await;
    assert_eq!((r.code, r.err.as_str()), (0, ""), "{}", r.out);
    let line = format!(
        "not compared (node-local): bindAddress, {}\n",
        keys.join(", ")
    );
    assert!(r.out.contains(&line), "{}", r.out);
    assert!(
        r.out.lines().last().unwrap().starts_with("agree ("),
        "{}",
        r.out
    );

    let r = nsadmin(&format!("diff -n {list} --compareAll")).await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.out.contains("\nconfig: 6 differ\n"), "{}", r.out);
    for key in keys {
        assert!(r.out.contains(&format!("\n  {key}\n")), "{key}: {}", r.out);
    }

    // A key the cluster shares is still compared by default.
    let first = &addrs[0];
    let update = format!("updateNamesrvConfig -n {first} -k orderMessageEnable -v true");
    assert_eq!(nsadmin(&update).await.code, 0);
    let r = nsadmin(&format!("diff -n {list}")).await;
    assert_eq!(r.code, 1, "{r:?}");
    let expected = format!(
        "\nconfig: 1 differ\n  orderMessageEnable\n    {first}: true\n    {}, {}: false\n",
        addrs[1], addrs[2]
    );
    assert!(r.out.contains(&expected), "{}", r.out);
}
