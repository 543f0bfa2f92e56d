//! A small JSON writer that reproduces the two output styles of the Java name server's
//! fastjson: the default ("legacy") writer and the "standard" one used for route data sent to
//! clients of version 4.9.4 and later (`ClientRequestProcessor#getRouteInfoByTopic`).
//!
//! Everything the server emits is written through this module, never through `serde_json`, so
//! property order, null omission, numeric map keys and escaping are under our control and no
//! whitespace is ever produced.

/// Which fastjson writer to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonStyle {
    /// fastjson defaults: numeric map keys unquoted, `/` and non-ASCII written literally.
    Legacy,
    /// `BrowserCompatible` + `MapSortField`: numeric keys quoted, `/` and everything outside
    /// printable ASCII escaped, longs beyond 2^53 written as strings.
    Standard,
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";
const MAX_SAFE_LONG: i64 = 9_007_199_254_740_991;

/// Appends JSON tokens to a byte buffer in one [`JsonStyle`].
pub struct JsonWriter<'a> {
    out: &'a mut Vec<u8>,
    style: JsonStyle,
}

impl<'a> JsonWriter<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>, style: JsonStyle) -> Self {
        JsonWriter { out, style }
    }

    /// The style this writer uses.
    pub(crate) fn style(&self) -> JsonStyle {
        self.style
    }

    /// Writes one punctuation byte (`{`, `}`, `[`, `]`, `,`).
    pub(crate) fn punct(&mut self, b: u8) {
        self.out.push(b);
    }

    /// Writes `"name":`; `name` must not need escaping (property names are ours).
    pub(crate) fn key(&mut self, name: &str) {
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// Writes a string map key followed by `:`.
    pub(crate) fn str_key(&mut self, key: &str) {
        self.string(key);
        self.out.push(b':');
    }

    /// Writes a numeric map key: `0:` in legacy style, `"0":` in standard style.
    pub(crate) fn num_key(&mut self, key: i64) {
        let mut buf = itoa::Buffer::new();
        let text = buf.format(key);
        match self.style {
            JsonStyle::Legacy => self.out.extend_from_slice(text.as_bytes()),
            JsonStyle::Standard => {
                self.out.push(b'"');
                self.out.extend_from_slice(text.as_bytes());
                self.out.push(b'"');
            }
        }
        self.out.push(b':');
    }

    /// Writes a JSON number (a quoted one for unsafe longs in standard style).
    pub(crate) fn int(&mut self, value: i64) {
        let mut buf = itoa::Buffer::new();
        let text = buf.format(value);
        if self.style == JsonStyle::Standard && !(-MAX_SAFE_LONG..=MAX_SAFE_LONG).contains(&value) {
            self.out.push(b'"');
            self.out.extend_from_slice(text.as_bytes());
            self.out.push(b'"');
        } else {
            self.out.extend_from_slice(text.as_bytes());
        }
    }

    /// Writes `true` or `false`.
    pub(crate) fn bool(&mut self, value: bool) {
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// Writes a quoted, escaped string.
    pub(crate) fn string(&mut self, s: &str) {
        self.out.push(b'"');
        match self.style {
            JsonStyle::Legacy => escape_legacy(self.out, s),
            JsonStyle::Standard => escape_standard(self.out, s),
        }
        self.out.push(b'"');
    }

    /// Writes a `["a","b"]` array of strings.
    pub(crate) fn string_array<'s>(&mut self, items: impl IntoIterator<Item = &'s str>) {
        self.out.push(b'[');
        self.separated(items, |w, item| w.string(item));
        self.out.push(b']');
    }

    /// Writes `"k":"v"` entries of a string map, a `,` between two.
    pub(crate) fn string_entries<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        entries: impl IntoIterator<Item = (K, V)>,
    ) {
        self.separated(entries, |w, (k, v)| {
            w.str_key(k.as_ref());
            w.string(v.as_ref());
        });
    }

    /// Writes `prefix` (`,"name":`) and the string `value` when there is one: an optional
    /// property, omitted when null as fastjson omits it.
    pub(crate) fn opt_string(&mut self, prefix: &[u8], value: Option<&str>) {
        if let Some(value) = value {
            self.raw(prefix);
            self.string(value);
        }
    }

    /// Writes each of `items` with `write`, a `,` between two: the inside of every array and
    /// object the bodies write.
    #[inline]
    pub(crate) fn separated<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut write: impl FnMut(&mut Self, T),
    ) {
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write(self, item);
        }
    }

    /// Writes bytes that are already valid JSON in this style.
    pub(crate) fn raw(&mut self, json: &[u8]) {
        self.out.extend_from_slice(json);
    }
}

