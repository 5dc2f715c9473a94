//! Reading pcap / pcapng captures and writing pcapng (one interface block per device) and pcap.
//!
//! Formats: classic pcap (both byte orders, microsecond magic 0xa1b2c3d4 and nanosecond magic 0xa1b23c4d),
//! pcapng (draft-ietf-opsawg-pcapng: SHB, IDB, EPB, SPB, any byte order; other blocks skipped).
//! A truncated or corrupt capture is an error naming the frame/block and byte offset; never a partial result.
//!
//! # What counts as truncated
//!
//! Neither format stores a frame count, so a file cut *exactly* at a record (pcap) or block (pcapng) boundary is
//! indistinguishable from a shorter capture and is accepted: it is a valid file holding the frames before the cut
//! (a pcap file header alone is a valid zero-frame capture). A file cut anywhere else is an error
//! ([`PcapError::Truncated`]), never a silently shorter list of frames.
//!
//! # Error naming
//!
//! Frame and block numbers are 1-based (frame numbers match Wireshark's `frame.number`). Truncation names are
//! `"file magic"`, `"file header"` (offset 0), `"frame N header"` (offset of the record), `"frame N data"`
//! (offset of the data), `"block N header"` (offset of the block) and `"block N body"` (offset of the body,
//! block start + 8). Corrupt errors name the frame/block and point at the offending field.
//!
//! # Strictness
//!
//! The reader is stricter than libpcap/Wireshark in a few places, so that every accepted frame satisfies
//! `data.len() <= orig_len` and timestamps have one spelling:
//! * pcap: captured length above [`PCAP_MAX_SNAPLEN`], above a non-zero file snaplen, or above the original
//!   length is [`PcapError::Corrupt`]; so is a timestamp fraction >= 10^6 (µs files) or >= 10^9 (ns files);
//!   the file header major version must be 2.
//! * pcapng: an EPB captured length above the original length or above the interface's non-zero snaplen is
//!   corrupt; SHB major version must be 1.
//!
//! Obsolete Packet Blocks (type 2) and all other block types are skipped (only their framing is checked).
//! Simple Packet Blocks carry no timestamp: their frames get `ts_ns == 0`.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

/// Link type Ethernet (LINKTYPE_ETHERNET).
pub const LINKTYPE_ETHERNET: u16 = 1;

/// Largest captured length accepted in a classic pcap record, and the snaplen [`pcap_bytes`] writes
/// (libpcap's maximum snapshot length, 262144).
pub const PCAP_MAX_SNAPLEN: u32 = 262_144;

/// Classic pcap magic, microsecond timestamps.
const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
/// Classic pcap magic, nanosecond timestamps.
const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
/// pcap file header length (draft-ietf-opsawg-pcap §4).
const PCAP_FILE_HDR_LEN: usize = 24;
/// pcap packet record header length (draft-ietf-opsawg-pcap §5).
const PCAP_REC_HDR_LEN: usize = 16;

/// pcapng block types (draft-ietf-opsawg-pcapng §4.1–§4.4).
const BT_SHB: u32 = 0x0a0d_0d0a;
const BT_IDB: u32 = 0x0000_0001;
const BT_SPB: u32 = 0x0000_0003;
const BT_EPB: u32 = 0x0000_0006;
/// pcapng SHB byte-order magic (§4.1).
const PCAPNG_BOM: u32 = 0x1a2b_3c4d;
/// pcapng option codes (§3.5, §4.2).
const OPT_ENDOFOPT: u16 = 0;
const OPT_IF_NAME: u16 = 2;
const OPT_IF_DESCRIPTION: u16 = 3;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;
/// `opt_comment` (§3.5): a UTF-8 comment, in any block.
const OPT_COMMENT: u16 = 1;
/// `epb_flags` (§4.3.1): a 32-bit flags word.
const OPT_EPB_FLAGS: u16 = 2;

/// `epb_flags` direction bits (§4.3.1, bits 0-1): the frame came in on the interface.
pub const EPB_INBOUND: u32 = 0b01;
/// `epb_flags` direction bits (§4.3.1, bits 0-1): the frame went out of the interface.
pub const EPB_OUTBOUND: u32 = 0b10;
/// Minimum block total lengths: generic (§3.1), SHB, IDB, SPB, EPB.
const MIN_BLOCK_LEN: usize = 12;
const MIN_SHB_LEN: usize = 28;
const MIN_IDB_LEN: usize = 20;
const MIN_SPB_LEN: usize = 16;
const MIN_EPB_LEN: usize = 32;

/// Largest captured length [`pcapng_bytes`] stores in one EPB (keeps the 32-bit block length from overflowing).
const PCAPNG_MAX_WRITE_CAPLEN: usize = (u32::MAX as usize - 64) & !3;

const NS_PER_SEC: u64 = 1_000_000_000;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedFrame {
    /// Timestamp in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Captured bytes.
    pub data: Vec<u8>,
    /// Original length on the wire (>= data.len()).
    pub orig_len: u32,
    /// Link type of the interface it was captured on.
    pub linktype: u16,
}

/// A capture file error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PcapError {
    /// Not a pcap or pcapng file.
    #[error("not a pcap or pcapng file (magic {0:#010x})")]
    BadMagic(u32),
    /// The file ends in the middle of a header or record.
    #[error("truncated capture: {what} at byte offset {offset}")]
    Truncated {
        /// What was being read ("frame 3 header", "block 5 body", ...).
        what: String,
        /// Byte offset where it starts.
        offset: usize,
    },
    /// A structurally invalid field.
    #[error("corrupt capture: {what} at byte offset {offset}")]
    Corrupt {
        /// What is wrong.
        what: String,
        /// Byte offset.
        offset: usize,
    },
    /// I/O error (message).
    #[error("{0}")]
    Io(String),
}

fn truncated(what: String, offset: usize) -> PcapError {
    PcapError::Truncated { what, offset }
}

fn corrupt(what: String, offset: usize) -> PcapError {
    PcapError::Corrupt { what, offset }
}

/// Byte order of a pcap file or pcapng section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
}

impl Endian {
    fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    fn i64(self, b: [u8; 8]) -> i64 {
        match self {
            Endian::Little => i64::from_le_bytes(b),
            Endian::Big => i64::from_be_bytes(b),
        }
    }
}

/// `N` bytes at `off`, or `None` if they are not all inside `b`.
fn take<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    b.get(off..off.checked_add(N)?)?.try_into().ok()
}

/// Like [`take`] for callers that have already checked the bounds; out-of-range reads give zeros instead of
/// panicking.
fn at<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    take(b, off).unwrap_or([0; N])
}

/// Parses a whole capture held in memory: [`CaptureReader`] over the bytes, collected.
///
/// The format is chosen from the first 4 bytes: a pcap magic in either byte order, or the pcapng SHB block
/// type 0x0A0D0D0A; anything else is [`PcapError::BadMagic`] (the 4 bytes read big-endian). Fewer than 4 bytes
/// is `Truncated { what: "file magic", offset: 0 }`.
pub fn read_capture(bytes: &[u8]) -> Result<Vec<CapturedFrame>, PcapError> {
    CaptureReader::new(bytes)?.collect()
}

/// A capture read frame by frame from any [`Read`] (a [`BufReader`] over a file: [`CaptureReader::open`]),
/// holding one record or block at a time, so memory stays flat in the capture's length.
///
/// The checks and errors are those of [`read_capture`] (which is this reader, collected): the same frames,
/// and the same error naming the same frame or block and byte offset, as soon as the reader reaches it. The
/// frames before a damaged one have then already been returned; a caller that must not act on a partial
/// capture (an atomic output file) discards what it made of them. After an error the iterator ends.
#[derive(Debug)]
pub struct CaptureReader<R: Read> {
    src: R,
    /// What names the source in I/O errors ("reading PATH").
    name: String,
    /// The current record or block, from its first byte.
    buf: Vec<u8>,
    /// Byte offset of `buf[0]` in the capture.
    off: usize,
    /// Frames returned so far.
    frames: usize,
    /// pcapng: the interface id of the frame returned last.
    last_iface: Option<u32>,
    format: Format,
}

/// The capture format and what the reader keeps of its headers.
#[derive(Debug)]
enum Format {
    /// Classic pcap: the file header's byte order, snaplen, link type, timestamp fraction limit and multiplier.
    Pcap {
        e: Endian,
        snaplen: u32,
        linktype: u16,
        frac_limit: u32,
        frac_mul: u64,
    },
    /// pcapng: the current section's byte order and interfaces, the 1-based number of the next block.
    Pcapng {
        e: Endian,
        ifaces: Vec<Iface>,
        block_no: usize,
    },
    /// After the end or an error.
    Done,
}

impl CaptureReader<BufReader<File>> {
    /// Opens a capture file for reading frame by frame. I/O failures become [`PcapError::Io`] with the path
    /// in the message.
    pub fn open(path: &Path) -> Result<Self, PcapError> {
        let name = format!("reading {}", path.display());
        let f = File::open(path).map_err(|err| PcapError::Io(format!("{name}: {err}")))?;
        CaptureReader::with_name(BufReader::with_capacity(1 << 16, f), name)
    }
}

