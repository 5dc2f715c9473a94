//! The `lwt6` binary: exit codes, error messages naming what is wrong, no partial output.

use std::path::PathBuf;
use std::process::Command;

fn lwt6() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lwt6"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[path = "support/tmpdir.rs"]
mod tmpdir;

fn tmp(name: &str) -> tmpdir::TmpDir {
    tmpdir::TmpDir::new("cli", name)
}

#[test]
fn truncated_capture_is_an_error_and_writes_nothing() {
    let d = tmp("trunc");
    let full = std::fs::read(root().join("examples/seg6/input.pcap")).unwrap();
    let cut = d.join("cut.pcap");
    std::fs::write(&cut, &full[..full.len() - 5]).unwrap();
    let out = d.join("out.pcapng");
    // The frames before the cut are processed and written (streaming) before the reader reaches it: none of it
    // may become visible.
    let dir = d.join("per-dev");
    let o = lwt6()
        .args(["pcap", "-c"])
        .arg(root().join("examples/seg6/router.conf"))
        .args(["--in-dev", "r0"])
        .arg(&cut)
        .arg(&out)
        .arg("--out-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("truncated capture") && err.contains("frame 9"),
        "{err}"
    );
    assert!(!out.exists(), "no partial output");
    assert_eq!(
        std::fs::read_dir(&dir).map_or(0, |r| r.count()),
        0,
        "no per-device output, no temporary files left"
    );
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        2,
        "no temporary files left"
    );
}

#[test]
fn bad_config_names_line_and_token() {
    let d = tmp("badconf");
    let conf = d.join("r.conf");
    std::fs::write(&conf, "link add r0\n# comment\n-6 route add fd00::/64 encap seg6 mode encapz segs fc00::1 dev r0\n").unwrap();
    let o = lwt6().args(["check", "-c"]).arg(&conf).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 3") && err.contains("'encapz'") && err.contains("l2encap.red"),
        "{err}"
    );
}

#[test]
fn unknown_in_dev_lists_the_interfaces() {
    let o = lwt6()
        .args(["pcap", "-c"])
        .arg(root().join("examples/rpl/router.conf"))
        .args(["--in-dev", "eth9"])
        .arg(root().join("examples/rpl/input.pcap"))
        .arg("/nonexistent/out.pcapng")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("eth9") && err.contains("r0, r1"), "{err}");
}

