//! The table of sub-commands and their options, with mqadmin's option letters, long names
//! and help texts (nsadmin's own options have long names only, so they never clash).

use super::{CommandKind, CommandSpec, OptSpec};

/// A flag or valued option with a short and a long name.
const fn opt(
    short: &'static str,
    long: &'static str,
    takes_value: bool,
    required: bool,
    desc: &'static str,
) -> OptSpec {
    OptSpec {
        short: Some(short),
        long,
        takes_value,
        required,
        desc,
    }
}

/// An nsadmin-only option: long name only, so it can never clash with an mqadmin letter.
const fn long_only(long: &'static str, takes_value: bool, desc: &'static str) -> OptSpec {
    OptSpec {
        short: None,
        long,
        takes_value,
        required: false,
        desc,
    }
}

/// `-h`, `-n` and nsadmin's connection options: every command has them.
pub(super) const COMMON: [OptSpec; 5] = [
    opt("h", "help", false, false, "Print help"),
    opt(
        "n",
        "namesrvAddr",
        true,
        false,
        "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'",
    ),
    long_only(
        "credentials",
        true,
        "tools.yml-style file with accessKey/secretKey to sign requests with",
    ),
    long_only(
        "timeout",
        true,
        "milliseconds to wait for each answer (default 5000; 3000, as mqadmin, for getSyncStateSet, \
         getBrokerEpoch, getControllerMetaData, electMaster and cleanBrokerMetadata)",
    ),
    long_only(
        "tls",
        false,
        "connect with TLS (as mqadmin with -Dtls.enable=true in JAVA_OPT, which also works)",
    ),
];

/// `--json`, offered by every read command.
const JSON: OptSpec = long_only(
    "json",
    false,
    "print one JSON document instead of the table",
);

/// `-a` of the controller commands that ask one node (the leader-discovery request).
const CONTROLLER: OptSpec = opt(
    "a",
    "controllerAddress",
    true,
    true,
    "the address of controller",
);

/// `-a` of the controller commands that ask every node of the list.
const CONTROLLER_LIST: OptSpec = opt(
    "a",
    "controllerAddress",
    true,
    true,
    "Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878",
);

/// `-bn` of `electMaster` and `cleanBrokerMetadata`.
const BROKER_SET: OptSpec = opt(
    "bn",
    "brokerName",
    true,
    true,
    "The broker name of the replicas that require to be manipulated",
);

/// `-i` of `getSyncStateSet` and `getBrokerEpoch`.
const INTERVAL: OptSpec = opt(
    "i",
    "interval",
    true,
    false,
    "the interval(second) of get info",
);

