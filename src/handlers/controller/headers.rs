//! The controller requests' headers and bodies, read into the decisions' typed requests with
//! the ext-field names of Java's header classes (`isCleanLivingBroker`,
//! `heartbeatTimeoutMills`, …). Stricter than Java on purpose (CONTROLLER.md §1.6: Java's
//! decoder silently leaves a missing required field null and fails later with a
//! `NullPointerException`): a field a request cannot do without, a number that does not
//! parse, or a body that is not the JSON it must be is refused here, with
//! `CONTROLLER_INVALID_REQUEST` (2005) and a remark naming the field — before anything is
//! decided or proposed. Optional numbers that do not parse are ignored, as Java ignores them.

use std::time::Duration;

use crate::controller::code::response::CONTROLLER_INVALID_REQUEST;
use crate::controller::liveness::{BrokerKey, DEFAULT_HEARTBEAT_TIMEOUT, Heartbeat};
use crate::controller::machine::decide::{
    AlterSyncStateSet, ApplyBrokerId, CleanBrokerData, ElectMaster, NextBrokerId, RegisterBroker,
    ReplicaInfoQuery, SyncStateData, Trigger,
};
use crate::protocol::RemotingCommand;
use crate::protocol::body::controller::{SyncStateSetBody, parse_broker_names};
use crate::protocol::code::response::SYSTEM_ERROR;

/// A request refused before it is decided: its code and remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) code: i32,
    pub(crate) remark: String,
}

impl Refusal {
    fn invalid(remark: impl Into<String>) -> Refusal {
        Refusal {
            code: CONTROLLER_INVALID_REQUEST,
            remark: remark.into(),
        }
    }
}

/// The request's ext fields, read with the rules above.
struct Fields<'a>(&'a RemotingCommand);

