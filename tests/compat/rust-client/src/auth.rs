//! `namesrv-compat-rust-client auth ...`: the rocketmq-client-rust 1.0.0 ACL hook
//! (`AclClientRPCHook`) against name servers with `authMode=enforce`.
//!
//! - `--signed HOST:PORT`: a name server where read and admin requests need a signature and
//!   broker requests are open. Signed with the admin account, admin, KV and route calls
//!   succeed; with a wrong secret or without the hook they are refused with NO_PERMISSION (16);
//!   the read-only account reads but may not write; a producer signing with the read-only
//!   account sends through the routes it looks up.
//! - `--by-address HOST:PORT`: a name server where every class needs a signature and
//!   127.0.0.1 is in `globalWhiteRemoteAddresses`: the broker (which does not sign) is
//!   registered there by address, while admin requests still need a signature.
//!
//! Usage: `namesrv-compat-rust-client auth --signed HOST:PORT --by-address HOST:PORT
//! --admin AK:SK --reader AK:SK [--broker-name broker-a] [--cluster DefaultCluster]
//! [--wait-secs 60]`

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use rocketmq_client_rust::AclClientRPCHook;
use rocketmq_client_rust::ClientRuntime;
use rocketmq_client_rust::DefaultMQAdminExt;
use rocketmq_client_rust::DefaultMQProducer;
use rocketmq_client_rust::RouteAdmin;
use rocketmq_client_rust::SendStatus;
use rocketmq_client_rust::SessionCredentials;
use rocketmq_client_rust::TopicAdmin;
use rocketmq_model::common::config::TopicConfig;
use rocketmq_model::common::message::message_single::Message;

use crate::cs;
use crate::response_code;
use crate::show;
use crate::Steps;

pub(crate) struct AuthOpts {
    signed: String,
    by_address: String,
    admin: (String, String),
    reader: (String, String),
    broker_name: String,
    cluster: String,
    wait: Duration,
    run_id: u128,
}

fn usage() -> ! {
    eprintln!(
        "usage: namesrv-compat-rust-client auth --signed HOST:PORT --by-address HOST:PORT --admin AK:SK \
         --reader AK:SK [--broker-name NAME] [--cluster NAME] [--wait-secs N]"
    );
    std::process::exit(2)
}

