//! No Rust debug formatting (`{:?}`) where people or scripts read lwt6's output: the traces (`lwt6 pcap --trace`,
//! text and JSON), the routes and counters (`lwt6 show routes`, `lwt6 pcap --stats`), `lwt6 route get`, and every
//! `show` of the control socket, over every example configuration and capture.

use lwt6_router::control::Control;
use lwt6_router::engine::WorkerReport;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn lwt6() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lwt6"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[path = "support/tmpdir.rs"]
mod tmpdir;

/// Where `s` shows the marks of Rust's debug formatting: `Some(`, `None`, `Ok(`, `Err(`, a struct (`Name {
/// field: `), a path (`Type::Variant`), a CamelCase variant name (`TimeExceeded`).
fn debug_marks(s: &str) -> Vec<String> {
    let mut found = Vec::new();
    let around = |i: usize| {
        let a = s.floor_char_boundary(i.saturating_sub(30));
        let b = s.ceil_char_boundary((i + 30).min(s.len()));
        s[a..b].to_string()
    };
    for pat in ["Some(", "None", "Ok(", "Err("] {
        for (i, _) in s.match_indices(pat) {
            found.push(around(i));
        }
    }
    let b = s.as_bytes();
    for (i, _) in s.match_indices("::") {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + 2).copied();
        if before.is_some_and(|c| c.is_ascii_alphabetic())
            && after.is_some_and(|c| c.is_ascii_uppercase())
        {
            found.push(around(i));
        }
    }
    for (i, _) in s.match_indices(" { ") {
        let word_before = s[..i]
            .rsplit(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or("");
        let field_after = s[i + 3..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        if word_before.starts_with(|c: char| c.is_ascii_uppercase())
            && s[i + 3 + field_after.len()..].starts_with(": ")
        {
            found.push(around(i));
        }
    }
    // A CamelCase word (a variant's name) followed by its fields, or alone as a JSON string; a field's name
    // from an RFC (`NodeLen`) in a sentence is fine.
    let mut at = 0;
    for w in s.split(|c: char| !c.is_ascii_alphanumeric()) {
        let (start, end) = (at, at + w.len());
        at = end + 1;
        let camel = w
            .as_bytes()
            .windows(2)
            .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
        if !camel || !w.starts_with(|c: char| c.is_ascii_uppercase()) {
            continue;
        }
        let rest = &s[end..];
        let quoted = start > 0 && b[start - 1] == b'"' && rest.starts_with('"');
        if quoted || rest.starts_with('(') || rest.starts_with(" {") {
            found.push(around(start));
        }
    }
    found
}

#[test]
fn the_scanner_finds_debug_text() {
    for s in [
        "icmp ICMPv6 TimeExceeded { code: 0 } to fd00:1::1",
        r#"{"error":"PacketTooBig { mtu: 1400 }"}"#,
        r#"{"error":"TimeExceeded"}"#,
        "mode Some(3)",
        "kind PlanKind::Forward",
        "state None",
    ] {
        assert!(!debug_marks(s).is_empty(), "{s}");
    }
    for s in [
        "icmp       icmpv6 time exceeded (type 3 code 0) to fd00:1::1",
        "fd00:56::1 from ::  encap seg6 mode encap segs 1 [ fc00::1 ] dev r1",
        r#"{"dst":"fc00::","segs":["fc00::1","::"],"flags":[]}"#,
        "IPv6 fd00:2::1 > fc00::a hlim 49 | ICMPv6 type 3 code 0 time exceeded",
        r#"{"error":"malformed: ioam NodeLen does not match trace type"}"#,
    ] {
        assert_eq!(debug_marks(s), Vec::<String>::new(), "{s}");
    }
}

fn run(args: &[&std::ffi::OsStr]) -> String {
    let o = lwt6().args(args).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ["seg6", "ioam6", "rpl"]
        .iter()
        .map(|e| root().join("examples").join(e))
        .collect();
    v.retain(|d| d.join("router.conf").exists() && d.join("input.pcap").exists());
    assert_eq!(v.len(), 3, "the examples moved");
    v
}

fn assert_clean(what: &str, s: &str) {
    assert!(!s.is_empty(), "{what}: no output");
    let marks = debug_marks(s);
    assert!(marks.is_empty(), "{what}: debug text {marks:?} in\n{s}");
}

/// A destination inside each route of `config` (the prefix's own address; `default`: 2001:db8::1).
fn destinations(config: &Path) -> Vec<String> {
    let text = run(&[
        "show".as_ref(),
        "routes".as_ref(),
        "-c".as_ref(),
        config.as_os_str(),
        "-j".as_ref(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["dst"].as_str())
        .map(|d| match d {
            "default" => "2001:db8::1".to_string(),
            d => d.split('/').next().unwrap().to_string(),
        })
        .collect()
}

#[test]
fn traces_routes_and_stats_of_the_examples_have_no_debug_text() {
    let d = tmpdir::TmpDir::new("nodebug", "cli");
    for ex in examples() {
        let conf = ex.join("router.conf");
        let input = ex.join("input.pcap");
        let out = d.join("out.pcapng");
        let dev = std::fs::read_to_string(&conf)
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("link add ")
                    .map(|r| r.split_whitespace().next().unwrap().to_string())
            })
            .unwrap();
        for extra in [
            &["--trace", "100"][..],
            &["--trace", "100", "-j"],
            &["--stats"],
            &["--stats", "-j"],
        ] {
            let mut args: Vec<&std::ffi::OsStr> =
                vec!["pcap".as_ref(), "-c".as_ref(), conf.as_os_str()];
            args.extend(["--in-dev".as_ref(), dev.as_ref() as &std::ffi::OsStr]);
            args.extend([input.as_os_str(), out.as_os_str()]);
            args.extend(extra.iter().map(|s| s.as_ref() as &std::ffi::OsStr));
            assert_clean(&format!("{ex:?} {extra:?}"), &run(&args));
        }
        for extra in [&[][..], &["-j"], &["-s"]] {
            let mut args: Vec<&std::ffi::OsStr> = vec![
                "show".as_ref(),
                "routes".as_ref(),
                "-c".as_ref(),
                conf.as_os_str(),
            ];
            args.extend(extra.iter().map(|s| s.as_ref() as &std::ffi::OsStr));
            assert_clean(&format!("{ex:?} show routes {extra:?}"), &run(&args));
        }
        for dst in destinations(&conf) {
            for j in [false, true] {
                let mut args: Vec<&std::ffi::OsStr> = vec![
                    "route".as_ref(),
                    "get".as_ref(),
                    "-c".as_ref(),
                    conf.as_os_str(),
                    dst.as_ref(),
                ];
                if j {
                    args.push("-j".as_ref());
                }
                let o = lwt6().args(&args).output().unwrap();
                // An IPv4 default's stand-in may have no route: the error is text too.
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
                assert_clean(&format!("{ex:?} route get {dst}"), &text);
            }
        }
    }
}

#[test]
fn every_show_of_the_control_socket_has_no_debug_text() {
    for ex in examples() {
        let conf = ex.join("router.conf");
        let cfg = lwt6_config::load_file(&conf, lwt6_config::StdinSecret::Refuse).unwrap();
        let snap = lwt6_dataplane::snapshot::Snapshot::build(&cfg).unwrap();
        let mut c = Control::new(
            cfg,
            Arc::new(lwt6_dataplane::snapshot::SnapshotHandle::new(snap)),
            vec![Arc::new(Mutex::new(WorkerReport::default()))],
            "af_packet",
        );
        c.ports = (0..c.cfg().links.len())
            .map(|d| lwt6_router::show::interfaces::PortInfo::packet(d, 0, None))
            .collect();
        let mut requests: Vec<String> = [
            "routes",
            "stats",
            "neigh",
            "trace",
            "sr",
            "ioam",
            "interfaces",
        ]
        .iter()
        .flat_map(|w| [format!("show {w}"), format!("show {w} -j")])
        .collect();
        for dst in destinations(&conf) {
            requests.push(format!("route get {dst}"));
            requests.push(format!("route get {dst} -j"));
        }
        requests.extend([
            "clear stats".to_string(),
            "show stats -j".to_string(),
            "show nothing".to_string(),
        ]);
        for r in &requests {
            let (_, out) = c.handle_line(r);
            if r != "clear stats" {
                assert_clean(&format!("{ex:?} {r}"), &out);
            }
        }
    }
}
