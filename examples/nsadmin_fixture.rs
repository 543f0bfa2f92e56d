//! A cluster for measuring `nsadmin` (benches/nsadmin.sh): registers `--brokers` fake
//! brokers, each serving `--topics` topics, on every name server given, keeps the
//! registrations alive (brokers named `--prefix`-0, -1, …), and answers the broker requests `clusterList` and `topicList -c` send
//! (GET_BROKER_RUNTIME_INFO, QUERY_TOPIC_CONSUME_BY_WHO) on each broker's own port.
//!
//! ```sh
//! cargo run --release --example nsadmin_fixture -- --topics 50000 --brokers 2 \
//!     --hold-secs 600 127.0.0.1:9876 127.0.0.1:9877 127.0.0.1:9878
//! ```
//! Prints `ready` once every registration succeeded, then heartbeats every 20 s until
//! `--hold-secs` pass (bounded, so a forgotten run stops by itself) or it is killed.

// A stand-alone blocking program: std sleeps and clocks are fine here.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::body::RegisterBroker;
use namesrv::protocol::code::request;
use namesrv::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

/// The registration of broker `name` at `addr` with `topics` topics (8/8 queues), as a 4.x
/// broker writes it.
fn registration(name: &str, addr: &str, topics: u64) -> RegisterBroker {
    RegisterBroker::new("DefaultCluster", name, addr)
        .ha_server_addr(addr)
        .topics((0..topics).map(|i| format!("Topic{i}")), 8)
        .without_mapping()
}

fn call(stream: &mut TcpStream, cmd: &RemotingCommand) -> RemotingCommand {
    let mut out = BytesMut::new();
    encode_frame(cmd, SerializeType::Json, &mut out);
    stream.write_all(&out).expect("send");
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Some(frame) = split_frame(&mut buf, FrameLimits::default()).expect("frame") {
            return decode_frame(frame).expect("decode").0;
        }
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "name server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Answers broker requests on `listener` for ever (one thread per connection).
fn serve_broker(listener: TcpListener) {
    for conn in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let mut conn = conn;
            let mut buf = BytesMut::new();
            let mut chunk = [0u8; 8192];
            loop {
                while let Ok(Some(frame)) = split_frame(&mut buf, FrameLimits::default()) {
                    let Ok((req, _)) = decode_frame(frame) else {
                        return;
                    };
                    let body: &[u8] = match req.code {
                        28 => br#"{"table":{"brokerVersionDesc":"V5_3_3","putTps":"10.0 10.0 10.0","getTransferredTps":"5.0 5.0 5.0","sendThreadPoolQueueSize":"0","sendThreadPoolQueueHeadWaitTimeMills":"0","pullThreadPoolQueueSize":"0","pullThreadPoolQueueHeadWaitTimeMills":"0","pageCacheLockTimeMills":"0","commitLogDiskRatio":"0.1","brokerActive":"true"}}"#,
                        300 => br#"{"groupList":["group-a"]}"#,
                        _ => b"",
                    };
                    let mut resp = RemotingCommand::success().with_body(body.to_vec());
                    resp.opaque = req.opaque;
                    let mut out = BytesMut::new();
                    encode_frame(&resp, SerializeType::Json, &mut out);
                    if conn.write_all(&out).is_err() {
                        return;
                    }
                }
                match conn.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        });
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let topics = arg(&args, "--topics", 50_000);
    let brokers = arg(&args, "--brokers", 2);
    let hold = arg(&args, "--hold-secs", 600);
    let prefix = args
        .iter()
        .position(|a| a == "--prefix")
        .and_then(|i| args.get(i + 1))
        .map_or("broker", String::as_str);
    let servers: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| a.contains(':') && (*i == 0 || !args[i - 1].starts_with("--")))
        .map(|(_, a)| a)
        .collect();
    let mut held = Vec::new();
    for b in 0..brokers {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a broker port");
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || serve_broker(listener));
        let name = format!("{prefix}-{b}");
        for server in &servers {
            let mut stream = TcpStream::connect(server.as_str()).expect("connect");
            let mut cmd = RemotingCommand::request(request::REGISTER_BROKER, 1);
            let registration = registration(&name, &addr, topics);
            cmd.ext_fields = Some(registration.header_fields().into_iter().collect());
            cmd.body = Some(registration.body_json().into());
            let resp = call(&mut stream, &cmd);
            assert_eq!(resp.code, 0, "register on {server}: {:?}", resp.remark);
            held.push((stream, name.clone(), addr.clone()));
        }
    }
    println!("ready");
    std::io::stdout().flush().ok();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(hold) {
        std::thread::sleep(Duration::from_secs(20).min(Duration::from_secs(hold)));
        for (stream, name, addr) in &mut held {
            let mut cmd = RemotingCommand::request(request::BROKER_HEARTBEAT, 2);
            let fields: ExtFields = [
                ("brokerName", name.as_str()),
                ("brokerAddr", addr.as_str()),
                ("clusterName", "DefaultCluster"),
            ]
            .into_iter()
            .collect();
            cmd.ext_fields = Some(fields);
            call(stream, &cmd);
        }
    }
}
