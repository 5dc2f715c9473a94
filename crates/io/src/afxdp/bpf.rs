//! The `bpf(2)` system calls AF_XDP needs, written by hand on `libc`: an XSKMAP, the redirect program, and the
//! BPF link that attaches it to an interface (closing the link detaches the program).
//!
//! The attribute block of every command is the kernel's `union bpf_attr` (include/uapi/linux/bpf.h), laid out here
//! field by field at the offsets the UAPI header fixes; bytes the kernel does not know must be zero, which a
//! zeroed block of 128 bytes guarantees.
//!
//! Several commands carry pointers inside that block (keys, values, instructions, the verifier's log), through
//! which the kernel reads or writes as many bytes as the command says: the map's key and value sizes, the
//! instruction count, the log size. [`Map`] remembers the sizes its map was created with, so that the safe
//! functions below check every buffer they pass against them.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// `BPF_MAP_CREATE`.
const CMD_MAP_CREATE: u32 = 0;
/// `BPF_MAP_LOOKUP_ELEM`.
const CMD_MAP_LOOKUP_ELEM: u32 = 1;
/// `BPF_MAP_UPDATE_ELEM`.
const CMD_MAP_UPDATE_ELEM: u32 = 2;
/// `BPF_MAP_DELETE_ELEM`.
const CMD_MAP_DELETE_ELEM: u32 = 3;
/// `BPF_PROG_LOAD`.
const CMD_PROG_LOAD: u32 = 5;
/// `BPF_PROG_TEST_RUN` (also named `BPF_PROG_RUN`).
const CMD_PROG_TEST_RUN: u32 = 10;
/// `BPF_LINK_CREATE`.
const CMD_LINK_CREATE: u32 = 28;

/// `BPF_MAP_TYPE_ARRAY`.
const MAP_TYPE_ARRAY: u32 = 2;
/// `BPF_F_TEST_XDP_LIVE_FRAMES`: `BPF_PROG_TEST_RUN` of an XDP program acts on its verdicts (Linux 5.18).
const TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;

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
    ///
    /// # Safety
    ///
    /// Every pointer stored in the block must be valid, for the duration of the call, for the reads and writes
    /// `cmd` makes through it: as many bytes as the sizes in the block (or the map's key and value sizes) say,
    /// with nothing else accessing the written ones meanwhile. The kernel keeps none of them after the call.
    unsafe fn call(&mut self, cmd: u32) -> io::Result<i64> {
        // SAFETY: bpf(2) reads (and for some commands writes back) `size` bytes at `attr`: the block is a live,
        // exclusively borrowed array of ATTR_SIZE bytes, the size passed. The pointers inside it are the caller's
        // obligation (above).
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
    ///
    /// # Safety
    ///
    /// As for [`Attr::call`], and `cmd` must be a command whose result is a new descriptor.
    unsafe fn call_fd(&mut self, cmd: u32) -> io::Result<OwnedFd> {
        // SAFETY: the caller's obligations are those of `call`.
        let fd = unsafe { self.call(cmd) }?;
        // SAFETY: `cmd` returns a new descriptor on success (the caller's obligation) and `call` checked that it
        // succeeded: the descriptor is open and owned by nothing else, so the OwnedFd is its only owner.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
}

/// A BPF map with `u32` keys, and the size of its values: the lookups and updates below hand the kernel pointers
/// to a key and a value, and the kernel reads or writes as many bytes as the map was created with, whatever our
/// buffers hold. Built only by [`create_xskmap`] and [`create_array`], which know those sizes.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    value_size: u32,
}

