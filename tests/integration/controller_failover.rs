//! The controller's port over real sockets, on an in-memory single-node log: two replicas of
//! one broker set come up as a broker does (ids, registration, heartbeats, election, the
//! master growing its sync-state set); when the master's connection closes, the other
//! replica is elected at once and told so by a NOTIFY_BROKER_ROLE_CHANGED dialled to it.

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

use crate::harness::controller::instant_controller;
use crate::harness::{Options, TestClient, TestServer};
use namesrv::controller::code::request as cc;
use namesrv::controller::{Controller, GroupStatus};
use namesrv::protocol::{FrameLimits, RemotingCommand, decode_frame, split_frame};

fn controller() -> Controller {
    let status = GroupStatus {
        self_id: "n0".into(),
        leader_id: Some("n0".into()),
        is_leader: true,
        leader_ready: true,
        term: 1,
        ..GroupStatus::default()
    };
    instant_controller(status).0
}

const SET: [(&str, &str); 2] = [
    ("clusterName", "DefaultCluster"),
    ("brokerName", "broker-a"),
];

/// One replica: its connection to the controller and the address it says it listens on.
struct Replica {
    client: TestClient,
    addr: String,
    id: String,
}

impl Replica {
    async fn ok(
        &mut self,
        code: i32,
        ext: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> RemotingCommand {
        let resp = self.client.call(code, ext, body).await;
        assert_eq!(resp.code, 0, "{code}: {:?}", resp.remark);
        resp
    }

    /// Next id, apply it, register: as a broker without an identity file starts.
    async fn join(&mut self) {
        let next = self.ok(cc::CONTROLLER_GET_NEXT_BROKER_ID, &SET, None).await;
        self.id = next.ext("nextBrokerId").unwrap().to_owned();
        let (id, addr) = (self.id.clone(), self.addr.clone());
        let code = format!("{addr};1");
        let apply = [
            SET[0],
            SET[1],
            ("appliedBrokerId", id.as_str()),
            ("registerCheckCode", code.as_str()),
        ];
        self.ok(cc::CONTROLLER_APPLY_BROKER_ID, &apply, None).await;
        let register = [
            SET[0],
            SET[1],
            ("brokerId", id.as_str()),
            ("brokerAddress", addr.as_str()),
        ];
        self.ok(cc::CONTROLLER_REGISTER_BROKER, &register, None)
            .await;
        self.heartbeat().await;
    }

    /// One BROKER_HEARTBEAT, one-way as brokers send it.
    async fn heartbeat(&mut self) {
        let fields = [
            SET[0],
            SET[1],
            ("brokerAddr", self.addr.as_str()),
            ("brokerId", self.id.as_str()),
            ("epoch", "1"),
            ("maxOffset", "100"),
        ];
        let mut beat = self.client.command(cc::BROKER_HEARTBEAT, &fields, None);
        beat.flag |= 0x2;
        self.client.send(&beat).await;
    }
}

async fn read_command(socket: &mut tokio::net::TcpStream) -> RemotingCommand {
    let mut buf = BytesMut::new();
    loop {
        let limits = FrameLimits {
            max_frame_length: 1 << 20,
        };
        if let Some(frame) = split_frame(&mut buf, limits).unwrap() {
            return decode_frame(frame).unwrap().0;
        }
        assert!(socket.read_buf(&mut buf).await.unwrap() > 0, "closed early");
    }
}

#[tokio::test]
async fn a_closed_master_connection_elects_the_in_sync_slave_and_tells_it() {
    let controller = controller();
    let served = TestServer::start_with(Options {
        controller_with: Some(controller.clone()),
        ..Options::default()
    })
    .await;
    let port = served.controller_addr.unwrap();
    let slave_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut master = Replica {
        client: TestClient::connect(port).await,
        addr: "127.0.0.1:1".into(),
        id: String::new(),
    };
    let mut slave = Replica {
        client: TestClient::connect(port).await,
        addr: slave_listener.local_addr().unwrap().to_string(),
        id: String::new(),
    };
    master.join().await;
    let elect = [
        SET[0],
        SET[1],
        ("brokerId", "1"),
        ("designateElect", "false"),
    ];
    let elected = master.ok(cc::CONTROLLER_ELECT_MASTER, &elect, None).await;
    assert_eq!(elected.ext("masterEpoch"), Some("1"));
    slave.join().await;
    assert_eq!(slave.id, "2");
    // The master takes the caught-up slave into its sync-state set.
    let alter = [SET[1], ("masterBrokerId", "1"), ("masterEpoch", "1")];
    let body = br#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#;
    let altered = master
        .ok(cc::CONTROLLER_ALTER_SYNC_STATE_SET, &alter, Some(body))
        .await;
    assert_eq!(altered.ext("newSyncStateSetEpoch"), Some("2"));
    slave.heartbeat().await;

    drop(master);
    let (mut socket, _) = tokio::time::timeout(Duration::from_secs(5), slave_listener.accept())
        .await
        .expect("the new master is dialled")
        .unwrap();
    let notice = read_command(&mut socket).await;
    assert_eq!(notice.code, cc::NOTIFY_BROKER_ROLE_CHANGED);
    assert_eq!(notice.ext("masterBrokerId"), Some("2"));
    assert_eq!(notice.ext("masterEpoch"), Some("2"));
    assert_eq!(notice.ext("masterAddress"), Some(slave.addr.as_str()));
    let info = slave
        .ok(cc::CONTROLLER_GET_REPLICA_INFO, &[SET[1]], None)
        .await;
    assert_eq!(info.ext("masterBrokerId"), Some("2"));
    let status = controller.status();
    assert_eq!(status.elections.len(), 2);
    assert!(status.last_failover.unwrap() < Duration::from_secs(1));
    served.stop().await.unwrap();
}
