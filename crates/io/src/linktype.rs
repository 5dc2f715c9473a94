//! Captures of other link types, as Ethernet frames: what `tcpdump -i any` writes (Linux cooked captures, SLL and
//! SLL2) and raw IP captures (the link-layer header types of tcpdump.org's LINKTYPE list) are read by turning each
//! frame into the Ethernet frame an interface would have received.

/// Link type Ethernet (LINKTYPE_ETHERNET).
pub const ETHERNET: u16 = 1;
/// Raw IP, IPv4 or IPv6 by the version nibble (LINKTYPE_RAW).
pub const RAW: u16 = 101;
/// Linux cooked capture v1 (LINKTYPE_LINUX_SLL): a 16-byte header.
pub const LINUX_SLL: u16 = 113;
/// Raw IPv4 (LINKTYPE_IPV4).
pub const IPV4: u16 = 228;
/// Raw IPv6 (LINKTYPE_IPV6).
pub const IPV6: u16 = 229;
/// Linux cooked capture v2 (LINKTYPE_LINUX_SLL2): a 20-byte header.
pub const LINUX_SLL2: u16 = 276;

/// The link types read (Ethernet as is, the others converted).
pub const SUPPORTED: &[u16] = &[ETHERNET, RAW, LINUX_SLL, IPV4, IPV6, LINUX_SLL2];

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// SLL / SLL2 header lengths.
const SLL_LEN: usize = 16;
const SLL2_LEN: usize = 20;
/// ARPHRD_ETHER: the cooked header's link-layer address is a 6-byte MAC.
const ARPHRD_ETHER: u16 = 1;

/// Why a frame cannot be read as Ethernet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// A link type this reader does not know.
    #[error(
        "link type {0} is not one lwt6 reads (Ethernet 1, raw IP 101 / 228 / 229, Linux cooked 113 / 276)"
    )]
    Unsupported(u16),
    /// Shorter than its link-layer header.
    #[error("shorter than its {0} header")]
    Truncated(&'static str),
    /// Raw IP whose version nibble is neither 4 nor 6.
    #[error("raw IP frame with version {0}")]
    BadVersion(u8),
}

/// The Ethernet frame `data` (captured with link type `linktype`) stands for, as received by the interface with
/// MAC `dst` (raw and cooked frames have no destination MAC; a cooked frame's source MAC is kept when it has one).
/// Ethernet frames come back unchanged.
pub fn to_ethernet(linktype: u16, data: &[u8], dst: [u8; 6]) -> Result<Vec<u8>, LinkError> {
    let (src, ethertype, payload): ([u8; 6], u16, &[u8]) = match linktype {
        ETHERNET => return Ok(data.to_vec()),
        RAW | IPV4 | IPV6 => {
            let v = data.first().ok_or(LinkError::Truncated("IP"))? >> 4;
            let et = match (linktype, v) {
                (RAW | IPV4, 4) => ETHERTYPE_IPV4,
                (RAW | IPV6, 6) => ETHERTYPE_IPV6,
                _ => return Err(LinkError::BadVersion(v)),
            };
            ([0; 6], et, data)
        }
        // SLL: packet type (2), ARPHRD (2), address length (2), address (8), protocol (2).
        LINUX_SLL => {
            let h = data
                .get(..SLL_LEN)
                .ok_or(LinkError::Truncated("Linux cooked (SLL)"))?;
            let arphrd = u16::from_be_bytes([h[2], h[3]]);
            let alen = u16::from_be_bytes([h[4], h[5]]);
            (
                mac(arphrd, alen.into(), &h[6..14]),
                u16::from_be_bytes([h[14], h[15]]),
                &data[SLL_LEN..],
            )
        }
        // SLL2: protocol (2), reserved (2), interface index (4), ARPHRD (2), packet type (1), address length (1),
        // address (8).
        LINUX_SLL2 => {
            let h = data
                .get(..SLL2_LEN)
                .ok_or(LinkError::Truncated("Linux cooked (SLL2)"))?;
            let arphrd = u16::from_be_bytes([h[8], h[9]]);
            (
                mac(arphrd, h[11].into(), &h[12..20]),
                u16::from_be_bytes([h[0], h[1]]),
                &data[SLL2_LEN..],
            )
        }
        other => return Err(LinkError::Unsupported(other)),
    };
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    Ok(f)
}

/// A cooked header's address as a source MAC, when it is one.
fn mac(arphrd: u16, len: usize, addr: &[u8]) -> [u8; 6] {
    let mut m = [0u8; 6];
    if arphrd == ARPHRD_ETHER && len == 6 {
        m.copy_from_slice(&addr[..6]);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const DST: [u8; 6] = [2, 0, 0, 0, 1, 2];
    /// An IPv6 header's first bytes (version 6) and an IPv4 one's (version 4, IHL 5).
    const V6: [u8; 4] = [0x60, 0, 0, 0];
    const V4: [u8; 4] = [0x45, 0, 0, 20];

    #[test]
    fn raw_ip_gets_an_ethernet_header_by_version() {
        let f = to_ethernet(RAW, &V6, DST).unwrap();
        assert_eq!(f, [&DST[..], &[0; 6], &[0x86, 0xdd], &V6].concat());
        let f = to_ethernet(IPV4, &V4, DST).unwrap();
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(to_ethernet(IPV6, &V4, DST), Err(LinkError::BadVersion(4)));
        assert_eq!(
            to_ethernet(RAW, &[0x50], DST),
            Err(LinkError::BadVersion(5))
        );
        assert_eq!(to_ethernet(RAW, &[], DST), Err(LinkError::Truncated("IP")));
    }

    /// SLL as `tcpdump -i any` writes it for an incoming IPv6 frame (packet type 0 "to us", ARPHRD_ETHER, 6-byte
    /// address), byte for byte from the LINKTYPE_LINUX_SLL layout.
    #[test]
    fn linux_cooked_captures_keep_the_source_mac() {
        let sll = [
            0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 1, 1, 0, 0, 0x86, 0xdd, 0x60, 0, 0, 0,
        ];
        let f = to_ethernet(LINUX_SLL, &sll, DST).unwrap();
        assert_eq!(
            f,
            [&DST[..], &[2, 0, 0, 0, 1, 1], &[0x86, 0xdd], &V6].concat()
        );
        let sll2 = [
            0x86, 0xdd, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 0, 0, 0, 1, 1, 0, 0, 0x60, 0, 0, 0,
        ];
        assert_eq!(to_ethernet(LINUX_SLL2, &sll2, DST).unwrap(), f);
        // Not an Ethernet address (ARPHRD 772, loopback): no source MAC.
        let mut lo = sll;
        lo[2..4].copy_from_slice(&772u16.to_be_bytes());
        assert_eq!(&to_ethernet(LINUX_SLL, &lo, DST).unwrap()[6..12], &[0; 6]);
        assert_eq!(
            to_ethernet(LINUX_SLL, &sll[..15], DST),
            Err(LinkError::Truncated("Linux cooked (SLL)"))
        );
        assert_eq!(
            to_ethernet(147, &sll, DST),
            Err(LinkError::Unsupported(147))
        );
    }
}
