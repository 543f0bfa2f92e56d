//! The JSON header encoding (serialize type 0), read with fastjson's leniency and written the
//! way Java 5.x writes it (`RemotingCommand#headerEncode` / `#headerDecode` with
//! `SerializeType.JSON`).
//!
//! Reading: properties in any order, unknown properties ignored, a repeated property keeps its
//! last value, numbers given as strings accepted, `remark` absent/null/"" all fine, `extFields`
//! values may be strings, numbers or booleans (converted to text) and `null` (dropped).
//! Writing: properties in alphabetical order, nulls omitted, no whitespace, ext fields in Java
//! `HashMap` order.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

use super::body::lenient::{LenientText, TextFrom, seed_is_visitor};
use super::code::LanguageCode;
use super::command::{ExtFields, MAX_EXT_FIELDS, RemotingCommand};
use super::java_hash::{Table, sort_strings_by_java_order};
use super::json::{JsonStyle, JsonWriter};

/// A string property that may be null, or any other JSON value converted to its text.
const HEADER_TEXT: LenientText = LenientText(TextFrom::AnyJson);

/// Why a JSON header could not be read.
#[derive(Debug, thiserror::Error)]
#[error("malformed JSON header: {0}")]
pub struct JsonHeaderError(#[from] serde_json::Error);

/// Parses a JSON header into a command without a body.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, JsonHeaderError> {
    let mut de = serde_json::Deserializer::from_slice(header);
    let cmd = (&mut de).deserialize_map(HeaderVisitor)?;
    de.end()?;
    Ok(cmd)
}

/// Appends the JSON header of `cmd` to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, JsonStyle::Legacy);
    w.raw(b"{\"code\":");
    w.int(cmd.code as i64);
    if let Some(fields) = &cmd.ext_fields {
        w.raw(b",\"extFields\":{");
        let mut pairs: Vec<(&str, &str)> = fields.iter().collect();
        sort_strings_by_java_order(&mut pairs, Table::DEFAULT, |(k, _)| k);
        w.string_entries(pairs);
        w.punct(b'}');
    }
    w.raw(b",\"flag\":");
    w.int(cmd.flag as i64);
    if let Some(lang) = cmd.language {
        w.raw(b",\"language\":\"");
        w.raw(lang.name().as_bytes());
        w.punct(b'"');
    }
    w.raw(b",\"opaque\":");
    w.int(cmd.opaque as i64);
    w.opt_string(b",\"remark\":", cmd.remark.as_deref());
    w.raw(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    w.int(cmd.version as i64);
    w.punct(b'}');
}

struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = RemotingCommand;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a RemotingCommand header object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RemotingCommand, A::Error> {
        let mut cmd = RemotingCommand::request(0, 0);
        cmd.version = 0;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "code" => cmd.code = map.next_value_seed(LenientInt)?,
                "language" => cmd.language = map.next_value_seed(LenientLanguage)?,
                "version" => cmd.version = map.next_value_seed(LenientInt)?,
                "opaque" => cmd.opaque = map.next_value_seed(LenientInt)?,
                "flag" => cmd.flag = map.next_value_seed(LenientInt)?,
                "remark" => cmd.remark = map.next_value_seed(HEADER_TEXT)?,
                "extFields" => cmd.ext_fields = map.next_value_seed(LenientExtFields)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(cmd)
    }
}

/// An `int` property: a JSON number, a numeric string, or null (0). Longs wrap like Java's
/// `intValue()`.
struct LenientInt;

