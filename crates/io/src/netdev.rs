//! What the system says about a network interface of the calling thread's namespace: index, MAC address, MTU,
//! state and addresses. Read with `ioctl(2)`s on a datagram socket (netdevice(7)) and from `/proc/net/if_inet6`,
//! both of which follow the caller's network namespace (`/sys/class/net` shows the namespace sysfs was mounted
//! in, which is not always the caller's).

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An interface as the system has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetDev {
    /// Name.
    pub name: String,
    /// Interface index.
    pub ifindex: u32,
    /// Hardware address.
    pub mac: [u8; 6],
    /// MTU.
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// Whether the kernel has an IPv4 address on it.
    pub has_ipv4: bool,
    /// The kernel's IPv6 addresses on it (link-local included).
    pub ipv6: Vec<Ipv6Addr>,
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{name}' is not a valid interface name"),
        ));
    }
    // SAFETY: `ifreq` is a repr(C) struct of a byte array and a union of integers, byte arrays and a pointer, for
    // all of which all zeroes (null) is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(r)
}

fn ioctl(fd: &OwnedFd, req: libc::Ioctl, r: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: the requests `lookup` passes (SIOCGIFINDEX, SIOCGIFHWADDR, SIOCGIFMTU, SIOCGIFFLAGS, SIOCGIFADDR; this
    // function is private) read and write one `struct ifreq` at the argument and follow no pointer in it: `r` is a
    // live, exclusively borrowed ifreq, its name NUL-terminated (`ifreq` leaves at least one zero byte).
    if unsafe { libc::ioctl(fd.as_raw_fd(), req, r as *mut libc::ifreq) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Looks interface `name` up. An unknown interface is an error of kind `NotFound`.
pub fn lookup(name: &str) -> io::Result<NetDev> {
    // SAFETY: socket(2) takes three integers and touches no memory of ours.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` was just returned by socket(2) (checked non-negative): open, and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut r = ifreq(name)?;
    ioctl(&fd, libc::SIOCGIFINDEX, &mut r).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENODEV) {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface named {name}"),
            )
        } else {
            e
        }
    })?;
    // SAFETY: every member of the `ifr_ifru` union is plain integers (or a pointer never followed), so reading any
    // of them is defined whatever was stored (it started zeroed); SIOCGIFINDEX stored this one.
    let ifindex = unsafe { r.ifr_ifru.ifru_ifindex } as u32;
    let mut r = ifreq(name)?;
    ioctl(&fd, libc::SIOCGIFHWADDR, &mut r)?;
    // SAFETY: as above (a union of plain integers and byte arrays); SIOCGIFHWADDR stored this member.
    let sa = unsafe { r.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    let mut r = ifreq(name)?;
    ioctl(&fd, libc::SIOCGIFMTU, &mut r)?;
    // SAFETY: as above; SIOCGIFMTU stored this member.
    let mtu = unsafe { r.ifr_ifru.ifru_mtu } as u32;
    let mut r = ifreq(name)?;
    ioctl(&fd, libc::SIOCGIFFLAGS, &mut r)?;
    // SAFETY: as above; SIOCGIFFLAGS stored this member.
    let up = unsafe { r.ifr_ifru.ifru_flags } as i32 & libc::IFF_UP != 0;
    let mut r = ifreq(name)?;
    let has_ipv4 = ioctl(&fd, libc::SIOCGIFADDR, &mut r).is_ok();
    Ok(NetDev {
        name: name.to_string(),
        ifindex,
        mac,
        mtu,
        up,
        has_ipv4,
        ipv6: ipv6_addrs(name),
    })
}

/// The IPv6 addresses of interface `name` in `/proc/net/if_inet6` (none when IPv6 is disabled on it).
pub fn ipv6_addrs(name: &str) -> Vec<Ipv6Addr> {
    let Ok(text) = std::fs::read_to_string("/proc/net/if_inet6") else {
        return Vec::new();
    };
    parse_if_inet6(&text, name)
}

/// The addresses of `name` in the text of `/proc/net/if_inet6` (one line per address: 32 hex digits, index,
/// prefix length, scope, flags, name).
pub fn parse_if_inet6(text: &str, name: &str) -> Vec<Ipv6Addr> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || f[5] != name || f[0].len() != 32 {
                return None;
            }
            u128::from_str_radix(f[0], 16).ok().map(Ipv6Addr::from)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_inet6_lines() {
        // Format of net/ipv6/addrconf.c's if6_seq_show: address, ifindex, prefix length, scope, flags (hex), name.
        let t = "fe800000000000000000000000000001 02 40 20 80     r0\n\
                 00000000000000000000000000000001 01 80 10 80       lo\n\
                 fd000001000000000000000000000002 02 40 00 80     r0\n";
        assert_eq!(
            parse_if_inet6(t, "r0"),
            [
                "fe80::1".parse::<Ipv6Addr>().unwrap(),
                "fd00:1::2".parse().unwrap()
            ]
        );
        assert!(parse_if_inet6(t, "r1").is_empty());
    }

    #[test]
    fn loopback_is_found_and_nonsense_is_not() {
        let lo = lookup("lo").unwrap();
        assert_eq!(lo.mac, [0; 6]);
        assert!(lo.ifindex >= 1);
        assert_eq!(
            lookup("no-such-if0").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(lookup("").unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }
}
