//! Shared test harness: an in-process server on an ephemeral port with its own temporary
//! home directory, and a raw protocol client.

#![allow(dead_code)] // each test module uses a different part of the harness

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use namesrv::auth::Gate;
use namesrv::config::{Config, Env, properties};
use namesrv::kv::{KvLimits, KvStore};
use namesrv::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};
use namesrv::reload::Reload;
use namesrv::server::prelude::Prelude;
use namesrv::server::{self, Handles, Listeners, Server, ServerConfig};
use namesrv::state::Namesrv;
use namesrv::tls::TlsSettings;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    /// The HTTP side door, when started with `Options::http`.
    pub http: Option<SocketAddr>,
    pub state: Namesrv,
    /// The auth gate (off unless the properties set `authMode`).
    pub auth: Gate,
    /// Reload requests, as SIGHUP makes them.
    pub reload: Reload,
    prelude: Prelude,
    pub home: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

/// How to start a test server.
#[derive(Clone, Default)]
pub struct Options {
    /// Properties text, as in a config file.
    pub properties: String,
    /// `user.home` for defaults; a fresh temp dir when `None`.
    pub home: Option<String>,
    /// `ROCKETMQ_HOME`.
    pub rocketmq_home: Option<String>,
    /// Where the KV file lives; `<temp home>/namesrv/kvConfig.json` when `None`.
    pub kv_path: Option<PathBuf>,
    /// Load this file as `-c` does (then `properties` is ignored).
    pub config_file: Option<PathBuf>,
    /// Also serve HTTP on an ephemeral loopback port.
    pub http: bool,
    /// Keep route snapshots (warm restart) on. Off unless asked for: snapshots are written
    /// on the blocking pool, and while a write runs, a paused-time test's clock would jump
    /// ahead to its next timer.
    pub warm_restart: bool,
    /// Java system properties (`-Dkey=value` without the `-D`), as `bin/mqnamesrv` passes
    /// JAVA_OPT's. Without `tls.config.file` here or in the properties, a file that does not
    /// exist is used, so the machine's `/etc/rocketmq/tls.properties` never leaks in.
    pub system_properties: Vec<String>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(Options::default()).await
    }

    pub async fn with_properties(text: &str) -> TestServer {
        Self::start_with(Options {
            properties: text.to_owned(),
            ..Options::default()
        })
        .await
    }

    pub async fn start_with(opts: Options) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, opts).await
    }

    /// Starts a server whose home is `dir` (to restart on the same files).
    pub async fn start_in(dir: tempfile::TempDir, opts: Options) -> TestServer {
        let env = Env {
            home: opts
                .home
                .clone()
                .unwrap_or_else(|| dir.path().display().to_string()),
            rocketmq_home: opts.rocketmq_home.clone(),
        };
        // As `main` does: a given file, else the persisted config if any, else properties.
        let config = match (&opts.config_file, opts.properties.is_empty()) {
            (Some(file), _) => Config::load(Some(file), &env).unwrap(),
            (None, true) => Config::load(None, &env).unwrap(),
            (None, false) => {
                let props = properties::parse(&opts.properties).unwrap();
                Config::from_properties(&props, "test", &env).unwrap()
            }
        };
        let mut config = config;
        if opts.config_file.is_none() {
            config.settings.restore_routes_on_start = opts.warm_restart;
        }
        let kv_path = opts
            .kv_path
            .clone()
            .unwrap_or_else(|| PathBuf::from(&config.settings.kv_config_path));
        let kv = KvStore::open_with(kv_path, KvLimits::from_settings(&config.settings)).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server_config = ServerConfig::from_settings(&config.settings, SerializeType::Json);
        let handles = Handles::new(
            Gate::load(&config.settings).unwrap(),
            Prelude::load(&tls_base(&opts, &config, &dir), &config.settings)
                .expect("TLS settings load"),
        );
        let (auth, reload) = (handles.auth.clone(), handles.reload.clone());
        let prelude = handles.prelude.clone();
        let state = Namesrv::new(config, kv);
        let http_listener = match opts.http {
            true => Some(TcpListener::bind("127.0.0.1:0").await.unwrap()),
            false => None,
        };
        let http = http_listener.as_ref().map(|l| l.local_addr().unwrap());
        let listeners = Listeners {
            remoting: listener,
            more: Vec::new(),
            http: http_listener,
        };
        // As `main` does: the routes of the previous server on these files.
        if let Some(snapshot) = &server_config.snapshot {
            state.restore_routes(&snapshot.path);
        }
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server::run(
            listeners,
            state.clone(),
            Server::new(server_config, handles),
            async {
                let _ = rx.await;
            },
        ));
        TestServer {
            addr,
            http,
            state,
            auth,
            reload,
            prelude,
            home: dir,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// The server's prelude (TLS material and counters).
    pub fn prelude(&self) -> &Prelude {
        &self.prelude
    }

    /// Triggers shutdown and waits for `run` to return.
    pub async fn stop(mut self) -> std::io::Result<()> {
        self.stop.take().unwrap().send(()).ok();
        self.task.take().unwrap().await.unwrap()
    }

    /// Stops the server and hands back its home directory, to start another on it.
    pub async fn stop_keeping_home(mut self) -> tempfile::TempDir {
        self.stop.take().unwrap().send(()).ok();
        self.task.take().unwrap().await.unwrap().unwrap();
        let placeholder = tempfile::tempdir().unwrap();
        std::mem::replace(&mut self.home, placeholder)
    }

    /// Triggers shutdown without waiting.
    pub fn begin_stop(&mut self) -> JoinHandle<std::io::Result<()>> {
        self.stop.take().unwrap().send(()).ok();
        self.task.take().unwrap()
    }

    pub async fn client(&self) -> TestClient {
        TestClient::connect(self.addr).await
    }

    /// `GET path` on the HTTP side door.
    pub async fn get(&self, path: &str) -> HttpResponse {
        http_request(self.http.expect("started with http"), "GET", path).await
    }
}

