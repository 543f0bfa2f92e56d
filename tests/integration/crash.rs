//! Crash safety of the KV store and the persisted configuration, with the built `namesrv`
//! binary killed for real. Each round starts the server on the same files, checks that it
//! loads them and still holds every change it acknowledged before the previous kill, then
//! drives PUT_KV_CONFIG, DELETE_KV_CONFIG and UPDATE_NAMESRV_CONFIG requests as fast as it
//! can over a few pipelined connections and SIGKILLs the process after a random delay.
//! After each kill both files must parse as they are (no truncated or half-written file),
//! and on restart no damage warning may appear. Each connection owns a namespace and a
//! config key, and the server handles a connection's requests in order, so the state
//! found after a restart must be the state after some prefix of that connection's requests
//! at least as long as the acknowledged ones: acknowledged changes are never lost, and an
//! unacknowledged one may or may not have landed.
//!
//! One test sends config updates from every connection at once, so that acknowledged updates
//! must also survive each other.
//!
//! A second group starts the binary over a damaged `kvConfig.json`: with a good `.bak` it must
//! start, warn loudly and serve the backup's table; with no usable backup it must exit
//! non-zero, naming the file and refusing to start; and a kill at chosen moments of that
//! recovery must leave files from which the next start serves the backup's table again.
//!
//! The op sequences and delays come from a seed printed at the start of each test (set
//! `NAMESRV_CRASH_SEED` to replay one); where exactly a kill lands still varies from run to
//! run, and a correct server passes wherever it lands. `NAMESRV_CRASH_ROUNDS` sets the
//! number of kill rounds (or attempts) per test.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use namesrv::config::properties;
use namesrv::protocol::code::{request, response};
use namesrv::protocol::encode_frame;
use tokio::io::AsyncWriteExt;

use crate::harness::process::{PATIENCE, Server, Started, tail};
use crate::harness::{TestClient, body_text, get_kv};

/// Pipelined connections per round.
const CONNECTIONS: usize = 3;
/// Requests in flight per connection.
const WINDOW: usize = 8;
/// Keys each connection works on, in its own namespace.
const KEYS: [&str; 5] = ["k0", "", "quote\"d", "back\\slash", "ünïcødé 🚀"];

/// SplitMix64: a tiny deterministic generator (no `rand` dependency).
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An independent generator for `(round, stream)`.
    fn fork(seed: u64, round: usize, stream: usize) -> Rng {
        let mut r = Rng::new(seed ^ ((round as u64) << 32) ^ (stream as u64 + 1));
        r.next();
        r
    }
}

