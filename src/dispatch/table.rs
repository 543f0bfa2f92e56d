//! The request table: one row per request code, holding everything the server knows about
//! the code — its Java name, its handler, where it runs ([`Cost`]), the metric series it is
//! counted in, what the auth gate needs ([`Access`]) and which durable write it makes. The
//! dispatcher, the metrics and the gate read the row; none of them looks a code up itself.
//! Adding a request code is one row here plus its handler.
//!
//! A table is a value ([`RequestTable`]): a second remoting listener serves its own table
//! through the same connection code. [`NAMESRV`] is the name server's.

use std::future::Future;
use std::pin::Pin;

use crate::auth::{Access, Audit, Permission};
use crate::handlers::{self, Context, HandlerResult};
use crate::metrics::{LatencyClass, RequestSeries, Write, codes};
use crate::protocol::RemotingCommand;
use crate::protocol::code::request as rc;

/// What handling a request may cost, which decides where the server runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cost {
    /// Short and bounded: handled on the connection's task.
    Quick,
    /// Waits for the disk: a durable KV or configuration write.
    Disk,
    /// May keep a core busy: a registration body (possibly compressed) or a KV listing.
    Cpu,
    /// A listing of the route table, whose cost grows with it: quick while the table is
    /// small ([`crate::state::route_table::RouteTable::lists_quickly`]), else `Cpu`. Handing
    /// a small listing to the blocking pool costs more than building it.
    Listing,
}

/// The reply of a handler that finishes later: it owns what it needs (clones of the state
/// handle, the request's fields), so the connection can keep serving while it waits.
pub type Later = Pin<Box<dyn Future<Output = HandlerResult> + Send + 'static>>;

/// How a row's handler runs.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// Runs to completion on the thread [`Cost`] chose, and returns the reply.
    Sync(fn(&Context<'_>, &RemotingCommand) -> HandlerResult),
    /// Starts on the thread [`Cost`] chose and returns a future of the reply, which the
    /// connection awaits beside its other requests (the controller waits for a consensus
    /// commit this way). Its response is written when the future completes, matched to the
    /// request by its opaque: later requests on the same connection may be answered first.
    Async(fn(&Context<'_>, &RemotingCommand) -> Later),
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Handler::Sync(_) => f.write_str("Handler::Sync"),
            Handler::Async(_) => f.write_str("Handler::Async"),
        }
    }
}

/// What a request's success (or failed write) adds to the metrics besides its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Nothing.
    Nothing,
    /// A durable write of this kind, timed when it reached the disk.
    Durable(Write),
    /// A broker registration, counted by how it was applied.
    Registration,
}

/// One request code's row.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// The request code.
    pub(crate) code: i32,
    /// The name of Java's `RequestCode` constant.
    pub(crate) name: &'static str,
    /// Its handler.
    pub(crate) handler: Handler,
    /// Where it runs.
    pub(crate) cost: Cost,
    /// The series it is counted in (the slot is the row's place in its table).
    pub metric: RequestSeries,
    /// What the auth gate needs.
    pub access: Access,
    /// What its success adds to the metrics.
    pub(crate) writes: Writes,
}