impl CaptureReader<Box<dyn Read>> {
    /// Opens a capture for reading frame by frame: standard input for `-`, else the file (as [`open`](
    /// CaptureReader::open)).
    pub fn open_input(path: &Path) -> Result<Self, PcapError> {
        if path.as_os_str() == "-" {
            let src: Box<dyn Read> = Box::new(BufReader::with_capacity(1 << 16, std::io::stdin()));
            return CaptureReader::with_name(src, "reading standard input".into());
        }
        let name = format!("reading {}", path.display());
        let f = File::open(path).map_err(|err| PcapError::Io(format!("{name}: {err}")))?;
        CaptureReader::with_name(Box::new(BufReader::with_capacity(1 << 16, f)), name)
    }
}

impl<R: Read> CaptureReader<R> {
    /// Reads the file header (pcap) or checks the first block type (pcapng); the frames follow by iteration.
    pub fn new(src: R) -> Result<Self, PcapError> {
        CaptureReader::with_name(src, "reading capture".into())
    }

    fn with_name(src: R, name: String) -> Result<Self, PcapError> {
        let mut r = CaptureReader {
            src,
            name,
            buf: Vec::with_capacity(2048),
            off: 0,
            frames: 0,
            last_iface: None,
            format: Format::Done,
        };
        if !r.fill(4)? {
            return Err(truncated("file magic".into(), 0));
        }
        let magic: [u8; 4] = at(&r.buf, 0);
        let le = u32::from_le_bytes(magic);
        let be = u32::from_be_bytes(magic);
        r.format = match (le, be) {
            (PCAP_MAGIC_US, _) => r.pcap_header(Endian::Little, false)?,
            (PCAP_MAGIC_NS, _) => r.pcap_header(Endian::Little, true)?,
            (_, PCAP_MAGIC_US) => r.pcap_header(Endian::Big, false)?,
            (_, PCAP_MAGIC_NS) => r.pcap_header(Endian::Big, true)?,
            // The first block's type stays in `buf`: pcapng_next starts from it.
            (BT_SHB, _) => Format::Pcapng {
                e: Endian::Little,
                ifaces: Vec::new(),
                block_no: 1,
            },
            _ => return Err(PcapError::BadMagic(be)),
        };
        Ok(r)
    }

    /// Makes `buf` hold at least `len` bytes of the current unit, reading what is missing; `false` if the
    /// capture ends first. (Reads through `take`, so a length field claiming gigabytes allocates only as much
    /// as the file really holds.)
    fn fill(&mut self, len: usize) -> Result<bool, PcapError> {
        let have = self.buf.len();
        if have >= len {
            return Ok(true);
        }
        let want = (len - have) as u64;
        let got = (&mut self.src)
            .take(want)
            .read_to_end(&mut self.buf)
            .map_err(|err| PcapError::Io(format!("{}: {err}", self.name)))?;
        Ok(got as u64 == want)
    }

    /// The interface of the frame returned last, from its section's Interface Description Block (pcapng);
    /// None for classic pcap, which has no interfaces, and before the first frame.
    pub fn interface(&self) -> Option<Interface> {
        let Format::Pcapng { ifaces, .. } = &self.format else {
            return None;
        };
        let id = self.last_iface?;
        let i = ifaces.get(usize::try_from(id).ok()?)?;
        Some(Interface {
            id,
            name: i.name.clone(),
            description: i.description.clone(),
        })
    }

    /// Starts the next unit at the end of the current one.
    fn advance(&mut self) {
        self.off += self.buf.len();
        self.buf.clear();
    }

    /// Classic pcap (draft-ietf-opsawg-pcap).
    ///
    /// File header (§4), 24 bytes, in the byte order given by the magic:
    /// ```text
    ///  0 magic  4 major(u16) 6 minor(u16)  8 reserved1/thiszone  12 reserved2/sigfigs  16 snaplen  20 linktype
    /// ```
    fn pcap_header(&mut self, e: Endian, nanos: bool) -> Result<Format, PcapError> {
        if !self.fill(PCAP_FILE_HDR_LEN)? {
            return Err(truncated("file header".into(), 0));
        }
        let hdr = &self.buf;
        let major = e.u16(at(hdr, 4));
        let minor = e.u16(at(hdr, 6));
        if major != 2 {
            return Err(corrupt(
                format!("file header: unsupported pcap version {major}.{minor}"),
                4,
            ));
        }
        let snaplen = e.u32(at(hdr, 16));
        // §4: the low 16 bits are the link type; the upper bits carry FCS information, which we ignore.
        let linktype = (e.u32(at(hdr, 20)) & 0xffff) as u16;
        let (frac_limit, frac_mul) = if nanos {
            (1_000_000_000, 1)
        } else {
            (1_000_000, 1_000)
        };
        self.advance();
        Ok(Format::Pcap {
            e,
            snaplen,
            linktype,
            frac_limit,
            frac_mul,
        })
    }

    /// The next classic pcap record. Packet record (§5):
    /// `0 ts_sec  4 ts_frac (µs or ns)  8 captured length  12 original length  16 data`.
    fn pcap_next(&mut self) -> Result<Option<CapturedFrame>, PcapError> {
        let Format::Pcap {
            e,
            snaplen,
            linktype,
            frac_limit,
            frac_mul,
        } = self.format
        else {
            return Ok(None);
        };
        let off = self.off;
        let n = self.frames + 1;
        if !self.fill(PCAP_REC_HDR_LEN)? {
            if self.buf.is_empty() {
                return Ok(None);
            }
            return Err(truncated(format!("frame {n} header"), off));
        }
        let rec: [u8; PCAP_REC_HDR_LEN] = at(&self.buf, 0);
        let ts_sec = e.u32(at(&rec, 0));
        let ts_frac = e.u32(at(&rec, 4));
        let incl = e.u32(at(&rec, 8));
        let orig = e.u32(at(&rec, 12));
        if ts_frac >= frac_limit {
            return Err(corrupt(
                format!("frame {n} header: timestamp fraction {ts_frac} not below {frac_limit}"),
                off + 4,
            ));
        }
        if incl > PCAP_MAX_SNAPLEN {
            return Err(corrupt(
                format!(
                    "frame {n} header: captured length {incl} exceeds maximum {PCAP_MAX_SNAPLEN}"
                ),
                off + 8,
            ));
        }
        if snaplen != 0 && incl > snaplen {
            return Err(corrupt(
                format!(
                    "frame {n} header: captured length {incl} exceeds snapshot length {snaplen}"
                ),
                off + 8,
            ));
        }
        if incl > orig {
            return Err(corrupt(
                format!("frame {n} header: captured length {incl} exceeds original length {orig}"),
                off + 8,
            ));
        }
        let data_off = off + PCAP_REC_HDR_LEN;
        // incl <= PCAP_MAX_SNAPLEN: the sum cannot overflow.
        if !self.fill(PCAP_REC_HDR_LEN + incl as usize)? {
            return Err(truncated(format!("frame {n} data"), data_off));
        }
        let frame = CapturedFrame {
            // u32::MAX * 10^9 + (10^9 - 1) < 2^64: cannot overflow.
            ts_ns: u64::from(ts_sec) * NS_PER_SEC + u64::from(ts_frac) * frac_mul,
            data: self.buf[PCAP_REC_HDR_LEN..].to_vec(),
            orig_len: orig,
            linktype,
        };
        self.advance();
        Ok(Some(frame))
    }

    /// The next frame of a pcapng file (draft-ietf-opsawg-pcapng), skipping blocks that carry none. General
    /// block layout (§3.1), in the section's byte order:
    /// ```text
    ///  0 block type  4 block total length  8 body ...  total-4 block total length (copy)
    /// ```
    fn pcapng_next(&mut self) -> Result<Option<CapturedFrame>, PcapError> {
        loop {
            let (block_no, mut e) = match self.format {
                Format::Pcapng { e, block_no, .. } => (block_no, e),
                _ => return Ok(None),
            };
            let off = self.off;
            let hdr_err = || truncated(format!("block {block_no} header"), off);
            // (Block 1's type was read as the file magic and is still in `buf`.)
            let have_type = self.fill(4)?;
            if !have_type {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(hdr_err());
            }
            let ty_raw: [u8; 4] = at(&self.buf, 0);
            // The SHB type is a byte palindrome, so it can be recognised before the byte order is known.
            if u32::from_le_bytes(ty_raw) == BT_SHB {
                // §4.1: the byte-order magic follows the block total length.
                if !self.fill(12)? {
                    return Err(hdr_err());
                }
                let bom: [u8; 4] = at(&self.buf, 8);
                e = if u32::from_le_bytes(bom) == PCAPNG_BOM {
                    Endian::Little
                } else if u32::from_be_bytes(bom) == PCAPNG_BOM {
                    Endian::Big
                } else {
                    return Err(corrupt(
                        format!(
                            "block {block_no} (section header): byte-order magic {:#010x}",
                            u32::from_be_bytes(bom)
                        ),
                        off + 8,
                    ));
                };
                if let Format::Pcapng { e: se, ifaces, .. } = &mut self.format {
                    *se = e;
                    // A new section: interface ids restart at 0.
                    ifaces.clear();
                }
            } else if block_no == 1 {
                return Err(corrupt("block 1: not a section header block".into(), off));
            }
            let ty = e.u32(ty_raw);
            if !self.fill(8)? {
                return Err(hdr_err());
            }
            let total = e.u32(at(&self.buf, 4)) as usize;
            if total < MIN_BLOCK_LEN || !total.is_multiple_of(4) {
                return Err(corrupt(
                    format!(
                        "block {block_no}: total length {total} is not a multiple of 4 of at least 12"
                    ),
                    off + 4,
                ));
            }
            if !self.fill(total)? {
                return Err(truncated(format!("block {block_no} body"), off + 8));
            }
            let frame = self.pcapng_block(ty, e, block_no, off, total)?;
            if let Format::Pcapng { block_no, .. } = &mut self.format {
                *block_no += 1;
            }
            self.advance();
            if frame.is_some() {
                return Ok(frame);
            }
        }
    }