fn seed() -> u64 {
    match std::env::var("NAMESRV_CRASH_SEED") {
        Ok(v) => v.parse().expect("NAMESRV_CRASH_SEED is a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

fn rounds(default: usize) -> usize {
    std::env::var("NAMESRV_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A private server's files, all under one temporary directory.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new(extra: &str) -> Files {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home dir");
        let files = Files { dir };
        let text = format!(
            "bindAddress=127.0.0.1\nlistenPort=0\nkvConfigPath={}\nconfigStorePath={}\n{extra}",
            files.kv().display(),
            files.conf().display(),
        );
        std::fs::write(files.conf(), text).expect("write the config");
        files
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The `-c` file, which is also where UPDATE_NAMESRV_CONFIG persists.
    fn conf(&self) -> PathBuf {
        self.dir.path().join("namesrv.properties")
    }

    fn kv(&self) -> PathBuf {
        self.dir.path().join("store").join("kvConfig.json")
    }

    fn start(&self) -> Started {
        Server::start(&self.conf(), &self.home())
    }

    fn start_up(&self) -> Server {
        Server::start_up(&self.conf(), &self.home())
    }
}

/// One connection's view of the state it owns.
#[derive(Debug, Clone, PartialEq)]
struct Owned {
    /// Its namespace (`None` while it does not exist).
    table: Option<BTreeMap<String, String>>,
    /// Its config key's value.
    conf: String,
}

#[derive(Debug, Clone)]
enum Op {
    Put(String, String),
    Delete(String),
    Conf(String),
}

impl Op {
    fn apply(&self, state: &mut Owned) {
        match self {
            Op::Put(k, v) => {
                state
                    .table
                    .get_or_insert_with(BTreeMap::new)
                    .insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                if let Some(t) = &mut state.table {
                    t.remove(k);
                }
            }
            Op::Conf(v) => state.conf = v.clone(),
        }
    }
}

fn namespace(conn: usize) -> String {
    format!("crash \"ns\" \\ {conn} ü")
}

fn conf_key(conn: usize) -> String {
    format!("crashConf{conn}")
}

/// What became of a request.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    /// Sent; the server went away before answering.
    NoReply,
    /// Answered with SUCCESS: the change must survive.
    Acked,
    /// Answered with an error, which a healthy server never sends here.
    Refused(String),
}

/// What one connection sent in a round.
#[derive(Debug, Default)]
struct Log {
    ops: Vec<Op>,
    status: Vec<Status>,
}

impl Log {
    /// How many requests were answered with SUCCESS before the first other outcome.
    fn acked_prefix(&self) -> usize {
        self.status
            .iter()
            .take_while(|s| **s == Status::Acked)
            .count()
    }

    fn refusals(&self) -> impl Iterator<Item = String> + '_ {
        self.ops
            .iter()
            .zip(&self.status)
            .filter_map(|(op, s)| match s {
                Status::Refused(why) => Some(format!("{op:?}: {why}")),
                _ => None,
            })
    }
}

fn next_op(rng: &mut Rng, round: usize, seq: usize, conf_writer: bool) -> Op {
    let key = KEYS[rng.below(KEYS.len() as u64) as usize].to_owned();
    match rng.below(100) {
        n if n < 10 && conf_writer => Op::Conf(format!("r{round}s{seq}")),
        n if n < 25 => Op::Delete(key),
        _ => Op::Put(
            key,
            format!("r{round} s{seq} \"q\" \\ ünï 🚀 {}", rng.below(1000)),
        ),
    }
}

/// Sends `conn`'s requests, [`WINDOW`] at a time, until the server goes away.
async fn drive(
    mut client: TestClient,
    conn: usize,
    round: usize,
    mut rng: Rng,
    conf_writer: bool,
) -> Log {
    let ns = namespace(conn);
    let mut log = Log::default();
    let mut pending = VecDeque::new();
    'run: loop {
        while pending.len() < WINDOW {
            let op = next_op(&mut rng, round, log.ops.len(), conf_writer);
            let cmd = match &op {
                Op::Put(k, v) => client.command(
                    request::PUT_KV_CONFIG,
                    &[("namespace", &ns), ("key", k), ("value", v)],
                    None,
                ),
                Op::Delete(k) => client.command(
                    request::DELETE_KV_CONFIG,
                    &[("namespace", &ns), ("key", k)],
                    None,
                ),
                Op::Conf(v) => {
                    let body = format!("{}={v}\n", conf_key(conn));
                    client.command(request::UPDATE_NAMESRV_CONFIG, &[], Some(body.as_bytes()))
                }
            };
            let mut frame = BytesMut::new();
            encode_frame(&cmd, client.serialize_type, &mut frame);
            if client.stream.write_all(&frame).await.is_err() {
                break 'run;
            }
            pending.push_back((cmd.opaque, log.ops.len()));
            log.ops.push(op);
            log.status.push(Status::NoReply);
        }
        let Some(resp) = client.recv().await else {
            break;
        };
        let (opaque, index) = pending.pop_front().expect("a request is in flight");
        assert_eq!(resp.opaque, opaque, "responses come in request order");
        log.status[index] = if resp.code == response::SUCCESS {
            Status::Acked
        } else {
            Status::Refused(format!("code {} {:?}", resp.code, resp.remark))
        };
    }
    log
}

