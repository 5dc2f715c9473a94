//! What a packager relies on: shell completions and manual pages generated from the command line, and the
//! systemd units, checked with the tools that consume them (bash, groff, systemd-analyze).

use std::path::PathBuf;
use std::process::Command;

fn lwt6(args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_lwt6"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "lwt6 {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[path = "support/tmpdir.rs"]
mod tmpdir;

fn tmp(name: &str) -> tmpdir::TmpDir {
    tmpdir::TmpDir::new("install", name)
}

/// The subcommands `lwt6 --help` lists (the "Commands:" section), read from the binary rather than written here.
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(lwt6(&["--help"]).stdout).unwrap();
    let cmds: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(cmds.len() >= 8, "{help}");
    cmds
}

#[test]
fn bash_completion_is_valid_and_knows_every_subcommand() {
    let script = String::from_utf8(lwt6(&["completions", "bash"]).stdout).unwrap();
    let d = tmp("bash");
    let f = d.join("lwt6.bash");
    std::fs::write(&f, &script).unwrap();
    let st = Command::new("bash").arg("-n").arg(&f).status().unwrap();
    assert!(st.success(), "bash -n rejects the completion script");
    for c in subcommands() {
        // The generated dispatcher has one case arm per subcommand path.
        assert!(
            script.contains(&format!("lwt6__{c}")) || script.contains(&format!("lwt6,{c})")),
            "{c}"
        );
    }
    // Sourcing it registers the completion function for `lwt6`.
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p lwt6", f.display()))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("lwt6"), "{o:?}");
}

#[test]
fn other_shells_get_scripts_naming_the_subcommands() {
    let cmds = subcommands();
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = String::from_utf8(lwt6(&["completions", shell]).stdout).unwrap();
        for c in &cmds {
            assert!(script.contains(c.as_str()), "{shell}: {c}");
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_lwt6"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

/// Pages of other packages the lwt6 pages may name (everything else they name must be one of ours).
const EXTERNAL_PAGES: &[&str] = &["ip(8)", "ip-route(8)", "sysctl(8)"];

/// Every `name(N)` a roff page names: in running text and in `.BR name (N)` macro lines, font escapes removed.
fn references(roff: &str) -> Vec<String> {
    let mut refs = Vec::new();
    for line in roff.lines() {
        let mut l = line.replace("\\-", "-");
        for f in ["\\fB", "\\fI", "\\fR", "\\fP"] {
            l = l.replace(f, "");
        }
        if let Some(rest) = l.strip_prefix(".BR ").or_else(|| l.strip_prefix(".IR ")) {
            // `.BR name (N),`: the macro's words alternate fonts, so the name and its section are two words.
            let w: Vec<&str> = rest.split_whitespace().collect();
            if w.len() >= 2 && w[1].starts_with('(') {
                l = format!("{}{}", w[0], w[1]);
            }
        }
        let b = l.as_bytes();
        for i in 0..b.len().saturating_sub(2) {
            if b[i] == b'(' && b[i + 1].is_ascii_digit() && b[i + 2] == b')' {
                let start = l[..i]
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
                    .map_or(0, |j| j + 1);
                let name = &l[start..i];
                if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                    refs.push(format!("{name}({})", b[i + 1] as char));
                }
            }
        }
    }
    refs
}

#[test]
fn man_pages_render_without_warnings_and_name_only_pages_that_exist() {
    use clap::CommandFactory;
    let d = tmp("man");
    let o = lwt6(&["man", "--out-dir", d.to_str().unwrap()]);
    let listed = String::from_utf8(o.stdout).unwrap();
    // One page per subcommand at every level (`lwt6 bench sweep`: lwt6-bench-sweep.1), read from the command
    // line's definition; `help` is clap's, not a page.
    fn walk(cmd: &clap::Command, name: &str, out: &mut Vec<String>) {
        out.push(format!("man1/{name}.1"));
        for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(s, &format!("{name}-{}", s.get_name()), out);
        }
    }
    let mut expect = Vec::new();
    walk(&lwt6::cli::Cli::command(), "lwt6", &mut expect);
    assert!(
        expect.contains(&"man1/lwt6-bench-sweep.1".to_string()),
        "{expect:?}"
    );
    expect.push("man5/lwt6.conf.5".into());
    let mut written: Vec<String> = Vec::new();
    for sec in ["man1", "man5"] {
        for e in std::fs::read_dir(d.join(sec)).unwrap() {
            let n = e.unwrap().file_name().into_string().unwrap();
            written.push(format!("{sec}/{n}"));
        }
    }
    written.sort();
    expect.sort();
    assert_eq!(written, expect);
    let exists = |r: &str| {
        let (name, sec) = r.trim_end_matches(')').split_once('(').unwrap();
        written.contains(&format!("man{sec}/{name}.{sec}"))
    };
    for page in &expect {
        let p = d.join(page);
        assert!(listed.contains(p.to_str().unwrap()), "{page} not listed");
        // groff with all warnings on: a malformed page prints warnings to stderr.
        let g = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            g.status.success() && g.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&g.stderr)
        );
        let roff = std::fs::read_to_string(&p).unwrap();
        assert!(roff.contains(".SH SYNOPSIS"), "{page}");
        for r in references(&roff) {
            assert!(
                exists(&r) || EXTERNAL_PAGES.contains(&r.as_str()),
                "{page} names {r}, which is not written"
            );
        }
    }
    // The pages point at each other both ways: lwt6(1) lists lwt6-bench(1), which lists lwt6-bench-sweep(1) and
    // names lwt6(1) in SEE ALSO; the configuration page is named from the pages that read a configuration.
    let refs_of = |page: &str| references(&std::fs::read_to_string(d.join(page)).unwrap());
    assert!(refs_of("man1/lwt6.1").contains(&"lwt6-bench(1)".into()));
    assert!(refs_of("man1/lwt6-bench.1").contains(&"lwt6-bench-sweep(1)".into()));
    assert!(refs_of("man1/lwt6-bench-sweep.1").contains(&"lwt6-bench(1)".into()));
    for p in ["lwt6", "lwt6-run", "lwt6-check", "lwt6-ctl", "lwt6-pcap"] {
        assert!(
            refs_of(&format!("man1/{p}.1")).contains(&"lwt6.conf(5)".into()),
            "{p}"
        );
    }
    // The pcap page documents its options.
    let g = Command::new("groff")
        .args(["-man", "-Tascii"])
        .arg(d.join("man1/lwt6-pcap.1"))
        .output()
        .unwrap();
    let text = terminal_text(&g.stdout);
    assert!(
        text.contains("--in-dev") && text.contains("lwt6 pcap"),
        "{text}"
    );
    // The configuration page names every top-level statement the parser accepts, and its example is valid.
    let conf = std::fs::read_to_string(d.join("man5/lwt6.conf.5")).unwrap();
    let g = Command::new("groff")
        .args(["-man", "-Tascii"])
        .arg(d.join("man5/lwt6.conf.5"))
        .output()
        .unwrap();
    // Words as a reader sees them (justification spreads them apart).
    let text = terminal_text(&g.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for stmt in [
        "link add",
        "addr|address add",
        "neigh add",
        "route add|replace|change",
        "route del|delete",
        "encap seg6 mode",
        "encap seg6local action",
        "encap ioam6",
        "encap rpl segs",
        "sr tunsrc set",
        "sr hmac set",
        "ioam namespace add",
        "ioam namespace set",
        "ioam schema add",
        "ioam domain add",
        "sysctl [-w]",
        "show routes|stats|neigh|trace",
        "trace add",
        "capture start",
        "capture stop",
    ] {
        assert!(text.contains(stmt), "lwt6.conf(5) lacks {stmt}");
    }
    for action in [
        "End.X",
        "End.T",
        "End.DX2",
        "End.DX6",
        "End.DX4",
        "End.DT6",
        "End.DT4",
        "End.DT46",
        "End.B6",
        "End.B6.Encaps",
        "End.B6.Encaps.Red",
    ] {
        assert!(text.contains(&format!("{action} ")), "{action}");
    }
    let example: String = conf
        .split(".EX\n")
        .nth(1)
        .and_then(|s| s.split(".EE").next())
        .unwrap()
        .replace("\\-", "-");
    let f = d.join("example.conf");
    std::fs::write(&f, example).unwrap();
    let o = lwt6(&["check", "-c", f.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok"));
    // Without --out-dir the main page goes to stdout.
    let main = String::from_utf8(lwt6(&["man"]).stdout).unwrap();
    assert!(
        main.starts_with(".ie") && main.contains(".TH lwt6 1"),
        "{main}"
    );
}

/// grotty output as a terminal shows it: bold and underline are made by overstriking ("x\x08x").
fn terminal_text(out: &[u8]) -> String {
    let mut text = String::new();
    for ch in String::from_utf8_lossy(out).chars() {
        if ch == '\u{8}' {
            text.pop();
        } else {
            text.push(ch);
        }
    }
    text
}

/// The shipped units (dist/systemd/*.service), each copied into `d` with its `ExecStart=` pointing at the binary
/// under test (systemd-analyze checks that the command exists).
fn units_in(d: &std::path::Path) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut units = Vec::new();
    for e in std::fs::read_dir(root.join("dist/systemd")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "service") {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(text.contains("/usr/local/bin/lwt6 run"), "{}", p.display());
            let to = d.join(p.file_name().unwrap());
            std::fs::write(
                &to,
                text.replace("/usr/local/bin/lwt6", env!("CARGO_BIN_EXE_lwt6")),
            )
            .unwrap();
            units.push(to);
        }
    }
    units.sort();
    assert_eq!(units.len(), 2, "{units:?}");
    units
}

