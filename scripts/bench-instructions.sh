#!/bin/bash
# Deterministic companion of `lwt6 bench sweep`: instructions per packet of the lwt6 pipeline at every point of
# a sweep, counted by callgrind (repeatable whatever else the machine does), for the smoothness check the
# wall-clock sweep cannot make on a noisy host. Marginal cost: (Ir(N2) - Ir(N1)) / (N2 - N1) with collection
# restricted to Router::process_batch, so setup and warm-up cancel out.
# Usage: [STRATS="lwt6 lwt6-memcpy post-fix"] scripts/bench-instructions.sh [OUT.csv]   (needs valgrind; ~15 minutes per strategy;
# appends to OUT when it exists)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-docs/plots/instructions.csv}
command -v valgrind >/dev/null || apt-get install -y -q valgrind
cargo build --release --quiet
BIN=target/release/lwt6
N1=${N1:-2000}
N2=${N2:-12000}
ir() { # proto mode size strategy packets
    local f; f=$(mktemp)
    valgrind --tool=callgrind --toggle-collect='lwt6_dataplane::router::Router::process_batch' --callgrind-out-file="$f" \
        "$BIN" bench sweep --proto "$1" --modes "$2" --sizes "$3..$3" --strategies "$4" --packets "$5" --runs 1 \
        --no-baseline --no-progress --out-dir "$(mktemp -d)" >/dev/null 2>&1
    callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
    rm -f "$f"
}
[ -s "$OUT" ] || echo "proto,mode,size,strategy,instructions_per_packet" >"$OUT"
point() { # proto mode size strategy
    local a b
    a=$(ir "$1" "$2" "$3" "$4" $N1)
    b=$(ir "$1" "$2" "$3" "$4" $N2)
    echo "$1,$2,$3,$4,$(( (b - a) / (N2 - N1) ))" | tee -a "$OUT"
}
STRATS=${STRATS:-lwt6 lwt6-memcpy post-fix}
for s in $STRATS; do
    for m in encap encap.red inline l2encap; do
        for n in $(seq 1 40); do point seg6 "$m" "$n" "$s"; done
    done
    for t in $(seq 4 8 244); do point ioam6 inline "$t" "$s"; point ioam6 encap "$t" "$s"; done
    for n in $(seq 1 16); do point rpl inline "$n" "$s"; done
done
