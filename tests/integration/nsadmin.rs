//! The built `nsadmin` binary against our server: mqadmin's outputs byte for byte, writes
//! that reach every name server, exit codes and stderr lines, signing (`diff` is in
//! `nsadmin_diff`).
//!
//! Each run gets a clean environment (no `NAMESRV_ADDR`, `ROCKETMQ_HOME`, …) unless a test
//! sets one, and runs on a blocking thread so the in-process servers keep answering.

use std::net::SocketAddr;
use std::process::Command;

use bytes::BytesMut;
use namesrv::protocol::code::{request, response};
use namesrv::protocol::{
    FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, signature, split_frame,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::harness::{TestClient, TestServer, get_kv, register_master, route};

const BIN: &str = env!("CARGO_BIN_EXE_nsadmin");

/// What one run printed and returned.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) out: String,
    pub(crate) err: String,
    pub(crate) code: i32,
}

/// Runs `nsadmin` with `line` split at spaces (an argument with spaces needs [`nsadmin_argv`]).
async fn nsadmin_env(line: &str, envs: &[(&str, &str)]) -> Run {
    nsadmin_argv(&line.split_whitespace().collect::<Vec<_>>(), envs).await
}

async fn nsadmin_argv(args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for var in [
        "NAMESRV_ADDR",
        "ROCKETMQ_HOME",
        "NSADMIN_CREDENTIALS",
        "ROCKETMQ_SERIALIZE_TYPE",
        "JAVA_OPT",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let output = tokio::task::spawn_blocking(move || cmd.output().expect("nsadmin runs"))
        .await
        .unwrap();
    Run {
        out: String::from_utf8(output.stdout).unwrap(),
        err: String::from_utf8(output.stderr).unwrap(),
        code: output.status.code().expect("exited"),
    }
}

pub(crate) async fn nsadmin(line: &str) -> Run {
    nsadmin_env(line, &[]).await
}

/// Runs nsadmin with `line` and asserts that it succeeds printing exactly `out`.
async fn prints(line: &str, out: &str) {
    let r = nsadmin(line).await;
    assert_eq!((r.code, r.out.as_str()), (0, out), "{r:?}");
}

/// A loopback address where nothing listens.
pub(crate) fn dead_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr.to_string()
}

/// A server with broker-a (TopicA 8/8, TopicB 4/4) registered; keep the client alive.
async fn with_broker() -> (TestServer, TestClient) {
    let (server, mut broker) = TestServer::with_client("").await;
    register_master(
        &mut broker,
        "broker-a",
        "127.0.0.1:1",
        &["TopicA", "TopicB"],
    )
    .await;
    (server, broker)
}

/// The perm of the first queue data of a route answer.
fn route_perm(resp: &RemotingCommand) -> i64 {
    let v: serde_json::Value = serde_json::from_slice(resp.body_bytes()).unwrap();
    v["queueDatas"][0]["perm"].as_i64().unwrap()
}

