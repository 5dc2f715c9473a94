#!/bin/bash
# Testbeds for the live router (docs/live.md). Run as root.
#
#   scripts/testbed.sh a up      sender - router - receiver, the router namespace prepared for `lwt6 run`
#   scripts/testbed.sh a down    delete its namespaces (idempotent: nothing to delete is not an error)
#
# Namespaces are named ${LWT6_TESTBED_PREFIX}snd, ...rtr, ...rcv (default prefix: l6tb-a-). Several testbeds can
# coexist with different prefixes. `up` first removes what a previous `up` with the same prefix left.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 a up|down" >&2; exit 2; }
[ $# -eq 2 ] || usage
bed=$1 action=$2
[ "$bed" = a ] || { echo "$0: testbed '$bed' is not built yet (only 'a')" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: must run as root (network namespaces)" >&2; exit 1; }

P=${LWT6_TESTBED_PREFIX:-l6tb-a-}
SND=${P}snd RTR=${P}rtr RCV=${P}rcv
DIR=${LWT6_TESTBED_DIR:-target/testbed-$bed}

down() {
    for ns in "$SND" "$RTR" "$RCV"; do
        ip netns del "$ns" 2>/dev/null || true
    done
}

up() {
    down
    for ns in "$SND" "$RTR" "$RCV"; do
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    done
    # sender [s0] -- [r0] router [r1] -- [d0] receiver
    ip link add s0 netns "$SND" address 02:00:00:00:01:01 type veth peer name r0 netns "$RTR" address 02:00:00:00:01:02
    ip link add r1 netns "$RTR" address 02:00:00:00:02:01 type veth peer name d0 netns "$RCV" address 02:00:00:00:02:02
    # The hosts: their kernels send and receive. Checksums are computed in software on the sender, since a
    # frame lwt6 receives through AF_PACKET with a checksum left to the (virtual) hardware is forwarded as is.
    ip -n "$SND" link set s0 up
    ip -n "$SND" addr add fd00:1::1/64 dev s0 nodad
    ip -n "$SND" neigh replace fd00:1::2 lladdr 02:00:00:00:01:02 dev s0 nud permanent
    ip -n "$SND" route add default via fd00:1::2 dev s0
    ip -n "$RCV" link set d0 up
    ip -n "$RCV" addr add fd00:2::2/64 dev d0 nodad
    ip -n "$RCV" neigh replace fd00:2::1 lladdr 02:00:00:00:02:01 dev d0 nud permanent
    ip -n "$RCV" route add default via fd00:2::1 dev d0
    if command -v ethtool >/dev/null; then
        ip netns exec "$SND" ethtool -K s0 tx off >/dev/null
        ip netns exec "$RCV" ethtool -K d0 tx off >/dev/null
    fi
    # The router: the kernel steps aside (no forwarding, no addresses on the interfaces lwt6 owns).
    ip netns exec "$RTR" sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv4.ip_forward=0 \
        net.ipv6.conf.r0.disable_ipv6=1 net.ipv6.conf.r1.disable_ipv6=1
    ip -n "$RTR" link set r0 up
    ip -n "$RTR" link set r1 up
    mkdir -p "$DIR"
    cat >"$DIR/router.conf" <<'EOF'
# testbed a: the router between fd00:1::/64 (sender) and fd00:2::/64 (receiver); MACs and MTUs from the system
link add r0
link add r1
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
sysctl net.ipv6.conf.all.forwarding=1
# traffic to fd00:99::/64 leaves in a seg6 tunnel through the receiver's side
-6 route add fd00:99::/64 encap seg6 mode encap segs fd00:2::2 dev r1
EOF
    cat <<EOF
testbed a is up: $SND [s0] -- [r0] $RTR [r1] -- [d0] $RCV
  start the router:  ip netns exec $RTR lwt6 run -c $DIR/router.conf --control $DIR/lwt6.sock
  traffic:           ip netns exec $SND ping -c 3 fd00:2::2
  control:           lwt6 ctl --control $DIR/lwt6.sock show stats
  tear down:         $0 a down
EOF
}

case $action in
up) up ;;
down) down ;;
*) usage ;;
esac
