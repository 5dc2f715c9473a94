"""The test topologies (docs/references.md §6 plus a chain for RPL) and their router descriptions."""
from ktconf import KernelRouter
from ktnet import Topo, NetnsError
from ktpkt import MAC_S0, MAC_R0, MAC_R1, MAC_D0

# The router of the 3-namespace topology, as one description for both the kernel and lwt6.
RTR_BASE = [
    f"link add r0 address {MAC_R0} mtu 1500",
    f"link add r1 address {MAC_R1} mtu 1500",
    "addr add fd00:1::2/64 dev r0",
    "addr add fd00:2::1/64 dev r1",
    "addr add 10.1.0.2/24 dev r0",
    "addr add 10.2.0.1/24 dev r1",
    f"neigh add fd00:1::1 lladdr {MAC_S0} dev r0",
    f"neigh add fd00:2::2 lladdr {MAC_D0} dev r1",
    f"neigh add 10.1.0.1 lladdr {MAC_S0} dev r0",
    f"neigh add 10.2.0.2 lladdr {MAC_D0} dev r1",
    "sysctl net.ipv6.conf.all.forwarding=1",
    "-6 route add fc00::/16 via fd00:2::2 dev r1",
]


class Topo3:
    """sndr[s0] -- [r0]rtr[r1] -- [d0]rcvr with the fixed MACs / addresses of docs/references.md §6."""

    def __init__(self):
        t = self.topo = Topo(["sndr", "rtr", "rcvr"])
        try:
            t.veth("sndr", "s0", MAC_S0, "rtr", "r0", MAC_R0)
            t.veth("rtr", "r1", MAC_R1, "rcvr", "d0", MAC_D0)
            t.sysctl("rtr", "net.ipv4.ip_forward", 1)
            t.batch("sndr", ["link set s0 up", "addr add fd00:1::1/64 dev s0 nodad", "addr add 10.1.0.1/24 dev s0",
                             f"neigh add fd00:1::2 lladdr {MAC_R0} dev s0 nud permanent",
                             "route add default via fd00:1::2 dev s0"])
            t.batch("rcvr", ["link set d0 up", "addr add fd00:2::2/64 dev d0 nodad", "addr add 10.2.0.2/24 dev d0",
                             f"neigh add fd00:2::1 lladdr {MAC_R1} dev d0 nud permanent",
                             "route add default via fd00:2::1 dev d0"])
            self.rtr = KernelRouter(t, "rtr")
            self.rtr.apply(RTR_BASE, permanent=True)
            self.s0 = t.port("sndr", "s0")
            self.d0 = t.port("rcvr", "d0")
        except BaseException:
            t.destroy()
            raise

    def destroy(self):
        self.topo.destroy()


# RPL chain: sndr[s0] -- [a0]k1[a1] -- [b0]k2[b1] -- [c0]k3[c1] -- [d0]rcvr
# Every node owns two "loopback" addresses so that two compression regimes are exercised:
#   fd00:ff::N      (all addresses share 15 bytes: CmprI = CmprE = 15)
#   fd00:ff:N::1    (all addresses share 5 bytes:  CmprI = 5)
# Node numbers: k1=1, k2=2, k3=3, rcvr=9. Sizes never shrink along the path, so the kernel's
# RPL recompression stays correct (docs/references.md §3.4).
CHAIN_NODES = [("k1", 1), ("k2", 2), ("k3", 3)]


def chain_mac(i, side):
    return f"02:00:00:00:{0x10 + i:02x}:{side:02x}"


def chain_addrs(n):
    return [f"fd00:ff::{n}", f"fd00:ff:{n}::1"]


class ChainTopo:
    def __init__(self):
        names = ["sndr"] + [k for k, _ in CHAIN_NODES] + ["rcvr"]
        t = self.topo = Topo(names)
        try:
            # link i joins names[i] (if "x1"/"s0") and names[i+1] (if "x0"/"d0"); subnet fd00:a<i>::/64
            ifs = {"sndr": (None, "s0"), "k1": ("a0", "a1"), "k2": ("b0", "b1"), "k3": ("c0", "c1"),
                   "rcvr": ("d0", None)}
            self.links = []
            for i in range(len(names) - 1):
                left, right = names[i], names[i + 1]
                lif, rif = ifs[left][1], ifs[right][0]
                lmac, rmac = chain_mac(i, 1), chain_mac(i, 2)
                t.veth(left, lif, lmac, right, rif, rmac)
                net = f"fd00:a{i}::"
                self.links.append(dict(left=left, lif=lif, lmac=lmac, laddr=net + "1",
                                       right=right, rif=rif, rmac=rmac, raddr=net + "2"))
                t.batch(left, [f"link set {lif} up", f"addr add {net}1/64 dev {lif} nodad",
                               f"neigh add {net}2 lladdr {rmac} dev {lif} nud permanent"])
                t.batch(right, [f"link set {rif} up", f"addr add {net}2/64 dev {rif} nodad",
                                f"neigh add {net}1 lladdr {lmac} dev {rif} nud permanent"])
            for short, n in CHAIN_NODES + [("rcvr", 9)]:
                t.batch(short, [f"addr add {a}/128 dev lo nodad" for a in chain_addrs(n)])
            for i, (short, n) in enumerate(CHAIN_NODES):
                nxt = self.links[i + 1]
                t.sysctl(short, "net.ipv6.conf.all.forwarding", 1)
                t.sysctl(short, "net.ipv6.conf.all.rpl_seg_enabled", 1)
                t.sysctl(short, f"net.ipv6.conf.{ifs[short][0]}.rpl_seg_enabled", 1)
                t.batch(short, [f"route add fd00:ff::/32 via {nxt['raddr']} dev {nxt['lif']}"])
            t.sysctl("rcvr", "net.ipv6.conf.all.rpl_seg_enabled", 1)
            t.sysctl("rcvr", "net.ipv6.conf.d0.rpl_seg_enabled", 1)
            self.s0 = t.port("sndr", "s0")
            self.d0 = t.port("rcvr", "d0")
            self.k1_mac = self.links[0]["rmac"]
            self.s0_mac = self.links[0]["lmac"]
        except BaseException:
            t.destroy()
            raise

    def destroy(self):
        self.topo.destroy()


__all__ = ["RTR_BASE", "Topo3", "ChainTopo", "CHAIN_NODES", "chain_addrs", "NetnsError"]