pub(crate) fn parse_opts(args: impl Iterator<Item = String>, run_id: u128) -> AuthOpts {
    let mut o = AuthOpts {
        signed: String::new(),
        by_address: String::new(),
        admin: Default::default(),
        reader: Default::default(),
        broker_name: "broker-a".into(),
        cluster: "DefaultCluster".into(),
        wait: Duration::from_secs(60),
        run_id,
    };
    let pair = |v: String| {
        let (a, b) = v.split_once(':').unwrap_or_else(|| usage());
        (a.to_string(), b.to_string())
    };
    let mut args = args;
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--signed" => o.signed = value(),
            "--by-address" => o.by_address = value(),
            "--admin" => o.admin = pair(value()),
            "--reader" => o.reader = pair(value()),
            "--broker-name" => o.broker_name = value(),
            "--cluster" => o.cluster = value(),
            "--wait-secs" => o.wait = Duration::from_secs(value().parse().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    if o.signed.is_empty() || o.by_address.is_empty() || o.admin.0.is_empty() || o.reader.0.is_empty() {
        usage()
    }
    o
}

fn hook(access_key: &str, secret_key: &str) -> Arc<AclClientRPCHook> {
    Arc::new(AclClientRPCHook::new(SessionCredentials::with_keys(
        access_key, secret_key,
    )))
}

/// An admin client on `namesrv`, signing with `creds` (unsigned when `None`). Each gets its
/// own instance name: the client caches instances, hook included, by name.
async fn admin(
    rt: &Arc<ClientRuntime>,
    namesrv: &str,
    creds: Option<(&str, &str)>,
    name: &str,
    run_id: u128,
) -> Result<DefaultMQAdminExt, String> {
    let timeout = Duration::from_secs(5);
    let mut admin = match creds {
        Some((ak, sk)) => DefaultMQAdminExt::with_rpc_hook_and_timeout(rt.clone(), hook(ak, sk), timeout),
        None => DefaultMQAdminExt::with_timeout(rt.clone(), timeout),
    };
    admin.set_namesrv_addr(namesrv);
    admin
        .client_config_mut()
        .set_instance_name(cs(format!("compat-auth-{name}-{run_id}")));
    admin.start().await.map_err(show)?;
    Ok(admin)
}

/// `Ok` if `outcome` is a NO_PERMISSION refusal whose remark contains `remark`.
fn refused<T: std::fmt::Debug>(outcome: rocketmq_client_rust::ClientResult<T>, remark: &str) -> Result<String, String> {
    match outcome {
        Err(e) => {
            let code = response_code(&e);
            let text = show(e);
            if code == Some(16) && text.contains(remark) {
                Ok(format!("refused: {text}"))
            } else {
                Err(format!("expected NO_PERMISSION (16) with {remark:?}, got {text}"))
            }
        }
        Ok(v) => Err(format!("expected NO_PERMISSION (16), the request succeeded: {v:?}")),
    }
}

async fn put_kv(admin: &DefaultMQAdminExt, key: &str) -> rocketmq_client_rust::ClientResult<()> {
    RouteAdmin::create_and_update_kv_config(admin, cs("NAMESRV_COMPAT_AUTH"), cs(key), cs("v")).await
}

/// Polls the cluster info until `broker` is a master of `cluster`; returns its address.
async fn wait_for_broker(admin: &DefaultMQAdminExt, o: &AuthOpts) -> Result<String, String> {
    let deadline = Instant::now() + o.wait;
    loop {
        let last = match RouteAdmin::examine_broker_cluster_info(admin).await {
            Ok(ci) => {
                let member = ci
                    .cluster_addr_table
                    .as_ref()
                    .and_then(|t| t.get(o.cluster.as_str()))
                    .is_some_and(|m| m.iter().any(|n| n.as_str() == o.broker_name));
                let addr = ci
                    .broker_addr_table
                    .as_ref()
                    .and_then(|t| t.get(o.broker_name.as_str()))
                    .and_then(|b| b.broker_addrs().get(&0).map(|a| a.to_string()));
                match (member, addr) {
                    (true, Some(addr)) => return Ok(addr),
                    _ => format!("{} not yet a master of {}", o.broker_name, o.cluster),
                }
            }
            Err(e) => show(e),
        };
        if Instant::now() >= deadline {
            return Err(format!("after {} s: {last}", o.wait.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(crate) async fn checks(rt: &Arc<ClientRuntime>, o: &AuthOpts, steps: &mut Steps) {
    let (ak, sk) = (o.admin.0.as_str(), o.admin.1.as_str());
    let (rk, rs) = (o.reader.0.as_str(), o.reader.1.as_str());
    let id = o.run_id;
    let signed = match admin(rt, &o.signed, Some((ak, sk)), "admin", id).await {
        Ok(a) => a,
        Err(e) => return steps.skip("signed_admin_start", "none", &e),
    };
    let wrong = admin(rt, &o.signed, Some((ak, "not-the-secret")), "wrong", id).await;
    let reader = admin(rt, &o.signed, Some((rk, rs)), "reader", id).await;
    let unsigned = admin(rt, &o.signed, None, "unsigned", id).await;
    let (Ok(wrong), Ok(reader), Ok(unsigned)) = (wrong, reader, unsigned) else {
        return steps.skip("admin_clients_start", "none", "an admin client did not start");
    };

    // --- the right secret: admin, KV and route calls succeed ---
    let mut master = None;
    steps
        .run("signed_cluster_list", "106", async {
            let addr = wait_for_broker(&signed, o).await?;
            master = Some(addr.clone());
            Ok(format!(
                "{} master {addr}, registered unsigned (broker requests open)",
                o.broker_name
            ))
        })
        .await;
    let key = format!("auth_{id}");
    steps
        .run("signed_kv_put_get_delete", "100, 101, 102", async {
            put_kv(&signed, &key).await.map_err(show)?;
            let v = RouteAdmin::get_kv_config(&signed, cs("NAMESRV_COMPAT_AUTH"), cs(key.clone()))
                .await
                .map_err(show)?;
            RouteAdmin::delete_kv_config(&signed, cs("NAMESRV_COMPAT_AUTH"), cs(key.clone()))
                .await
                .map_err(show)?;
            if v.as_str() != "v" {
                return Err(format!("read back {v:?}"));
            }
            Ok("signed PUT/GET/DELETE_KV_CONFIG accepted".into())
        })
        .await;
    steps
        .run("signed_route", "105", async {
            match TopicAdmin::examine_topic_route_info(&signed, cs("TBW102")).await {
                Ok(Some(r)) if !r.queue_datas.is_empty() => Ok(format!("TBW102: {} queue data", r.queue_datas.len())),
                Ok(other) => Err(format!("no usable route: {other:?}")),
                Err(e) => Err(show(e)),
            }
        })
        .await;
    steps
        .run("signed_namesrv_config", "319, 318", async {
            let ns = cs(o.signed.clone());
            let all = RouteAdmin::get_name_server_config(&signed, vec![ns.clone()])
                .await
                .map_err(show)?;
            let cfg = all.into_values().next().ok_or("no configuration returned")?;
            let old = cfg
                .get("orderMessageEnable")
                .map(|v| v.to_string())
                .unwrap_or_else(|| "false".into());
            let mut props = std::collections::HashMap::new();
            props.insert(cs("orderMessageEnable"), cs(old.clone()));
            RouteAdmin::update_name_server_config(&signed, props, Some(vec![ns]))
                .await
                .map_err(show)?;
            Ok(format!("read {} keys, wrote orderMessageEnable={old}", cfg.len()))
        })
        .await;

    // --- a wrong secret: every protected call is refused with 16 ---
    steps
        .run("wrong_secret_kv_put", "100", async {
            refused(put_kv(&wrong, &key).await, "check signature failed")
        })
        .await;
    steps
        .run("wrong_secret_route", "105", async {
            refused(
                TopicAdmin::examine_topic_route_info(&wrong, cs("TBW102")).await,
                "check signature failed",
            )
        })
        .await;
    steps
        .run("wrong_secret_cluster_list", "106", async {
            refused(
                RouteAdmin::examine_broker_cluster_info(&wrong).await.map(|_| ()),
                "check signature failed",
            )
        })
        .await;

    // --- no signature at all, and an account without admin ---
    steps
        .run("unsigned_route", "105", async {
            refused(
                TopicAdmin::examine_topic_route_info(&unsigned, cs("TBW102")).await,
                "needs a signature",
            )
        })
        .await;
    steps
        .run("unsigned_kv_put", "100", async {
            refused(put_kv(&unsigned, &key).await, "needs a signature")
        })
        .await;
    steps
        .run("reader_route", "105", async {
            match TopicAdmin::examine_topic_route_info(&reader, cs("TBW102")).await {
                Ok(Some(_)) => Ok(format!("{rk} reads routes")),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    steps
        .run("reader_kv_put", "100", async {
            refused(put_kv(&reader, &key).await, "has no permission")
        })
        .await;

    // --- a producer signing as the reader: its route lookups pass, its sends go through ---
    if let Some(master) = master {
        let topic = format!("compat_auth_{id}");
        steps
            .run("signed_producer", "17 to the broker, 105, 310 to the broker", async {
                TopicAdmin::create_and_update_topic_config(
                    &signed,
                    cs(master.clone()),
                    TopicConfig::with_queues(topic.as_str(), 2, 2),
                )
                .await
                .map_err(show)?;
                let deadline = Instant::now() + o.wait;
                while !matches!(
                    TopicAdmin::examine_topic_route_info(&signed, cs(topic.clone())).await,
                    Ok(Some(_))
                ) {
                    if Instant::now() >= deadline {
                        return Err(format!("{topic}: no route after {} s", o.wait.as_secs()));
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                let mut producer = DefaultMQProducer::builder(rt.clone())
                    .producer_group(format!("compat_auth_pg_{id}"))
                    .name_server_addr(o.signed.clone())
                    .rpc_hook(hook(rk, rs))
                    .build();
                producer.start().await.map_err(show)?;
                let mut sent = 0;
                let mut problem = None;
                for i in 0..10 {
                    let msg = Message::builder()
                        .topic(topic.as_str())
                        .body_slice(format!("auth-{i}").as_bytes())
                        .build()
                        .map_err(show)?;
                    match producer.send_with_timeout(msg, 3000).await {
                        Ok(Some(r)) if r.send_status == SendStatus::SendOk => sent += 1,
                        other => {
                            problem.get_or_insert(format!("{:?}", other.map_err(show)));
                        }
                    }
                }
                producer.shutdown().await;
                let _ = TopicAdmin::delete_topic(&signed, cs(topic.clone()), cs(o.cluster.clone())).await;
                match sent {
                    10 => Ok(format!("10/10 SEND_OK to {topic}, routes looked up signed as {rk}")),
                    n => Err(format!(
                        "{n}/10 SEND_OK; first problem: {}",
                        problem.unwrap_or_default()
                    )),
                }
            })
            .await;
    } else {
        steps.skip("signed_producer", "105, 310", "the broker never showed up");
    }

    // --- the name server that trusts 127.0.0.1 for read and broker requests ---
    match admin(rt, &o.by_address, Some((ak, sk)), "addr-admin", id).await {
        Ok(mut addr_admin) => {
            steps
                .run("broker_registered_by_address", "103 (broker), 106 (signed)", async {
                    wait_for_broker(&addr_admin, o)
                        .await
                        .map(|a| format!("{} ({a}) registered unsigned, allowed by address", o.broker_name))
                })
                .await;
            addr_admin.shutdown().await;
        }
        Err(e) => steps.skip("broker_registered_by_address", "106", &e),
    }
    match admin(rt, &o.by_address, None, "addr-unsigned", id).await {
        Ok(mut addr_unsigned) => {
            steps
                .run("by_address_admin_still_signed", "100", async {
                    refused(put_kv(&addr_unsigned, &key).await, "needs a signature")
                })
                .await;
            addr_unsigned.shutdown().await;
        }
        Err(e) => steps.skip("by_address_admin_still_signed", "100", &e),
    }

    for mut a in [signed, wrong, reader, unsigned] {
        a.shutdown().await;
    }
}