/// An HTTP response, as a test reads it.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// Header lines, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), read to the end.
pub async fn http_request(addr: SocketAddr, method: &str, path: &str) -> HttpResponse {
    http_request_with(addr, method, path, &[]).await
}

/// [`http_request`] with extra header lines.
pub async fn http_request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> HttpResponse {
    let stream = TcpStream::connect(addr).await.unwrap();
    http_exchange(stream, addr, method, path, headers).await
}

/// [`http_request_with`] on a connection the caller opened (say, from a chosen address).
pub async fn http_exchange(
    mut stream: TcpStream,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> HttpResponse {
    let extra: String = headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    let request =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw))
        .await
        .expect("HTTP response within 30 s")
        .unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, tail) = rest.split_once("\r\n").expect("chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
}

/// The `tls.*` settings a test server starts with (see [`Options::system_properties`]).
fn tls_base(opts: &Options, config: &Config, dir: &tempfile::TempDir) -> TlsSettings {
    let mut system: Vec<(String, String)> = opts
        .system_properties
        .iter()
        .map(|p| namesrv::tls::settings::system_property(p))
        .collect();
    let names_file = system
        .iter()
        .chain(&config.tls_lines)
        .any(|(k, _)| k == "tls.config.file");
    if !names_file {
        let absent = dir.path().join("no-tls.properties");
        system.insert(0, ("tls.config.file".into(), absent.display().to_string()));
    }
    TlsSettings::resolve_base(&config.tls_lines, &system)
}

/// A client TLS configuration as a Java client's with `tls.enable=true`: any certificate.
pub fn tls_client_config() -> Arc<rustls::ClientConfig> {
    Arc::new(namesrv::tls::client::client_config(&TlsSettings::default()).unwrap())
}

/// A byte stream to the server: TCP or TLS.
pub trait ClientStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> ClientStream for T {}

/// A raw RemotingCommand client.
pub struct TestClient {
    pub stream: Box<dyn ClientStream>,
    buf: BytesMut,
    next_opaque: i32,
    pub serialize_type: SerializeType,
    pub version: i32,
}

impl TestClient {
    pub async fn connect(addr: SocketAddr) -> TestClient {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Self::over(Box::new(stream))
    }

    /// A client over TLS with `config`, after sending `prefix` in clear (e.g. a PROXY header).
    pub async fn connect_tls(
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        prefix: &[u8],
    ) -> std::io::Result<TestClient> {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream.write_all(prefix).await?;
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(namesrv::tls::client::server_name(&addr.to_string()), stream)
            .await?;
        Ok(Self::over(Box::new(tls)))
    }

    /// A plaintext client that sends `prefix` (e.g. a PROXY header) first.
    pub async fn connect_with_prefix(addr: SocketAddr, prefix: &[u8]) -> TestClient {
        let mut c = Self::connect(addr).await;
        c.send_raw(prefix).await;
        c
    }

    fn over(stream: Box<dyn ClientStream>) -> TestClient {
        TestClient {
            stream,
            buf: BytesMut::new(),
            next_opaque: 1,
            serialize_type: SerializeType::Json,
            version: 479,
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    pub async fn send(&mut self, cmd: &RemotingCommand) {
        let mut out = BytesMut::new();
        encode_frame(cmd, self.serialize_type, &mut out);
        self.send_raw(&out).await;
    }

    /// The next whole frame (length prefix included), or `None` at EOF.
    pub async fn recv_frame(&mut self) -> Option<Bytes> {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes(self.buf[..4].try_into().unwrap()) as usize;
                if self.buf.len() >= 4 + len {
                    return Some(self.buf.split_to(4 + len).freeze());
                }
            }
            let n =
                tokio::time::timeout(Duration::from_secs(30), self.stream.read_buf(&mut self.buf))
                    .await
                    .expect("timed out waiting for a frame")
                    .unwrap_or(0);
            if n == 0 {
                return None;
            }
        }
    }

    /// The next command, or `None` at EOF.
    pub async fn recv(&mut self) -> Option<RemotingCommand> {
        let frame = self.recv_frame().await?;
        let mut buf = BytesMut::from(&frame[..]);
        let content = split_frame(
            &mut buf,
            FrameLimits {
                max_frame_length: usize::MAX >> 1,
            },
        )
        .unwrap()
        .unwrap();
        Some(decode_frame(content).unwrap().0)
    }

