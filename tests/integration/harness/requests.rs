//! The requests tests send most: a broker's registration, a route lookup, a config update.

use namesrv::protocol::RemotingCommand;
use namesrv::protocol::body::RegisterBroker;
use namesrv::protocol::code::request;

use super::client::TestClient;

/// A JSON REGISTER_BROKER body with topics named `topics` (4/4 queues, perm 6).
pub fn register_body(counter: i64, topics: &[&str]) -> Vec<u8> {
    registration("", "", "0", counter, topics).body_json()
}

/// A 5.x broker of `DefaultCluster` with `topics` (4/4 queues) at data version `counter`; `id`
/// is the `brokerId` header field.
pub fn registration(
    name: &str,
    addr: &str,
    id: &str,
    counter: i64,
    topics: &[&str],
) -> RegisterBroker {
    let id = id.parse().expect("a numeric brokerId");
    RegisterBroker::new("DefaultCluster", name, addr)
        .broker_id(id)
        .topics(topics, 4)
        .data_version(counter, 1_700_000_000_000)
}

/// Sends `registration` as a REGISTER_BROKER and returns the response, whatever it is.
pub async fn send_registration(
    client: &mut TestClient,
    registration: &RegisterBroker,
) -> RemotingCommand {
    let fields = registration.header_fields();
    let ext: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let body = registration.body_json();
    client
        .call(request::REGISTER_BROKER, &ext, Some(&body))
        .await
}

/// Sends `registration` and asserts success.
pub async fn register_with(
    client: &mut TestClient,
    registration: &RegisterBroker,
) -> RemotingCommand {
    let resp = send_registration(client, registration).await;
    assert_eq!(resp.code, 0, "register failed: {:?}", resp.remark);
    resp
}

/// REGISTER_BROKER with [`register_ext`]'s fields and `body` as given (possibly malformed);
/// the response, whatever it is.
pub async fn register_raw(
    client: &mut TestClient,
    (name, addr, id): (&str, &str, &str),
    body: &[u8],
) -> RemotingCommand {
    let ext = register_ext(name, addr, id);
    client
        .call(request::REGISTER_BROKER, &ext, Some(body))
        .await
}

/// Ext fields of a 5.x master/slave registration.
pub fn register_ext<'a>(name: &'a str, addr: &'a str, id: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("brokerName", name),
        ("brokerAddr", addr),
        ("clusterName", "DefaultCluster"),
        ("haServerAddr", "127.0.0.1:10912"),
        ("brokerId", id),
        ("compressed", "false"),
        ("enableActingMaster", "false"),
    ]
}

/// The ext fields of a QUERY_DATA_VERSION from a master of `DefaultCluster`.
pub fn qdv_ext<'a>(name: &'a str, addr: &'a str) -> [(&'a str, &'a str); 4] {
    [
        ("brokerName", name),
        ("brokerAddr", addr),
        ("clusterName", "DefaultCluster"),
        ("brokerId", "0"),
    ]
}

/// QUERY_DATA_VERSION from master `name` at `addr` of `DefaultCluster`, which holds data
/// version `counter` (timestamp 1700000000000); a heartbeat too.
pub async fn query_data_version(
    client: &mut TestClient,
    name: &str,
    addr: &str,
    counter: i64,
) -> RemotingCommand {
    let body = format!(r#"{{"counter":{counter},"stateVersion":0,"timestamp":1700000000000}}"#);
    client
        .call(
            request::QUERY_DATA_VERSION,
            &qdv_ext(name, addr),
            Some(body.as_bytes()),
        )
        .await
}

/// Registers the tests' usual broker: `broker-a` (master, 10.0.0.1:10911) of `DefaultCluster`
/// with TopicA and TopicB, data version counter 1.
pub async fn register_broker_a(client: &mut TestClient) -> RemotingCommand {
    register(
        client,
        "broker-a",
        "10.0.0.1:10911",
        "0",
        1,
        &["TopicA", "TopicB"],
    )
    .await
}

/// Registers a 5.x broker and asserts success.
pub async fn register(
    client: &mut TestClient,
    name: &str,
    addr: &str,
    id: &str,
    counter: i64,
    topics: &[&str],
) -> RemotingCommand {
    register_with(client, &registration(name, addr, id, counter, topics)).await
}

/// Registers master `name` at `addr` of `DefaultCluster` with `topics`, data version counter 1,
/// and asserts success.
pub async fn register_master(
    client: &mut TestClient,
    name: &str,
    addr: &str,
    topics: &[&str],
) -> RemotingCommand {
    register(client, name, addr, "0", 1, topics).await
}

/// GET_BROKER_CLUSTER_INFO.
pub async fn cluster_info(client: &mut TestClient) -> RemotingCommand {
    client
        .call(request::GET_BROKER_CLUSTER_INFO, &[], None)
        .await
}

/// Asks for a topic's route.
pub async fn route(client: &mut TestClient, topic: &str) -> RemotingCommand {
    client
        .call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)], None)
        .await
}

/// PUT_KV_CONFIG of `key` = `value` in `namespace`.
pub async fn put_kv(
    client: &mut TestClient,
    namespace: &str,
    key: &str,
    value: &str,
) -> RemotingCommand {
    let ext = [("namespace", namespace), ("key", key), ("value", value)];
    client.call(request::PUT_KV_CONFIG, &ext, None).await
}

/// GET_KV_CONFIG of `key` in `namespace`.
pub async fn get_kv(client: &mut TestClient, namespace: &str, key: &str) -> RemotingCommand {
    let ext = [("namespace", namespace), ("key", key)];
    client.call(request::GET_KV_CONFIG, &ext, None).await
}

/// DELETE_KV_CONFIG of `key` in `namespace`.
pub async fn delete_kv(client: &mut TestClient, namespace: &str, key: &str) -> RemotingCommand {
    let ext = [("namespace", namespace), ("key", key)];
    client.call(request::DELETE_KV_CONFIG, &ext, None).await
}

/// GET_KVLIST_BY_NAMESPACE of `namespace`.
pub async fn kv_list(client: &mut TestClient, namespace: &str) -> RemotingCommand {
    let ext = [("namespace", namespace)];
    client
        .call(request::GET_KVLIST_BY_NAMESPACE, &ext, None)
        .await
}

/// WIPE_WRITE_PERM_OF_BROKER of `broker_name`.
pub async fn wipe_write_perm(client: &mut TestClient, broker_name: &str) -> RemotingCommand {
    let ext = [("brokerName", broker_name)];
    client
        .call(request::WIPE_WRITE_PERM_OF_BROKER, &ext, None)
        .await
}

/// UPDATE_NAMESRV_CONFIG with `properties` as the body.
pub async fn update_config(client: &mut TestClient, properties: &str) -> RemotingCommand {
    let body = Some(properties.as_bytes());
    client.call(request::UPDATE_NAMESRV_CONFIG, &[], body).await
}
