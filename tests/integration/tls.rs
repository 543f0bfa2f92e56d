//! TLS on the remoting port with real clients: rustls (our client side, as a Java client with
//! `tls.enable=true` behaves) and `openssl s_client`, certificates made by the `openssl` CLI —
//! the three modes, test mode, CA-signed chains, encrypted keys, mutual TLS, start-up errors and
//! rotation without restart.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::code::request;
use namesrv::protocol::{SerializeType, encode_frame};
use namesrv::tls::TlsSettings;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::harness::{
    Options, TestClient, TestServer, cluster_info, register_master, route, tls_client_config,
    tls_client_with,
};

/// Certificates made with the `openssl` CLI in a temporary directory.
pub struct Pki {
    pub dir: tempfile::TempDir,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl CLI runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pki {
    /// A CA (`ca.pem`) and leaves `server`, `client` signed by it, plus a self-signed `rogue`.
    pub fn new() -> Pki {
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
        };
        pki.self_signed("ca", "test-ca");
        pki.leaf("server");
        pki.leaf("client");
        pki.self_signed("rogue", "rogue");
        pki
    }

    /// `NAME.pem` / `NAME.key` (PKCS#8), self-signed with common name `cn`.
    fn self_signed(&self, name: &str, cn: &str) {
        self.new_key(&format!("{name}.key"), &format!("{name}.pem"), cn, true);
    }

    /// A P-256 key in `key` and, in `out`, a request for common name `cn`, or with `self_signed`
    /// a certificate valid for 30 days.
    fn new_key(&self, key: &str, out: &str, cn: &str, self_signed: bool) {
        let subject = format!("/CN={cn}");
        let mut args = vec!["req"];
        if self_signed {
            args.push("-x509");
        }
        args.extend([
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            key,
            "-out",
            out,
        ]);
        if self_signed {
            args.extend(["-days", "30"]);
        }
        args.extend(["-subj", &subject]);
        openssl(self.dir.path(), &args);
    }

    /// `NAME.pem` / `NAME.key` (PKCS#8), signed by the CA.
    pub fn leaf(&self, name: &str) {
        let dir = self.dir.path();
        std::fs::write(
            dir.join("ext.cnf"),
            "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n\
             extendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        self.new_key(&key, &csr, name, false);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "30",
                "-extfile",
                "ext.cnf",
            ],
        );
    }

    /// `NAME.enc.key`: NAME's key encrypted with PBES2 (AES-256-CBC) and `password`.
    pub fn encrypt(&self, name: &str, password: &str) -> String {
        let out = format!("{name}.enc.key");
        openssl(
            self.dir.path(),
            &[
                "pkcs8",
                "-topk8",
                "-v2",
                "aes-256-cbc",
                "-in",
                &format!("{name}.key"),
                "-out",
                &out,
                "-passout",
                &format!("pass:{password}"),
            ],
        );
        self.path(&out)
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }

    /// The first certificate of a PEM file, as DER.
    pub fn der(&self, file: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_file(self.path(file)).unwrap()
    }

    /// Server properties with NAME's certificate and key, test mode off.
    pub fn server_properties(&self, name: &str) -> String {
        format!(
            "tls.test.mode.enable=false\ntls.server.certPath={}\ntls.server.keyPath={}\n",
            self.path(&format!("{name}.pem")),
            self.path(&format!("{name}.key"))
        )
    }
}

async fn server_with(properties: &str) -> TestServer {
    TestServer::with_properties(properties).await
}

/// The certificate the server presents to a new TLS connection.
async fn presented(server: &TestServer) -> CertificateDer<'static> {
    let config = tls_client_config();
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(namesrv::tls::client::server_name("127.0.0.1:1"), tcp)
        .await
        .unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].clone()
}

async fn tls_client(server: &TestServer) -> TestClient {
    TestClient::connect_tls(server.addr, tls_client_config(), b"")
        .await
        .unwrap()
}

