//! Hostile configuration files and control lines (issue 15): random and mutated lines applied to a running
//! configuration never panic, a failing line leaves the configuration exactly as it was (never half applied),
//! and every error names the line and a token of that line, in the message shape `line N: 'TOKEN': reason`
//! (tokens shown escaped and cut, see `spec::shown_token`) or `line N: reason` when a token is missing.

use lwt6_config::{Builder, Config, ConfigError, parse};
use proptest::prelude::*;

/// A running router's configuration: links, addresses, neighbours, routes of every tunnel kind, HMAC keys,
/// IOAM namespaces and schemas, sysctls.
const RUNNING: &str = "link add r0 address 02:00:00:00:01:02 mtu 1500
link add r1 address 02:00:00:00:02:01 mtu 9000
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add 10.1.0.2/24 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add 10.1.0.1 lladdr 02:00:00:00:01:01 dev r0
-6 route add fc00::/16 via fd00:2::2 dev r1
sr hmac set 42 sha256 secret mysecret
sr tunsrc set fd00:2::1
ioam namespace add 123 data 0xdeadbeef wide 0xcafec0caf00dc0de
ioam schema add 777 ABCDEF
ioam namespace set 123 schema 777
-6 route add 2001:db8:1::/48 encap seg6 mode encap segs fc00::a,fc00::b hmac 42 dev r1
-6 route add 2001:db8:2::/48 encap ioam6 mode encap tundst fc00::9 trace prealloc type 0x800000 ns 123 size 12 dev r1
-6 route add 2001:db8:3::/48 encap rpl segs fc00::1,fc00::2 dev r1
-4 route add 10.9.0.0/16 encap seg6 mode encap segs fc00::c dev r1
sysctl net.ipv6.conf.all.seg6_enabled=1 net.ipv6.conf.r0.seg6_require_hmac=1
";

fn running() -> Config {
    parse(RUNNING).expect("the running configuration parses")
}

/// Words a hostile line is made of: every keyword, values of every kind right and wrong (out of range, huge,
/// negative, malformed addresses and prefixes), quotes, comments, control and wide characters, long tokens.
const WORDS: &[&str] = &[
    "ip",
    "-4",
    "-6",
    "link",
    "add",
    "del",
    "name",
    "address",
    "mtu",
    "addr",
    "neigh",
    "lladdr",
    "nud",
    "permanent",
    "route",
    "to",
    "default",
    "via",
    "inet",
    "inet6",
    "dev",
    "metric",
    "preference",
    "priority",
    "lock",
    "encap",
    "seg6",
    "ioam6",
    "rpl",
    "mode",
    "inline",
    "encap.red",
    "l2encap",
    "l2encap.red",
    "auto",
    "segs",
    "hmac",
    "tunsrc",
    "tundst",
    "freq",
    "trace",
    "prealloc",
    "type",
    "ns",
    "size",
    "ioam",
    "namespace",
    "schema",
    "set",
    "none",
    "data",
    "wide",
    "sr",
    "sha1",
    "sha256",
    "md5",
    "secret",
    "sysctl",
    "-w",
    "=",
    "r0",
    "r1",
    "r2",
    "lo",
    "0",
    "1",
    "-1",
    "2",
    "255",
    "256",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-0",
    "0x",
    "0xffffffffffffffffff",
    "1e3",
    "1/2",
    "0/0",
    "2/1",
    "1000001/1000001",
    "0x800000",
    "0xfff002",
    "0x000001",
    "0x1000000",
    "123",
    "777",
    "42",
    "7",
    "2001:db8::/32",
    "2001:db8::/129",
    "2001:db8::/-1",
    "2001:db8:::/32",
    "::",
    "::/0",
    "::1",
    "ff02::1",
    "fe80::1",
    "fc00::1",
    "fc00::1,fc00::2",
    "fc00::1,,fc00::2",
    ",",
    "fc00::1,",
    "10.0.0.0/8",
    "10.0.0.0/33",
    "10.0.0.256",
    "255.255.255.255",
    "0.0.0.0/0",
    "02:00:00:00:00:01",
    "02:00:00:00:00",
    "ff:ff:ff:ff:ff:ff",
    "01:00:5e:00:00:01",
    "zz:zz:zz:zz:zz:zz",
    "net.ipv6.conf.all.seg6_enabled=1",
    "net.ipv6.conf.r0.hop_limit=0",
    "net.ipv6.conf.r9.forwarding=1",
    "net.ipv6.ioam6_id=16777216",
    "net.ipv6.conf.all.seg6_require_hmac=2",
    "net.ipv6.seg6_flowlabel=-2",
    "net.ipv6.conf..forwarding=1",
    "net.ipv6.conf.all.forwarding",
    "\"",
    "'",
    "\"a b\"",
    "'unterminated",
    "#",
    "# comment",
    "\\",
    "\0",
    "\t",
    "\r",
    "\u{7f}",
    "\u{1b}[31m",
    "\u{feff}",
    "é",
    "\u{3000}",
    "\u{202e}",
    "𝕏",
    "",
];