fn push_unicode_escape(out: &mut Vec<u8>, unit: u16) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
}

fn short_escape(c: char) -> Option<u8> {
    match c {
        '"' => Some(b'"'),
        '\\' => Some(b'\\'),
        '\u{8}' => Some(b'b'),
        '\t' => Some(b't'),
        '\n' => Some(b'n'),
        '\u{c}' => Some(b'f'),
        '\r' => Some(b'r'),
        _ => None,
    }
}

/// The loop both escapings share: a string of only `plain` bytes is copied as it is (the
/// common case); otherwise each char takes its short escape, or `other` writes it.
#[inline]
fn escape_with(
    out: &mut Vec<u8>,
    s: &str,
    plain: impl Fn(u8) -> bool,
    other: impl Fn(&mut Vec<u8>, char),
) {
    let bytes = s.as_bytes();
    if bytes.iter().all(|&b| plain(b)) {
        out.extend_from_slice(bytes);
        return;
    }
    for c in s.chars() {
        match short_escape(c) {
            Some(e) => out.extend_from_slice(&[b'\\', e]),
            None => other(out, c),
        }
    }
}

/// fastjson's default escaping: `"` `\` and the usual short escapes, `\u00XX` for other
/// control characters and for U+007F..=U+009F, `\u2028` and `\u2029` for the line and
/// paragraph separators; everything else literal.
fn escape_legacy(out: &mut Vec<u8>, s: &str) {
    escape_with(
        out,
        s,
        |b| b >= 0x20 && b != b'"' && b != b'\\' && b != 0x7F && b != 0xC2 && b != 0xE2,
        |out, c| {
            if (c as u32) < 0x20
                || (0x7F..0xA0).contains(&(c as u32))
                || c == '\u{2028}'
                || c == '\u{2029}'
            {
                push_unicode_escape(out, c as u16);
            } else {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        },
    );
}

/// fastjson's `BrowserCompatible` escaping: ASCII-only output, `/` escaped too.
fn escape_standard(out: &mut Vec<u8>, s: &str) {
    escape_with(
        out,
        s,
        |b| (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\' && b != b'/',
        |out, c| {
            if c == '/' {
                out.extend_from_slice(b"\\/");
            } else if (c as u32) < 0x20 || (c as u32) >= 0x7F {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    push_unicode_escape(out, *unit);
                }
            } else {
                out.push(c as u8);
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(style: JsonStyle, f: impl FnOnce(&mut JsonWriter<'_>)) -> String {
        let mut out = Vec::new();
        f(&mut JsonWriter::new(&mut out, style));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn legacy_escapes_quotes_controls_and_c1_but_not_slash_or_unicode() {
        let s = write(JsonStyle::Legacy, |w| {
            w.string("a\"b\\c\nd/é\u{1}\u{7f}\u{a0}")
        });
        assert_eq!(s, "\"a\\\"b\\\\c\\nd/é\\u0001\\u007F\u{a0}\"");
    }

    #[test]
    fn legacy_escapes_the_line_and_paragraph_separators_only() {
        let s = write(JsonStyle::Legacy, |w| {
            w.string("a\u{2028}b\u{2029}c\u{2027}\u{202a}")
        });
        assert_eq!(s, "\"a\\u2028b\\u2029c\u{2027}\u{202a}\"");
    }

    #[test]
    fn standard_output_is_ascii_only() {
        let s = write(JsonStyle::Standard, |w| w.string("a/b é 😀\t"));
        assert_eq!(s, "\"a\\/b \\u00E9 \\uD83D\\uDE00\\t\"");
    }

    #[test]
    fn numeric_keys_and_big_longs_follow_the_style() {
        let legacy = write(JsonStyle::Legacy, |w| {
            w.num_key(0);
            w.int(9_007_199_254_740_993);
        });
        assert_eq!(legacy, "0:9007199254740993");
        let standard = write(JsonStyle::Standard, |w| {
            w.num_key(0);
            w.int(9_007_199_254_740_993);
            w.punct(b',');
            w.int(-9_007_199_254_740_991);
        });
        assert_eq!(standard, "\"0\":\"9007199254740993\",-9007199254740991");
    }

    #[test]
    fn string_arrays_are_compact() {
        let s = write(JsonStyle::Legacy, |w| w.string_array(["a", "b"]));
        assert_eq!(s, "[\"a\",\"b\"]");
    }
}
