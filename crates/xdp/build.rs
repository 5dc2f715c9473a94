//! Compiles the XDP plan executor (`bpf/plan.bpf.c`) with clang's BPF back end into `$OUT_DIR/plan.bpf.o`.
//!
//! The compiler is pinned: `LWT6_BPF_CLANG` when set (any clang the user names), else `clang-19`, else a `clang`
//! whose major version is 19 (scripts/install-test-deps.sh installs Debian's `clang-19`). Debian's clang 14 is
//! refused: its BPF back end silently dropped header stores in a program of this kind (docs/xdp.md).
//!
//! A compiler that refuses the program fails the build. Without such a compiler, or with `LWT6_XDP=off`, the
//! crate still builds: the cfg `lwt6_xdp_built` is not set
//! and `lwt6_xdp::available()` says why the tier is absent.

use std::path::PathBuf;
use std::process::Command;

/// The clang major version the build is pinned to.
const PINNED_MAJOR: u32 = 19;

fn major(clang: &str) -> Option<u32> {
    let out = Command::new(clang).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let after = text.split("clang version ").nth(1)?;
    after.split('.').next()?.trim().parse().ok()
}

fn find_clang() -> Result<String, String> {
    if let Ok(c) = std::env::var("LWT6_BPF_CLANG") {
        return match major(&c) {
            Some(_) => Ok(c),
            None => Err(format!("LWT6_BPF_CLANG={c} does not run")),
        };
    }
    for c in [format!("clang-{PINNED_MAJOR}"), "clang".to_string()] {
        match major(&c) {
            Some(m) if m == PINNED_MAJOR => return Ok(c),
            Some(m) => {
                return Err(format!(
                    "{c} is clang {m}, not the pinned {PINNED_MAJOR} (install clang-{PINNED_MAJOR}, or name a \
                     compiler with LWT6_BPF_CLANG)"
                ));
            }
            None => {}
        }
    }
    Err(format!(
        "no clang-{PINNED_MAJOR} found (scripts/install-test-deps.sh installs it)"
    ))
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(lwt6_xdp_built)");
    println!("cargo::rerun-if-changed=bpf/plan.bpf.c");
    println!("cargo::rerun-if-env-changed=LWT6_BPF_CLANG");
    println!("cargo::rerun-if-env-changed=LWT6_XDP");
    println!("cargo::rerun-if-env-changed=PATH");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let absent = |why: String| {
        println!("cargo::warning=lwt6-xdp: the XDP tier is absent: {why}");
        println!("cargo::rustc-env=LWT6_XDP_ABSENT={why}");
        // Built again once the pinned compiler appears on the PATH (installed after a first build).
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                let c = dir.join(format!("clang-{PINNED_MAJOR}"));
                println!("cargo::rerun-if-changed={}", c.display());
            }
        }
    };
    if std::env::var("LWT6_XDP").is_ok_and(|v| v == "off") {
        absent("built with LWT6_XDP=off".into());
        return;
    }
    let clang = match find_clang() {
        Ok(c) => c,
        Err(why) => return absent(why),
    };
    let obj = out.join("plan.bpf.o");
    let status = Command::new(&clang)
        .args([
            "-O2",
            "-g",
            "-target",
            "bpf",
            "-mcpu=v3",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-c",
            "bpf/plan.bpf.c",
            "-o",
        ])
        .arg(&obj)
        .status();
    match status {
        Ok(s) if s.success() => {
            println!("cargo::rustc-cfg=lwt6_xdp_built");
            println!("cargo::rustc-env=LWT6_XDP_CLANG={clang}");
        }
        // A compiler that is there but refuses the program is a bug in the program: the build fails.
        Ok(s) => panic!("{clang} failed on bpf/plan.bpf.c ({s})"),
        Err(e) => panic!("{clang} did not run: {e}"),
    }
}