impl<'de> Visitor<'de> for LenientInt {
    type Value = i32;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i32, E> {
        Ok(v as i32)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i32, E> {
        Ok(v as i32)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<i32, E> {
        v.trim()
            .parse::<i64>()
            .map(|n| n as i32)
            .map_err(|_| E::custom(format!("not an integer: {v:?}")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<i32, E> {
        Ok(0)
    }
}

/// `language`: an enum name, an ordinal, or null; unknown values mean "no language".
struct LenientLanguage;

impl<'de> Visitor<'de> for LenientLanguage {
    type Value = Option<LanguageCode>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a language name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LanguageCode::from_name(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u8::try_from(v).ok().and_then(LanguageCode::from_code))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(u8::try_from(v).ok().and_then(LanguageCode::from_code))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `extFields`: an object (or null) whose values are read with [`HEADER_TEXT`], of at most
/// [`MAX_EXT_FIELDS`] entries.
struct LenientExtFields;

seed_is_visitor!(LenientInt, LenientLanguage, LenientExtFields);

impl<'de> Visitor<'de> for LenientExtFields {
    type Value = Option<ExtFields>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Vec::new();
        let mut entries = 0usize;
        while let Some(key) = map.next_key::<String>()? {
            entries += 1;
            if entries > MAX_EXT_FIELDS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_EXT_FIELDS} ext fields"
                )));
            }
            if let Some(value) = map.next_value_seed(HEADER_TEXT)? {
                pairs.push((key, value));
            }
        }
        Ok(Some(ExtFields::from_pairs(pairs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::code::version;

    #[test]
    fn encodes_the_java_route_request_of_protocol_9_1() {
        let mut cmd = RemotingCommand::request(105, 1);
        cmd.ext_fields = Some([("topic", "TopicTest")].into_iter().collect());
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
        );
    }

    #[test]
    fn decodes_in_any_order_with_missing_and_odd_properties() {
        let cmd = decode(
            br#"{"opaque":"7","extFields":{"a":1,"b":true,"c":null,"d":"x","e":1.5},"code":105,"language":"GO","remark":"","unknown":[1,{"z":2}]}"#,
        )
        .unwrap();
        assert_eq!(cmd.code, 105);
        assert_eq!(cmd.opaque, 7);
        assert_eq!(cmd.version, 0);
        assert_eq!(cmd.flag, 0);
        assert_eq!(cmd.language, Some(LanguageCode::Go));
        assert_eq!(cmd.remark.as_deref(), Some(""));
        let ext = cmd.ext_fields.unwrap();
        assert_eq!(ext.get("a"), Some("1"));
        assert_eq!(ext.get("b"), Some("true"));
        assert_eq!(ext.get("c"), None);
        assert_eq!(ext.get("d"), Some("x"));
        assert_eq!(ext.get("e"), Some("1.5"));
    }

    #[test]
    fn missing_language_is_java_and_unknown_is_none() {
        assert_eq!(
            decode(br#"{"code":1}"#).unwrap().language,
            Some(LanguageCode::Java)
        );
        assert_eq!(decode(br#"{"language":"COBOL"}"#).unwrap().language, None);
        assert_eq!(
            decode(br#"{"language":12}"#).unwrap().language,
            Some(LanguageCode::Rust)
        );
        assert_eq!(decode(br#"{"extFields":null}"#).unwrap().ext_fields, None);
    }

    /// A header's ext fields as JSON: `n` entries, `distinct` different keys.
    pub(crate) fn many_fields(n: usize, distinct: usize) -> Vec<u8> {
        let mut h = br#"{"code":105,"extFields":{"#.to_vec();
        for i in 0..n {
            if i > 0 {
                h.push(b',');
            }
            h.extend_from_slice(format!(r#""f{}":"v""#, i % distinct).as_bytes());
        }
        h.extend_from_slice(br#"},"flag":0,"opaque":1}"#);
        h
    }

    #[test]
    fn ext_fields_are_capped_counting_every_entry() {
        let ok = decode(&many_fields(MAX_EXT_FIELDS, MAX_EXT_FIELDS)).unwrap();
        assert_eq!(ok.ext_fields.unwrap().len(), MAX_EXT_FIELDS);
        for (n, distinct) in [(MAX_EXT_FIELDS + 1, MAX_EXT_FIELDS + 1), (100_000, 3)] {
            let err = decode(&many_fields(n, distinct)).unwrap_err().to_string();
            assert!(err.contains("more than 1024 ext fields"), "{err}");
        }
    }

    #[test]
    fn rejects_what_is_not_a_header_object() {
        for bad in [
            &b"[1]"[..],
            b"{",
            b"{\"code\":\"abc\"}",
            b"{} x",
            b"",
            b"null",
        ] {
            assert!(decode(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn response_header_omits_nulls_and_orders_ext_fields_like_java() {
        let mut r = RemotingCommand::success();
        r.opaque = 105;
        r.ext_fields = Some(
            [
                ("masterAddr", "127.0.0.1:10911"),
                ("haServerAddr", "127.0.0.1:10912"),
            ]
            .into_iter()
            .collect(),
        );
        let mut out = Vec::new();
        encode(&r, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"code":0,"extFields":{"haServerAddr":"127.0.0.1:10912","masterAddr":"127.0.0.1:10911"},"flag":1,"language":"JAVA","opaque":105,"serializeTypeCurrentRPC":"JSON","version":479}"#
        );
        assert_eq!(r.version, version::CURRENT);
    }
}
