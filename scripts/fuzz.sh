#!/bin/bash
# Coverage-guided fuzzing on stable Rust (libFuzzer through libfuzzer-sys; docs/fuzzing.md says why).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Builds every target in fuzz/ with the sanitizer-coverage flags cargo-fuzz would pass on nightly, then runs each
# one for SECONDS_PER_TARGET seconds (default 10) from its checked-in seeds (fuzz/seeds/TARGET) plus a scratch
# corpus (fuzz/corpus/TARGET, not committed). Fails on the first crash, leak or timeout (the input is left in
# fuzz/artifacts/TARGET/). LWT6_FUZZ_JOBS=N runs N targets at once (default 1).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs="${1:-10}"
shift || true
all=(ethernet ipv6 ipv4 exthdr hbh ioam srh rpl icmpv6 arp ndp icmpv4 pcap decode pipeline config control)
targets=("${@:-${all[@]}}")
[ "$#" -gt 0 ] || targets=("${all[@]}")

# The flags `cargo fuzz build` uses, spelled for stable rustc: libFuzzer's coverage counters, the PC table and
# comparison tracing (so the fuzzer can solve magic numbers and lengths), and --cfg fuzzing.
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
export CARGO_TARGET_DIR="${LWT6_FUZZ_TARGET_DIR:-$PWD/target}"
# An explicit --target keeps these flags off build scripts and proc macros (which run on the host, unlinked
# against libFuzzer), as cargo-fuzz does.
host="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --release --locked --quiet --bins --target "$host"
bin="$CARGO_TARGET_DIR/$host/release"

run() {
    local t="$1"
    mkdir -p "corpus/$t" "artifacts/$t"
    # -rss_limit_mb: a leak or an unbounded allocation is a failure too; -timeout: a hang is.
    "$bin/$t" "corpus/$t" "seeds/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"artifacts/$t.log" 2>&1 || {
        echo "fuzz target $t FAILED (log: fuzz/artifacts/$t.log)" >&2
        tail -n 40 "artifacts/$t.log" >&2
        return 1
    }
    printf '%-10s %s  %s\n' "$t" \
        "$(grep -o 'stat::number_of_executed_units: *[0-9]*' "artifacts/$t.log" | grep -o '[0-9]*$') execs" \
        "$(grep -E '^#[0-9]+[[:space:]]+DONE' "artifacts/$t.log" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9/]+[a-zA-Z]*' | tail -n1)"
}

jobs="${LWT6_FUZZ_JOBS:-1}"
fail=0
pids=()
for t in "${targets[@]}"; do
    run "$t" & pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then
        wait "${pids[0]}" || fail=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
exit "$fail"
