//! The remoting client: one RocketMQ connection per server address, built on
//! [`crate::protocol`]'s frame codec. Requests are stamped like a Java client's (version 479,
//! language JAVA, JSON headers unless told otherwise), signed when [`Credentials`] are set
//! (as `AclClientRPCHook` does), answers matched by `opaque`, and a batch pipelined
//! ([`Client::call_many`]). [`decode`] reads the answers' bodies as a Java client does, and
//! `decode_controller` the controller's answers.
//!
//! Used by `nsadmin` ([`crate::admin`]) and by the daemon's peer checks ([`crate::peers`]);
//! nothing here formats output for either. Every failure becomes a [`CallError`] naming the
//! server and the request, so a caller can report it in one line and choose what to do. The
//! byte stream is opened in one place, `connect`; a TLS stream plugs in there.

pub(crate) mod decode;
pub(crate) mod decode_controller;
mod error;

use std::collections::HashMap;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout, timeout_at};

pub(crate) use error::{CallError, Failure, GET_BROKER_RUNTIME_INFO, QUERY_TOPIC_CONSUME_BY_WHO};

use crate::protocol::code::response;
use crate::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, signature,
    split_frame,
};

/// An access key and its secret, as `AclClientRPCHook` signs with.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Credentials {
    /// Sent as ext field `AccessKey`.
    pub(crate) access_key: String,
    /// Signs requests; never sent.
    pub(crate) secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// How the client talks: timeouts, header encoding and credentials.
#[derive(Debug, Clone)]
pub(crate) struct ClientOptions {
    /// How long to wait for each answer (mqadmin: 5000 ms): from the request, or from the
    /// previous answer of a pipelined batch, to the last byte of the answer — however the
    /// bytes trickle in.
    pub(crate) timeout: Duration,
    /// How long to wait for a TCP connection (mqadmin: 3000 ms).
    pub(crate) connect_timeout: Duration,
    /// Header encoding of requests.
    pub(crate) serialize_type: SerializeType,
    /// Credentials to sign every request with (mqadmin's come from `tools.yml`).
    pub(crate) credentials: Option<Credentials>,
    /// TLS over every connection (`nsadmin`: when `--tls` or `-Dtls.enable=true` asks).
    pub(crate) tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// Largest answer frame accepted; a larger one is refused from its length prefix, before
    /// its bytes are read, and its connection dropped.
    pub(crate) max_answer_bytes: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_millis(5000),
            connect_timeout: Duration::from_millis(3000),
            serialize_type: SerializeType::Json,
            credentials: None,
            tls: None,
            max_answer_bytes: MAX_ANSWER_BYTES,
        }
    }
}

/// A request to build: code, ext fields and body.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// The request code.
    pub(crate) code: i32,
    /// Ext fields (the custom header).
    pub(crate) fields: Vec<(&'static str, String)>,
    /// The body, if any.
    pub(crate) body: Option<Vec<u8>>,
}

impl Request {
    /// A request without fields or body.
    pub(crate) fn new(code: i32) -> Self {
        Request {
            code,
            fields: Vec::new(),
            body: None,
        }
    }

    /// Adds an ext field.
    pub(crate) fn field(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.fields.push((key, value.into()));
        self
    }

    /// Sets the body.
    pub(crate) fn body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }
}

/// A byte stream to a server: plain TCP or TLS over it.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Opens the byte stream to `addr`: the one place where transport security is chosen.
async fn connect(addr: &str, opts: &ClientOptions) -> Result<Box<dyn Stream>, Failure> {
    let tcp = match timeout(opts.connect_timeout, TcpStream::connect(addr)).await {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return Err(Failure::Connect(e)),
        Err(_) => return Err(Failure::ConnectTimeout(opts.connect_timeout.as_millis())),
    };
    tcp.set_nodelay(true).map_err(Failure::Connect)?;
    let Some(tls) = &opts.tls else {
        return Ok(Box::new(tcp));
    };
    let connector = tokio_rustls::TlsConnector::from(tls.clone());
    let name = crate::tls::client::server_name(addr);
    match timeout(opts.connect_timeout, connector.connect(name, tcp)).await {
        Ok(Ok(stream)) => Ok(Box::new(stream)),
        Ok(Err(e)) => Err(Failure::Connect(e)),
        Err(_) => Err(Failure::ConnectTimeout(opts.connect_timeout.as_millis())),
    }
}

struct Connection {
    stream: Box<dyn Stream>,
    buf: BytesMut,
}

