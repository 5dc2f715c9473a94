//! `lwt6 headroom`: predicts, per tunnel size, how many times a packet's buffer is reallocated by Linux before
//! the 2024 fix, after it (warm route cache / first packet of a route), and by lwt6 (see docs/headroom.md).

use super::{Failure, fail};
use crate::analysis::headroom::{
    self, Options, Prediction, Proto, Scenario, local_headroom, table1_cell, table1_mode_label,
    table1_proto_label,
};
use crate::analysis::nic;
use clap::Args;

const AFTER_HELP: &str = "\
Sizes: --segments for seg6 and rpl (SIDs / addresses), --trace-size for ioam6 (pre-allocated trace bytes,
multiples of 4, 4..=244). A..B is inclusive; a single number is one size. Without a size option the whole valid
range is shown; without --mode every mode of the protocol; without --proto the paper's Table 1 is printed for
all protocols.

H0 (headroom in front of the IPv6 header when the tunnel runs): --rx-headroom N, or --nic PRESET, or by
default i40e (forwarded) / LL_RESERVED_SPACE + 8 (--local: UDP/ICMPv6/raw sockets reserve hh_len +
sizeof(frag_hdr) in __ip6_append_data, net/ipv6/ip6_output.c; TCP reserves MAX_TCP_HEADER: use --rx-headroom).
Locally generated packets have mac_len 0 on the tunnel's first skb_cow_head; the l2encap modes are input-only.

lwt6 column: with --nic or --rx-headroom, lwt6 is modelled on the same H0 (0 reallocations when H0 covers the
growth + 14, else exactly 1); otherwise lwt6 sizes its rx headroom from the largest route, as `lwt6 pcap` does,
and never reallocates.

RPL sizes assume worst-case addresses (no compression: 8 + 16 N bytes) unless --rpl-cmpr B says every address
shares B prefix bytes with the first segment.

NIC presets (H0 = bytes before the Ethernet header + 14; x86-64, 4 KiB pages, NET_IP_ALIGN 0, no XDP unless
named; values depend on the cache line through NET_SKB_PAD / SKB_DATA_ALIGN):
  i40e            SKB_WITH_OVERHEAD(2048) - 1536 = 192 (64 B lines) -> 206; 128 B lines: 128 -> 142
                  torvalds/linux drivers/net/ethernet/intel/i40e/i40e_txrx.h (i40e_skb_pad, I40E_SKB_PAD)
  i40e-legacy-rx  napi_alloc_skb: NET_SKB_PAD + NET_IP_ALIGN -> 78 (64 B)   i40e_txrx.c i40e_construct_skb
  ixgbe           same computation as i40e on 4 KiB pages -> 206 (64 B)
                  torvalds/linux drivers/net/ethernet/intel/ixgbe/ixgbe.h (ixgbe_skb_pad, IXGBE_SKB_PAD)
  ixgbe-legacy-rx napi_alloc_skb -> 78 (64 B)
  mlx5            MLX5_RX_HEADROOM = NET_SKB_PAD -> 78 (64 B)
                  torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/en.h, en/params.c
  mlx5-xdp        XDP_PACKET_HEADROOM 256 -> 270
  virtio-net      small buffers: hdr_len 12 + VIRTNET_RX_PAD (NET_SKB_PAD) -> 90 (64 B)
                  torvalds/linux drivers/net/virtio_net.c (receive_small); mergeable buffers vary
  virtio-net-xdp  + XDP_PACKET_HEADROOM -> 346 (64 B)
  veth-afpacket   AF_PACKET SOCK_RAW sender on veth: LL_RESERVED_SPACE 16 - 14 -> 16; matches the measured
                  1 realloc/packet (encap/inline/encap.red, 3 SIDs) and 2 (l2encap), docs/references.md §5.3";

