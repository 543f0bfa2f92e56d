//! `idle_conns`: what idle connections cost the server, plaintext and TLS, in RSS.
//! `cargo run --release --example idle_conns -- --conns 10000` (figures in benches/README.md).
//!
//! Starts a release server in its default TLS mode (permissive, test-mode certificate), then
//! opens `--conns` plaintext connections that each ask for the name server's configuration
//! once (a response of a few kilobytes) and then stay open and idle, and reads the server's
//! RSS before and after; then does the same on a fresh server with TLS connections (rustls,
//! as a Java client with `tls.enable=true`: full handshake, any certificate). The client sessions live
//! in this process, so the server's RSS counts only its side. Prints one JSON line.

#[allow(dead_code)] // shared with the soak tool, which uses more of it
#[path = "soak/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "soak/sys.rs"]
mod sys;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use clap::Parser;
use namesrv::protocol::{RemotingCommand, SerializeType, encode_frame};
use namesrv::tls::TlsSettings;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser, Debug)]
#[command(about = "RSS of idle plaintext and TLS connections on the name server")]
struct Args {
    /// Connections held at once, for each kind.
    #[arg(long, default_value_t = 10_000)]
    conns: usize,
    /// Connections being opened at once.
    #[arg(long, default_value_t = 32)]
    parallel: usize,
    /// Build the release binary first if it is missing.
    #[arg(long)]
    build: bool,
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Opens one connection (TLS with `tls`), asks once, returns it idle.
async fn open(
    addr: SocketAddr,
    tls: Option<Arc<rustls::ClientConfig>>,
    request: Arc<Vec<u8>>,
) -> Result<Box<dyn Stream>, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut stream: Box<dyn Stream> = match tls {
        None => Box::new(tcp),
        Some(config) => Box::new(
            tokio_rustls::TlsConnector::from(config)
                .connect(namesrv::tls::client::server_name(&addr.to_string()), tcp)
                .await
                .map_err(|e| format!("TLS handshake: {e}"))?,
        ),
    };
    stream
        .write_all(&request)
        .await
        .map_err(|e| e.to_string())?;
    stream.flush().await.map_err(|e| e.to_string())?;
    let mut len = [0u8; 4];
    stream
        .read_exact(&mut len)
        .await
        .map_err(|e| e.to_string())?;
    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
    stream
        .read_exact(&mut rest)
        .await
        .map_err(|e| e.to_string())?;
    Ok(stream)
}

/// RSS once it has stopped moving (the allocator trims about once a second).
async fn settled_rss_kb(pid: u32) -> u64 {
    let mut last = sys::rss_kb(pid).unwrap_or(0);
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = sys::rss_kb(pid).unwrap_or(0);
        if now.abs_diff(last) < 64 {
            return now;
        }
        last = now;
    }
    last
}

/// Holds `n` idle connections of one kind; returns (RSS before, RSS held, failures).
async fn hold(
    args: &Args,
    pid: u32,
    addr: SocketAddr,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> (u64, u64, usize) {
    let before = settled_rss_kb(pid).await;
    let mut request = BytesMut::new();
    encode_frame(
        &RemotingCommand::request(319, 1),
        SerializeType::Json,
        &mut request,
    );
    let request = Arc::new(request.to_vec());
    let gate = Arc::new(tokio::sync::Semaphore::new(args.parallel));
    let tasks: Vec<_> = (0..args.conns)
        .map(|_| {
            let (gate, tls, request) = (gate.clone(), tls.clone(), request.clone());
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await;
                open(addr, tls, request).await
            })
        })
        .collect();
    let mut held = Vec::with_capacity(args.conns);
    let mut failed = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(s)) => held.push(s),
            _ => failed += 1,
        }
    }
    let during = settled_rss_kb(pid).await;
    drop(held);
    (before, during, failed)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    if let Err(e) = sys::ensure_nofile(args.conns as u64 + sys::FD_SLACK) {
        eprintln!("idle_conns: {e}");
        return ExitCode::from(2);
    }
    let bin = match server::release_binary(args.build) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("idle_conns: {e}");
            return ExitCode::from(2);
        }
    };
    let client = Arc::new(
        namesrv::tls::client::client_config(&TlsSettings::default()).expect("client config"),
    );
    // A fresh server for each kind, so neither inherits memory the other freed.
    let mut results = Vec::new();
    for tls in [None, Some(client)] {
        let props = [("tls.config.file", "/nonexistent/tls.properties".to_owned())];
        let mut srv = match server::ServerProc::start(&bin, "idle", &props).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("idle_conns: {e}");
                return ExitCode::from(2);
            }
        };
        results.push(hold(&args, srv.pid, srv.addr, tls).await);
        srv.stop(Duration::from_secs(10)).await;
    }
    let (plain, tls) = (results[0], results[1]);
    let per = |(before, during, failed): (u64, u64, usize)| {
        let n = (args.conns - failed).max(1) as f64;
        (during.saturating_sub(before)) as f64 * 1024.0 / n
    };
    println!(
        "{}",
        serde_json::json!({
            "conns": args.conns,
            "plain": {"rss_before_kb": plain.0, "rss_held_kb": plain.1, "failed": plain.2,
                      "bytes_per_conn": per(plain).round()},
            "tls": {"rss_before_kb": tls.0, "rss_held_kb": tls.1, "failed": tls.2,
                    "bytes_per_conn": per(tls).round()},
            "loadavg": sys::loadavg(),
        })
    );
    if plain.2 + tls.2 > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
