//! Address patterns, written as in ACL 1.0's `plain_acl.yml` (`globalWhiteRemoteAddresses`,
//! `whiteRemoteAddress`; Java's `AclUtils` and `RemoteAddressStrategyFactory`), parsed once —
//! when the accounts file or the settings are loaded — and then matched against a peer's IP
//! address without allocating.
//!
//! | pattern | matches |
//! |---|---|
//! | empty | nothing |
//! | `*`, `*.*.*.*`, `*:*:*:*:*:*:*:*` | every address |
//! | `192.168.0.1`, `::1` | that address (IPv6 in any spelling) |
//! | `192.168.0.1,192.168.0.2` | any of the listed addresses |
//! | `192.168.0.{1,2}`, `fe80::{1,2}` | the prefix followed by each listed part |
//! | `192.168.0.*`, `10.10.103.1-100`, `192.168.1-10.*` | per octet: `*` is 0–255, `a-b` a range |
//! | `2001:db8::*`, `2001:db8::1-ff`, `2001:db8::1-ff:*` | per group (hex), in the last or second-last group |
//!
//! One deliberate difference from Java: every octet is checked. Java stops at the first `*` or
//! range, so its `10.10.*.5` admits any `10.10.x.y`; here it admits only `10.10.x.5`. A
//! pattern that does not parse is an error naming it (Java refuses such a file too).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid address pattern {pattern:?}: {reason}")]
pub struct PatternError {
    /// The pattern as written.
    pub(crate) pattern: String,
    /// What is wrong with it.
    pub(crate) reason: &'static str,
}

/// One parsed address pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AddressPattern {
    text: String,
    any: bool,
    /// Each alternative is a full address with an inclusive range per octet or group.
    alternatives: Vec<Alternative>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alternative {
    V4([(u8, u8); 4]),
    V6([(u16, u16); 8]),
}

impl Alternative {
    fn exact(ip: IpAddr) -> Alternative {
        match ip {
            IpAddr::V4(v4) => Alternative::V4(v4.octets().map(|o| (o, o))),
            IpAddr::V6(v6) => Alternative::V6(v6.segments().map(|g| (g, g))),
        }
    }

    fn matches(&self, ip: IpAddr) -> bool {
        fn within<T: PartialOrd + Copy>(ranges: &[(T, T)], values: &[T]) -> bool {
            ranges
                .iter()
                .zip(values)
                .all(|(&(lo, hi), &v)| lo <= v && v <= hi)
        }
        match (self, ip) {
            (Alternative::V4(r), IpAddr::V4(a)) => within(r, &a.octets()),
            (Alternative::V6(r), IpAddr::V6(a)) => within(r, &a.segments()),
            _ => false,
        }
    }
}

impl AddressPattern {
    /// Parses a pattern; surrounding blanks are ignored, and a blank pattern matches nothing.
    pub(crate) fn parse(text: &str) -> Result<AddressPattern, PatternError> {
        let text = text.trim();
        let err = |reason| PatternError {
            pattern: text.to_owned(),
            reason,
        };
        let mut pattern = AddressPattern {
            text: text.to_owned(),
            any: false,
            alternatives: Vec::new(),
        };
        if text.is_empty() {
            return Ok(pattern);
        }
        if matches!(text, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            pattern.any = true;
            return Ok(pattern);
        }
        if text.ends_with('}') {
            let open = text.find('{').ok_or_else(|| err("'}' without '{'"))?;
            let prefix = &text[..open];
            if !(prefix.ends_with('.') || prefix.ends_with(':')) {
                return Err(err("a {…} list must be the whole last part of the address"));
            }
            for item in text[open + 1..text.len() - 1].split(',') {
                let ip = literal(&format!("{prefix}{}", item.trim()))
                    .ok_or_else(|| err("an address in the {…} list is not a valid IP address"))?;
                pattern.alternatives.push(Alternative::exact(ip));
            }
        } else if text.contains(',') {
            for item in text.split(',').filter(|s| !s.is_empty()) {
                let ip = literal(item)
                    .ok_or_else(|| err("an address in the list is not a valid IP address"))?;
                pattern.alternatives.push(Alternative::exact(ip));
            }
        } else if text.contains('*') || text.contains('-') {
            let alt = if text.contains(':') {
                v6_ranges(text).map(Alternative::V6)
            } else {
                v4_ranges(text).map(Alternative::V4)
            };
            pattern.alternatives.push(alt.map_err(err)?);
        } else {
            let ip = literal(text).ok_or_else(|| err("not a valid IP address"))?;
            pattern.alternatives.push(Alternative::exact(ip));
        }
        Ok(pattern)
    }