/// Every sub-command, in the order mqadmin lists them (then nsadmin's own).
pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "deleteTopic",
        desc: "Delete topic from NameServer (name servers only: brokers are not touched).",
        options: &[
            opt("t", "topic", true, true, "topic name"),
            opt(
                "c",
                "clusterName",
                true,
                true,
                "delete topic from which cluster",
            ),
        ],
        kind: CommandKind::DeleteTopic,
    },
    CommandSpec {
        name: "topicRoute",
        desc: "Examine topic route info.",
        options: &[
            opt("t", "topic", true, true, "topic name"),
            opt("l", "list", false, false, "Use list format to print data"),
            JSON,
        ],
        kind: CommandKind::TopicRoute,
    },
    CommandSpec {
        name: "topicClusterList",
        desc: "Get cluster info for topic.",
        options: &[opt("t", "topic", true, true, "topic name"), JSON],
        kind: CommandKind::TopicClusterList,
    },
    CommandSpec {
        name: "clusterList",
        desc: "List cluster infos.",
        options: &[
            opt("m", "moreStats", false, false, "Print more stats"),
            opt(
                "i",
                "interval",
                true,
                false,
                "specify intervals numbers, it is in seconds",
            ),
            opt("c", "clusterName", true, false, "which cluster"),
            JSON,
        ],
        kind: CommandKind::ClusterList,
    },
    CommandSpec {
        name: "topicList",
        desc: "Fetch all topic list from name server.",
        options: &[opt("c", "clusterModel", false, false, "clusterModel"), JSON],
        kind: CommandKind::TopicList,
    },
    CommandSpec {
        name: "updateKvConfig",
        desc: "Create or update KV config.",
        options: &[
            opt("s", "namespace", true, true, "set the namespace"),
            opt("k", "key", true, true, "set the key name"),
            opt("v", "value", true, true, "set the key value"),
        ],
        kind: CommandKind::UpdateKvConfig,
    },
    CommandSpec {
        name: "deleteKvConfig",
        desc: "Delete KV config.",
        options: &[
            opt("s", "namespace", true, true, "set the namespace"),
            opt("k", "key", true, true, "set the key name"),
        ],
        kind: CommandKind::DeleteKvConfig,
    },
    CommandSpec {
        name: "wipeWritePerm",
        desc: "Wipe write perm of broker in all name server you defined in the -n param.",
        options: &[opt("b", "brokerName", true, true, "broker name")],
        kind: CommandKind::WipeWritePerm,
    },
    CommandSpec {
        name: "addWritePerm",
        desc: "Add write perm of broker in all name server you defined in the -n param.",
        options: &[opt("b", "brokerName", true, true, "broker name")],
        kind: CommandKind::AddWritePerm,
    },
    CommandSpec {
        name: "updateOrderConf",
        desc: "Create or update or delete order conf.",
        options: &[
            opt("t", "topic", true, true, "topic name"),
            opt(
                "v",
                "orderConf",
                true,
                false,
                "set order conf [eg. brokerName1:num;brokerName2:num]",
            ),
            opt("m", "method", true, true, "option type [eg. put|get|delete"),
            long_only("json", false, "with -m get: print one JSON document"),
        ],
        kind: CommandKind::UpdateOrderConf,
    },
    CommandSpec {
        name: "getNamesrvConfig",
        desc: "Get configs of name server.",
        options: &[JSON],
        kind: CommandKind::GetNamesrvConfig,
    },
    CommandSpec {
        name: "updateNamesrvConfig",
        desc: "Update configs of name server.",
        options: &[
            opt("k", "key", true, true, "config key"),
            opt("v", "value", true, true, "config value"),
        ],
        kind: CommandKind::UpdateNamesrvConfig,
    },
    CommandSpec {
        name: "getSyncStateSet",
        desc: "Fetch syncStateSet for target brokers.",
        options: &[
            CONTROLLER,
            opt("c", "clusterName", true, false, "which cluster"),
            opt("b", "brokerName", true, false, "which broker to fetch"),
            INTERVAL,
        ],
        kind: CommandKind::GetSyncStateSet,
    },
    CommandSpec {
        name: "getBrokerEpoch",
        desc: "Fetch broker epoch entries.",
        options: &[
            opt("c", "clusterName", true, false, "which cluster"),
            opt("b", "brokerName", true, false, "which broker to fetch"),
            INTERVAL,
        ],
        kind: CommandKind::GetBrokerEpoch,
    },
    CommandSpec {
        name: "getControllerMetaData",
        desc: "Get controller cluster's metadata.",
        options: &[CONTROLLER],
        kind: CommandKind::GetControllerMetaData,
    },
    CommandSpec {
        name: "getControllerConfig",
        desc: "Get controller config.",
        options: &[CONTROLLER_LIST],
        kind: CommandKind::GetControllerConfig,
    },
    CommandSpec {
        name: "updateControllerConfig",
        desc: "Update controller config.",
        options: &[
            CONTROLLER_LIST,
            opt("k", "key", true, true, "config key"),
            opt("v", "value", true, true, "config value"),
        ],
        kind: CommandKind::UpdateControllerConfig,
    },
    CommandSpec {
        name: "electMaster",
        desc: "Re-elect the specified broker as master.",
        options: &[
            opt(
                "a",
                "controllerAddress",
                true,
                true,
                "The address of controller",
            ),
            opt(
                "b",
                "brokerId",
                true,
                true,
                "The id of the broker which requires to become master",
            ),
            BROKER_SET,
            opt("c", "clusterName", true, true, "the clusterName of broker"),
        ],
        kind: CommandKind::ElectMaster,
    },
    CommandSpec {
        name: "cleanBrokerMetadata",
        desc: "Clean metadata of broker on controller.",
        options: &[
            opt(
                "a",
                "controllerAddress",
                true,
                true,
                "The address of controller",
            ),
            opt(
                "b",
                "brokerControllerIdsToClean",
                true,
                false,
                "The brokerController id list which requires to clean metadata. eg: 1;2;3, means that clean broker-1, broker-2 and broker-3",
            ),
            BROKER_SET,
            opt("c", "clusterName", true, false, "The clusterName of broker"),
            opt(
                "l",
                "cleanLivingBroker",
                false,
                false,
                "Whether clean up living brokers,default value is false",
            ),
        ],
        kind: CommandKind::CleanBrokerMetadata,
    },
    CommandSpec {
        name: "diff",
        desc: "Check that the name servers of -n agree (exit 0 agree, 1 differ, 2 unreachable).",
        options: &[
            opt(
                "t",
                "topic",
                true,
                false,
                "compare only these topics (comma-separated)",
            ),
            opt(
                "s",
                "namespace",
                true,
                false,
                "also compare these KV namespaces (comma-separated)",
            ),
            long_only(
                "dataVersion",
                false,
                "also compare brokers' data versions (counts as a broker heartbeat on 5.x)",
            ),
            long_only(
                "ignoreConfig",
                true,
                "config keys not to compare (comma-separated), besides the node-local ones",
            ),
            long_only(
                "compareAll",
                false,
                "also compare node-local config keys (ports, addresses, paths, namesrvPeers)",
            ),
            JSON,
        ],
        kind: CommandKind::Diff,
    },
];
