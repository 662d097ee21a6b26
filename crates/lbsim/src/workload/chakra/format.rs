//! The trace format: the schema's messages and the length-delimited file framing.

use prost::Message;

use crate::config::ConfigError;

/// The schema's messages, as far as lbsim reads them (field numbers as in `et_def.proto`).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GlobalMetadata {
        #[prost(string, tag = "1")]
        pub version: String,
        #[prost(message, repeated, tag = "2")]
        pub attr: Vec<AttributeProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttributeProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub doc_string: String,
        #[prost(
            oneof = "Value",
            tags = "3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31"
        )]
        pub value: Option<Value>,
    }

    /// The scalar members of `AttributeProto.value` (the list members are skipped).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "3")]
        DoubleVal(f64),
        #[prost(float, tag = "5")]
        FloatVal(f32),
        #[prost(int32, tag = "7")]
        Int32Val(i32),
        #[prost(int64, tag = "9")]
        Int64Val(i64),
        #[prost(uint32, tag = "11")]
        Uint32Val(u32),
        #[prost(uint64, tag = "13")]
        Uint64Val(u64),
        #[prost(sint32, tag = "15")]
        Sint32Val(i32),
        #[prost(sint64, tag = "17")]
        Sint64Val(i64),
        #[prost(fixed32, tag = "19")]
        Fixed32Val(u32),
        #[prost(fixed64, tag = "21")]
        Fixed64Val(u64),
        #[prost(sfixed32, tag = "23")]
        Sfixed32Val(i32),
        #[prost(sfixed64, tag = "25")]
        Sfixed64Val(i64),
        #[prost(bool, tag = "27")]
        BoolVal(bool),
        #[prost(string, tag = "29")]
        StringVal(String),
        #[prost(bytes = "vec", tag = "31")]
        BytesVal(Vec<u8>),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Node {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(string, tag = "2")]
        pub name: String,
        /// A `NodeType`.
        #[prost(int32, tag = "3")]
        pub r#type: i32,
        #[prost(uint64, repeated, tag = "4")]
        pub ctrl_deps: Vec<u64>,
        #[prost(uint64, repeated, tag = "5")]
        pub data_deps: Vec<u64>,
        #[prost(uint64, tag = "6")]
        pub start_time_micros: u64,
        #[prost(uint64, tag = "7")]
        pub duration_micros: u64,
        #[prost(message, repeated, tag = "10")]
        pub attr: Vec<AttributeProto>,
    }

    /// `NodeType`.
    pub const METADATA_NODE: i32 = 1;
    pub const COMP_NODE: i32 = 4;
    pub const COMM_SEND_NODE: i32 = 5;
    pub const COMM_RECV_NODE: i32 = 6;
    pub const COMM_COLL_NODE: i32 = 7;

    /// `NodeType` names, by value.
    pub const NODE_TYPES: &[&str] = &[
        "INVALID_NODE",
        "METADATA_NODE",
        "MEM_LOAD_NODE",
        "MEM_STORE_NODE",
        "COMP_NODE",
        "COMM_SEND_NODE",
        "COMM_RECV_NODE",
        "COMM_COLL_NODE",
    ];

    /// `CollectiveCommType`.
    pub const ALL_REDUCE: i64 = 0;
    pub const ALL_GATHER: i64 = 2;
    pub const ALL_TO_ALL: i64 = 6;
    pub const REDUCE_SCATTER: i64 = 7;
    pub const BARRIER: i64 = 9;

    /// `CollectiveCommType` names, by value.
    pub const COLL_TYPES: &[&str] = &[
        "ALL_REDUCE",
        "REDUCE",
        "ALL_GATHER",
        "GATHER",
        "SCATTER",
        "BROADCAST",
        "ALL_TO_ALL",
        "REDUCE_SCATTER",
        "REDUCE_SCATTER_BLOCK",
        "BARRIER",
    ];

    impl Node {
        pub fn attr(&self, name: &str) -> Option<&Value> {
            self.attr
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| a.value.as_ref())
        }
    }

    impl Value {
        /// The value as an integer, whatever integer member carries it.
        pub fn int(&self) -> Option<i64> {
            Some(match *self {
                Value::Int32Val(v) | Value::Sint32Val(v) | Value::Sfixed32Val(v) => v as i64,
                Value::Int64Val(v) | Value::Sint64Val(v) | Value::Sfixed64Val(v) => v,
                Value::Uint32Val(v) | Value::Fixed32Val(v) => v as i64,
                Value::Uint64Val(v) | Value::Fixed64Val(v) => i64::try_from(v).ok()?,
                Value::BoolVal(b) => b as i64,
                _ => return None,
            })
        }
    }

    /// An attribute with an `int64_val` (as Chakra's generators write `comm_type` and
    /// `comm_size`).
    pub fn int64(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            doc_string: String::new(),
            value: Some(Value::Int64Val(v)),
        }
    }

    /// An attribute with an `int32_val` (as they write `comm_src`, `comm_dst`, `comm_tag`).
    pub fn int32(name: &str, v: i32) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            doc_string: String::new(),
            value: Some(Value::Int32Val(v)),
        }
    }
}

/// Encodes a trace: `GlobalMetadata` then the nodes, each length-delimited.
pub fn encode(version: &str, nodes: &[proto::Node]) -> Vec<u8> {
    let mut out = Vec::new();
    let meta = proto::GlobalMetadata {
        version: version.into(),
        attr: Vec::new(),
    };
    meta.encode_length_delimited(&mut out).expect("a Vec grows");
    for n in nodes {
        n.encode_length_delimited(&mut out).expect("a Vec grows");
    }
    out
}

/// Decodes a trace file's bytes: its metadata's version and its nodes. `name` is used in errors.
pub fn decode(bytes: &[u8], name: &str) -> Result<(String, Vec<proto::Node>), ConfigError> {
    let err = |msg: String| ConfigError::Io {
        path: name.to_string(),
        msg,
    };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(err(
            "a gzip-compressed trace: decompress it first (gunzip)".into()
        ));
    }
    if bytes.is_empty() {
        return Err(err(
            "empty file: a Chakra trace starts with its GlobalMetadata".into(),
        ));
    }
    let mut buf = bytes;
    let mut nodes = Vec::new();
    let mut version = None;
    while !buf.is_empty() {
        let offset = bytes.len() - buf.len();
        let what = match (&version, nodes.last()) {
            (None, _) => "the GlobalMetadata".to_string(),
            (Some(_), None) => "the first node".to_string(),
            (Some(_), Some(n)) => {
                let n: &proto::Node = n;
                format!("the node after node id {}", n.id)
            }
        };
        let len = prost::encoding::decode_varint(&mut buf).map_err(|_| {
            err(format!(
                "truncated at byte {offset}: the length of {what} is cut off"
            ))
        })?;
        if len > buf.len() as u64 {
            return Err(err(format!(
                "truncated at byte {offset}: {what} says {len} bytes, {} remain",
                buf.len()
            )));
        }
        let (msg, rest) = buf.split_at(len as usize);
        buf = rest;
        if version.is_none() {
            let m = proto::GlobalMetadata::decode(msg).map_err(|e| {
                err(format!(
                    "byte {offset}: {what} is not a valid protobuf message ({e})"
                ))
            })?;
            version = Some(m.version);
        } else {
            let n = proto::Node::decode(msg).map_err(|e| {
                err(format!(
                    "byte {offset}: {what} is not a valid Chakra node ({e})"
                ))
            })?;
            nodes.push(n);
        }
    }
    Ok((version.unwrap_or_default(), nodes))
}