/// What the server holds for each connection.
async fn observe(addr: SocketAddr) -> Vec<Owned> {
    let mut client = TestClient::connect(addr).await;
    let conf = body_text(&client.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    let mut owned = Vec::new();
    for conn in 0..CONNECTIONS {
        let ns = namespace(conn);
        let list = crate::harness::kv_list(&mut client, &ns).await;
        let table = match list.code {
            response::SUCCESS => {
                let v: serde_json::Value =
                    serde_json::from_slice(list.body_bytes()).expect("a KVTable body");
                let t = v["table"].as_object().expect("a table object");
                Some(
                    t.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().expect("string").to_owned()))
                        .collect(),
                )
            }
            response::QUERY_NOT_FOUND => None,
            code => panic!("GET_KVLIST_BY_NAMESPACE answered {code}: {:?}", list.remark),
        };
        let prefix = format!("{}=", conf_key(conn));
        let value = conf
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{prefix} missing from GET_NAMESRV_CONFIG:\n{conf}"));
        owned.push(Owned {
            table,
            conf: value.to_owned(),
        });
    }
    owned
}

/// Both files must parse exactly as they are on disk after a kill.
fn check_files_whole(files: &Files, context: &str) {
    match std::fs::read(files.kv()) {
        Ok(bytes) => {
            let v: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
            assert!(
                v.as_ref().is_ok_and(|v| v["configTable"].is_object()),
                "{context}: kvConfig.json is damaged after a kill: {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{context}: {e}"),
    }
    let text = std::fs::read_to_string(files.conf()).expect("the config file exists");
    let props = properties::parse(&text)
        .unwrap_or_else(|e| panic!("{context}: the config file does not parse: {e}\n{text}"));
    for key in ["bindAddress", "listenPort", "kvConfigPath"] {
        assert!(
            props.iter().any(|(k, _)| k == key),
            "{context}: {key} missing from the config file after a kill:\n{text}"
        );
    }
    for conn in 0..CONNECTIONS {
        let key = conf_key(conn);
        assert!(
            props.iter().any(|(k, _)| *k == key),
            "{context}: {key} missing from the config file after a kill:\n{text}"
        );
    }
}

/// Which of the connection's values an op sets: a KV key, or (`None`) its config key.
fn target(op: &Op) -> Option<&str> {
    match op {
        Op::Put(k, _) | Op::Delete(k) => Some(k),
        Op::Conf(_) => None,
    }
}

/// A value as `state` holds it (`None`: the key is absent).
fn value_of(state: &Owned, key: Option<&str>) -> Option<String> {
    match key {
        Some(k) => state.table.as_ref().and_then(|t| t.get(k).cloned()),
        None => Some(state.conf.clone()),
    }
}

/// Checks each value one connection owns after a restart: it must be what the last
/// acknowledged request on it set (or what it was before the round, if none), or what a
/// later request that was not acknowledged would have set.
fn check_acknowledged(before: &Owned, log: &Log, found: &Owned, context: &str) {
    let keys = KEYS.iter().map(|k| Some(*k)).chain([None]);
    for key in keys {
        let mut state = before.clone();
        let mut allowed = vec![value_of(&state, key)];
        let mut last_acked = None;
        for (i, (op, status)) in log.ops.iter().zip(&log.status).enumerate() {
            op.apply(&mut state);
            if target(op) != key {
                continue;
            }
            if *status == Status::Acked {
                allowed.clear();
                last_acked = Some(i);
            }
            allowed.push(value_of(&state, key));
        }
        let got = value_of(found, key);
        assert!(
            allowed.contains(&got),
            "{context}: LOST ACKNOWLEDGED CHANGE to {}: found {got:?}, allowed {allowed:?}; \
             last acknowledged request on it: {:?} (#{} of {} sent, statuses {:?})",
            key.map_or("the config key".to_owned(), |k| format!("KV key {k:?}")),
            last_acked.map(|i| &log.ops[i]),
            last_acked.map_or(0, |i| i + 1),
            log.ops.len(),
            log.status,
        );
    }
}

/// Checks one connection's whole state after a restart: it must be the state after some
/// prefix of its requests at least as long as the acknowledged ones (requests apply in
/// order, so a later request never lands without the earlier ones).
fn check_prefix(before: &Owned, log: &Log, found: &Owned, context: &str) {
    let acked = log.acked_prefix();
    let mut state = before.clone();
    for op in &log.ops[..acked] {
        op.apply(&mut state);
    }
    let acknowledged = state.clone();
    if state == *found {
        return;
    }
    for op in &log.ops[acked..] {
        op.apply(&mut state);
        if state == *found {
            return;
        }
    }
    panic!(
        "{context}: the state is not that after any prefix of the requests: {} sent, {acked} \
         acknowledged\nexpected at least: {acknowledged:?}\nfound: {found:?}",
        log.ops.len(),
    );
}

/// Runs kill rounds; `conf_writers` connections send UPDATE_NAMESRV_CONFIG among their
/// KV requests.
async fn kill_rounds(name: &str, rounds: usize, conf_writers: usize) {
    let seed = seed();
    eprintln!("{name}: seed {seed} (NAMESRV_CRASH_SEED={seed} replays the op sequences)");
    let extra: String = (0..CONNECTIONS)
        .map(|c| format!("{}=initial\n", conf_key(c)))
        .collect();
    let files = Files::new(&extra);
    let mut known: Vec<Owned> = (0..CONNECTIONS)
        .map(|_| Owned {
            table: None,
            conf: "initial".into(),
        })
        .collect();
    let mut delays = Rng::fork(seed, usize::MAX, 0);
    let started = Instant::now();
    let (mut sent, mut acked) = (0, 0);
    let mut previous: Option<Vec<Log>> = None;
    for round in 0..=rounds {
        let context = format!("{name} seed {seed} round {round}");
        // Start on the files the last kill left: they load, nothing acknowledged is missing.
        let mut server = files.start_up();
        if let Some(logs) = previous.take() {
            let found = observe(server.addr()).await;
            for conn in 0..CONNECTIONS {
                let context = format!("{context} connection {conn}");
                check_acknowledged(&known[conn], &logs[conn], &found[conn], &context);
            }
            for conn in 0..CONNECTIONS {
                let context = format!("{context} connection {conn}");
                check_prefix(&known[conn], &logs[conn], &found[conn], &context);
            }
            known = found;
        }
        if round == rounds {
            server.kill9();
            check_start_log(&server.take_stderr(), &context);
            break;
        }
        let mut clients = Vec::new();
        for _ in 0..CONNECTIONS {
            clients.push(TestClient::connect(server.addr()).await);
        }
        let delay = Duration::from_millis(2 + delays.below(300));
        let tasks: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(conn, client)| {
                let rng = Rng::fork(seed, round, conn);
                tokio::spawn(drive(client, conn, round, rng, conn < conf_writers))
            })
            .collect();
        tokio::time::sleep(delay).await;
        server.kill9();
        let mut logs = Vec::new();
        for task in tasks {
            logs.push(task.await.expect("a connection task"));
        }
        let stderr = server.take_stderr();
        check_start_log(&stderr, &context);
        let refused: Vec<String> = logs.iter().flat_map(Log::refusals).collect();
        assert!(
            refused.is_empty(),
            "{context}: the server refused requests under load: {refused:#?}\n{}",
            tail(&stderr, 4000)
        );
        check_files_whole(&files, &context);
        sent += logs.iter().map(|l| l.ops.len()).sum::<usize>();
        acked += logs.iter().map(Log::acked_prefix).sum::<usize>();
        previous = Some(logs);
    }
    eprintln!(
        "{name}: {rounds} kills, {sent} requests sent, {acked} acknowledged, in {:?}",
        started.elapsed()
    );
}