    /// Checks one whole block (in `buf`, `total` bytes at offset `off`) and returns its frame, if it has one.
    fn pcapng_block(
        &mut self,
        ty: u32,
        e: Endian,
        block_no: usize,
        off: usize,
        total: usize,
    ) -> Result<Option<CapturedFrame>, PcapError> {
        let Format::Pcapng { ifaces, .. } = &mut self.format else {
            return Ok(None);
        };
        let block = &self.buf[..total];
        let trailer = e.u32(at(block, total - 4)) as usize;
        if trailer != total {
            return Err(corrupt(
                format!(
                    "block {block_no}: trailing total length {trailer} differs from leading {total}"
                ),
                off + total - 4,
            ));
        }
        let body = &block[8..total - 4];
        let body_off = off + 8;
        let too_short = |name: &str, min: usize| {
            corrupt(
                format!("block {block_no} ({name}): total length {total} below minimum {min}"),
                off + 4,
            )
        };
        let n = self.frames + 1;
        match ty {
            BT_SHB => {
                // §4.1: 8 magic(4) major(2) minor(2) section length(8) options
                if total < MIN_SHB_LEN {
                    return Err(too_short("section header", MIN_SHB_LEN));
                }
                let major = e.u16(at(body, 4));
                let minor = e.u16(at(body, 6));
                if major != 1 {
                    return Err(corrupt(
                        format!(
                            "block {block_no} (section header): unsupported pcapng version {major}.{minor}"
                        ),
                        body_off + 4,
                    ));
                }
                Ok(None)
            }
            BT_IDB => {
                // §4.2: 8 linktype(2) reserved(2) snaplen(4) options
                if total < MIN_IDB_LEN {
                    return Err(too_short("interface description", MIN_IDB_LEN));
                }
                let o = parse_idb_options(&body[8..], body_off + 8, e, block_no)?;
                ifaces.push(Iface {
                    linktype: e.u16(at(body, 0)),
                    snaplen: e.u32(at(body, 4)),
                    tsresol: o.tsresol,
                    tsoffset_s: o.tsoffset,
                    name: o.name,
                    description: o.description,
                });
                Ok(None)
            }
            BT_EPB => {
                // §4.3: 8 interface id  12 ts high  16 ts low  20 captured len  24 original len  28 data, options
                let name = format!("block {block_no} (enhanced packet, frame {n})");
                if total < MIN_EPB_LEN {
                    return Err(too_short(
                        &format!("enhanced packet, frame {n}"),
                        MIN_EPB_LEN,
                    ));
                }
                let if_id = e.u32(at(body, 0));
                let iface = usize::try_from(if_id)
                    .ok()
                    .and_then(|i| ifaces.get(i))
                    .ok_or_else(|| {
                        corrupt(
                            format!(
                                "{name}: interface id {if_id} not defined ({} in section)",
                                ifaces.len()
                            ),
                            body_off,
                        )
                    })?;
                let ts = (u64::from(e.u32(at(body, 4))) << 32) | u64::from(e.u32(at(body, 8)));
                let caplen = e.u32(at(body, 12));
                let orig = e.u32(at(body, 16));
                if caplen > orig {
                    return Err(corrupt(
                        format!("{name}: captured length {caplen} exceeds original length {orig}"),
                        body_off + 12,
                    ));
                }
                if iface.snaplen != 0 && caplen > iface.snaplen {
                    return Err(corrupt(
                        format!(
                            "{name}: captured length {caplen} exceeds snapshot length {}",
                            iface.snaplen
                        ),
                        body_off + 12,
                    ));
                }
                let room = body.len() - 20;
                let padded = (caplen as usize).div_ceil(4).saturating_mul(4);
                if padded > room {
                    return Err(corrupt(
                        format!("{name}: captured length {caplen} overruns the block"),
                        body_off + 12,
                    ));
                }
                let ts_ns = iface.tsresol.to_ns(ts, iface.tsoffset_s).ok_or_else(|| {
                    corrupt(format!("{name}: timestamp out of range"), body_off + 4)
                })?;
                self.last_iface = Some(if_id);
                Ok(Some(CapturedFrame {
                    ts_ns,
                    data: body[20..20 + caplen as usize].to_vec(),
                    orig_len: orig,
                    linktype: iface.linktype,
                }))
            }
            BT_SPB => {
                // §4.4: 8 original len  12 data (captured length = min(original length, snaplen of interface 0))
                let name = format!("block {block_no} (simple packet, frame {n})");
                if total < MIN_SPB_LEN {
                    return Err(too_short(&format!("simple packet, frame {n}"), MIN_SPB_LEN));
                }
                let iface = ifaces
                    .first()
                    .ok_or_else(|| corrupt(format!("{name}: no interface 0 in section"), off))?;
                let orig = e.u32(at(body, 0));
                let caplen = if iface.snaplen != 0 {
                    orig.min(iface.snaplen)
                } else {
                    orig
                };
                let room = body.len() - 4;
                if (caplen as usize).div_ceil(4).saturating_mul(4) != room {
                    return Err(corrupt(
                        format!(
                            "{name}: captured length {caplen} does not match block data length {room}"
                        ),
                        body_off,
                    ));
                }
                self.last_iface = Some(0);
                Ok(Some(CapturedFrame {
                    ts_ns: 0,
                    data: body[4..4 + caplen as usize].to_vec(),
                    orig_len: orig,
                    linktype: iface.linktype,
                }))
            }
            _ => Ok(None),
        }
    }
}

impl<R: Read> Iterator for CaptureReader<R> {
    type Item = Result<CapturedFrame, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        let r = match self.format {
            Format::Pcap { .. } => self.pcap_next(),
            Format::Pcapng { .. } => self.pcapng_next(),
            Format::Done => return None,
        };
        match r {
            Ok(Some(f)) => {
                self.frames += 1;
                Some(Ok(f))
            }
            Ok(None) => {
                self.format = Format::Done;
                None
            }
            Err(err) => {
                self.format = Format::Done;
                Some(Err(err))
            }
        }
    }
}

/// `if_tsresol` (draft-ietf-opsawg-pcapng §4.2): MSB clear = 10^-v seconds, MSB set = 2^-v seconds.
#[derive(Debug, Clone, Copy)]
enum TsResol {
    Pow10(u8),
    Pow2(u8),
}

impl TsResol {
    fn from_byte(b: u8) -> Self {
        if b & 0x80 == 0 {
            TsResol::Pow10(b)
        } else {
            TsResol::Pow2(b & 0x7f)
        }
    }

    /// Converts a timestamp in interface units plus `if_tsoffset` seconds to nanoseconds (rounding down);
    /// `None` if the result is not in `0..=u64::MAX`.
    fn to_ns(self, units: u64, offset_s: i64) -> Option<u64> {
        let u = u128::from(units);
        let ns: u128 = match self {
            TsResol::Pow10(v) if v <= 9 => u * 10u128.pow(u32::from(9 - v)),
            // 10^(v-9) beyond u128 means every representable timestamp is below 1 ns.
            TsResol::Pow10(v) => 10u128.checked_pow(u32::from(v - 9)).map_or(0, |d| u / d),
            // u < 2^64 and 10^9 < 2^30, so the product fits; v <= 127.
            TsResol::Pow2(v) => (u * u128::from(NS_PER_SEC)) >> v,
        };
        let total = i128::try_from(ns).ok()? + i128::from(offset_s) * i128::from(NS_PER_SEC);
        u64::try_from(total).ok()
    }
}

/// What an Interface Description Block tells us.
#[derive(Debug, Clone)]
struct Iface {
    linktype: u16,
    snaplen: u32,
    tsresol: TsResol,
    tsoffset_s: i64,
    /// `if_name` and `if_description`, when the block has them.
    name: Option<String>,
    description: Option<String>,
}

/// The interface a pcapng frame was captured on, as its Interface Description Block says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Interface id: the IDB's index in its section (what tshark calls `frame.interface_id`).
    pub id: u32,
    /// The `if_name` option (`frame.interface_name`).
    pub name: Option<String>,
    /// The `if_description` option (`frame.interface_description`).
    pub description: Option<String>,
}

/// What an IDB's options say: `if_tsresol` (default 10^-6), `if_tsoffset` (default 0), `if_name`, `if_description`.
struct IdbOptions {
    tsresol: TsResol,
    tsoffset: i64,
    name: Option<String>,
    description: Option<String>,
}

