//! The REGISTER_BROKER request body: a `RegisterBrokerBody` in JSON or in the
//! zlib-compressed binary layout, or for brokers older than V3_0_11 a bare
//! `TopicConfigSerializeWrapper`.
//!
//! Decoding is lazy so that re-registrations cost little. [`RegisterBody::decode`] reads the
//! small parts (data version, filter servers, mappings) and only delimits the topic table,
//! recording a digest of its bytes ([`RegisterBody::table_digest`]): a broker re-sending the
//! table it sent last time needs nothing more. [`RegisterBody::topics`] indexes the table's
//! entries (validating their syntax) on first use, and [`TopicSource::parse`] deserializes one
//! config on demand; the route table parses only configs whose bytes differ from the ones it
//! applied ([`TopicSource::fingerprint`]).

use std::io::Read;
use std::ops::Range;

use bytes::{Buf, Bytes};

use super::data_version::DataVersion;
use super::lenient::reads_as_null;
use super::mapping::MappingInfo;
use super::scan::{ScanError, Scanner};
use super::topic_config::{TopicConfig, TopicConfigError};

/// How to read a body: what the request's header says about it.
#[derive(Debug, Clone, Copy)]
pub struct DecodeOptions {
    /// The header's `compressed` flag.
    pub compressed: bool,
    /// The request's version ordinal (selects the body format and the mapping section).
    pub version: i32,
    /// Upper bound on the inflated size of a compressed body.
    pub max_inflated: usize,
}

/// Where a broker's previous topic table was and what it hashed to: a body whose table has
/// the same length and digest at the same place after its small leading parts is the same
/// table, already validated, and need not be scanned again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableHint {
    /// Length of the table's JSON text.
    pub(crate) len: usize,
    /// Its digest ([`RegisterBody::table_digest`]).
    pub(crate) digest: u64,
}

/// Why a registration body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RegisterBodyError {
    /// The JSON is malformed.
    #[error(transparent)]
    Syntax(#[from] ScanError),
    /// A property has the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// A JSON fragment did not deserialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A topic config is malformed.
    #[error(transparent)]
    TopicConfig(#[from] TopicConfigError),
    /// The compressed stream is corrupt or truncated.
    #[error("compressed body: {0}")]
    Compressed(String),
}

type Result<T> = std::result::Result<T, RegisterBodyError>;

#[derive(Debug, Clone)]
enum Name {
    /// The key's bytes in the source, which need no unescaping.
    Span(Range<usize>),
    Owned(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Json,
    Text,
}

#[derive(Debug, Clone)]
struct TopicSpan {
    key: Name,
    value: Range<usize>,
}

/// A decoded registration body.
#[derive(Debug, Clone)]
pub struct RegisterBody {
    source: Bytes,
    form: Form,
    /// The JSON topic table's span, indexed into `topics` on first use.
    table: Option<Range<usize>>,
    topics: std::sync::OnceLock<std::result::Result<Vec<TopicSpan>, ScanError>>,
    table_digest: u64,
    /// The broker's topic-config version.
    pub data_version: DataVersion,
    /// Filter servers; `None` leaves the stored list untouched (old-format bodies).
    pub filter_server_list: Option<Vec<String>>,
    /// Static-topic mappings, keyed by topic.
    pub mappings: Vec<(String, MappingInfo)>,
}

/// One topic config inside a body, not yet deserialized.
#[derive(Debug, Clone, Copy)]
pub struct TopicSource<'a> {
    /// The topic-table key (the topic name as the broker keyed it).
    pub key: &'a str,
    raw: &'a [u8],
    form: Form,
}

impl TopicSource<'_> {
    /// A 64-bit digest of this config's bytes; `seed` lets callers fold in how the config is
    /// going to be applied. Equal digests mean byte-identical configs.
    pub fn fingerprint(&self, seed: u64) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(self.raw, seed) | 1
    }

    /// Deserializes the config.
    pub fn parse(&self) -> std::result::Result<TopicConfig, TopicConfigError> {
        match self.form {
            Form::Json => TopicConfig::from_json(self.raw),
            Form::Text => TopicConfig::from_text(std::str::from_utf8(self.raw).map_err(|_| {
                TopicConfigError::Text(String::from_utf8_lossy(self.raw).into_owned())
            })?),
        }
    }
}

