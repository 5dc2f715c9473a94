#!/bin/bash
# Testbeds for the live router (docs/live.md). Run as root.
#
#   scripts/testbed.sh a up|down   sender - router - receiver, lwt6 as the router
#   scripts/testbed.sh b up|down   mixed SRv6 + IOAM chain: lwt6 head-end, kernel End, kernel IOAM transit, kernel
#                                  End.DX6, then the receiver
#   scripts/testbed.sh c up|down   the IOAM paper's five nodes, Alpha - Athos - Porthos - Aramis - Beta, lwt6 on the
#                                  three middle ones (Athos inserts, Porthos fills, Aramis fills and removes)
#
# `up` builds the namespaces and writes one configuration per lwt6 node into $LWT6_TESTBED_DIR (default
# target/testbed-BED/), then prints the commands that start lwt6 and send traffic; `down` deletes the namespaces
# (idempotent: nothing to delete is not an error). Namespaces are named ${LWT6_TESTBED_PREFIX}NODE (default prefix
# l6tb-BED-). Several testbeds can coexist with different prefixes. `up` first removes what a previous `up` with
# the same prefix left.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 a|b|c up|down" >&2; exit 2; }
[ $# -eq 2 ] || usage
bed=$1 action=$2
case $bed in a | b | c) ;; *) echo "$0: unknown testbed '$bed' (a, b or c)" >&2; exit 2 ;; esac
case $action in up | down) ;; *) usage ;; esac
[ "$(id -u)" = 0 ] || { echo "$0: must run as root (network namespaces)" >&2; exit 1; }

P=${LWT6_TESTBED_PREFIX:-l6tb-$bed-}
DIR=${LWT6_TESTBED_DIR:-target/testbed-$bed}
case $bed in
a) NODES="snd rtr rcv" ;;
b) NODES="snd head end iot dx6 rcv" ;;
c) NODES="alpha athos porthos aramis beta" ;;
esac

down() {
    for n in $NODES; do
        ip netns del "$P$n" 2>/dev/null || true
    done
}

mkns() {
    for n in $NODES; do
        ip netns add "$P$n"
        ip -n "$P$n" link set lo up
        ip netns exec "$P$n" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    done
}

# veth NODE1 IF1 MAC1 NODE2 IF2 MAC2: one link between two namespaces, both ends up.
veth() {
    ip link add "$2" netns "$P$1" address "$3" type veth peer name "$5" netns "$P$4" address "$6"
    ip -n "$P$1" link set "$2" up
    ip -n "$P$4" link set "$5" up
}

# host NODE IF ADDR/64 GATEWAY GATEWAY_MAC: an end host; its kernel sends and receives. Checksums are computed in
# software, since a frame lwt6 receives through AF_PACKET with a checksum left to the (virtual) hardware is
# forwarded as is.
host() {
    ip -n "$P$1" addr add "$3" dev "$2" nodad
    ip -n "$P$1" neigh replace "$4" lladdr "$5" dev "$2" nud permanent
    ip -n "$P$1" route add default via "$4" dev "$2"
    if command -v ethtool >/dev/null; then
        ip netns exec "$P$1" ethtool -K "$2" tx off >/dev/null
    fi
}

# kernel NODE: a router whose kernel forwards (the kernel nodes of testbed b).
kernel() {
    ip netns exec "$P$1" sysctl -qw net.ipv6.conf.all.forwarding=1
}

# addr NODE IF ADDR/64; neigh NODE IF ADDR MAC (static, on a kernel node)
addr() { ip -n "$P$1" addr add "$3" dev "$2" nodad; }
neigh() { ip -n "$P$1" neigh replace "$3" lladdr "$4" dev "$2" nud permanent; }

# lwt6node NODE IF...: the kernel steps aside (no forwarding, no addresses on the interfaces lwt6 owns).
lwt6node() {
    local n=$1
    shift
    ip netns exec "$P$n" sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv4.ip_forward=0
    for i in "$@"; do
        ip netns exec "$P$n" sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
    done
}

up_a() {
    # sender [s0] -- [r0] router [r1] -- [d0] receiver
    veth snd s0 02:00:00:00:01:01 rtr r0 02:00:00:00:01:02
    veth rtr r1 02:00:00:00:02:01 rcv d0 02:00:00:00:02:02
    host snd s0 fd00:1::1/64 fd00:1::2 02:00:00:00:01:02
    host rcv d0 fd00:2::2/64 fd00:2::1 02:00:00:00:02:01
    lwt6node rtr r0 r1
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
testbed a is up: ${P}snd [s0] -- [r0] ${P}rtr [r1] -- [d0] ${P}rcv
  start the router:  ip netns exec ${P}rtr lwt6 run -c $DIR/router.conf --control $DIR/lwt6.sock
  traffic:           ip netns exec ${P}snd ping -c 3 fd00:2::2
  control:           lwt6 ctl --control $DIR/lwt6.sock show stats
  tear down:         $0 a down
EOF
}