/// The default answer limit: frames larger than any name server sends (a 1 M-topic list is
/// ~40 MB).
pub(crate) const MAX_ANSWER_BYTES: usize = 1 << 30;

/// A connection's read buffer is given back after a batch once it grew past this (a large
/// answer must not keep its memory for the connection's life).
const KEPT_BUFFER: usize = 64 * 1024;

/// Requests kept in flight on one connection by [`Client::call_many`]: enough to keep a server
/// busy, few enough for a Java name server's request queue (50 000 for route lookups).
pub(crate) const PIPELINE_WINDOW: usize = 512;

/// A client: one lazily opened connection per server address.
pub(crate) struct Client {
    opts: ClientOptions,
    connections: HashMap<String, Connection>,
    next_opaque: i32,
}

impl Client {
    /// A client with no connections yet.
    pub(crate) fn new(opts: ClientOptions) -> Self {
        Client {
            opts,
            connections: HashMap::new(),
            next_opaque: 1,
        }
    }

    /// The options this client uses.
    pub(crate) fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// Builds the wire command for `req` with the given opaque, signed if credentials are set.
    fn command(&self, req: &Request, opaque: i32) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(req.code, opaque);
        let mut fields: ExtFields = req.fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let body = req.body.as_deref().unwrap_or_default();
        if let Some(cred) = &self.opts.credentials {
            fields.insert(signature::ACCESS_KEY, cred.access_key.as_str());
            let content = signature::content(fields.iter(), body, &[]);
            fields.insert(
                signature::SIGNATURE,
                signature::sign(&cred.secret_key, &content),
            );
        }
        if !fields.is_empty() {
            cmd.ext_fields = Some(fields);
        }
        cmd.body = req.body.clone().filter(|b| !b.is_empty()).map(Into::into);
        cmd
    }

    async fn connection(&mut self, addr: &str) -> Result<&mut Connection, Failure> {
        if !self.connections.contains_key(addr) {
            let stream = connect(addr, &self.opts).await?;
            self.connections.insert(
                addr.to_owned(),
                Connection {
                    stream,
                    buf: BytesMut::with_capacity(8192),
                },
            );
        }
        Ok(self.connections.get_mut(addr).expect("inserted above"))
    }

    /// Sends one request to `addr` and returns the answer, whatever its code.
    pub(crate) async fn call(
        &mut self,
        addr: &str,
        req: &Request,
    ) -> Result<RemotingCommand, CallError> {
        let mut answers = self.call_many(addr, std::slice::from_ref(req)).await?;
        Ok(answers.pop().expect("one answer per request"))
    }

    /// Sends one request and requires a `SUCCESS` answer.
    pub(crate) async fn call_ok(
        &mut self,
        addr: &str,
        req: &Request,
    ) -> Result<RemotingCommand, CallError> {
        let answer = self.call(addr, req).await?;
        if answer.code == response::SUCCESS {
            Ok(answer)
        } else {
            Err(CallError {
                server: addr.to_owned(),
                code: req.code,
                failure: Failure::Refused {
                    code: answer.code,
                    remark: answer.remark,
                },
            })
        }
    }

    /// Sends `req` to `addr` one-way (Java's `invokeOneway`): written and flushed within
    /// the options' timeout, no answer awaited. A failed write drops the connection.
    pub(crate) async fn oneway(&mut self, addr: &str, req: &Request) -> Result<(), CallError> {
        let opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1).max(1);
        let mut cmd = self.command(req, opaque);
        cmd.flag |= crate::protocol::code::FLAG_ONEWAY;
        let mut frame = BytesMut::new();
        encode_frame(&cmd, self.opts.serialize_type, &mut frame);
        let wait = self.opts.timeout;
        let fail = |failure| CallError {
            server: addr.to_owned(),
            code: req.code,
            failure,
        };
        let conn = self.connection(addr).await.map_err(fail)?;
        let write = async {
            conn.stream.write_all(&frame).await?;
            conn.stream.flush().await
        };
        let failure = match timeout(wait, write).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => Failure::Io(e),
            Err(_) => Failure::Timeout(wait.as_millis()),
        };
        self.connections.remove(addr);
        Err(fail(failure))
    }

    /// Sends `reqs` to `addr` pipelined (at most [`PIPELINE_WINDOW`] in flight) and returns
    /// the answers in request order. A transport failure fails the whole batch and drops the
    /// connection; the error names the first request still unanswered.
    pub(crate) async fn call_many(
        &mut self,
        addr: &str,
        reqs: &[Request],
    ) -> Result<Vec<RemotingCommand>, CallError> {
        let base = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(reqs.len() as i32 + 1);
        if self.next_opaque <= 0 {
            self.next_opaque = 1;
        }
        let mut frames = Vec::with_capacity(reqs.len());
        for (i, req) in reqs.iter().enumerate() {
            let mut out = BytesMut::new();
            encode_frame(
                &self.command(req, base.wrapping_add(i as i32)),
                self.opts.serialize_type,
                &mut out,
            );
            frames.push(out);
        }
        let limits = Limits {
            wait: self.opts.timeout,
            frames: FrameLimits {
                max_frame_length: self.opts.max_answer_bytes,
            },
        };
        let fail = |index: usize, failure| CallError {
            server: addr.to_owned(),
            code: reqs.get(index).map_or(0, |r| r.code),
            failure,
        };
        let conn = self.connection(addr).await.map_err(|f| fail(0, f))?;
        let result = exchange(conn, &frames, base, limits).await;
        if conn.buf.capacity() > KEPT_BUFFER && conn.buf.len() <= KEPT_BUFFER {
            conn.buf = BytesMut::from(&conn.buf[..]);
        }
        match result {
            Ok(answers) => Ok(answers),
            Err((index, failure)) => {
                self.connections.remove(addr);
                Err(fail(index, failure))
            }
        }
    }
}