/// Arguments of `lwt6 headroom`.
#[derive(Debug, Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct HeadroomArgs {
    /// Tunnel protocol: seg6, ioam6 or rpl (default: all, printed as the paper's Table 1).
    #[arg(long)]
    pub proto: Option<String>,
    /// Mode: seg6 inline|encap|l2encap|encap.red|l2encap.red; ioam6 inline|encap; rpl inline (default: all).
    #[arg(long)]
    pub mode: Option<String>,
    /// Segment counts (seg6, rpl): A..B (inclusive) or N.
    #[arg(long, conflicts_with = "trace_size")]
    pub segments: Option<String>,
    /// IOAM pre-allocated trace sizes in bytes: A..B (multiples of 4 in between) or N.
    #[arg(long = "trace-size")]
    pub trace_size: Option<String>,
    /// seg6: the SRH carries a 40-byte HMAC TLV.
    #[arg(long)]
    pub hmac: bool,
    /// L1 cache line in bytes (NET_SKB_PAD): 32, 64 or 128.
    #[arg(long = "cache-line", default_value_t = 64, value_parser = crate::cli::within::<usize>(16, 4096))]
    pub cache_line: usize,
    /// H0: bytes in front of the IPv6 header when the tunnel runs.
    #[arg(long = "rx-headroom", conflicts_with = "nic", value_parser = crate::cli::within::<usize>(0, 65535))]
    pub rx_headroom: Option<usize>,
    /// NIC preset giving H0 (see the list below; default i40e for forwarded packets).
    #[arg(long)]
    pub nic: Option<String>,
    /// mac_len of forwarded packets.
    #[arg(long = "mac-len", default_value_t = 14, value_parser = crate::cli::within::<usize>(0, 64))]
    pub mac_len: usize,
    /// LL_RESERVED_SPACE of the egress device (16 for Ethernet).
    #[arg(long = "ll-reserved", default_value_t = 16, value_parser = crate::cli::within::<usize>(0, 4096))]
    pub ll_reserved: usize,
    /// Locally generated packets (output path, mac_len 0, socket-allocated headroom).
    #[arg(long)]
    pub local: bool,
    /// RPL: prefix bytes every address shares with the first segment (0 = uncompressed worst case, max 15).
    #[arg(long = "rpl-cmpr", default_value_t = 0, value_parser = crate::cli::within::<usize>(0, 15))]
    pub rpl_cmpr: usize,
    /// JSON: an array with one object per (protocol, mode, size).
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// Show the arithmetic step by step.
    #[arg(long)]
    pub explain: bool,
    /// The XDP driver's question instead: which routes of configuration FILE fit the headroom a driver leaves in
    /// front of a received frame (`--xdp-headroom`), i.e. run in lwt6's XDP tier (docs/xdp.md), and why not the
    /// others (same as `lwt6 check -c FILE --xdp`).
    #[arg(long = "xdp", value_name = "FILE")]
    pub xdp: Option<std::path::PathBuf>,
    /// With --xdp: the driver's headroom for a plan: 216 (XDP_PACKET_HEADROOM 256 less the 40-byte xdp_frame:
    /// veth, virtio-net, generic XDP), about 120 after an XDP-redirected veth hop.
    #[arg(long = "xdp-headroom", requires = "xdp", value_parser = crate::cli::within::<u16>(0, 4096))]
    pub xdp_headroom: Option<u16>,
}

/// `lwt6 headroom --xdp FILE`: the routes of FILE that fit the driver's headroom.
fn xdp(file: &std::path::Path, headroom: Option<u16>, json: bool) -> Result<(), Failure> {
    use lwt6_router::xdp_tier::{HEADROOM, placement};
    let cfg = super::load_config(file)?;
    let snap = lwt6_dataplane::snapshot::Snapshot::build(&cfg)
        .map_err(|e| fail(format!("{}: {e}", file.display())))?;
    let h = headroom.unwrap_or(HEADROOM);
    let p = placement::placement(&snap, h, |_| true);
    let text = if json {
        format!("{}\n", placement::json(&p))
    } else {
        placement::text(&p, h)
    };
    super::stdio::write_stdout(text.as_bytes(), "the routes")
}