#[test]
fn systemd_units_verify() {
    // systemd-analyze checks the Documentation= pages with man: point it at freshly generated ones.
    let d = tmp("unit");
    lwt6(&["man", "--out-dir", d.to_str().unwrap()]);
    let units = units_in(&d);
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .env("MANPATH", &*d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // Only lines about our units count (the host's own units may have unrelated complaints).
    let ours: Vec<&str> = err.lines().filter(|l| l.contains("lwt6")).collect();
    assert!(o.status.success() && ours.is_empty(), "{err}");
}

/// `systemd-analyze security`'s overall exposure of `unit` (0.0 best, 10.0 worst), from its last line
/// (`→ Overall exposure level for lwt6@i.service: 2.4 OK 🙂`).
fn exposure(unit: &std::path::Path) -> f64 {
    let o = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(unit)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("Overall exposure level for"))
        .unwrap_or_else(|| {
            panic!(
                "no overall exposure line: {out}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
    let score = line
        .rsplit(": ")
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    score.parse().unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn systemd_units_score_at_most_4_in_systemd_analyze_security() {
    let d = tmp("security");
    for u in units_in(&d) {
        let e = exposure(&u);
        assert!(e <= 4.0, "{}: exposure {e} > 4.0", u.display());
    }
    // The scale is systemd's: a unit without hardening, run as root, is rated UNSAFE (above 9).
    let bare = d.join("bare.service");
    std::fs::write(&bare, "[Service]\nExecStart=/bin/true\n").unwrap();
    assert!(exposure(&bare) > 9.0);
}

#[test]
fn systemd_units_are_never_skipped_silently_and_keep_instances_apart() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let inst = std::fs::read_to_string(root.join("dist/systemd/lwt6@.service")).unwrap();
    let main = std::fs::read_to_string(root.join("dist/systemd/lwt6.service")).unwrap();
    for u in [&inst, &main] {
        // A Condition*= skips a unit and reports success; a missing namespace or a bad configuration must fail.
        assert!(!u.contains("\nCondition"), "{u}");
        assert!(u.contains("\nType=notify\n"), "{u}");
        // A configuration error (exit status 4) is not restarted every RestartSec= forever.
        assert!(u.contains("\nRestartPreventExitStatus=4\n"), "{u}");
        assert!(u.contains("\nUser=lwt6\n"), "{u}");
    }
    assert!(inst.contains("\nNetworkNamespacePath=/run/netns/%i\n"));
    assert!(
        inst.contains("\nRuntimeDirectory=lwt6/%i\n") && inst.contains("--control /run/lwt6/%i/")
    );
    // The main unit's directory is the instances' parent: kept when it stops.
    assert!(
        main.contains("\nRuntimeDirectory=lwt6\n")
            && main.contains("\nRuntimeDirectoryPreserve=yes\n")
    );
}

#[test]
fn sysusers_creates_the_units_user_and_group() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let d = tmp("sysusers");
    std::fs::create_dir_all(d.join("etc")).unwrap();
    std::fs::write(d.join("etc/passwd"), "").unwrap();
    std::fs::write(d.join("etc/group"), "").unwrap();
    let o = Command::new("systemd-sysusers")
        .arg(format!("--root={}", d.display()))
        .arg(root.join("dist/sysusers.d/lwt6.conf"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let passwd = std::fs::read_to_string(d.join("etc/passwd")).unwrap();
    let group = std::fs::read_to_string(d.join("etc/group")).unwrap();
    assert!(passwd.lines().any(|l| l.starts_with("lwt6:")), "{passwd}");
    assert!(group.lines().any(|l| l.starts_with("lwt6:")), "{group}");
}

#[test]
fn sample_configuration_is_valid() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = lwt6(&[
        "check",
        "-c",
        root.join("dist/lwt6.conf.sample").to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok"));
}
