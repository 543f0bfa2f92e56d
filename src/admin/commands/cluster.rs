//! `clusterList [-m] [-i SECONDS] [-c CLUSTER]`: the cluster info of one name server, with
//! every listed broker's runtime statistics (GET_BROKER_RUNTIME_INFO to the broker itself),
//! in mqadmin 5.3.3's table formats.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::read::{broker_json, cluster_info};
use super::{Ctx, required, usage};
use crate::admin::Problem;
use crate::admin::format;
use crate::admin::options::Parsed;
use crate::protocol::body::data_version::wall_clock_millis;
use crate::protocol::body::route::java_string_cmp;
use crate::remoting_client::decode::{self, ClusterInfo};
use crate::remoting_client::{GET_BROKER_RUNTIME_INFO, Request};

/// One row of the table: cluster, broker name, id, address.
struct Row {
    cluster: String,
    broker: String,
    id: i64,
    addr: String,
}

/// The rows mqadmin prints: clusters in `HashMap` order (or just `-c`), brokers sorted by
/// name, addresses in `HashMap<Long, String>` order; unknown brokers skipped.
fn rows(info: &ClusterInfo, only: Option<&str>) -> Vec<Row> {
    let clusters: Vec<String> = match only {
        Some(c) => vec![c.to_owned()],
        None => format::java_order(&info.cluster_addr_table)
            .into_iter()
            .map(|(c, _)| c.clone())
            .collect(),
    };
    let mut rows = Vec::new();
    for cluster in clusters {
        let mut names: Vec<&String> = info
            .cluster_addr_table
            .get(&cluster)
            .map(|n| n.iter().collect())
            .unwrap_or_default();
        names.sort_by(|a, b| java_string_cmp(a, b));
        names.dedup();
        for name in names {
            let Some(b) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in b.addrs() {
                rows.push(Row {
                    cluster: cluster.clone(),
                    broker: name.clone(),
                    id,
                    addr: addr.to_owned(),
                });
            }
        }
    }
    rows
}

/// Runs the command, once or every `-i` seconds.
pub(super) async fn cluster_list(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let interval = match parsed.value("interval") {
        Some(s) => match s.trim().parse::<u64>() {
            Ok(secs) => Some(Duration::from_secs(secs)),
            Err(_) => return Err(usage(format!("-i must be a number of seconds, not '{s}'"))),
        },
        None => None,
    };
    let only = parsed
        .has("clusterName")
        .then(|| required(parsed, "clusterName"));
    let only = only.filter(|c| !c.is_empty());
    loop {
        let info = cluster_info(ctx).await?;
        let rows = rows(&info, only);
        let mut stats: Vec<Option<BTreeMap<String, String>>> = Vec::with_capacity(rows.len());
        for row in &rows {
            let req = Request::new(GET_BROKER_RUNTIME_INFO);
            let table = match ctx.client.call_ok(&row.addr, &req).await {
                Ok(a) => match decode::kv_table(a.body_bytes()) {
                    Ok(t) => Some(t.into_iter().collect()),
                    Err(e) => {
                        ctx.problems.push(super::bad_answer(&row.addr, e));
                        None
                    }
                },
                Err(e) => {
                    ctx.problems.push(e.into());
                    None
                }
            };
            stats.push(table);
        }
        if ctx.json {
            ctx.print_json(&cluster_json(&info, &rows, &stats));
        } else if parsed.has("moreStats") {
            ctx.print(&more_stats(&rows, &stats));
        } else {
            ctx.print(&base_info(&rows, &stats));
        }
        match interval {
            Some(every) => {
                ctx.report_now();
                tokio::time::sleep(every).await;
            }
            None => return Ok(()),
        }
    }
}

fn cluster_json(
    info: &ClusterInfo,
    rows: &[Row],
    stats: &[Option<BTreeMap<String, String>>],
) -> Value {
    let brokers: BTreeMap<&str, Value> = info
        .broker_addr_table
        .0
        .iter()
        .map(|(name, b)| (name.as_str(), broker_json(b)))
        .collect();
    let clusters: BTreeMap<&str, &Vec<String>> = info
        .cluster_addr_table
        .0
        .iter()
        .map(|(c, names)| (c.as_str(), names))
        .collect();
    let runtime: BTreeMap<&str, &Option<BTreeMap<String, String>>> = rows
        .iter()
        .zip(stats)
        .map(|(r, s)| (r.addr.as_str(), s))
        .collect();
    json!({"brokerAddrTable": brokers, "clusterAddrTable": clusters, "brokerRuntimeStats": runtime})
}