    /// Whether it matches every address (`*`, `*.*.*.*`, `*:*:*:*:*:*:*:*`).
    pub(crate) fn is_any(&self) -> bool {
        self.any
    }

    /// The pattern as written.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether `ip` matches. IPv4 addresses seen through an IPv6 socket (`::ffff:a.b.c.d`) are
    /// matched as IPv4.
    pub(crate) fn matches(&self, ip: IpAddr) -> bool {
        if self.any {
            return true;
        }
        let ip = ip.to_canonical();
        self.alternatives.iter().any(|alt| alt.matches(ip))
    }
}

fn literal(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    text.parse::<Ipv4Addr>()
        .map(IpAddr::V4)
        .or_else(|_| text.parse::<Ipv6Addr>().map(IpAddr::V6))
        .ok()
}

/// `a.b.c.d` where each part is a number, `*` or `a-b` (decimal, 0–255).
fn v4_ranges(text: &str) -> Result<[(u8, u8); 4], &'static str> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return Err("an IPv4 pattern has four parts separated by '.'");
    }
    let mut out = [(0, 0); 4];
    for (slot, part) in out.iter_mut().zip(parts) {
        *slot = range(part.trim(), 10, u8::MAX as u32)
            .map(|(lo, hi)| (lo as u8, hi as u8))
            .ok_or("each part is a number 0-255, '*' or a range a-b with a <= b")?;
    }
    Ok(out)
}

/// `prefix:*`, `prefix:a-b` or `prefix:a-b:*`, where the prefix may use `::` (Java's forms).
fn v6_ranges(text: &str) -> Result<[(u16, u16); 8], &'static str> {
    const SHAPE: &str =
        "an IPv6 pattern is prefix:*, prefix:a-b or prefix:a-b:* (hex, '*' only at the end)";
    // Cutting the last group off `a::b` leaves `a:`, and off `a::` leaves `a:` too; put the
    // compressed `::` back where the cut split it.
    let cut = |before: &str| match before.strip_suffix(':') {
        Some(_) => format!("{before}:"),
        None => before.to_owned(),
    };
    let mut tail: Vec<(u16, u16)> = Vec::new();
    let mut rest = text.to_owned();
    if let Some(before) = text.strip_suffix(":*") {
        tail.push((0, u16::MAX));
        rest = cut(before);
    }
    if let Some((before, last)) = rest.clone().rsplit_once(':')
        && last.contains('-')
    {
        let (lo, hi) = range(last, 16, u16::MAX as u32).ok_or(SHAPE)?;
        tail.insert(0, (lo as u16, hi as u16));
        rest = cut(before);
    }
    if tail.is_empty() || rest.contains('*') || rest.contains('-') {
        return Err(SHAPE);
    }
    let head = expand_v6(&rest, 8 - tail.len()).ok_or("the IPv6 prefix is not valid hex groups")?;
    let mut out = [(0, 0); 8];
    for (slot, group) in out.iter_mut().zip(head.iter().map(|&g| (g, g)).chain(tail)) {
        *slot = group;
    }
    Ok(out)
}

/// `n`, `*` or `a-b` in `radix`, each at most `max`.
fn range(part: &str, radix: u32, max: u32) -> Option<(u32, u32)> {
    let num = |s: &str| {
        let s = s.trim();
        let ok = !s.is_empty() && s.len() <= 4 && s.chars().all(|c| c.is_digit(radix));
        ok.then(|| u32::from_str_radix(s, radix).ok())
            .flatten()
            .filter(|&n| n <= max)
    };
    if part == "*" {
        return Some((0, max));
    }
    match part.split_once('-') {
        Some((lo, hi)) => Some((num(lo)?, num(hi)?)).filter(|(lo, hi)| lo <= hi),
        None => num(part).map(|n| (n, n)),
    }
}