impl RegisterBody {
    /// A body for a request that carried none: zero data version, no topics, empty filter
    /// list (or none for pre-V3_0_11 brokers).
    pub(crate) fn empty(version: i32) -> RegisterBody {
        RegisterBody {
            source: Bytes::new(),
            form: Form::Json,
            table: None,
            topics: std::sync::OnceLock::from(Ok(Vec::new())),
            table_digest: 0,
            data_version: DataVersion::ZERO,
            filter_server_list: (version >= crate::protocol::code::version::V3_0_11).then(Vec::new),
            mappings: Vec::new(),
        }
    }

    /// Decodes a non-empty body.
    pub fn decode(body: Bytes, opts: DecodeOptions) -> Result<RegisterBody> {
        Self::decode_with_hint(body, opts, None)
    }

    /// Decodes a non-empty body, recognising the broker's previous topic table from `hint`
    /// without scanning it (its bytes are only hashed).
    pub fn decode_with_hint(
        body: Bytes,
        opts: DecodeOptions,
        hint: Option<TableHint>,
    ) -> Result<RegisterBody> {
        let looks_compressed = body.first() == Some(&0x78);
        if opts.version < crate::protocol::code::version::V3_0_11 {
            let mut decoded = Self::decode_json(body, false, hint)?;
            decoded.filter_server_list = None;
            return Ok(decoded);
        }
        // 5.x brokers with `compressedRegister=true` send a zlib body but say
        // `compressed=false`; a zlib header can never start a JSON document, so it is safe
        // to recognise one (Java fails such registrations).
        if opts.compressed || looks_compressed {
            Self::decode_compressed(&body, opts)
        } else {
            Self::decode_json(body, true, hint)
        }
    }

    /// Number of topics in the body's topic table.
    pub fn topic_count(&self) -> Result<usize> {
        Ok(self.spans()?.len())
    }

    /// A digest of the topic table's bytes: equal digests mean the broker sent the very same
    /// table.
    pub fn table_digest(&self) -> u64 {
        self.table_digest
    }

    /// The hint by which the next body's identical table can be recognised.
    pub(crate) fn table_hint(&self) -> TableHint {
        TableHint {
            len: self.table.as_ref().map_or(0, |r| r.len()),
            digest: self.table_digest,
        }
    }

    fn spans(&self) -> Result<&[TopicSpan]> {
        let indexed = self.topics.get_or_init(|| match &self.table {
            Some(span) => index_table(&self.source, span.clone()),
            None => Ok(Vec::new()),
        });
        match indexed {
            Ok(spans) => Ok(spans),
            Err(e) => Err(RegisterBodyError::Syntax(e.clone())),
        }
    }

    /// The topics, in body order (indexing the table on first use, which fails on a syntax
    /// error inside it).
    pub fn topics(&self) -> Result<impl ExactSizeIterator<Item = TopicSource<'_>> + '_> {
        Ok(self.spans()?.iter().map(move |t| TopicSource {
            key: match &t.key {
                // Spans were checked to be UTF-8 when indexed.
                Name::Span(r) => std::str::from_utf8(&self.source[r.clone()]).unwrap_or(""),
                Name::Owned(s) => s,
            },
            raw: &self.source[t.value.clone()],
            form: self.form,
        }))
    }

