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
    /// Destination MAC.
    pub fn dst(&self) -> Mac {
        todo!()
    }
    /// Source MAC.
    pub fn src(&self) -> Mac {
        todo!()
    }
    /// EtherType.
    pub fn ethertype(&self) -> u16 {
        todo!()
    }
    /// Bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination MAC.
    pub fn set_dst(&mut self, mac: Mac) {
        todo!()
    }
    /// Sets the source MAC.
    pub fn set_src(&mut self, mac: Mac) {
        todo!()
    }
    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ty: u16) {
        todo!()
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
        todo!()
    }
    /// Writes the 14 header bytes into `out[..14]` (panics if `out` is shorter: callers size it).
    pub fn emit(&self, out: &mut [u8]) {
        todo!()
    }
}
