//! The `namesrv` binary: parse flags, load the configuration, bind, serve until a signal.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{CommandFactory, Parser};
use namesrv::auth::Gate;
use namesrv::cli::Args;
use namesrv::config::{Config, Env, Settings};
use namesrv::kv::{KvLimits, KvStore};
use namesrv::protocol::SerializeType;
use namesrv::server::prelude::Prelude;
use namesrv::server::{self, Handles, Listeners, Server, ServerConfig, Service, ServiceFuture};
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
            ExitCode::FAILURE
        }
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

fn run(args: Args) -> anyhow::Result<()> {
    let env = Env::from_process();
    let config = Config::load(args.config_file.as_deref(), &env)?;
    if let Some(file) = &args.config_file {
        println!("load config properties file OK, {}", file.display());
    }
    // TLS: the -c file's tls.* lines, then -D system properties, then tls.config.file.
    let system: Vec<_> = (args.system_properties.iter())
        .map(|p| namesrv::tls::settings::system_property(p))
        .collect();
    let tls_base = TlsSettings::resolve_base(&config.tls_lines, &system);
    if args.print_config_item {
        print!("{}", config.render_effective());
        print!("{}", TlsSettings::reread(&tls_base).render());
        return Ok(());
    }
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
    let serialize_type = serialize_type()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("namesrv")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(config, &tls_base, serialize_type, args.takeover))
}

/// Loads what the server needs, binds (or takes the port over), announces the boot, and serves
/// until a signal; then leaves the KV file complete.
async fn serve(
    config: Config,
    tls_base: &TlsSettings,
    serialize_type: SerializeType,
    takeover: Option<u32>,
) -> anyhow::Result<()> {
    let s = &config.settings;
    // Loaded before anything listens, so that a takeover that cannot load them fails
    // while the running server still serves.
    let server_config = ServerConfig::from_settings(s, serialize_type);
    let auth = Gate::load(s)?;
    let handles = Handles::new(auth, Prelude::load(tls_base, s).context("TLS")?);
    let (listener, http) = match takeover {
        Some(pid) => take_over(pid, s).await?,
        None => {
            let listener = server::bind(s).await.with_context(|| {
                format!("cannot listen on {}:{}", s.bind_address, s.listen_port)
            })?;
            (listener, bind_http(s).await?)
        }
    };
    let kv = KvStore::open_with(&s.kv_config_path, KvLimits::from_settings(s))?;
    let addr = listener.local_addr()?;
    tracing::info!(config = ?config.all_properties(), "effective configuration");
    // Before the boot line: whoever reads it may signal at once.
    let signals = namesrv::shutdown::listen();
    let boot = format!(
        "The Name Server boot success. serializeType={}, address {addr}",
        serialize_type.name()
    );
    println!("{boot}");
    tracing::info!("{boot}");
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
        more: Vec::new(),
        http,
    };
    let server = Server::new(server_config, handles).with_service(AllocatorTrim);
    let (cause, watch) = signals.watch();
    let serving = async {
        server::run(
            listeners,
            state.clone(),
            server,
            shutdown(state.clone(), cause),
        )
        .await?;
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