fn long_token(n: usize, c: char) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// Checks an error against the line it came from: the line number, a token of the line (or an empty token),
/// and the message shape.
fn check_error(e: &ConfigError, line_no: usize, text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.line, line_no, "{}", e);
    if e.token.is_empty() {
        prop_assert!(
            e.to_string().starts_with(&format!("line {line_no}: ")),
            "{}",
            e
        );
    } else {
        // The token is taken from the line (quoted tokens without their quotes).
        prop_assert!(
            text.contains(e.token.as_str()),
            "token {:?} not in {:?}",
            e.token,
            text
        );
        let shape = format!("line {line_no}: '");
        prop_assert!(e.to_string().starts_with(&shape), "{}", e);
        // No control character reaches the message (a hostile file cannot drive the terminal).
        prop_assert!(
            !e.to_string().chars().any(|c| c.is_control()),
            "{:?}",
            e.to_string()
        );
        // Long tokens are cut.
        prop_assert!(e.to_string().len() < 64 * 4 + e.reason.len() + 64, "{}", e);
    }
    prop_assert!(!e.reason.is_empty());
    Ok(())
}

/// Applies `text` as line `line_no` to the running configuration: a success changes it, a failure changes
/// nothing and names the line and token.
fn apply(b: &mut Builder<'_>, line_no: usize, text: &str) -> Result<bool, TestCaseError> {
    let before = b.config().clone();
    match b.line(line_no, text) {
        Ok(()) => Ok(true),
        Err(e) => {
            prop_assert_eq!(b.config(), &before, "line {:?} half applied: {}", text, e);
            check_error(&e, line_no, text)?;
            Ok(false)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random control lines from the word list, one after another on a running configuration.
    #[test]
    fn random_control_lines(lines in prop::collection::vec(
        prop::collection::vec(prop::sample::select(WORDS), 0..16), 1..8)) {
        let mut b = Builder::from_config(running());
        for (i, words) in lines.iter().enumerate() {
            apply(&mut b, 100 + i, &words.join(" "))?;
        }
        // Whatever was accepted still passes the whole-file checks or names a line.
        if let Err(e) = b.finish() {
            prop_assert!(e.line <= 100 + lines.len(), "{}", e);
        }
    }

    /// Lines of the running configuration mutated byte by byte (a character replaced, inserted or removed),
    /// applied to the running configuration.
    #[test]
    fn mutated_lines(
        which in 0usize..18,
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<char>()), 1..4)
    ) {
        let line = RUNNING.lines().nth(which).unwrap();
        let mut chars: Vec<char> = line.chars().collect();
        for (at, op, c) in edits {
            let i = at.index(chars.len() + 1);
            match op {
                0 if i < chars.len() => chars[i] = c,
                1 => chars.insert(i, c),
                _ if i < chars.len() => { chars.remove(i); }
                _ => {}
            }
        }
        let text: String = chars.into_iter().collect();
        let mut b = Builder::from_config(running());
        apply(&mut b, 500, &text)?;
        // The same line in a fresh file in its place: the file parses or names a line in it.
        let mut file: Vec<String> = RUNNING.lines().map(str::to_string).collect();
        file[which] = text;
        // (A mutation may have inserted a line break: count the file's lines as the parser does, which ends a
        // line at LF, CR LF or a lone CR.)
        let whole = file.join("\n");
        if let Err(e) = parse(&whole) {
            let lines = whole.replace("\r\n", "\n").split(['\n', '\r']).count();
            prop_assert!(e.line >= 1 && e.line <= lines, "{}", e);
        }
    }
}