impl Map {
    /// Creates a map of `kind` with 4-byte keys.
    fn create(kind: u32, value_size: u32, entries: u32, name: &str) -> io::Result<Map> {
        // map_type @0, key_size @4, value_size @8, max_entries @12, map_flags @16, ..., map_name @28
        let mut attr = Attr::new();
        attr.u32(0, kind)
            .u32(4, size_of::<u32>() as u32)
            .u32(8, value_size)
            .u32(12, entries)
            .name(28, name);
        // SAFETY: the block holds no pointer (the name is stored inline), and BPF_MAP_CREATE returns a new map
        // descriptor.
        let fd = unsafe { attr.call_fd(CMD_MAP_CREATE) }?;
        Ok(Map { fd, value_size })
    }

    /// Refuses a value of the wrong size (which the kernel would read or write past).
    fn check_value(&self, len: usize) -> io::Result<()> {
        if len == self.value_size as usize {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {len}-byte value for a map of {}-byte values",
                    self.value_size
                ),
            ))
        }
    }

    /// Updates or looks up element `key`, after checking the value's size.
    fn element(&self, key: u32, op: Element<'_>) -> io::Result<()> {
        let (cmd, value, len) = match op {
            Element::Update(v) => (CMD_MAP_UPDATE_ELEM, v.as_ptr() as u64, v.len()),
            Element::Lookup(v) => (CMD_MAP_LOOKUP_ELEM, v.as_mut_ptr() as u64, v.len()),
        };
        self.check_value(len)?;
        let k = key;
        // map_fd @0, key @8, value @16, flags @24 (BPF_ANY = 0)
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, &k as *const u32 as u64)
            .u64(16, value);
        // SAFETY: the kernel reads the map's key size, 4 bytes (all our maps), at `key`: `k` is a live u32. At
        // `value` it reads (BPF_MAP_UPDATE_ELEM, from a shared slice) or writes (BPF_MAP_LOOKUP_ELEM, into an
        // exclusive one) the map's value size, which `check_value` found equal to the slice's length. Both
        // borrows outlive the call, which returns no descriptor.
        unsafe { attr.call(cmd) }.map(drop)
    }
}

/// What [`Map::element`] does with a value, and the buffer it does it with: the kernel only reads an update's
/// value and writes a lookup's, so the command goes with the kind of borrow.
enum Element<'a> {
    Update(&'a [u8]),
    Lookup(&'a mut [u8]),
}

impl AsRawFd for Map {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Creates an XSKMAP of `entries` slots (one per receive queue), named `name`.
pub fn create_xskmap(entries: u32, name: &str) -> io::Result<Map> {
    // Values are socket descriptors (u32).
    Map::create(MAP_TYPE_XSKMAP, size_of::<u32>() as u32, entries, name)
}

/// Sets `map[key] = value` (for an XSKMAP: the socket descriptor serving queue `key`).
pub fn map_update(map: &Map, key: u32, value: u32) -> io::Result<()> {
    map.element(key, Element::Update(&value.to_ne_bytes()))
}

/// Sets `map[key] = value` in an XSKMAP this crate did not create (another program's: 4-byte keys and values,
/// which the kernel checks for that map type).
pub fn xskmap_update(map: BorrowedFd<'_>, key: u32, value: u32) -> io::Result<()> {
    let (k, v) = (key, value);
    // map_fd @0, key @8, value @16, flags @24 (BPF_ANY = 0)
    let mut attr = Attr::new();
    attr.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64)
        .u64(16, &v as *const u32 as u64);
    // SAFETY: an XSKMAP's keys and values are 4 bytes (the kernel refuses to create one otherwise): it reads
    // 4 bytes at `key` and at `value`, the live u32s `k` and `v`, which outlive the call; no descriptor returned.
    unsafe { attr.call(CMD_MAP_UPDATE_ELEM) }.map(drop)
}

/// Deletes `map[key]` in an XSKMAP this crate did not create (4-byte keys).
pub fn xskmap_delete(map: BorrowedFd<'_>, key: u32) -> io::Result<()> {
    let k = key;
    let mut attr = Attr::new();
    attr.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64);
    // SAFETY: an XSKMAP's keys are 4 bytes: the kernel reads 4 bytes at `key`, the live u32 `k`, which outlives
    // the call; no descriptor returned.
    unsafe { attr.call(CMD_MAP_DELETE_ELEM) }.map(drop)
}

