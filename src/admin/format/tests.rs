//! The formats against output of Java's mqadmin (`TopicRouteSubCommand`,
//! `ClusterListSubCommand`), byte for byte.

use super::*;
use crate::admin::decode::RouteInfo;

const ONE_BROKER: &[u8] = br#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.10:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;

#[test]
fn route_pretty_is_fastjsons_pretty_form() {
    let expected = "{\n\t\"brokerDatas\":[\n\t\t{\n\t\t\t\"brokerAddrs\":{0:\"192.168.0.10:10911\"\n\t\t\t},\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"cluster\":\"DefaultCluster\",\n\t\t\t\"enableActingMaster\":false\n\t\t}\n\t],\n\t\"filterServerTable\":{},\n\t\"queueDatas\":[\n\t\t{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"perm\":6,\n\t\t\t\"readQueueNums\":8,\n\t\t\t\"topicSysFlag\":0,\n\t\t\t\"writeQueueNums\":8\n\t\t}\n\t]\n}\n";
    let route = RouteInfo::decode(ONE_BROKER).unwrap();
    assert_eq!(route_pretty(&route), expected);
}

#[test]
fn route_pretty_lists_two_addresses_inline_and_empty_lists_compactly() {
    let body = br#"{"brokerDatas":[{"brokerAddrs":{1:"192.168.0.11:10911",0:"192.168.0.10:10911"},"brokerName":"b","cluster":"C"}],"filterServerTable":{},"orderTopicConf":"b:4","queueDatas":[]}"#;
    let text = route_pretty(&RouteInfo::decode(body).unwrap());
    assert!(
        text.contains(
            "\"brokerAddrs\":{0:\"192.168.0.10:10911\",1:\"192.168.0.11:10911\"\n\t\t\t},"
        ),
        "{text}"
    );
    assert!(
        text.contains("\t\"orderTopicConf\":\"b:4\",\n\t\"queueDatas\":[]\n}"),
        "{text}"
    );
}

#[test]
fn route_list_matches_the_example_with_its_trailing_spaces() {
    let expected = concat!(
        "#ClusterName                                  #BrokerName                      #BrokerAddrs                                       #ReadQueue #WriteQueue #Perm\n",
        "DefaultCluster                                broker-a                         {0=192.168.0.10:10911}                             8          8           6    \n",
        "--------------------------------------------------------------------------------------------------------------------------------------------------------------\n",
        "Total:                                        1                                                                                   8          8                \n",
    );
    let route = RouteInfo::decode(ONE_BROKER).unwrap();
    assert_eq!(route_list(&route).unwrap(), expected);
}

#[test]
fn route_list_fails_for_a_broker_without_queue_data() {
    let body = br#"{"brokerDatas":[{"brokerAddrs":{"0":"a:1"},"brokerName":"x","cluster":"C"}],"queueDatas":[]}"#;
    assert!(route_list(&RouteInfo::decode(body).unwrap()).is_err());
}

#[test]
fn java_texts_and_front() {
    let route = RouteInfo::decode(ONE_BROKER).unwrap();
    assert_eq!(
        java_map_text(&route.broker_datas[0]),
        "{0=192.168.0.10:10911}"
    );
    assert_eq!(java_list_text(&["a:1".into(), "b:2".into()]), "[a:1, b:2]");
    assert_eq!(front("abcdef", 3), "abc");
    assert_eq!(front("ab", 3), "ab");
}