/// Parses "A..B", "A..=B" or "N" into an inclusive range.
fn parse_range(s: &str, what: &str) -> Result<(usize, usize), Failure> {
    let num = |t: &str| {
        t.trim().parse::<usize>().map_err(|_| {
            fail(format!(
                "{what} '{s}': expected N or A..B with whole numbers"
            ))
        })
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.strip_prefix('=').unwrap_or(b))?),
        None => {
            let n = num(s)?;
            (n, n)
        }
    };
    if a > b {
        return Err(fail(format!("{what} '{s}': empty range ({a} > {b})")));
    }
    Ok((a, b))
}

/// Table 1 cells: per protocol, (mode, sizes with a double reallocation).
type Table1 = Vec<(Proto, Vec<(String, Vec<usize>)>)>;

/// One JSON object of `-j`, fields in the documented order.
#[derive(serde::Serialize)]
struct JsonRow<'a> {
    proto: &'static str,
    mode: &'a str,
    size: usize,
    overhead_bytes: usize,
    reallocs: JsonReallocs,
}

/// The `reallocs` object of `-j`.
#[derive(serde::Serialize)]
struct JsonReallocs {
    pre_fix: u32,
    post_fix_warm: u32,
    post_fix_first_packet: u32,
    lwt6: u32,
}

/// One computed row.
struct Row {
    scenario: Scenario,
    prediction: Prediction,
}