/// A start after a kill must not have found anything damaged.
fn check_start_log(stderr: &str, context: &str) {
    assert!(
        !stderr.contains("damaged"),
        "{context}: a file was damaged by a kill:\n{}",
        tail(stderr, 4000)
    );
}

/// PUT/DELETE on three pipelined connections and config updates on one of them, killed
/// at random moments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_never_loses_an_acknowledged_change() {
    kill_rounds("kv+config", rounds(20), 1).await;
}

/// Config updates from several connections at once, killed at random moments: each
/// acknowledged update must survive as the others are persisted (updates are serialized,
/// so none starts from a configuration another is about to replace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_config_updates_survive_kill_9() {
    kill_rounds("concurrent config", rounds(10), CONNECTIONS).await;
}

const GOOD_BAK: &str =
    r#"{"configTable":{"ns":{"k":"from the backup \"q\" \\ ü"},"ORDER_TOPIC_CONFIG":{"T":"b:4"}}}"#;

/// Writes a damaged `kvConfig.json` and, if given, a `.bak`.
fn damage(files: &Files, main: &[u8], bak: Option<&[u8]>) {
    std::fs::create_dir_all(files.kv().parent().expect("parent")).expect("store dir");
    std::fs::write(files.kv(), main).expect("write kvConfig.json");
    if let Some(bak) = bak {
        let mut path = files.kv().into_os_string();
        path.push(".bak");
        std::fs::write(path, bak).expect("write kvConfig.json.bak");
    }
}

