//! A validating, allocation-free JSON scanner for large registration bodies.
//!
//! A broker re-sends its whole topic table every 30 s, usually unchanged. Instead of
//! deserializing every `TopicConfig`, the registration decoder walks the body with this
//! scanner, which checks the syntax and reports the byte span of each value; only spans that
//! differ from what the name server already applied are deserialized (see `register.rs`).
//!
//! The scanner is iterative (hostile nesting cannot overflow the stack) and accepts fastjson's
//! unquoted numeric object keys.

use std::borrow::Cow;
use std::ops::Range;

/// A syntax error with its byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSON syntax error at byte {pos}: {what}")]
pub struct ScanError {
    /// Offset of the offending byte.
    pub(crate) pos: usize,
    /// What was expected or found.
    pub(crate) what: &'static str,
}

type Result<T> = std::result::Result<T, ScanError>;

/// Cursor over a JSON document.
pub(crate) struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Iteration state of one object being walked with [`Scanner::next_key`].
pub(crate) struct ObjectIter {
    first: bool,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Scanner { buf, pos: 0 }
    }

    fn err<T>(&self, what: &'static str) -> Result<T> {
        Err(ScanError {
            pos: self.pos,
            what,
        })
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.buf.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.buf.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Moves the cursor to byte `pos`.
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.buf.len());
    }

    /// Skips an object or array *without* checking its syntax, only matching brackets outside
    /// strings, and returns its span. For large values whose content is checked later (or
    /// recognised as byte-identical to content checked before): about one byte per cycle.
    pub(crate) fn object_span(&mut self) -> Result<Range<usize>> {
        self.ws();
        let start = self.pos;
        match self.buf.get(start) {
            Some(b'{' | b'[') => {}
            _ => return self.err("expected an object"),
        }
        match skip_brackets(self.buf, start) {
            Some(end) => {
                self.pos = end;
                Ok(start..end)
            }
            None => self.err("unterminated object"),
        }
    }

    /// If the next `len` bytes are an object whose digest is `digest`, skips them and returns
    /// their span. Equal digests mean byte-identical text, so an object validated before is
    /// recognised by hashing instead of scanning.
    pub(crate) fn known_span(&mut self, len: usize, digest: u64) -> Option<Range<usize>> {
        self.ws();
        let span = self.pos..self.pos.checked_add(len)?;
        let text = self.buf.get(span.clone())?;
        let framed = text.first() == Some(&b'{') && text.last() == Some(&b'}');
        if framed && xxhash_rust::xxh3::xxh3_64(text) == digest {
            self.pos = span.end;
            Some(span)
        } else {
            None
        }
    }

    /// Whether the next value is the literal `null` (which is then consumed).
    pub(crate) fn take_null(&mut self) -> bool {
        if self.peek().is_some() && self.buf[self.pos..].starts_with(b"null") {
            self.pos += 4;
            true
        } else {
            false
        }
    }

    /// Consumes `{` and starts walking an object.
    pub(crate) fn begin_object(&mut self) -> Result<ObjectIter> {
        self.expect(b'{', "expected '{'")?;
        Ok(ObjectIter { first: true })
    }

    /// The next key of the object (consuming the `:` after it), or `None` at its `}`.
    pub(crate) fn next_key(&mut self, it: &mut ObjectIter) -> Result<Option<Cow<'a, str>>> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !it.first => self.pos += 1,
            _ if it.first => {}
            _ => return self.err("expected ',' or '}'"),
        }
        it.first = false;
        let key = match self.peek() {
            Some(b'"') => self.string()?,
            Some(b'-' | b'0'..=b'9') => {
                let span = self.number()?;
                Cow::Borrowed(std::str::from_utf8(&self.buf[span]).unwrap_or_default())
            }
            _ => return self.err("expected an object key"),
        };
        self.expect(b':', "expected ':'")?;
        Ok(Some(key))
    }

    /// Skips one value and returns its byte span (without surrounding whitespace).
    pub(crate) fn value_span(&mut self) -> Result<Range<usize>> {
        self.ws();
        let start = self.pos;
        self.skip_value()?;
        Ok(start..self.pos)
    }

    /// Requires that only whitespace remains.
    pub(crate) fn end(&mut self) -> Result<()> {
        if self.peek().is_some() {
            self.err("trailing characters")
        } else {
            Ok(())
        }
    }

    /// Reads a string value, unescaping it.
    pub(crate) fn string(&mut self) -> Result<Cow<'a, str>> {
        self.expect(b'"', "expected a string")?;
        let start = self.pos;
        let rest = &self.buf[start..];
        let Some(end) = memchr::memchr2(b'"', b'\\', rest) else {
            return self.err("unterminated string");
        };
        if rest[end] == b'"' {
            self.pos = start + end + 1;
            return match std::str::from_utf8(&rest[..end]) {
                Ok(s) => Ok(Cow::Borrowed(s)),
                Err(_) => self.err("invalid UTF-8 in string"),
            };
        }
        let mut out = Vec::with_capacity(end + 16);
        self.pos = start;
        loop {
            let rest = &self.buf[self.pos..];
            let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
                return self.err("unterminated string");
            };
            out.extend_from_slice(&rest[..i]);
            self.pos += i + 1;
            if rest[i] == b'"' {
                break;
            }
            self.escape(&mut out)?;
        }
        match String::from_utf8(out) {
            Ok(s) => Ok(Cow::Owned(s)),
            Err(_) => self.err("invalid UTF-8 in string"),
        }
    }

    fn hex4(&mut self) -> Result<u16> {
        let Some(digits) = self.buf.get(self.pos..self.pos + 4) else {
            return self.err("truncated \\u escape");
        };
        let text = std::str::from_utf8(digits).unwrap_or("x");
        let Ok(unit) = u16::from_str_radix(text, 16) else {
            return self.err("bad \\u escape");
        };
        self.pos += 4;
        Ok(unit)
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let Some(&c) = self.buf.get(self.pos) else {
            return self.err("truncated escape");
        };
        self.pos += 1;
        let simple = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = self.hex4()?;
                let ch = if (0xD800..0xDC00).contains(&unit)
                    && self.buf.get(self.pos..self.pos + 2) == Some(b"\\u")
                {
                    self.pos += 2;
                    let low = self.hex4()?;
                    char::decode_utf16([unit, low]).next().and_then(|r| r.ok())
                } else {
                    char::from_u32(unit as u32)
                };
                let ch = ch.unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            _ => return self.err("bad escape"),
        };
        out.push(simple);
        Ok(())
    }

    fn skip_string(&mut self) -> Result<()> {
        // Caller consumed the opening quote.
        loop {
            let rest = &self.buf[self.pos..];
            let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
                return self.err("unterminated string");
            };
            self.pos += i + 1;
            if rest[i] == b'"' {
                return Ok(());
            }
            if self.pos >= self.buf.len() {
                return self.err("truncated escape");
            }
            self.pos += 1;
        }
    }

    fn number(&mut self) -> Result<Range<usize>> {
        let start = self.pos;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.buf.get(self.pos) {
            self.pos += 1;
        }
        if self.buf[start..self.pos].iter().any(u8::is_ascii_digit) {
            Ok(start..self.pos)
        } else {
            self.err("bad number")
        }
    }

    fn literal(&mut self) -> Result<()> {
        for word in [&b"true"[..], b"false", b"null"] {
            if self.buf[self.pos..].starts_with(word) {
                self.pos += word.len();
                return Ok(());
            }
        }
        self.err("unexpected character")
    }

    /// Skips one value of any kind, validating its syntax.
    pub(crate) fn skip_value(&mut self) -> Result<()> {
        // Each open container: true for an object, false for an array.
        let mut stack: Vec<bool> = Vec::new();
        // Whether the next token must be a value (as opposed to a separator or closer).
        let mut want_value = true;
        loop {
            let Some(c) = self.peek() else {
                return self.err("unexpected end of JSON");
            };
            want_value = if want_value {
                self.value_start(c, &mut stack)?
            } else {
                self.after_value(c, &mut stack)?
            };
            if !want_value && stack.is_empty() {
                return Ok(());
            }
        }
    }

    /// Consumes the start of a value: an opening bracket (with an object's first key) or a
    /// whole scalar. Returns whether a value must follow.
    fn value_start(&mut self, c: u8, stack: &mut Vec<bool>) -> Result<bool> {
        match c {
            b'{' => {
                self.pos += 1;
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(false);
                }
                stack.push(true);
                self.object_key()?;
                Ok(true)
            }
            b'[' => {
                self.pos += 1;
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(false);
                }
                stack.push(false);
                Ok(true)
            }
            b'"' => {
                self.pos += 1;
                self.skip_string()?;
                Ok(false)
            }
            b'-' | b'0'..=b'9' => {
                self.number()?;
                Ok(false)
            }
            _ => {
                self.literal()?;
                Ok(false)
            }
        }
    }

    /// Consumes what follows a value inside a container: a comma (with an object's next key)
    /// or the container's closing bracket. Returns whether a value must follow.
    fn after_value(&mut self, c: u8, stack: &mut Vec<bool>) -> Result<bool> {
        match (c, stack.last()) {
            (_, None) => Ok(false),
            (b',', Some(true)) => {
                self.pos += 1;
                self.object_key()?;
                Ok(true)
            }
            (b',', Some(false)) => {
                self.pos += 1;
                Ok(true)
            }
            (b'}', Some(true)) | (b']', Some(false)) => {
                self.pos += 1;
                stack.pop();
                Ok(false)
            }
            _ => self.err("expected ',' or a closing bracket"),
        }
    }

    /// Skips `"key":` (or a bare numeric key) inside an object.
    fn object_key(&mut self) -> Result<()> {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.skip_string()?;
            }
            Some(b'-' | b'0'..=b'9') => {
                self.number()?;
            }
            _ => return self.err("expected an object key"),
        }
        self.expect(b':', "expected ':'")
    }
}