async fn kv_value(addr: SocketAddr, ns: &str, key: &str) -> Option<String> {
    let mut c = TestClient::connect(addr).await;
    let resp = get_kv(&mut c, ns, key).await;
    resp.ext("value").map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_commands_print_mqadmins_formats() {
    let (server, _broker) = with_broker().await;
    let n = server.addr.to_string();

    let r = nsadmin(&format!("topicRoute -n {} -t TopicB", n)).await;
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.out,
        "{\n\t\"brokerDatas\":[\n\t\t{\n\t\t\t\"brokerAddrs\":{0:\"127.0.0.1:1\"\n\t\t\t},\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"cluster\":\"DefaultCluster\",\n\t\t\t\"enableActingMaster\":false\n\t\t}\n\t],\n\t\"filterServerTable\":{},\n\t\"queueDatas\":[\n\t\t{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"perm\":6,\n\t\t\t\"readQueueNums\":4,\n\t\t\t\"topicSysFlag\":0,\n\t\t\t\"writeQueueNums\":4\n\t\t}\n\t]\n}\n"
    );
    assert_eq!(r.err, "");

    let r = nsadmin(&format!("topicroute -n {} -t TopicB -l", n)).await;
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.out.lines().nth(1).unwrap().trim_end(),
        format!(
            "{:<45} {:<32} {:<50} {:<10} {:<11} {}",
            "DefaultCluster", "broker-a", "{0=127.0.0.1:1}", 4, 4, 6
        )
    );

    let r = nsadmin(&format!("topicRoute -n {} -t TopicB --json", n)).await;
    let v: serde_json::Value = serde_json::from_str(&r.out).expect("--json is real JSON");
    assert_eq!(v["brokerDatas"][0]["brokerAddrs"]["0"], "127.0.0.1:1");
    assert_eq!(v["queueDatas"][0]["perm"], 6);

    let r = nsadmin(&format!("topicList -n {}", n)).await;
    assert_eq!(r.code, 0, "{r:?}");
    let mut topics: Vec<&str> = r.out.lines().collect();
    topics.sort();
    assert_eq!(topics, ["TopicA", "TopicB"]);
    let v: serde_json::Value =
        serde_json::from_str(&nsadmin(&format!("topicList -n {} --json", n)).await.out).unwrap();
    assert_eq!(v["topicList"], serde_json::json!(["TopicA", "TopicB"]));

    prints(
        &format!("topicClusterList -n {} -t TopicA", n),
        "DefaultCluster\n",
    )
    .await;

    // The broker address is fake: its row is printed with mqadmin's placeholders, and the
    // failed GET_BROKER_RUNTIME_INFO makes the exit code 2.
    let r = nsadmin(&format!("clusterList -n {}", n)).await;
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.out
            .starts_with("#Cluster Name           #Broker Name            #BID  #Addr"),
        "{r:?}"
    );
    assert!(
        r.out
            .contains("\nDefaultCluster          broker-a                0     127.0.0.1:1 "),
        "{r:?}"
    );
    assert_eq!(r.err.lines().count(), 1, "{r:?}");
    assert!(
        r.err
            .starts_with("nsadmin: 127.0.0.1:1: GET_BROKER_RUNTIME_INFO (28): "),
        "{r:?}"
    );
    let r = nsadmin(&format!("clusterList -n {} --json", n)).await;
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["clusterAddrTable"]["DefaultCluster"][0], "broker-a");
    assert!(v["brokerRuntimeStats"]["127.0.0.1:1"].is_null());

    let r = nsadmin(&format!("getNamesrvConfig -n {}", n)).await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.out.starts_with(&format!("============{n}============\n")),
        "{r:?}"
    );
    assert!(
        r.out
            .contains(&format!("{:<50}=  false\n", "orderMessageEnable")),
        "{r:?}"
    );
    let v: serde_json::Value = serde_json::from_str(
        &nsadmin(&format!("getNamesrvConfig -n {} --json", n))
            .await
            .out,
    )
    .unwrap();
    assert_eq!(v[&n]["orderMessageEnable"], "false");

    // Binary headers work too.
    let r = nsadmin_env(
        &format!("topicClusterList -n {} -t TopicA", n),
        &[("ROCKETMQ_SERIALIZE_TYPE", "ROCKETMQ")],
    )
    .await;
    assert_eq!((r.code, r.out.as_str()), (0, "DefaultCluster\n"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_exit_non_zero_with_one_stderr_line() {
    let (server, _broker) = with_broker().await;
    let n = server.addr.to_string();

    let r = nsadmin(&format!("topicRoute -n {} -t NoSuchTopic", n)).await;
    assert_eq!((r.code, r.out.as_str()), (3, ""), "{r:?}");
    assert_eq!(r.err.lines().count(), 1, "{r:?}");
    assert!(
        r.err.starts_with(&format!(
            "nsadmin: {n}: GET_ROUTEINFO_BY_TOPIC (105): CODE: 17  DESC: No topic route info"
        )),
        "{r:?}"
    );

    let dead = dead_addr();
    let r = nsadmin(&format!("topicList -n {}", dead)).await;
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.err.starts_with(&format!(
            "nsadmin: {dead}: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): connect failed"
        )),
        "{r:?}"
    );

    // A read skips an unreachable name server, as mqadmin's client does.
    prints(
        &format!("topicClusterList -n {dead};{n} -t TopicA"),
        "DefaultCluster\n",
    )
    .await;

    // A server that accepts and never answers: a timeout.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    let hold = tokio::spawn(async move {
        let (_conn, _) = silent.accept().await.unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    });
    let r = nsadmin(&format!(
        "getNamesrvConfig -n {} --timeout 300",
        silent_addr
    ))
    .await;
    hold.abort();
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        r.err,
        format!("nsadmin: {silent_addr}: GET_NAMESRV_CONFIG (319): no answer within 300 ms\n")
    );

    // Refused: a black-listed key.
    let r = nsadmin(&format!(
        "updateNamesrvConfig -n {} -k configStorePath -v /tmp/x",
        n
    ))
    .await;
    assert_eq!((r.code, r.out.as_str()), (3, ""), "{r:?}");
    assert_eq!(
        r.err,
        format!(
            "nsadmin: {n}: UPDATE_NAMESRV_CONFIG (318): CODE: 16  DESC: Can not update config in black list.\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_reach_every_name_server() {
    let (a, _broker_a) = with_broker().await;
    let (b, _broker_b) = with_broker().await;
    let both = format!("{};{}", a.addr, b.addr);

    // Values are trimmed, as mqadmin trims them.
    let kv_args = [
        "updateKvConfig",
        "-n",
        &both,
        "-s",
        "NS",
        "-k",
        "K",
        "-v",
        " V1 ",
    ];
    let r = nsadmin_argv(&kv_args, &[]).await;
    assert_eq!(
        (r.code, r.out.as_str(), r.err.as_str()),
        (0, "create or update kv config to namespace success.\n", "")
    );
    for s in [&a, &b] {
        assert_eq!(kv_value(s.addr, "NS", "K").await.as_deref(), Some("V1"));
    }
    prints(
        &format!("deleteKvConfig -n {} -s NS -k K", both),
        "delete kv config from namespace success.\n",
    )
    .await;
    assert_eq!(kv_value(b.addr, "NS", "K").await, None);

    prints(
        &format!("updateOrderConf -n {} -t TopicA -m put -v broker-a:4", both),
        "update orderConf success. topic=[TopicA], orderConf=[broker-a:4]",
    )
    .await;
    prints(
        &format!("updateOrderConf -n {} -t TopicA -m get", b.addr),
        "get orderConf success. topic=[TopicA], orderConf=[broker-a:4] ",
    )
    .await;
    let r = nsadmin(&format!(
        "updateOrderConf -n {} -t TopicA -m get --json",
        b.addr
    ))
    .await;
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"topic": "TopicA", "orderConf": "broker-a:4"})
    );
    prints(
        &format!("updateOrderConf -n {} -t TopicA -m delete", both),
        "delete orderConf success. topic=[TopicA]",
    )
    .await;
    let r = nsadmin(&format!("updateOrderConf -n {} -t TopicA -m get", both)).await;
    assert_eq!(r.code, 3, "not found is a refusal: {r:?}");
    let r = nsadmin(&format!("updateOrderConf -n {} -t TopicA -m put", both)).await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err
            .starts_with("please set orderConf with option -v.\nusage: nsadmin updateOrderConf"),
        "{r:?}"
    );

    let r = nsadmin(&format!(
        "updateNamesrvConfig -n {} -k orderMessageEnable -v true",
        both
    ))
    .await;
    assert_eq!(
        r.out,
        format!(
            "update name server config success![{}, {}]\norderMessageEnable : true\n",
            a.addr, b.addr
        )
    );
    let r = nsadmin_env(
        "updateNamesrvConfig -k orderMessageEnable -v false",
        &[("NAMESRV_ADDR", &both)],
    )
    .await;
    assert_eq!(
        r.out, "update name server config success!\norderMessageEnable : false\n",
        "{r:?}"
    );

    // One unreachable name server: the others are still changed, its line says Failed.
    let dead = dead_addr();
    let three = format!("{both};{dead}");
    let r = nsadmin(&format!("wipeWritePerm -n {} -b broker-a", three)).await;
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        r.out,
        format!(
            "wipe write perm of broker[broker-a] in name server[{}] OK, 2\nwipe write perm of broker[broker-a] in name server[{}] OK, 2\nwipe write perm of broker[broker-a] in name server[{dead}] Failed\n",
            a.addr, b.addr
        )
    );
    assert_eq!(r.err.lines().count(), 1, "{r:?}");
    let mut c = b.client().await;
    assert!(route_perm(&route(&mut c, "TopicA").await) == 4);
    let r = nsadmin(&format!("addWritePerm -n {} -b broker-a", both)).await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.out.starts_with(&format!(
        "add write perm of broker[broker-a] in name server[{}] OK, 2\n",
        a.addr
    )));
    assert!(route_perm(&route(&mut c, "TopicA").await) == 6);

    let r = nsadmin(&format!(
        "deleteTopic -n {} -t TopicB -c DefaultCluster",
        both
    ))
    .await;
    assert_eq!(
        (r.code, r.out.as_str()),
        (0, "delete topic [TopicB] from NameServer success.\n"),
        "{r:?}"
    );
    assert!(r.err.contains("brokers were not touched"), "{r:?}");
    assert_eq!(
        route(&mut c, "TopicB").await.code,
        response::TOPIC_NOT_EXIST
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_and_help() {
    let r = nsadmin("").await;
    assert_eq!(r.code, 0);
    assert!(
        r.out
            .starts_with("The most commonly used nsadmin commands are:\n")
    );
    assert_eq!(nsadmin("--help").await.out, r.out);
    let r = nsadmin("help wipeWritePerm").await;
    assert_eq!(r.code, 0);
    assert!(
        r.out.starts_with("usage: nsadmin wipeWritePerm -b <arg>"),
        "{r:?}"
    );
    let r = nsadmin("topicRoute -h").await;
    assert_eq!(r.code, 0);
    assert!(r.out.starts_with("usage: nsadmin topicRoute"), "{r:?}");

    let r = nsadmin("topicRoute -n 127.0.0.1:1").await;
    assert_eq!(
        (r.code, r.out.as_str()),
        (1, ""),
        "usage errors go to stderr"
    );
    assert!(
        r.err
            .starts_with("Missing required option: t\nusage: nsadmin topicRoute"),
        "{r:?}"
    );
    let r = nsadmin("topicRoute -t T --bogus").await;
    assert_eq!(r.code, 1);
    assert!(r.err.starts_with("Unrecognized option: --bogus\n"), "{r:?}");
    let r = nsadmin("noSuchCommand").await;
    assert_eq!(r.code, 1);
    assert!(
        r.err
            .starts_with("The sub command noSuchCommand not exist."),
        "{r:?}"
    );
    let r = nsadmin("topicList").await;
    assert_eq!(r.code, 1, "no -n and no NAMESRV_ADDR: {r:?}");
    let r = nsadmin("updateKvConfig -n 127.0.0.1:1 -s a -k b -v c --json").await;
    assert_eq!(r.code, 1, "--json is for read commands only: {r:?}");
}

/// Accepts one connection, answers every request with SUCCESS and hands the requests back.
async fn recording_server() -> (String, tokio::task::JoinHandle<Vec<RemotingCommand>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut buf = BytesMut::new();
        let mut seen = Vec::new();
        loop {
            while let Some(frame) = split_frame(&mut buf, FrameLimits::default()).unwrap() {
                let (req, _) = decode_frame(frame).unwrap();
                let mut resp = RemotingCommand::success();
                resp.opaque = req.opaque;
                let mut out = BytesMut::new();
                encode_frame(&resp, SerializeType::Json, &mut out);
                conn.write_all(&out).await.unwrap();
                seen.push(req);
            }
            if conn.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                return seen;
            }
        }
    });
    (addr, task)
}

