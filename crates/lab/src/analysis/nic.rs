//! Receive headroom of common Linux NIC drivers: H0, the bytes in front of the IPv6 header when a forwarded packet
//! reaches a lightweight tunnel (after `eth_type_trans` pulled the 14-byte Ethernet header).
//!
//! Every preset is derived from the driver source (repository + path given in [`NicPreset::source`]); all assume
//! x86-64 (`NET_IP_ALIGN` = 0, 4 KiB pages, `sizeof(struct skb_shared_info)` = 320 with 17 frags) and no XDP
//! program unless the name says so. The values depend on the L1 cache line through `NET_SKB_PAD` and
//! `SKB_DATA_ALIGN`, so they are functions of the cache line.

use super::skb::{align, net_skb_pad};

/// Ethernet header length (`ETH_HLEN`), pulled by `eth_type_trans` before the stack sees the packet.
pub const ETH_HLEN: usize = 14;
/// `sizeof(struct skb_shared_info)` on x86-64 with `MAX_SKB_FRAGS` = 17 (docs/references.md §5.1).
pub const SHINFO_SIZE: usize = 320;
/// `XDP_PACKET_HEADROOM`.
pub const XDP_PACKET_HEADROOM: usize = 256;
/// `sizeof(struct virtio_net_hdr_mrg_rxbuf)`: the virtio-net header length with VIRTIO_F_VERSION_1 or
/// VIRTIO_NET_F_MRG_RXBUF (the usual case with QEMU/vhost).
pub const VIRTIO_NET_HDR_LEN: usize = 12;

/// How a driver lays out its receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxLayout {
    /// Intel `build_skb` on half pages (i40e `I40E_SKB_PAD`, ixgbe `IXGBE_SKB_PAD` with 4 KiB pages):
    /// pad = `SKB_WITH_OVERHEAD(ALIGN(rx_buf_len, 2048)) - rx_buf_len` with rx_buf_len 1536 (3072 when
    /// `NET_SKB_PAD + 1536 > SKB_WITH_OVERHEAD(2048)`).
    IntelBuildSkb,
    /// `NET_SKB_PAD + NET_IP_ALIGN` in front of the frame plus `extra` bytes (napi_alloc_skb copy path, mlx5
    /// `MLX5_RX_HEADROOM`, virtio-net `VIRTNET_RX_PAD` + the virtio header).
    SkbPad {
        /// Bytes beyond NET_SKB_PAD (virtio header, XDP headroom).
        extra: usize,
    },
    /// A fixed number of bytes in front of the Ethernet header, independent of the cache line.
    Fixed {
        /// Bytes in front of the Ethernet header.
        before_mac: usize,
    },
}

/// A NIC preset: a driver configuration and the headroom it gives received packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NicPreset {
    /// Name used on the command line (`--nic NAME`).
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Where the number comes from (repository + path, or the measurement).
    pub source: &'static str,
    /// Buffer layout.
    pub layout: RxLayout,
}

impl NicPreset {
    /// Bytes in front of the Ethernet header of a received frame for this cache line size.
    pub fn pad_before_mac(&self, cache_line: usize) -> usize {
        match self.layout {
            RxLayout::IntelBuildSkb => intel_build_skb_pad(cache_line),
            RxLayout::SkbPad { extra } => net_skb_pad(cache_line) + extra,
            RxLayout::Fixed { before_mac } => before_mac,
        }
    }

    /// H0: bytes in front of the IPv6 (network) header as the tunnel sees it, i.e. the pad plus `ETH_HLEN`.
    pub fn h0(&self, cache_line: usize) -> usize {
        self.pad_before_mac(cache_line) + ETH_HLEN
    }
}

/// `SKB_WITH_OVERHEAD(x)` = x − `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`.
fn skb_with_overhead(x: usize, cache_line: usize) -> usize {
    x.saturating_sub(align(SHINFO_SIZE, cache_line))
}