    /// A digest of the whole body, for recognising an unchanged re-registration.
    pub fn digest(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&self.source)
    }

    fn decode_json(source: Bytes, wrapped: bool, hint: Option<TableHint>) -> Result<RegisterBody> {
        let mut body = RegisterBody {
            source: Bytes::new(),
            form: Form::Json,
            table: None,
            topics: std::sync::OnceLock::new(),
            table_digest: 0,
            data_version: DataVersion::from_json(b"{}")?,
            filter_server_list: Some(Vec::new()),
            mappings: Vec::new(),
        };
        {
            let mut s = Scanner::new(&source);
            if wrapped {
                let mut it = s.begin_object()?;
                while let Some(key) = s.next_key(&mut it)? {
                    match key.as_ref() {
                        "filterServerList" => {
                            let span = s.value_span()?;
                            body.filter_server_list = serde_json::from_slice(&source[span])?;
                        }
                        "topicConfigSerializeWrapper" => {
                            if !s.take_null() {
                                body.read_wrapper(&mut s, &source, hint, true)?;
                            }
                        }
                        _ => s.skip_value()?,
                    }
                }
            } else {
                // A broker older than 3.0.11 sends the bare topic-config wrapper, which Java
                // reads without static-topic mappings.
                body.read_wrapper(&mut s, &source, hint, false)?;
            }
            s.end()?;
        }
        body.source = source;
        Ok(body)
    }

    fn read_wrapper(
        &mut self,
        s: &mut Scanner<'_>,
        source: &[u8],
        hint: Option<TableHint>,
        with_mappings: bool,
    ) -> Result<()> {
        let mut it = s.begin_object()?;
        while let Some(key) = s.next_key(&mut it)? {
            match key.as_ref() {
                "dataVersion" => {
                    let span = s.value_span()?;
                    if &source[span.clone()] != b"null" {
                        self.data_version = DataVersion::from_json(&source[span])?;
                    }
                }
                "topicConfigTable" => {
                    if !s.take_null() {
                        let known =
                            hint.and_then(|h| Some((s.known_span(h.len, h.digest)?, h.digest)));
                        let (span, digest) = match known {
                            Some(known) => known,
                            None => {
                                let span = s.object_span()?;
                                let digest = xxhash_rust::xxh3::xxh3_64(&source[span.clone()]);
                                (span, digest)
                            }
                        };
                        self.table_digest = digest;
                        self.table = Some(span);
                    }
                }
                "topicQueueMappingInfoMap" if with_mappings => {
                    if !s.take_null() {
                        let mut map = s.begin_object()?;
                        while let Some(topic) = s.next_key(&mut map)? {
                            let span = s.value_span()?;
                            let info = MappingInfo::from_json(&source[span])?;
                            self.mappings.push((topic.into_owned(), info));
                        }
                    }
                }
                _ => s.skip_value()?,
            }
        }
        Ok(())
    }

    fn decode_compressed(compressed: &[u8], opts: DecodeOptions) -> Result<RegisterBody> {
        let limit = opts.max_inflated as u64;
        let mut inflated = Vec::new();
        flate2::read::ZlibDecoder::new(compressed)
            .take(limit + 1)
            .read_to_end(&mut inflated)
            .map_err(|e| RegisterBodyError::Compressed(e.to_string()))?;
        if inflated.len() as u64 > limit {
            return Err(RegisterBodyError::Compressed(format!(
                "inflates to more than {limit} bytes"
            )));
        }
        let source = Bytes::from(inflated);
        let mut r = Reader {
            buf: source.clone(),
            start: source.len(),
        };
        let dv = r.chunk("dataVersion")?;
        let data_version = DataVersion::from_json(&source[dv])?;
        let count = r.int("topic count")?;
        let table_start = r.offset();
        let mut topics = Vec::with_capacity((count.max(0) as usize).min(r.buf.remaining() / 4));
        for _ in 0..count.max(0) {
            let value = r.chunk("topic config")?;
            let text = std::str::from_utf8(&source[value.clone()])
                .map_err(|_| RegisterBodyError::Compressed("topic config is not UTF-8".into()))?;
            let name = TopicConfig::name_of_text(text);
            let start = value.start;
            topics.push(TopicSpan {
                key: Name::Span(start..start + name.len()),
                value,
            });
        }
        let table_digest = xxhash_rust::xxh3::xxh3_64(&source[table_start..r.offset()]);
        let fs = r.chunk("filter server list")?;
        // fastjson reads `null` or nothing as no list (the stored one stays); Java logs a
        // malformed list (invalid UTF-8 included: it decodes the text first) and carries on
        // with an empty one.
        let list = &source[fs];
        let filter_server_list = match std::str::from_utf8(list).is_ok() && reads_as_null(list) {
            true => None,
            false => Some(serde_json::from_slice(list).unwrap_or_default()),
        };
        let mut mappings = Vec::new();
        if opts.version >= crate::protocol::code::version::V5_0_0 {
            let n = r.int("mapping count")?;
            for _ in 0..n.max(0) {
                let span = r.chunk("mapping")?;
                let info = MappingInfo::from_json(&source[span])?;
                mappings.push((info.topic.clone().unwrap_or_default(), info));
            }
        }
        Ok(RegisterBody {
            source,
            form: Form::Text,
            table: None,
            topics: std::sync::OnceLock::from(Ok(topics)),
            table_digest,
            data_version,
            filter_server_list,
            mappings,
        })
    }
}