/// How long an answer may take, and how large it may be.
#[derive(Clone, Copy)]
struct Limits {
    wait: Duration,
    frames: FrameLimits,
}

/// Writes `frames` while reading their answers, keeping at most [`PIPELINE_WINDOW`] in
/// flight. On failure returns the index of the first unanswered request.
async fn exchange(
    conn: &mut Connection,
    frames: &[BytesMut],
    base: i32,
    limits: Limits,
) -> Result<Vec<RemotingCommand>, (usize, Failure)> {
    let wait = limits.wait;
    let window = Semaphore::new(PIPELINE_WINDOW);
    let (mut reader, mut writer) = tokio::io::split(&mut conn.stream);
    let buf = &mut conn.buf;
    let write_all = async {
        let mut pending = BytesMut::new();
        for frame in frames {
            if window.available_permits() == 0 && !pending.is_empty() {
                writer.write_all(&pending).await?;
                pending.clear();
            }
            window.acquire().await.expect("never closed").forget();
            pending.extend_from_slice(frame);
        }
        if !pending.is_empty() {
            writer.write_all(&pending).await?;
        }
        writer.flush().await
    };
    let read_all = async {
        let mut answers: Vec<Option<RemotingCommand>> = vec![None; frames.len()];
        let mut missing = frames.len();
        // The index of the first unanswered request, computed only when reporting a failure.
        let first_missing = |answers: &[Option<RemotingCommand>]| {
            answers.iter().position(Option::is_none).unwrap_or(0)
        };
        // One deadline per answer, not per read: a server that trickles bytes must not
        // hold the caller for longer than `wait`.
        let mut deadline = Instant::now() + wait;
        while missing > 0 {
            let frame = loop {
                match split_frame(buf, limits.frames) {
                    Ok(Some(frame)) => break frame,
                    Ok(None) => {}
                    Err(e) => {
                        return Err((first_missing(&answers), Failure::BadAnswer(e.to_string())));
                    }
                }
                let failure = match timeout_at(deadline, reader.read_buf(buf)).await {
                    Ok(Ok(0)) => Failure::Closed,
                    Ok(Ok(_)) => continue,
                    Ok(Err(e)) => Failure::Io(e),
                    Err(_) => Failure::Timeout(wait.as_millis()),
                };
                return Err((first_missing(&answers), failure));
            };
            let answer = match decode_frame(frame) {
                Ok((answer, _)) => answer,
                Err(e) => return Err((first_missing(&answers), Failure::BadAnswer(e.to_string()))),
            };
            let index = answer.opaque.wrapping_sub(base);
            if !answer.is_response() || index < 0 || index as usize >= frames.len() {
                continue; // not ours (a stale answer or a server-initiated request)
            }
            let slot = &mut answers[index as usize];
            if slot.is_none() {
                *slot = Some(answer);
                missing -= 1;
                window.add_permits(1);
                deadline = Instant::now() + wait;
            }
        }
        Ok(answers
            .into_iter()
            .map(|a| a.expect("all answered"))
            .collect())
    };
    let write_all = async { write_all.await.map_err(|e| (0usize, Failure::Io(e))) };
    let (_, answers) = tokio::try_join!(write_all, read_all)?;
    Ok(answers)
}
