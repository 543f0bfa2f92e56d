//! CLEAN_BROKER_DATA (1011): `ReplicasInfoManager#cleanBrokerData`. Java's quirk is kept on
//! purpose, since operators rely on it: with `isCleanLivingBroker=true` the id list is
//! ignored and the whole set is removed.

use std::collections::BTreeSet;

use super::{LiveView, Verdict};
use crate::controller::code::response as rc;
use crate::controller::machine::{BrokerId, Event, Machine};

/// CLEAN_BROKER_DATA's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanBrokerData {
    /// `clusterName`: the liveness key of the ids checked (none alive when absent).
    pub cluster_name: Option<String>,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerControllerIdsToClean` as sent (`1;2;3`), parsed only when it matters.
    pub ids_to_clean: Option<String>,
    /// `isCleanLivingBroker`.
    pub clean_living_broker: bool,
}

impl CleanBrokerData {
    /// Refuses cleaning a live set or live ids unless told to; then removes what was asked.
    pub fn decide(&self, machine: &Machine, live: &dyn LiveView) -> Verdict {
        let name = &self.broker_name;
        let refused = |remark: String| {
            Verdict::refused(
                rc::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                remark,
                Vec::new(),
            )
            .without_ext()
        };
        let listed = self
            .ids_to_clean
            .as_deref()
            .filter(|s| !s.trim().is_empty());
        let mut ids = None;
        if !self.clean_living_broker {
            let has_master = machine
                .sync_state(name)
                .is_some_and(|s| s.master_broker_id.is_some());
            if listed.is_none() && has_master {
                return refused(format!("Broker {name} is still alive, clean up failure"));
            }
            if let Some(text) = listed {
                let parsed = match parse_ids(text) {
                    Ok(parsed) => parsed,
                    Err(e) => {
                        return refused(format!(
                            "Please set the option <brokerControllerIdsToClean> according to the format, exception: {e}"
                        ));
                    }
                };
                let cluster = self.cluster_name.as_deref();
                if let Some(id) = parsed
                    .iter()
                    .find(|id| cluster.is_some_and(|c| live.is_alive(c, name, **id)))
                {
                    return refused(format!(
                        "Broker [{name},  {id}] is still alive, clean up failure"
                    ));
                }
                ids = Some(parsed);
            }
        }
        if machine.broker_set(name).is_none() {
            return refused(format!(
                "Broker {name} is not existed,clean broker data failure."
            ));
        }
        Verdict::ok(Vec::new())
            .without_ext()
            .with_event(Event::CleanBrokerDataEvent {
                broker_name: name.clone(),
                broker_id_set_to_clean: ids,
            })
    }
}

/// `Stream.of(text.split(";")).map(Long::valueOf)`: Java's `split` drops trailing empty
/// items; anything else that is not a long fails with Java's `NumberFormatException` text.
fn parse_ids(text: &str) -> Result<BTreeSet<BrokerId>, String> {
    let mut items: Vec<&str> = text.split(';').collect();
    while items.last() == Some(&"") {
        items.pop();
    }
    items
        .into_iter()
        .map(|item| {
            item.parse::<BrokerId>().map_err(|_| {
                format!("java.lang.NumberFormatException: For input string: \"{item}\"")
            })
        })
        .collect()
}
