//! The client side of the protocol, as the soak tool needs it: one connection with its read
//! buffer, request/response calls with a deadline, the requests the tool sends (route lookups,
//! full broker registrations, GET_NAMESRV_CONFIG) and a check of route bodies.
//!
//! Frames are built and parsed with the crate's own codec (`encode_frame`, `split_frame`,
//! `decode_frame`); registration bodies are spliced from a per-group topic table written once,
//! so that the load generator does not spend its CPU re-serialising 100 topics every time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use namesrv::protocol::body::RegisterBroker;
use namesrv::protocol::code::request;
use namesrv::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
    /// The server closed the connection (EOF or reset) before answering.
    Closed(String),
    /// No answer within the deadline.
    Timeout,
    /// Bytes that are not a valid frame, or a response to another request.
    Protocol(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Closed(why) => write!(f, "connection closed by the server ({why})"),
            CallError::Timeout => f.write_str("no response before the request timeout"),
            CallError::Protocol(why) => write!(f, "protocol error: {why}"),
        }
    }
}

/// One client connection.
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    next_opaque: i32,
}

impl Conn {
    /// Connects to `addr` with Nagle off.
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Conn> {
        Ok(Conn::new(TcpStream::connect(addr).await?))
    }

    /// Wraps an already connected stream.
    pub fn new(stream: TcpStream) -> Conn {
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            buf: BytesMut::with_capacity(4096),
            next_opaque: 1,
        }
    }

    /// A request with a fresh opaque.
    pub fn request(
        &mut self,
        code: i32,
        ext: &[(&str, &str)],
        body: Option<Bytes>,
    ) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(code, self.next_opaque);
        self.next_opaque = self.next_opaque.wrapping_add(1) & 0x7fff_ffff;
        if !ext.is_empty() {
            cmd.ext_fields = Some(ext.iter().copied().collect::<ExtFields>());
        }
        cmd.body = body.filter(|b| !b.is_empty());
        cmd
    }

    /// Writes `cmd` without waiting for anything.
    pub async fn send(&mut self, cmd: &RemotingCommand) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        encode_frame(cmd, SerializeType::Json, &mut out);
        self.stream.write_all(&out).await
    }

    /// The next command from the server; `Err(Closed)` at EOF or on a socket error.
    pub async fn recv(&mut self) -> Result<RemotingCommand, CallError> {
        let limits = FrameLimits {
            max_frame_length: 64 * 1024 * 1024,
        };
        loop {
            match split_frame(&mut self.buf, limits) {
                Ok(Some(frame)) => {
                    return decode_frame(frame)
                        .map(|(cmd, _)| cmd)
                        .map_err(|e| CallError::Protocol(e.to_string()));
                }
                Ok(None) => {}
                Err(e) => return Err(CallError::Protocol(e.to_string())),
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) => return Err(CallError::Closed("EOF".into())),
                Ok(_) => {}
                Err(e) => return Err(CallError::Closed(e.to_string())),
            }
        }
    }

    /// Sends `cmd` and waits at most `timeout` for its response.
    pub async fn call(
        &mut self,
        cmd: &RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, CallError> {
        let exchange = async {
            self.send(cmd)
                .await
                .map_err(|e| CallError::Closed(e.to_string()))?;
            let resp = self.recv().await?;
            if resp.opaque != cmd.opaque || !resp.is_response() {
                return Err(CallError::Protocol(format!(
                    "expected the response to opaque {}, got code {} opaque {}",
                    cmd.opaque, resp.code, resp.opaque
                )));
            }
            Ok(resp)
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(CallError::Timeout))
    }

    /// Resolves when the server closes the connection or sends something unasked (either is
    /// a failure for a connection that has no request outstanding). Cancel-safe.
    pub async fn closed_or_unexpected(&mut self) -> String {
        match self.stream.read_buf(&mut self.buf).await {
            Ok(0) => "closed by the server (EOF)".into(),
            Ok(n) => format!("{n} unexpected bytes from the server"),
            Err(e) => format!("closed by the server ({e})"),
        }
    }
}

/// GET_ROUTEINFO_BY_TOPIC for `topic`.
pub fn route_request(conn: &mut Conn, topic: &str) -> RemotingCommand {
    conn.request(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)], None)
}

/// GET_NAMESRV_CONFIG.
pub fn config_request(conn: &mut Conn) -> RemotingCommand {
    conn.request(request::GET_NAMESRV_CONFIG, &[], None)
}

/// The name of topic `i` of topic group `group`.
pub fn topic_name(group: usize, i: usize) -> String {
    format!("SoakTopic_{group:04}_{i:03}")
}

/// The `topicConfigTable` JSON of a topic group (its `topics` topics, 8/8 queues, perm 6).
pub fn topic_table(group: usize, topics: usize) -> Arc<str> {
    RegisterBroker::topic_table((0..topics).map(|i| topic_name(group, i)), 8).into()
}

/// One fake broker: a master (`brokerId` 0) with its own name and address.
pub struct BrokerSpec {
    /// `brokerName`.
    pub name: String,
    /// `brokerAddr`.
    pub addr: String,
    /// `haServerAddr`.
    pub ha_addr: String,
    /// Its topic group's table.
    pub table: Arc<str>,
}

impl BrokerSpec {
    /// Broker number `b`, carrying `table`.
    pub fn new(b: usize, table: Arc<str>) -> BrokerSpec {
        // Distinct fake addresses in 10.x.y.z: nothing ever connects to them.
        let ip = format!("10.{}.{}.{}", (b >> 16) & 255, (b >> 8) & 255, b & 255);
        BrokerSpec {
            name: format!("soak-broker-{b:05}"),
            addr: format!("{ip}:10911"),
            ha_addr: format!("{ip}:10912"),
            table,
        }
    }

    /// A full REGISTER_BROKER (JSON body, every topic) with data version `counter`/`timestamp`.
    pub fn register(&self, conn: &mut Conn, counter: u64, timestamp: u64) -> RemotingCommand {
        let registration = RegisterBroker::new("SoakCluster", &self.name, &self.addr)
            .ha_server_addr(&self.ha_addr)
            .with_topic_table(&self.table)
            .data_version(counter as i64, timestamp as i64);
        let fields = registration.header_fields();
        let ext: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        conn.request(
            request::REGISTER_BROKER,
            &ext,
            Some(Bytes::from(registration.body_json())),
        )
    }
}

/// Checks a route body: standard JSON with `brokers` broker entries and as many queue entries.
pub fn check_route_body(body: &[u8], brokers: usize) -> Result<(), String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("route body is not JSON: {e}"))?;
    let count = |key: &str| v.get(key).and_then(|x| x.as_array()).map_or(0, Vec::len);
    let (bd, qd) = (count("brokerDatas"), count("queueDatas"));
    if bd == brokers && qd == brokers {
        Ok(())
    } else {
        Err(format!(
            "route lists {bd} brokers and {qd} queue entries, expected {brokers} of each"
        ))
    }
}

/// Milliseconds since the Unix epoch, for data-version timestamps.
pub fn now_ms() -> u64 {
    namesrv::protocol::body::data_version::wall_clock_millis().max(0) as u64
}
