//! The `namesrv` binary: parse flags, load the configuration, bind, serve until a signal. One
//! binary, three shapes: the name server; the name server with the RocketMQ 5 controller
//! embedded (`enableControllerInNamesrv=true`, a second listener); the controller alone
//! (`--controller`, Java's `mqcontroller`).

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{CommandFactory, Parser};
use namesrv::auth::Gate;
use namesrv::cli::Args;
use namesrv::config::controller::{ControllerConfig, ControllerConfigError};
use namesrv::config::{Config, Env, Settings};
use namesrv::controller::{Controller, ControllerSettings};
use namesrv::dispatch::CONTROLLER;
use namesrv::kv::{KvLimits, KvStore};
use namesrv::protocol::SerializeType;
use namesrv::server::prelude::Prelude;
use namesrv::server::{
    self, Handles, Listeners, Remoting, Server, ServerConfig, Service, ServiceFuture,
};
use namesrv::shutdown::Cause;
use namesrv::state::Namesrv;
use namesrv::telemetry::LogOptions;
use namesrv::tls::TlsSettings;
use tokio::net::TcpListener;

fn main() -> ExitCode {
    tune_malloc();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) if e.use_stderr() => {
            // As Java's mqnamesrv: the parse error, then the usage text, status 1.
            eprintln!("{e}");
            eprintln!("{}", Args::command().render_help());
            return ExitCode::from(1);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("namesrv: {e:#}");
            exit_status(&e)
        }
    }
}

/// A controller that cannot start exits with status 255, as Java's (`System.exit(-1)`);
/// everything else with 1.
fn exit_status(e: &anyhow::Error) -> ExitCode {
    let controller = e.downcast_ref::<ControllerConfigError>().is_some()
        || e.downcast_ref::<namesrv::controller::raft::StartError>()
            .is_some();
    match controller {
        true => ExitCode::from(255),
        false => ExitCode::FAILURE,
    }
}

/// Large buffers (frames, queued responses) come and go in bursts under load. glibc's
/// malloc by default raises its mmap and trim thresholds as it sees them, after which freed
/// buffers stay in its arenas and the process keeps its peak size (see `maxBufferedBytes`).
/// Fixed thresholds instead: buffers over 4 MiB get mappings of their own, returned when
/// freed; smaller ones are reused from the arenas, and [`trim_every_second`] gives what stays
/// free back to the system. The trim threshold (8 MiB) matters for the arenas of threads
/// other than the main one: `malloc_trim` never shrinks their top chunk, only a free that
/// leaves more than the threshold there does — at 1 GiB, the memory a route snapshot of
/// 1 M entries used on the blocking pool (55 MB) stayed resident for good.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    // SAFETY: `mallopt` only sets parameters of the allocator; called before any other
    // thread exists.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 * 1024 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 8 * 1024 * 1024);
    }
}

/// Returns the allocator's free memory to the system once a second ([`trim_every_second`]),
/// as one of the server's services.
struct AllocatorTrim;

impl Service for AllocatorTrim {
    fn name(&self) -> &'static str {
        "allocator-trim"
    }

    fn run(self: Box<Self>, cancel: tokio_util::sync::CancellationToken) -> ServiceFuture {
        Box::pin(async move {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = trim_every_second() => {}
            }
        })
    }
}

/// Returns the allocator's free memory to the system once a second (on the blocking pool:
/// it walks the free chunks under the arenas' locks).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn trim_every_second() {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        // SAFETY: `malloc_trim` only returns free memory to the system; any thread may call
        // it at any time.
        #[allow(unsafe_code)]
        let trim = || unsafe {
            libc::malloc_trim(0);
        };
        let _ = tokio::task::spawn_blocking(trim).await;
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
async fn trim_every_second() {}

/// Completes when the server should stop: SIGINT/SIGTERM, or SIGUSR2 from a new process
/// that takes the port over (the server then hands over without the GO_AWAY wait).
async fn shutdown(state: Namesrv, cause: impl Future<Output = Cause>) {
    if cause.await == Cause::HandOver {
        state.hand_over();
    }
}

/// How much longer than its grace period a server being taken over may take to exit.
const TAKEOVER_MARGIN: std::time::Duration = std::time::Duration::from_secs(30);