#[tokio::test]
async fn a_default_server_serves_tls_and_plaintext_on_one_port() {
    let (server, mut plain) = TestServer::with_client("").await;
    register_master(
        &mut plain,
        "broker-a",
        "127.0.0.1:10911",
        &["TopicT", "TopicU"],
    )
    .await;
    let mut tls = tls_client(&server).await;
    let over_tls = route(&mut tls, "TopicT").await;
    let over_plain = route(&mut plain, "TopicT").await;
    assert_eq!(over_tls.code, 0);
    assert_eq!(over_tls.body, over_plain.body, "the same bytes inside TLS");
    let info = cluster_info(&mut tls).await;
    assert_eq!(info.code, 0);
    let metrics = server.state.metrics();
    assert_eq!(
        metrics.preludes(namesrv::metrics::PreludeOutcome::TlsHandshake),
        1
    );
    // The counters reach /metrics.
    let text = namesrv::http::exposition::render(&server.state, &server.auth);
    assert!(text.contains("namesrv_tls_handshakes_total 1\n"), "{text}");
    assert!(text.contains("namesrv_handshake_failures_total{reason=\"timeout\"} 0\n"));
}

#[tokio::test]
async fn enforcing_closes_plaintext_and_disabled_closes_tls_without_a_frame() {
    let server = server_with("tls.server.mode=enforcing\n").await;
    let mut plain = server.client().await;
    let cmd = plain.command(request::GET_BROKER_CLUSTER_INFO, &[], None);
    plain.send(&cmd).await;
    assert!(plain.closed_without_reply().await);
    let mut tls = tls_client(&server).await;
    assert_eq!(cluster_info(&mut tls).await.code, 0);

    let server = server_with("tls.server.mode=disabled\n").await;
    let refused = TestClient::connect_tls(server.addr, tls_client_config(), b"").await;
    assert!(refused.is_err(), "the handshake sees EOF");
    let mut plain = server.client().await;
    assert_eq!(cluster_info(&mut plain).await.code, 0);
}

#[tokio::test]
async fn java_system_properties_set_the_mode_over_the_config_file() {
    let server = TestServer::start_with(Options {
        properties: "tls.server.mode=disabled\n".into(),
        system_properties: vec!["tls.server.mode=enforcing".into()],
        ..Options::default()
    })
    .await;
    let mut plain = server.client().await;
    plain.send_raw(&[0, 0, 0, 1]).await;
    assert!(plain.closed_without_reply().await);
    assert!(
        tls_client(&server)
            .await
            .call(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[], None)
            .await
            .code
            == 0
    );
}

#[tokio::test]
async fn a_ca_signed_chain_and_an_encrypted_key_from_tls_config_file() {
    let pki = Pki::new();
    let key = pki.encrypt("server", "s3cret");
    let file = pki.dir.path().join("tls.properties");
    std::fs::write(
        &file,
        format!(
            "tls.test.mode.enable=false\ntls.server.certPath={}\ntls.server.keyPath={key}\n\
             tls.server.keyPassword=s3cret\n",
            pki.path("server.pem")
        ),
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        system_properties: vec![format!("tls.config.file={}", file.display())],
        ..Options::default()
    })
    .await;
    assert_eq!(presented(&server).await, pki.der("server.pem"));
    // A client that verifies the chain against the CA (no host name check, as Java).
    let verifying = TlsSettings {
        test_mode: false,
        client_auth_server: true,
        client_trust_cert_path: Some(pki.path("ca.pem")),
        ..TlsSettings::default()
    };
    let mut c = tls_client_with(server.addr, &verifying).await;
    assert_eq!(cluster_info(&mut c).await.code, 0);
    // The same client refuses a server whose certificate the CA did not sign.
    let rogue = server_with(&pki.server_properties("rogue")).await;
    let config = Arc::new(namesrv::tls::client::client_config(&verifying).unwrap());
    assert!(
        TestClient::connect_tls(rogue.addr, config, b"")
            .await
            .is_err()
    );
}

fn load_error(properties: &str) -> String {
    let props = namesrv::config::properties::parse(properties).unwrap();
    let env = namesrv::config::Env {
        home: "/tmp".into(),
        rocketmq_home: None,
    };
    let config = namesrv::config::Config::from_properties(&props, "test", &env).unwrap();
    let mut lines = config.tls_lines.clone();
    lines.insert(0, ("tls.config.file".into(), "/nonexistent/x".into()));
    let base = TlsSettings::resolve_base(&lines, &[]);
    namesrv::server::prelude::Prelude::load(&base, &config.settings)
        .unwrap_err()
        .to_string()
}