/// Walks IDB options (§3.5: code(2) length(2) value padded to 4). Names and descriptions are UTF-8 (§3.5);
/// invalid bytes are shown replaced, never refused.
fn parse_idb_options(
    opts: &[u8],
    base: usize,
    e: Endian,
    block_no: usize,
) -> Result<IdbOptions, PcapError> {
    let mut tsresol = TsResol::Pow10(6);
    let mut tsoffset = 0i64;
    let (mut name, mut description) = (None, None);
    // Strings may carry trailing NULs (some writers count one in the length).
    let text = |v: &[u8]| {
        String::from_utf8_lossy(v)
            .trim_end_matches('\0')
            .to_string()
    };
    let mut p = 0usize;
    while p < opts.len() {
        let what = || format!("block {block_no} (interface description) option");
        let h = take::<4>(opts, p)
            .ok_or_else(|| corrupt(format!("{}: header overruns the block", what()), base + p))?;
        let code = e.u16(at(&h, 0));
        let len = usize::from(e.u16(at(&h, 2)));
        let value = opts
            .get(p + 4..p + 4 + len.next_multiple_of(4))
            .ok_or_else(|| {
                corrupt(
                    format!("{} {code}: length {len} overruns the block", what()),
                    base + p,
                )
            })?;
        let value = &value[..len];
        match code {
            OPT_ENDOFOPT => break,
            OPT_IF_TSRESOL => match value {
                [b] => tsresol = TsResol::from_byte(*b),
                _ => {
                    return Err(corrupt(
                        format!("{} if_tsresol: length {len}, expected 1", what()),
                        base + p + 2,
                    ));
                }
            },
            OPT_IF_TSOFFSET => match take::<8>(value, 0) {
                Some(v) if len == 8 => tsoffset = e.i64(v),
                _ => {
                    return Err(corrupt(
                        format!("{} if_tsoffset: length {len}, expected 8", what()),
                        base + p + 2,
                    ));
                }
            },
            OPT_IF_NAME => name = Some(text(value)),
            OPT_IF_DESCRIPTION => description = Some(text(value)),
            _ => {}
        }
        p += 4 + len.next_multiple_of(4);
    }
    Ok(IdbOptions {
        tsresol,
        tsoffset,
        name,
        description,
    })
}

/// Reads and parses a capture file, every frame in memory ([`CaptureReader::open`] collected; tools that go
/// through a capture once iterate the reader instead).
///
/// I/O failures become [`PcapError::Io`] with the path in the message.
pub fn read_file(path: &Path) -> Result<Vec<CapturedFrame>, PcapError> {
    CaptureReader::open(path)?.collect()
}

/// One frame to write: which interface (index into the device list), timestamp, bytes.
#[derive(Debug, Clone, Copy)]
pub struct OutFrame<'a> {
    /// Index into the `devices` slice given to the writer.
    pub iface: usize,
    /// Timestamp in nanoseconds.
    pub ts_ns: u64,
    /// Bytes.
    pub data: &'a [u8],
}

/// The options of one Enhanced Packet Block ([`PcapngWriter::write_with`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct EpbOptions<'a> {
    /// `epb_flags` (§4.3.1): direction in bits 0-1 ([`EPB_INBOUND`], [`EPB_OUTBOUND`]); None: no option.
    pub flags: Option<u32>,
    /// `opt_comment` (§3.5): the packet's comment; None: no option.
    pub comment: Option<&'a str>,
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// Appends one pcapng block (§3.1) whose body is written by `body`; fills in both total lengths.
fn put_block(out: &mut Vec<u8>, ty: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    put_u32(out, ty);
    put_u32(out, 0);
    body(out);
    pad4(out);
    let total = u32::try_from(out.len() - start + 4).unwrap_or(u32::MAX);
    put_u32(out, total);
    out[start + 4..start + 8].copy_from_slice(&total.to_le_bytes());
}

/// A pcapng file written frame by frame: an SHB, one IDB per device (LINKTYPE_ETHERNET, snaplen 0, `if_name`
/// option = device name, `if_tsresol` = 9 (nanoseconds)), then one EPB per [`write`](Self::write).
///
/// The file is little-endian; the SHB has version 1.0 and section length -1 (unknown). An empty device name gets
/// no `if_name` option; a name longer than 65535 bytes is cut at a character boundary. Frames are stored whole
/// (`orig_len == data.len()`) unless longer than about 4 GiB, where the captured part is cut to fit the block.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    w: W,
    devices: usize,
    /// One block, built here before it is written (reused: no allocation per frame).
    block: Vec<u8>,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header and the interface blocks of `devices`.
    pub fn new(mut w: W, devices: &[&str]) -> std::io::Result<Self> {
        let mut out = Vec::new();
        // §4.1 Section Header Block.
        put_block(&mut out, BT_SHB, |o| {
            put_u32(o, PCAPNG_BOM);
            put_u16(o, 1);
            put_u16(o, 0);
            o.extend_from_slice(&(-1i64).to_le_bytes());
        });
        // §4.2 Interface Description Blocks.
        for dev in devices {
            put_block(&mut out, BT_IDB, |o| {
                put_u16(o, LINKTYPE_ETHERNET);
                put_u16(o, 0);
                put_u32(o, 0);
                let mut name_len = dev.len().min(usize::from(u16::MAX));
                while !dev.is_char_boundary(name_len) {
                    name_len -= 1;
                }
                if name_len > 0 {
                    put_u16(o, OPT_IF_NAME);
                    put_u16(o, name_len as u16);
                    o.extend_from_slice(&dev.as_bytes()[..name_len]);
                    pad4(o);
                }
                put_u16(o, OPT_IF_TSRESOL);
                put_u16(o, 1);
                o.push(9);
                pad4(o);
                put_u16(o, OPT_ENDOFOPT);
                put_u16(o, 0);
            });
        }
        w.write_all(&out)?;
        Ok(PcapngWriter {
            w,
            devices: devices.len(),
            block: out,
        })
    }

    /// Writes one frame as an Enhanced Packet Block (§4.3). A frame whose `iface` is not an index into the
    /// devices is an [`InvalidInput`](std::io::ErrorKind::InvalidInput) error (such a file could not be read
    /// back).
    pub fn write(&mut self, f: &OutFrame) -> std::io::Result<()> {
        self.write_with(f, &EpbOptions::default())
    }

    /// Writes one frame as an Enhanced Packet Block (§4.3) with the options `o` (in the order `epb_flags`,
    /// `opt_comment`, then `opt_endofopt`; no option at all when `o` is empty, as [`write`](Self::write)). A
    /// comment longer than 65535 bytes is cut at a character boundary.
    pub fn write_with(&mut self, f: &OutFrame, o: &EpbOptions) -> std::io::Result<()> {
        if f.iface >= self.devices {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "pcapng: frame interface {} but only {} devices",
                    f.iface, self.devices
                ),
            ));
        }
        let cap = &f.data[..f.data.len().min(PCAPNG_MAX_WRITE_CAPLEN)];
        self.block.clear();
        let opts = o;
        put_block(&mut self.block, BT_EPB, |o| {
            put_u32(o, f.iface as u32);
            put_u32(o, (f.ts_ns >> 32) as u32);
            put_u32(o, f.ts_ns as u32);
            put_u32(o, cap.len() as u32);
            put_u32(o, u32::try_from(f.data.len()).unwrap_or(u32::MAX));
            o.extend_from_slice(cap);
            pad4(o);
            if let Some(flags) = opts.flags {
                put_u16(o, OPT_EPB_FLAGS);
                put_u16(o, 4);
                put_u32(o, flags);
            }
            if let Some(c) = opts.comment {
                let mut len = c.len().min(usize::from(u16::MAX));
                while !c.is_char_boundary(len) {
                    len -= 1;
                }
                put_u16(o, OPT_COMMENT);
                put_u16(o, len as u16);
                o.extend_from_slice(&c.as_bytes()[..len]);
                pad4(o);
            }
            if opts.flags.is_some() || opts.comment.is_some() {
                put_u16(o, OPT_ENDOFOPT);
                put_u16(o, 0);
            }
        });
        self.w.write_all(&self.block)
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// The underlying writer, mutably (to flush it).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.w
    }

    /// The underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.w
    }
}

/// Serialises a pcapng file in memory ([`PcapngWriter`] over a `Vec`).
///
/// # Panics
///
/// If a frame's `iface` is not an index into `devices` (such a file could not be read back).
pub fn pcapng_bytes(devices: &[&str], frames: &[OutFrame]) -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new(), devices).expect("writing to a Vec cannot fail");
    for f in frames {
        assert!(
            f.iface < devices.len(),
            "pcapng_bytes: frame interface {} but only {} devices",
            f.iface,
            devices.len()
        );
        w.write(f).expect("writing to a Vec cannot fail");
    }
    w.into_inner()
}

/// A classic nanosecond pcap written frame by frame (magic 0xa1b23c4d, LINKTYPE_ETHERNET, snaplen 262144).
///
/// Little-endian, version 2.4. A frame longer than 262144 bytes is stored cut to 262144 bytes with its full
/// original length (as a capture tool would). Timestamps past the 32-bit seconds range (year 2106) are
/// clamped to `u32::MAX` s + 999999999 ns.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    w: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut w: W) -> std::io::Result<Self> {
        let mut out = Vec::with_capacity(PCAP_FILE_HDR_LEN);
        // draft-ietf-opsawg-pcap §4 File Header.
        put_u32(&mut out, PCAP_MAGIC_NS);
        put_u16(&mut out, 2);
        put_u16(&mut out, 4);
        put_u32(&mut out, 0);
        put_u32(&mut out, 0);
        put_u32(&mut out, PCAP_MAX_SNAPLEN);
        put_u32(&mut out, u32::from(LINKTYPE_ETHERNET));
        w.write_all(&out)?;
        Ok(PcapWriter { w })
    }

    /// Writes one packet record (§5).
    pub fn write(&mut self, ts_ns: u64, data: &[u8]) -> std::io::Result<()> {
        let (sec, frac) = match u32::try_from(ts_ns / NS_PER_SEC) {
            Ok(s) => (s, (ts_ns % NS_PER_SEC) as u32),
            Err(_) => (u32::MAX, (NS_PER_SEC - 1) as u32),
        };
        let cap = &data[..data.len().min(PCAP_MAX_SNAPLEN as usize)];
        let mut rec = [0u8; PCAP_REC_HDR_LEN];
        rec[0..4].copy_from_slice(&sec.to_le_bytes());
        rec[4..8].copy_from_slice(&frac.to_le_bytes());
        rec[8..12].copy_from_slice(&(cap.len() as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&u32::try_from(data.len()).unwrap_or(u32::MAX).to_le_bytes());
        self.w.write_all(&rec)?;
        self.w.write_all(cap)
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// The underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.w
    }
}

