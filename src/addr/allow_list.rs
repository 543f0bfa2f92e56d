//! [`AllowList`]: `;`-separated address patterns, as `proxyProtocolAllowedAddresses` holds them.

use std::net::IpAddr;
use std::str::FromStr;

use super::{AddressPattern, PatternError};

/// Peers allowed something (for `proxyProtocolAllowedAddresses`: to send a PROXY header):
/// address patterns as in the auth file (`10.0.1.*`, `10.0.0.1-9`, `fe80::*`), separated by `;`.
/// Empty: nobody.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<AddressPattern>);

impl AllowList {
    /// Parses a list; blanks around patterns and empty entries are ignored.
    pub(crate) fn parse(text: &str) -> Result<AllowList, PatternError> {
        let patterns = text
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(AddressPattern::parse)
            .collect::<Result<_, _>>()?;
        Ok(AllowList(patterns))
    }

    /// Whether `ip` matches one of the patterns.
    pub(crate) fn allows(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|p| p.matches(ip))
    }

    /// Whether every peer is allowed (a `*` pattern).
    pub(crate) fn admits_everyone(&self) -> bool {
        self.0.iter().any(AddressPattern::is_any)
    }
}

impl FromStr for AllowList {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<AllowList, PatternError> {
        AllowList::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_allows_nobody_and_star_everyone() {
        let ip = "10.0.0.1".parse().unwrap();
        assert!(!AllowList::parse(" ; ").unwrap().allows(ip));
        let all = AllowList::parse("10.9.9.9; *").unwrap();
        assert!(all.allows(ip) && all.admits_everyone());
        let some = AllowList::parse("10.0.0.*;192.168.0.1").unwrap();
        assert!(some.allows(ip) && !some.admits_everyone());
        assert!(!some.allows("10.0.1.1".parse().unwrap()));
        let e = AllowList::parse("10.0.0.1;10.0.0").unwrap_err();
        assert_eq!(e.pattern, "10.0.0");
    }
}