/// `clusterList -m`: message totals of yesterday and today per broker address.
fn more_stats(rows: &[Row], stats: &[Option<BTreeMap<String, String>>]) -> String {
    let mut out = format!(
        "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}\n",
        "#Cluster Name",
        "#Broker Name",
        "#InTotalYest",
        "#OutTotalYest",
        "#InTotalToday",
        "#OutTotalToday"
    );
    for (row, table) in rows.iter().zip(stats) {
        let totals = table.as_ref().and_then(|t| {
            let n = |k: &str| t.get(k)?.trim().parse::<i64>().ok();
            Some([
                n("msgPutTotalTodayMorning")? - n("msgPutTotalYesterdayMorning")?,
                n("msgGetTotalTodayMorning")? - n("msgGetTotalYesterdayMorning")?,
                n("msgPutTotalTodayNow")? - n("msgPutTotalTodayMorning")?,
                n("msgGetTotalTodayNow")? - n("msgGetTotalTodayMorning")?,
            ])
        });
        let [a, b, c, d] = totals.unwrap_or([0; 4]);
        let _ = writeln!(
            out,
            "{:<16}  {:<32} {a:>14} {b:>14} {c:>14} {d:>14}",
            row.cluster, row.broker
        );
    }
    out
}

/// The default `clusterList` table; a broker that could not be asked gets mqadmin's
/// placeholder row.
fn base_info(rows: &[Row], stats: &[Option<BTreeMap<String, String>>]) -> String {
    let mut out = format!(
        "{:<22}  {:<22}  {:<4}  {:<22} {:<16}  {:>16}  {:>30}  {:<22}  {:<11}  {:<12}  {:<8}  {:<10}\n",
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#Timer(Progress)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE",
        "#ACTIVATED"
    );
    for (row, table) in rows.iter().zip(stats) {
        let cols = match table {
            Some(t) => Columns::from_stats(t),
            None => Columns::default(),
        };
        let _ = writeln!(
            out,
            "{:<22}  {:<22}  {:<4}  {:<22} {:<16}  {:>16}  {:>30}  {:<22}  {:>11}  {:<12}  {:<8}  {:>10}",
            row.cluster,
            row.broker,
            row.id,
            row.addr,
            cols.version,
            format!(
                "{:9.2}({},{}ms)",
                cols.put_tps, cols.send_queue, cols.send_wait
            ),
            format!(
                "{:9.2}({},{}ms|{},{}ms)",
                cols.get_tps, cols.pull_queue, cols.pull_wait, cols.ack_queue, cols.ack_wait
            ),
            format!(
                "{}-{}({:.1}w, {:.1}, {:.1})",
                cols.timer_read_behind,
                cols.timer_offset_behind,
                cols.timer_congest as f32 / 10000.0,
                cols.timer_enqueue_tps,
                cols.timer_dequeue_tps
            ),
            cols.page_cache_lock,
            format!("{:2.2}", cols.hours),
            format!("{:.4}", cols.space),
            cols.active,
        );
    }
    out
}

/// The values of one row, with mqadmin's defaults (empty strings, zeros, `false`) and its
/// `null` for a statistic the broker did not report.
#[derive(Default)]
struct Columns {
    version: String,
    put_tps: f64,
    get_tps: f64,
    send_queue: String,
    send_wait: String,
    pull_queue: String,
    pull_wait: String,
    ack_queue: String,
    ack_wait: String,
    timer_read_behind: i64,
    timer_offset_behind: i64,
    timer_congest: i64,
    timer_enqueue_tps: f32,
    timer_dequeue_tps: f32,
    page_cache_lock: String,
    hours: f64,
    space: f64,
    active: bool,
}

