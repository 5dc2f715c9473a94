//! The `bpf(2)` system calls AF_XDP needs, written by hand on `libc`: an XSKMAP, the redirect program, and the
//! BPF link that attaches it to an interface (closing the link detaches the program).
//!
//! The attribute block of every command is the kernel's `union bpf_attr` (include/uapi/linux/bpf.h), laid out here
//! field by field at the offsets the UAPI header fixes; bytes the kernel does not know must be zero, which a
//! zeroed block of 128 bytes guarantees.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `BPF_MAP_CREATE`.
const CMD_MAP_CREATE: u32 = 0;
/// `BPF_MAP_UPDATE_ELEM`.
const CMD_MAP_UPDATE_ELEM: u32 = 2;
/// `BPF_MAP_DELETE_ELEM`.
const CMD_MAP_DELETE_ELEM: u32 = 3;
/// `BPF_PROG_LOAD`.
const CMD_PROG_LOAD: u32 = 5;
/// `BPF_LINK_CREATE`.
const CMD_LINK_CREATE: u32 = 28;

/// `BPF_MAP_TYPE_XSKMAP`: queue index → AF_XDP socket.
const MAP_TYPE_XSKMAP: u32 = 17;
/// `BPF_PROG_TYPE_XDP`.
const PROG_TYPE_XDP: u32 = 6;
/// `BPF_XDP`, the attach type of an XDP link.
const ATTACH_TYPE_XDP: u32 = 37;

/// `XDP_FLAGS_SKB_MODE`: generic XDP, run on the socket buffer after the driver (every device has it).
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: native XDP, run by the driver before any socket buffer exists.
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Size of the attribute block passed to every command (larger than any union member used here).
const ATTR_SIZE: usize = 128;

/// A zeroed `union bpf_attr` written field by field.
struct Attr([u8; ATTR_SIZE]);

impl Attr {
    fn new() -> Self {
        Attr([0; ATTR_SIZE])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name(&mut self, off: usize, name: &str) -> &mut Self {
        let n = name.len().min(15); // BPF_OBJ_NAME_LEN is 16 with the terminating NUL
        self.0[off..off + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
    /// Runs `bpf(cmd, attr)`; a non-negative result is returned as is.
    fn call(&mut self, cmd: u32) -> io::Result<i64> {
        // SAFETY: the attribute block is a valid, writable buffer of ATTR_SIZE bytes; every pointer stored in it by
        // the callers points to memory that outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd as libc::c_long,
                self.0.as_mut_ptr(),
                ATTR_SIZE as libc::c_uint,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
    /// Runs a command that returns a new descriptor.
    fn call_fd(&mut self, cmd: u32) -> io::Result<OwnedFd> {
        let fd = self.call(cmd)?;
        // SAFETY: the kernel returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
}

/// Creates an XSKMAP of `entries` slots (one per receive queue), named `name`.
pub fn create_xskmap(entries: u32, name: &str) -> io::Result<OwnedFd> {
    // map_type @0, key_size @4, value_size @8, max_entries @12, map_flags @16, ..., map_name @28
    Attr::new()
        .u32(0, MAP_TYPE_XSKMAP)
        .u32(4, 4)
        .u32(8, 4)
        .u32(12, entries)
        .name(28, name)
        .call_fd(CMD_MAP_CREATE)
}

/// Sets `map[key] = value` (for an XSKMAP: the socket descriptor serving queue `key`).
pub fn map_update(map: &OwnedFd, key: u32, value: u32) -> io::Result<()> {
    let (k, v) = (key, value);
    // map_fd @0, key @8, value @16, flags @24 (BPF_ANY = 0)
    Attr::new()
        .u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64)
        .u64(16, &v as *const u32 as u64)
        .call(CMD_MAP_UPDATE_ELEM)
        .map(drop)
}

/// Deletes `map[key]`.
pub fn map_delete(map: &OwnedFd, key: u32) -> io::Result<()> {
    let k = key;
    Attr::new()
        .u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64)
        .call(CMD_MAP_DELETE_ELEM)
        .map(drop)
}

/// One eBPF instruction (`struct bpf_insn`): opcode, destination and source registers, offset, immediate.
const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    let o = off.to_le_bytes();
    let i = imm.to_le_bytes();
    // Little-endian layout of the 8-byte instruction: code, regs (src << 4 | dst), off (2), imm (4).
    u64::from_le_bytes([
        code,
        (src << 4) | (dst & 0x0f),
        o[0],
        o[1],
        i[0],
        i[1],
        i[2],
        i[3],
    ])
}

/// `BPF_PSEUDO_MAP_FD`: the immediate of a 64-bit load is a map descriptor the verifier replaces by the map.
const PSEUDO_MAP_FD: u8 = 1;
/// `XDP_PASS`: frames of a queue without a socket go on to the kernel's stack.
const XDP_PASS: i32 = 2;
/// Helper number of `bpf_redirect_map`.
const HELPER_REDIRECT_MAP: i32 = 51;
/// Offset of `rx_queue_index` in `struct xdp_md`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;

/// The redirect program: every frame goes to the socket of its receive queue in the XSKMAP, or, when that slot is
/// empty, on to the kernel (`bpf_redirect_map`'s flags argument is the action returned on a missing entry).
///
/// ```text
/// r2 = *(u32 *)(r1 + 16)        ; ctx->rx_queue_index
/// r1 = map (64-bit pseudo load) ; two instruction slots
/// r3 = XDP_PASS
/// call bpf_redirect_map         ; r0 = XDP_REDIRECT or r3
/// exit
/// ```
pub fn redirect_program(map_fd: i32) -> [u64; 6] {
    [
        insn(0x61, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0), // BPF_LDX | BPF_MEM | BPF_W
        insn(0x18, 1, PSEUDO_MAP_FD, 0, map_fd),    // BPF_LD | BPF_IMM | BPF_DW, low half
        insn(0x00, 0, 0, 0, 0),                     // high half of the 64-bit immediate
        insn(0xb7, 3, 0, 0, XDP_PASS),              // BPF_ALU64 | BPF_MOV | BPF_K
        insn(0x85, 0, 0, 0, HELPER_REDIRECT_MAP),   // BPF_JMP | BPF_CALL
        insn(0x95, 0, 0, 0, 0),                     // BPF_JMP | BPF_EXIT
    ]
}

/// The program's license string. The program is lwt6's own (MIT OR Apache-2.0); the kernel only knows a fixed
/// list of strings, and "Dual MIT/GPL" is the one that names MIT (it is also GPL-compatible, which the kernel asks
/// of programs calling GPL-only helpers; `bpf_redirect_map` is not one).
const LICENSE: &str = "Dual MIT/GPL";

/// Loads the redirect program for `map`; on a verifier refusal the error carries the verifier's log.
pub fn load_redirect_program(map: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let prog = redirect_program(map.as_raw_fd());
    let license = CString::new(LICENSE).expect("no NUL in the license");
    let mut log = vec![0u8; 4096];
    // prog_type @0, insn_cnt @4, insns @8, license @16, log_level @24, log_size @28, log_buf @32,
    // kern_version @40, prog_flags @44, prog_name @48, prog_ifindex @64, expected_attach_type @68 (BPF_XDP)
    let r = Attr::new()
        .u32(0, PROG_TYPE_XDP)
        .u32(4, prog.len() as u32)
        .u64(8, prog.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .name(48, name)
        .u32(68, ATTACH_TYPE_XDP)
        .call_fd(CMD_PROG_LOAD);
    r.map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]);
        if text.trim().is_empty() {
            e
        } else {
            io::Error::new(e.kind(), format!("{e}; verifier: {}", text.trim()))
        }
    })
}