/// i40e/ixgbe `*_skb_pad()` for 4 KiB pages (`NET_IP_ALIGN` = 0): the headroom of a `build_skb` receive buffer.
pub fn intel_build_skb_pad(cache_line: usize) -> usize {
    let too_small = net_skb_pad(cache_line) + 1536 > skb_with_overhead(2048, cache_line);
    let rx_buf_len = if too_small { 3072 } else { 1536 };
    let page_size = align(rx_buf_len, 2048);
    skb_with_overhead(page_size, cache_line).saturating_sub(rx_buf_len)
}

/// The presets, in help order.
pub const PRESETS: &[NicPreset] = &[
    NicPreset {
        name: "i40e",
        description: "Intel XL710/X710 (i40e), default build_skb receive (the paper's DUT)",
        source: "torvalds/linux drivers/net/ethernet/intel/i40e/i40e_txrx.h (i40e_skb_pad, I40E_SKB_PAD)",
        layout: RxLayout::IntelBuildSkb,
    },
    NicPreset {
        name: "i40e-legacy-rx",
        description: "i40e with `ethtool --set-priv-flags DEV legacy-rx on`: napi_alloc_skb copy path",
        source: "torvalds/linux drivers/net/ethernet/intel/i40e/i40e_txrx.c (i40e_construct_skb -> \
                 napi_alloc_skb, which reserves NET_SKB_PAD + NET_IP_ALIGN); paper footnote 1",
        layout: RxLayout::SkbPad { extra: 0 },
    },
    NicPreset {
        name: "ixgbe",
        description: "Intel 82599/X5xx (ixgbe), default build_skb receive, 4 KiB pages",
        source: "torvalds/linux drivers/net/ethernet/intel/ixgbe/ixgbe.h (ixgbe_skb_pad, IXGBE_SKB_PAD; \
                 NET_SKB_PAD + NET_IP_ALIGN only with pages >= 8 KiB)",
        layout: RxLayout::IntelBuildSkb,
    },
    NicPreset {
        name: "ixgbe-legacy-rx",
        description: "ixgbe with the legacy-rx private flag: napi_alloc_skb copy path",
        source: "torvalds/linux drivers/net/ethernet/intel/ixgbe/ixgbe_main.c (ixgbe_construct_skb -> \
                 napi_alloc_skb: NET_SKB_PAD + NET_IP_ALIGN)",
        layout: RxLayout::SkbPad { extra: 0 },
    },
    NicPreset {
        name: "mlx5",
        description: "NVIDIA/Mellanox ConnectX-4+ (mlx5e), linear RQ, no XDP",
        source: "torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/en.h (MLX5_RX_HEADROOM = NET_SKB_PAD) \
                 and en/params.c (mlx5e_get_linear_rq_headroom: NET_IP_ALIGN + MLX5_RX_HEADROOM)",
        layout: RxLayout::SkbPad { extra: 0 },
    },
    NicPreset {
        name: "mlx5-xdp",
        description: "mlx5e with an XDP program attached (XDP_PACKET_HEADROOM instead of NET_SKB_PAD)",
        source: "torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/en/params.c \
                 (mlx5e_get_linear_rq_headroom: NET_IP_ALIGN + XDP_PACKET_HEADROOM)",
        layout: RxLayout::Fixed {
            before_mac: XDP_PACKET_HEADROOM,
        },
    },
    NicPreset {
        name: "virtio-net",
        description: "virtio-net small receive buffers (no mergeable buffers), no XDP: VIRTNET_RX_PAD + 12-byte \
                      virtio header",
        source: "torvalds/linux drivers/net/virtio_net.c (VIRTNET_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD; \
                 receive_small: headroom = vi->hdr_len + VIRTNET_RX_PAD + xdp_headroom). Mergeable buffers \
                 (VIRTIO_NET_F_MRG_RXBUF) have no fixed headroom: use --rx-headroom",
        layout: RxLayout::SkbPad {
            extra: VIRTIO_NET_HDR_LEN,
        },
    },
    NicPreset {
        name: "virtio-net-xdp",
        description: "virtio-net small buffers with an XDP program: + XDP_PACKET_HEADROOM (256)",
        source: "torvalds/linux drivers/net/virtio_net.c (virtnet_get_headroom = XDP_PACKET_HEADROOM when XDP \
                 is enabled; receive_small)",
        layout: RxLayout::SkbPad {
            extra: VIRTIO_NET_HDR_LEN + XDP_PACKET_HEADROOM,
        },
    },
    NicPreset {
        name: "veth-afpacket",
        description: "veth fed by an AF_PACKET SOCK_RAW sender (the oracle setup here): LL_RESERVED_SPACE(16) \
                      reserved by packet_snd, minus the 14-byte link header the sender writes",
        source: "packet_snd in torvalds/linux net/packet/af_packet.c (hlen = LL_RESERVED_SPACE(dev), then \
                 skb_reserve(skb, -hard_header_len) for SOCK_RAW); consistent with the measurement in \
                 docs/references.md §5.3 (seg6 encap/inline/encap.red 3 SIDs: 1.0 realloc/packet, \
                 l2encap: 2.0, plain forward: 0)",
        layout: RxLayout::Fixed { before_mac: 2 },
    },
];