fn serialize_type() -> anyhow::Result<SerializeType> {
    match std::env::var("ROCKETMQ_SERIALIZE_TYPE") {
        Ok(v) if !v.is_empty() => SerializeType::from_name(&v)
            .with_context(|| format!("ROCKETMQ_SERIALIZE_TYPE={v:?} is neither JSON nor ROCKETMQ")),
        _ => Ok(SerializeType::Json),
    }
}

async fn bind_http(s: &Settings) -> anyhow::Result<Option<TcpListener>> {
    namesrv::http::bind(s)
        .await
        .with_context(|| cannot_listen_for_http(s))
}

/// What a failure to bind the HTTP port is reported as, whether the port is bound at start
/// or beside a server being taken over.
fn cannot_listen_for_http(s: &Settings) -> String {
    format!(
        "cannot listen for HTTP on {}:{}",
        s.http_bind_address, s.http_listen_port
    )
}

/// Upgrade: checks that `pid` is the server on our port and that the KV file and the HTTP
/// port will be ours, listens beside it, and lets it hand over before the KV store and the
/// routes it leaves behind are loaded. Until it is asked, any failure leaves it serving.
async fn take_over(pid: u32, s: &Settings) -> anyhow::Result<(TcpListener, Option<TcpListener>)> {
    use server::handover;
    handover::check_target(pid, s.listen_port as u16)?;
    KvStore::check(std::path::Path::new(&s.kv_config_path))?;
    let http = handover::bind_http_beside(s, pid)
        .await
        .with_context(|| cannot_listen_for_http(s))?;
    let listener = handover::bind_beside(s).await?;
    let grace = s.shutdown_grace_period_millis.duration();
    handover::retire(pid, grace + TAKEOVER_MARGIN).await?;
    let http = match http {
        Some(http) => Some(http),
        None => bind_http(s).await?,
    };
    Ok((listener, http))
}

/// What the process serves, read from the flags and the config file.
struct Shape {
    /// The name server's configuration; for a standalone controller, the file's
    /// NettyServerConfig keys (listener, limits, TLS, HTTP) in the same form.
    config: Config,
    /// The controller's keys, when it runs one.
    controller: Option<ControllerConfig>,
    /// Only the controller (`--controller`).
    standalone: bool,
    /// `enableControllerInNamesrv=true` came from the persisted config, not a `-c` file:
    /// Java starts no controller then, and neither does this server.
    enabled_without_file: bool,
}

impl Shape {
    fn load(args: &Args, env: &Env) -> anyhow::Result<Shape> {
        if args.controller {
            return Self::standalone(args.config_file.as_deref(), env);
        }
        let config = Config::load(args.config_file.as_deref(), env)?;
        let enabled = config.settings.enable_controller_in_namesrv;
        let controller = match (&args.config_file, enabled) {
            (Some(file), true) => Some(controller_keys(file, env)?),
            _ => None,
        };
        Ok(Shape {
            enabled_without_file: enabled && controller.is_none(),
            config,
            controller,
            standalone: false,
        })
    }

    /// `--controller`: the file fills ControllerConfig and the listener's NettyServerConfig.
    fn standalone(file: Option<&std::path::Path>, env: &Env) -> anyhow::Result<Shape> {
        let (props, origin) = match file {
            Some(file) => (
                namesrv::config::read_properties(file)?,
                format!("config file {}", file.display()),
            ),
            None => (Vec::new(), "defaults".to_owned()),
        };
        let mut config = Config::from_properties(&props, &origin, env)?;
        let controller = ControllerConfig::from_properties(&props, &origin, env)?;
        // The name server's tables are not served here: no route snapshot is restored or
        // written, and the KV store, which no request can reach, is not the name server's.
        config.settings.restore_routes_on_start = false;
        config.settings.kv_config_path =
            format!("{}/namesrv-kv.json", controller.keys.controller_store_path);
        // Java presets the standalone listener's port (DLedger then replaces it): `-p`
        // shows it.
        if !props.iter().any(|(k, _)| k == "listenPort") {
            config.settings.listen_port = 19876;
        }
        Ok(Shape {
            config,
            controller: Some(controller),
            standalone: true,
            enabled_without_file: false,
        })
    }

