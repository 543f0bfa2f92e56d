//! The limits check, against a server of its own started with a small `maxConnections` and
//! `maxQueuedResponseBytes`:
//!
//! 1. open `max + extra` connections one after another, each asking GET_NAMESRV_CONFIG: the
//!    first `max` must be answered and the rest closed without a byte (EOF or reset), none
//!    left hanging; the refusals must be logged once (per 10 s), not once each;
//! 2. closing some served connections frees their slots for new ones, and the cap holds again;
//! 3. a client with a tiny receive buffer pipelines thousands of GET_NAMESRV_CONFIG requests
//!    and reads nothing: the server's RSS may grow by little more than the queue cap, another
//!    client keeps being served meanwhile, and once the stuck client reads, every response
//!    arrives, in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::{FrameLimits, SerializeType, decode_frame, encode_frame, split_frame};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio::time::Instant;

use crate::server::{ServerProc, Stopped};
use crate::stats::Lat;
use crate::sys;
use crate::wire::{self, CallError, Conn};

/// What the check does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `maxConnections` of the server.
    pub max_conns: usize,
    /// Connections opened beyond the cap.
    pub extra: usize,
    /// Requests the stuck client pipelines.
    pub pipelined: usize,
    /// `maxQueuedResponseBytes` of the server.
    pub queued_bytes: u64,
    /// Most RSS growth allowed while the client is stuck, MiB.
    pub max_rss_growth_mb: f64,
    /// Deadline of one request.
    pub request_timeout: Duration,
}

/// What the check saw.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// Connections answered among the first `max_conns`.
    pub served: usize,
    /// Connections closed without a reply (EOF).
    pub refused_eof: usize,
    /// Connections reset without a reply.
    pub refused_reset: usize,
    /// Connections neither answered nor closed within the request timeout.
    pub hung: usize,
    /// Connections past the cap that were answered, or early ones that were refused.
    pub misplaced: usize,
    /// Lines of the server log about refused connections.
    pub refusal_log_lines: usize,
    /// The first of them.
    pub refusal_log_line: Option<String>,
    /// Freed slots were reused and the cap held again afterwards.
    pub slots_reused: bool,
    /// Server RSS before the stuck client, KiB.
    pub rss_before_kb: u64,
    /// Largest server RSS while the client was stuck, KiB.
    pub rss_stuck_max_kb: u64,
    /// Request bytes the stuck client managed to write while not reading (into the kernel's
    /// socket buffers or the server).
    pub stuck_bytes_written: usize,
    /// Of its request bytes in total.
    pub stuck_bytes_total: usize,
    /// Bytes of the responses it read back at the end.
    pub stuck_response_bytes: usize,
    /// GET_NAMESRV_CONFIG latency of the other client meanwhile.
    pub others: Lat,
    /// Failures of the other client.
    pub others_failed: usize,
    /// Responses the stuck client got once it read (all code 0, in order).
    pub read_back: usize,
    /// Server RSS after the stuck client was served and gone, KiB.
    pub rss_after_kb: u64,
    /// How the server stopped.
    pub stopped: Option<Stopped>,
    /// What failed; empty when the check passed.
    pub failures: Vec<String>,
}

/// Runs the check with a server started from `bin`.
pub async fn run(bin: &std::path::Path, plan: &Plan) -> Report {
    let mut r = Report::default();
    let props = [
        ("maxConnections", plan.max_conns.to_string()),
        ("maxQueuedResponseBytes", plan.queued_bytes.to_string()),
    ];
    let mut server = match ServerProc::start(bin, "limits", &props).await {
        Ok(s) => s,
        Err(e) => {
            r.failures.push(format!("server did not start: {e}"));
            return r;
        }
    };
    eprintln!(
        "limits: server pid {} on {} (maxConnections={}, maxQueuedResponseBytes={})",
        server.pid, server.addr, plan.max_conns, plan.queued_bytes
    );
    let mut served = connection_cap(&server, plan, &mut r).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = server.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("connection limit reached"))
        .collect();
    r.refusal_log_lines = lines.len();
    r.refusal_log_line = lines.first().map(|l| l.to_string());
    if lines.len() != 1 {
        r.failures.push(format!(
            "{} refusals were logged in {} lines, expected 1 (once per 10 s)",
            plan.extra,
            lines.len()
        ));
    }
    r.slots_reused = reuse_slots(&server, plan, &mut served).await;
    if !r.slots_reused {
        r.failures
            .push("freed connection slots were not reused, or the cap did not hold again".into());
    }
    drop(served);
    tokio::time::sleep(Duration::from_secs(1)).await;
    stuck_client(&server, plan, &mut r).await;
    let stopped = server.stop(Duration::from_secs(15)).await;
    if !stopped.clean {
        r.failures
            .push(format!("server did not stop cleanly: {}", stopped.status));
    }
    r.stopped = Some(stopped);
    r
}

