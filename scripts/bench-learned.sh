#!/bin/bash
# Instructions per packet forwarding to a next hop learned by NDP against a static neighbour (examples/
# learned_neighbour.rs: plain forwarding and seg6 encap with 3 SIDs through the gateway, alternately), counted by
# callgrind over Router::process_batch; marginal cost (Ir(N2) - Ir(N1)) / (N2 - N1), so setup, resolution and
# warm-up cancel out. Needs valgrind.
# Usage: scripts/bench-learned.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || apt-get install -y -q valgrind
cargo build --release --quiet --example learned_neighbour
BIN=target/release/examples/learned_neighbour
N1=${N1:-2560}
N2=${N2:-25600}
ir() { # static|learned packets
    local f; f=$(mktemp)
    valgrind --tool=callgrind --toggle-collect='lwt6_dataplane::router::Router::process_batch' --callgrind-out-file="$f" \
        "$BIN" "$1" "$2" >/dev/null 2>&1
    callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
    rm -f "$f"
}
for m in static learned; do
    a=$(ir $m $N1)
    b=$(ir $m $N2)
    echo "$m: $(( (b - a) / (N2 - N1) )) instructions per packet"
done