    /// `-p`: the name server's keys and, embedded, the ControllerConfig keys (Java's
    /// NamesrvStartup); standalone, the ControllerConfig and JraftConfig keys then the
    /// NettyServerConfig keys (Java's ControllerStartup).
    fn print(&self) -> String {
        let controller = self.controller.as_ref();
        match self.standalone {
            false => {
                let mut out = self.config.render_effective();
                out.extend(controller.map(|c| c.render_print(false)));
                out
            }
            true => {
                let mut out: String = controller.map(|c| c.render_print(true)).unwrap_or_default();
                out.push_str(&self.config.render_netty());
                out
            }
        }
    }
}

/// The controller's keys from the `-c` file the name server read.
fn controller_keys(file: &std::path::Path, env: &Env) -> anyhow::Result<ControllerConfig> {
    let props = namesrv::config::read_properties(file)?;
    let origin = format!("config file {}", file.display());
    Ok(ControllerConfig::from_properties(&props, &origin, env)?)
}

fn run(args: Args) -> anyhow::Result<()> {
    let env = Env::from_process();
    let shape = Shape::load(&args, &env)?;
    if let Some(file) = &args.config_file {
        println!("load config properties file OK, {}", file.display());
    }
    let config = &shape.config;
    // TLS: the -c file's tls.* lines, then -D system properties, then tls.config.file.
    let system: Vec<_> = (args.system_properties.iter())
        .map(|p| namesrv::tls::settings::system_property(p))
        .collect();
    let tls_base = TlsSettings::resolve_base(&config.tls_lines, &system);
    if args.print_config_item {
        print!("{}", shape.print());
        print!("{}", TlsSettings::reread(&tls_base).render());
        return Ok(());
    }
    // Checked after `-p`, as Java prints a file whose peers are wrong.
    let controller = match &shape.controller {
        Some(keys) => Some(ControllerSettings::from_config(keys, &config.settings)?),
        None => None,
    };
    let audit_log = Some(&config.settings.auth_audit_log)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from);
    let _log = namesrv::telemetry::init(&LogOptions {
        level: args.log_level.clone(),
        format: args.log_format,
        dir: args.log_dir.clone(),
        rotation: args.log_rotation,
        max_files: args.log_max_files.into(),
        max_size: args.log_max_size,
        audit_log,
    })
    .map_err(anyhow::Error::msg)?;
    if shape.enabled_without_file {
        tracing::warn!(
            "enableControllerInNamesrv=true in the persisted config, without -c: no controller is started (as Java, which reads the controller keys from the -c file only)"
        );
    }
    if let Some(keys) = shape
        .controller
        .as_ref()
        .filter(|k| !k.not_acted_on().is_empty())
    {
        tracing::info!(keys = ?keys.not_acted_on(), "controller keys accepted and not acted on");
    }
    let serialize_type = serialize_type()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("namesrv")
        .build()
        .context("cannot start the async runtime")?;
    let serving = Serving {
        controller,
        standalone: shape.standalone,
        serialize_type,
        takeover: args.takeover,
    };
    runtime.block_on(serve(shape.config, &tls_base, serving))
}

/// How [`serve`] serves, besides the configuration.
struct Serving {
    /// The controller's settings, when it runs one.
    controller: Option<ControllerSettings>,
    /// Only the controller.
    standalone: bool,
    serialize_type: SerializeType,
    takeover: Option<u32>,
}

/// The TLS client configuration of the controller's outbound connections (peers,
/// notifications to brokers): TLS when the remoting port insists on it
/// (`tls.server.mode=enforcing`) or clients are told to use it (`tls.enable=true`), with
/// the `tls.client.*` keys, as `nsadmin` connects.
fn peer_tls(
    tls_base: &TlsSettings,
) -> anyhow::Result<Option<std::sync::Arc<rustls::ClientConfig>>> {
    let s = TlsSettings::reread(tls_base);
    if s.mode != namesrv::tls::settings::ServerMode::Enforcing && !s.enable {
        return Ok(None);
    }
    let client =
        namesrv::tls::client::client_config(&s).context("TLS of the controller's peers")?;
    Ok(Some(std::sync::Arc::new(client)))
}

/// The controller's own listener: this node's peer port, bound by the name server's rules
/// (`bindAddress`, backlog, buffer sizes).
async fn bind_controller(
    s: &Settings,
    controller: &ControllerSettings,
) -> anyhow::Result<TcpListener> {
    let mut at = s.clone();
    at.listen_port = controller
        .self_peer()
        .and_then(|p| p.addr.rsplit_once(':'))
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_default();
    server::bind(&at).await.with_context(|| {
        format!(
            "cannot listen for the controller on {}:{}",
            at.bind_address, at.listen_port
        )
    })
}

