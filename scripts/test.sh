#!/bin/bash
# The project's whole test run (what CI runs): installs what it needs, then
#   formatting, clippy, rustdoc links, unit/property/golden tests, and the differential tests against the Linux kernel
#   in network namespaces (needs root; fails loudly without it, never skips).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\n== %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
    echo "scripts/test.sh: must run as root (the kernel differential tests build network namespaces)" >&2
    exit 1
fi

say "dependencies"
scripts/install-test-deps.sh
command -v cargo >/dev/null || { echo "cargo not found: install Rust 1.95 (rustup)" >&2; exit 1; }
for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
done

say "cargo fmt --all --check"
cargo fmt --all --check

say "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

say "cargo doc (no broken intra-doc links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

say "cargo test (unit, property, golden vectors)"
cargo test --workspace --quiet 2>&1 | tee target/cargo-test.log
grep -q "test result: ok" target/cargo-test.log

say "coverage-guided fuzzing, briefly (scripts/fuzz.sh: every target from its seeds; docs/fuzzing.md)"
(cd fuzz && cargo fmt --check && cargo clippy --locked --quiet --bins --lib -- -D warnings)
LWT6_FUZZ_JOBS=2 scripts/fuzz.sh "${LWT6_FUZZ_SECONDS:-8}"

say "cargo build --release"
cargo build --release --quiet

# Users install with `--profile dist` (docs/install.md): release without debug info. Building that profile here
# would be a second fat-LTO build of the whole workspace (its own target/dist directory shares nothing with
# target/release), so CI installs the release build it already has and strips its debug info as the dist profile
# does (strip = "debuginfo": the symbol table stays).
say "cargo install --path . (into target/install-check; reuses the release build, debug info stripped as --profile dist does)"
CARGO_TARGET_DIR="$PWD/target" cargo install --quiet --locked --offline --path . --root target/install-check --force
strip --strip-debug target/install-check/bin/lwt6
target/install-check/bin/lwt6 --version
du -h target/install-check/bin/lwt6

say "demo (README's first command)"
scripts/demo.sh >target/demo.log
tail -n 3 target/demo.log

say "differential tests against the Linux kernel (pytest tests/kernel)"
LWT6_BIN="$PWD/target/release/lwt6" python3 -m pytest -q tests/kernel

say "hostile packet catalogue: lwt6 and the Linux kernel (pytest tests/hostile)"
LWT6_BIN="$PWD/target/release/lwt6" python3 -m pytest -q tests/hostile