up_b() {
    # snd [s0] -- [h0] head (lwt6) [h1] -- [e0] end [e1] -- [i0] iot [i1] -- [x0] dx6 [x1] -- [d0] rcv
    veth snd s0 02:00:00:00:01:01 head h0 02:00:00:00:01:02
    veth head h1 02:00:00:00:12:01 end e0 02:00:00:00:12:02
    veth end e1 02:00:00:00:23:01 iot i0 02:00:00:00:23:02
    veth iot i1 02:00:00:00:34:01 dx6 x0 02:00:00:00:34:02
    veth dx6 x1 02:00:00:00:02:01 rcv d0 02:00:00:00:02:02
    host snd s0 fd00:1::1/64 fd00:1::2 02:00:00:00:01:02
    host rcv d0 fd00:2::2/64 fd00:2::1 02:00:00:00:02:01
    lwt6node head h0 h1
    # end: the kernel's End for SID fc00:e::100
    kernel end
    addr end e0 fd00:12::2/64
    addr end e1 fd00:23::1/64
    neigh end e0 fd00:12::1 02:00:00:00:12:01
    neigh end e1 fd00:23::2 02:00:00:00:23:02
    ip -n "${P}end" -6 route add fc00:e::100/128 encap seg6local action End dev e0
    ip -n "${P}end" -6 route add fc00:d::/64 via fd00:23::2 dev e1
    ip -n "${P}end" -6 route add fd00:1::/64 via fd00:12::1 dev e0
    # iot: the kernel fills IOAM traces of namespace 123 arriving on i0 (node id 0x222222)
    kernel iot
    addr iot i0 fd00:23::2/64
    addr iot i1 fd00:34::1/64
    neigh iot i0 fd00:23::1 02:00:00:00:23:01
    neigh iot i1 fd00:34::2 02:00:00:00:34:02
    ip -n "${P}iot" ioam namespace add 123
    ip netns exec "${P}iot" sysctl -qw net.ipv6.ioam6_id=0x222222 net.ipv6.conf.i0.ioam6_enabled=1 \
        net.ipv6.conf.i0.ioam6_id=0x2020
    ip -n "${P}iot" -6 route add fc00:d::/64 via fd00:34::2 dev i1
    ip -n "${P}iot" -6 route add fd00:1::/64 via fd00:23::1 dev i0
    # dx6: the kernel's End.DX6 for SID fc00:d::600, the inner packet to the receiver
    kernel dx6
    addr dx6 x0 fd00:34::2/64
    addr dx6 x1 fd00:2::1/64
    neigh dx6 x0 fd00:34::1 02:00:00:00:34:01
    neigh dx6 x1 fd00:2::2 02:00:00:00:02:02
    ip -n "${P}dx6" -6 route add fc00:d::600/128 encap seg6local action End.DX6 nh6 fd00:2::2 dev x0
    ip -n "${P}dx6" -6 route add fd00:1::/64 via fd00:34::1 dev x0
    cat >"$DIR/head.conf" <<'EOF'
# testbed b, the head-end: traffic to the receiver (fd00:2::/64) goes into a seg6 tunnel through the kernel's End
# (fc00:e::100) and End.DX6 (fc00:d::600); the tunnel's packets, routed to fc00:e::/64, get an IOAM pre-allocated
# trace of namespace 123 (3 slots of hop limit + node id), which lwt6 fills first as the inserting node.
link add h0
link add h1
addr add fd00:1::2/64 dev h0
addr add fd00:12::1/64 dev h1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev h0
neigh add fd00:12::2 lladdr 02:00:00:00:12:02 dev h1
sysctl net.ipv6.conf.all.forwarding=1
ioam namespace add 123
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.conf.h1.ioam6_id=0x1010
-6 route add fd00:2::/64 encap seg6 mode encap segs fc00:e::100,fc00:d::600 dev h1
-6 route add fc00:e::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 123 size 12 via fd00:12::2 dev h1
EOF
    cat <<EOF
testbed b is up: ${P}snd [s0] -- [h0] ${P}head [h1] -- [e0] ${P}end [e1] -- [i0] ${P}iot [i1] -- [x0] ${P}dx6 [x1] -- [d0] ${P}rcv
  start the head-end:  ip netns exec ${P}head lwt6 run -c $DIR/head.conf --control $DIR/head.sock
  traffic:             ip netns exec ${P}snd ping -c 3 fd00:2::2
  the SRv6+IOAM leg:   ip netns exec ${P}dx6 tshark -i x0 -V ip6
  tear down:           $0 b down
EOF
}

