//! UPDATE_NAMESRV_CONFIG never stores a configuration that would fail the next start, lock
//! clients out or print as something else: each refusal is an error naming the key and the
//! reason, and neither the `-c` file nor the live configuration changes.

use namesrv::protocol::code::{request, response};

use crate::harness::{Options, TestClient, TestServer, body_text, update_config};

/// A server on a `-c` file holding `text`.
async fn server_with_file(text: &str) -> (TestServer, tempfile::TempDir, std::path::PathBuf) {
    let (dir, file) = crate::harness::temp_file("namesrv.conf", text);
    let server = TestServer::start_with(Options {
        config_file: Some(file.clone()),
        ..Options::default()
    })
    .await;
    (server, dir, file)
}

/// Sends `body` and asserts it is refused with `code` and a remark containing every one of
/// `words`, with nothing written and nothing changed.
async fn refused(
    c: &mut TestClient,
    file: &std::path::Path,
    body: &str,
    code: i32,
    words: &[&str],
) {
    let before_file = std::fs::read(file).unwrap();
    let before = body_text(&c.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    let resp = c
        .call(request::UPDATE_NAMESRV_CONFIG, &[], Some(body.as_bytes()))
        .await;
    let remark = resp.remark.clone().unwrap_or_default();
    assert_eq!(resp.code, code, "{body:?} answered {remark:?}");
    for word in words {
        assert!(
            remark.contains(word),
            "{body:?}: remark {remark:?} lacks {word:?}"
        );
    }
    assert_eq!(
        std::fs::read(file).unwrap(),
        before_file,
        "{body:?}: the file changed"
    );
    let after = body_text(&c.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert_eq!(after, before, "{body:?}: the configuration changed");
}

#[tokio::test]
async fn updates_that_would_break_the_next_start_are_refused_and_nothing_is_written() {
    let (server, _dir, file) =
        server_with_file("bindAddress=127.0.0.1\nlistenPort=9876\nproductEnvName=center\n").await;
    let mut c = server.client().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    let sys = response::SYSTEM_ERROR;
    refused(
        &mut c,
        &file,
        "bindAddress=256.1.1.1",
        sys,
        &["bindAddress", "resolve"],
    )
    .await;
    refused(
        &mut c,
        &file,
        "bindAddress=no-such-host.invalid",
        sys,
        &["bindAddress"],
    )
    .await;
    refused(
        &mut c,
        &file,
        "bindAddress=192.0.2.1",
        sys,
        &["bindAddress", "cannot listen"],
    )
    .await;
    let in_use = format!("listenPort={taken_port}");
    refused(
        &mut c,
        &file,
        &in_use,
        sys,
        &["listenPort", "cannot listen"],
    )
    .await;
    refused(
        &mut c,
        &file,
        "listenPort=0",
        sys,
        &["listenPort", "random port"],
    )
    .await;
    // A value with a newline would print as a key of its own in GET_NAMESRV_CONFIG.
    let fake_key = "productEnvName=a\\nkvConfigPath=/x";
    refused(&mut c, &file, fake_key, sys, &["productEnvName", "U+000A"]).await;
    // All or nothing: a good key beside a bad one is not applied either.
    let mixed = "orderMessageEnable=true\nbindAddress=256.1.1.1";
    refused(&mut c, &file, mixed, sys, &["bindAddress"]).await;
    // The current port, and a free one on an address of this host, are fine.
    let ok = update_config(
        &mut c,
        "listenPort=9876\nbindAddress=127.0.0.1\nproductEnvName=prod",
    )
    .await;
    assert_eq!(ok.code, response::SUCCESS, "{:?}", ok.remark);
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("productEnvName=prod\n")
    );
}

#[tokio::test]
async fn this_servers_limits_are_set_in_the_file_only_by_default() {
    let (server, _dir, file) = server_with_file("listenPort=9876\n").await;
    let mut c = server.client().await;
    let perm = response::NO_PERMISSION;
    for body in [
        "maxConnections=1",
        "frameMaxLength=1024",
        "maxQueuedResponseBytes=9223372036854775807",
        "maxBufferedBytes=1",
        "maxKvValueBytes=1",
        "maxKvTotalBytes=1",
        "startupOnlyConfigKeys=",
    ] {
        let key = body.split('=').next().unwrap();
        refused(&mut c, &file, body, perm, &[key, "start-up only"]).await;
    }
}

#[tokio::test]
async fn limits_opened_to_updates_still_have_floors() {
    let (server, _dir, file) =
        server_with_file("listenPort=9876\nstartupOnlyConfigKeys=maxKvTotalBytes\n").await;
    let mut c = server.client().await;
    let sys = response::SYSTEM_ERROR;
    refused(
        &mut c,
        &file,
        "maxConnections=1",
        sys,
        &["maxConnections", "at least 64"],
    )
    .await;
    refused(
        &mut c,
        &file,
        "frameMaxLength=1024",
        sys,
        &["frameMaxLength"],
    )
    .await;
    let unbounded = "maxQueuedResponseBytes=9223372036854775807";
    refused(
        &mut c,
        &file,
        unbounded,
        sys,
        &["maxQueuedResponseBytes", "maxBufferedBytes"],
    )
    .await;
    refused(
        &mut c,
        &file,
        "maxKvTotalBytes=1",
        response::NO_PERMISSION,
        &["maxKvTotalBytes"],
    )
    .await;
    let ok = update_config(&mut c, "maxConnections=100").await;
    assert_eq!(ok.code, response::SUCCESS, "{:?}", ok.remark);
    assert!(
        ok.remark.unwrap().contains("maxConnections"),
        "takes effect on restart"
    );
}