/// Byte classes for [`skip_brackets`].
const PLAIN: u8 = 0;
const QUOTE: u8 = 1;
const OPEN: u8 = 2;
const CLOSE: u8 = 3;
const BACKSLASH: u8 = 4;

const CLASSES: [u8; 256] = {
    let mut t = [PLAIN; 256];
    t[b'"' as usize] = QUOTE;
    t[b'{' as usize] = OPEN;
    t[b'[' as usize] = OPEN;
    t[b'}' as usize] = CLOSE;
    t[b']' as usize] = CLOSE;
    t[b'\\' as usize] = BACKSLASH;
    t
};

/// The end (exclusive) of the bracketed value starting at `start`, or `None` if it is not
/// closed. Brackets inside strings are ignored; nothing else is checked.
fn skip_brackets(buf: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    let n = buf.len();
    while i < n {
        match CLASSES[buf[i] as usize] {
            PLAIN | BACKSLASH => i += 1,
            QUOTE => {
                i += 1;
                loop {
                    match CLASSES[*buf.get(i)? as usize] {
                        QUOTE => break,
                        BACKSLASH => i += 2,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            OPEN => {
                depth += 1;
                i += 1;
            }
            _ => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip_all(json: &str) -> Result<()> {
        let mut s = Scanner::new(json.as_bytes());
        s.skip_value()?;
        s.end()
    }

    #[test]
    fn accepts_valid_json_and_bare_numeric_keys() {
        for ok in [
            "1",
            "-1.5e3",
            "\"a\\\"b\\u00e9\"",
            "[]",
            "{}",
            "[1,[2,{}],{\"a\":[true,false,null]}]",
            "{0:\"a\",1:{\"x\":{}}}",
            " { \"a\" : [ 1 , 2 ] } ",
        ] {
            skip_all(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn rejects_broken_json() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\"}",
            "{\"a\":}",
            "[1 2]",
            "{\"a\":1,}",
            "\"abc",
            "tru",
            "[}",
            "{]",
            "1 2",
            "{\"a\":1}}",
        ] {
            assert!(skip_all(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn object_spans_match_brackets_outside_strings() {
        let json = r#" {"a":"}{\"]","b":[{},[]]} ,"#;
        let mut s = Scanner::new(json.as_bytes());
        let span = s.object_span().unwrap();
        assert_eq!(&json[span], r#"{"a":"}{\"]","b":[{},[]]}"#);
        assert!(Scanner::new(b"{\"a\":1").object_span().is_err());
        assert!(Scanner::new(b"{\"a").object_span().is_err());
        assert!(Scanner::new(b"1").object_span().is_err());
        assert!(Scanner::new(b"\"x\\").object_span().is_err());
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let deep = "[".repeat(200_000) + &"]".repeat(200_000);
        skip_all(&deep).unwrap();
        let unbalanced = "[".repeat(200_000);
        assert!(skip_all(&unbalanced).is_err());
    }

    #[test]
    fn walks_objects_and_reports_value_spans() {
        let json = r#"{"a":{"x":1},"b\n":[2],3:"c"}"#;
        let mut s = Scanner::new(json.as_bytes());
        let mut it = s.begin_object().unwrap();
        let mut seen = Vec::new();
        while let Some(key) = s.next_key(&mut it).unwrap() {
            let span = s.value_span().unwrap();
            seen.push((key.into_owned(), json[span].to_owned()));
        }
        s.end().unwrap();
        assert_eq!(
            seen,
            vec![
                ("a".to_owned(), "{\"x\":1}".to_owned()),
                ("b\n".to_owned(), "[2]".to_owned()),
                ("3".to_owned(), "\"c\"".to_owned())
            ]
        );
    }
}