up_c() {
    # Alpha [a0] -- [t0] Athos [t1] -- [p0] Porthos [p1] -- [m0] Aramis [m1] -- [b0] Beta
    veth alpha a0 02:00:00:00:01:01 athos t0 02:00:00:00:01:02
    veth athos t1 02:00:00:00:12:01 porthos p0 02:00:00:00:12:02
    veth porthos p1 02:00:00:00:23:01 aramis m0 02:00:00:00:23:02
    veth aramis m1 02:00:00:00:02:01 beta b0 02:00:00:00:02:02
    host alpha a0 fd00:1::1/64 fd00:1::2 02:00:00:00:01:02
    host beta b0 fd00:2::2/64 fd00:2::1 02:00:00:00:02:01
    lwt6node athos t0 t1
    lwt6node porthos p0 p1
    lwt6node aramis m0 m1
    cat >"$DIR/athos.conf" <<'EOF'
# testbed c, Athos: inserts an IOAM pre-allocated trace (namespace 123, 3 slots of hop limit + node id) into
# traffic for Beta and fills it first; IOAM of namespace 123 may leave by t1 only.
link add t0
link add t1
addr add fd00:1::2/64 dev t0
addr add fd00:12::1/64 dev t1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev t0
neigh add fd00:12::2 lladdr 02:00:00:00:12:02 dev t1
sysctl net.ipv6.conf.all.forwarding=1
ioam namespace add 123
ioam domain add paper namespace 123 ingress t1 egress t1
sysctl net.ipv6.ioam6_id=0x0a0a0a
-6 route add fd00:2::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 123 size 12 via fd00:12::2 dev t1
-6 route add fd00:23::/64 via fd00:12::2 dev t1
EOF
    cat >"$DIR/porthos.conf" <<'EOF'
# testbed c, Porthos: fills the traces of namespace 123 arriving on p0 (from Athos), passes them on by p1
link add p0
link add p1
addr add fd00:12::2/64 dev p0
addr add fd00:23::1/64 dev p1
neigh add fd00:12::1 lladdr 02:00:00:00:12:01 dev p0
neigh add fd00:23::2 lladdr 02:00:00:00:23:02 dev p1
sysctl net.ipv6.conf.all.forwarding=1
ioam namespace add 123
ioam domain add paper namespace 123 ingress p0 egress p1
sysctl net.ipv6.ioam6_id=0x0b0b0b
sysctl net.ipv6.conf.p0.ioam6_enabled=1
-6 route add fd00:2::/64 via fd00:23::2 dev p1
-6 route add fd00:1::/64 via fd00:12::1 dev p0
EOF
    cat >"$DIR/aramis.conf" <<'EOF'
# testbed c, Aramis: fills the traces of namespace 123 arriving on m0 (from Porthos); m1 (towards Beta) is not an
# egress of the domain, so the traces are removed (and exported) there and Beta gets the packet without them
link add m0
link add m1
addr add fd00:23::2/64 dev m0
addr add fd00:2::1/64 dev m1
neigh add fd00:23::1 lladdr 02:00:00:00:23:01 dev m0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev m1
sysctl net.ipv6.conf.all.forwarding=1
ioam namespace add 123
ioam domain add paper namespace 123 ingress m0 egress m0
sysctl net.ipv6.ioam6_id=0x0c0c0c
sysctl net.ipv6.conf.m0.ioam6_enabled=1
-6 route add fd00:1::/64 via fd00:23::1 dev m0
-6 route add fd00:12::/64 via fd00:23::1 dev m0
EOF
    cat <<EOF
testbed c is up: ${P}alpha [a0] -- [t0] ${P}athos [t1] -- [p0] ${P}porthos [p1] -- [m0] ${P}aramis [m1] -- [b0] ${P}beta
  start the routers:  for n in athos porthos aramis; do
                        ip netns exec ${P}\$n lwt6 run -c $DIR/\$n.conf --control $DIR/\$n.sock & done
  traffic:            ip netns exec ${P}alpha ping -c 3 fd00:2::2
  the traces:         ip netns exec ${P}aramis tshark -i m0 -V ip6
  tear down:          $0 c down
EOF
}

case $action in
up)
    down
    mkdir -p "$DIR"
    mkns
    "up_$bed"
    ;;
down) down ;;
esac
