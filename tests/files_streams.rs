//! Files, streams and peers (docs/hostile.md, *Hostile files, streams and peers*): output paths that are links,
//! FIFOs, device nodes, sockets and directories; lost writes on standard output (a closed pipe, `/dev/full` by
//! shell redirection, a full filesystem); a JSON IOAM export onto a full filesystem; configurations with CR-only
//! line endings. Collectors that misbehave are in `tests/grpc_collectors.rs`.
//!
//! The tests that mount a size-limited tmpfs or make device nodes do it in a private mount namespace (`unshare
//! --mount`), never on the host's filesystems; they need root and fail (never skip) without it.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[path = "support/tmpdir.rs"]
mod tmpdir;

/// The binary under test: `LWT6_BIN` when set (to run these tests against another build), else this one's.
fn lwt6_bin() -> String {
    std::env::var("LWT6_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_lwt6").to_string())
}

fn lwt6() -> Command {
    Command::new(lwt6_bin())
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> tmpdir::TmpDir {
    tmpdir::TmpDir::new("files", name)
}

fn example(name: &str) -> PathBuf {
    root().join("examples").join(name)
}

/// The arguments of `lwt6 pcap` on the seg6 example (9 frames in, 8 out), before the output path.
fn seg6_pcap(input: &Path) -> Vec<String> {
    vec![
        "pcap".into(),
        "-c".into(),
        example("seg6/router.conf").display().to_string(),
        "--in-dev".into(),
        "r0".into(),
        input.display().to_string(),
    ]
}

/// The pcapng Section Header Block type (pcapng specification §4.1), the first four bytes of the file.
const SHB: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// A classic pcap made of the records of `src` repeated `copies` times (same header).
fn repeated(src: &Path, copies: usize) -> Vec<u8> {
    let b = std::fs::read(src).unwrap();
    // pcap file header: 24 bytes; this file is little-endian (magic d4 c3 b2 a1).
    assert_eq!(&b[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    let mut out = b[..24].to_vec();
    for _ in 0..copies {
        out.extend_from_slice(&b[24..]);
    }
    out
}

/// Temporary files (`*.tmp-*`) left in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `script` with `sh -c` (positional parameters `args`; `$0` is lwt6).
fn sh(script: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(lwt6_bin())
        .args(args)
        .output()
        .unwrap()
}

/// Runs `script` with `sh -c` in a private mount namespace (`unshare --mount --propagation private`), so that
/// what it mounts and the device nodes it makes are seen by nobody else; `$0` is lwt6.
fn in_private_mount(script: &str, args: &[&str]) -> Output {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "mount namespaces need root");
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .arg(lwt6_bin())
        .args(args)
        .output()
        .unwrap();
    assert!(
        !text(&o.stderr).contains("unshare:"),
        "unshare failed: {}",
        text(&o.stderr)
    );
    o
}

// ------------------------------------------------------------------------------------------------- output paths

#[test]
fn a_symlinked_output_is_followed_and_stays_a_link() {
    let d = tmp("link");
    std::fs::create_dir(d.join("real")).unwrap();
    let target = d.join("real/out.pcapng");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink("real/out.pcapng", d.join("link.pcapng")).unwrap();
    let o = lwt6()
        .args(seg6_pcap(&example("seg6/input.pcap")))
        .arg(d.join("link.pcapng"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = std::fs::symlink_metadata(d.join("link.pcapng")).unwrap();
    assert!(
        m.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert_eq!(
        std::fs::read(&target).unwrap()[..4],
        SHB,
        "the target holds the capture"
    );
    assert!(leftovers(&d).is_empty() && leftovers(&d.join("real")).is_empty());
}

#[test]
fn a_replaced_output_keeps_its_mode_and_owner() {
    let d = tmp("mode");
    let out = d.join("out.pcapng");
    std::fs::write(&out, b"old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Another owner (root may give a file away; without root the owner cannot be kept and is not checked).
    // SAFETY: geteuid has no preconditions.
    let as_root = unsafe { libc::geteuid() } == 0;
    if as_root {
        std::os::unix::fs::chown(&out, Some(4242), Some(4343)).unwrap();
    }
    let o = lwt6()
        .args(seg6_pcap(&example("seg6/input.pcap")))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = std::fs::metadata(&out).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o600, "mode kept");
    if as_root {
        assert_eq!((m.uid(), m.gid()), (4242, 4343), "owner kept");
    }
    assert_eq!(std::fs::read(&out).unwrap()[..4], SHB);
}

#[test]
fn a_fifo_output_is_written_through_to_its_reader() {
    let d = tmp("fifo");
    let fifo = d.join("capture.fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    // The reader waits on the FIFO first (a bounded wait: a FIFO replaced by a file never gets a writer).
    let reader = Command::new("timeout")
        .arg("20")
        .arg("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let o = lwt6()
        .args(seg6_pcap(&example("seg6/input.pcap")))
        .arg(&fifo)
        .output()
        .unwrap();
    let got = reader.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        got.stdout.len() > 4 && got.stdout[..4] == SHB,
        "the reader got {} bytes",
        got.stdout.len()
    );
    let got_frames = lwt6::io::pcap::read_capture(&got.stdout).unwrap();
    assert_eq!(
        got_frames.len(),
        8,
        "6 forwarded frames and 2 ICMPv6 errors"
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(leftovers(&d).is_empty());
}

#[test]
fn a_socket_output_is_refused_and_kept() {
    let d = tmp("sock");
    let sock = d.join("out.sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let o = lwt6()
        .args(seg6_pcap(&example("seg6/input.pcap")))
        .arg(&sock)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("is a socket"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        std::fs::symlink_metadata(&sock)
            .unwrap()
            .file_type()
            .is_socket()
    );
    assert!(leftovers(&d).is_empty());
}

#[test]
fn a_directory_output_is_refused_before_the_capture_is_read() {
    let d = tmp("dir");
    // A capture damaged at its end: the old order read (and processed) it before finding the directory.
    let full = std::fs::read(example("seg6/input.pcap")).unwrap();
    let cut = d.join("cut.pcap");
    std::fs::write(&cut, &full[..full.len() - 5]).unwrap();
    std::fs::create_dir(d.join("out")).unwrap();
    let o = lwt6()
        .args(seg6_pcap(&cut))
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("is a directory") && !err.contains("truncated"),
        "{err}"
    );
    // A missing parent directory, and a path ending in `/`.
    let o = lwt6()
        .args(seg6_pcap(&cut))
        .arg(d.join("missing/out.pcapng"))
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert!(
        err.contains("missing") && !err.contains("truncated"),
        "{err}"
    );
    assert!(leftovers(&d).is_empty());
}

#[test]
fn dash_is_stdout_for_the_capture_and_stdin_for_the_input() {
    let d = tmp("dash");
    let o = lwt6()
        .current_dir(&d)
        .args(seg6_pcap(&example("seg6/input.pcap")))
        .arg("-")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout[..4], SHB);
    assert!(!d.join("-").exists(), "no file named -");
    // The same capture read back from stdin by `decode -`.
    let mut child = lwt6()
        .args(["decode", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&o.stdout).unwrap();
    }
    let dec = child.wait_with_output().unwrap();
    assert!(dec.status.success());
    assert_eq!(text(&dec.stdout).lines().count(), 8);
    // Two things cannot share stdout.
    let o = lwt6()
        .args(seg6_pcap(&example("seg6/input.pcap")))
        .args(["-", "-v"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("standard output"));
}

#[test]
fn a_device_node_output_is_written_through_never_replaced() {
    // In a private mount namespace, on a tmpfs of its own: `null` and `full` made with mknod (Linux's
    // devices.txt: character 1/3 and 1/7).
    let o = in_private_mount(
        r#"set -e
        d=$(mktemp -d); mount -t tmpfs tmpfs "$d"
        mknod "$d/null" c 1 3; mknod "$d/full" c 1 7
        set +e
        "$0" pcap -c "$1" --in-dev r0 "$2" "$d/null"; echo "null=$?"
        "$0" pcap -c "$1" --in-dev r0 "$2" "$d/full"; echo "full=$?"
        stat -c '%n %F' "$d/null" "$d/full"
        ls -a "$d" | grep -c tmp- || true
        umount "$d"; rmdir "$d"
        "#,
        &[
            &example("seg6/router.conf").display().to_string(),
            &example("seg6/input.pcap").display().to_string(),
        ],
    );
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert!(out.contains("null=0"), "{out}{err}");
    assert!(out.contains("full=1"), "{out}{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(out.contains("/null character special file"), "{out}");
    assert!(out.contains("/full character special file"), "{out}");
    assert!(out.trim_end().ends_with('0'), "temporary files left: {out}");
}

// ---------------------------------------------------------------------------------------------- lost writes

#[test]
fn stdout_to_dev_full_fails_for_every_command() {
    let conf = example("seg6/router.conf").display().to_string();
    let cap = example("seg6/input.pcap").display().to_string();
    // `/dev/full` by shell redirection only: a write to it fails with ENOSPC (Linux's null(4)).
    for (what, script) in [
        ("decode", r#""$0" decode "$2" > /dev/full"#),
        ("decode -j", r#""$0" decode -j "$2" > /dev/full"#),
        ("show routes", r#""$0" show routes -c "$1" > /dev/full"#),
        ("check", r#""$0" check -c "$1" > /dev/full"#),
        ("headroom", r#""$0" headroom --proto seg6 > /dev/full"#),
        ("man", r#""$0" man > /dev/full"#),
        ("completions", r#""$0" completions bash > /dev/full"#),
        ("--help", r#""$0" --help > /dev/full"#),
        (
            "pcap --stats",
            r#""$0" pcap -c "$1" --in-dev r0 --stats "$2" "$3/o.pcapng" > /dev/full"#,
        ),
    ] {
        let d = tmp("full");
        let o = sh(script, &[&conf, &cap, &d.display().to_string()]);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("No space left on device"),
            "{what}: {}",
            text(&o.stderr)
        );
        assert!(leftovers(&d).is_empty(), "{what}");
    }
}

#[test]
fn pcap_verbose_into_dev_full_leaves_no_temporary_file() {
    let d = tmp("vfull");
    let out = d.join("out.pcapng");
    let o = sh(
        r#""$0" pcap -c "$1" --in-dev r0 -v "$2" "$3" > /dev/full"#,
        &[
            &example("seg6/router.conf").display().to_string(),
            &example("seg6/input.pcap").display().to_string(),
            &out.display().to_string(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("-v line"), "{}", text(&o.stderr));
    assert!(!out.exists());
    assert!(leftovers(&d).is_empty(), "{:?}", leftovers(&d));
}

#[test]
fn a_closed_pipe_ends_quietly_with_141_and_leaves_no_temporary_file() {
    let d = tmp("pipe");
    // 9 frames x 2000: far more -v text than a pipe holds, so the closed pipe is met.
    let big = d.join("big.pcap");
    std::fs::write(&big, repeated(&example("seg6/input.pcap"), 2000)).unwrap();
    let out = d.join("out.pcapng");
    let mut child = lwt6()
        .args(seg6_pcap(&big))
        .arg(&out)
        .arg("-v")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: one line read, then the pipe closed.
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("out "), "{line}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(141), "{err}");
    assert_eq!(err, "", "a closed pipe is not an error message");
    assert!(!out.exists(), "the output was not made visible");
    assert!(leftovers(&d).is_empty(), "{:?}", leftovers(&d));
}

#[test]
fn decode_onto_a_full_filesystem_fails() {
    let d = tmp("enospc");
    let big = d.join("big.pcap");
    // About 370 KB of decoded text for a 64 KiB filesystem.
    std::fs::write(&big, repeated(&example("seg6/input.pcap"), 300)).unwrap();
    let o = in_private_mount(
        r#"d=$(mktemp -d); mount -t tmpfs -o size=64k tmpfs "$d" || exit 99
        "$0" decode "$1" > "$d/decoded.txt"; echo "status=$?"
        umount "$d"; rmdir "$d"
        "#,
        &[&big.display().to_string()],
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(out.contains("status=1"), "{out}{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("decoded frames"), "names what was lost: {err}");
}

/// A JSON IOAM export onto a 64 KiB filesystem: every line in the file is one whole record, the counters equal
/// the file's lines, the rest is counted lost; with every trace lost, exit status 3.
#[test]
fn json_export_onto_a_full_filesystem_keeps_whole_records_and_true_counters() {
    let d = tmp("jsonfull");
    let big = d.join("ioam.pcap");
    // The ioam6 example fills 2 traces in transit per copy: 6000 traces, about 2 MB of JSON.
    std::fs::write(&big, repeated(&example("ioam6/input.pcap"), 3000)).unwrap();
    let o = in_private_mount(
        r#"d=$(mktemp -d); mount -t tmpfs -o size=64k tmpfs "$d" || exit 99
        "$0" pcap -c "$1" --in-dev r0 --stats -j --ioam-export "json:$d/traces.json" --ioam-export-transit "$2" "$3/out.pcapng"
        echo "status=$?" >&2
        cat "$d/traces.json" > "$3/traces.json"
        "$0" pcap -c "$1" --in-dev r0 --ioam-export json:- --ioam-export-transit "$2" "$3/out2.pcapng" > /dev/full
        echo "all-lost=$?" >&2
        umount "$d"; rmdir "$d"
        "#,
        &[
            &example("ioam6/router.conf").display().to_string(),
            &big.display().to_string(),
            &d.display().to_string(),
        ],
    );
    let err = text(&o.stderr);
    assert!(err.contains("status=0"), "{err}");
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = std::fs::read(d.join("traces.json")).unwrap();
    assert!(
        !file.is_empty() && file.ends_with(b"\n"),
        "no cut last line"
    );
    let lines: Vec<&[u8]> = file
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    for l in &lines {
        serde_json::from_slice::<serde_json::Value>(l).expect("every line a whole record");
    }
    let io = &stats["ioam"];
    assert_eq!(
        io["exported"],
        lines.len() as u64,
        "exported = lines in the file"
    );
    assert_eq!(
        io["exported"].as_u64().unwrap() + io["export_lost"].as_u64().unwrap(),
        6000
    );
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("all-lost=3"), "{err}");
}

// ----------------------------------------------------------------------------------------------- line endings

#[test]
fn cr_only_and_crlf_configurations_number_their_lines() {
    let d = tmp("cr");
    for (name, eol) in [("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")] {
        let conf = d.join(format!("{name}.conf"));
        let lines = [
            "link add r0",
            "# a comment",
            "",
            "-6 route add fd00::/64 encap seg6 mode encapz segs fc00::1 dev r0",
        ];
        std::fs::write(&conf, lines.join(eol) + eol).unwrap();
        let o = lwt6().args(["check", "-c"]).arg(&conf).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}");
        let err = text(&o.stderr);
        assert!(
            err.contains("line 4") && err.contains("'encapz'"),
            "{name}: {err}"
        );
    }
    // A valid CR-only file is a valid configuration.
    let conf = d.join("ok.conf");
    std::fs::write(&conf, "link add r0\raddr add fd00:1::2/64 dev r0\r").unwrap();
    let o = lwt6().args(["check", "-c"]).arg(&conf).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("1 links"), "{}", text(&o.stdout));
}

#[test]
fn an_interrupted_pcap_leaves_no_temporary_file() {
    let d = tmp("sigint");
    let big = d.join("big.pcap");
    // 180,000 frames: the run is still going when the signal comes.
    std::fs::write(&big, repeated(&example("seg6/input.pcap"), 20_000)).unwrap();
    let out = d.join("out.pcapng");
    let child = lwt6()
        .args(seg6_pcap(&big))
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The temporary output exists once the outputs are checked, before the first frame is read.
    let t0 = std::time::Instant::now();
    while leftovers(&d).is_empty() && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The handler is installed just after (before the first frame): a moment for it.
    std::thread::sleep(std::time::Duration::from_millis(100));
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("interrupted"));
    assert!(!out.exists());
    assert!(leftovers(&d).is_empty(), "{:?}", leftovers(&d));
}

#[test]
fn a_capture_to_a_closed_stdout_ends_quietly_with_141() {
    let d = tmp("pipe-capture");
    // Far more pcapng than a pipe holds, so the write meets the closed pipe whatever the timing.
    let big = d.join("big.pcap");
    std::fs::write(&big, repeated(&example("seg6/input.pcap"), 2000)).unwrap();
    let mut child = lwt6()
        .args(seg6_pcap(&big))
        .arg("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -c 16`: a few bytes read, then the pipe closed.
    let mut head = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // A pcapng starts with its Section Header Block (block type 0x0A0D0D0A).
    assert_eq!(head[..4], [0x0a, 0x0d, 0x0d, 0x0a]);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(141), "{err}");
    assert_eq!(err, "", "a closed pipe is not an error message");
}

#[test]
fn a_capture_on_stdin_leaves_no_stdin_for_an_hmac_secret() {
    let d = tmp("stdin-secret");
    let conf = d.join("router.conf");
    let mut text = std::fs::read_to_string(example("seg6/router.conf")).unwrap();
    text += "sr hmac set 42 sha256\n";
    std::fs::write(&conf, &text).unwrap();
    let line = text.lines().count();
    let mut child = lwt6()
        .args(["pcap", "-c"])
        .arg(&conf)
        .args(["--in-dev", "r0", "-"])
        .arg(d.join("out.pcapng"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let capture = std::fs::read(example("seg6/input.pcap")).unwrap();
    // The router may refuse before reading: a closed stdin is then no error of the test.
    let _ = child.stdin.take().unwrap().write_all(&capture);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("line {line}:")) && err.contains("standard input"),
        "{err}"
    );
    assert!(!d.join("out.pcapng").exists());
}