#[tokio::test]
async fn missing_or_unusable_material_is_a_start_up_error_naming_key_and_file() {
    let pki = Pki::new();
    let msg = load_error("tls.test.mode.enable=false\n");
    assert!(msg.contains("tls.server.certPath is not set"), "{msg}");
    let msg = load_error(&format!(
        "tls.test.mode.enable=false\ntls.server.certPath=/no/such.pem\ntls.server.keyPath={}\n",
        pki.path("server.key")
    ));
    assert!(
        msg.contains("tls.server.certPath=/no/such.pem") && msg.contains("cannot read"),
        "{msg}"
    );
    let key = pki.encrypt("server", "right");
    for (password, expected) in [
        ("", "is encrypted: set tls.server.keyPassword"),
        ("wrong", "cannot decrypt"),
    ] {
        let mut props = format!(
            "tls.test.mode.enable=false\ntls.server.certPath={}\ntls.server.keyPath={key}\n",
            pki.path("server.pem")
        );
        if !password.is_empty() {
            props.push_str(&format!("tls.server.keyPassword={password}\n"));
        }
        let msg = load_error(&props);
        assert!(
            msg.contains(&format!("tls.server.keyPath={key}")) && msg.contains(expected),
            "{msg}"
        );
        assert!(!msg.contains("wrong"), "never the password: {msg}");
    }
    // The client's key with the server's certificate.
    let msg = load_error(&format!(
        "tls.test.mode.enable=false\ntls.server.certPath={}\ntls.server.keyPath={}\n",
        pki.path("server.pem"),
        pki.path("client.key")
    ));
    assert!(
        msg.contains("tls.server.certPath") && msg.contains("tls.server.keyPath"),
        "{msg}"
    );
    // Disabled mode reads nothing, as Java.
    let props = namesrv::config::properties::parse(
        "tls.server.mode=disabled\ntls.test.mode.enable=false\n",
    )
    .unwrap();
    let env = namesrv::config::Env {
        home: "/tmp".into(),
        rocketmq_home: None,
    };
    let config = namesrv::config::Config::from_properties(&props, "t", &env).unwrap();
    let base = TlsSettings::resolve_base(&config.tls_lines, &[]);
    assert!(namesrv::server::prelude::Prelude::load(&base, &config.settings).is_ok());
}

#[tokio::test]
async fn the_binary_refuses_to_start_and_p_never_prints_a_password() {
    use crate::harness::process::BIN;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nkvConfigPath={}/kv.json\ntls.test.mode.enable=false\n\
             tls.server.certPath=/no/cert.pem\ntls.server.keyPath=/no/key.pem\n\
             tls.server.keyPassword=hunter2\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["-Dtls.config.file=/nonexistent", "-c"])
        .arg(&conf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("tls.server.certPath=/no/cert.pem"),
        "{stderr}"
    );
    let out = Command::new(BIN)
        .args([
            "-Dtls.config.file=/nonexistent",
            "-Dtls.server.mode=enforcing",
            "-p",
            "-c",
        ])
        .arg(&conf)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tls.server.mode=enforcing\n"), "{stdout}");
    assert!(
        stdout.contains("tls.server.certPath=/no/cert.pem\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# tls.server.keyPassword is set (not shown)"),
        "{stdout}"
    );
    assert!(!stdout.contains("hunter2"), "{stdout}");
}

/// Runs `openssl s_client` with `args` against `addr`, sending `input` and returning stdout.
async fn s_client(
    addr: std::net::SocketAddr,
    args: Vec<String>,
    input: Vec<u8>,
) -> (bool, Vec<u8>) {
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new("openssl")
            .args([
                "s_client",
                "-connect",
                &addr.to_string(),
                "-quiet",
                "-ign_eof",
            ])
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.success(), out.stdout)
    })
    .await
    .unwrap()
}

/// A cluster-info request followed by a malformed frame, so the server answers, then closes.
fn request_then_close() -> Vec<u8> {
    let mut out = BytesMut::new();
    let cmd = namesrv::protocol::RemotingCommand::request(request::GET_BROKER_CLUSTER_INFO, 7);
    encode_frame(&cmd, SerializeType::Json, &mut out);
    out.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    out.to_vec()
}

fn answered(stdout: &[u8]) -> bool {
    stdout.len() > 8 && String::from_utf8_lossy(stdout).contains("\"opaque\":7")
}

