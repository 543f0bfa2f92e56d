//! Java `java.util.Properties` text: the syntax of `namesrv.conf`, of UPDATE_NAMESRV_CONFIG
//! bodies and of the persisted configuration (as `MixAll#string2Properties` and
//! `MixAll#properties2String` read and write it).
//!
//! Reading follows `Properties.load`: `#`/`!` comment lines, `key=value`, `key:value` or
//! `key value`, a trailing odd backslash continues the line, `\t \n \r \f \uXXXX` escapes,
//! and any other escaped character stands for itself. Later duplicates win.

/// Why a properties text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: malformed \\uxxxx encoding")]
pub struct PropertiesError {
    /// 1-based line where the logical line containing the bad escape starts.
    pub(crate) line: usize,
}

/// Parses properties text into `(key, value)` pairs in file order, later duplicates replacing
/// earlier ones in place.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, PropertiesError> {
    let mut out: Vec<(String, String)> = Vec::new();
    // Key → position in `out`: duplicates are found in constant time, so a body with many
    // keys (UPDATE_NAMESRV_CONFIG comes from the network) costs linear time.
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (line_no, logical) in logical_lines(text) {
        let (key, value) = split_entry(&logical);
        let key = unescape(key).ok_or(PropertiesError { line: line_no })?;
        let value = unescape(value).ok_or(PropertiesError { line: line_no })?;
        match seen.get(&key) {
            Some(&at) => out[at].1 = value,
            None => {
                seen.insert(key.clone(), out.len());
                out.push((key, value));
            }
        }
    }
    Ok(out)
}

/// Decodes a properties file's bytes: UTF-8 when valid, otherwise ISO-8859-1 as Java reads
/// every properties file.
pub fn decode_file_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// Physical lines, split at `\n`, `\r` or `\r\n`, numbered from 1.
fn physical_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text;
    let mut line_no = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        line_no += 1;
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let terminator = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = rest.get(end + terminator..).unwrap_or("");
        Some((line_no, line))
    })
}

/// Joins continuation lines and drops comments and blank lines. Escapes are kept (except
/// the line-continuation backslash) for [`unescape`].
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (line_no, raw) in physical_lines(text) {
        let trimmed = raw.trim_start_matches(is_ws);
        if current.is_none()
            && (trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!'))
        {
            continue;
        }
        let backslashes = trimmed.chars().rev().take_while(|&c| c == '\\').count();
        let continues = backslashes % 2 == 1;
        let body = if continues {
            &trimmed[..trimmed.len() - 1]
        } else {
            trimmed
        };
        current
            .get_or_insert_with(|| (line_no, String::new()))
            .1
            .push_str(body);
        if !continues {
            out.extend(current.take());
        }
    }
    out.extend(current.take());
    out
}

/// Splits a logical line at the first unescaped `=`, `:` or whitespace.
fn split_entry(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => return (&line[..i], line[i + 1..].trim_start_matches(is_ws)),
            c if is_ws(c) => {
                let rest = line[i..].trim_start_matches(is_ws);
                let rest = rest
                    .strip_prefix('=')
                    .or_else(|| rest.strip_prefix(':'))
                    .unwrap_or(rest);
                return (&line[..i], rest.trim_start_matches(is_ws));
            }
            _ => {}
        }
    }
    (line, "")
}

/// Resolves escapes. Works in UTF-16 units, as Java strings do, so that a surrogate pair
/// written as two `\uXXXX` escapes becomes one character.
fn unescape(s: &str) -> Option<String> {
    if !s.contains('\\') {
        return Some(s.to_owned());
    }
    let mut units: Vec<u16> = Vec::with_capacity(s.len());
    let mut chars = s.chars();
    let push = |units: &mut Vec<u16>, c: char| {
        let mut buf = [0u16; 2];
        units.extend_from_slice(c.encode_utf16(&mut buf));
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            push(&mut units, c);
            continue;
        }
        match chars.next() {
            Some('t') => push(&mut units, '\t'),
            Some('n') => push(&mut units, '\n'),
            Some('r') => push(&mut units, '\r'),
            Some('f') => push(&mut units, '\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                units.push(u16::from_str_radix(&hex, 16).ok()?);
            }
            Some(other) => push(&mut units, other),
            None => {}
        }
    }
    Some(String::from_utf16_lossy(&units))
}

/// Renders `key=value\n` lines exactly as Java's `MixAll.properties2String` does: no escaping
/// at all (the body of GET_NAMESRV_CONFIG).
pub fn render_raw<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (k, v) in entries {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    }
    out
}

/// Renders `key=value\n` lines escaped so that [`parse`] (and Java) reads back exactly the
/// same pairs: for files the server writes.
pub fn render_escaped<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (k, v) in entries {
        escape_into(&mut out, k, true);
        out.push('=');
        escape_into(&mut out, v, false);
        out.push('\n');
    }
    out
}

fn escape_into(out: &mut String, s: &str, is_key: bool) {
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{c}' => out.push_str("\\f"),
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            '=' | ':' | '#' | '!' if is_key => {
                out.push('\\');
                out.push(c);
            }
            '#' | '!' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn separators_comments_and_whitespace() {
        let text = "# comment\n! also\n\n  a=1\nb : 2\nc 3\nd\te=f\ng=\nh\n  i = x y \n";
        assert_eq!(
            pairs(text),
            vec![
                p("a", "1"),
                p("b", "2"),
                p("c", "3"),
                p("d", "e=f"),
                p("g", ""),
                p("h", ""),
                p("i", "x y ")
            ]
        );
    }

    #[test]
    fn continuations_and_escapes() {
        let text = "a=one \\\n    two\\\r\n three\nb=\\u0041\\tz\\\\\nc\\ d=e\\=f\nk\\:x=1\n";
        assert_eq!(
            pairs(text),
            vec![
                p("a", "one twothree"),
                p("b", "A\tz\\"),
                p("c d", "e=f"),
                p("k:x", "1")
            ]
        );
        assert_eq!(
            pairs("a=even\\\\\nb=2"),
            vec![p("a", "even\\"), p("b", "2")]
        );
        assert_eq!(pairs("# c \\\nb=2"), vec![p("b", "2")]);
    }

    #[test]
    fn duplicates_and_bad_unicode() {
        assert_eq!(pairs("a=1\nb=2\na=3"), vec![p("a", "3"), p("b", "2")]);
        assert_eq!(parse("x=1\ny=\\u12G4"), Err(PropertiesError { line: 2 }));
        assert_eq!(parse("\r\n\r\nz=\\u1"), Err(PropertiesError { line: 3 }));
    }

    #[test]
    fn many_keys_and_strict_unicode_escapes() {
        // 200 000 distinct keys: with a quadratic duplicate check this would not finish.
        let text: String = (0..200_000).map(|i| format!("k{i}=v\n")).collect();
        assert_eq!(parse(&text).unwrap().len(), 200_000);
        assert_eq!(parse("a=\\u+041"), Err(PropertiesError { line: 1 }));
    }

    #[test]
    fn latin1_fallback() {
        assert_eq!(decode_file_bytes(b"a=\xe9"), "a=é");
        assert_eq!(decode_file_bytes("a=é".as_bytes()), "a=é");
    }

    #[test]
    fn escaped_rendering_round_trips() {
        let tricky = [
            p("k y", " lead\\back\tslash: #x é 😀"),
            p("#key", "!v"),
            p("plain", "/a/b"),
        ];
        let text = render_escaped(tricky.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        assert_eq!(pairs(&text), tricky.to_vec());
        assert_eq!(render_raw([("a", "b\\c")]), "a=b\\c\n");
    }
}
