#!/bin/bash
# Instructions per packet of the live capture (examples/capture_cost.rs): rounds of 64 frames as `lwt6 run`'s receive
# loop runs them, bare (the loop before the capture existed), capture off, capture on (rx, tx and drop written to a
# pcapng file by the writer thread), for forwarded frames (fast path) and dropped ones (no route: general path and an
# ICMPv6 error). Counted by callgrind, marginal cost (Ir(N2) - Ir(N1)) / (N2 - N1) so that setup cancels out:
# "worker" counts capture_cost::rounds only (the worker thread's work), "process" everything (the writer included).
# Needs valgrind. Usage: scripts/bench-capture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --quiet --example capture_cost
BIN=target/release/examples/capture_cost
N1=${N1:-1280}
N2=${N2:-12800}
ir() { # toggle kind mode packets
    local f t; f=$(mktemp)
    t=()
    [ "$1" = worker ] && t=(--toggle-collect='capture_cost::rounds')
    valgrind --tool=callgrind "${t[@]}" --callgrind-out-file="$f" "$BIN" "$2" "$3" "$4" >/dev/null 2>&1
    callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
    rm -f "$f"
}
echo "frames,mode,worker_instructions_per_packet,process_instructions_per_packet"
for k in forward drop; do
    for m in bare off on; do
        w=$(( ($(ir worker $k $m $N2) - $(ir worker $k $m $N1)) / (N2 - N1) ))
        p=$(( ($(ir process $k $m $N2) - $(ir process $k $m $N1)) / (N2 - N1) ))
        echo "$k,$m,$w,$p"
    done
done
