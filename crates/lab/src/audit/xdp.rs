//! A minimal native XDP program for the router's ingress veth, loaded and attached with raw `bpf(2)` calls
//! (no clang, no libbpf): `r0 = XDP_PASS; exit`.
//!
//! Why: an `AF_PACKET` frame arrives at the router with only 16 bytes of headroom. With a native XDP program
//! on the receiving veth, veth queues the skb to its NAPI ring and, before running the program, copies any skb
//! whose head is not a page fragment (or has less than `XDP_PACKET_HEADROOM` = 256 bytes of headroom) into a
//! page-pool page with 256 bytes in front of the Ethernet header. The program passes every frame, so the
//! stack then sees the same packet with H0 = 256 + 14 = 270 at the network header (measured, see
//! `docs/audit.md`). The copy is not a `pskb_expand_head` and is not counted as a reallocation.
//!
//! The program is attached through a BPF link (`BPF_LINK_CREATE`, attach type `BPF_XDP`, driver mode), so it
//! is detached when [`XdpPass`] is dropped (its descriptors closed), or when the device disappears with its
//! namespace.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `BPF_PROG_LOAD` (include/uapi/linux/bpf.h, `enum bpf_cmd`).
const BPF_PROG_LOAD: libc::c_long = 5;
/// `BPF_LINK_CREATE`.
const BPF_LINK_CREATE: libc::c_long = 28;
/// `BPF_PROG_TYPE_XDP` (`enum bpf_prog_type`).
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `BPF_XDP` (`enum bpf_attach_type`).
const BPF_XDP: u32 = 37;
/// `XDP_FLAGS_DRV_MODE` (include/uapi/linux/if_link.h): native (driver) mode, never the generic fallback.
pub const XDP_FLAGS_DRV_MODE: u32 = 4;
/// `XDP_PASS` (`enum xdp_action`).
pub const XDP_PASS: i32 = 2;

/// One eBPF instruction (include/uapi/linux/bpf.h `struct bpf_insn`): opcode, dst:4 | src:4 registers,
/// 16-bit offset, 32-bit immediate, little-endian on the machines this runs on.
fn insn(code: u8, regs: u8, off: i16, imm: i32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = regs;
    b[2..4].copy_from_slice(&off.to_ne_bytes());
    b[4..8].copy_from_slice(&imm.to_ne_bytes());
    b
}

/// The program: `BPF_ALU64 | BPF_MOV | BPF_K` (0xb7) r0 = XDP_PASS, then `BPF_JMP | BPF_EXIT` (0x95).
pub fn pass_program() -> [[u8; 8]; 2] {
    [insn(0xb7, 0, 0, XDP_PASS), insn(0x95, 0, 0, 0)]
}