/// Runs `lwt6 headroom`.
pub fn run(a: HeadroomArgs) -> Result<(), Failure> {
    if let Some(f) = &a.xdp {
        return xdp(f, a.xdp_headroom, a.json);
    }
    let protos: Vec<Proto> = match &a.proto {
        Some(p) => vec![p.parse::<Proto>().map_err(fail)?],
        None => Proto::ALL.to_vec(),
    };
    let single = protos.len() == 1;
    if let Some(p) = protos.first().filter(|_| single) {
        if a.trace_size.is_some() && *p != Proto::Ioam6 {
            return Err(fail(format!(
                "--trace-size applies to ioam6; use --segments for {p}"
            )));
        }
        if a.segments.is_some() && *p == Proto::Ioam6 {
            return Err(fail(
                "--segments applies to seg6 and rpl; use --trace-size for ioam6",
            ));
        }
    } else if a.segments.is_some() || a.trace_size.is_some() || a.mode.is_some() {
        return Err(fail(
            "--mode, --segments and --trace-size need --proto (valid: seg6, ioam6, rpl)",
        ));
    }
    let preset = a.nic.as_deref().map(nic::find).transpose().map_err(fail)?;
    let (h0, h0_label, lwt6_headroom) = match (a.rx_headroom, preset) {
        (Some(h), _) => (h, format!("--rx-headroom {h}"), Some(h)),
        (None, Some(p)) => {
            let h = p.h0(a.cache_line);
            (h, format!("nic {}", p.name), Some(h))
        }
        (None, None) if a.local => (
            local_headroom(a.ll_reserved),
            format!("socket: LL_RESERVED_SPACE {} + frag_hdr 8", a.ll_reserved),
            None,
        ),
        (None, None) => {
            let p = nic::find("i40e").map_err(fail)?;
            (
                p.h0(a.cache_line),
                "nic i40e, the default".to_string(),
                None,
            )
        }
    };
    let opts = Options {
        lwt6_headroom,
        rpl_cmpr: a.rpl_cmpr,
    };
    let base = |proto: Proto, mode: &str, size: usize| Scenario {
        proto,
        mode: mode.to_string(),
        size,
        hmac: a.hmac,
        cache_line: a.cache_line,
        rx_headroom: h0,
        mac_len: a.mac_len,
        ll_reserved: a.ll_reserved,
        locally_generated: a.local,
    };

    let mut rows: Vec<Row> = Vec::new();
    let mut table1: Table1 = Vec::new();
    for &proto in &protos {
        let modes: Vec<String> = match &a.mode {
            Some(m) => vec![m.clone()],
            None => proto
                .modes()
                .iter()
                .filter(|m| !(a.local && m.starts_with("l2")))
                .map(|m| m.to_string())
                .collect(),
        };
        let mut cells = Vec::new();
        for mode in modes {
            // Validate the mode before computing sizes (a bad mode must not read as a bad size).
            if !proto.modes().contains(&mode.as_str()) {
                return Err(fail(format!(
                    "mode '{mode}' is not valid for {proto} (valid: {})",
                    proto.modes().join(", ")
                )));
            }
            let (min, max, step) = headroom::size_range(proto, &mode, a.hmac);
            let range = match (&a.segments, &a.trace_size) {
                (Some(s), _) => parse_range(s, "--segments")?,
                (_, Some(s)) => parse_range(s, "--trace-size")?,
                _ => (min, max),
            };
            let first = if step > 1 && range.0 != range.1 {
                range.0.next_multiple_of(step)
            } else {
                range.0
            };
            let mut doubles = Vec::new();
            let mut any = false;
            for size in (first..=range.1).step_by(step) {
                any = true;
                let s = base(proto, &mode, size);
                let p = headroom::predict_with(&s, &opts).map_err(fail)?;
                if p.pre_fix - u32::from(mode.starts_with("l2")) >= 2 {
                    doubles.push(size);
                }
                rows.push(Row {
                    scenario: s,
                    prediction: p,
                });
            }
            if !any {
                return Err(fail(format!(
                    "no valid {} size in {}..{} (valid: multiples of {step} from {min} to {max})",
                    proto, range.0, range.1
                )));
            }
            cells.push((mode, doubles));
        }
        table1.push((proto, cells));
    }

    if a.json {
        let v: Vec<JsonRow> = rows
            .iter()
            .map(|r| JsonRow {
                proto: r.scenario.proto.name(),
                mode: &r.scenario.mode,
                size: r.scenario.size,
                overhead_bytes: r.prediction.overhead_bytes,
                reallocs: JsonReallocs {
                    pre_fix: r.prediction.pre_fix,
                    post_fix_warm: r.prediction.post_fix_warm,
                    post_fix_first_packet: r.prediction.post_fix_first_packet,
                    lwt6: r.prediction.lwt6,
                },
            })
            .collect();
        let text = serde_json::to_string_pretty(&v).map_err(|e| fail(e.to_string()))?;
        out!("{text}");
        return Ok(());
    }

    let params = format!(
        "{} packets, cache line {} B (NET_SKB_PAD {}), H0 {} B ({h0_label}), mac_len {}, LL_RESERVED_SPACE {}{}",
        if a.local {
            "locally generated"
        } else {
            "forwarded"
        },
        a.cache_line,
        crate::analysis::skb::net_skb_pad(a.cache_line),
        h0,
        if a.local { 0 } else { a.mac_len },
        a.ll_reserved,
        if a.rpl_cmpr > 0 {
            format!(", RPL CmprI/E {}", a.rpl_cmpr)
        } else {
            String::new()
        }
    );
    let lwt6_note = match lwt6_headroom {
        Some(h) => format!("lwt6 on the same {h}-byte headroom"),
        None => "lwt6 sizes its rx headroom from the largest route".to_string(),
    };

    if !single {
        out!("Table 1: double reallocation of the skb head before the fix");
        out!("({params})");
        for (proto, cells) in &table1 {
            out!("{}", table1_proto_label(*proto));
            for (mode, sizes) in cells {
                out!(
                    "  {:<20} {}",
                    table1_mode_label(mode),
                    table1_cell(*proto, sizes)
                );
            }
        }
        if a.explain {
            explain(&rows)?;
        }
        return Ok(());
    }

    out!("# {params}; {lwt6_note}");
    out!(
        "{:<6} {:<12} {:>5} {:>9} {:>8} {:>14} {:>22} {:>5}",
        "proto",
        "mode",
        "size",
        "overhead",
        "pre_fix",
        "post_fix_warm",
        "post_fix_first_packet",
        "lwt6"
    );
    for r in &rows {
        let l2 = u32::from(r.scenario.mode.starts_with("l2"));
        let mark = if r.prediction.pre_fix - l2 >= 2 {
            "*"
        } else {
            " "
        };
        out!(
            "{:<6} {:<12} {:>5} {:>9} {:>6} {} {:>14} {:>22} {:>5}",
            r.scenario.proto.name(),
            r.scenario.mode,
            r.scenario.size,
            r.prediction.overhead_bytes,
            r.prediction.pre_fix,
            mark,
            r.prediction.post_fix_warm,
            r.prediction.post_fix_first_packet,
            r.prediction.lwt6
        );
    }
    out!(
        "* = double reallocation for the tunnel (l2encap modes add one unconditional reallocation)"
    );
    out!("Double reallocation before the fix (Table 1 style, sizes shown):");
    for (proto, cells) in &table1 {
        for (mode, sizes) in cells {
            out!(
                "  {} {:<20} {}",
                table1_proto_label(*proto),
                table1_mode_label(mode),
                table1_cell(*proto, sizes)
            );
        }
    }
    if a.explain {
        explain(&rows)?;
    }
    Ok(())
}

