//! `namesrv-compat-rust-client tls ...`: the rocketmq-client-rust 1.0.0 admin client with TLS
//! turned on (`set_use_tls(true)` and TLS test mode, as `-Dtls.enable=true` does for a Java
//! client: any server certificate, no client certificate) against a name server in `permissive` or `enforcing`
//! mode: cluster info, a registered topic's route and a KV round trip over TLS; in
//! `enforcing` mode a plaintext client must also be refused.
//!
//! Usage: `namesrv-compat-rust-client tls --namesrv HOST:PORT --mode permissive|enforcing
//! --topic T --broker-name B [--cluster DefaultCluster] [--wait-secs 60]`

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use rocketmq_client_rust::ClientRuntime;
use rocketmq_client_rust::DefaultMQAdminExt;
use rocketmq_client_rust::RouteAdmin;
use rocketmq_client_rust::TopicAdmin;

use crate::cs;
use crate::show;
use crate::Steps;

pub(crate) struct TlsOpts {
    namesrv: String,
    enforcing: bool,
    topic: String,
    broker_name: String,
    cluster: String,
    wait: Duration,
    run_id: u128,
}

fn usage() -> ! {
    eprintln!(
        "usage: namesrv-compat-rust-client tls --namesrv HOST:PORT --mode permissive|enforcing --topic T \
         --broker-name B [--cluster NAME] [--wait-secs N]"
    );
    std::process::exit(2)
}

pub(crate) fn parse_opts(mut args: impl Iterator<Item = String>, run_id: u128) -> TlsOpts {
    let mut o = TlsOpts {
        namesrv: String::new(),
        enforcing: false,
        topic: String::new(),
        broker_name: String::new(),
        cluster: "DefaultCluster".into(),
        wait: Duration::from_secs(60),
        run_id,
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--namesrv" => o.namesrv = value(),
            "--mode" => {
                o.enforcing = match value().as_str() {
                    "permissive" => false,
                    "enforcing" => true,
                    _ => usage(),
                }
            }
            "--topic" => o.topic = value(),
            "--broker-name" => o.broker_name = value(),
            "--cluster" => o.cluster = value(),
            "--wait-secs" => o.wait = Duration::from_secs(value().parse().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    if o.namesrv.is_empty() || o.topic.is_empty() || o.broker_name.is_empty() {
        usage()
    }
    o
}

/// An admin client on the name server, with or without TLS.
async fn admin(rt: &Arc<ClientRuntime>, o: &TlsOpts, tls: bool) -> Result<DefaultMQAdminExt, String> {
    let mut admin = DefaultMQAdminExt::with_timeout(rt.clone(), Duration::from_secs(5));
    admin.set_namesrv_addr(o.namesrv.as_str());
    admin.set_use_tls(tls);
    // A Java client with -Dtls.enable=true runs in TLS test mode unless told otherwise (any
    // server certificate); rocketmq-rust's client defaults to verifying the server's chain.
    admin.client_config_mut().set_tls_test_mode_enable(true);
    admin
        .client_config_mut()
        .set_instance_name(cs(format!("compat-tls-{tls}-{}", o.run_id)));
    admin.start().await.map_err(show)?;
    Ok(admin)
}

/// The client's error with the source location that raised it (its Debug form redacts the
/// configuration key).
fn why(e: rocketmq_client_rust::ClientError) -> String {
    let at = e.shared_error().location().to_string();
    let mut causes = Vec::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e.shared_error().as_ref());
    while let Some(c) = cause {
        causes.push(c.to_string());
        cause = c.source();
    }
    format!("{} (raised at {at}; causes: {})", show(e), causes.join(" <- "))
}

pub(crate) async fn checks(rt: &Arc<ClientRuntime>, o: &TlsOpts, steps: &mut Steps) {
    let mode = if o.enforcing { "enforcing" } else { "permissive" };
    let started = Instant::now();
    let mut tls = match admin(rt, o, true).await {
        Ok(a) => {
            steps.record(&format!("tls_admin_start[{mode}]"), "none", started, Ok("TLS admin client started".into()));
            a
        }
        Err(e) => {
            steps.record(&format!("tls_admin_start[{mode}]"), "none", started, Err(e));
            return;
        }
    };
    steps
        .run(&format!("tls_cluster_info[{mode}]"), "106", async {
            let deadline = Instant::now() + o.wait;
            loop {
                let info = RouteAdmin::examine_broker_cluster_info(&tls).await.map_err(why)?;
                let listed = info
                    .cluster_addr_table
                    .as_ref()
                    .and_then(|t| t.get(o.cluster.as_str()))
                    .is_some_and(|names| names.iter().any(|n| n.as_str() == o.broker_name));
                if listed {
                    return Ok(format!("{} is a broker of {} (over TLS)", o.broker_name, o.cluster));
                }
                if Instant::now() > deadline {
                    return Err(format!("{} not in the cluster info: {info:?}", o.broker_name));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
        .await;
    steps
        .run(&format!("tls_route[{mode}]"), "105", async {
            let route = TopicAdmin::examine_topic_route_info(&tls, cs(o.topic.as_str()))
                .await
                .map_err(show)?
                .ok_or_else(|| "no route".to_string())?;
            if route.broker_datas.iter().any(|b| b.broker_name().as_str() == o.broker_name) {
                Ok(format!("route of {} lists {} (over TLS)", o.topic, o.broker_name))
            } else {
                Err(format!("route of {} does not list {}: {route:?}", o.topic, o.broker_name))
            }
        })
        .await;
    let key = format!("tls-{mode}-{}", o.run_id);
    steps
        .run(&format!("tls_kv_put[{mode}]"), "100", async {
            RouteAdmin::create_and_update_kv_config(&tls, cs("NAMESRV_COMPAT_TLS"), cs(key.as_str()), cs("over-tls"))
                .await
                .map_err(show)
                .map(|()| "stored".to_string())
        })
        .await;
    steps
        .run(&format!("tls_kv_get[{mode}]"), "101", async {
            let v = RouteAdmin::get_kv_config(&tls, cs("NAMESRV_COMPAT_TLS"), cs(key.as_str()))
                .await
                .map_err(show)?;
            if v.as_str() == "over-tls" {
                Ok("read back over TLS".into())
            } else {
                Err(format!("read back {v:?}"))
            }
        })
        .await;
    steps
        .run(&format!("tls_kv_delete[{mode}]"), "102", async {
            RouteAdmin::delete_kv_config(&tls, cs("NAMESRV_COMPAT_TLS"), cs(key.as_str()))
                .await
                .map_err(show)
                .map(|()| "deleted".to_string())
        })
        .await;
    tls.shutdown().await;
    if o.enforcing {
        steps
            .run("plaintext_refused[enforcing]", "106", async {
                let mut plain = admin(rt, o, false).await?;
                let outcome = RouteAdmin::examine_broker_cluster_info(&plain).await;
                plain.shutdown().await;
                match outcome {
                    Err(e) => Ok(format!("plaintext client refused: {}", show(e))),
                    Ok(info) => Err(format!("a plaintext client was served: {info:?}")),
                }
            })
            .await;
    }
}
