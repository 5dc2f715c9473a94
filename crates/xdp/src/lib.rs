//! The XDP tier of lwt6: a BPF program that executes, in the driver, the forwarding plans lwt6's userspace
//! snapshot precomputes (template, length, a few patches), and hands every other frame to the AF_XDP worker.
//!
//! - `bpf/plan.bpf.c`: the plan executor, compiled from source by `build.rs` with a pinned clang.
//! - [`layout`]: its maps' keys and values, mirrored in Rust.
//! - [`tables`](mod@tables): a [`Snapshot`](lwt6_dataplane::snapshot::Snapshot)'s plans as map entries.
//! - [`ioam_block`]: IOAM transit's node blocks, precomputed whole.
//! - [`tier`]: loading the program (with aya), filling its maps, reading its counters, running frames in memory.
//!
//! Built without the pinned clang, the crate still builds and [`available`] says why the tier is absent.
//! docs/xdp.md describes the design.

pub mod delta;
pub mod ioam_block;
pub mod layout;
mod mirror;
mod sys;
pub mod tables;
pub mod tier;

pub use layout::{Kind, PlanEntry, PortEntry, RouteValue, Why};
pub use tables::{Tables, port_entry, tables};
pub use tier::{Counters, Error, Installed, Run, Runner, Sizes, Tier};

/// Why the XDP tier is absent from this build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the XDP tier is absent from this build: {0}")]
pub struct Absent(pub &'static str);

/// Bytes aligned to 8 (the ELF parser reads the object's headers in place, which needs their alignment).
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

#[cfg(lwt6_xdp_built)]
static OBJECT: Option<&Aligned<[u8]>> = Some(&Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/plan.bpf.o"
))));
#[cfg(not(lwt6_xdp_built))]
static OBJECT: Option<&Aligned<[u8]>> = None;

/// Whether this build holds the XDP program (built with the pinned clang), or why not.
pub fn available() -> Result<(), Absent> {
    match OBJECT {
        Some(_) => Ok(()),
        None => Err(Absent(
            option_env!("LWT6_XDP_ABSENT").unwrap_or("not built"),
        )),
    }
}

/// The compiled object (empty when absent).
fn object() -> &'static [u8] {
    OBJECT.map_or(&[], |o| &o.0)
}
