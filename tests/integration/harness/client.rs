//! A raw RemotingCommand client over TCP or TLS: frames out, frames in, requests matched to
//! their responses by opaque.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use namesrv::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

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

    /// Sends a request without a body and waits for its response.
    pub async fn ask(&mut self, code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
        self.call(code, ext, None).await
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