/// `groups` hex groups from `text`, where one `::` stands for the missing zero groups.
fn expand_v6(text: &str, groups: usize) -> Option<Vec<u16>> {
    let parse = |s: &str| -> Option<Vec<u16>> {
        if s.is_empty() {
            return Some(Vec::new());
        }
        s.split(':')
            .map(|g| range(g, 16, u16::MAX as u32).filter(|(lo, hi)| lo == hi))
            .map(|r| r.map(|(g, _)| g as u16))
            .collect()
    };
    match text.split_once("::") {
        Some((left, right)) => {
            let (left, right) = (parse(left)?, parse(right)?);
            let zeros = groups.checked_sub(left.len() + right.len())?;
            Some([left, vec![0; zeros], right].concat())
        }
        None => parse(text).filter(|g| g.len() == groups),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn check(pattern: &str, yes: &[&str], no: &[&str]) {
        let p = AddressPattern::parse(pattern).unwrap();
        for a in yes {
            assert!(p.matches(ip(a)), "{pattern} should match {a}");
        }
        for a in no {
            assert!(!p.matches(ip(a)), "{pattern} should not match {a}");
        }
    }

    #[test]
    fn blank_matches_nothing_and_stars_match_everything() {
        check("", &[], &["127.0.0.1", "::1"]);
        check("  ", &[], &["127.0.0.1"]);
        for any in ["*", "*.*.*.*", "*:*:*:*:*:*:*:*"] {
            check(any, &["127.0.0.1", "10.1.2.3", "::1"], &[]);
        }
    }

    #[test]
    fn literals_lists_and_braces() {
        check("192.168.0.1", &["192.168.0.1"], &["192.168.0.2"]);
        check(
            "192.168.0.1,192.168.0.2",
            &["192.168.0.1", "192.168.0.2"],
            &["192.168.0.3"],
        );
        check(
            "192.168.0.{1,2}",
            &["192.168.0.1", "192.168.0.2"],
            &["192.168.0.12", "192.168.0.3"],
        );
        // IPv6 compared as addresses, whatever the spelling (Java expands both sides).
        check(
            "1050:0000:0000:0000:0005:0600:300C:326B",
            &["1050::5:600:300c:326b"],
            &["1050::5:600:300c:326c"],
        );
        check("fe80::{1,a}", &["fe80::1", "fe80::a"], &["fe80::2"]);
    }

    #[test]
    fn ipv4_ranges_per_octet() {
        check(
            "192.168.0.*",
            &["192.168.0.0", "192.168.0.255"],
            &["192.168.1.1"],
        );
        check(
            "10.10.103.1-100",
            &["10.10.103.1", "10.10.103.100"],
            &["10.10.103.0", "10.10.103.101"],
        );
        check(
            "192.168.1-10.*",
            &["192.168.1.7", "192.168.10.255"],
            &["192.168.11.1", "192.168.0.1"],
        );
        check("192.168.*.*", &["192.168.200.3"], &["192.169.0.1"]);
        // Every octet counts (Java would admit 10.10.7.6 here).
        check("10.10.*.5", &["10.10.7.5"], &["10.10.7.6"]);
    }

    #[test]
    fn ipv6_ranges_in_the_last_groups() {
        check(
            "2001:db8::*",
            &["2001:db8::1", "2001:db8::ffff"],
            &["2001:db8::1:0", "2001:db9::1"],
        );
        check("2001:db8::1-ff", &["2001:db8::ff"], &["2001:db8::100"]);
        check(
            "2001:db8::1-ff:*",
            &["2001:db8::ff:1234"],
            &["2001:db8::100:0", "2001:db8::1:2:3"],
        );
    }

    #[test]
    fn mapped_ipv4_peers_match_ipv4_patterns() {
        check("127.0.0.1", &["::ffff:127.0.0.1"], &["::1"]);
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in [
            "192.168.0",
            "192.168.0.256",
            "192.168.0.300-400",
            "192.168.0.9-2",
            "192.168.0.-2",
            "192.168.0.1,foo",
            "192.168.{0,1}",
            "192.168.0.{1,x}",
            "host.example",
            "2001:db8::*:1",
            "2001:db8:*::1",
            "2001:db8::12345-2",
            "1.2.3.4.5",
        ] {
            let e = AddressPattern::parse(bad).unwrap_err();
            assert_eq!(e.pattern, bad);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
