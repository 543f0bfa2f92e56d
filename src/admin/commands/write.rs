//! Commands that change name-server state. Each request goes to every name server of `-n`;
//! mqadmin's success line is printed only when all of them succeeded, and every failure is
//! reported on its own line.

use super::{Ctx, bad_answer, required, usage};
use crate::admin::Problem;
use crate::admin::format;
use crate::admin::options::Parsed;
use crate::protocol::code::request;
use crate::remoting_client::Request;

/// The KV namespace of order-topic configurations.
const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// Runs `req` on every name server; prints `success` if all succeeded.
async fn on_all(ctx: &mut Ctx<'_>, req: Request, success: &str) -> Result<(), Problem> {
    let before = ctx.problems.len();
    ctx.write_all(&req).await;
    if ctx.problems.len() == before {
        ctx.print(success);
    }
    Ok(())
}

/// `updateNamesrvConfig -k K -v V`.
pub(super) async fn update_namesrv_config(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
) -> Result<(), Problem> {
    let key = required(parsed, "key");
    let value = required(parsed, "value");
    let req =
        Request::new(request::UPDATE_NAMESRV_CONFIG).body(format!("{key}={value}\n").into_bytes());
    let list = if ctx.from_option {
        format::java_list_text(&ctx.servers)
    } else {
        String::new()
    };
    let success = format!("update name server config success!{list}\n{key} : {value}\n");
    on_all(ctx, req, &success).await
}

/// `updateKvConfig -s NS -k K -v V`.
pub(super) async fn update_kv_config(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let req = Request::new(request::PUT_KV_CONFIG)
        .field("namespace", required(parsed, "namespace"))
        .field("key", required(parsed, "key"))
        .field("value", required(parsed, "value"));
    on_all(
        ctx,
        req,
        "create or update kv config to namespace success.\n",
    )
    .await
}

/// `deleteKvConfig -s NS -k K`.
pub(super) async fn delete_kv_config(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let req = Request::new(request::DELETE_KV_CONFIG)
        .field("namespace", required(parsed, "namespace"))
        .field("key", required(parsed, "key"));
    on_all(ctx, req, "delete kv config from namespace success.\n").await
}

/// `updateOrderConf -t T -m get|put|delete [-v CONF]`: the `ORDER_TOPIC_CONFIG` KV entry of
/// a topic. mqadmin's messages end without a newline, and so do these.
pub(super) async fn update_order_conf(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let topic = required(parsed, "topic");
    let method = required(parsed, "method");
    if ctx.json && method != "get" {
        return Err(usage("--json applies to -m get only"));
    }
    match method {
        "get" => {
            let req = Request::new(request::GET_KV_CONFIG)
                .field("namespace", ORDER_TOPIC_CONFIG)
                .field("key", topic);
            let answer = ctx.read_one(&req).await?;
            let value = answer.ext("value").unwrap_or("null").to_owned();
            if ctx.json {
                ctx.print_json(&serde_json::json!({"topic": topic, "orderConf": value}));
                return Ok(());
            }
            ctx.print(&format!(
                "get orderConf success. topic=[{topic}], orderConf=[{value}] "
            ));
            Ok(())
        }
        "put" => {
            let conf = parsed.value("orderConf").map(str::trim).unwrap_or_default();
            if conf.is_empty() {
                return Err(usage("please set orderConf with option -v."));
            }
            let req = Request::new(request::PUT_KV_CONFIG)
                .field("namespace", ORDER_TOPIC_CONFIG)
                .field("key", topic)
                .field("value", conf);
            let success = format!("update orderConf success. topic=[{topic}], orderConf=[{conf}]");
            on_all(ctx, req, &success).await
        }
        "delete" => {
            let req = Request::new(request::DELETE_KV_CONFIG)
                .field("namespace", ORDER_TOPIC_CONFIG)
                .field("key", topic);
            let success = format!("delete orderConf success. topic=[{topic}]");
            on_all(ctx, req, &success).await
        }
        other => Err(usage(format!(
            "-m must be put, get or delete, not '{other}'"
        ))),
    }
}

/// `wipeWritePerm -b B` / `addWritePerm -b B`: one line per name server, as mqadmin.
pub(super) async fn change_write_perm(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
    wipe: bool,
) -> Result<(), Problem> {
    let broker = required(parsed, "brokerName");
    let (code, count_field, verb) = if wipe {
        (request::WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount", "wipe")
    } else {
        (request::ADD_WRITE_PERM_OF_BROKER, "addTopicCount", "add")
    };
    let req = Request::new(code).field("brokerName", broker);
    for addr in ctx.servers.clone() {
        let count = match ctx.client.call_ok(&addr, &req).await {
            Ok(answer) => match answer.ext(count_field).map(|c| c.trim().parse::<i32>()) {
                Some(Ok(n)) => Ok(n),
                _ => Err(bad_answer(
                    &addr,
                    format!("the answer carries no valid {count_field}"),
                )),
            },
            Err(e) => Err(Problem::from(e)),
        };
        match count {
            Ok(n) => ctx.print(&format!(
                "{verb} write perm of broker[{broker}] in name server[{addr}] OK, {n}\n"
            )),
            Err(p) => {
                ctx.print(&format!(
                    "{verb} write perm of broker[{broker}] in name server[{addr}] Failed\n"
                ));
                ctx.problems.push(p);
            }
        }
    }
    Ok(())
}

/// `deleteTopic -t T -c C`: only the name-server part (DELETE_TOPIC_IN_NAMESRV to every name
/// server). Brokers are not touched: they keep the topic and register it again unless it is
/// deleted on them too, which needs a broker admin tool.
pub(super) async fn delete_topic(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let topic = required(parsed, "topic");
    let cluster = required(parsed, "clusterName");
    let req = Request::new(request::DELETE_TOPIC_IN_NAMESRV)
        .field("topic", topic)
        .field("clusterName", cluster);
    let success = format!("delete topic [{topic}] from NameServer success.\n");
    on_all(ctx, req, &success).await?;
    ctx.problems.push(Problem {
        text: format!(
            "note: brokers were not touched; the brokers of cluster [{cluster}] still have topic \
             [{topic}] and will register it again unless it is deleted on them \
             (mqadmin deleteTopic does both)"
        ),
        exit: crate::admin::EXIT_OK,
    });
    Ok(())
}