/// Indexes a JSON topic table: each entry's key and value span, checking the syntax.
fn index_table(
    source: &[u8],
    span: Range<usize>,
) -> std::result::Result<Vec<TopicSpan>, ScanError> {
    let base = source.as_ptr() as usize;
    let mut s = Scanner::new(&source[..span.end]);
    s.seek(span.start);
    let mut it = s.begin_object()?;
    let mut topics = Vec::new();
    while let Some(key) = s.next_key(&mut it)? {
        let key = match key {
            std::borrow::Cow::Borrowed(k) => {
                let start = k.as_ptr() as usize - base;
                Name::Span(start..start + k.len())
            }
            std::borrow::Cow::Owned(k) => Name::Owned(k),
        };
        let value = s.value_span()?;
        if source[value.start] != b'{' {
            return Err(ScanError {
                pos: value.start,
                what: "topicConfigTable values must be objects",
            });
        }
        topics.push(TopicSpan { key, value });
    }
    s.end()?;
    Ok(topics)
}

/// Reads `int length + bytes` chunks of an inflated body, reporting their spans.
struct Reader {
    buf: Bytes,
    start: usize,
}

impl Reader {
    fn offset(&self) -> usize {
        self.start - self.buf.remaining()
    }

    fn int(&mut self, what: &str) -> Result<i32> {
        if self.buf.remaining() < 4 {
            return Err(RegisterBodyError::Compressed(format!(
                "end of compressed data reached reading {what}"
            )));
        }
        Ok(self.buf.get_i32())
    }