/// The leading part of `union bpf_attr` used by `BPF_PROG_LOAD` (fields up to `expected_attach_type`).
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// The leading part of `union bpf_attr` used by `BPF_LINK_CREATE`.
#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// `bpf(cmd, attr, sizeof attr)`; a non-negative result is a new file descriptor.
///
/// # Safety
///
/// `T` must be a `repr(C)` prefix of `union bpf_attr` without padding, and every pointer stored in `attr` must be
/// valid, for the duration of the call, for the reads and writes `cmd` makes through it (as many bytes as the
/// sizes and counts in `attr` say), with nothing else accessing the written ones meanwhile. `cmd` must return a
/// new descriptor on success.
unsafe fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<OwnedFd> {
    // SAFETY: bpf(2) reads (and for some commands writes back) `size` bytes at `attr`: a live, exclusively
    // borrowed `T` of exactly that size, initialised without padding (the caller's obligation, as is every
    // pointer inside it). The kernel treats the rest of `union bpf_attr` as zero.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(r).map_err(|_| io::Error::other("bpf(2) returned an odd descriptor"))?;
    // SAFETY: `cmd` returns a new descriptor on success (the caller's obligation), checked above: open, and owned
    // by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A loaded `XDP_PASS` program attached in driver mode to one interface, detached on drop.
#[derive(Debug)]
pub struct XdpPass {
    // Dropped in declaration order: the link first (detaching the program), then the program itself.
    _link: OwnedFd,
    _prog: OwnedFd,
    /// The interface index it is attached to (in the namespace it was attached from).
    pub ifindex: u32,
}

impl XdpPass {
    /// Loads the program and attaches it to `ifname` in the calling thread's network namespace.
    pub fn attach(ifname: &str) -> io::Result<XdpPass> {
        let name =
            CString::new(ifname).map_err(|_| io::Error::other("interface name contains NUL"))?;
        // SAFETY: if_nametoindex(3) reads the NUL-terminated string at its argument: `name` is a live CString, and
        // the function keeps no pointer to it.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        let prog_bytes: Vec<u8> = pass_program().concat();
        let license = c"GPL";
        let mut log = vec![0u8; 4096];
        let mut prog_name = [0u8; 16];
        prog_name[..11].copy_from_slice(b"l6a_xdppass");
        let mut load = ProgLoadAttr {
            prog_type: BPF_PROG_TYPE_XDP,
            insn_cnt: (prog_bytes.len() / 8) as u32,
            insns: prog_bytes.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: 1,
            log_size: log.len() as u32,
            log_buf: log.as_mut_ptr() as u64,
            prog_name,
            ..ProgLoadAttr::default()
        };
        // SAFETY: `ProgLoadAttr` is repr(C) without padding (72 bytes, checked in `attr_layouts`). The kernel reads
        // `insn_cnt` 8-byte instructions at `insns` (`prog_bytes`, a live Vec of exactly that many bytes), the
        // NUL-terminated string at `license` (a 'static C literal), and writes at most `log_size` bytes at
        // `log_buf` (`log`, a live Vec of that length, not otherwise used until the call returns).
        // BPF_PROG_LOAD returns a new program descriptor.
        let prog = unsafe { bpf(BPF_PROG_LOAD, &mut load) }.map_err(|e| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            io::Error::new(
                e.kind(),
                format!("BPF_PROG_LOAD: {e}; verifier: {}", text.trim()),
            )
        })?;
        let prog_fd = u32::try_from(prog.as_raw_fd())
            .map_err(|_| io::Error::other("negative program descriptor"))?;
        let mut create = LinkCreateAttr {
            prog_fd,
            target_ifindex: ifindex,
            attach_type: BPF_XDP,
            flags: XDP_FLAGS_DRV_MODE,
        };
        // SAFETY: `LinkCreateAttr` is repr(C), four u32 without padding, and holds no pointer; BPF_LINK_CREATE
        // returns a new link descriptor.
        let link = unsafe { bpf(BPF_LINK_CREATE, &mut create) }
            .map_err(|e| io::Error::new(e.kind(), format!("BPF_LINK_CREATE (native XDP): {e}")))?;
        Ok(XdpPass {
            _link: link,
            _prog: prog,
            ifindex,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_bytes() {
        // The encoding given in include/uapi/linux/bpf_common.h / bpf.h: BPF_ALU64 (0x07) | BPF_MOV (0xb0) |
        // BPF_K (0x00) = 0xb7 with dst r0, imm 2; BPF_JMP (0x05) | BPF_EXIT (0x90) = 0x95.
        let p = pass_program().concat();
        assert_eq!(
            p,
            [
                0xb7, 0, 0, 0, 2, 0, 0, 0, //
                0x95, 0, 0, 0, 0, 0, 0, 0
            ]
        );
    }

    #[test]
    fn attr_layouts() {
        // union bpf_attr: expected_attach_type sits at byte 68 in the BPF_PROG_LOAD arm; the link_create
        // arm starts with four u32.
        assert_eq!(std::mem::size_of::<ProgLoadAttr>(), 72);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type), 68);
        assert_eq!(std::mem::size_of::<LinkCreateAttr>(), 16);
    }
}
