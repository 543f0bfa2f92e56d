//! [`HostPortList`]: `host:port;host:port`, as `namesrvPeers` and `httpNsaddrList` hold it.

use std::str::FromStr;

/// Why a `host:port` list was refused: the first entry that is not a host and a port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected host:port entries separated by ';', found {entry:?}")]
pub struct HostPortError {
    /// The entry, trimmed.
    pub(crate) entry: String,
}

/// Name server addresses, in the order written (a host may be a name, so these stay text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPortList(Vec<String>);

impl HostPortList {
    /// Parses a list: blanks around entries and empty entries are ignored; every other entry
    /// must be a host without blanks, `:`, and a port from 1 to 65535.
    pub(crate) fn parse(text: &str) -> Result<HostPortList, HostPortError> {
        let mut entries = Vec::new();
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let valid = entry.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty()
                    && !host.contains(char::is_whitespace)
                    && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if !valid {
                return Err(HostPortError {
                    entry: entry.to_owned(),
                });
            }
            entries.push(entry.to_owned());
        }
        Ok(HostPortList(entries))
    }

    /// The entries, in the order written (repeats included).
    pub fn entries(&self) -> &[String] {
        &self.0
    }

    /// Whether the list has no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromStr for HostPortList {
    type Err = HostPortError;

    fn from_str(text: &str) -> Result<HostPortList, HostPortError> {
        HostPortList::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_trimmed_and_bad_ones_named() {
        let list = HostPortList::parse("10.0.0.1:9876; ns2:9876;").unwrap();
        assert_eq!(list.entries(), ["10.0.0.1:9876", "ns2:9876"]);
        assert!(HostPortList::parse(" ; ").unwrap().is_empty());
        for bad in ["ns1", "ns1:0", ":9876", "ns1:port", "a b:1"] {
            let e = HostPortList::parse(bad).unwrap_err();
            assert_eq!(e.entry, bad);
        }
        assert_eq!(
            HostPortList::parse("ns1:1; x ").unwrap_err().to_string(),
            "expected host:port entries separated by ';', found \"x\""
        );
    }
}