#[tokio::test]
async fn a_truncated_kv_file_starts_from_the_backup_with_a_warning() {
    let files = Files::new("");
    let truncated = &GOOD_BAK.as_bytes()[..GOOD_BAK.len() / 2];
    damage(&files, truncated, Some(GOOD_BAK.as_bytes()));
    let mut server = files.start_up();
    let mut c = TestClient::connect(server.addr()).await;
    let get = get_kv(&mut c, "ns", "k").await;
    assert_eq!(
        (get.code, get.ext("value")),
        (response::SUCCESS, Some("from the backup \"q\" \\ ü"))
    );
    let order = get_kv(&mut c, "ORDER_TOPIC_CONFIG", "T").await;
    assert_eq!(order.ext("value"), Some("b:4"));
    server.kill9();
    let stderr = server.take_stderr();
    assert!(
        stderr.contains("KV config file is damaged") && stderr.contains("recovered the table"),
        "a loud warning: {stderr}"
    );
    assert!(
        stderr.contains(&files.kv().display().to_string()),
        "the warning names the file: {stderr}"
    );
    let mut corrupt = files.kv().into_os_string();
    corrupt.push(".corrupt");
    assert_eq!(
        std::fs::read(&corrupt).expect("the damaged file is kept"),
        truncated
    );
    // The restored file is whole: a second start is quiet.
    let mut again = files.start_up();
    again.kill9();
    let stderr = again.take_stderr();
    assert!(!stderr.contains("damaged"), "{stderr}");
}

/// A damaged-start case: what it is, `kvConfig.json`, and `.bak` if any.
type DamagedStart<'a> = (&'a str, &'a [u8], Option<&'a [u8]>);

#[test]
fn a_damaged_kv_file_without_a_usable_backup_refuses_to_start() {
    let truncated = &GOOD_BAK.as_bytes()[..GOOD_BAK.len() / 2];
    let cases: [DamagedStart; 5] = [
        ("truncated, garbage .bak", truncated, Some(b"garbage")),
        (
            "truncated, truncated .bak",
            truncated,
            Some(&truncated[..10]),
        ),
        ("truncated, no .bak", truncated, None),
        ("empty, empty .bak", b"", Some(b"")),
        (
            "wrong shape, zero-filled .bak",
            br#"{"configTable":[]}"#,
            Some(&[0; 32]),
        ),
    ];
    for (what, main, bak) in cases {
        let files = Files::new("");
        damage(&files, main, bak);
        match files.start() {
            Started::Up(_) => panic!("{what}: started over a damaged file with no usable backup"),
            Started::Exited(status, stderr) => {
                assert!(
                    !status.success() && status.code().is_some(),
                    "{what}: exits with an error status, not {status}"
                );
                assert!(
                    stderr.contains(&files.kv().display().to_string())
                        && stderr.contains("refusing to start"),
                    "{what}: names the file and refuses to start: {stderr}"
                );
            }
        }
        assert_eq!(
            std::fs::read(files.kv()).expect("the damaged file is left alone"),
            main,
            "{what}"
        );
    }
}