#[tokio::test]
async fn mutual_tls_with_openssl_s_client_and_rustls() {
    let pki = Pki::new();
    let mut props = pki.server_properties("server");
    props.push_str(&format!(
        "tls.server.need.client.auth=require\ntls.server.authClient=true\ntls.server.trustCertPath={}\n",
        pki.path("ca.pem")
    ));
    let server = server_with(&props).await;
    let with = |name: &str| {
        vec![
            "-cert".to_owned(),
            pki.path(&format!("{name}.pem")),
            "-key".to_owned(),
            pki.path(&format!("{name}.key")),
        ]
    };
    let (_, out) = s_client(server.addr, with("client"), request_then_close()).await;
    assert!(answered(&out), "a CA-signed client certificate is served");
    let (_, out) = s_client(server.addr, with("rogue"), request_then_close()).await;
    assert!(
        !answered(&out),
        "a certificate the CA did not sign is refused"
    );
    let (_, out) = s_client(server.addr, Vec::new(), request_then_close()).await;
    assert!(!answered(&out), "no certificate is refused with require");
    // Our rustls client side with a client certificate (tls.client.* keys).
    let settings = TlsSettings {
        test_mode: false,
        client_cert_path: Some(pki.path("client.pem")),
        client_key_path: Some(pki.encrypt("client", "pw")),
        client_key_password: Some("pw".into()),
        ..TlsSettings::default()
    };
    let mut c = tls_client_with(server.addr, &settings).await;
    assert_eq!(cluster_info(&mut c).await.code, 0);

    // optional: no certificate is fine; authClient=false: any certificate is fine.
    let mut props = pki.server_properties("server");
    props.push_str("tls.server.need.client.auth=optional\n");
    let server = server_with(&props).await;
    for args in [Vec::new(), with("rogue")] {
        let (_, out) = s_client(server.addr, args, request_then_close()).await;
        assert!(answered(&out));
    }
}

/// Polls `done` every 20 ms for up to `secs` seconds.
async fn eventually(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..secs * 50 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

fn replace(pki: &Pki, from: &str, to: &str) {
    for ext in ["pem", "key"] {
        let tmp = PathBuf::from(pki.path(&format!("{to}.{ext}.tmp")));
        std::fs::copy(pki.path(&format!("{from}.{ext}")), &tmp).unwrap();
        std::fs::rename(&tmp, pki.path(&format!("{to}.{ext}"))).unwrap();
    }
}

#[tokio::test]
async fn certificates_rotate_without_restart_and_a_broken_file_keeps_the_old_one() {
    let pki = Pki::new();
    pki.leaf("live");
    pki.leaf("second");
    pki.leaf("third");
    let server = server_with(&pki.server_properties("live")).await;
    let tls = server.prelude().tls().unwrap().clone();
    assert_eq!(presented(&server).await, pki.der("live.pem"));
    let mut old = tls_client(&server).await;
    assert_eq!(cluster_info(&mut old).await.code, 0);

    // SIGHUP (the reload request it makes): new connections get the new certificate.
    replace(&pki, "second", "live");
    server.reload.request();
    assert!(eventually(5, || tls.stats().reloads == 1).await);
    assert_eq!(presented(&server).await, pki.der("second.pem"));
    assert_eq!(
        cluster_info(&mut old).await.code,
        0,
        "existing connection untouched"
    );

    // A broken file: the previous material stays.
    std::fs::write(pki.path("live.pem"), "not a certificate").unwrap();
    server.reload.request();
    assert!(eventually(5, || tls.stats().failed_reloads == 1).await);
    assert_eq!(presented(&server).await, pki.der("second.pem"));
    // /metrics says so (the alert rules' namesrv_tls_reload_failing) until a reload succeeds.
    let metrics = || namesrv::http::exposition::render(&server.state, &server.auth);
    assert!(eventually(5, || metrics().contains("namesrv_tls_reload_failing 1\n")).await);
    assert!(metrics().contains("namesrv_tls_reloads_total{outcome=\"failed\"} 1\n"));

    // A changed file is noticed without a signal.
    replace(&pki, "third", "live");
    assert!(
        eventually(15, || tls.stats().reloads == 2).await,
        "{:?}",
        tls.stats()
    );
    assert_eq!(presented(&server).await, pki.der("third.pem"));
    assert!(eventually(5, || metrics().contains("namesrv_tls_reload_failing 0\n")).await);
}
