//! The RocketMQ remoting wire format, as pure functions over bytes.
//!
//! A TCP stream carries frames in both directions:
//!
//! ```text
//! offset 0   i32  length      bytes that follow this field (header word + header + body)
//! offset 4   u32  header word top byte = serialize type (0 JSON, 1 ROCKETMQ),
//!                             low 24 bits = header length
//! offset 8   header           JSON text or the binary layout of `header_binary`
//! offset 8+h body             the rest; its format depends on the request code
//! ```
//!
//! All integers are big-endian. `frame` splits the stream and builds [`RemotingCommand`]s,
//! [`header_json`] and [`header_binary`] are the two header encodings, [`code`] holds the
//! numeric vocabulary, [`json`] writes JSON exactly like the Java server's fastjson, and
//! [`body`] holds the typed bodies of the name server's requests and responses. Nothing in
//! this module performs I/O or knows about the route tables.

pub mod body;
pub mod code;
pub mod command;
pub mod controller_code;
pub(crate) mod frame;
pub mod header_binary;
pub mod header_json;
pub(crate) mod java_hash;
pub mod json;
pub mod signature;

pub use code::{LanguageCode, SerializeType};
pub use command::{ExtFields, RemotingCommand};
pub(crate) use frame::DecodeError;
pub use frame::{FrameLimits, decode_frame, encode_frame, split_frame};