fn assert_signed(req: &RemotingCommand, access_key: &str, secret: &str) {
    let fields = req
        .ext_fields
        .as_ref()
        .expect("signed requests have ext fields");
    assert_eq!(fields.get(signature::ACCESS_KEY), Some(access_key));
    let content = signature::content(fields.iter(), req.body_bytes(), &[]);
    assert!(
        signature::verify(secret, &content, fields.get(signature::SIGNATURE).unwrap()),
        "{req:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_signed_from_tools_yml_or_an_explicit_file() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("conf")).unwrap();
    std::fs::write(
        home.path().join("conf/tools.yml"),
        "accessKey: rocketmq2\nsecretKey: 12345678\n",
    )
    .unwrap();
    let home_var = home.path().to_str().unwrap();

    let (addr, seen) = recording_server().await;
    let r = nsadmin_env(
        &format!(
            "updateKvConfig -n {} -s ORDER_TOPIC_CONFIG -k TopicA -v broker-a:4",
            addr
        ),
        &[("ROCKETMQ_HOME", home_var)],
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    let reqs = seen.await.unwrap();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].code, request::PUT_KV_CONFIG);
    assert_eq!(reqs[0].version, 479);
    // The signature Java's `AclClientRPCHook` computes for this request.
    assert_eq!(
        reqs[0].ext(signature::SIGNATURE),
        Some("BHyL2i6Jhheq2uJ+0fRvM6zcQfU=")
    );

    // An explicit file wins over tools.yml, and bodies are signed too.
    let other = home.path().join("other.yml");
    std::fs::write(&other, "accessKey: admin-key\nsecretKey: s3cret-value\n").unwrap();
    let (addr, seen) = recording_server().await;
    let r = nsadmin_env(
        &format!(
            "updateNamesrvConfig -n {} -k a -v b --credentials {}",
            addr,
            other.to_str().unwrap()
        ),
        &[("ROCKETMQ_HOME", home_var)],
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    let reqs = seen.await.unwrap();
    assert_eq!(reqs[0].body_bytes(), b"a=b\n");
    assert_signed(&reqs[0], "admin-key", "s3cret-value");

    // The environment variable works the same way; a broken explicit file is an error.
    let (addr, seen) = recording_server().await;
    let r = nsadmin_env(
        &format!("getNamesrvConfig -n {}", addr),
        &[("NSADMIN_CREDENTIALS", other.to_str().unwrap())],
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    assert_signed(&seen.await.unwrap()[0], "admin-key", "s3cret-value");
    let r = nsadmin_env(
        "getNamesrvConfig -n 127.0.0.1:1",
        &[("NSADMIN_CREDENTIALS", "/nonexistent.yml")],
    )
    .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err
            .starts_with("cannot read credentials file /nonexistent.yml"),
        "{r:?}"
    );

    // Without any file: unsigned.
    let (addr, seen) = recording_server().await;
    nsadmin(&format!("getNamesrvConfig -n {}", addr)).await;
    assert!(seen.await.unwrap()[0].ext(signature::ACCESS_KEY).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_list_interval_repeats_and_reports_as_it_goes() {
    use std::io::{BufRead, BufReader};
    let (server, _broker) = with_broker().await;
    let n = server.addr.to_string();
    let (lines, errors) = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(BIN)
            .args(["clusterList", "-n", &n, "-i", "1"])
            .env_remove("NAMESRV_ADDR")
            .env_remove("ROCKETMQ_HOME")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        // Two rounds: header, row, header, row.
        let lines: Vec<String> = stdout.lines().take(4).map(Result::unwrap).collect();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut first_error = String::new();
        stderr.read_line(&mut first_error).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        (lines, first_error)
    })
    .await
    .unwrap();
    assert!(
        lines[0].starts_with("#Cluster Name") && lines[2].starts_with("#Cluster Name"),
        "{lines:?}"
    );
    assert!(lines[3].starts_with("DefaultCluster"), "{lines:?}");
    assert!(
        errors.contains("GET_BROKER_RUNTIME_INFO (28)"),
        "printed while running: {errors}"
    );
}

#[tokio::test]
async fn tls_with_the_flag_or_javas_system_property() {
    let server = TestServer::with_properties("tls.server.mode=enforcing\n").await;
    let addr = server.addr.to_string();
    let over_tls = nsadmin(&format!("getNamesrvConfig -n {addr} --tls")).await;
    assert_eq!(over_tls.code, 0, "{}", over_tls.err);
    assert!(over_tls.out.contains("listenPort"), "{}", over_tls.out);
    let java_opt = nsadmin_env(
        &format!("topicList -n {addr}"),
        &[(
            "JAVA_OPT",
            "-Xmx64m -Dtls.enable=true -Dtls.config.file=/nonexistent",
        )],
    )
    .await;
    assert_eq!(java_opt.code, 0, "{}", java_opt.err);
    // Plaintext to an enforcing server: the connection is closed, a server that could not be asked.
    let plain = nsadmin(&format!("getNamesrvConfig -n {addr}")).await;
    assert_eq!(plain.code, 2, "{}", plain.err);
    // A client trust store that does not exist is a usage error naming the key.
    let bad = nsadmin_env(
        &format!("topicList -n {addr} --tls"),
        &[(
            "JAVA_OPT",
            "-Dtls.test.mode.enable=false -Dtls.client.authServer=true -Dtls.client.trustCertPath=/no/ca.pem -Dtls.config.file=/nonexistent",
        )],
    )
    .await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.err.contains("tls.client.trustCertPath=/no/ca.pem"),
        "{}",
        bad.err
    );
}
