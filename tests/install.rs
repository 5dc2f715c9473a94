//! What a packager relies on: shell completions and manual pages generated from the command line, and the
//! systemd unit, checked with the tools that consume them (bash, groff, systemd-analyze).

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

#[test]
fn man_pages_render_without_warnings_one_per_subcommand() {
    let d = tmp("man");
    let o = lwt6(&["man", "--out-dir", d.to_str().unwrap()]);
    let listed = String::from_utf8(o.stdout).unwrap();
    let mut expect: Vec<String> = subcommands()
        .iter()
        .map(|c| format!("lwt6-{c}.1"))
        .collect();
    expect.push("lwt6.1".into());
    for page in &expect {
        let p = d.join(page);
        assert!(
            p.exists() && listed.contains(page.as_str()),
            "{page} not written"
        );
        // groff with all warnings on: a malformed page prints warnings to stderr.
        let g = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            g.status.success() && g.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&g.stderr)
        );
        assert!(terminal_text(&g.stdout).contains("SYNOPSIS"), "{page}");
    }
    // The pcap page documents its options.
    let g = Command::new("groff")
        .args(["-man", "-Tascii"])
        .arg(d.join("lwt6-pcap.1"))
        .output()
        .unwrap();
    let text = terminal_text(&g.stdout);
    assert!(
        text.contains("--in-dev") && text.contains("lwt6 pcap"),
        "{text}"
    );
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

#[test]
fn systemd_unit_verifies() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // systemd-analyze checks the Documentation= pages with man: point it at freshly generated ones.
    let d = tmp("unit");
    lwt6(&["man", "--out-dir", d.join("man1").to_str().unwrap()]);
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(root.join("dist/systemd/lwt6@.service"))
        .env("MANPATH", &d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // Only lines about our unit count (the host's own units may have unrelated complaints).
    let ours: Vec<&str> = err.lines().filter(|l| l.contains("lwt6")).collect();
    assert!(o.status.success() && ours.is_empty(), "{err}");
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