/// Hand-picked hostile lines: each is refused, names line 7 and a token of the line, and changes nothing.
#[test]
fn hostile_lines_are_refused_whole() {
    let long_sids = (0..1000)
        .map(|i| format!("fc00::{i:x}"))
        .collect::<Vec<_>>()
        .join(",");
    let lines = [
        format!("-6 route add 2001:db8:9::/48 encap seg6 mode encap segs {long_sids} dev r1"),
        format!("link add {}", long_token(100_000, 'a')),
        format!("link add r9 mtu {}", long_token(10_000, '9')),
        format!("ioam schema add 9 {}", long_token(2000, 'x')),
        format!("sr hmac set 43 sha256 secret {}", long_token(65, 's')),
        "-6 route add 2001:db8:9::/48 dev r1 metric 4294967296".into(),
        "-6 route add 2001:db8:9::/129 dev r1".into(),
        "-6 route add fc00::/16 via fd00:2::2 dev r1".into(), // exists already
        "-6 route add 2001:db8:9::/48 encap seg6 mode encap segs fc00::1 hmac 43 dev r1 bogus".into(),
        "-6 route add 2001:db8:9::/48 encap ioam6 trace prealloc type 0x800000 ns 123 size 248 dev r1".into(),
        "-6 route add 2001:db8:9::/48 encap ioam6 trace prealloc type 0x000400 ns 123 size 12 dev r1".into(),
        "-6 route add 2001:db8:9::/48 encap rpl segs ff02::1 dev r1".into(),
        "-6 route add 2001:db8:9::/48 encap seg6 mode inline segs fc00::1 dev r1 dev r0".into(),
        "-4 route add 10.8.0.0/16 encap seg6 mode inline segs fc00::1 dev r1".into(),
        "sysctl net.ipv6.conf.all.seg6_enabled=0 net.ipv6.conf.r0.hop_limit=256".into(),
        "sysctl net.ipv6.conf.all.seg6_enabled=0 net.ipv6.conf.r0.seg6_enabled".into(),
        "ioam namespace set 123 schema 999".into(),
        "ioam namespace add 123".into(),
        "neigh add fd00:2::3 lladdr 02:00:00:00:02 dev r1".into(),
        "addr add fd00:3::1/64 dev r7".into(),
        "link add r0".into(),
        "link add r5 address 01:00:5e:00:00:01".into(),
        "sr tunsrc set ff02::1".into(),
        "route add 'unterminated".into(),
        "route\0add ::/0 dev r1".into(),
        "link add r5\u{1b}[2J".into(),
        "\u{202e}link add r5".into(),
    ];
    let base = running();
    for text in &lines {
        let mut b = Builder::from_config(base.clone());
        let e = b
            .line(7, text)
            .expect_err(&format!("accepted: {}", &text[..text.len().min(120)]));
        assert_eq!(b.config(), &base, "{text:?} half applied");
        let r: Result<(), TestCaseError> = check_error(&e, 7, text);
        r.unwrap_or_else(|f| panic!("{text:?}: {f}"));
    }
}

/// A 100 000-character line and a line of 50 000 tokens are refused quickly, naming the line.
#[test]
fn huge_lines() {
    let t0 = std::time::Instant::now();
    let text = format!("link add r5 {}", "mtu 1500 ".repeat(50_000));
    let e = Builder::from_config(running()).line(3, &text).unwrap_err();
    assert_eq!(e.line, 3);
    let text = format!("# {}", long_token(100_000, 'c'));
    Builder::from_config(running()).line(4, &text).unwrap();
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}