fn explain(rows: &[Row]) -> Result<(), Failure> {
    for r in rows {
        out!("");
        for line in &r.prediction.steps {
            out!("{line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> HeadroomArgs {
        HeadroomArgs {
            proto: Some("seg6".into()),
            mode: Some("encap".into()),
            segments: Some("13".into()),
            trace_size: None,
            hmac: false,
            cache_line: 64,
            rx_headroom: None,
            nic: None,
            mac_len: 14,
            ll_reserved: 16,
            local: false,
            rpl_cmpr: 0,
            json: true,
            explain: false,
            xdp: None,
            xdp_headroom: None,
        }
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("13..17", "x").unwrap(), (13, 17));
        assert_eq!(parse_range("1..=3", "x").unwrap(), (1, 3));
        assert_eq!(parse_range("5", "x").unwrap(), (5, 5));
        assert!(parse_range("a..b", "x").is_err());
        assert!(
            parse_range("9..3", "x")
                .unwrap_err()
                .message
                .contains("empty range")
        );
    }

    #[test]
    fn errors_name_the_valid_values() {
        assert!(run(args()).is_ok());
        let e = run(HeadroomArgs {
            proto: Some("srv6".into()),
            ..args()
        })
        .unwrap_err();
        assert!(e.message.contains("seg6, ioam6, rpl"), "{}", e.message);
        let e = run(HeadroomArgs {
            proto: Some("ioam6".into()),
            mode: Some("inline".into()),
            ..args()
        })
        .unwrap_err();
        assert!(e.message.contains("--trace-size"), "{}", e.message);
        let e = run(HeadroomArgs {
            mode: Some("bogus".into()),
            ..args()
        })
        .unwrap_err();
        assert!(
            e.message.contains("inline, encap, l2encap"),
            "{}",
            e.message
        );
        let e = run(HeadroomArgs {
            nic: Some("e1000".into()),
            ..args()
        })
        .unwrap_err();
        assert!(e.message.contains("veth-afpacket"), "{}", e.message);
        let e = run(HeadroomArgs {
            proto: None,
            ..args()
        })
        .unwrap_err();
        assert!(e.message.contains("need --proto"), "{}", e.message);
        let e = run(HeadroomArgs {
            proto: Some("ioam6".into()),
            mode: Some("encap".into()),
            segments: None,
            trace_size: Some("197..199".into()),
            ..args()
        })
        .unwrap_err();
        assert!(e.message.contains("multiples of 4"), "{}", e.message);
    }
}
