//! What XDP an interface's driver offers right now, as the kernel says over generic netlink (the `netdev`
//! family's `dev-get`, Linux 6.3 and later): in particular whether frames can be redirected *to* it
//! (`NETDEV_XDP_ACT_NDO_XMIT`). The kernel refuses, and drops, an XDP redirect to a device without that flag; a
//! veth has it only while its peer has an XDP program or GRO enabled, so the answer can change while a router runs.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `NETDEV_XDP_ACT_BASIC`: the driver runs XDP programs (native mode).
pub const ACT_BASIC: u64 = 1;
/// `NETDEV_XDP_ACT_REDIRECT`: its programs may redirect.
pub const ACT_REDIRECT: u64 = 2;
/// `NETDEV_XDP_ACT_NDO_XMIT`: frames redirected by XDP programs can be sent out of it.
pub const ACT_NDO_XMIT: u64 = 4;

const NETLINK_GENERIC: libc::c_int = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const NETDEV_CMD_DEV_GET: u8 = 1;
const NETDEV_A_DEV_IFINDEX: u16 = 1;
const NETDEV_A_DEV_XDP_FEATURES: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;

/// A generic netlink socket that knows the `netdev` family's id.
#[derive(Debug)]
pub struct XdpFeatures {
    fd: OwnedFd,
    family: u16,
    seq: u32,
}

impl XdpFeatures {
    /// Opens the socket and looks the `netdev` family up (absent before Linux 6.3: an error).
    pub fn open() -> io::Result<XdpFeatures> {
        // SAFETY: socket(2) takes three integers and touches no memory of ours.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by socket(2), is open and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut s = XdpFeatures {
            fd,
            family: 0,
            seq: 0,
        };
        let mut name = b"netdev\0".to_vec();
        let reply = s.request(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            CTRL_ATTR_FAMILY_NAME,
            &mut name,
        )?;
        s.family = attr(&reply, CTRL_ATTR_FAMILY_ID)
            .and_then(|v| Some(u16::from_ne_bytes(v.get(..2)?.try_into().ok()?)))
            .ok_or_else(|| io::Error::other("generic netlink: no id for family netdev"))?;
        Ok(s)
    }

    /// The XDP features (`ACT_*` bits) of interface `ifindex` of the calling thread's namespace.
    pub fn get(&mut self, ifindex: u32) -> io::Result<u64> {
        let mut v = ifindex.to_ne_bytes().to_vec();
        let reply = self.request(
            self.family,
            NETDEV_CMD_DEV_GET,
            NETDEV_A_DEV_IFINDEX,
            &mut v,
        )?;
        attr(&reply, NETDEV_A_DEV_XDP_FEATURES)
            .and_then(|v| Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?)))
            .ok_or_else(|| io::Error::other("netdev dev-get: no xdp-features in the answer"))
    }

    /// Sends a request of one attribute and returns the attributes of its answer.
    fn request(&mut self, kind: u16, cmd: u8, at: u16, value: &mut Vec<u8>) -> io::Result<Vec<u8>> {
        self.seq = self.seq.wrapping_add(1);
        while !value.len().is_multiple_of(4) {
            value.push(0);
        }
        let alen = 4 + value.len();
        let total = 16 + 4 + alen;
        let mut m = Vec::with_capacity(total);
        m.extend_from_slice(&(total as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        m.extend_from_slice(&self.seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&[cmd, 1, 0, 0]);
        m.extend_from_slice(&(alen as u16).to_ne_bytes());
        m.extend_from_slice(&at.to_ne_bytes());
        m.extend_from_slice(value);
        // SAFETY: send(2) reads `m.len()` bytes at `m`, a live vector not touched until it returns.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), m.as_ptr().cast(), m.len(), 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; 8192];
        loop {
            // SAFETY: recv(2) writes at most `buf.len()` bytes into `buf`, a live, exclusively borrowed vector.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let b = &buf[..n as usize];
            if b.len() < 20 {
                return Err(io::Error::other("generic netlink: short answer"));
            }
            let seq = u32::from_ne_bytes(b[8..12].try_into().expect("4 bytes"));
            if seq != self.seq {
                continue;
            }
            let len =
                (u32::from_ne_bytes(b[0..4].try_into().expect("4 bytes")) as usize).min(b.len());
            let t = u16::from_ne_bytes(b[4..6].try_into().expect("2 bytes"));
            if t == NLMSG_ERROR {
                let err = i32::from_ne_bytes(b[16..20].try_into().expect("4 bytes"));
                return Err(io::Error::from_raw_os_error(-err));
            }
            return Ok(b[20..len].to_vec());
        }
    }
}

/// The value of attribute `want` among netlink attributes `b`.
fn attr(b: &[u8], want: u16) -> Option<&[u8]> {
    let mut i = 0;
    while i + 4 <= b.len() {
        let len = usize::from(u16::from_ne_bytes([b[i], b[i + 1]]));
        let t = u16::from_ne_bytes([b[i + 2], b[i + 3]]) & 0x3fff;
        if len < 4 || i + len > b.len() {
            return None;
        }
        if t == want {
            return Some(&b[i + 4..i + len]);
        }
        i += (len + 3) & !3;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_walked_with_their_padding() {
        // A 5-byte attribute (padded to 8) then a u64 one: rtnetlink's layout (RFC 3549, netlink(7)).
        let mut b = vec![5, 0, 1, 0, b'x', 0, 0, 0];
        b.extend_from_slice(&[12, 0, 3, 0]);
        b.extend_from_slice(&7u64.to_ne_bytes());
        assert_eq!(attr(&b, 1), Some(&b"x"[..]));
        assert_eq!(attr(&b, 3), Some(&7u64.to_ne_bytes()[..]));
        assert_eq!(attr(&b, 2), None);
        // A length running past the end is not trusted.
        assert_eq!(attr(&[40, 0, 3, 0, 1, 2, 3, 4], 3), None);
    }

    #[test]
    fn the_loopback_device_answers() {
        // Every namespace has `lo` (index 1); it takes no redirected frames in native mode.
        let Ok(mut f) = XdpFeatures::open() else {
            eprintln!("no netdev generic netlink family (Linux before 6.3): skipped");
            return;
        };
        let v = f.get(1).expect("lo's features");
        assert_eq!(v & ACT_NDO_XMIT, 0, "lo has no ndo_xdp_xmit");
        assert!(f.get(0x7fff_fff0).is_err(), "an index no device has");
    }
}