/// Step 1: `max + extra` connections, one after another; returns the served ones.
async fn connection_cap(server: &ServerProc, plan: &Plan, r: &mut Report) -> Vec<Conn> {
    let mut served = Vec::new();
    for i in 0..plan.max_conns + plan.extra {
        let mut conn = match Conn::connect(server.addr).await {
            Ok(c) => c,
            Err(e) => {
                r.failures
                    .push(format!("connection {i}: connect failed: {e}"));
                continue;
            }
        };
        let req = wire::config_request(&mut conn);
        let within_cap = i < plan.max_conns;
        match conn.call(&req, plan.request_timeout).await {
            Ok(resp) if resp.code == 0 => {
                r.served += 1;
                r.misplaced += usize::from(!within_cap);
                served.push(conn);
            }
            Ok(resp) => r.failures.push(format!(
                "connection {i}: code {} {:?}",
                resp.code, resp.remark
            )),
            Err(CallError::Closed(why)) => {
                if why == "EOF" {
                    r.refused_eof += 1;
                } else {
                    r.refused_reset += 1;
                }
                r.misplaced += usize::from(within_cap);
            }
            Err(CallError::Timeout) => r.hung += 1,
            Err(e) => r.failures.push(format!("connection {i}: {e}")),
        }
    }
    let refused = r.refused_eof + r.refused_reset;
    if r.served != plan.max_conns || refused != plan.extra || r.hung > 0 || r.misplaced > 0 {
        r.failures.push(format!(
            "{} connections: {} served, {refused} refused, {} hung, {} out of place; expected the first {} served and {} refused",
            plan.max_conns + plan.extra, r.served, r.hung, r.misplaced, plan.max_conns, plan.extra
        ));
    }
    served
}

/// Step 2: close ten served connections; ten new ones are served, the eleventh refused.
async fn reuse_slots(server: &ServerProc, plan: &Plan, served: &mut Vec<Conn>) -> bool {
    let n = served.len().min(10);
    served.truncate(served.len() - n);
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..=n {
        let Ok(mut conn) = Conn::connect(server.addr).await else {
            return false;
        };
        let req = wire::config_request(&mut conn);
        let ok = matches!(conn.call(&req, plan.request_timeout).await, Ok(r) if r.code == 0);
        if ok != (i < n) {
            return false;
        }
        if ok {
            served.push(conn);
        }
    }
    true
}

/// Step 3: the client that never reads.
async fn stuck_client(server: &ServerProc, plan: &Plan, r: &mut Report) {
    let pid = server.pid;
    r.rss_before_kb = sys::rss_kb(pid).unwrap_or(0);
    let socket = TcpSocket::new_v4().expect("socket");
    let _ = socket.set_recv_buffer_size(4096);
    let stream = match socket.connect(server.addr).await {
        Ok(s) => s,
        Err(e) => return r.failures.push(format!("stuck client: connect: {e}")),
    };
    let (mut rd, mut wr) = stream.into_split();
    let mut frames = BytesMut::new();
    for opaque in 1..=plan.pipelined as i32 {
        let mut cmd = namesrv::protocol::RemotingCommand::request(
            namesrv::protocol::code::request::GET_NAMESRV_CONFIG,
            opaque,
        );
        cmd.ext_fields = None;
        encode_frame(&cmd, SerializeType::Json, &mut frames);
    }
    r.stuck_bytes_total = frames.len();
    let accepted = Arc::new(AtomicUsize::new(0));
    let writer = {
        let accepted = accepted.clone();
        let frames = frames.freeze();
        tokio::spawn(async move {
            for chunk in frames.chunks(16 * 1024) {
                if wr.write_all(chunk).await.is_err() {
                    return;
                }
                accepted.fetch_add(chunk.len(), Ordering::Relaxed);
            }
            // Keep the write half open: closing it would look like the client leaving.
            std::future::pending::<()>().await;
        })
    };
    // While it is stuck: sample the RSS and serve another client.
    let mut rss_max = r.rss_before_kb;
    let mut other = Conn::connect(server.addr).await.ok();
    let mut lat = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(4) {
        rss_max = rss_max.max(sys::rss_kb(pid).unwrap_or(0));
        if let Some(c) = other.as_mut() {
            let req = wire::config_request(c);
            let t = Instant::now();
            match c.call(&req, plan.request_timeout).await {
                Ok(resp) if resp.code == 0 => lat.push(t.elapsed().as_micros() as u32),
                _ => r.others_failed += 1,
            }
        } else {
            r.others_failed += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    r.others = Lat::of(&mut lat);
    r.rss_stuck_max_kb = rss_max;
    r.stuck_bytes_written = accepted.load(Ordering::Relaxed);
    let growth_mb = rss_max.saturating_sub(r.rss_before_kb) as f64 / 1024.0;
    if growth_mb > plan.max_rss_growth_mb {
        r.failures.push(format!(
            "server RSS grew by {growth_mb:.1} MiB while a client did not read (limit {} MiB)",
            plan.max_rss_growth_mb
        ));
    }
    if r.others_failed > 0 || r.others.n == 0 {
        r.failures.push(format!(
            "another client was not served while one was stuck ({} failures)",
            r.others_failed
        ));
    }
    // Now read: every response must come, in order, with code 0.
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let limits = FrameLimits {
        max_frame_length: 64 << 20,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    'read: while r.read_back < plan.pipelined {
        while let Ok(Some(frame)) = split_frame(&mut buf, limits) {
            match decode_frame(frame) {
                Ok((cmd, _)) if cmd.code == 0 && cmd.opaque == r.read_back as i32 + 1 => {
                    r.read_back += 1
                }
                _ => break 'read,
            }
        }
        match tokio::time::timeout_at(deadline, rd.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => r.stuck_response_bytes += n,
            _ => break,
        }
    }
    writer.abort();
    if r.read_back != plan.pipelined {
        r.failures.push(format!(
            "the stuck client got {} of its {} responses once it read",
            r.read_back, plan.pipelined
        ));
    }
    drop((rd, other));
    tokio::time::sleep(Duration::from_millis(500)).await;
    r.rss_after_kb = sys::rss_kb(pid).unwrap_or(0);
}
