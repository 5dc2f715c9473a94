//! How the router makes room in front of a packet for the headers its tunnels add.
//!
//! By default the router plans: the growth of the whole packet (every tunnel stage, the Ethernet header) is known
//! before anything is written, the headroom is reserved once, and a received frame loaded with the router's rx
//! headroom never reallocates. A [`HeadroomPolicy`] replaces that with another system's behaviour, stage by stage,
//! so that its cost can be measured on the same pipeline; the lab's models of the Linux kernel before and after
//! its 2024 fix are such policies. With a policy installed the fast path is off (it only knows the plan).

use crate::buffer::PacketBuf;

/// Headroom handling around each tunnel stage, in place of the router's plan-then-reserve.
pub trait HeadroomPolicy: std::fmt::Debug + Send + Sync {
    /// Called before a tunnel stage writes its headers. `growth` is the bytes the stage adds in front of the
    /// packet; `l2` says the stage encapsulates the whole Ethernet frame (seg6 `l2encap` modes), whose 14-byte
    /// header is then part of the packet and counted in `growth`.
    fn before_stage(&self, buf: &mut PacketBuf, growth: usize, l2: bool);
    /// Called after a tunnel stage wrote its headers, before the packet goes on.
    fn after_stage(&self, buf: &mut PacketBuf);
}
