//! serde helpers that read values the way fastjson does: numbers may arrive as strings,
//! booleans as strings or numbers, and `null` means "keep the default".

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

struct IntVisitor;

impl<'de> Visitor<'de> for IntVisitor {
    type Value = Option<i64>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v as i64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v as i64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let t = v.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<i64>()
            .map(Some)
            .map_err(|_| E::custom(format!("not an integer: {v:?}")))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v as i64))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An optional long: number, numeric string, or null.
pub(crate) fn opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    d.deserialize_any(IntVisitor)
}

/// A long that keeps 0 when null.
pub(crate) fn i64_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(opt_i64(d)?.unwrap_or(0))
}

/// An optional int (longs wrap, as Java's `intValue()`).
pub(crate) fn opt_i32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    Ok(opt_i64(d)?.map(|v| v as i32))
}

/// An int that keeps 0 when null.
pub(crate) fn i32_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    Ok(opt_i32(d)?.unwrap_or(0))
}

struct BoolVisitor;

impl<'de> Visitor<'de> for BoolVisitor {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a boolean")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        Ok(v != 0)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        Ok(v != 0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// A boolean: `true`/`false`, 0/1, `"true"`, or null (false).
pub(crate) fn bool_or_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    d.deserialize_any(BoolVisitor)
}

/// Which JSON values a lenient string accepts besides strings, integers, booleans and null.
#[derive(Clone, Copy)]
pub(crate) enum TextFrom {
    /// Body fields: a float, object or array is a type error, as serde reports it.
    Scalars,
    /// Header properties and ext fields: a float, object or array becomes its JSON text.
    AnyJson,
}

/// An optional string read the way fastjson converts values to text; the body readers and the
/// JSON header share it, differing only in [`TextFrom`].
#[derive(Clone, Copy)]
pub(crate) struct LenientText(pub(crate) TextFrom);

/// Makes each named visitor a seed too, reading any JSON value with itself: a header reads
/// its properties through seeds (`next_value_seed`), and every such seed is its own visitor.
macro_rules! seed_is_visitor {
    ($($visitor:ty),+ $(,)?) => {$(
        impl<'de> serde::de::DeserializeSeed<'de> for $visitor {
            type Value = <$visitor as serde::de::Visitor<'de>>::Value;
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        }
    )+};
}
pub(crate) use seed_is_visitor;

seed_is_visitor!(LenientText);

impl LenientText {
    fn any_json(self) -> bool {
        matches!(self.0, TextFrom::AnyJson)
    }

    /// An object or array: its JSON text, or the type error serde's default visitor gives.
    fn json_text<'de, D: Deserializer<'de>>(
        self,
        d: D,
        what: de::Unexpected<'_>,
    ) -> Result<Option<String>, D::Error> {
        if !self.any_json() {
            return Err(de::Error::invalid_type(what, &self));
        }
        let value: serde_json::Value = serde::Deserialize::deserialize(d)?;
        Ok(Some(value.to_string()))
    }
}

impl<'de> Visitor<'de> for LenientText {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        if !self.any_json() {
            return Err(E::invalid_type(de::Unexpected::Float(v), &self));
        }
        Ok(Some(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.json_text(
            de::value::MapAccessDeserializer::new(map),
            de::Unexpected::Map,
        )
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.json_text(
            de::value::SeqAccessDeserializer::new(seq),
            de::Unexpected::Seq,
        )
    }
}

/// An optional string; scalars are converted to their text.
pub(crate) fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(LenientText(TextFrom::Scalars))
}

/// Fails unless `json` starts (after whitespace) with `{`: serde would otherwise read a JSON
/// array into a struct by position, which fastjson never does.
pub(crate) fn expect_object(json: &[u8]) -> Result<(), serde_json::Error> {
    match json.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Ok(()),
        _ => Err(<serde_json::Error as serde::de::Error>::custom(
            "expected a JSON object",
        )),
    }
}

/// Rewrites fastjson's unquoted numeric object keys (`{0:"a",1:"b"}`) into quoted ones so a
/// strict parser accepts them. Text inside strings is left alone. Returns the input unchanged
/// when there is nothing to rewrite.
pub(crate) fn quote_numeric_keys(json: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    let mut in_string = false;
    let mut copied = 0;
    while i < json.len() {
        let c = json[i];
        if in_string {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b',' => {
                if let Some(key) = bare_numeric_key(json, i) {
                    let buf = out.get_or_insert_with(|| Vec::with_capacity(json.len() + 16));
                    buf.extend_from_slice(&json[copied..key.start]);
                    buf.push(b'"');
                    buf.extend_from_slice(&json[key.clone()]);
                    buf.push(b'"');
                    copied = key.end;
                    i = key.end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    match out {
        None => std::borrow::Cow::Borrowed(json),
        Some(mut buf) => {
            buf.extend_from_slice(&json[copied..]);
            std::borrow::Cow::Owned(buf)
        }
    }
}

/// The span of a bare numeric key (`-`, then digits) after the `{` or `,` at `i`, if a `:`
/// follows it.
fn bare_numeric_key(json: &[u8], i: usize) -> Option<std::ops::Range<usize>> {
    let after_blanks = |mut j: usize| {
        while j < json.len() && json[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let start = after_blanks(i + 1);
    let mut end = start;
    if json.get(end) == Some(&b'-') {
        end += 1;
    }
    while end < json.len() && json[end].is_ascii_digit() {
        end += 1;
    }
    let has_digit = json[start..end].iter().any(u8::is_ascii_digit);
    (has_digit && json.get(after_blanks(end)) == Some(&b':')).then_some(start..end)
}

/// Whether fastjson decodes `body` to `null` rather than failing: invalid UTF-8, a blank
/// document, or the literal `null`.
pub(crate) fn reads_as_null(body: &[u8]) -> bool {
    match std::str::from_utf8(body) {
        Ok(text) => matches!(
            text.trim_matches(|c: char| c.is_ascii_whitespace()),
            "" | "null"
        ),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_bare_numeric_keys_outside_strings_only() {
        let input = br#"{0:"a",-1:{2:3},"k":"{4:5}", 6 :7}"#;
        let out = quote_numeric_keys(input);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"0":"a","-1":{"2":3},"k":"{4:5}", "6" :7}"#
        );
        assert!(matches!(
            quote_numeric_keys(br#"{"a":1}"#),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