impl Columns {
    fn from_stats(t: &BTreeMap<String, String>) -> Columns {
        let text = |k: &str| t.get(k).cloned().unwrap_or_else(|| "null".into());
        let or_n = |k: &str| t.get(k).cloned().unwrap_or_else(|| "N".into());
        let first_number = |k: &str| {
            t.get(k)
                .and_then(|v| v.split(' ').next()?.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let mut c = Columns {
            version: text("brokerVersionDesc"),
            put_tps: first_number("putTps"),
            get_tps: first_number("getTransferredTps"),
            send_queue: text("sendThreadPoolQueueSize"),
            send_wait: text("sendThreadPoolQueueHeadWaitTimeMills"),
            pull_queue: text("pullThreadPoolQueueSize"),
            pull_wait: text("pullThreadPoolQueueHeadWaitTimeMills"),
            ack_queue: or_n("ackThreadPoolQueueSize"),
            ack_wait: or_n("ackThreadPoolQueueHeadWaitTimeMills"),
            page_cache_lock: text("pageCacheLockTimeMills"),
            active: t
                .get("brokerActive")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            ..Columns::default()
        };
        // mqadmin reads the five timer values together and keeps zeros if any is missing.
        let long = |k: &str| t.get(k)?.trim().parse::<i64>().ok();
        let float = |k: &str| t.get(k)?.trim().parse::<f32>().ok();
        if let (Some(a), Some(b), Some(n), Some(e), Some(d)) = (
            long("timerReadBehind"),
            long("timerOffsetBehind"),
            long("timerCongestNum"),
            float("timerEnqueueTps"),
            float("timerDequeueTps"),
        ) {
            (c.timer_read_behind, c.timer_offset_behind, c.timer_congest) = (a, b, n);
            (c.timer_enqueue_tps, c.timer_dequeue_tps) = (e, d);
        }
        if let Some(earliest) = t
            .get("earliestMessageTimeStamp")
            .and_then(|v| v.trim().parse::<i64>().ok())
        {
            c.hours = (wall_clock_millis() - earliest) as f64 / 1000.0 / 60.0 / 60.0;
        }
        if let Some(space) = t
            .get("commitLogDiskRatio")
            .and_then(|v| v.trim().parse::<f64>().ok())
        {
            c.space = space;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_broker() -> ClusterInfo {
        ClusterInfo::decode(br#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.10:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},"ghost":{"brokerAddrs":{}}},"clusterAddrTable":{"DefaultCluster":["broker-a","missing"]}}"#).unwrap()
    }

    #[test]
    fn placeholder_row_and_more_stats_match_admin_md() {
        let info = one_broker();
        let rows = rows(&info, None);
        assert_eq!(
            rows.len(),
            1,
            "brokers absent from brokerAddrTable are skipped"
        );
        assert_eq!(
            base_info(&rows, &[None]),
            concat!(
                "#Cluster Name           #Broker Name            #BID  #Addr                  #Version              #InTPS(LOAD)                   #OutTPS(LOAD)  #Timer(Progress)        #PCWait(ms)  #Hour         #SPACE    #ACTIVATED\n",
                "DefaultCluster          broker-a                0     192.168.0.10:10911                              0.00(,ms)                   0.00(,ms|,ms)  0-0(0.0w, 0.0, 0.0)                  0.00          0.0000         false\n",
            )
        );
        assert_eq!(
            more_stats(&rows, &[None]),
            concat!(
                "#Cluster Name     #Broker Name                       #InTotalYest  #OutTotalYest  #InTotalToday #OutTotalToday\n",
                "DefaultCluster    broker-a                                      0              0              0              0\n",
            )
        );
        assert!(
            super::rows(&info, Some("Other")).is_empty(),
            "an unknown -c prints only the header"
        );
    }

    #[test]
    fn stats_fill_the_columns() {
        let info = one_broker();
        let rows = rows(&info, None);
        let stats: BTreeMap<String, String> = [
            ("brokerVersionDesc", "V5_3_3"),
            ("putTps", "12.345 10 9"),
            ("getTransferredTps", "1.5 1 1"),
            ("sendThreadPoolQueueSize", "0"),
            ("sendThreadPoolQueueHeadWaitTimeMills", "0"),
            ("pullThreadPoolQueueSize", "1"),
            ("pullThreadPoolQueueHeadWaitTimeMills", "2"),
            ("pageCacheLockTimeMills", "0"),
            ("commitLogDiskRatio", "0.25"),
            ("brokerActive", "true"),
            ("msgPutTotalYesterdayMorning", "10"),
            ("msgPutTotalTodayMorning", "30"),
            ("msgPutTotalTodayNow", "35"),
            ("msgGetTotalYesterdayMorning", "1"),
            ("msgGetTotalTodayMorning", "2"),
            ("msgGetTotalTodayNow", "4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let table = base_info(&rows, &[Some(stats.clone())]);
        let row = table.lines().nth(1).unwrap();
        assert!(row.contains("V5_3_3"), "{row}");
        assert!(row.contains("    12.35(0,0ms)"), "{row}");
        assert!(row.contains("1.50(1,2ms|N,Nms)"), "{row}");
        assert!(row.contains("0.2500"), "{row}");
        assert!(row.ends_with("      true"), "{row}");
        let more = more_stats(&rows, &[Some(stats)]);
        assert!(
            more.ends_with("             20              1              5              2\n"),
            "{more}"
        );
    }
}
