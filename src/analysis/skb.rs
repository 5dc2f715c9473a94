//! The Linux skb headroom arithmetic behind the double reallocation (behaviour spec §5.1), as plain functions.
//!
//! - `NET_SKB_PAD = max(32, L1_CACHE_BYTES)`
//! - `skb_cow_head(skb, need)`: if `need > headroom`, `pskb_expand_head(skb, ALIGN(need - headroom, NET_SKB_PAD), 0)`,
//!   which grows the headroom by exactly that amount (allocator slack goes to the tailroom).
//! - `LL_RESERVED_SPACE(dev) = ((hard_header_len + needed_headroom) & ~15) + 16` (HH_DATA_MOD = 16).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_match_the_kernel_definitions() {
        assert_eq!(net_skb_pad(64), 64);
        assert_eq!(net_skb_pad(16), 32);
        // Ethernet: hard_header_len 14 -> 16; already aligned 16 -> 32 (behaviour spec §5.1).
        assert_eq!(ll_reserved_space(14, 0), 16);
        assert_eq!(ll_reserved_space(16, 0), 32);
        // Worked i40e example (§5.2): headroom 206, O = 256, m = 14: need 270 -> delta 64 -> ALIGN 64.
        assert_eq!(cow_head(206, 270, 64), Some(64));
        // After the push the headroom is 14; LL_RESERVED_SPACE 16 > 14 -> ALIGN(2, 64) = 64.
        assert_eq!(cow_head(270 - 256, 16, 64), Some(64));
        assert_eq!(cow_head(206, 206, 64), None);
    }
}
