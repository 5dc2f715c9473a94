//! A queued IOAM option, decoded: its header fields and, for the pre-allocated and incremental traces (RFC 9197
//! §4.4), its node records; the fields of the other option types (RFC 9197 §4.5, §4.6; RFC 9326 §3.2).

use lwt6_wire::ioam::{self, DecodedNode, TraceOption};

/// IOAM Option-Type values (RFC 9197 §7.1 registry, RFC 9326 §5.1).
pub mod option_type {
    /// Pre-allocated Trace (RFC 9197 §4.4).
    pub const PREALLOC_TRACE: u8 = 0;
    /// Incremental Trace (RFC 9197 §4.4).
    pub const INCREMENTAL_TRACE: u8 = 1;
    /// Proof of Transit (RFC 9197 §4.5).
    pub const POT: u8 = 2;
    /// Edge-to-Edge (RFC 9197 §4.6).
    pub const E2E: u8 = 3;
    /// Direct Export (RFC 9326 §3.2).
    pub const DEX: u8 = 4;
}

/// The name of an IOAM Option-Type.
pub fn option_type_name(t: u8) -> &'static str {
    match t {
        option_type::PREALLOC_TRACE => "prealloc_trace",
        option_type::INCREMENTAL_TRACE => "incremental_trace",
        option_type::POT => "proof_of_transit",
        option_type::E2E => "edge_to_edge",
        option_type::DEX => "direct_export",
        _ => "unknown",
    }
}

/// A decoded IOAM option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// IOAM Option-Type.
    pub option_type: u8,
    /// Namespace-ID.
    pub namespace: u16,
    /// The trace header (trace types only).
    pub header: Option<ioam::TraceHeader>,
    /// Node records in path order: the first node the packet met first (the trace holds them newest first).
    pub nodes: Vec<DecodedNode>,
    /// Why the node records could not be decoded, if they could not.
    pub error: Option<String>,
    /// The fields of a Proof of Transit, Edge-to-Edge or Direct Export option.
    pub other: Option<ioam::OtherOption>,
}

impl Trace {
    /// Decodes an IOAM option given from its type byte. None when it is too short to name its namespace.
    pub fn decode(opt: &[u8]) -> Option<Trace> {
        if opt.len() < 6 || opt[1] < 4 {
            return None;
        }
        let option_type = opt[3];
        let namespace = u16::from_be_bytes([opt[4], opt[5]]);
        let mut t = Trace {
            option_type,
            namespace,
            header: None,
            nodes: Vec::new(),
            error: None,
            other: None,
        };
        if option_type == option_type::PREALLOC_TRACE
            || option_type == option_type::INCREMENTAL_TRACE
        {
            match TraceOption::new_checked(opt).and_then(|v| {
                let h = v.header()?;
                Ok((
                    h,
                    if option_type == option_type::PREALLOC_TRACE {
                        ioam::decode_nodes(&v)
                    } else {
                        ioam::decode_incremental_nodes(&v)
                    },
                ))
            }) {
                Ok((h, nodes)) => {
                    t.header = Some(h);
                    match nodes {
                        Ok(mut n) => {
                            n.reverse();
                            t.nodes = n;
                        }
                        Err(e) => t.error = Some(e.to_string()),
                    }
                }
                Err(e) => t.error = Some(e.to_string()),
            }
        } else {
            match ioam::parse_other(opt) {
                Some(Ok(o)) => t.other = Some(o),
                Some(Err(e)) => t.error = Some(e.to_string()),
                None => {}
            }
        }
        Some(t)
    }

    /// A Direct Export record: the option's fields and this node's data (`block`, laid out for its trace type).
    pub fn decode_dex(opt: &[u8], block: &[u8]) -> Option<Trace> {
        let mut t = Trace::decode(opt)?;
        if let Some(ioam::OtherOption::Dex { trace_type, .. }) = t.other {
            match ioam::decode_node_blocks(block, trace_type) {
                Ok(n) => t.nodes = n,
                Err(e) => t.error = Some(e.to_string()),
            }
        }
        Some(t)
    }
}