    fn chunk(&mut self, what: &str) -> Result<Range<usize>> {
        let len = self.int(what)?;
        if len < 0 || len as usize > self.buf.remaining() {
            return Err(RegisterBodyError::Compressed(format!(
                "{what} length {len} exceeds the data"
            )));
        }
        let start = self.offset();
        self.buf.advance(len as usize);
        Ok(start..start + len as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const OPTS: DecodeOptions = DecodeOptions {
        compressed: false,
        version: 479,
        max_inflated: 1 << 20,
    };

    const BODY_5X: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000123},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},"T\u00e9":{"topicName":"T\u00e9","perm":7}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{"S":{"bname":"b","currIdMap":{0:1},"topic":"S"}}}}"#;

    #[test]
    fn decodes_a_5x_json_body() {
        let body = RegisterBody::decode(Bytes::from_static(BODY_5X.as_bytes()), OPTS).unwrap();
        assert_eq!(body.data_version.counter, Some(3));
        assert_eq!(body.filter_server_list, Some(vec![]));
        let topics: Vec<_> = body.topics().unwrap().collect();
        assert_eq!(topics.len(), 2);
        assert_eq!(topics[0].key, "TopicTest");
        assert_eq!(topics[1].key, "Té");
        let tc = topics[0].parse().unwrap();
        assert_eq!(
            (tc.read_queue_nums, tc.write_queue_nums, tc.perm),
            (4, 4, 6)
        );
        assert_eq!(topics[1].parse().unwrap().perm, 7);
        assert_eq!(body.mappings.len(), 1);
        assert_eq!(body.mappings[0].1.curr_id_map, vec![(0, 1)]);
        assert_ne!(topics[0].fingerprint(0), topics[1].fingerprint(0));
        assert_ne!(topics[0].fingerprint(0), topics[0].fingerprint(1));
    }

    #[test]
    fn a_hint_recognises_the_same_table_and_falls_back_otherwise() {
        let first = RegisterBody::decode(Bytes::from_static(BODY_5X.as_bytes()), OPTS).unwrap();
        let hint = first.table_hint();
        let keys = |b: &RegisterBody| {
            b.topics()
                .unwrap()
                .map(|t| t.key.to_owned())
                .collect::<Vec<_>>()
        };
        // A new data version, the same table: recognised without scanning.
        let next = BODY_5X.replace(r#""counter":3"#, r#""counter":4"#);
        let again =
            RegisterBody::decode_with_hint(Bytes::from(next.clone()), OPTS, Some(hint)).unwrap();
        assert_eq!(again.table_digest(), first.table_digest());
        assert_eq!(keys(&again), keys(&first));
        assert_eq!(again.data_version.counter, Some(4));
        // A changed table (same length, different bytes) and a wrong length both fall back.
        let changed = next.replace(r#""perm":7"#, r#""perm":6"#);
        let other = RegisterBody::decode_with_hint(Bytes::from(changed), OPTS, Some(hint)).unwrap();
        assert_ne!(other.table_digest(), first.table_digest());
        assert_eq!(
            other
                .topics()
                .unwrap()
                .nth(1)
                .unwrap()
                .parse()
                .unwrap()
                .perm,
            6
        );
        let longer = TableHint {
            len: hint.len + 5,
            ..hint
        };
        let fallback =
            RegisterBody::decode_with_hint(Bytes::from(next.clone()), OPTS, Some(longer)).unwrap();
        assert_eq!(fallback.table_digest(), first.table_digest());
        // What follows a recognised table is still checked.
        let broken = next.replace(
            r#""topicQueueMappingDetailMap":{}"#,
            r#""topicQueueMappingDetailMap":{"#,
        );
        assert!(RegisterBody::decode_with_hint(Bytes::from(broken), OPTS, Some(hint)).is_err());
    }

    #[test]
    fn decodes_a_49x_body_and_an_old_wrapper() {
        let body49 = r#"{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":5},"topicConfigTable":{"A":{"topicName":"A","readQueueNums":1,"writeQueueNums":1,"perm":6}}}}"#;
        let body = RegisterBody::decode(Bytes::from(body49), OPTS).unwrap();
        assert_eq!(body.data_version.state_version, 0);
        assert_eq!(body.filter_server_list, Some(vec!["f:1".to_owned()]));
        // The bare wrapper of a pre-3.0.11 broker: Java's class for it has no mappings.
        let old = r#"{"dataVersion":{"counter":2,"timestamp":5},"topicConfigTable":{},"topicQueueMappingInfoMap":{"T":{"bname":"b","totalQueues":1,"epoch":0}}}"#;
        let opts = DecodeOptions {
            version: 36,
            ..OPTS
        };
        let body = RegisterBody::decode(Bytes::from(old), opts).unwrap();
        assert_eq!(body.filter_server_list, None);
        assert_eq!(body.topic_count().unwrap(), 0);
        assert!(body.mappings.is_empty());
    }

    #[test]
    fn rejects_malformed_json_anywhere() {
        for bad in [
            r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"perm":6},}}}"#,
            r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":1}}}"#,
            r#"{"filterServerList":[1]}"#,
            r#"{"topicConfigSerializeWrapper":{"dataVersion":"x"}}"#,
            "{} trailing",
        ] {
            let decoded = RegisterBody::decode(Bytes::from(bad), OPTS);
            assert!(
                decoded.is_err() || decoded.unwrap().topics().is_err(),
                "{bad}"
            );
        }
    }

    pub(crate) fn compress(parts: &[&[u8]], topics: &[&str], mappings: Option<&[&str]>) -> Vec<u8> {
        let mut raw = Vec::new();
        let chunk = |raw: &mut Vec<u8>, b: &[u8]| {
            raw.extend_from_slice(&(b.len() as i32).to_be_bytes());
            raw.extend_from_slice(b);
        };
        chunk(&mut raw, parts[0]);
        raw.extend_from_slice(&(topics.len() as i32).to_be_bytes());
        for t in topics {
            chunk(&mut raw, t.as_bytes());
        }
        chunk(&mut raw, parts[1]);
        if let Some(m) = mappings {
            raw.extend_from_slice(&(m.len() as i32).to_be_bytes());
            for x in m {
                chunk(&mut raw, x.as_bytes());
            }
        }
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&raw).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn decodes_compressed_bodies_even_when_the_header_says_not() {
        let z = compress(
            &[
                br#"{"counter":7,"stateVersion":1,"timestamp":9}"#,
                b"[\"fs:1\"]",
            ],
            &["TopicTest 4 4 6 SINGLE_TAG {}", "T2 8 8 7 MULTI_TAG "],
            Some(&[r#"{"bname":"b","currIdMap":{0:0},"topic":"S"}"#]),
        );
        for compressed in [true, false] {
            let body =
                RegisterBody::decode(Bytes::from(z.clone()), DecodeOptions { compressed, ..OPTS })
                    .unwrap();
            assert_eq!(body.data_version.counter, Some(7));
            let keys: Vec<_> = body.topics().unwrap().map(|t| t.key.to_owned()).collect();
            assert_eq!(keys, vec!["TopicTest", "T2"]);
            assert_eq!(
                body.topics().unwrap().nth(1).unwrap().parse().unwrap().perm,
                7
            );
            assert_eq!(body.filter_server_list, Some(vec!["fs:1".to_owned()]));
            assert_eq!(body.mappings[0].0, "S");
        }
    }

    #[test]
    fn compressed_bodies_before_5_0_have_no_mapping_section() {
        let z = compress(&[br#"{"counter":1,"timestamp":1}"#, b"not json"], &[], None);
        let opts = DecodeOptions {
            compressed: true,
            version: 400,
            ..OPTS
        };
        let body = RegisterBody::decode(Bytes::from(z), opts).unwrap();
        assert_eq!(
            body.filter_server_list,
            Some(vec![]),
            "malformed: an empty list"
        );
        assert!(body.mappings.is_empty());
        // fastjson's parseArray reads `null` as no list: the stored one is kept.
        let z = compress(&[br#"{"counter":1,"timestamp":1}"#, b"null"], &[], None);
        let body = RegisterBody::decode(Bytes::from(z), opts).unwrap();
        assert_eq!(body.filter_server_list, None);
    }

    #[test]
    fn corrupt_truncated_and_oversized_compressed_bodies_fail() {
        let opts = DecodeOptions {
            compressed: true,
            ..OPTS
        };
        assert!(RegisterBody::decode(Bytes::from_static(b"\x78\x9cgarbage"), opts).is_err());
        let z = compress(
            &[br#"{"counter":1,"timestamp":1}"#, b"[]"],
            &["T 1 1 6 SINGLE_TAG"],
            None,
        );
        // Declares a mapping section it does not have (version >= 413).
        assert!(RegisterBody::decode(Bytes::from(z), opts).is_err());
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 4 << 20]).unwrap();
        let bomb = enc.finish().unwrap();
        assert!(matches!(
            RegisterBody::decode(Bytes::from(bomb), opts),
            Err(RegisterBodyError::Compressed(_))
        ));
    }
}
