//! IOAM transit: this node's whole block in a trace, precomputed per (namespace, egress, trace type, ingress) so
//! that the driver copies it and patches the hop limit only, instead of assembling it field by field.
//!
//! A block is made from the `ioam` map's entry of the namespace and egress ([`IoamEntry`], whose fields `tables()`
//! writes as `lwt6_wire::ioam::write_node` does) and the receiving port's IOAM ids ([`PortEntry`]): the fields of
//! the bits the trace type sets, in bit order, the ingress ids written, the hop-limit bytes left for the driver.
//! The driver's field-by-field path does the same per packet; the differential tests compare both with the
//! userspace router's bytes. Trace types come from the traffic: the driver records the keys it found no block
//! for (`ioam_miss`), and the tier adds their blocks ([`crate::Tier::learn_ioam`]).

use crate::layout::{
    IOAM_BITS, IOAM_BLOCK, IoamBlock, IoamEntry, OP_HLIM, OP_ING16, OP_ING32, PortEntry,
};

/// The block of trace type `ty` (24 bits) for the namespace and egress of `e`, received on `port`; `None` when
/// there is none to precompute: a namespace this node does not know (nothing is written), or a block longer than
/// [`IOAM_BLOCK`] without a refused field (never in a trace: the free space is at most 61 words).
pub fn block(e: &IoamEntry, ty: u32, port: &PortEntry) -> Option<IoamBlock> {
    if e.known == 0 {
        return None;
    }
    let mut b = IoamBlock {
        words: 0,
        nl: 0,
        refuse: u8::from(ty & e.refuse != 0),
        nhl: 0,
        hl: [0; 2],
        pad: [0; 2],
        data: [0; IOAM_BLOCK],
    };
    let (mut nl, mut len) = (0u32, 0usize);
    for k in 0..IOAM_BITS {
        if ty >> (IOAM_BITS - 1 - k) & 1 == 0 {
            continue;
        }
        nl += u32::from(e.nl[k]);
        let n = usize::from(e.len[k]);
        if b.refuse == 0 {
            let from = usize::from(e.at[k]);
            let field = e.data.get(from..from + n)?;
            b.data.get_mut(len..len + n)?.copy_from_slice(field);
            let at = len + usize::from(e.pat[k]);
            match e.code[k] {
                OP_HLIM => {
                    *b.hl.get_mut(usize::from(b.nhl))? = at as u8;
                    b.nhl += 1;
                }
                OP_ING16 => b
                    .data
                    .get_mut(at..at + 2)?
                    .copy_from_slice(&port.ioam_id.to_be_bytes()),
                OP_ING32 => b
                    .data
                    .get_mut(at..at + 4)?
                    .copy_from_slice(&port.ioam_wide.to_be_bytes()),
                _ => {}
            }
        }
        len += n;
    }
    b.nl = u8::try_from(nl).ok()?;
    b.words = u8::try_from(len / 4).ok()?;
    Some(b)
}
