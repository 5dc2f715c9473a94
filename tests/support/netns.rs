//! Network namespaces for tests that need the running kernel: `ip` that fails the test loudly, a root check that
//! fails (never skips), a guard that deletes its namespaces on every exit path (its `Drop` also runs when a test
//! panics), moving a thread into a namespace, and an AF_PACKET socket to send and capture with.

#![allow(dead_code)] // included by several test binaries, each using part of it

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

/// Runs `ip ARGS`, failing the test with iproute2's message when it fails; returns what it printed.
pub fn ip(args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("run ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails the test (`who` names it) unless it runs as root.
pub fn require_root(who: &str) {
    // SAFETY: geteuid(2) takes no argument, touches no memory of ours and always succeeds.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(uid, 0, "{who} needs root (namespaces, XDP); run as root");
}

/// Two namespaces, `<base>` and `<base>p`, created empty (a leftover of an earlier run with the same name is
/// removed first) and deleted when dropped.
pub struct NsPair {
    /// The first namespace (lwt6's side, or the sender's).
    pub ns: String,
    /// The second namespace (the peer's).
    pub peer: String,
}

impl NsPair {
    /// Creates `l6<tag>-<pid>-<test>` and the same name with `p` appended.
    pub fn new(tag: &str, test: &str) -> NsPair {
        let ns = format!("l6{tag}-{}-{test}", std::process::id());
        let pair = NsPair {
            peer: format!("{ns}p"),
            ns,
        };
        for n in [&pair.ns, &pair.peer] {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            ip(&["netns", "add", n]);
        }
        pair
    }
}

impl Drop for NsPair {
    fn drop(&mut self) {
        for n in [&self.ns, &self.peer] {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Runs `sysctl -qw SETTING` in namespace `ns`, failing the test when it fails.
pub fn sysctl(ns: &str, setting: &str) {
    ip(&["netns", "exec", ns, "sysctl", "-qw", setting]);
}

/// Moves the calling thread into network namespace `ns` (setns affects only this thread).
pub fn enter(ns: &str) {
    let path = CString::new(format!("/var/run/netns/{ns}")).unwrap();
    // SAFETY: open(2) reads the NUL-terminated path (`path`, a live CString) and keeps no pointer to it.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    assert!(fd >= 0, "open {ns}");
    // SAFETY: `fd` was just returned by open(2) (checked non-negative): open, and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: setns(2) takes two integers and touches no memory of ours; `fd` stays open during the call.
    let r = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {ns}");
}

/// An AF_PACKET socket on `ifname` (all protocols), with room for every frame of the test.
pub fn packet_socket(ifname: &str) -> i32 {
    let name = CString::new(ifname).unwrap();
    // SAFETY: socket(2) takes three integers and touches no memory of ours.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW,
            (libc::ETH_P_ALL as u16).to_be() as i32,
        )
    };
    assert!(fd >= 0, "AF_PACKET socket");
    let buf: i32 = 16 << 20;
    // SAFETY: setsockopt(2) reads `optlen` (4) bytes at `optval`: `buf` is a live i32, and the kernel keeps no
    // pointer to it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&buf as *const i32).cast(),
            4,
        )
    };
    assert_eq!(r, 0, "SO_RCVBUFFORCE");
    // SAFETY: `sockaddr_ll` is a repr(C) struct of integers and a byte array: all zeroes is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: if_nametoindex(3) reads the NUL-terminated string at its argument: `name` is a live CString, and
    // the function keeps no pointer to it.
    sll.sll_ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
    // SAFETY: bind(2) reads `addrlen` bytes at `addr`: `sll` is a live, initialised sockaddr_ll of exactly that
    // size, and the kernel keeps no pointer to it.
    let r = unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(r, 0, "bind AF_PACKET");
    fd
}