impl Route {
    /// A quick, unaudited row that writes nothing; `label` is the `request_code` label value
    /// (the lower-cased `name`).
    pub const fn new(
        code: i32,
        name: &'static str,
        label: &'static str,
        handler: fn(&Context<'_>, &RemotingCommand) -> HandlerResult,
        class: LatencyClass,
        permission: Permission,
    ) -> Route {
        Route::row(code, name, label, Handler::Sync(handler), class, permission)
    }

    const fn row(
        code: i32,
        name: &'static str,
        label: &'static str,
        handler: Handler,
        class: LatencyClass,
        permission: Permission,
    ) -> Route {
        Route {
            code,
            name,
            handler,
            cost: Cost::Quick,
            metric: RequestSeries {
                slot: 0,
                label,
                class,
            },
            access: Access::of(permission),
            writes: Writes::Nothing,
        }
    }

    /// A row like [`Route::new`]'s whose handler finishes later.
    pub const fn later(
        code: i32,
        name: &'static str,
        label: &'static str,
        handler: fn(&Context<'_>, &RemotingCommand) -> Later,
        class: LatencyClass,
        permission: Permission,
    ) -> Route {
        Route::row(
            code,
            name,
            label,
            Handler::Async(handler),
            class,
            permission,
        )
    }

    /// The row, running in `cost`'s lane.
    pub(crate) const fn cost(mut self, cost: Cost) -> Route {
        self.cost = cost;
        self
    }

    /// An admin row whose audit lines show `fields`.
    pub(crate) const fn audited(mut self, fields: &'static [&'static str]) -> Route {
        self.access = Access::audited(Audit {
            request: self.name,
            fields,
            config_keys: false,
        });
        self
    }

    /// An admin row whose audit lines name the configuration keys its body sets.
    pub(crate) const fn audited_with_config_keys(mut self) -> Route {
        self.access = Access::audited(Audit {
            request: self.name,
            fields: &[],
            config_keys: true,
        });
        self
    }

    /// The row, with what its success adds to the metrics.
    pub(crate) const fn writes(mut self, writes: Writes) -> Route {
        self.writes = writes;
        self
    }
}

/// A set of request codes one listener serves, with an O(1) lookup by code.
#[derive(Debug)]
pub struct RequestTable {
    /// The service the table is for, for logs.
    pub name: &'static str,
    rows: &'static [Route],
    /// Row index by request code; [`NO_ROW`] for codes without one.
    index: &'static [u8],
}

/// The index entry of a code without a row.
const NO_ROW: u8 = u8::MAX;

impl RequestTable {
    /// The table `name` of `rows` (numbered by [`numbered`]) and their `index` (by
    /// [`index_of`]), both statics.
    pub const fn new(
        name: &'static str,
        rows: &'static [Route],
        index: &'static [u8],
    ) -> RequestTable {
        RequestTable { name, rows, index }
    }

    /// The row of `code`, if the table serves it.
    #[inline]
    pub fn route(&self, code: i32) -> Option<&'static Route> {
        let row = *self.index.get(usize::try_from(code).ok()?)?;
        self.rows.get(usize::from(row))
    }

    /// Every row, in metric slot order.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> &'static [Route] {
        self.rows
    }
}

/// `rows` with their metric slots numbered from `first_slot`, in order. Each table numbers
/// its rows from a slot range of its own: a slot's label is the label first counted in it.
pub const fn numbered<const N: usize>(mut rows: [Route; N], first_slot: usize) -> [Route; N] {
    assert!(
        first_slot + N < codes::REQUEST_SLOTS,
        "more rows than metric slots"
    );
    let mut i = 0;
    while i < N {
        rows[i].metric.slot = (first_slot + i) as u8;
        i += 1;
    }
    rows
}

/// The code → row index of `rows` over codes `0..M`.
pub const fn index_of<const M: usize>(rows: &[Route]) -> [u8; M] {
    assert!(rows.len() < NO_ROW as usize);
    let mut index = [NO_ROW; M];
    let mut i = 0;
    while i < rows.len() {
        let code = rows[i].code as usize;
        assert!(index[code] == NO_ROW, "a code with two rows");
        index[code] = i as u8;
        i += 1;
    }
    index
}

use Cost::{Cpu, Disk, Listing};
use LatencyClass as L;
use Permission::{Admin, Broker, Read};
use handlers::{broker, controller_config, kv, operator, route, topic};