/// When kill -9 lands during start-up recovery, after which moment.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// The damaged file has been copied aside (or is being copied).
    CopiedAside,
    /// The restored content is being written to the temporary file.
    WritingRestored,
    /// A random delay after the start.
    Random,
}

/// A kill while start-up restores the table from `.bak` must leave files from which the
/// next start again serves the backup's table (warning again if the restore had not landed),
/// never an empty table. The test watches the files from outside and kills the server as
/// soon as the damaged file has been copied aside, or as soon as the restored file is being
/// written, or after a random delay; and at once if `kvConfig.json` is ever missing.
#[tokio::test]
async fn a_kill_during_start_up_recovery_never_starts_empty() {
    let seed = seed();
    eprintln!("recovery kills: seed {seed}");
    let mut rng = Rng::fork(seed, 0, 0);
    let truncated = &GOOD_BAK.as_bytes()[..GOOD_BAK.len() / 2];
    let attempts = rounds(12);
    let (mut before_restore, mut missing) = (0, 0);
    for attempt in 0..attempts {
        let moment = [Moment::CopiedAside, Moment::WritingRestored, Moment::Random][attempt % 3];
        let files = Files::new("");
        damage(&files, truncated, Some(GOOD_BAK.as_bytes()));
        let with = |suffix: &str| {
            let mut p = files.kv().into_os_string();
            p.push(suffix);
            PathBuf::from(p)
        };
        let corrupt = with(".corrupt");
        // The restored file being written: `kvConfig.json.<16 hex digits>.tmp`.
        let writing = || {
            let name = files
                .kv()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            std::fs::read_dir(files.kv().parent().unwrap()).is_ok_and(|d| {
                d.flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_prefix(&format!("{name}."))
                        .and_then(|r| r.strip_suffix(".tmp"))
                        .is_some_and(|hex| hex.len() == 16)
                })
            })
        };
        let delay = Duration::from_micros(rng.below(20_000));
        let mut server = Server::spawn_quiet(&files.conf(), &files.home());
        let spawned = Instant::now();
        // Busy-wait: the windows are a copy, a write and a sync long.
        loop {
            if !files.kv().exists() {
                missing += 1;
                break;
            }
            let now = match moment {
                Moment::CopiedAside => corrupt.exists(),
                Moment::WritingRestored => writing(),
                Moment::Random => spawned.elapsed() >= delay,
            };
            // Past the restore, or never got there: kill anyway, the check still holds.
            let over = std::fs::read(files.kv()).is_ok_and(|b| b != truncated);
            if now || over || server.has_exited() {
                break;
            }
            assert!(spawned.elapsed() < PATIENCE, "recovery never happened");
        }
        server.kill9();
        drop(server);
        let restored = std::fs::read(files.kv()).is_ok_and(|b| b != truncated);
        if !restored {
            before_restore += 1;
        }
        let what =
            format!("attempt {attempt}, killed after {moment:?}, restore landed: {restored}");
        let mut server = match files.start() {
            Started::Up(server) => server,
            Started::Exited(status, stderr) => {
                panic!("{what}: the next start failed ({status}): {stderr}")
            }
        };
        let mut c = TestClient::connect(server.addr()).await;
        let get = get_kv(&mut c, "ns", "k").await;
        server.kill9();
        let stderr = server.take_stderr();
        assert_eq!(
            get.ext("value"),
            Some("from the backup \"q\" \\ ü"),
            "{what}: the next start came up without the backup's table (GET_KV_CONFIG \
             answered {} {:?}):\n{stderr}",
            get.code,
            get.remark,
        );
        assert_eq!(
            stderr.contains("KV config file is damaged"),
            !restored,
            "{what}: the next start warns exactly when it had to recover again:\n{stderr}"
        );
    }
    eprintln!(
        "recovery kills: {attempts} attempts, {before_restore} killed before the restore \
         landed, {missing} saw kvConfig.json missing"
    );
}
