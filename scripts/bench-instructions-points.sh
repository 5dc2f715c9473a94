#!/bin/bash
# Instructions per packet at eleven representative points (seg6 encap 1/2/20/40 SIDs, encap.red, inline, l2encap at
# 2 SIDs, ioam6 inline/encap 24 bytes, rpl 2/8 segments): the quick form of scripts/bench-instructions.sh, for
# comparing two builds. Usage: scripts/bench-instructions-points.sh [BIN] [SYMBOL]
#   BIN defaults to target/release/lwt6 (built if missing); SYMBOL to the function callgrind counts,
#   lwt6_dataplane::router::Router::process_batch (builds before the workspace: lwt6::router::Router::process_batch).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/lwt6}
SYM=${2:-lwt6_dataplane::router::Router::process_batch}
[ -x "$BIN" ] || cargo build --release --quiet
command -v valgrind >/dev/null || apt-get install -y -q valgrind
N1=2000
N2=12000
ir() { # proto mode size packets
    local f; f=$(mktemp)
    valgrind --tool=callgrind --toggle-collect="$SYM" --callgrind-out-file="$f" \
        "$BIN" bench sweep --proto "$1" --modes "$2" --sizes "$3..$3" --strategies lwt6 --packets "$4" --runs 1 \
        --no-baseline --no-progress --out-dir "$(mktemp -d)" >/dev/null 2>&1
    callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
    rm -f "$f"
}
echo "proto,mode,size,instructions_per_packet"
for p in "seg6 encap 1" "seg6 encap 2" "seg6 encap 20" "seg6 encap 40" "seg6 encap.red 2" "seg6 inline 2" \
    "seg6 l2encap 2" "ioam6 inline 24" "ioam6 encap 24" "rpl inline 2" "rpl inline 8"; do
    set -- $p
    a=$(ir "$1" "$2" "$3" $N1)
    b=$(ir "$1" "$2" "$3" $N2)
    echo "$1,$2,$3,$(( (b - a) / (N2 - N1) ))"
done