/// Attaches `prog` to interface `ifindex` as an XDP link with `flags` (`XDP_FLAGS_DRV_MODE` or
/// `XDP_FLAGS_SKB_MODE`). The program stays attached while the returned descriptor is open.
pub fn link_create(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    // prog_fd @0, target_ifindex @4, attach_type @8, flags @12
    Attr::new()
        .u32(0, prog.as_raw_fd() as u32)
        .u32(4, ifindex)
        .u32(8, ATTACH_TYPE_XDP)
        .u32(12, flags)
        .call_fd(CMD_LINK_CREATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encodings checked against the instruction layout of the kernel's BPF documentation
    /// (Documentation/bpf/standardization/instruction-set.rst: opcode byte, then dst in the low and src in the high
    /// nibble, a little-endian 16-bit offset and 32-bit immediate).
    #[test]
    fn instruction_encoding() {
        // ldxw r2, [r1+16] = 61 12 10 00 00 00 00 00
        assert_eq!(
            insn(0x61, 2, 1, 16, 0).to_le_bytes(),
            [0x61, 0x12, 0x10, 0, 0, 0, 0, 0]
        );
        // lddw r1, map fd 7 (pseudo) = 18 11 00 00 07 00 00 00
        assert_eq!(
            insn(0x18, 1, 1, 0, 7).to_le_bytes(),
            [0x18, 0x11, 0, 0, 7, 0, 0, 0]
        );
        // mov r3, 2 = b7 03 00 00 02 00 00 00
        assert_eq!(
            insn(0xb7, 3, 0, 0, 2).to_le_bytes(),
            [0xb7, 0x03, 0, 0, 2, 0, 0, 0]
        );
        // negative offsets are two's complement
        assert_eq!(
            insn(0x61, 0, 10, -4, 0).to_le_bytes(),
            [0x61, 0xa0, 0xfc, 0xff, 0, 0, 0, 0]
        );
        let p = redirect_program(9);
        assert_eq!(p.len(), 6);
        assert_eq!(p[4].to_le_bytes(), [0x85, 0, 0, 0, 51, 0, 0, 0]);
        assert_eq!(p[5].to_le_bytes(), [0x95, 0, 0, 0, 0, 0, 0, 0]);
    }
}
