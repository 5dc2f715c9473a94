#!/bin/bash
# Million-line configuration files through `lwt6 check` (read line by line, parse, build the snapshot): wall time
# and peak RSS per shape, including files refused on their last line (everything before it parsed and then
# discarded). Usage: scripts/bench-config-lines.sh [LINES]   (default 1000000; no root needed)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
BIN=${LWT6_BIN:-target/release/lwt6}
[ -x "$BIN" ] || cargo build --release --quiet
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT INT TERM
python3 - "$N" "$DIR" <<'PY'
import sys
n, d = int(sys.argv[1]), sys.argv[2]
head = ("link add v0 address 02:00:00:00:02:01\naddr add fd00:2::1/64 dev v0\n"
        "neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev v0\nroute add fc00::/16 via fd00:2::2 dev v0\n")
def pfx(i):
    return "2%03x:%x:%x::/48" % (i >> 24 & 0xfff, (i >> 12) & 0xfff, i & 0xfff)
shapes = {
    "routes": lambda i: f"route add {pfx(i)} via fd00:2::2 dev v0",
    "seg6-routes": lambda i: f"route add {pfx(i)} encap seg6 mode encap segs fc00::{i % 65535 + 1:x},fc00::b dev v0",
    "neighbours": lambda i: f"neigh add fd00:2::1:{i >> 16 & 0xffff:x}:{i & 0xffff:x} lladdr 02:00:00:00:02:02 dev v0",
    "comments": lambda i: f"# comment line {i} " + "x" * 40,
    "blank": lambda i: "",
    "sysctls": lambda i: "sysctl net.ipv6.conf.v0.hop_limit=%d" % (i % 255 + 1),
}
for name, f in shapes.items():
    with open(f"{d}/{name}.conf", "w") as out:
        out.write(head)
        for i in range(1, n + 1):
            out.write(f(i) + "\n")
# The routes file, refused on its last line (a duplicate of the first route).
with open(f"{d}/routes.conf") as src, open(f"{d}/routes-bad-last.conf", "w") as out:
    out.write(src.read())
    out.write(f"route add {pfx(1)} via fd00:2::2 dev v0\n")
PY
printf '%-16s %10s %8s %8s %9s %s\n' shape lines wall_s cpu_s peak_MB "bytes/line  (exit status)"
for shape in routes seg6-routes neighbours comments blank sysctls routes-bad-last; do
    f="$DIR/$shape.conf"
    lines=$(wc -l <"$f")
    rc=0
    /usr/bin/time -o "$DIR/time" -f '%e %U %S %M' "$BIN" check -c "$f" >/dev/null 2>"$DIR/err" || rc=$?
    read -r secs user sys kb < <(tail -1 "$DIR/time")
    printf '%-16s %10d %8s %8.2f %9.1f %6d  (%d)\n' "$shape" "$lines" "$secs" "$(echo "$user+$sys" | bc -l)" \
        "$(echo "$kb/1024" | bc -l)" \
        $(( kb * 1024 / lines )) "$rc"
    [ "$rc" = 0 ] || sed 's/^/    /' "$DIR/err" | head -2
done