/// Loads what the server needs, binds (or takes the port over), announces the boot, and serves
/// until a signal; then leaves the KV file complete.
async fn serve(config: Config, tls_base: &TlsSettings, serving: Serving) -> anyhow::Result<()> {
    let Serving {
        controller,
        standalone,
        serialize_type,
        takeover,
    } = serving;
    let s = &config.settings;
    if takeover.is_some() && controller.is_some() {
        anyhow::bail!(
            "--takeover: a controller node's port is not handed over; stop this node and start the new one (it rejoins its group from its raft log)"
        );
    }
    // Loaded before anything listens, so that a takeover that cannot load them fails
    // while the running server still serves.
    let server_config = ServerConfig::from_settings(s, serialize_type);
    let auth = Gate::load(s)?;
    let mut handles = Handles::new(auth, Prelude::load(tls_base, s).context("TLS")?);
    let (listener, http) = match (takeover, &controller) {
        (Some(pid), _) => take_over(pid, s).await?,
        (None, Some(c)) if standalone => (bind_controller(s, c).await?, bind_http(s).await?),
        (None, _) => {
            let listener = server::bind(s).await.with_context(|| {
                format!("cannot listen on {}:{}", s.bind_address, s.listen_port)
            })?;
            (listener, bind_http(s).await?)
        }
    };
    let mut more = Vec::new();
    if let Some(c) = controller.as_ref().filter(|_| !standalone) {
        let listener = bind_controller(s, c).await?;
        more.push(Remoting {
            listener,
            table: &CONTROLLER,
        });
    }
    let controller = match controller {
        Some(settings) => Some(Controller::start(settings, peer_tls(tls_base)?).await?),
        None => None,
    };
    let kv = KvStore::open_with(&s.kv_config_path, KvLimits::from_settings(s))?;
    let addr = listener.local_addr()?;
    tracing::info!(config = ?config.all_properties(), "effective configuration");
    // Before the boot line: whoever reads it may signal at once.
    let signals = namesrv::shutdown::listen();
    let serialize = serialize_type.name();
    let mut boot = vec![format!(
        "The Name Server boot success. serializeType={serialize}, address {addr}"
    )];
    if let Some(more) = more.first() {
        let at = more.listener.local_addr()?;
        boot.push(format!(
            "The ControllerManager boot success. serializeType={serialize}, address {at}"
        ));
    }
    if standalone {
        boot = vec![format!(
            "The Controller Server boot success. serializeType={serialize}, address {addr}"
        )];
    }
    for line in &boot {
        println!("{line}");
        tracing::info!("{line}");
    }
    if let Some(http) = &http {
        println!(
            "Status page, metrics and address server at http://{}/",
            http.local_addr()?
        );
    }
    let state = Namesrv::new(config, kv);
    // Warm restart: the routes of the last run, before the first request.
    if let Some(snapshot) = &server_config.snapshot {
        state.restore_routes(&snapshot.path);
    }
    let listeners = Listeners {
        remoting: listener,
        more,
        http,
    };
    let services = controller.as_ref().map(Controller::services);
    if let Some(controller) = controller {
        handles = handles.with_controller(controller);
    }
    let mut server = Server::new(server_config, handles)
        .with_service(AllocatorTrim)
        .with_services(services.unwrap_or_default());
    if standalone {
        server = server.serving(&CONTROLLER);
    }
    let (cause, watch) = signals.watch();
    let serving = async {
        server::run(
            listeners,
            state.clone(),
            server,
            shutdown(state.clone(), cause),
        )
        .await?;
        if standalone {
            tracing::info!("controller stopped");
            return Ok(());
        }
        // Leave the KV file complete, as Java's, for whatever starts next on it.
        let kv = state.clone();
        tokio::task::spawn_blocking(move || kv.kv().flush())
            .await?
            .context("cannot fold the KV journal into the KV file")?;
        tracing::info!("name server stopped");
        Ok(())
    };
    // The signal watch never ends (a second stop signal exits the process).
    tokio::select! {
        done = serving => done,
        never = watch => match never {},
    }
}
