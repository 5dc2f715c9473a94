//! Ethernet II frames (IEEE 802.3 with EtherType).
//!
//! ```text
//!  0                   6                  12      14
//! +-------------------+-------------------+-------+-----------
//! | destination MAC   | source MAC        | type  | payload
//! +-------------------+-------------------+-------+-----------
//! ```

use super::{Error, Result};

/// A MAC address.
pub type Mac = [u8; 6];

/// A MAC address as `ip link` prints it: six lower-case hex bytes joined by colons.
///
/// ```
/// assert_eq!(lwt6_wire::ethernet::mac_text(&[0x02, 0, 0, 0, 0x01, 0xab]), "02:00:00:00:01:ab");
/// ```
pub fn mac_text(m: &Mac) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}
/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// EtherType IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

/// A checked view over an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps `buffer`, checking it holds at least a full header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Frame { buffer })
    }
    /// Wraps without checks (caller guarantees >= 14 bytes).
    pub fn new_unchecked(buffer: T) -> Self {
        Frame { buffer }
    }
    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Destination MAC.
    pub fn dst(&self) -> Mac {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[0..6]);
        m
    }
    /// Source MAC.
    pub fn src(&self) -> Mac {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[6..12]);
        m
    }
    /// EtherType.
    pub fn ethertype(&self) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[12], b[13]])
    }
    /// Bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination MAC.
    pub fn set_dst(&mut self, mac: Mac) {
        self.buffer.as_mut()[0..6].copy_from_slice(&mac);
    }
    /// Sets the source MAC.
    pub fn set_src(&mut self, mac: Mac) {
        self.buffer.as_mut()[6..12].copy_from_slice(&mac);
    }
    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ty: u16) {
        self.buffer.as_mut()[12..14].copy_from_slice(&ty.to_be_bytes());
    }
}

/// High-level Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Destination MAC.
    pub dst: Mac,
    /// Source MAC.
    pub src: Mac,
    /// EtherType.
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Parses the header of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Self> {
        Ok(EthernetRepr {
            dst: frame.dst(),
            src: frame.src(),
            ethertype: frame.ethertype(),
        })
    }
    /// Writes the 14 header bytes into `out[..14]` (panics if `out` is shorter: callers size it).
    pub fn emit(&self, out: &mut [u8]) {
        out[0..6].copy_from_slice(&self.dst);
        out[6..12].copy_from_slice(&self.src);
        out[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// First 14 bytes of the kernel-captured `encap` output frame (docs/references.md §1.4):
    /// dst 02:00:00:00:02:02, src 02:00:00:00:02:01, EtherType 0x86dd.
    const ENCAP_HDR: [u8; 14] = [
        0x02, 0x00, 0x00, 0x00, 0x02, 0x02, 0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x86, 0xdd,
    ];

    #[test]
    fn parse_kernel_frame() {
        let mut buf = ENCAP_HDR.to_vec();
        buf.extend_from_slice(&[0x6b, 0x81]);
        let f = Frame::new_checked(&buf[..]).unwrap();
        assert_eq!(f.dst(), [0x02, 0, 0, 0, 0x02, 0x02]);
        assert_eq!(f.src(), [0x02, 0, 0, 0, 0x02, 0x01]);
        assert_eq!(f.ethertype(), ETHERTYPE_IPV6);
        assert_eq!(f.payload(), &[0x6b, 0x81]);
        let r = EthernetRepr::parse(&f).unwrap();
        let mut out = [0u8; 14];
        r.emit(&mut out);
        assert_eq!(out, ENCAP_HDR);
    }

    /// The 67-byte input frame's header (docs/references.md §6): 02:00:00:00:01:02 <- 02:00:00:00:01:01.
    #[test]
    fn parse_input_frame_header() {
        let hdr = [
            0x02, 0, 0, 0, 0x01, 0x02, 0x02, 0, 0, 0, 0x01, 0x01, 0x86, 0xdd,
        ];
        let r = EthernetRepr::parse(&Frame::new_checked(&hdr[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            EthernetRepr {
                dst: [2, 0, 0, 0, 1, 2],
                src: [2, 0, 0, 0, 1, 1],
                ethertype: 0x86dd
            }
        );
    }

    #[test]
    fn setters() {
        let mut buf = [0u8; 14];
        let mut f = Frame::new_checked(&mut buf[..]).unwrap();
        f.set_dst([0x02, 0, 0, 0, 0x02, 0x02]);
        f.set_src([0x02, 0, 0, 0, 0x02, 0x01]);
        f.set_ethertype(ETHERTYPE_IPV6);
        assert_eq!(buf, ENCAP_HDR);
    }

    #[test]
    fn short_is_truncated() {
        assert_eq!(
            Frame::new_checked(&[0u8; 13][..]).unwrap_err(),
            Error::Truncated
        );
        assert!(
            Frame::new_checked(&[0u8; 14][..])
                .unwrap()
                .payload()
                .is_empty()
        );
    }

    proptest! {
        #[test]
        fn round_trip(dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(), ethertype in any::<u16>()) {
            let r = EthernetRepr { dst, src, ethertype };
            let mut out = [0u8; 14];
            r.emit(&mut out);
            prop_assert_eq!(EthernetRepr::parse(&Frame::new_checked(&out[..]).unwrap()).unwrap(), r);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(f) = Frame::new_checked(&data[..]) {
                let _ = EthernetRepr::parse(&f);
                let _ = f.payload();
            }
        }
    }
}
