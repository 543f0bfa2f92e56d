//! The parser against commons-cli's rules and messages.

use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn spec(name: &str) -> &'static CommandSpec {
    find(name).unwrap()
}

#[test]
fn commands_match_ignoring_case() {
    assert_eq!(find("CLUSTERLIST").unwrap().kind, CommandKind::ClusterList);
    assert_eq!(find("topicroute").unwrap().kind, CommandKind::TopicRoute);
    assert!(find("kvList").is_none());
}

#[test]
fn short_long_attached_and_prefixed_forms() {
    let s = spec("updateKvConfig");
    for form in [
        &["-s", "NS", "-k", "K", "-v", "V"][..],
        &["-sNS", "-kK", "-vV"],
        &["--namespace", "NS", "--key=K", "--value", "V"],
        &["-namespace", "NS", "--ke", "K", "-v=V"],
    ] {
        let p = s
            .parse(&args(form))
            .unwrap_or_else(|e| panic!("{form:?}: {e}"));
        assert_eq!(
            (p.value("namespace"), p.value("key"), p.value("value")),
            (Some("NS"), Some("K"), Some("V")),
            "{form:?}"
        );
    }
    let p = spec("clusterList").parse(&args(&["-mi", "5"])).unwrap();
    assert!(p.has("moreStats"));
    assert_eq!(p.value("interval"), Some("5"));
}

#[test]
fn errors_use_commons_cli_messages() {
    let s = spec("updateKvConfig");
    let msg = |a: &[&str]| s.parse(&args(a)).unwrap_err().0;
    assert_eq!(msg(&["-k", "K", "-v", "V"]), "Missing required option: s");
    assert_eq!(msg(&["-v", "V"]), "Missing required options: s, k");
    assert_eq!(msg(&["-x"]), "Unrecognized option: -x");
    assert_eq!(
        msg(&["-s", "NS", "-k", "K", "-v"]),
        "Missing argument for option: v"
    );
    assert_eq!(
        msg(&["-s", "NS", "-k", "K", "-v", "V", "extra"]),
        "Unexpected argument: extra"
    );
    // -h skips the required-option check.
    assert!(s.parse(&args(&["-h"])).unwrap().has("help"));
}

#[test]
fn usage_is_sorted_and_marks_required_options() {
    let text = spec("topicRoute").usage();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "usage: nsadmin topicRoute [--credentials <arg>] [-h] [--json] [-l] [-n <arg>] -t <arg> [--timeout <arg>]"
    );
    assert_eq!(lines.next().unwrap(), "       [--tls]");
    assert_eq!(
        lines.next().unwrap(),
        "    --credentials <arg>   tools.yml-style file with accessKey/secretKey to sign requests with"
    );
    assert_eq!(
        lines.next().unwrap(),
        " -h,--help                Print help"
    );
    assert!(text.contains(" -t,--topic <arg>         topic name\n"));
    for c in COMMANDS {
        assert!(c.usage().lines().all(|l| l.len() <= 110), "{}", c.name);
    }
}

#[test]
fn command_list_has_mqadmins_layout() {
    let text = command_list();
    assert!(text.starts_with("The most commonly used nsadmin commands are:\n   deleteTopic "));
    assert!(text.contains("\n   clusterList                         List cluster infos.\n"));
    assert!(text.ends_with(
        "\n\nSee 'nsadmin help <command>' for more information on a specific command.\n"
    ));
}

#[test]
fn diff_offers_compare_all_beside_ignore_config() {
    let s = spec("diff");
    let text = s.usage();
    assert!(
        text.contains("[--compareAll] [--credentials <arg>]"),
        "{text}"
    );
    // The left column is as wide as its widest entry, `    --ignoreConfig <arg>`.
    let line = |left: &str, desc: &str| format!("\n{left:<24}   {desc}");
    let compare_all = line("    --compareAll", "also compare node-local config keys");
    assert!(text.contains(&compare_all), "{text}");
    let ignore = line("    --ignoreConfig <arg>", "config keys not to compare");
    assert!(text.contains(&ignore), "{text}");
    assert!(s.parse(&args(&["--compareAll"])).unwrap().has("compareAll"));
    assert!(s.parse(&args(&["-compareAll"])).unwrap().has("compareAll"));
}

#[test]
fn two_letter_short_options_beside_one_letter_ones() {
    // electMaster has -b (brokerId) and -bn (brokerName), as commons-cli allows.
    let s = spec("electMaster");
    for form in [
        &["-a", "c:1", "-b", "2", "-bn", "broker-a", "-c", "C"][..],
        &["-bn", "broker-a", "-b2", "-a=c:1", "--clusterName", "C"],
        &[
            "--brokerName=broker-a",
            "--brokerId",
            "2",
            "-a",
            "c:1",
            "-c",
            "C",
        ],
    ] {
        let p = s
            .parse(&args(form))
            .unwrap_or_else(|e| panic!("{form:?}: {e}"));
        assert_eq!(
            (p.value("brokerId"), p.value("brokerName")),
            (Some("2"), Some("broker-a")),
            "{form:?}"
        );
    }
    assert_eq!(
        s.parse(&args(&["-a", "c:1", "-b", "2"])).unwrap_err().0,
        "Missing required options: bn, c"
    );
    let text = s.usage();
    assert!(
        text.starts_with("usage: nsadmin electMaster -a <arg> -b <arg> -bn <arg> -c <arg> "),
        "{text}"
    );
    assert!(text.contains("\n -bn,--brokerName <arg> "), "{text}");
}

#[test]
fn long_descriptions_wrap_into_their_column() {
    let text = spec("cleanBrokerMetadata").usage();
    let at = text.find(" -b,--brokerControllerIdsToClean <arg>").unwrap();
    let mut lines = text[at..].lines();
    let first = lines.next().unwrap();
    let column = first.find("The brokerController").unwrap();
    let second = lines.next().unwrap();
    assert_eq!(second.find(|c| c != ' '), Some(column), "{text}");
    assert!(first.len() <= 110 && second.len() <= 110, "{text}");
    assert!(second.ends_with("broker-3"), "{text}");
}

#[test]
fn controller_commands_are_listed_after_the_name_server_ones() {
    let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    let at = names
        .iter()
        .position(|n| *n == "updateNamesrvConfig")
        .unwrap();
    assert_eq!(
        names[at + 1..at + 8],
        [
            "getSyncStateSet",
            "getBrokerEpoch",
            "getControllerMetaData",
            "getControllerConfig",
            "updateControllerConfig",
            "electMaster",
            "cleanBrokerMetadata"
        ]
    );
}
