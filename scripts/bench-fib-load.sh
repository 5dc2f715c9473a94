#!/bin/bash
# Loading a large IPv6 table: the Linux kernel (`ip -6 -batch` into a network namespace) against lwt6 (`lwt6 check`,
# which parses the configuration and builds the snapshot: FIB, plans, templates), the same routes, one run.
# Usage: sudo scripts/bench-fib-load.sh [ROUTES] [SEG6_EVERY]   (defaults: 1000000 routes, every 10th seg6 encap)
# Prints one line per loader: seconds, and memory (kernel: MemAvailable drop; lwt6: peak RSS) per route.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
EVERY=${2:-10}
BIN=${LWT6_BIN:-target/release/lwt6}
[ -x "$BIN" ] || cargo build --release --quiet
NS=lwt6fib$$
DIR=$(mktemp -d)
cleanup() { ip netns del "$NS" 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT INT TERM
python3 - "$N" "$EVERY" "$DIR" <<'PY'
import sys
n, every, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def pfx(i):
    return "2%03x:%x:%x::/48" % (i >> 24 & 0xfff, (i >> 12) & 0xfff, i & 0xfff)
with open(f"{d}/kernel.batch", "w") as k, open(f"{d}/lwt6.conf", "w") as l:
    l.write("link add v0 address 02:00:00:00:02:01\naddr add fd00:2::1/64 dev v0\n"
            "neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev v0\n")
    # The SIDs' own route, in both tables.
    k.write("route add fc00::/16 via fd00:2::2 dev v0\n")
    l.write("route add fc00::/16 via fd00:2::2 dev v0\n")
    for i in range(1, n + 1):
        if every and i % every == 0:
            tail = f"encap seg6 mode encap segs fc00::{i % 65535 + 1:x},fc00::b dev v0"
        else:
            tail = "via fd00:2::2 dev v0"
        k.write(f"route add {pfx(i)} {tail}\n")
        l.write(f"route add {pfx(i)} {tail}\n")
PY
ip netns add "$NS"
ip -n "$NS" link add v0 type veth peer name v1
ip -n "$NS" link set v0 up
ip -n "$NS" link set v1 up
ip -n "$NS" -6 addr add fd00:2::1/64 dev v0 nodad
ip -n "$NS" -6 neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev v0
ip netns exec "$NS" sysctl -qw net.ipv6.route.max_size=$((N * 2)) 2>/dev/null || true
avail() { awk '/MemAvailable/ {print $2}' /proc/meminfo; }
sync; echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || true
m0=$(avail)
t0=$(date +%s.%N)
ip -n "$NS" -6 -batch "$DIR/kernel.batch"
t1=$(date +%s.%N)
m1=$(avail)
routes=$(ip -n "$NS" -6 route show | wc -l)
echo "kernel: $(python3 -c "print(f'{$t1-$t0:.2f}')") s for $N routes ($routes in the table), ~$(( (m0 - m1) * 1024 / N )) bytes/route (MemAvailable drop)"
out=$( { /usr/bin/time -f '%e %M' "$BIN" check -c "$DIR/lwt6.conf" >/dev/null; } 2>&1 | tail -1)
secs=${out% *}; kb=${out#* }
echo "lwt6:   $secs s for $N routes, peak RSS $(( kb * 1024 / N )) bytes/route (read line by line, parse, build)"
python3 -c "print(f'lwt6 loads {($t1-$t0)/$secs:.1f}x faster than the kernel')"
