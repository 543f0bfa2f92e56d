//! `TopicConfig` as brokers send it in registrations, in its JSON form and in the
//! space-separated text form of compressed registration bodies (`TopicConfig#encode`, used by
//! `RegisterBrokerBody#encode`).

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::lenient;

/// The part of a broker's `TopicConfig` the name server keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    /// The topic, from the config itself (Java ignores the table key).
    pub topic_name: Option<String>,
    /// Readable queues (default 16).
    pub read_queue_nums: i32,
    /// Writable queues (default 16).
    pub write_queue_nums: i32,
    /// Permission bits (default 6 = read|write).
    pub perm: i32,
    /// `TopicSysFlag` bits (the text form does not carry them: 0).
    pub topic_sys_flag: i32,
}

/// Why a topic config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TopicConfigError {
    /// The JSON form is malformed.
    #[error("bad topic config: {0}")]
    Json(#[from] serde_json::Error),
    /// The text form has fewer than five parts or a bad number or filter type.
    #[error("bad topic config text {0:?}")]
    Text(String),
}

const DEFAULT_QUEUE_NUMS: i32 = 16;
const DEFAULT_PERM: i32 = 6;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    topic_name: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_i32")]
    read_queue_nums: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_i32")]
    write_queue_nums: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_i32")]
    perm: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_i32")]
    topic_sys_flag: Option<i32>,
    // Read loosely: the server does not keep them, and a fastjson `$ref` may stand in for
    // `attributes`.
    #[serde(default)]
    #[allow(dead_code)]
    attributes: IgnoredAny,
    #[serde(default)]
    #[allow(dead_code)]
    topic_filter_type: IgnoredAny,
    #[serde(default)]
    #[allow(dead_code)]
    order: IgnoredAny,
}

impl TopicConfig {
    /// Parses the JSON form; missing properties take Java's field defaults.
    pub(crate) fn from_json(json: &[u8]) -> Result<TopicConfig, TopicConfigError> {
        lenient::expect_object(json)?;
        let wire: Wire = serde_json::from_slice(json)?;
        Ok(TopicConfig {
            topic_name: wire.topic_name,
            read_queue_nums: wire.read_queue_nums.unwrap_or(DEFAULT_QUEUE_NUMS),
            write_queue_nums: wire.write_queue_nums.unwrap_or(DEFAULT_QUEUE_NUMS),
            perm: wire.perm.unwrap_or(DEFAULT_PERM),
            topic_sys_flag: wire.topic_sys_flag.unwrap_or(0),
        })
    }

    /// Parses the text form `name read write perm filterType [attributesJson]`, split on
    /// single spaces with trailing empty parts dropped, as Java's `String.split(" ")`.
    pub(crate) fn from_text(text: &str) -> Result<TopicConfig, TopicConfigError> {
        let bad = || TopicConfigError::Text(text.to_owned());
        let mut parts: Vec<&str> = text.split(' ').collect();
        while parts.last() == Some(&"") {
            parts.pop();
        }
        if parts.len() < 5 {
            return Err(bad());
        }
        let int = |s: &str| s.parse::<i32>().map_err(|_| bad());
        if !matches!(parts[4], "SINGLE_TAG" | "MULTI_TAG") {
            return Err(bad());
        }
        Ok(TopicConfig {
            topic_name: Some(parts[0].to_owned()),
            read_queue_nums: int(parts[1])?,
            write_queue_nums: int(parts[2])?,
            perm: int(parts[3])?,
            topic_sys_flag: 0,
        })
    }

    /// The topic name of a text-form config (its first part), without parsing the rest.
    pub(crate) fn name_of_text(text: &str) -> &str {
        text.split(' ').next().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_with_defaults_and_loose_attributes() {
        let tc = TopicConfig::from_json(
            br#"{"attributes":{"$ref":"$.x"},"order":false,"perm":"7","topicName":"T","topicSysFlag":1}"#,
        )
        .unwrap();
        assert_eq!(
            tc,
            TopicConfig {
                topic_name: Some("T".into()),
                read_queue_nums: 16,
                write_queue_nums: 16,
                perm: 7,
                topic_sys_flag: 1
            }
        );
        assert!(TopicConfig::from_json(br#"{"perm":"x"}"#).is_err());
    }

    #[test]
    fn text_form_like_java_split() {
        let tc = TopicConfig::from_text("TopicTest 4 8 6 SINGLE_TAG {}").unwrap();
        assert_eq!(
            (tc.read_queue_nums, tc.write_queue_nums, tc.perm),
            (4, 8, 6)
        );
        assert!(TopicConfig::from_text("T 4 4 6 SINGLE_TAG ").is_ok());
        assert!(TopicConfig::from_text("T 4 4 6").is_err());
        assert!(TopicConfig::from_text("T 4  4 6 SINGLE_TAG").is_err());
        assert!(TopicConfig::from_text("T 4 4 6 NO_TAG").is_err());
        assert_eq!(TopicConfig::name_of_text("T 4 4 6 SINGLE_TAG"), "T");
    }
}
