//! `DataVersion`: the version stamp of a broker's topic configuration.

use serde::Deserialize;

use super::lenient;
use crate::protocol::json::{JsonStyle, JsonWriter};

/// A broker's topic-config version as the name server stores and compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataVersion {
    /// 5.x state version (0 when a 4.9.x broker omits it).
    pub state_version: i64,
    /// Milliseconds; when the sender omitted it, the wall clock at decode time (as Java).
    pub timestamp: i64,
    /// The change counter; `None` when the sender wrote `null`.
    pub counter: Option<i64>,
    /// The sender omitted `timestamp`: such a version never equals another one, which is
    /// what Java's "now at decode time" default amounts to.
    pub timestamp_defaulted: bool,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(
        default,
        rename = "stateVersion",
        deserialize_with = "lenient::i64_or_zero"
    )]
    state_version: i64,
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    timestamp: Option<i64>,
    #[serde(default = "zero_counter", deserialize_with = "lenient::opt_i64")]
    counter: Option<i64>,
}

fn zero_counter() -> Option<i64> {
    Some(0)
}

impl DataVersion {
    /// The all-zero version Java uses for a registration without a body.
    pub(crate) const ZERO: DataVersion = DataVersion {
        state_version: 0,
        timestamp: 0,
        counter: Some(0),
        timestamp_defaulted: false,
    };

    /// Parses the JSON form, with fastjson's defaults for missing properties.
    pub fn from_json(json: &[u8]) -> Result<DataVersion, serde_json::Error> {
        lenient::expect_object(json)?;
        let wire: Wire = serde_json::from_slice(json)?;
        Ok(DataVersion {
            state_version: wire.state_version,
            timestamp: wire.timestamp.unwrap_or_else(wall_clock_millis),
            counter: wire.counter,
            timestamp_defaulted: wire.timestamp.is_none(),
        })
    }

    /// Java's `DataVersion.equals`.
    pub(crate) fn same_as(&self, other: &DataVersion) -> bool {
        !self.timestamp_defaulted
            && !other.timestamp_defaulted
            && self.state_version == other.state_version
            && self.timestamp == other.timestamp
            && self.counter == other.counter
    }

    /// Writes the JSON form: `{"counter":N,"stateVersion":N,"timestamp":N}`.
    pub(crate) fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.punct(b'{');
        if let Some(counter) = self.counter {
            w.key("counter");
            w.int(counter);
            w.punct(b',');
        }
        w.key("stateVersion");
        w.int(self.state_version);
        w.raw(b",\"timestamp\":");
        w.int(self.timestamp);
        w.punct(b'}');
    }

    /// The JSON form as bytes.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        self.write_json(&mut JsonWriter::new(&mut out, JsonStyle::Legacy));
        out
    }
}

/// Milliseconds since the Unix epoch. Wire timestamps are the one place the wall clock is
/// wanted; all timing inside the server uses tokio's clock.
#[allow(clippy::disallowed_methods)] // wire timestamps are wall-clock by definition
pub fn wall_clock_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_captured_form() {
        let json = br#"{"counter":1,"stateVersion":0,"timestamp":1700000000123}"#;
        let dv = DataVersion::from_json(json).unwrap();
        assert_eq!(dv.counter, Some(1));
        assert_eq!(dv.to_json(), json.to_vec());
        assert!(dv.same_as(&dv));
    }

    #[test]
    fn missing_properties_get_java_defaults() {
        let dv = DataVersion::from_json(br#"{"counter":"4","timestamp":9}"#).unwrap();
        assert_eq!(
            (dv.state_version, dv.counter, dv.timestamp),
            (0, Some(4), 9)
        );
        let no_ts = DataVersion::from_json(br#"{"counter":4}"#).unwrap();
        assert!(no_ts.timestamp_defaulted);
        assert!(!no_ts.same_as(&no_ts));
        let null_counter = DataVersion::from_json(br#"{"counter":null,"timestamp":1}"#).unwrap();
        assert_eq!(null_counter.counter, None);
        assert_eq!(
            null_counter.to_json(),
            br#"{"stateVersion":0,"timestamp":1}"#.to_vec()
        );
        assert!(DataVersion::from_json(b"[1]").is_err());
    }
}
