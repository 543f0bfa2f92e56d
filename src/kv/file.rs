//! The KV file as Java writes it: `{"configTable":{namespace:{key:value}}}`, read and written
//! in the order Java's `HashMap`s iterate.

use std::fmt;
use std::path::Path;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use super::{JavaHashMap, Namespaces};
use crate::protocol::json::{JsonStyle, JsonWriter};

/// A JSON object's members in document order (`serde_json::Map` sorts them).
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Members<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(member) = map.next_entry()? {
                    out.push(member);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// Reads `{"configTable":{ns:{k:v}}}` as Java's `KVConfigManager.load` does: fastjson fills
/// `HashMap`s in document order, then `putAll` copies the namespaces into the live table.
pub(super) fn parse_file(bytes: &[u8]) -> Result<Namespaces, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".into());
    }
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(rename = "configTable", default)]
        config_table: Option<Ordered<Option<Ordered<serde_json::Value>>>>,
    }
    let file: File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut parsed = JavaHashMap::new();
    for (ns, entries) in file.config_table.map_or(Vec::new(), |c| c.0) {
        let Some(entries) = entries else { continue };
        let mut map = JavaHashMap::new();
        for (k, v) in entries.0 {
            let text = match v {
                serde_json::Value::Null => continue,
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            map.put(k, text);
        }
        parsed.put(ns, map);
    }
    let mut table = Namespaces::for_put_all(parsed.len());
    for (ns, entries) in parsed.iter() {
        table.put(ns.to_owned(), entries.clone());
    }
    Ok(table)
}

/// `{"configTable":{ns:{k:v}}}` in Java `HashMap` order, as `KVConfigManager.persist`.
pub(super) fn render_file(table: &Namespaces) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.raw(b"{\"configTable\":{");
    w.separated(table.iter(), |w, (ns, entries)| {
        w.str_key(ns);
        w.punct(b'{');
        w.string_entries(entries.iter());
        w.punct(b'}');
    });
    w.raw(b"}}");
    out
}

/// The table in the file at `path` and the file's bytes; `None` when there is no file.
pub(super) fn read_table(path: &Path) -> Result<Option<(Namespaces, Vec<u8>)>, String> {
    match std::fs::read(path) {
        Ok(bytes) => parse_file(&bytes).map(|table| Some((table, bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}