#[test]
fn stats_json_balances_and_out_dir_splits_by_device() {
    let d = tmp("json");
    let o = lwt6()
        .args(["pcap", "-c"])
        .arg(root().join("examples/seg6/router.conf"))
        .args(["--in-dev", "r0", "--stats", "-j", "--out-dir"])
        .arg(&d)
        .arg(root().join("examples/seg6/input.pcap"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rx"], 9);
    assert_eq!(v["tx"], 6);
    assert_eq!(v["dropped"], 3);
    assert_eq!(v["drops"]["no_route"], 1);
    assert_eq!(v["balanced"], true);
    assert_eq!(v["reallocs"], 0);
    let r1 = lwt6::io::pcap::read_file(&d.join("r1.pcap")).unwrap();
    let r0 = lwt6::io::pcap::read_file(&d.join("r0.pcap")).unwrap();
    assert_eq!(
        (r1.len(), r0.len()),
        (6, 2),
        "6 tunnelled frames on r1, 2 ICMPv6 errors back on r0"
    );
}

#[test]
fn show_routes_json_reports_linux_and_lwt6_mtu() {
    let o = lwt6()
        .args(["show", "routes", "-j", "-c"])
        .arg(root().join("examples/seg6/router.conf"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let red = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dst"] == "fd00:93::/64")
        .unwrap();
    // encap.red, 3 SIDs: Linux subtracts the unreduced 40 + 56 = 96 (1404); the real overhead is 40 + 40 (1420).
    assert_eq!(red["lwt6"]["linux_effective_mtu"], 1404);
    assert_eq!(red["lwt6"]["effective_mtu"], 1420);
    // l2encap, 2 SIDs: Linux subtracts nothing (no headroom for the l2 modes); the outer packet carries 40 + 40
    // bytes of headers and the received 14-byte Ethernet header: 1500 - 94 = 1406.
    let l2 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dst"] == "fd00:94::/64")
        .unwrap();
    assert_eq!(l2["lwt6"]["linux_effective_mtu"], 1500);
    assert_eq!(l2["lwt6"]["effective_mtu"], 1406);
}

#[test]
fn unknown_bench_strategy_lists_the_valid_ones() {
    let o = lwt6()
        .args(["bench", "sweep", "--quick", "--strategies", "lwt6,fastest"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown strategy 'fastest'")
            && err.contains("pre-fix, post-fix, lwt6, lwt6-tiny, lwt6-general, lwt6-memcpy"),
        "{err}"
    );
    // The program's name once, as every other error gives it.
    assert!(err.starts_with("lwt6: bench: "), "{err}");
}

#[test]
fn a_non_utf8_byte_names_its_line_and_column() {
    let d = tmp("utf8");
    let conf = d.join("bad.conf");
    std::fs::write(&conf, b"link add r0\nlink add r1\n# caf\xe9 au lait\n").unwrap();
    let o = lwt6().args(["check", "-c"]).arg(&conf).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 3: not UTF-8 (invalid byte at column 6)"),
        "{err}"
    );
}

#[test]
fn bench_fib_reports_json() {
    let o = lwt6()
        .args([
            "bench",
            "fib",
            "--routes",
            "2000",
            "--lookups",
            "1000",
            "--runs",
            "1",
            "-j",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["routes"], 2000);
    // 1800 plain routes and fc00::/16 share one plan; each of the 200 seg6 routes has its own.
    assert_eq!(v["plans"], 201);
    assert!(v["mixed_mlookups_per_s"]["median"].as_f64().unwrap() > 0.0);
}

#[test]
fn numeric_options_are_bounded_and_say_the_range() {
    let pcap = |headroom: &'static str| {
        let mut v = vec!["pcap", "-c", "x.conf", "--in-dev", "r0", "--rx-headroom"];
        v.extend([headroom, "a", "b"]);
        v
    };
    for (args, range) in [
        (pcap("18446744073709551615"), "0..=8192"),
        (pcap("4294967296"), "0..=8192"),
        (vec!["bench", "floor", "--runs", "0"], "1..=1000000"),
        (vec!["bench", "fib", "--routes", "0"], "1..=16777215"),
        (vec!["headroom", "--rpl-cmpr", "16"], "0..=15"),
    ] {
        let o = lwt6().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("is not in {range}")),
            "{args:?}: {err}"
        );
    }
}

/// The seg6 example's IPv6 frames as `tcpdump -i any` would have captured them (Linux cooked, SLL) and as a
/// raw IPv6 capture: read as received on --in-dev, they give what the Ethernet capture gives.
#[test]
fn cooked_and_raw_captures_read_as_received_on_in_dev() {
    use lwt6::io::pcap;
    let d = tmp("linktypes");
    let frames = pcap::read_file(&root().join("examples/seg6/input.pcap")).unwrap();
    let v6: Vec<&pcap::CapturedFrame> = frames
        .iter()
        .filter(|f| f.data[12..14] == [0x86, 0xdd])
        .collect();
    assert!(v6.len() >= 3);
    // A classic pcap of `bodies`, its link type field (file header offset 20) set to `linktype`.
    let write = |name: &str, linktype: u32, bodies: Vec<Vec<u8>>| {
        let recs: Vec<(u64, &[u8])> = bodies.iter().map(|b| (1_000u64, b.as_slice())).collect();
        let mut bytes = pcap::pcap_bytes(&recs);
        bytes[20..24].copy_from_slice(&linktype.to_le_bytes());
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let eth = write("eth.pcap", 1, v6.iter().map(|f| f.data.clone()).collect());
    // SLL: packet type 0, ARPHRD_ETHER, address length 6, the source MAC padded to 8, protocol.
    let sll = write(
        "sll.pcap",
        113,
        v6.iter()
            .map(|f| {
                [
                    &[0, 0, 0, 1, 0, 6][..],
                    &f.data[6..12],
                    &[0, 0],
                    &f.data[12..14],
                    &f.data[14..],
                ]
                .concat()
            })
            .collect(),
    );
    let raw = write(
        "raw.pcap",
        229,
        v6.iter().map(|f| f.data[14..].to_vec()).collect(),
    );
    let run = |input: &PathBuf| {
        let out = d.join("out.pcapng");
        let o = lwt6()
            .args(["pcap", "-c"])
            .arg(root().join("examples/seg6/router.conf"))
            .args(["--in-dev", "r0", "--stats", "-j"])
            .arg(input)
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let sent: Vec<Vec<u8>> = pcap::read_file(&out)
            .unwrap()
            .into_iter()
            .map(|f| f.data)
            .collect();
        sent
    };
    let want = run(&eth);
    assert!(!want.is_empty());
    assert_eq!(run(&sll), want);
    // Raw IP has no source MAC: the same number of frames out (l2encap would carry the zero MAC).
    assert_eq!(run(&raw).len(), want.len());
    // A link type lwt6 does not read is named, with the frame.
    let bad = write("bad.pcap", 147, vec![vec![0x60, 0, 0, 0]]);
    let o = lwt6().args(["decode"]).arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("frame 1: link type 147"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn pcap_trace_prints_the_frames_it_traced() {
    let d = tmp("trace");
    let pcap = |extra: &[&str]| {
        lwt6()
            .args(["pcap", "-c"])
            .arg(root().join("examples/seg6/router.conf"))
            .args(["--in-dev", "r0"])
            .arg(root().join("examples/seg6/input.pcap"))
            .arg(d.join("out.pcapng"))
            .args(extra)
            .output()
            .unwrap()
    };
    // The capture: fd00:91::1 .. fd00:95::1 (seg6 modes), 10.99.0.7 (IPv4 in seg6), fd00:92::2 with hop limit 1,
    // 2001:db8:dead::1 (no route), a runt.
    let o = pcap(&["--trace", "2", "--trace-filter", "dst fd00:92::/64", "-j"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["recorded"].as_u64()),
        (Some("done"), Some(2))
    );
    let f = &v["frames"];
    assert_eq!(f[0]["headers"][1]["dst"], "fd00:92::1");
    assert_eq!(f[0]["outcome"], "sent");
    assert_eq!(f[1]["headers"][1]["dst"], "fd00:92::2");
    assert_eq!(
        (f[1]["outcome"].as_str(), f[1]["drop_reason"].as_str()),
        (Some("dropped"), Some("hop_limit_exceeded"))
    );
    // More frames asked for than the capture has: what there was, said to be incomplete; text for people.
    let o = pcap(&["--trace", "100"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("trace incomplete: 9 of 100 frames recorded\n"),
        "{text}"
    );
    assert!(
        text.contains("=> dropped: no_route") && text.contains("=> dropped: ipv6_malformed"),
        "{text}"
    );
    // Without a filter every frame is traced, numbered as `lwt6 decode` and tshark's frame.number do: from 1.
    let numbers: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("frame ")?.split(':').next())
        .collect();
    assert_eq!(
        numbers,
        ["1", "2", "3", "4", "5", "6", "7", "8", "9"],
        "{text}"
    );
    // A bad filter: nothing processed, the token named.
    let o = pcap(&["--trace", "1", "--trace-filter", "dst fd00::/64 via r1"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--trace-filter: 'via': unknown trace filter keyword"),
        "{err}"
    );
    let o = pcap(&["--trace", "0"]);
    assert_eq!(o.status.code(), Some(2), "clap refuses 0");
}

/// `bench ioam --from-csv` re-plots a CSV without measuring; a bad row is named by line and column.
#[test]
fn bench_ioam_replots_from_csv() {
    let d = tmp("ioam-from-csv");
    let csv = d.join("ioam.csv");
    std::fs::write(
        &csv,
        "experiment,label,x,mpps_median,mpps_min,mpps_max,ns_per_packet\n\
         share,0%,0,10.0,9.0,11.0,100.0\n\
         share,100%,100,8.0,7.0,9.0,125.0\n",
    )
    .unwrap();
    let out = d.join("plots");
    let o = lwt6()
        .args(["bench", "ioam", "--from-csv"])
        .arg(&csv)
        .arg("--out-dir")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(out.join("ioam-share.svg")).unwrap();
    assert!(
        svg.contains(">100%</text>") && svg.contains("best run"),
        "{svg}"
    );
    std::fs::write(
        &csv,
        "experiment,label,x,mpps_median,mpps_min,mpps_max,ns_per_packet\nshare,0%,0,ten,9.0,11.0,100.0\n",
    )
    .unwrap();
    let o = lwt6()
        .args(["bench", "ioam", "--from-csv"])
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 2, column 4 (mpps_median): 'ten'"),
        "{err}"
    );
}

/// `-j` is `--json` in every subcommand that has one, and nothing else (`bench sweep --jobs` has no short flag).
#[test]
fn short_j_means_json_everywhere() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, seen: &mut usize) {
        for a in cmd.get_arguments() {
            let long = a.get_long();
            if a.get_short() == Some('j') {
                assert_eq!(long, Some("json"), "{path}: -j is --{long:?}");
                *seen += 1;
            }
            if long == Some("json") {
                assert_eq!(a.get_short(), Some('j'), "{path}: --json has no -j");
            }
        }
        for s in cmd.get_subcommands() {
            walk(s, &format!("{path} {}", s.get_name()), seen);
        }
    }
    let mut seen = 0;
    walk(&lwt6::cli::Cli::command(), "lwt6", &mut seen);
    assert!(seen >= 8, "{seen} subcommands with -j");
    let o = lwt6()
        .args(["bench", "sweep", "-j", "2", "--quick"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("'-j'"));
}

/// A pcapng block (pcapng §3.1, little-endian): type, total length, body padded to 4, total length.
fn pcapng_block(ty: u32, body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    b.resize(body.len().next_multiple_of(4), 0);
    let total = (b.len() + 12) as u32;
    let mut v = ty.to_le_bytes().to_vec();
    v.extend(total.to_le_bytes());
    v.extend(b);
    v.extend(total.to_le_bytes());
    v
}

/// A pcapng option (§3.5): code, length, value padded to 4.
fn pcapng_option(code: u16, value: &[u8]) -> Vec<u8> {
    let mut v = code.to_le_bytes().to_vec();
    v.extend((value.len() as u16).to_le_bytes());
    v.extend(value);
    v.resize(4 + value.len().next_multiple_of(4), 0);
    v
}

/// `lwt6 decode` shows each frame's time and interface as tshark reads them from the same pcapng (two interfaces:
/// one named with nanosecond timestamps, one with only a description and the default microseconds), and `-c N`
/// stops after N frames.
#[test]
fn decode_shows_time_and_interface_as_tshark_and_stops_at_count() {
    // An Ethernet + IPv6 + UDP frame (RFC 8200 §3, RFC 768); the same bytes in each packet.
    let mut frame = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd];
    frame.extend([0x60, 0, 0, 0, 0, 8, 17, 64]);
    frame.extend([0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    frame.extend([0xfd, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    frame.extend([0x9c, 0x40, 0x0d, 0x05, 0, 8, 0, 0]);
    let idb = |opts: &[Vec<u8>]| {
        // §4.2: link type 1 (Ethernet), reserved, snaplen 0 (none), options, opt_endofopt.
        let mut b = vec![1, 0, 0, 0, 0, 0, 0, 0];
        for o in opts {
            b.extend(o);
        }
        b.extend(pcapng_option(0, &[]));
        pcapng_block(1, &b)
    };
    let epb = |iface: u32, ts: u64| {
        // §4.3: interface id, timestamp high and low (in the interface's resolution), captured and original length.
        let mut b = iface.to_le_bytes().to_vec();
        b.extend(((ts >> 32) as u32).to_le_bytes());
        b.extend((ts as u32).to_le_bytes());
        b.extend((frame.len() as u32).to_le_bytes());
        b.extend((frame.len() as u32).to_le_bytes());
        b.extend(&frame);
        pcapng_block(6, &b)
    };
    // §4.1: byte-order magic, version 1.0, section length -1 (unknown).
    let mut shb = 0x1a2b_3c4d_u32.to_le_bytes().to_vec();
    shb.extend([1, 0, 0, 0]);
    shb.extend((-1i64).to_le_bytes());
    let mut file = pcapng_block(0x0a0d_0d0a, &shb);
    // Interface 0: if_name "tap-west", if_tsresol 9 (nanoseconds). Interface 1: if_description only, microseconds.
    file.extend(idb(&[
        pcapng_option(2, b"tap-west"),
        pcapng_option(9, &[9]),
    ]));
    file.extend(idb(&[pcapng_option(3, b"uplink to r2")]));
    file.extend(epb(0, 1_767_225_600_123_456_789));
    file.extend(epb(1, 1_767_225_601_000_002));
    file.extend(epb(0, 1_767_225_602_000_000_001));
    let d = tmp("decode-time");
    let path = d.join("two.pcapng");
    std::fs::write(&path, &file).unwrap();

    // What tshark reads: frame number, epoch time, interface id, name, description.
    let t = Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args(["-T", "fields", "-E", "separator=|"])
        .args([
            "-e",
            "frame.number",
            "-e",
            "frame.time_epoch",
            "-e",
            "frame.interface_id",
        ])
        .args([
            "-e",
            "frame.interface_name",
            "-e",
            "frame.interface_description",
        ])
        .output()
        .expect("tshark (scripts/install-test-deps.sh installs it)");
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let tshark: Vec<Vec<String>> = String::from_utf8(t.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect();
    assert_eq!(tshark.len(), 3, "{tshark:?}");
    // An epoch time in nanoseconds, from tshark's decimal seconds (however many fraction digits it prints).
    let ns = |t: &str| {
        let (s, f) = t.split_once('.').unwrap_or((t, ""));
        let f = format!("{f:0<9}");
        s.parse::<u64>().unwrap() * 1_000_000_000 + f[..9].parse::<u64>().unwrap()
    };

    let o = lwt6().arg("decode").arg(&path).arg("-j").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ours = v.as_array().unwrap();
    assert_eq!(ours.len(), 3);
    for (j, t) in ours.iter().zip(&tshark) {
        assert_eq!(j["frame"].to_string(), t[0]);
        assert_eq!(ns(j["time"].as_str().unwrap()), ns(&t[1]), "{j} {t:?}");
        assert_eq!(j["interface"]["id"].to_string(), t[2]);
        // tshark's interface_name falls back to the description when the block has no if_name.
        let i = &j["interface"];
        let shown = i["name"].as_str().or(i["description"].as_str());
        assert_eq!(shown.unwrap_or(""), t[3], "{tshark:?}");
        assert_eq!(j["interface"]["description"].as_str().unwrap_or(""), t[4]);
    }
    // The values themselves, from the blocks written above.
    assert_eq!(ns(&tshark[1][1]), 1_767_225_601_000_002_000);
    assert_eq!(
        (tshark[0][3].as_str(), tshark[1][4].as_str()),
        ("tap-west", "uplink to r2")
    );

    // Text: number, time, interface (name, else description), length; -c 2 / --count 2 stops after two.
    for count in ["-c", "--count"] {
        let o = lwt6()
            .arg("decode")
            .arg(&path)
            .args([count, "2"])
            .output()
            .unwrap();
        let text = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(
            lines[0][..4],
            ["1", "1767225600.123456789", "tap-west", "62B"],
            "{text}"
        );
        assert_eq!(
            lines[1][..6],
            ["2", "1767225601.000002000", "uplink", "to", "r2", "62B"],
            "{text}"
        );
    }
    let o = lwt6()
        .arg("decode")
        .arg(&path)
        .args(["-c", "1", "-j"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    // A classic pcap has no interfaces: null in JSON, `-` in text.
    let o = lwt6()
        .arg("decode")
        .arg(root().join("examples/seg6/input.pcap"))
        .args(["-j", "-c", "1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v[0]["interface"].is_null() && v[0]["time"].is_string(),
        "{v}"
    );
    let o = lwt6()
        .args(["decode", "-c", "0"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "clap refuses 0");
}

#[test]
fn xdp_placement_at_the_headroom_boundary() {
    // seg6 encap with 3 SIDs adds an outer IPv6 header (40 bytes, RFC 8200) and an SRH of 8 + 16 * 3 bytes
    // (RFC 8754 §2): 96 bytes. A driver leaving 96 runs it; one leaving 95 hands its frames to the worker.
    let d = tmp("xdpplace");
    let conf = d.join("r.conf");
    std::fs::write(
        &conf,
        "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
         addr add fd00:2::1/64 dev r1\nneigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n\
         -6 route add fc00::/16 via fd00:2::2 dev r1\n\
         -6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1\n\
         -4 route add 10.9.0.0/16 encap seg6 mode l2encap segs fc00::1 dev r1\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let o = lwt6().args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let c = conf.to_str().unwrap();
    let at = run(&["check", "-c", c, "--xdp", "--xdp-headroom", "96"]);
    assert!(
        at.contains("fd00:91::/64 driver seg6_encap (adds 96 bytes)\n"),
        "{at}"
    );
    assert!(at.contains("fc00::/16 driver forward\n"), "{at}");
    // l2encap of IPv4 packets with one SID: the outer IPv6 header, an SRH of 8 + 16 bytes, and the received
    // Ethernet header (14) the inner frame keeps: 78 bytes.
    assert!(
        at.contains("10.9.0.0/16 driver seg6_l2encap_v4 (adds 78 bytes)\n"),
        "{at}"
    );
    let v4 = run(&["check", "-c", c, "--xdp", "--xdp-headroom", "77"]);
    assert!(
        v4.contains("10.9.0.0/16 worker headroom (adds 78 bytes, the driver leaves 77)\n"),
        "{v4}"
    );
    let short = run(&["headroom", "--xdp", c, "--xdp-headroom", "95"]);
    assert!(
        short.contains("fd00:91::/64 worker headroom (adds 96 bytes, the driver leaves 95)\n"),
        "{short}"
    );
    // The router's own address is delivered by the worker, never forwarded in the driver.
    assert!(short.contains("fd00:2::1/128 worker local\n"), "{short}");
    let j: serde_json::Value = serde_json::from_str(&run(&["headroom", "--xdp", c, "-j"])).unwrap();
    assert!(
        j.as_array().unwrap().contains(&serde_json::json!(
            {"dst": "fd00:91::/64", "driver": true, "kind": "seg6_encap", "growth": 96}
        )),
        "{j}"
    );
}