/// Deletes `map[key]`.
pub fn map_delete(map: &Map, key: u32) -> io::Result<()> {
    let k = key;
    let mut attr = Attr::new();
    attr.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64);
    // SAFETY: the kernel reads the map's key size, 4 bytes (all our maps), at `key`: `k` is a live u32 that
    // outlives the call, which returns no descriptor.
    unsafe { attr.call(CMD_MAP_DELETE_ELEM) }.map(drop)
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
pub fn load_redirect_program(map: &Map, name: &str) -> io::Result<OwnedFd> {
    load_xdp(&redirect_program(map.as_raw_fd()), name, ATTACH_TYPE_XDP)
}

/// Loads an XDP program (`insns`, `expected_attach_type`); on a verifier refusal the error carries the verifier's
/// log.
fn load_xdp(prog: &[u64], name: &str, attach_type: u32) -> io::Result<OwnedFd> {
    let license = CString::new(LICENSE).expect("no NUL in the license");
    let mut log = vec![0u8; 16384];
    // prog_type @0, insn_cnt @4, insns @8, license @16, log_level @24, log_size @28, log_buf @32,
    // kern_version @40, prog_flags @44, prog_name @48, prog_ifindex @64, expected_attach_type @68
    let mut attr = Attr::new();
    attr.u32(0, PROG_TYPE_XDP)
        .u32(4, prog.len() as u32)
        .u64(8, prog.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .name(48, name)
        .u32(68, attach_type);
    // SAFETY: the kernel reads `insn_cnt` 8-byte instructions at `insns` (`prog`, a live slice of exactly that
    // many u64), the NUL-terminated string at `license` (a live CString), and writes at most `log_size` bytes at
    // `log_buf` (`log`, a live Vec of that length, not otherwise used until the call returns). BPF_PROG_LOAD
    // returns a new program descriptor.
    let r = unsafe { attr.call_fd(CMD_PROG_LOAD) };
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
    let mut attr = Attr::new();
    attr.u32(0, prog.as_raw_fd() as u32)
        .u32(4, ifindex)
        .u32(8, ATTACH_TYPE_XDP)
        .u32(12, flags);
    // SAFETY: the block holds no pointer, and BPF_LINK_CREATE returns a new link descriptor.
    unsafe { attr.call_fd(CMD_LINK_CREATE) }
}

/// Creates an array map of `entries` values of `value_size` bytes (keys are `u32` indices), named `name`.
pub fn create_array(value_size: u32, entries: u32, name: &str) -> io::Result<Map> {
    Map::create(MAP_TYPE_ARRAY, value_size, entries, name)
}

/// Sets `map[key]` to `value`, which must have the map's value size (an error of kind `InvalidInput` otherwise).
pub fn map_set(map: &Map, key: u32, value: &[u8]) -> io::Result<()> {
    // The kernel only reads through this pointer (BPF_MAP_UPDATE_ELEM).
    map.element(key, Element::Update(value))
}

/// Reads `map[key]` into `value`, which must have the map's value size (an error of kind `InvalidInput`
/// otherwise).
pub fn map_get(map: &Map, key: u32, value: &mut [u8]) -> io::Result<()> {
    map.element(key, Element::Lookup(value))
}

/// Helper numbers (include/uapi/linux/bpf.h, `___BPF_FUNC_MAPPER`).
const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
const HELPER_KTIME_GET_NS: i32 = 5;
const HELPER_GET_SMP_PROCESSOR_ID: i32 = 8;
const HELPER_REDIRECT: i32 = 23;
/// `XDP_DROP`.
const XDP_DROP: i32 = 1;

/// Bytes of one slot of the pacer's map (one slot per CPU, indexed by CPU number), seven `u64` in host order:
/// the time the next frame is due (ns, `CLOCK_MONOTONIC`), the interval between frames (ns; 0: no pacing),
/// frames redirected so far, how many source addresses to cycle through, the low 16 bits of the template's
/// source address, and the times the last and the first frame went.
pub const PACER_SLOT: usize = 56;
/// Offsets of the pacer slot's fields.
pub const PACER_NEXT: usize = 0;
/// See [`PACER_SLOT`].
pub const PACER_INTERVAL: usize = 8;
/// See [`PACER_SLOT`].
pub const PACER_SENT: usize = 16;
/// See [`PACER_SLOT`].
pub const PACER_FLOWS: usize = 24;
/// See [`PACER_SLOT`].
pub const PACER_BASE: usize = 32;
/// See [`PACER_SLOT`].
pub const PACER_LAST: usize = 40;
/// See [`PACER_SLOT`].
pub const PACER_FIRST: usize = 48;
/// Offset in an Ethernet + IPv6 frame of the low 16 bits of the source address (14 + 8 + 14).
pub const FRAME_SRC_LOW16: i16 = 36;

/// The traffic generator's XDP program, run by `BPF_PROG_TEST_RUN` in live-frames mode: each run is one chance
/// to send `template` out of `ifindex`. The frame goes (`bpf_redirect`) when it is due by the CPU's pacer slot,
/// which then moves its due time one interval on (or to now, when the sender fell behind: no burst to catch up);
/// otherwise it is dropped back into the test run's page pool, which costs a few tens of nanoseconds and makes the
/// pacing exact to about that. A frame that goes counts in the slot, with its time, and is written anew from the
/// template (immediate stores, four bytes each): the test run reuses its pages without copying the data again,
/// and a receiver may have changed the bytes in place (a kernel router forwarding the frame rewrites its Ethernet
/// header and hop limit, an IOAM transit node fills the trace). When the slot says so, the low 16 bits of the IPv6
/// source address are then set to `base + sent % flows` (big-endian), so that receivers hashing on addresses see
/// several flows. One slot per CPU: sender threads on different CPUs never share a counter (no atomic operation).
///
/// ```text
///  0 r6 = r1                       ; ctx
///  1 call get_smp_processor_id
///  2 *(u32 *)(r10 - 4) = r0        ; key = this CPU
///  3 r2 = r10
///  4 r2 += -4
///  5 r1 = map (64-bit pseudo load, 2 slots)
///  7 call map_lookup_elem
///  8 if r0 == 0 goto drop
///  9 r7 = r0                       ; the slot
/// 10 call ktime_get_ns
/// 11 r1 = slot.next
/// 12 if r0 < r1 goto drop          ; not due yet
/// 13 r2 = slot.interval
/// 14 r1 += r2
/// 15 if r1 >= r0 goto +1
/// 16 r1 = r0                       ; behind: next one due now
/// 17 slot.next = r1
/// 18 slot.last = r0
/// 19 r1 = slot.sent
/// 20 if r1 != 0 goto +1
/// 21 slot.first = r0
/// 22 r1 += 1
/// 23 slot.sent = r1
/// 24 r4 = ctx->data
/// 25 r5 = ctx->data_end
/// 26 r2 = r4
/// 27 r2 += len(template)
/// 28 if r2 > r5 goto drop          ; never (and the verifier's bounds check)
///    *(u32 *)(r4 + 4i) = template[4i..4i+4]   ; one store per 4 bytes, then the last bytes one by one
///    r3 = slot.flows               ; (only for templates of 38 bytes or more)
///    if r3 <= 1 goto send
///    r1 %= r3
///    r2 = slot.base
///    r1 += r2
///    r1 = htobe16(r1)
///    *(u16 *)(r4 + 36) = r1
/// send: r1 = ifindex
///    r2 = 0
///    call redirect                 ; r0 = XDP_REDIRECT
///    exit
/// drop: r0 = XDP_DROP
///    exit
/// ```
pub fn pacer_program(map_fd: i32, ifindex: u32, template: &[u8]) -> Vec<u64> {
    // Jumps are recorded with their target label and patched once the labels are placed.
    #[derive(Clone, Copy)]
    enum L {
        Drop,
        Send,
    }
    let mut p: Vec<u64> = Vec::with_capacity(48 + template.len() / 4);
    let mut jumps: Vec<(usize, L)> = Vec::new();
    let mut jump = |p: &mut Vec<u64>, code: u8, dst: u8, src: u8, imm: i32, to: L| {
        jumps.push((p.len(), to));
        p.push(insn(code, dst, src, 0, imm));
    };
    p.push(insn(0xbf, 6, 1, 0, 0)); // r6 = r1 (BPF_ALU64 | BPF_MOV | BPF_X)
    p.push(insn(0x85, 0, 0, 0, HELPER_GET_SMP_PROCESSOR_ID)); // call
    p.push(insn(0x63, 10, 0, -4, 0)); // *(u32 *)(r10 - 4) = r0 (BPF_STX | BPF_MEM | BPF_W)
    p.push(insn(0xbf, 2, 10, 0, 0)); // r2 = r10
    p.push(insn(0x07, 2, 0, 0, -4)); // r2 += -4 (BPF_ALU64 | BPF_ADD | BPF_K)
    p.push(insn(0x18, 1, PSEUDO_MAP_FD, 0, map_fd)); // r1 = map
    p.push(insn(0x00, 0, 0, 0, 0));
    p.push(insn(0x85, 0, 0, 0, HELPER_MAP_LOOKUP_ELEM)); // call
    jump(&mut p, 0x15, 0, 0, 0, L::Drop); // if r0 == 0 (BPF_JMP | BPF_JEQ | BPF_K)
    p.push(insn(0xbf, 7, 0, 0, 0)); // r7 = r0
    p.push(insn(0x85, 0, 0, 0, HELPER_KTIME_GET_NS)); // call
    p.push(insn(0x79, 1, 7, PACER_NEXT as i16, 0)); // r1 = slot.next (BPF_LDX | BPF_MEM | BPF_DW)
    jump(&mut p, 0xad, 0, 1, 0, L::Drop); // if r0 < r1 (BPF_JMP | BPF_JLT | BPF_X)
    p.push(insn(0x79, 2, 7, PACER_INTERVAL as i16, 0)); // r2 = slot.interval
    p.push(insn(0x0f, 1, 2, 0, 0)); // r1 += r2 (BPF_ALU64 | BPF_ADD | BPF_X)
    p.push(insn(0x3d, 1, 0, 1, 0)); // if r1 >= r0 goto +1 (BPF_JMP | BPF_JGE | BPF_X)
    p.push(insn(0xbf, 1, 0, 0, 0)); // r1 = r0
    p.push(insn(0x7b, 7, 1, PACER_NEXT as i16, 0)); // slot.next = r1 (BPF_STX | BPF_MEM | BPF_DW)
    p.push(insn(0x7b, 7, 0, PACER_LAST as i16, 0)); // slot.last = r0
    p.push(insn(0x79, 1, 7, PACER_SENT as i16, 0)); // r1 = slot.sent
    p.push(insn(0x55, 1, 0, 1, 0)); // if r1 != 0 goto +1 (BPF_JMP | BPF_JNE | BPF_K)
    p.push(insn(0x7b, 7, 0, PACER_FIRST as i16, 0)); // slot.first = r0
    p.push(insn(0x07, 1, 0, 0, 1)); // r1 += 1
    p.push(insn(0x7b, 7, 1, PACER_SENT as i16, 0)); // slot.sent = r1
    p.push(insn(0x61, 4, 6, 0, 0)); // r4 = ctx->data (BPF_LDX | BPF_MEM | BPF_W)
    p.push(insn(0x61, 5, 6, 4, 0)); // r5 = ctx->data_end
    p.push(insn(0xbf, 2, 4, 0, 0)); // r2 = r4
    p.push(insn(0x07, 2, 0, 0, template.len() as i32)); // r2 += len
    jump(&mut p, 0x2d, 2, 5, 0, L::Drop); // if r2 > r5 (BPF_JMP | BPF_JGT | BPF_X)
    let words = template.len() / 4;
    for i in 0..words {
        let w = i32::from_ne_bytes(template[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        p.push(insn(0x62, 4, 0, (4 * i) as i16, w)); // *(u32 *)(r4 + 4i) = w (BPF_ST | BPF_MEM | BPF_W)
    }
    for (i, &b) in template.iter().enumerate().skip(4 * words) {
        p.push(insn(0x72, 4, 0, i as i16, b as i32)); // *(u8 *)(r4 + i) = b (BPF_ST | BPF_MEM | BPF_B)
    }
    if template.len() >= FRAME_SRC_LOW16 as usize + 2 {
        p.push(insn(0x79, 3, 7, PACER_FLOWS as i16, 0)); // r3 = slot.flows
        jump(&mut p, 0xb5, 3, 0, 1, L::Send); // if r3 <= 1 (BPF_JMP | BPF_JLE | BPF_K)
        p.push(insn(0x9f, 1, 3, 0, 0)); // r1 %= r3 (BPF_ALU64 | BPF_MOD | BPF_X)
        p.push(insn(0x79, 2, 7, PACER_BASE as i16, 0)); // r2 = slot.base
        p.push(insn(0x0f, 1, 2, 0, 0)); // r1 += r2
        p.push(insn(0xdc, 1, 0, 0, 16)); // r1 = htobe16(r1) (BPF_ALU | BPF_END | BPF_TO_BE)
        p.push(insn(0x6b, 4, 1, FRAME_SRC_LOW16, 0)); // *(u16 *)(r4 + 36) = r1 (BPF_STX | BPF_MEM | BPF_H)
    }
    let send = p.len();
    p.push(insn(0xb7, 1, 0, 0, ifindex as i32)); // r1 = ifindex
    p.push(insn(0xb7, 2, 0, 0, 0)); // r2 = 0
    p.push(insn(0x85, 0, 0, 0, HELPER_REDIRECT)); // call
    p.push(insn(0x95, 0, 0, 0, 0)); // exit
    let drop = p.len();
    p.push(insn(0xb7, 0, 0, 0, XDP_DROP)); // r0 = XDP_DROP
    p.push(insn(0x95, 0, 0, 0, 0)); // exit
    for (at, to) in jumps {
        let target = match to {
            L::Drop => drop,
            L::Send => send,
        };
        // Jump offsets count from the instruction after the jump: bytes 2..4 of the instruction.
        let off = (target as i64 - at as i64 - 1) as i16;
        let mut b = p[at].to_le_bytes();
        b[2..4].copy_from_slice(&off.to_le_bytes());
        p[at] = u64::from_le_bytes(b);
    }
    p
}

/// Loads [`pacer_program`] for `map`, `ifindex` and `template`.
pub fn load_pacer_program(
    map: &Map,
    ifindex: u32,
    template: &[u8],
    name: &str,
) -> io::Result<OwnedFd> {
    load_xdp(&pacer_program(map.as_raw_fd(), ifindex, template), name, 0)
}

/// The sink program: `r0 = XDP_DROP; exit` (and [`pass_program`]: `XDP_PASS`).
pub fn drop_program() -> [u64; 2] {
    [insn(0xb7, 0, 0, 0, XDP_DROP), insn(0x95, 0, 0, 0, 0)]
}

/// `r0 = XDP_PASS; exit`: gives a veth the NAPI instance that frames redirected into its peer need, and does
/// nothing else.
pub fn pass_program() -> [u64; 2] {
    [insn(0xb7, 0, 0, 0, XDP_PASS), insn(0x95, 0, 0, 0, 0)]
}

/// Loads a program of [`drop_program`] or [`pass_program`] for attaching with [`link_create`].
pub fn load_verdict_program(prog: &[u64], name: &str) -> io::Result<OwnedFd> {
    load_xdp(prog, name, ATTACH_TYPE_XDP)
}

/// Runs the XDP program `prog` `repeat` times over `frame` in live-frames mode (`BPF_PROG_TEST_RUN` with
/// `BPF_F_TEST_XDP_LIVE_FRAMES`, Linux 5.18): its verdicts are acted on, so a redirected frame is transmitted.
/// `batch` frames are processed between two flushes of the redirect queues (at most 256). A signal delivered to
/// the calling thread ends the run early with `EINTR`. Each call sets up and tears down a page pool, which can
/// wait for an RCU grace period (milliseconds): make calls long.
pub fn test_run_live(prog: &OwnedFd, frame: &[u8], repeat: u32, batch: u32) -> io::Result<()> {
    // prog_fd @0, retval @4, data_size_in @8, data_size_out @12, data_in @16, data_out @24, repeat @32,
    // duration @36, ctx_size_in @40, ctx_size_out @44, ctx_in @48, ctx_out @56, flags @64, cpu @68,
    // batch_size @72
    let mut attr = Attr::new();
    attr.u32(0, prog.as_raw_fd() as u32)
        .u32(8, frame.len() as u32)
        .u64(16, frame.as_ptr() as u64)
        .u32(32, repeat)
        .u32(64, TEST_XDP_LIVE_FRAMES)
        .u32(72, batch);
    // SAFETY: the kernel reads `data_size_in` bytes at `data_in` (`frame`, a live slice of exactly that length)
    // and copies them into pages of its own; with `data_out`, `ctx_in` and `ctx_out` null it writes no memory of
    // ours. The call returns no descriptor.
    unsafe { attr.call(CMD_PROG_TEST_RUN) }.map(drop)
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

    /// The generator program's jumps land on its labels, and the template is stored four bytes at a time (then
    /// byte by byte), at the offsets it came from.
    #[test]
    fn pacer_program_layout() {
        let t: Vec<u8> = (0..63u8).collect();
        let p = pacer_program(5, 7, &t);
        let b = |i: usize| p[i].to_le_bytes();
        let target =
            |i: usize| (i as i64 + 1 + i16::from_le_bytes([b(i)[2], b(i)[3]]) as i64) as usize;
        let drop = p.len() - 2;
        assert_eq!(b(drop), [0xb7, 0, 0, 0, 1, 0, 0, 0]); // r0 = XDP_DROP
        let send = p.len() - 6;
        assert_eq!(b(send), [0xb7, 1, 0, 0, 7, 0, 0, 0]); // r1 = ifindex 7
        assert_eq!(b(send + 2), [0x85, 0, 0, 0, 23, 0, 0, 0]); // call bpf_redirect
        for (i, to) in [(8, drop), (12, drop), (28, drop), (send - 6, send)] {
            assert_eq!(target(i), to, "jump at {i}");
        }
        // 15 words, then 3 bytes: *(u32 *)(r4 + 4) = 04 05 06 07 and *(u8 *)(r4 + 62) = 62.
        assert_eq!(b(30), [0x62, 4, 4, 0, 4, 5, 6, 7]);
        assert_eq!(b(29 + 15 + 2), [0x72, 4, 62, 0, 62, 0, 0, 0]);
        // A template too short to carry an IPv6 source: no flow variation, the stores jump straight to send.
        let short = pacer_program(5, 7, &t[..20]);
        assert_eq!(short.len(), 29 + 5 + 6);
    }
}