/// Serialises a classic nanosecond pcap in memory ([`PcapWriter`] over a `Vec`).
pub fn pcap_bytes(frames: &[(u64, &[u8])]) -> Vec<u8> {
    let len = PCAP_FILE_HDR_LEN
        + frames
            .iter()
            .map(|(_, d)| PCAP_REC_HDR_LEN + d.len())
            .sum::<usize>();
    let mut w = PcapWriter::new(Vec::with_capacity(len)).expect("writing to a Vec cannot fail");
    for &(ts_ns, data) in frames {
        w.write(ts_ns, data).expect("writing to a Vec cannot fail");
    }
    w.into_inner()
}

pub use crate::output::AtomicFile;

/// Writes `bytes` to `path` as an [`Output`](crate::output::Output) ([`crate::output::write_file`]): a regular
/// or new file atomically, a FIFO or character device through, standard output for `-`; nothing is left behind on
/// an error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), crate::output::OutputError> {
    crate::output::write_file(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Kernel-generated capture copied from `a capture the Linux kernel made (docs/references.md §6)`
    /// (docs/references.md §1.4).
    const SRH_KERNEL: &[u8] = include_bytes!("../../../tests/data/srh_kernel.pcap");

    fn frame(ts_ns: u64, data: &[u8], orig_len: u32, linktype: u16) -> CapturedFrame {
        CapturedFrame {
            ts_ns,
            data: data.to_vec(),
            orig_len,
            linktype,
        }
    }

    fn is_truncated(r: &Result<Vec<CapturedFrame>, PcapError>, what: &str, offset: usize) -> bool {
        matches!(r, Err(PcapError::Truncated { what: w, offset: o }) if w == what && *o == offset)
    }

    fn corrupt_at(r: &Result<Vec<CapturedFrame>, PcapError>) -> Option<usize> {
        match r {
            Err(PcapError::Corrupt { offset, .. }) => Some(*offset),
            _ => None,
        }
    }

    // ---------------------------------------------------------------- golden bytes (hand-derived)

    #[test]
    fn pcap_header_golden() {
        // draft-ietf-opsawg-pcap §4, written little-endian:
        //   magic 0xa1b23c4d (ns)        -> 4d 3c b2 a1
        //   major 2, minor 4 (u16 each)  -> 02 00 04 00
        //   reserved1 / thiszone 0       -> 00 00 00 00
        //   reserved2 / sigfigs 0        -> 00 00 00 00
        //   snaplen 262144 = 0x0004_0000 -> 00 00 04 00
        //   linktype 1 (Ethernet)        -> 01 00 00 00
        let expect: [u8; 24] = [
            0x4d, 0x3c, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00,
        ];
        assert_eq!(pcap_bytes(&[]), expect);
        // Header-only is a valid zero-frame capture.
        assert_eq!(read_capture(&expect), Ok(vec![]));
    }

    #[test]
    fn pcap_record_golden() {
        // One record (§5), ts = 3 s + 5 ns, data de ad:
        //   ts_sec 3 -> 03 00 00 00, ts_nsec 5 -> 05 00 00 00,
        //   captured length 2 -> 02 00 00 00, original length 2 -> 02 00 00 00, then de ad.
        let bytes = pcap_bytes(&[(3_000_000_005, &[0xde, 0xad])]);
        let expect_rec: [u8; 18] = [
            0x03, 0, 0, 0, 0x05, 0, 0, 0, 0x02, 0, 0, 0, 0x02, 0, 0, 0, 0xde, 0xad,
        ];
        assert_eq!(&bytes[24..], expect_rec);
        assert_eq!(
            read_capture(&bytes),
            Ok(vec![frame(3_000_000_005, &[0xde, 0xad], 2, 1)])
        );
    }

    #[test]
    fn pcapng_golden() {
        // draft-ietf-opsawg-pcapng, little-endian.
        // SHB (§4.1): type 0a0d0d0a, total 28 (8 header + 4 BOM + 2+2 version + 8 section length + 4 trailer),
        //   BOM 0x1a2b3c4d -> 4d 3c 2b 1a, version 1.0, section length -1 -> ff x8, trailer 28.
        // IDB (§4.2): type 1, total 40 = 8 header + 8 (linktype 1, reserved 0, snaplen 0)
        //   + if_name (code 2, len 4, "eth0") 8 + if_tsresol (code 9, len 1, value 9, 3 pad) 8
        //   + opt_endofopt 4 + trailer 4.
        // EPB (§4.3): type 6, total 36 = 8 header + 20 (if 0, ts high 1, ts low 2, caplen 1, origlen 1)
        //   + 1 data byte padded to 4 + trailer 4.
        #[rustfmt::skip]
        let expect: Vec<u8> = vec![
            0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
            1, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
            2, 0, 4, 0, b'e', b't', b'h', b'0',
            9, 0, 1, 0, 9, 0, 0, 0,
            0, 0, 0, 0, 40, 0, 0, 0,
            6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
            0xab, 0, 0, 0, 36, 0, 0, 0,
        ];
        let ts = (1u64 << 32) | 2;
        let got = pcapng_bytes(
            &["eth0"],
            &[OutFrame {
                iface: 0,
                ts_ns: ts,
                data: &[0xab],
            }],
        );
        assert_eq!(got, expect);
        assert_eq!(read_capture(&expect), Ok(vec![frame(ts, &[0xab], 1, 1)]));
    }

    #[test]
    fn pcapng_epb_flags_and_comment_golden() {
        // draft-ietf-opsawg-pcapng §4.3 with options (§3.5): after the packet data, padded to 32 bits, come
        // epb_flags (code 2, length 4; §4.3.1: bits 0-1 = 01 inbound, 10 outbound), opt_comment (code 1, the
        // UTF-8 bytes, padded to 32 bits) and opt_endofopt (code 0, length 0). Total 68 = 8 header + 20 fixed
        // + 4 data (1 byte, 3 pad) + 8 flags + 20 comment (4 + 14 bytes + 2 pad) + 4 end + 4 trailer.
        #[rustfmt::skip]
        let inbound_dropped: Vec<u8> = vec![
            6, 0, 0, 0, 68, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
            0xab, 0, 0, 0,
            2, 0, 4, 0, 1, 0, 0, 0,
            1, 0, 14, 0, b'd', b'r', b'o', b'p', b':', b' ', b'n', b'o', b'_', b'r', b'o', b'u', b't', b'e', 0, 0,
            0, 0, 0, 0,
            68, 0, 0, 0,
        ];
        // Outbound, no comment: 8 + 20 + 4 + 8 + 4 + 4 = 48.
        #[rustfmt::skip]
        let outbound: Vec<u8> = vec![
            6, 0, 0, 0, 48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0,
            1, 2, 3, 4,
            2, 0, 4, 0, 2, 0, 0, 0,
            0, 0, 0, 0,
            48, 0, 0, 0,
        ];
        let mut w = PcapngWriter::new(Vec::new(), &["a", "b"]).unwrap();
        let head = w.get_ref().len();
        let (f1, f2) = (
            OutFrame {
                iface: 1,
                ts_ns: 5,
                data: &[0xab],
            },
            OutFrame {
                iface: 0,
                ts_ns: 6,
                data: &[1, 2, 3, 4],
            },
        );
        w.write_with(
            &f1,
            &EpbOptions {
                flags: Some(EPB_INBOUND),
                comment: Some("drop: no_route"),
            },
        )
        .unwrap();
        w.write_with(
            &f2,
            &EpbOptions {
                flags: Some(EPB_OUTBOUND),
                comment: None,
            },
        )
        .unwrap();
        let bytes = w.into_inner();
        assert_eq!(&bytes[head..head + 68], &inbound_dropped[..]);
        assert_eq!(&bytes[head + 68..], &outbound[..]);
        // The reader skips the options and reads the frames back.
        let back = read_capture(&bytes).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].ts_ns, &back[0].data[..]), (5, &[0xab][..]));
        assert_eq!((back[1].ts_ns, &back[1].data[..]), (6, &[1, 2, 3, 4][..]));
    }

    #[test]
    fn big_endian_pcap_microseconds() {
        // Hand-built big-endian µs pcap: magic a1 b2 c3 d4, version 2.4, zone 0, sigfigs 0,
        // snaplen 0xffff, linktype 1; one record ts 1 s + 2 µs, caplen 3, origlen 5, data aa bb cc.
        #[rustfmt::skip]
        let b: Vec<u8> = vec![
            0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
            0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 5, 0xaa, 0xbb, 0xcc,
        ];
        assert_eq!(
            read_capture(&b),
            Ok(vec![frame(1_000_002_000, &[0xaa, 0xbb, 0xcc], 5, 1)])
        );
        // Same file as big-endian ns magic a1 b2 3c 4d: fraction is nanoseconds.
        let mut n = b.clone();
        n[2] = 0x3c;
        n[3] = 0x4d;
        assert_eq!(read_capture(&n).unwrap()[0].ts_ns, 1_000_000_002);
    }

    #[test]
    fn little_endian_pcap_microseconds() {
        // LE µs magic d4 c3 b2 a1, linktype 101 (raw IP) with FCS bits set in the upper half (ignored).
        #[rustfmt::skip]
        let b: Vec<u8> = vec![
            0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 101, 0, 0, 0x14,
            7, 0, 0, 0, 0x3f, 0x42, 0x0f, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0x60,
        ];
        // 0x0f423f = 999999 µs.
        assert_eq!(
            read_capture(&b),
            Ok(vec![frame(7_999_999_000, &[0x60], 1, 101)])
        );
    }

    #[test]
    fn big_endian_pcapng_multi_section() {
        // Section 1, big-endian (hand-built):
        //   SHB: 0a0d0d0a, len 28, BOM 1a 2b 3c 4d, version 1.0, section length -1, len 28
        //   IDB: type 1, len 20, linktype 1, reserved, snaplen 0, no options (tsresol default 10^-6), len 20
        //   unknown block type 0x00000bad, len 16, 4 body bytes, len 16 (skipped)
        //   EPB: if 0, ts 0:1000001 (= 0x000f4241 µs), caplen 2, origlen 4, data 11 22 + 2 pad, len 36
        //   SPB: len 20, origlen 3, data 33 44 55 + 1 pad, len 20 (interface 0, snaplen 0 -> caplen 3)
        // Section 2, little-endian (a new SHB resets interface ids):
        //   SHB as in pcapng_golden
        //   IDB: linktype 228, snaplen 0, if_tsresol 0x83 (2^-3 s), if_tsoffset 10 s, endofopt: len 44
        //   EPB: if 0, ts 3 units = 375 ms, + 10 s offset, caplen 1 origlen 1 data 66
        #[rustfmt::skip]
        let b: Vec<u8> = vec![
            0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 28, 0x1a, 0x2b, 0x3c, 0x4d, 0, 1, 0, 0,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 28,
            0, 0, 0, 1, 0, 0, 0, 20, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20,
            0, 0, 0x0b, 0xad, 0, 0, 0, 16, 9, 9, 9, 9, 0, 0, 0, 16,
            0, 0, 0, 6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0f, 0x42, 0x41, 0, 0, 0, 2, 0, 0, 0, 4,
            0x11, 0x22, 0, 0, 0, 0, 0, 36,
            0, 0, 0, 3, 0, 0, 0, 20, 0, 0, 0, 3, 0x33, 0x44, 0x55, 0, 0, 0, 0, 20,
            0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
            1, 0, 0, 0, 44, 0, 0, 0, 228, 0, 0, 0, 0, 0, 0, 0,
            9, 0, 1, 0, 0x83, 0, 0, 0,
            14, 0, 8, 0, 10, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 44, 0, 0, 0,
            6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
            0x66, 0, 0, 0, 36, 0, 0, 0,
        ];
        assert_eq!(
            read_capture(&b),
            Ok(vec![
                frame(1_000_001_000, &[0x11, 0x22], 4, 1),
                frame(0, &[0x33, 0x44, 0x55], 3, 1),
                frame(10_375_000_000, &[0x66], 1, 228),
            ])
        );
    }

    // ---------------------------------------------------------------- kernel capture

    /// Expected values from an independent parse of the file with python3 + struct:
    /// ```text
    /// python3 -c 'import struct; b=open("tests/data/srh_kernel.pcap","rb").read();
    ///   print(struct.unpack("<IHHiIII", b[:24])); o=24
    ///   while o<len(b): s,u,i,l=struct.unpack("<IIII",b[o:o+16]); d=b[o+16:o+16+i];
    ///     print(s,u,i,l,d[:16].hex(),d[-8:].hex()); o+=16+i'
    /// (2712847316, 2, 4, 0, 0, 65535, 1)          # magic 0xa1b2c3d4, snaplen 65535, linktype 1; file 1094 bytes
    /// 1795303373 692586 139 139 02000000020202000000020186dd6b81 0d14a048454c4c4f
    /// 1795303373 693893 163 163 02000000020202000000020186dd6b81 0d14a048454c4c4f
    /// 1795303373 694504 177 177 (same first 16 / last 8 bytes)
    /// 1795303373 694679 147 147
    /// 1795303373 695014 161 161
    /// 1795303373 695184 187 187
    /// ```
    const KERNEL_LENS: [u32; 6] = [139, 163, 177, 147, 161, 187];
    const KERNEL_USEC: [u64; 6] = [692586, 693893, 694504, 694679, 695014, 695184];

    #[test]
    fn kernel_capture() {
        assert_eq!(SRH_KERNEL.len(), 1094);
        let frames = read_capture(SRH_KERNEL).unwrap();
        assert_eq!(frames.len(), 6);
        let head = [
            0x02, 0x00, 0x00, 0x00, 0x02, 0x02, 0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x86, 0xdd,
            0x6b, 0x81,
        ];
        let tail = [0x0d, 0x14, 0xa0, 0x48, 0x45, 0x4c, 0x4c, 0x4f];
        for (i, f) in frames.iter().enumerate() {
            assert_eq!(f.data.len() as u32, KERNEL_LENS[i]);
            assert_eq!(f.orig_len, KERNEL_LENS[i]);
            assert_eq!(f.linktype, LINKTYPE_ETHERNET);
            assert_eq!(f.ts_ns, 1_795_303_373 * NS_PER_SEC + KERNEL_USEC[i] * 1000);
            assert_eq!(f.data[..16], head);
            assert_eq!(f.data[f.data.len() - 8..], tail);
        }
    }

    #[test]
    fn kernel_capture_every_prefix() {
        let full = read_capture(SRH_KERNEL).unwrap();
        // Record boundaries: 24, then + 16 + caplen for each frame.
        let mut bounds = vec![24usize];
        for l in KERNEL_LENS {
            bounds.push(bounds.last().unwrap() + 16 + l as usize);
        }
        assert_eq!(*bounds.last().unwrap(), SRH_KERNEL.len());
        for n in 0..=SRH_KERNEL.len() {
            let r = read_capture(&SRH_KERNEL[..n]);
            match bounds.iter().position(|&b| b == n) {
                Some(k) => assert_eq!(r, Ok(full[..k].to_vec()), "prefix {n}"),
                None => assert!(
                    matches!(r, Err(PcapError::Truncated { .. })),
                    "prefix {n}: {r:?}"
                ),
            }
        }
        assert!(is_truncated(
            &read_capture(&SRH_KERNEL[..3]),
            "file magic",
            0
        ));
        assert!(is_truncated(
            &read_capture(&SRH_KERNEL[..23]),
            "file header",
            0
        ));
        assert!(is_truncated(
            &read_capture(&SRH_KERNEL[..30]),
            "frame 1 header",
            24
        ));
        assert!(is_truncated(
            &read_capture(&SRH_KERNEL[..41]),
            "frame 1 data",
            40
        ));
        // Frame 2 header starts at 24 + 16 + 139 = 179, its data at 195.
        assert!(is_truncated(
            &read_capture(&SRH_KERNEL[..180]),
            "frame 2 header",
            179
        ));
        assert!(is_truncated(
            &read_capture(&SRH_KERNEL[..300]),
            "frame 2 data",
            195
        ));
    }

    // ---------------------------------------------------------------- pcap errors

    fn le_pcap(snaplen: u32, recs: &[(u32, u32, u32, u32, &[u8])]) -> Vec<u8> {
        let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&snaplen.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        for (s, f, i, o, d) in recs {
            for v in [s, f, i, o] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(d);
        }
        b
    }

    #[test]
    fn pcap_corrupt_records() {
        // Captured length above the 262144 maximum (snaplen 0 = no file limit): offset of incl_len = 24 + 8.
        let big = le_pcap(0, &[(0, 0, 262_145, 262_145, &[])]);
        assert_eq!(corrupt_at(&read_capture(&big)), Some(32));
        // Exactly 262144 is fine (data missing -> truncated, not corrupt).
        let ok = le_pcap(0, &[(0, 0, 262_144, 262_144, &[])]);
        assert!(is_truncated(&read_capture(&ok), "frame 1 data", 40));
        // Above snaplen.
        let over = le_pcap(2, &[(0, 0, 1, 1, &[1]), (0, 0, 3, 3, &[1, 2, 3])]);
        assert_eq!(corrupt_at(&read_capture(&over)), Some(24 + 17 + 8));
        // Captured above original.
        let orig = le_pcap(0, &[(0, 0, 2, 1, &[1, 2])]);
        assert_eq!(corrupt_at(&read_capture(&orig)), Some(32));
        // Microsecond fraction of a second out of range.
        let frac = le_pcap(0, &[(0, 1_000_000, 0, 0, &[])]);
        assert_eq!(corrupt_at(&read_capture(&frac)), Some(28));
        // Version 1.x.
        let mut v = le_pcap(0, &[]);
        v[4] = 1;
        assert_eq!(corrupt_at(&read_capture(&v)), Some(4));
        // Bad magic reports the first 4 bytes big-endian.
        assert_eq!(
            read_capture(&[0x12, 0x34, 0x56, 0x78, 0, 0]),
            Err(PcapError::BadMagic(0x1234_5678))
        );
        assert!(is_truncated(&read_capture(&[]), "file magic", 0));
    }

    #[test]
    fn pcap_writer_cuts_oversized_frames_and_clamps_time() {
        let data = vec![0x5a; PCAP_MAX_SNAPLEN as usize + 10];
        let late = u64::from(u32::MAX) * NS_PER_SEC + 2 * NS_PER_SEC;
        let f = read_capture(&pcap_bytes(&[(late, &data)])).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].data.len(), PCAP_MAX_SNAPLEN as usize);
        assert_eq!(f[0].orig_len, PCAP_MAX_SNAPLEN + 10);
        assert_eq!(f[0].ts_ns, u64::from(u32::MAX) * NS_PER_SEC + 999_999_999);
    }

    // ---------------------------------------------------------------- pcapng errors

    /// Little-endian block with given type and body (body must be a multiple of 4).
    fn blk(ty: u32, body: &[u8]) -> Vec<u8> {
        assert!(body.len().is_multiple_of(4));
        let len = (body.len() + 12) as u32;
        let mut b = ty.to_le_bytes().to_vec();
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(body);
        b.extend_from_slice(&len.to_le_bytes());
        b
    }

    fn shb() -> Vec<u8> {
        blk(
            BT_SHB,
            &[
                0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        )
    }

    fn idb(linktype: u16, snaplen: u32, opts: &[u8]) -> Vec<u8> {
        let mut body = linktype.to_le_bytes().to_vec();
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&snaplen.to_le_bytes());
        body.extend_from_slice(opts);
        blk(BT_IDB, &body)
    }

    fn epb(iface: u32, ts: u64, caplen: u32, orig: u32, data: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for v in [iface, (ts >> 32) as u32, ts as u32, caplen, orig] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(data);
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        blk(BT_EPB, &body)
    }

    fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn pcapng_epb_unknown_interface() {
        let f = cat(&[shb(), idb(1, 0, &[]), epb(1, 0, 1, 1, &[7])]);
        // EPB starts at 28 + 20 = 48; interface id at 56.
        assert_eq!(corrupt_at(&read_capture(&f)), Some(56));
        // A second section forgets the first section's interfaces.
        let f = cat(&[shb(), idb(1, 0, &[]), shb(), epb(0, 0, 1, 1, &[7])]);
        assert_eq!(corrupt_at(&read_capture(&f)), Some(28 + 20 + 28 + 8));
    }

    #[test]
    fn pcapng_block_length_checks() {
        let good = cat(&[shb(), idb(1, 0, &[]), epb(0, 0, 1, 1, &[7])]);
        assert_eq!(read_capture(&good), Ok(vec![frame(0, &[7], 1, 1)]));
        // Trailing length copy differs (EPB trailer at 48 + 36 - 4 = 80).
        let mut b = good.clone();
        b[80] = 40;
        assert_eq!(corrupt_at(&read_capture(&b)), Some(80));
        // Total length not a multiple of 4 (EPB length field at 52).
        let mut b = good.clone();
        b[52] = 35;
        assert_eq!(corrupt_at(&read_capture(&b)), Some(52));
        // Total length below 12.
        let mut b = good.clone();
        b[52] = 8;
        assert_eq!(corrupt_at(&read_capture(&b)), Some(52));
        // EPB total below its 32-byte minimum (a 28-byte block with consistent lengths).
        let short = cat(&[shb(), idb(1, 0, &[]), blk(BT_EPB, &[0; 16])]);
        assert_eq!(corrupt_at(&read_capture(&short)), Some(52));
        // Captured length overrunning the block.
        let over = cat(&[shb(), idb(1, 0, &[]), epb(0, 0, 5, 5, &[7])]);
        assert_eq!(corrupt_at(&read_capture(&over)), Some(48 + 8 + 12));
        // Captured above original, and above snaplen.
        let b = cat(&[shb(), idb(1, 0, &[]), epb(0, 0, 2, 1, &[7, 8])]);
        assert_eq!(corrupt_at(&read_capture(&b)), Some(68));
        let b = cat(&[shb(), idb(1, 1, &[]), epb(0, 0, 2, 2, &[7, 8])]);
        assert_eq!(corrupt_at(&read_capture(&b)), Some(68));
        // Bad byte-order magic.
        let mut b = good.clone();
        b[8] = 0;
        assert_eq!(corrupt_at(&read_capture(&b)), Some(8));
        // Unsupported major version.
        let mut b = good;
        b[12] = 2;
        assert_eq!(corrupt_at(&read_capture(&b)), Some(12));
    }

    #[test]
    fn pcapng_truncation_names() {
        let good = cat(&[shb(), idb(1, 0, &[]), epb(0, 0, 1, 1, &[7])]);
        assert!(is_truncated(
            &read_capture(&good[..11]),
            "block 1 header",
            0
        ));
        assert!(is_truncated(&read_capture(&good[..20]), "block 1 body", 8));
        assert!(is_truncated(
            &read_capture(&good[..30]),
            "block 2 header",
            28
        ));
        assert!(is_truncated(&read_capture(&good[..60]), "block 3 body", 56));
    }

    #[test]
    fn pcapng_idb_options() {
        // if_tsresol with a wrong length.
        let b = cat(&[shb(), idb(1, 0, &[9, 0, 2, 0, 9, 9, 0, 0])]);
        assert_eq!(corrupt_at(&read_capture(&b)), Some(28 + 16 + 2));
        // Option overrunning the block.
        let b = cat(&[shb(), idb(1, 0, &[2, 0, 9, 0, b'a', b'b', b'c', b'd'])]);
        assert_eq!(corrupt_at(&read_capture(&b)), Some(28 + 16));
        // Options after opt_endofopt are ignored; if_tsresol 10^-9 then ts 5 -> 5 ns.
        let b = cat(&[
            shb(),
            idb(
                1,
                0,
                &[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0, 0, 0, 0],
            ),
            epb(0, 5, 0, 0, &[]),
        ]);
        assert_eq!(read_capture(&b), Ok(vec![frame(5, &[], 0, 1)]));
        // if_tsresol 10^-12: 5000 units = 5 ns (rounded down: 5999 -> 5 ns).
        let b = cat(&[
            shb(),
            idb(1, 0, &[9, 0, 1, 0, 12, 0, 0, 0]),
            epb(0, 5999, 0, 0, &[]),
        ]);
        assert_eq!(read_capture(&b).unwrap()[0].ts_ns, 5);
        // Seconds resolution overflowing u64 nanoseconds -> corrupt timestamp (at EPB ts high, 28+28+8+4).
        let b = cat(&[
            shb(),
            idb(1, 0, &[9, 0, 1, 0, 0, 0, 0, 0]),
            epb(0, u64::MAX, 0, 0, &[]),
        ]);
        assert_eq!(corrupt_at(&read_capture(&b)), Some(68));
        // Negative if_tsoffset below the epoch -> corrupt.
        let mut o = vec![14, 0, 8, 0];
        o.extend_from_slice(&(-1i64).to_le_bytes());
        let b = cat(&[shb(), idb(1, 0, &o), epb(0, 0, 0, 0, &[])]);
        assert!(corrupt_at(&read_capture(&b)).is_some());
    }

    #[test]
    fn pcapng_simple_packet_block() {
        // SPB before any IDB -> corrupt; with snaplen 2, origlen 5 -> 2 captured bytes.
        let spb = |orig: u32, data: &[u8]| {
            let mut body = orig.to_le_bytes().to_vec();
            body.extend_from_slice(data);
            while !body.len().is_multiple_of(4) {
                body.push(0);
            }
            blk(BT_SPB, &body)
        };
        let b = cat(&[shb(), spb(1, &[1])]);
        assert_eq!(corrupt_at(&read_capture(&b)), Some(28));
        let b = cat(&[shb(), idb(1, 2, &[]), spb(5, &[1, 2])]);
        assert_eq!(read_capture(&b), Ok(vec![frame(0, &[1, 2], 5, 1)]));
        // Block data length disagreeing with the computed captured length.
        let b = cat(&[shb(), idb(1, 0, &[]), spb(9, &[1, 2])]);
        assert!(corrupt_at(&read_capture(&b)).is_some());
    }

    // ---------------------------------------------------------------- streaming

    /// A reader that hands out one byte per `read` call: the shortest reads a `Read` may legally return.
    struct Dribble<'a>(&'a [u8]);

    impl Read for Dribble<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), out.first_mut()) {
                (Some((&b, rest)), Some(o)) => {
                    *o = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    fn dribbled(bytes: &[u8]) -> Result<Vec<CapturedFrame>, PcapError> {
        CaptureReader::new(Dribble(bytes))?.collect()
    }

    #[test]
    fn short_reads_give_the_same_frames_and_errors() {
        let ng = cat(&[
            shb(),
            idb(1, 0, &[]),
            epb(0, 5, 3, 3, &[1, 2, 3]),
            blk(BT_SPB, &[2, 0, 0, 0, 9, 9, 0, 0]),
            epb(0, 6, 1, 1, &[7]),
        ]);
        for file in [SRH_KERNEL, &ng[..]] {
            for cut in 0..=file.len() {
                assert_eq!(
                    dribbled(&file[..cut]),
                    read_capture(&file[..cut]),
                    "cut at {cut}"
                );
            }
        }
        assert_eq!(dribbled(&ng).unwrap().len(), 3);
    }

    #[test]
    fn frames_before_the_damage_then_the_error_then_nothing() {
        let file = &SRH_KERNEL[..SRH_KERNEL.len() - 3];
        let all = read_capture(SRH_KERNEL).unwrap();
        let mut r = CaptureReader::new(file).unwrap();
        for want in &all[..all.len() - 1] {
            assert_eq!(r.next(), Some(Ok(want.clone())));
        }
        assert!(matches!(r.next(), Some(Err(PcapError::Truncated { .. }))));
        assert_eq!(r.next(), None);
    }

    #[test]
    fn a_huge_claimed_block_is_truncated_not_allocated() {
        // A block claiming 4 GiB - 4 bytes in a 40-byte file: read through `take`, so only what exists is held.
        let mut file = cat(&[shb()]);
        let off = file.len();
        file.extend_from_slice(&BT_EPB.to_le_bytes());
        file.extend_from_slice(&0xffff_fffcu32.to_le_bytes());
        file.extend_from_slice(&[0; 8]);
        assert!(is_truncated(&read_capture(&file), "block 2 body", off + 8));
    }

    #[test]
    fn streaming_writers_write_what_the_in_memory_ones_do() {
        let frames = [(1u64, &[1u8, 2, 3][..]), (2_000_000_000, &[4u8; 70][..])];
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for (ts, d) in frames {
            w.write(ts, d).unwrap();
        }
        assert_eq!(w.into_inner(), pcap_bytes(&frames));
        let of: Vec<OutFrame> = frames
            .iter()
            .enumerate()
            .map(|(i, &(ts_ns, data))| OutFrame {
                iface: i,
                ts_ns,
                data,
            })
            .collect();
        let mut w = PcapngWriter::new(Vec::new(), &["a", "b"]).unwrap();
        for f in &of {
            w.write(f).unwrap();
        }
        assert_eq!(w.into_inner(), pcapng_bytes(&["a", "b"], &of));
        let mut w = PcapngWriter::new(Vec::new(), &["a"]).unwrap();
        assert_eq!(
            w.write(&of[1]).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::InvalidInput)
        );
    }

    // ---------------------------------------------------------------- files

    fn scratch_dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("lwt6-pcap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect()
    }

    #[test]
    fn write_atomic_then_read_file() {
        let d = scratch_dir("ok");
        let p = d.join("out.pcap");
        let bytes = pcap_bytes(&[(1, &[1, 2, 3])]);
        write_atomic(&p, &bytes).unwrap();
        // Overwrite an existing file.
        write_atomic(&p, &bytes).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
        assert_eq!(read_file(&p), Ok(vec![frame(1, &[1, 2, 3], 3, 1)]));
        assert!(leftovers(&d).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn write_atomic_errors_clean_up() {
        let d = scratch_dir("err");
        // Missing directory: the temp file cannot even be created.
        let p = d.join("missing").join("x.pcap");
        match write_atomic(&p, b"x") {
            Err(e) => assert!(e.to_string().contains("x.pcap"), "{e}"),
            r => panic!("{r:?}"),
        }
        // Target is a directory: refused before anything is written.
        let target = d.join("dir.pcap");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"k").unwrap();
        match write_atomic(&target, b"x") {
            Err(e) => assert!(e.to_string().contains("dir.pcap"), "{e}"),
            r => panic!("{r:?}"),
        }
        assert!(leftovers(&d).is_empty());
        assert!(write_atomic(Path::new("/"), b"x").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn read_file_missing_names_path() {
        let p = Path::new("/nonexistent-lwt6-dir/none.pcap");
        match read_file(p) {
            Err(PcapError::Io(m)) => assert!(m.contains("/nonexistent-lwt6-dir/none.pcap"), "{m}"),
            r => panic!("{r:?}"),
        }
    }

    // ---------------------------------------------------------------- properties

    fn arb_frames() -> impl Strategy<Value = Vec<(u64, Vec<u8>)>> {
        prop::collection::vec(
            (
                0..=u64::from(u32::MAX) * NS_PER_SEC + 999_999_999,
                prop::collection::vec(any::<u8>(), 0..80),
            ),
            0..6,
        )
    }

    /// Device names and `(iface, ts_ns, data)` frames.
    type NgInput = (Vec<String>, Vec<(usize, u64, Vec<u8>)>);

    fn arb_ng() -> impl Strategy<Value = NgInput> {
        prop::collection::vec("[a-z0-9]{0,9}", 1..4).prop_flat_map(|devs| {
            let n = devs.len();
            (
                Just(devs),
                prop::collection::vec(
                    (
                        0..n,
                        any::<u64>(),
                        prop::collection::vec(any::<u8>(), 0..40),
                    ),
                    0..6,
                ),
            )
        })
    }

    fn ng_bytes(devs: &[String], frames: &[(usize, u64, Vec<u8>)]) -> Vec<u8> {
        let d: Vec<&str> = devs.iter().map(String::as_str).collect();
        let f: Vec<OutFrame> = frames
            .iter()
            .map(|(i, t, b)| OutFrame {
                iface: *i,
                ts_ns: *t,
                data: b,
            })
            .collect();
        pcapng_bytes(&d, &f)
    }

    proptest! {
        #[test]
        fn pcap_round_trip(frames in arb_frames()) {
            let refs: Vec<(u64, &[u8])> = frames.iter().map(|(t, d)| (*t, d.as_slice())).collect();
            let want: Vec<CapturedFrame> =
                frames.iter().map(|(t, d)| frame(*t, d, d.len() as u32, LINKTYPE_ETHERNET)).collect();
            prop_assert_eq!(read_capture(&pcap_bytes(&refs)), Ok(want));
        }

        #[test]
        fn pcapng_round_trip((devs, frames) in arb_ng()) {
            let want: Vec<CapturedFrame> =
                frames.iter().map(|(_, t, d)| frame(*t, d, d.len() as u32, LINKTYPE_ETHERNET)).collect();
            prop_assert_eq!(read_capture(&ng_bytes(&devs, &frames)), Ok(want));
        }

        #[test]
        fn pcap_prefixes(frames in arb_frames()) {
            let refs: Vec<(u64, &[u8])> = frames.iter().map(|(t, d)| (*t, d.as_slice())).collect();
            let bytes = pcap_bytes(&refs);
            let full = read_capture(&bytes).unwrap();
            let mut bounds = vec![24usize];
            for (_, d) in &frames {
                bounds.push(bounds.last().unwrap() + 16 + d.len());
            }
            for n in 0..bytes.len() {
                let r = read_capture(&bytes[..n]);
                match bounds.iter().position(|&b| b == n) {
                    Some(k) => prop_assert_eq!(r, Ok(full[..k].to_vec())),
                    None => prop_assert!(matches!(r, Err(PcapError::Truncated { .. })), "prefix {}: {:?}", n, r),
                }
            }
        }

        #[test]
        fn pcapng_prefixes((devs, frames) in arb_ng()) {
            let bytes = ng_bytes(&devs, &frames);
            let full = read_capture(&bytes).unwrap();
            // Block boundaries: SHB 28; IDB 8 + 8 + if_name (4 + name padded, absent if empty)
            // + if_tsresol 8 + endofopt 4 + trailer 4; EPB 32 + data padded. Value = frames before it.
            let mut bounds = vec![(28usize, 0usize)];
            let mut end = 28;
            for d in &devs {
                let name = if d.is_empty() { 0 } else { 4 + d.len().div_ceil(4) * 4 };
                end += 8 + 8 + name + 8 + 4 + 4;
                bounds.push((end, 0));
            }
            for (k, (_, _, d)) in frames.iter().enumerate() {
                end += 32 + d.len().div_ceil(4) * 4;
                bounds.push((end, k + 1));
            }
            prop_assert_eq!(end, bytes.len());
            for n in 0..bytes.len() {
                let r = read_capture(&bytes[..n]);
                match bounds.iter().find(|(b, _)| *b == n) {
                    Some(&(_, k)) => prop_assert_eq!(r, Ok(full[..k].to_vec())),
                    None => prop_assert!(matches!(r, Err(PcapError::Truncated { .. })), "prefix {}: {:?}", n, r),
                }
            }
        }

        #[test]
        fn random_bytes_never_panic(
            prefix in prop::sample::select(vec![
                vec![], vec![0xd4, 0xc3, 0xb2, 0xa1], vec![0xa1, 0xb2, 0xc3, 0xd4], vec![0x4d, 0x3c, 0xb2, 0xa1],
                vec![0xa1, 0xb2, 0x3c, 0x4d], vec![0x0a, 0x0d, 0x0d, 0x0a],
                vec![0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a],
                vec![0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 28, 0x1a, 0x2b, 0x3c, 0x4d],
            ]),
            rest in prop::collection::vec(any::<u8>(), 0..400),
        ) {
            let mut b = prefix;
            b.extend_from_slice(&rest);
            let _ = read_capture(&b);
        }

        #[test]
        fn mutated_files_never_panic(
            (devs, frames) in arb_ng(),
            muts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            classic in any::<bool>(),
        ) {
            let mut b = if classic {
                let refs: Vec<(u64, &[u8])> = frames.iter().map(|(_, t, d)| (t / 4, d.as_slice())).collect();
                pcap_bytes(&refs)
            } else {
                ng_bytes(&devs, &frames)
            };
            for (i, v) in muts {
                let i = i.index(b.len());
                b[i] = v;
            }
            if let Ok(fs) = read_capture(&b) {
                for f in fs {
                    prop_assert!(f.data.len() as u64 <= u64::from(f.orig_len));
                }
            }
        }
    }
}
