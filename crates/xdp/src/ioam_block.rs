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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::IOAM_ANY;

    /// Node id 0x111111 (wide 0x22222222222222), namespace 123 with data 0xdeadbeef; ingress ids 0x0a0a /
    /// 0x0b0b0b0b, egress r1's 0x0c0c / 0x0d0d0d0d.
    const CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
ioam namespace add 123 data 0xdeadbeef wide 0xcafec0dedeadbeef
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.ioam6_id_wide=0x22222222222222
sysctl net.ipv6.conf.r0.ioam6_enabled=1
sysctl net.ipv6.conf.r0.ioam6_id=0x0a0a
sysctl net.ipv6.conf.r0.ioam6_id_wide=0x0b0b0b0b
sysctl net.ipv6.conf.r1.ioam6_id=0x0c0c
sysctl net.ipv6.conf.r1.ioam6_id_wide=0x0d0d0d0d
";

    fn entries() -> (Vec<(u32, IoamEntry)>, PortEntry) {
        let cfg = lwt6_config::parse(CONF).expect("configuration parses");
        let snap = lwt6_dataplane::snapshot::Snapshot::build(&cfg).expect("snapshot");
        let t = crate::tables(&snap);
        (t.ioam, crate::port_entry(&snap.links[0], 216))
    }

    fn entry(v: &[(u32, IoamEntry)], key: u32) -> IoamEntry {
        v.iter().find(|(k, _)| *k == key).expect("entry").1
    }

    #[test]
    fn blocks_are_the_rfc_9197_node_data_of_the_type() {
        let (v, port) = entries();
        // Namespace 123 out of r1 (device 1).
        let e = entry(&v, 123 | 1 << 16);
        // (type, NodeLen, block by RFC 9197 §4.4.2, hop-limit offsets), the hop limits zero.
        let cases: [(u32, u8, &[u8], &[u8]); 5] = [
            // Bit 0: hop limit, short node id.
            (0x80_0000, 1, &[0, 0x11, 0x11, 0x11], &[0]),
            // Bits 0, 1: and the short ingress (r0) and egress (r1) ids.
            (
                0xc0_0000,
                2,
                &[0, 0x11, 0x11, 0x11, 0x0a, 0x0a, 0x0c, 0x0c],
                &[0],
            ),
            // Bit 5: namespace data.
            (0x04_0000, 1, &[0xde, 0xad, 0xbe, 0xef], &[]),
            // Bits 8, 9: hop limit and wide node id, wide ingress and egress ids.
            (
                0x00_c000,
                4,
                &[
                    0, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x0b, 0x0b, 0x0b, 0x0b, 0x0d,
                    0x0d, 0x0d, 0x0d,
                ],
                &[0],
            ),
            // Bits 0 and 8: two hop limits.
            (
                0x80_8000,
                3,
                &[
                    0, 0x11, 0x11, 0x11, 0, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
                ],
                &[0, 4],
            ),
        ];
        for (ty, nl, want, hl) in cases {
            let b = block(&e, ty, &port).expect("a block");
            assert_eq!(b.refuse, 0, "{ty:#x}");
            assert_eq!(b.nl, nl, "{ty:#x}: NodeLen");
            assert_eq!(usize::from(b.words) * 4, want.len(), "{ty:#x}: length");
            assert_eq!(&b.data[..want.len()], want, "{ty:#x}: bytes");
            assert_eq!(&b.hl[..usize::from(b.nhl)], hl, "{ty:#x}: hop limits");
        }
    }

    #[test]
    fn timestamps_are_refused_and_unknown_namespaces_have_no_block() {
        let (v, port) = entries();
        let e = entry(&v, 123 | 1 << 16);
        // Bits 0 and 2 (timestamp seconds): 2 words, refused.
        let b = block(&e, 0xa0_0000, &port).expect("a block");
        assert_eq!((b.refuse, b.words, b.nl), (1, 2, 2));
        assert!(block(&entry(&v, IOAM_ANY), 0x80_0000, &port).is_none());
    }
}
