//! An in-process server on 127.0.0.1:0 with its own temporary home directory: started from
//! properties text, a config file or an existing home, stopped with or without waiting.

use std::net::SocketAddr;
use std::path::PathBuf;

use namesrv::auth::Gate;
use namesrv::config::controller::ControllerConfig;
use namesrv::config::{Config, Env, properties};
use namesrv::controller::Controller;
use namesrv::dispatch::{CONTROLLER, RequestTable};
use namesrv::kv::{KvLimits, KvStore};
use namesrv::protocol::SerializeType;
use namesrv::reload::Reload;
use namesrv::server::outbound::Outbound;
use namesrv::server::prelude::Prelude;
use namesrv::server::{self, Handles, Listeners, Remoting, Server, ServerConfig};
use namesrv::state::Namesrv;
use namesrv::tls::TlsSettings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::client::TestClient;
use super::http::{HttpResponse, http_request};
use super::tls::tls_base;

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
    /// Requests the server sends to its connected clients.
    pub outbound: Outbound,
    /// The addresses of the further listeners `Options::more_tables` asked for, in order.
    pub more: Vec<SocketAddr>,
    /// The controller's listener, when started with `Options::controller`.
    pub controller_addr: Option<SocketAddr>,
    /// The controller, when started with `Options::controller`.
    pub controller: Option<Controller>,
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
    /// Further remoting listeners, one per table, beside the name server's.
    pub more_tables: Vec<&'static RequestTable>,
    /// Also run the controller, as `enableControllerInNamesrv=true` does: its keys from the
    /// same properties, its listener on 127.0.0.1:0 serving `dispatch::CONTROLLER`.
    pub controller: bool,
    /// A controller built by the test (say, on an in-memory log) to run instead of one
    /// started from the properties; its listener and services as with `controller`.
    pub controller_with: Option<namesrv::controller::Controller>,
}

/// The server configuration `main` builds from `config`, with TLS from `tls`: the one place a
/// test builds one, so a test server starts as the binary does.
pub fn server_config(config: &Config, tls: &TlsSettings) -> (ServerConfig, Handles) {
    let server_config = ServerConfig::from_settings(&config.settings, SerializeType::Json);
    let auth = Gate::load(&config.settings).unwrap();
    let prelude = Prelude::load(tls, &config.settings).expect("TLS settings load");
    (server_config, Handles::new(auth, prelude))
}

/// The controller `main` starts for `config` (its keys from the same file or properties).
async fn start_controller(opts: &Options, config: &Config, env: &Env) -> Controller {
    let props = match &opts.config_file {
        Some(file) => namesrv::config::read_properties(file).unwrap(),
        None => properties::parse(&opts.properties).unwrap(),
    };
    let keys = ControllerConfig::from_properties(&props, "test", env).unwrap();
    let settings =
        namesrv::controller::ControllerSettings::from_config(&keys, &config.settings).unwrap();
    Controller::start(settings, None).await.unwrap()
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

    /// A server configured by `text` and one client connected to it: how most tests begin.
    pub async fn with_client(text: &str) -> (TestServer, TestClient) {
        let server = Self::with_properties(text).await;
        let client = server.client().await;
        (server, client)
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
        let controller = match (opts.controller_with.clone(), opts.controller) {
            (Some(controller), _) => Some(controller),
            (None, true) => Some(start_controller(&opts, &config, &env).await),
            (None, false) => None,
        };
        let (server_config, mut handles) = server_config(&config, &tls_base(&opts, &config, &dir));
        let mut services = Vec::new();
        if let Some(controller) = &controller {
            handles = handles.with_controller(controller.clone());
            services = controller.services();
        }
        let (auth, reload) = (handles.auth.clone(), handles.reload.clone());
        let (prelude, outbound) = (handles.prelude.clone(), handles.outbound.clone());
        let state = Namesrv::new(config, kv);
        let http_listener = match opts.http {
            true => Some(TcpListener::bind("127.0.0.1:0").await.unwrap()),
            false => None,
        };
        let http = http_listener.as_ref().map(|l| l.local_addr().unwrap());
        let mut more = Vec::new();
        for &table in &opts.more_tables {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            more.push(Remoting { listener, table });
        }
        let more_addrs = more
            .iter()
            .map(|r| r.listener.local_addr().unwrap())
            .collect();
        let mut controller_addr = None;
        if controller.is_some() {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            controller_addr = Some(listener.local_addr().unwrap());
            more.push(Remoting {
                listener,
                table: &CONTROLLER,
            });
        }
        let listeners = Listeners {
            remoting: listener,
            more,
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
            Server::new(server_config, handles).with_services(services),
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
            outbound,
            more: more_addrs,
            controller_addr,
            controller,
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
