#!/bin/bash
# The lwt6 demo: runs the example router configurations on their input captures and shows, per example,
# what went in, what came out on which interface, and why anything was dropped.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
LWT6=target/release/lwt6
OUT=${OUT:-target/demo}
mkdir -p "$OUT"
for ex in seg6 ioam6 rpl; do
    dir=examples/$ex
    printf '\n================ %s: %s\n' "$ex" "$(sed -n 's/^# lwt6 example: //p' "$dir/router.conf")"
    echo "--- routes (lwt6 show routes -c $dir/router.conf)"
    $LWT6 show routes -c "$dir/router.conf" | grep -v 'proto kernel'
    echo "--- in: $dir/input.pcap, received on r0"
    $LWT6 decode "$dir/input.pcap"
    echo "--- out: $OUT/$ex.pcapng (lwt6 pcap -c $dir/router.conf --in-dev r0 ... --stats -v)"
    $LWT6 pcap -c "$dir/router.conf" --in-dev r0 "$dir/input.pcap" "$OUT/$ex.pcapng" --stats -v
done
printf '\nOutputs are in %s/ (open them in Wireshark, or: %s decode FILE -j).\n' "$OUT" "$LWT6"
