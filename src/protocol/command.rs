//! [`RemotingCommand`]: one decoded request or response, independent of how its header was
//! encoded, plus the constructors for the responses the name server writes.

use bytes::Bytes;

use super::code::{FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, version};

/// The most ext fields a request header may carry, counting every entry as sent (repeated and
/// null ones included). A header with more is malformed: the connection closes without a
/// reply, as Java closes it for a header it cannot decode. Real requests carry a few dozen at
/// most (a signed request adds half a dozen); the cap keeps a hostile header's cost small.
pub const MAX_EXT_FIELDS: usize = 1024;

/// A command's `extFields`: the "custom header" as ordered string pairs.
///
/// Order is kept as received (requests) or as built (responses); lookups are linear because a
/// command carries a handful of fields ([`MAX_EXT_FIELDS`] at most when decoded), and building
/// from many pairs ([`ExtFields::from_pairs`]) is linear too. A field whose value was JSON
/// `null` or an empty binary string is dropped at decode time, since Java treats it exactly
/// like an absent field.
#[derive(Debug, Clone, Default)]
pub struct ExtFields {
    pairs: Vec<(String, String)>,
    /// Whether a key came more than once in the pairs these fields were built from: harmless
    /// to a handler (the last value wins), but a signed request must be unambiguous.
    repeated: bool,
}

/// Equality ignores order: Java keeps ext fields in a `HashMap`, so order carries no meaning.
impl PartialEq for ExtFields {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Eq for ExtFields {}

impl ExtFields {
    /// An empty set of fields (written as `"extFields":{}`).
    pub fn new() -> Self {
        ExtFields::default()
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Fields from pairs in order: a repeated key keeps the place of its first occurrence and
    /// the value of its last, as [`ExtFields::insert`] would leave them, in linear time.
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        let given = pairs.len();
        let mut fields = ExtFields::unique(pairs);
        fields.repeated = fields.len() < given;
        fields
    }

    fn unique(pairs: Vec<(String, String)>) -> Self {
        // Small sets (every real request) are checked pairwise; large ones through an index.
        let mut fields = ExtFields {
            pairs: Vec::with_capacity(pairs.len()),
            repeated: false,
        };
        if pairs.len() <= 16 {
            for (k, v) in pairs {
                fields.insert(k, v);
            }
            return fields;
        }
        let mut index = std::collections::HashMap::with_capacity(pairs.len());
        for (key, value) in pairs {
            match index.get(&key) {
                Some(&at) => fields.pairs[at] = (key, value),
                None => {
                    index.insert(key.clone(), fields.pairs.len());
                    fields.pairs.push((key, value));
                }
            }
        }
        fields
    }

    /// Sets `key` to `value`, replacing an earlier value of the same key.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.pairs.push((key, value)),
        }
    }

    /// The fields in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether a key was repeated in the pairs these fields were decoded from
    /// ([`ExtFields::from_pairs`]); later [`ExtFields::insert`]s do not count.
    pub(crate) fn had_repeated_keys(&self) -> bool {
        self.repeated
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        ExtFields::from_pairs(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// One RocketMQ remoting command (request or response).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code in a request, response code in a response.
    pub code: i32,
    /// The sender's language; `None` when the sender's value is not a known one.
    pub language: Option<LanguageCode>,
    /// The sender's `MQVersion` ordinal.
    pub version: i32,
    /// Request id; a response carries its request's value.
    pub opaque: i32,
    /// Bit field: [`FLAG_RESPONSE`], [`FLAG_ONEWAY`].
    pub flag: i32,
    /// Human-readable text, mostly on errors.
    pub remark: Option<String>,
    /// The custom header; `None` means the property is absent, not merely empty.
    pub ext_fields: Option<ExtFields>,
    /// The body; `None` for a zero-length body, as Java stores `null`.
    pub body: Option<Bytes>,
}

impl RemotingCommand {
    /// A request with the given code and no fields, as a client would send it.
    pub fn request(code: i32, opaque: i32) -> Self {
        RemotingCommand {
            code,
            language: Some(LanguageCode::Java),
            version: version::CURRENT,
            opaque,
            flag: 0,
            remark: None,
            ext_fields: None,
            body: None,
        }
    }

    /// A response with `code` and optional remark; `opaque` is filled in by the dispatcher.
    pub fn response(code: i32, remark: Option<String>) -> Self {
        RemotingCommand {
            code,
            language: Some(LanguageCode::Java),
            version: version::CURRENT,
            opaque: 0,
            flag: FLAG_RESPONSE,
            remark,
            ext_fields: None,
            body: None,
        }
    }

    /// A `SUCCESS` response without remark, fields or body.
    pub fn success() -> Self {
        Self::response(super::code::response::SUCCESS, None)
    }

    /// An error response with a remark.
    pub fn error(code: i32, remark: impl Into<String>) -> Self {
        Self::response(code, Some(remark.into()))
    }

    /// Replaces the body.
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        self.body = if body.is_empty() { None } else { Some(body) };
        self
    }

    /// Replaces the ext fields (`Some` even when empty: Java writes `"extFields":{}` for a
    /// response created with a header class).
    pub(crate) fn with_ext_fields(mut self, fields: ExtFields) -> Self {
        self.ext_fields = Some(fields);
        self
    }

    /// Whether this command is a response.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether this is a one-way request that must not be answered.
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// The value of ext field `key`, if the command has it.
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.as_ref().and_then(|f| f.get(key))
    }

    /// The body bytes, or an empty slice.
    pub fn body_bytes(&self) -> &[u8] {
        self.body.as_deref().unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_fields_insert_replaces_and_keeps_order() {
        let mut f = ExtFields::new();
        f.insert("b", "1");
        f.insert("a", "2");
        f.insert("b", "3");
        let pairs: Vec<_> = f.iter().collect();
        assert_eq!(pairs, vec![("b", "3"), ("a", "2")]);
        assert_eq!(f.get("a"), Some("2"));
        assert_eq!(f.get("c"), None);
    }

    #[test]
    fn from_pairs_dedups_large_sets_like_insert() {
        let pairs: Vec<(String, String)> = (0..100_000)
            .map(|i| (format!("k{}", i % 60_000), i.to_string()))
            .collect();
        let f = ExtFields::from_pairs(pairs);
        assert_eq!(f.len(), 60_000);
        let first: Vec<_> = f.iter().take(2).collect();
        assert_eq!(first, vec![("k0", "60000"), ("k1", "60001")]);
        assert_eq!(f.get("k59999"), Some("59999"));
    }

    #[test]
    fn from_pairs_notes_repeated_keys_and_insert_does_not() {
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let f = ExtFields::from_pairs(vec![pair("a", "1"), pair("b", "2")]);
        assert!(!f.had_repeated_keys());
        let mut f = ExtFields::from_pairs(vec![pair("a", "1"), pair("a", "1")]);
        assert!(f.had_repeated_keys());
        assert_eq!(f.len(), 1);
        let mut built = ExtFields::new();
        built.insert("a", "1");
        built.insert("a", "2");
        assert!(!built.had_repeated_keys());
        f.insert("a", "3");
        assert!(f.had_repeated_keys(), "a decoded repeat stays known");
        let many: Vec<_> = (0..40)
            .map(|i| pair(&format!("k{}", i % 39), "v"))
            .collect();
        assert!(ExtFields::from_pairs(many).had_repeated_keys());
    }

    #[test]
    fn empty_body_is_no_body() {
        let r = RemotingCommand::success().with_body(Bytes::new());
        assert_eq!(r.body, None);
        assert!(r.is_response());
        assert!(!r.is_oneway());
    }
}