/// Names of all presets, comma-separated (for error messages and help).
pub fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks a preset up by name; the error lists the valid names.
pub fn find(name: &str) -> Result<&'static NicPreset, String> {
    PRESETS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("unknown NIC preset '{name}' (valid: {})", preset_names()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i40e_matches_the_cover_letter_and_the_spec() {
        // §5.2: 2048 − 320 − 1536 = 192 before the MAC header, H0 = 206 (64-byte lines).
        let i40e = find("i40e").unwrap();
        assert_eq!(i40e.pad_before_mac(64), 192);
        assert_eq!(i40e.h0(64), 206);
        // 32-byte lines: ALIGN(320, 32) = 320, same 192 -> 206 (spec §5.2 table row P = 32).
        assert_eq!(i40e.h0(32), 206);
        // 128-byte lines: ALIGN(320, 128) = 384; NET_SKB_PAD + 1536 = 1664 is not > 2048 − 384 = 1664, so
        // rx_buf_len stays 1536 and pad = 1664 − 1536 = 128 -> H0 = 142 (spec §5.2 table, last row).
        assert_eq!(i40e.h0(128), 142);
        // ixgbe uses the same computation on 4 KiB pages.
        assert_eq!(find("ixgbe").unwrap().h0(64), 206);
    }

    #[test]
    fn skb_pad_presets() {
        // napi_alloc_skb / MLX5_RX_HEADROOM: NET_SKB_PAD (64) + NET_IP_ALIGN (0) + ETH_HLEN = 78.
        assert_eq!(find("i40e-legacy-rx").unwrap().h0(64), 78);
        assert_eq!(find("mlx5").unwrap().h0(64), 78);
        assert_eq!(find("mlx5").unwrap().h0(32), 46);
        assert_eq!(find("mlx5-xdp").unwrap().h0(64), 270);
        // virtio small buffers: 12 + 64 + 14 = 90; with XDP + 256 = 346.
        assert_eq!(find("virtio-net").unwrap().h0(64), 90);
        assert_eq!(find("virtio-net-xdp").unwrap().h0(64), 346);
        // AF_PACKET on veth: 16 − 14 = 2 before the MAC, H0 = 16.
        assert_eq!(find("veth-afpacket").unwrap().h0(128), 16);
    }

    #[test]
    fn unknown_preset_lists_the_valid_ones() {
        let e = find("e1000").unwrap_err();
        assert!(e.contains("e1000") && e.contains("i40e-legacy-rx") && e.contains("veth-afpacket"));
        assert_eq!(find("I40E").unwrap().name, "i40e");
    }
}