impl<'a> Fields<'a> {
    fn optional(&self, name: &str) -> Option<&'a str> {
        self.0.ext(name)
    }

    fn required(&self, name: &str) -> Result<&'a str, Refusal> {
        self.optional(name)
            .ok_or_else(|| Refusal::invalid(format!("the custom field <{name}> is null")))
    }

    fn required_string(&self, name: &str) -> Result<String, Refusal> {
        self.required(name).map(str::to_owned)
    }

    fn required_number<T: std::str::FromStr>(&self, name: &str) -> Result<T, Refusal> {
        let value = self.required(name)?;
        value.trim().parse().map_err(|_| {
            Refusal::invalid(format!(
                "the custom field <{name}> has an invalid value: {value:?}"
            ))
        })
    }

    fn optional_number<T: std::str::FromStr>(&self, name: &str) -> Option<T> {
        self.optional(name)?.trim().parse().ok()
    }

    /// Java's `Boolean.parseBoolean`: only a case-insensitive `true` is true.
    fn flag(&self, name: &str) -> bool {
        self.optional(name)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// CONTROLLER_GET_NEXT_BROKER_ID.
pub(crate) fn next_broker_id(req: &RemotingCommand) -> Result<NextBrokerId, Refusal> {
    let f = Fields(req);
    Ok(NextBrokerId {
        cluster_name: f.optional("clusterName").map(str::to_owned),
        broker_name: f.required_string("brokerName")?,
    })
}

/// CONTROLLER_APPLY_BROKER_ID.
pub(crate) fn apply_broker_id(req: &RemotingCommand) -> Result<ApplyBrokerId, Refusal> {
    let f = Fields(req);
    Ok(ApplyBrokerId {
        cluster_name: f.required_string("clusterName")?,
        broker_name: f.required_string("brokerName")?,
        applied_broker_id: f.required_number("appliedBrokerId")?,
        register_check_code: f.required_string("registerCheckCode")?,
    })
}

/// CONTROLLER_REGISTER_BROKER.
pub(crate) fn register_broker(req: &RemotingCommand) -> Result<RegisterBroker, Refusal> {
    let f = Fields(req);
    Ok(RegisterBroker {
        cluster_name: f.required_string("clusterName")?,
        broker_name: f.required_string("brokerName")?,
        broker_id: f.required_number("brokerId")?,
        broker_address: f.required_string("brokerAddress")?,
    })
}

/// CONTROLLER_GET_REPLICA_INFO.
pub(crate) fn replica_info(req: &RemotingCommand) -> Result<ReplicaInfoQuery, Refusal> {
    Ok(ReplicaInfoQuery {
        broker_name: Fields(req).required_string("brokerName")?,
    })
}

/// CONTROLLER_ALTER_SYNC_STATE_SET: header and `SyncStateSet` body.
pub(crate) fn alter_sync_state_set(req: &RemotingCommand) -> Result<AlterSyncStateSet, Refusal> {
    let f = Fields(req);
    let broker_name = f.required_string("brokerName")?;
    let master_broker_id = f.required_number("masterBrokerId")?;
    let master_epoch = f.required_number("masterEpoch")?;
    let Some(body) = req.body.as_deref().filter(|b| !b.is_empty()) else {
        return Err(Refusal::invalid("the request has no SyncStateSet body"));
    };
    let proposed = SyncStateSetBody::parse(body).map_err(Refusal::invalid)?;
    Ok(AlterSyncStateSet {
        broker_name,
        master_broker_id,
        master_epoch,
        proposed,
    })
}

/// CONTROLLER_ELECT_MASTER from a broker (for itself) or an operator (`designateElect`).
pub(crate) fn elect_master(req: &RemotingCommand) -> Result<ElectMaster, Refusal> {
    let f = Fields(req);
    let broker_name = f.required_string("brokerName")?;
    let broker_id = f.required_number("brokerId")?;
    let trigger = match f.flag("designateElect") {
        true => Trigger::Admin(broker_id),
        false => Trigger::Broker(broker_id),
    };
    Ok(ElectMaster {
        broker_name,
        trigger,
    })
}

/// CONTROLLER_GET_SYNC_STATE_DATA's body: no body is Java's `1` `not set any response code`.
pub(crate) fn sync_state_data(req: &RemotingCommand) -> Result<SyncStateData, Refusal> {
    let Some(body) = req.body.as_deref().filter(|b| !b.is_empty()) else {
        return Err(Refusal {
            code: SYSTEM_ERROR,
            remark: "not set any response code".to_owned(),
        });
    };
    let broker_names = parse_broker_names(body).map_err(Refusal::invalid)?;
    Ok(SyncStateData { broker_names })
}

/// CLEAN_BROKER_DATA.
pub(crate) fn clean_broker_data(req: &RemotingCommand) -> Result<CleanBrokerData, Refusal> {
    let f = Fields(req);
    Ok(CleanBrokerData {
        cluster_name: f.optional("clusterName").map(str::to_owned),
        broker_name: f.required_string("brokerName")?,
        ids_to_clean: f.optional("brokerControllerIdsToClean").map(str::to_owned),
        clean_living_broker: f.flag("isCleanLivingBroker"),
    })
}

/// BROKER_HEARTBEAT: the replica's key and its heartbeat, Java's defaults for what is absent.
pub(crate) fn heartbeat(req: &RemotingCommand) -> Result<(BrokerKey, Heartbeat), Refusal> {
    let f = Fields(req);
    let cluster = f.required_string("clusterName")?;
    let broker_addr = f.required_string("brokerAddr")?;
    let broker_name = f.required_string("brokerName")?;
    let Some(broker_id) = f.optional_number("brokerId") else {
        return Err(Refusal::invalid("Heart beat with empty brokerId"));
    };
    let timeout = f
        .optional_number::<u64>("heartbeatTimeoutMills")
        .map_or(DEFAULT_HEARTBEAT_TIMEOUT, Duration::from_millis);
    let key = BrokerKey {
        cluster,
        broker_name,
        broker_id,
    };
    let beat = Heartbeat {
        broker_addr,
        epoch: f.optional_number("epoch").unwrap_or(-1),
        max_offset: f.optional_number("maxOffset").unwrap_or(-1),
        confirm_offset: f.optional_number("confirmOffset").unwrap_or(-1),
        timeout,
        election_priority: f.optional_number("electionPriority").unwrap_or(i32::MAX),
    };
    Ok((key, beat))
}