/// The name server's rows, in the order its metric series are exposed.
#[rustfmt::skip]
const NAMESRV_ROWS: [Route; 23] = numbered([
    Route::new(rc::PUT_KV_CONFIG, "PUT_KV_CONFIG", "put_kv_config", kv::put, L::Kv, Admin)
        .cost(Disk).audited(&["key", "namespace"]).writes(Writes::Durable(Write::Kv)),
    Route::new(rc::GET_KV_CONFIG, "GET_KV_CONFIG", "get_kv_config", kv::get, L::Kv, Read),
    Route::new(rc::DELETE_KV_CONFIG, "DELETE_KV_CONFIG", "delete_kv_config", kv::delete, L::Kv, Admin)
        .cost(Disk).audited(&["key", "namespace"]).writes(Writes::Durable(Write::Kv)),
    Route::new(rc::REGISTER_BROKER, "REGISTER_BROKER", "register_broker", broker::register, L::Register, Broker)
        .cost(Cpu).writes(Writes::Registration),
    Route::new(rc::UNREGISTER_BROKER, "UNREGISTER_BROKER", "unregister_broker", broker::unregister, L::Heartbeat, Broker),
    Route::new(rc::GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC", "get_routeinfo_by_topic", route::route, L::Route, Read),
    Route::new(rc::GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO", "get_broker_cluster_info", route::cluster, L::List, Read)
        .cost(Listing),
    Route::new(rc::WIPE_WRITE_PERM_OF_BROKER, "WIPE_WRITE_PERM_OF_BROKER", "wipe_write_perm_of_broker", operator::wipe_write_perm, L::Admin, Admin)
        .audited(&["brokerName"]),
    Route::new(rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", "get_all_topic_list_from_nameserver", topic::all, L::List, Read)
        .cost(Listing),
    Route::new(rc::DELETE_TOPIC_IN_NAMESRV, "DELETE_TOPIC_IN_NAMESRV", "delete_topic_in_namesrv", topic::delete, L::Admin, Admin)
        .audited(&["clusterName", "topic"]),
    Route::new(rc::REGISTER_TOPIC_IN_NAMESRV, "REGISTER_TOPIC_IN_NAMESRV", "register_topic_in_namesrv", topic::register, L::Admin, Broker)
        .cost(Cpu),
    Route::new(rc::GET_KVLIST_BY_NAMESPACE, "GET_KVLIST_BY_NAMESPACE", "get_kvlist_by_namespace", kv::list, L::Kv, Read)
        .cost(Cpu),
    Route::new(rc::GET_TOPICS_BY_CLUSTER, "GET_TOPICS_BY_CLUSTER", "get_topics_by_cluster", topic::by_cluster, L::List, Read)
        .cost(Listing),
    Route::new(rc::GET_SYSTEM_TOPIC_LIST_FROM_NS, "GET_SYSTEM_TOPIC_LIST_FROM_NS", "get_system_topic_list_from_ns", topic::system, L::List, Read)
        .cost(Listing),
    Route::new(rc::GET_UNIT_TOPIC_LIST, "GET_UNIT_TOPIC_LIST", "get_unit_topic_list", topic::unit, L::List, Read)
        .cost(Listing),
    Route::new(rc::GET_HAS_UNIT_SUB_TOPIC_LIST, "GET_HAS_UNIT_SUB_TOPIC_LIST", "get_has_unit_sub_topic_list", topic::unit_sub, L::List, Read)
        .cost(Listing),
    Route::new(rc::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", "get_has_unit_sub_ununit_topic_list", topic::unit_sub_not_unit, L::List, Read)
        .cost(Listing),
    Route::new(rc::UPDATE_NAMESRV_CONFIG, "UPDATE_NAMESRV_CONFIG", "update_namesrv_config", operator::update_config, L::Admin, Admin)
        .cost(Disk).audited_with_config_keys().writes(Writes::Durable(Write::Config)),
    Route::new(rc::GET_NAMESRV_CONFIG, "GET_NAMESRV_CONFIG", "get_namesrv_config", operator::get_config, L::Admin, Admin)
        .audited(&[]),
    Route::new(rc::QUERY_DATA_VERSION, "QUERY_DATA_VERSION", "query_data_version", broker::query_data_version, L::Heartbeat, Broker),
    Route::new(rc::ADD_WRITE_PERM_OF_BROKER, "ADD_WRITE_PERM_OF_BROKER", "add_write_perm_of_broker", operator::add_write_perm, L::Admin, Admin)
        .audited(&["brokerName"]),
    Route::new(rc::GET_BROKER_MEMBER_GROUP, "GET_BROKER_MEMBER_GROUP", "get_broker_member_group", broker::member_group, L::List, Read),
    Route::new(rc::BROKER_HEARTBEAT, "BROKER_HEARTBEAT", "broker_heartbeat", broker::heartbeat, L::Heartbeat, Broker),
], 0);

/// The name server's codes are below 1024 (the largest is BROKER_HEARTBEAT, 904).
static NAMESRV_INDEX: [u8; 1024] = index_of(&NAMESRV_ROWS);

static NAMESRV_ROUTES: [Route; 23] = NAMESRV_ROWS;

/// The name server's request table.
pub static NAMESRV: RequestTable = RequestTable::new("namesrv", &NAMESRV_ROUTES, &NAMESRV_INDEX);

/// The controller's rows (Java's `ControllerRequestProcessor` codes and the consensus layer's
/// peer traffic), numbered after the name server's. Heartbeats and metadata are answered by
/// any node at once; the leader-only codes finish later, after their commit.
#[rustfmt::skip]
const CONTROLLER_ROWS: [Route; 15] = numbered([
    Route::new(cc::BROKER_HEARTBEAT, "BROKER_HEARTBEAT", "controller_broker_heartbeat", controller::heartbeat, L::Heartbeat, Broker),
    Route::new(cc::CONTROLLER_GET_METADATA_INFO, "CONTROLLER_GET_METADATA_INFO", "controller_get_metadata_info", controller::metadata, L::List, Read),
    Route::later(cc::CONTROLLER_GET_NEXT_BROKER_ID, "CONTROLLER_GET_NEXT_BROKER_ID", "controller_get_next_broker_id", controller::next_broker_id, L::Register, Broker),
    Route::later(cc::CONTROLLER_APPLY_BROKER_ID, "CONTROLLER_APPLY_BROKER_ID", "controller_apply_broker_id", controller::apply_broker_id, L::Register, Broker),
    Route::later(cc::CONTROLLER_REGISTER_BROKER, "CONTROLLER_REGISTER_BROKER", "controller_register_broker", controller::register_broker, L::Register, Broker),
    Route::later(cc::CONTROLLER_GET_REPLICA_INFO, "CONTROLLER_GET_REPLICA_INFO", "controller_get_replica_info", controller::replica_info, L::List, Broker),
    Route::later(cc::CONTROLLER_ALTER_SYNC_STATE_SET, "CONTROLLER_ALTER_SYNC_STATE_SET", "controller_alter_sync_state_set", controller::alter_sync_state_set, L::Register, Broker),
    Route::later(cc::CONTROLLER_ELECT_MASTER, "CONTROLLER_ELECT_MASTER", "controller_elect_master", controller::elect_master, L::Admin, Broker)
        .audited(&["brokerName", "brokerId", "designateElect"]),
    Route::later(cc::CONTROLLER_GET_SYNC_STATE_DATA, "CONTROLLER_GET_SYNC_STATE_DATA", "controller_get_sync_state_data", controller::sync_state_data, L::List, Read),
    Route::later(cc::CLEAN_BROKER_DATA, "CLEAN_BROKER_DATA", "clean_broker_data", controller::clean_broker_data, L::Admin, Admin)
        .audited(&["clusterName", "brokerName", "brokerControllerIdsToClean", "isCleanLivingBroker"]),
    Route::later(peer::RAFT_APPEND_ENTRIES, "RAFT_APPEND_ENTRIES", "raft_append_entries", controller::peer, L::Other, Broker),
    Route::later(peer::RAFT_VOTE, "RAFT_VOTE", "raft_vote", controller::peer, L::Other, Broker),
    Route::later(peer::RAFT_INSTALL_SNAPSHOT, "RAFT_INSTALL_SNAPSHOT", "raft_install_snapshot", controller::peer, L::Other, Broker),
    Route::new(cc::UPDATE_CONTROLLER_CONFIG, "UPDATE_CONTROLLER_CONFIG", "update_controller_config", controller_config::update_config, L::Admin, Admin)
        .cost(Disk).audited_with_config_keys().writes(Writes::Durable(Write::Config)),
    Route::new(cc::GET_CONTROLLER_CONFIG, "GET_CONTROLLER_CONFIG", "get_controller_config", controller_config::get_config, L::Admin, Admin)
        .audited(&[]),
], NAMESRV_ROWS.len());

/// The controller's codes: Java's are below 1024, the peer traffic's 51200..51203.
static CONTROLLER_INDEX: [u8; 51_203] = index_of(&CONTROLLER_ROWS);

static CONTROLLER_ROUTES: [Route; 15] = CONTROLLER_ROWS;

/// The controller's request table (its own port).
pub static CONTROLLER: RequestTable =
    RequestTable::new("controller", &CONTROLLER_ROUTES, &CONTROLLER_INDEX);

use crate::controller::code::request as cc;
use crate::controller::raft::code as peer;
use handlers::controller;