    /// Whether the server closed the connection (EOF or reset) without sending anything.
    pub async fn closed_without_reply(&mut self) -> bool {
        let mut byte = [0u8; 1];
        match tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut byte)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) => false,
            Err(_) => panic!("connection neither answered nor closed"),
        }
    }

    pub fn command(
        &mut self,
        code: i32,
        ext: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(code, self.next_opaque);
        self.next_opaque += 1;
        cmd.version = self.version;
        if !ext.is_empty() {
            cmd.ext_fields = Some(ext.iter().map(|(k, v)| (*k, *v)).collect::<ExtFields>());
        }
        cmd.body = body.map(Bytes::copy_from_slice);
        cmd
    }

    /// Sends a request and waits for its response.
    pub async fn call(
        &mut self,
        code: i32,
        ext: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> RemotingCommand {
        let cmd = self.command(code, ext, body);
        self.send(&cmd).await;
        let resp = self
            .recv()
            .await
            .expect("connection closed before the response");
        assert_eq!(resp.opaque, cmd.opaque, "response matches the request");
        resp
    }
}

/// Body text of a response.
pub fn body_text(resp: &RemotingCommand) -> String {
    String::from_utf8(resp.body_bytes().to_vec()).unwrap()
}

/// A JSON REGISTER_BROKER body with topics named `topics` (4/4 queues, perm 6).
pub fn register_body(counter: i64, topics: &[&str]) -> Vec<u8> {
    let table: Vec<String> = topics
        .iter()
        .map(|t| format!(r#""{t}":{{"attributes":{{}},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"{t}","topicSysFlag":0,"writeQueueNums":4}}"#))
        .collect();
    format!(
        r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":{counter},"stateVersion":0,"timestamp":1700000000000}},"mappingDataVersion":{{"counter":0,"stateVersion":0,"timestamp":0}},"topicConfigTable":{{{}}},"topicQueueMappingDetailMap":{{}},"topicQueueMappingInfoMap":{{}}}}}}"#,
        table.join(",")
    )
    .into_bytes()
}

/// Ext fields of a 5.x master/slave registration.
pub fn register_ext<'a>(name: &'a str, addr: &'a str, id: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("brokerName", name),
        ("brokerAddr", addr),
        ("clusterName", "DefaultCluster"),
        ("haServerAddr", "127.0.0.1:10912"),
        ("brokerId", id),
        ("compressed", "false"),
        ("enableActingMaster", "false"),
    ]
}

/// The ext fields of a QUERY_DATA_VERSION from a master of `DefaultCluster`.
pub fn qdv_ext<'a>(name: &'a str, addr: &'a str) -> [(&'a str, &'a str); 4] {
    [
        ("brokerName", name),
        ("brokerAddr", addr),
        ("clusterName", "DefaultCluster"),
        ("brokerId", "0"),
    ]
}

/// Registers the tests' usual broker: `broker-a` (master, 10.0.0.1:10911) of `DefaultCluster`
/// with TopicA and TopicB, data version counter 1.
pub async fn register_broker_a(client: &mut TestClient) -> RemotingCommand {
    register(
        client,
        "broker-a",
        "10.0.0.1:10911",
        "0",
        1,
        &["TopicA", "TopicB"],
    )
    .await
}

/// Registers a 5.x broker and asserts success.
pub async fn register(
    client: &mut TestClient,
    name: &str,
    addr: &str,
    id: &str,
    counter: i64,
    topics: &[&str],
) -> RemotingCommand {
    let body = register_body(counter, topics);
    let resp = client
        .call(
            namesrv::protocol::code::request::REGISTER_BROKER,
            &register_ext(name, addr, id),
            Some(&body),
        )
        .await;
    assert_eq!(resp.code, 0, "register failed: {:?}", resp.remark);
    resp
}

/// Asks for a topic's route.
pub async fn route(client: &mut TestClient, topic: &str) -> RemotingCommand {
    client
        .call(
            namesrv::protocol::code::request::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", topic)],
            None,
        )
        .await
}

/// UPDATE_NAMESRV_CONFIG with `properties` as the body.
pub async fn update_config(client: &mut TestClient, properties: &str) -> RemotingCommand {
    client
        .call(
            namesrv::protocol::code::request::UPDATE_NAMESRV_CONFIG,
            &[],
            Some(properties.as_bytes()),
        )
        .await
}

/// Applies `properties` to `server`'s configuration as a reload of its file (SIGHUP) does:
/// the operator's way to change the keys UPDATE_NAMESRV_CONFIG refuses to clients unless
/// `authMode=enforce` (`namesrv::config::STEERING_KEYS`).
pub fn apply_config(server: &TestServer, properties: &str) {
    let props = namesrv::config::properties::parse(properties).unwrap();
    server
        .state
        .update_config(
            |c| c.update(&props).map(drop),
            |_| Ok::<_, namesrv::config::UpdateError>(()),
        )
        .unwrap_or_else(|e| panic!("{properties:?}: {e}"));
}
