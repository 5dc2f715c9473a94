//! The Linux skb headroom arithmetic behind the double reallocation (docs/references.md §5.1), as plain functions.
//!
//! - `NET_SKB_PAD = max(32, L1_CACHE_BYTES)`
//! - `skb_cow_head(skb, need)`: if `need > headroom`, `pskb_expand_head(skb, ALIGN(need - headroom, NET_SKB_PAD), 0)`,
//!   which grows the headroom by exactly that amount (allocator slack goes to the tailroom).
//! - `LL_RESERVED_SPACE(dev) = ((hard_header_len + needed_headroom) & ~15) + 16` (HH_DATA_MOD = 16).

use lwt6_dataplane::buffer::PacketBuf;
use lwt6_dataplane::headroom::HeadroomPolicy;
use lwt6_dataplane::router::Router;
use std::sync::Arc;

/// `NET_SKB_PAD` for a cache line size.
pub fn net_skb_pad(cache_line: usize) -> usize {
    cache_line.max(32)
}

/// `LL_RESERVED_SPACE` for a device with this hard header length and needed headroom.
pub fn ll_reserved_space(hard_header_len: usize, needed_headroom: usize) -> usize {
    ((hard_header_len + needed_headroom) & !15) + 16
}

/// `ALIGN(x, a)` for a power-of-two or any positive `a`.
pub fn align(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// What `skb_cow_head(skb, need)` does to an skb with `headroom` bytes (and not cloned): `Some(nhead)` — the
/// bytes `pskb_expand_head` adds in front — when it reallocates, `None` when the headroom suffices.
pub fn cow_head(headroom: usize, need: usize, pad: usize) -> Option<usize> {
    (need > headroom).then(|| align(need - headroom, pad))
}

/// How a router makes room for the headers it adds: lwt6's own plan, or the Linux kernel's `skb_cow_head` calls
/// with its alignment (real allocation and copy), for the forwarding-rate sweeps and the analyzer's cross-checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BufferStrategy {
    /// lwt6: plan, reserve once (the router without a [`HeadroomPolicy`]).
    #[default]
    Native,
    /// Linux before the 2024 fix: `skb_cow_head(O + mac_len)` before the push, then
    /// `skb_cow_head(LL_RESERVED_SPACE(dev))` after the route lookup, on every packet.
    LinuxPreFix {
        /// L1 cache line size (NET_SKB_PAD = max(32, line)).
        cache_line: usize,
    },
    /// Linux after the fix, warm route cache: one `skb_cow_head(O + LL_RESERVED_SPACE(cached dev))`.
    LinuxPostFix {
        /// L1 cache line size.
        cache_line: usize,
    },
}

impl BufferStrategy {
    /// The headroom policy that runs this strategy (`None` for [`BufferStrategy::Native`]).
    pub fn policy(self) -> Option<Arc<dyn HeadroomPolicy>> {
        let (cache_line, pre_fix) = match self {
            BufferStrategy::Native => return None,
            BufferStrategy::LinuxPreFix { cache_line } => (cache_line, true),
            BufferStrategy::LinuxPostFix { cache_line } => (cache_line, false),
        };
        Some(Arc::new(LinuxHeadroom {
            pad: net_skb_pad(cache_line),
            ll: ll_reserved_space(MAC_LEN, 0),
            pre_fix,
        }))
    }

    /// Makes `router` handle headroom this way.
    pub fn install(self, router: &mut Router) {
        router.worker.headroom_policy = self.policy();
    }
}

/// Length of an Ethernet header (`mac_len`, and an Ethernet device's `hard_header_len`).
const MAC_LEN: usize = 14;

/// The Linux kernel's headroom handling around a tunnel, on an Ethernet device without extra needed headroom.
#[derive(Debug, Clone, Copy)]
struct LinuxHeadroom {
    /// `NET_SKB_PAD`: the alignment of every `pskb_expand_head` growth.
    pad: usize,
    /// `LL_RESERVED_SPACE(dev)`.
    ll: usize,
    /// Before the 2024 fix (two `skb_cow_head` calls per tunnel) rather than after (one, with the cached device).
    pre_fix: bool,
}

impl HeadroomPolicy for LinuxHeadroom {
    fn before_stage(&self, buf: &mut PacketBuf, growth: usize, l2: bool) {
        if l2 {
            // l2encap: an unconditional pskb_expand_head(skb, mac_len).
            buf.expand_head(MAC_LEN);
        }
        let o = growth - if l2 { MAC_LEN } else { 0 };
        let need = if self.pre_fix {
            o + MAC_LEN
        } else {
            o + self.ll
        };
        buf.cow_head(need, self.pad);
    }

    fn after_stage(&self, buf: &mut PacketBuf) {
        if self.pre_fix {
            // The second call, after the route lookup: room for the device's link-layer header.
            buf.cow_head(self.ll, self.pad);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_match_the_kernel_definitions() {
        assert_eq!(net_skb_pad(64), 64);
        assert_eq!(net_skb_pad(16), 32);
        // Ethernet: hard_header_len 14 -> 16; already aligned 16 -> 32 (docs/references.md §5.1).
        assert_eq!(ll_reserved_space(14, 0), 16);
        assert_eq!(ll_reserved_space(16, 0), 32);
        // Worked i40e example (§5.2): headroom 206, O = 256, m = 14: need 270 -> delta 64 -> ALIGN 64.
        assert_eq!(cow_head(206, 270, 64), Some(64));
        // After the push the headroom is 14; LL_RESERVED_SPACE 16 > 14 -> ALIGN(2, 64) = 64.
        assert_eq!(cow_head(270 - 256, 16, 64), Some(64));
        assert_eq!(cow_head(206, 206, 64), None);
    }
}
