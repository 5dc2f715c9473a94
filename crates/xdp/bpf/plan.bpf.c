// lwt6's XDP tier: a small executor of the forwarding plans that lwt6's userspace snapshot precomputes.
//
// For a received IPv6 frame (an IPv4 frame: in a trie of its own) it looks the destination up in an LPM trie,
// finds the route's plan, and when the plan needs nothing the driver cannot do, builds the outgoing frame in
// place (template copy, a few patches the plan lists) and redirects it through a devmap. Every other frame goes to the AF_XDP socket of its queue
// (or on to the kernel when the queue has none), exactly as lwt6's plain redirect program sends them, and is
// counted under the reason it left the driver. The tunnels' knowledge lives in the Rust plans (crates/xdp/src):
// this file knows no tunnel.
//
// lwt6's own code (MIT OR Apache-2.0). Only the UAPI's numbers (helper ids, map types, struct xdp_md) are used,
// written out here so that the build needs no kernel headers.
//
// The layout of every map's key and value is mirrored by crates/xdp/src/layout.rs; the sizes are asserted on
// both sides.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))
// Hides what the compiler knows of a value, so that it keeps a bounds check the verifier needs.
#define opaque(x) asm volatile("" : "+r"(x))

// BTF-described map definitions (the form libbpf and aya read from the ".maps" section).
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

// enum xdp_action
#define XDP_ABORTED 0
#define XDP_PASS 2
#define XDP_REDIRECT 4

// enum bpf_map_type
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LPM_TRIE 11
#define BPF_MAP_TYPE_DEVMAP 14
#define BPF_MAP_TYPE_XSKMAP 17
#define BPF_F_NO_PREALLOC 1

struct xdp_md {
    __u32 data;
    __u32 data_end;
    __u32 data_meta;
    __u32 ingress_ifindex;
    __u32 rx_queue_index;
    __u32 egress_ifindex;
};

// Helpers, by their number in the UAPI's list.
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_xdp_adjust_head)(struct xdp_md *ctx, int delta) = (void *)44;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;
static long (*bpf_xdp_adjust_tail)(struct xdp_md *ctx, int delta) = (void *)65;

// ---- Shared layout (crates/xdp/src/layout.rs) ----

// Longest template: Ethernet header, IPv6 header slot and 216 bytes of inserted header (veth's XDP headroom).
#define TPL_MAX 272
// Patches per plan.
#define OPS_MAX 16
// The received IPv6 header, saved before the template overwrites it.
#define RX_SAVE 40

// Counters (per CPU): why a frame left the driver, and what the driver sent.
#define W_FORWARDED 0        // redirected by a plan (all kinds)
#define W_NOT_IPV6 1         // not an IPv6 frame (ARP, IPv4, ...): as before the tier
#define W_SHORT 2            // shorter than an Ethernet and an IPv6 header, or than its Payload Length says
#define W_NO_PORT 3          // received on an interface the tier does not know
#define W_NOT_FOR_US 4       // Ethernet destination not the port's address (multicast: NDP, ...)
#define W_FRAME_LEN 5        // longer than the port's MTU allows
#define W_HOP_LIMIT 6        // hop limit 0 or 1: ICMP Time Exceeded from the slow path
#define W_ADDR 7             // link-local, multicast or ::/8 source or destination (NDP, ...)
#define W_HOP_BY_HOP 8       // a Hop-by-Hop header follows (IOAM transit, router alert, ...)
#define W_NO_ROUTE 9         // no route
#define W_NO_PLAN 10         // the route has no plan (no neighbour, a per-packet hash, HMAC over the packet)
#define W_KIND 11            // the route's plan is of a kind the driver does not execute
#define W_TEMPLATE 12        // the plan's template is longer than TPL_MAX
#define W_LOCAL 13           // addressed to one of the router's addresses
#define W_MTU 14             // the packet would exceed the plan's MTU: ICMP Packet Too Big from the slow path
#define W_HEADROOM 15        // the frame's headroom cannot take what the plan adds
#define W_NO_EGRESS 16       // the plan's egress is not in the devmap
#define W_BAD_PLAN 17        // a plan the executor refuses (inconsistent lengths): a bug, counted
#define W_SRH 18             // an SRH-advancing plan on a packet without a plain SRH to advance (or HMAC required)
#define W_DECAP 19           // a decapsulating plan on a packet without an IPv6 packet to pull out (or HMAC required)
#define W_NEXT 20            // End: the next segment's route is not plain forwarding in the driver
#define W_IOAM_INVALID 21    // IOAM transit: a trace the worker drops (too short, NodeLen not the trace type's)
#define W_IOAM_FIELD 22      // IOAM transit: this node's data holds a field the driver cannot write (timestamps)
#define W_TABLE 23           // End.DT6: the inner destination has no plain-forwarding route in the table
// 24: `traced`, a route's reason set by the engine
#define W_V4_OPTIONS 25      // IPv4 with options (IHL > 5): the worker decides
#define W_V4_CHECKSUM 26     // IPv4 header checksum wrong: the worker drops it
#define W_REASONS 32         // reasons occupy [1, W_REASONS)
#define C_KIND 32            // forwarded frames per plan kind: C_KIND + kind
#define KIND_TRANSIT 9       // the counter kind of frames forwarded along a plain plan with IOAM transit
#define KIND_DT6 10          // the counter kind of End.DT6
#define KINDS 16
#define C_IOAM_FILLED 48     // IOAM traces filled (or flagged Overflow) in transit
#define COUNTERS 64

// Patch codes: what an op writes at `at` (an offset in the outgoing frame).
#define OP_RX 1         // `len` bytes of the received IPv6 header from `from`
#define OP_FIRST_WORD 2 // the received header's first 32-bit word, ANDed with `mask`
#define OP_PLEN 3       // the outgoing Payload Length (received one + growth), 16 bits
#define OP_HLIM 4       // the received hop limit less one
#define OP_BYTE 5       // the byte `from`
#define OP_ING16 6      // the receiving port's 16-bit IOAM interface id
#define OP_ING32 7      // the receiving port's 32-bit IOAM interface id
#define OP_NEXT_SID 8   // the received SRH's next segment (16 bytes; plans with F_SRH_ADVANCE)
#define OP_SL 9         // the received SRH's Segments Left less one (plans with F_SRH_ADVANCE)

// Plan flags.
#define F_SRH_ADVANCE 1 // an SRH without TLVs follows the IPv6 header and has a segment left: checked first
#define F_DECAP 2       // the plan applies to the inner IPv6 packet (behind the outer header, or behind an SRH
                        // without TLVs and with no segment left), which is pulled out: End.DX6
#define F_RELOOKUP 4    // the way out (template, egress, MTU) is the plan of the next segment's route, which must
                        // have F_PLAIN: End (with F_SRH_ADVANCE)
#define F_PLAIN 8       // plain forwarding
#define F_TABLE 16      // the inner IPv6 packet (as F_DECAP) goes out along the plain plan of its destination's route in
                        // the plan's table (`vrf`): End.DT6
#define F_L2 32         // the template goes in front of the received frame, its Ethernet header kept (skip 0, growth
                        // = tlen): seg6 l2encap, l2encap.red
#define F_V4 64         // a plan of an IPv4 route (`routes4`), for IPv4 packets: its one patch the Payload Length
// Port flags.
#define P_REQUIRE_HMAC 1 // seg6_require_hmac > 0: SRHs are checked by the worker
#define P_IOAM_ENABLED 2 // ioam6_enabled: IOAM traces received here are filled in transit

// IOAM transit (the `ioam` map).
#define IOAM_BITS 24      // trace-type bits, bit k = 1 << (23 - k) of the 24-bit type
#define IOAM_DATA 352     // bytes of precomputed fields an entry holds
#define IOAM_ANY 0xffffffffu // key of the entry used for namespaces this node does not know (checks only)
#define IOAM_OPTS 8       // most IOAM options a Hop-by-Hop header may hold to be filled in the driver
#define IOAM_OPT 0x31     // Hop-by-Hop option type of IOAM
#define IOAM_SCRATCH 272  // the block assembly buffer: 256 bytes and a field copy's overrun

#define NO_PLAN 0xffffffffu

struct lpm_key {
    __u32 prefixlen;
    __u8 addr[16];
};

struct route {
    __u32 plan; // index in `plans`, or NO_PLAN
    __u32 why;  // with NO_PLAN: the reason counted
};

struct port {
    __u8 mac[6];
    __u16 headroom;  // most bytes a plan may add in front of a frame received here
    __u32 max_frame; // longest frame accepted (MTU + Ethernet header + 4)
    __u32 ioam_wide; // the port's IOAM ids (ioam6_id_wide, ioam6_id), written by IOAM plans
    __u16 ioam_id;
    __u16 flags;     // P_*
};

struct op {
    __u8 code;
    __u8 len;
    __u16 at;
    __u16 from;
    __u16 pad;
    __u32 mask;
};

struct plan {
    __u32 egress;  // devmap key (and index of the per-egress counter)
    __u32 max_len; // longest IPv6 packet the plan sends
    __u16 tlen;    // template length
    __u16 skip;    // leading bytes of the received IPv6 packet the template replaces (0 or 40)
    __u16 growth;  // bytes the IPv6 packet grows: tlen - 14 - skip
    __u8 kind;     // counter index (C_KIND + kind)
    __u8 nops;
    __u32 flags;   // F_*
    __u32 table;   // F_TABLE: the table, in wire order (the `vrf` key's first bytes)
    struct op ops[OPS_MAX];
    __u8 tpl[TPL_MAX];
};

// This node's data for one (namespace, egress) pair, field by field: for trace-type bit k, `len[k]` bytes at
// `data + at[k]`, written in bit order; `code[k]` (an OP_* of the per-packet ones: hop limit, ingress ids) patched
// at `pat[k]` in the field. `nl[k]`: the words bit k counts in NodeLen. A fill that would write a bit of `refuse`
// goes to the worker. Computed in Rust (crates/xdp/src/tables.rs); this file knows no trace type.
struct ioam_ns {
    __u32 refuse;
    __u16 known; // 0: the IOAM_ANY entry (the namespace is not this node's: nothing is written)
    __u16 ext;   // the one bit whose field may be longer than 8 bytes (the opaque state)
    __u8 len[IOAM_BITS];
    __u8 nl[IOAM_BITS];
    __u8 code[IOAM_BITS];
    __u8 pat[IOAM_BITS];
    __u16 at[IOAM_BITS];
    __u8 data[IOAM_DATA];
};

_Static_assert(sizeof(struct ioam_ns) == 8 + 6 * IOAM_BITS + IOAM_DATA, "ioam_ns");
_Static_assert(sizeof(struct lpm_key) == 20, "lpm_key");

// Key of the `routes4` LPM trie.
struct lpm_key4 {
    __u32 prefixlen;
    __u8 addr[4];
};
_Static_assert(sizeof(struct lpm_key4) == 8, "lpm_key4");

// Key of the `vrf` LPM trie: 32 bits of table, then the address (prefix length 32 + the route's).
struct vrf_key {
    __u32 prefixlen;
    __u8 table[4];
    __u8 addr[16];
};
_Static_assert(sizeof(struct vrf_key) == 24, "vrf_key");
_Static_assert(sizeof(struct route) == 8, "route");
_Static_assert(sizeof(struct port) == 20, "port");
_Static_assert(sizeof(struct op) == 12, "op");
_Static_assert(sizeof(struct plan) == 24 + 12 * OPS_MAX + TPL_MAX, "plan");

// ---- Maps (sizes are set by the loader) ----

struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(max_entries, 1024);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct lpm_key);
    __type(value, struct route);
} routes SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, struct plan);
} plans SEC(".maps");

// The IPv4 routes of the main table (plans with F_V4), and the router's IPv4 addresses as /32s.
struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(max_entries, 1024);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct lpm_key4);
    __type(value, struct route);
} routes4 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, struct port);
} ports SEC(".maps");

// struct bpf_devmap_val: the egress ifindex, and a program to run there (none).
struct devmap_val {
    __u32 ifindex;
    __u32 prog_fd;
};

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, struct devmap_val);
} egress SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

// Where each receiving interface's queues start in `xsks` (one XSKMAP serves every interface: a socket is bound
// to one interface and queue, and the kernel drops a frame redirected to a socket of another). Without an
// entry, the queue index itself.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsk_base SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, COUNTERS);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u64);
} egress_tx SEC(".maps");

// The routes of the tables End.DT6 plans look up (with the router's addresses as /128s in each).
struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(max_entries, 1024);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct vrf_key);
    __type(value, struct route);
} vrf SEC(".maps");

// IOAM transit: key namespace | egress << 16, or IOAM_ANY. Without the IOAM_ANY entry, transit frames go to the
// worker (IOAM domains, transit export).
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct ioam_ns);
} ioam SEC(".maps");

// IOAM transit: where a node block is assembled (per CPU; 256 bytes and the overrun of an 8-byte field copy).
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u8[IOAM_SCRATCH]);
} scratch SEC(".maps");

// IOAM transit: this node's whole block for one (namespace, egress, trace type, ingress), precomputed by the tier
// (crates/xdp/src/ioam_block.rs) from the `ioam` entry and the port's ids, so that the driver copies it and patches
// the hop limit only. Without an entry the block is assembled field by field (above), and the key is recorded in
// `ioam_miss` for the tier to add.
#define IOAM_BLOCK 256 // bytes of a precomputed block (a trace's free space is at most 61 words)
#define IOAM_MISSES 8  // keys the driver remembers per CPU

struct ioam_bkey {
    __u32 nse;     // namespace | egress << 16 (the `ioam` key)
    __u32 ty;      // the 24-bit trace type
    __u32 ingress; // receiving ifindex
};

struct ioam_blk {
    __u8 words;  // the block's length in 4-octet words (with refuse: what decides the Overflow flag)
    __u8 nl;     // NodeLen of the trace type
    __u8 refuse; // 1: a field the driver cannot write (the fill goes to the worker)
    __u8 nhl;    // hop-limit bytes to patch (0 to 2)
    __u8 hl[2];  // their offsets in the block
    __u8 pad[2];
    __u8 data[IOAM_BLOCK];
};

struct ioam_misses {
    __u32 n; // keys recorded so far on this CPU (slot n % IOAM_MISSES is the next)
    __u32 pad;
    struct ioam_bkey k[IOAM_MISSES];
};

_Static_assert(sizeof(struct ioam_bkey) == 12, "ioam_bkey");
_Static_assert(sizeof(struct ioam_blk) == 8 + IOAM_BLOCK, "ioam_blk");
_Static_assert(sizeof(struct ioam_misses) == 8 + 12 * IOAM_MISSES, "ioam_misses");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct ioam_bkey);
    __type(value, struct ioam_blk);
} ioam_blk SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct ioam_misses);
} ioam_miss SEC(".maps");

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// A per-CPU counter, incremented without an atomic operation (the slot is this CPU's alone).
static __always_inline void count(void *map, __u32 idx) {
    __u64 *c = bpf_map_lookup_elem(map, &idx);
    if (c)
        *c += 1;
}

// The way every frame the tier does not forward leaves: as before the tier, to its queue's AF_XDP socket, or
// on to the kernel when the queue has none. Nothing in the frame has been changed.
static __always_inline int slow(struct xdp_md *ctx, __u32 why) {
    count(&counters, why & (W_REASONS - 1));
    __u32 ifindex = ctx->ingress_ifindex;
    __u32 key = ctx->rx_queue_index;
    __u32 *base = bpf_map_lookup_elem(&xsk_base, &ifindex);
    if (base)
        key += *base;
    return bpf_redirect_map(&xsks, key, XDP_PASS);
}

// fe80::/10, ff00::/8, ::/8: left to the slow path, as lwt6's own fast path does.
static __always_inline int special(__u8 hi, __u8 lo) {
    return hi == 0xff || hi == 0 || (hi == 0xfe && (lo & 0xc0) == 0x80);
}

// IOAM transit on the IPv6 packet of the frame in `ctx`, to forward along a plain plan out of `egress`, with a
// Hop-by-Hop header: laid out as lwt6 and Linux insert traces (PadN(0), IOAM pre-allocated traces each a multiple of 4
// octets, PadN(2) or nothing), at most IOAM_OPTS of them. With `fill` 0: the checks, nothing written; returns 0
// when the driver can forward the packet, else the reason it goes to the worker. With `fill` 1 (the checks passed):
// every trace of a namespace this node knows gets this node's data (hop limit `hl`), or its Overflow flag when
// there is no room, as Linux's transit does; returns how many traces of known namespaces it met (filled, flagged
// or already flagged: the worker's `ioam_transit_filled`), or -1 (cannot happen after the checks).
//
// A function of its own (BPF-to-BPF call) that reads the frame from `ctx` and is given the rest as two scalars
// (`how`: egress | hl << 16 | fill << 24; `ids`: the receiving port's P_IOAM_ENABLED flag | ioam6_id << 16 |
// ioam6_id_wide << 32), so that it is called with few arguments from the transit path only and looks up no port;
// no branch on the trace type in the loops over its bits, so that the verifier keeps one state per bit.
__attribute__((noinline)) int lwt6_transit(struct xdp_md *ctx, __u32 how, __u64 ids) {
    __u32 egress = how & 0xffff, hl = (how >> 16) & 0xff, fill = (how >> 24) & 1;
    __u8 *p = (__u8 *)(long)ctx->data;
    __u8 *end = (__u8 *)(long)ctx->data_end;
    __u8 *ip = p + 14;
    if (ip + 44 > end)
        return fill ? -1 : W_SHORT;
    __u32 ifindex = ctx->ingress_ifindex;
    __u32 len = 40 + (((__u32)ip[4] << 8) | ip[5]);
    __u32 hlen = ((__u32)ip[41] + 1) * 8;
    __u8 *h = ip + 40;
    if (40 + hlen > len || h[2] != 1 || h[3] != 0)
        return fill ? -1 : W_HOP_BY_HOP;
    // The entry of the namespaces this node does not know: without it, transit is the worker's (checked by the
    // first pass; the second looks it up only for a trace without a precomputed block).
    __u32 any = IOAM_ANY;
    struct ioam_ns *gen = 0;
    if (!fill) {
        gen = bpf_map_lookup_elem(&ioam, &any);
        if (!gen)
            return W_HOP_BY_HOP;
    }
    int enabled = ids & P_IOAM_ENABLED;
    __u32 ing16 = (ids >> 16) & 0xffff, ing32 = ids >> 32;
    int filled = 0;
    __u32 at = 4;
    for (__u32 i = 0; i <= IOAM_OPTS; i++) {
        if (at >= hlen)
            break;
        opaque(at);
        if (at > 2048)
            return fill ? -1 : W_HOP_BY_HOP;
        __u8 *o = h + at;
        if (o + 4 > end)
            return fill ? -1 : W_SHORT;
        if (hlen - at == 4 && o[0] == 1 && o[1] == 2 && o[2] == 0 && o[3] == 0)
            break;
        if (i == IOAM_OPTS || hlen - at < 12 || o[0] != IOAM_OPT || o[3] != 0)
            return fill ? -1 : W_HOP_BY_HOP;
        if (o + 12 > end)
            return fill ? -1 : W_SHORT;
        __u32 olen = o[1], next = at + 2 + olen;
        if (next > hlen || (next & 3))
            return fill ? -1 : W_HOP_BY_HOP;
        at = next;
        if (!enabled)
            continue;
        // Linux's checks, in its order: the option long enough for the trace header and the free space it
        // announces, NodeLen that of the trace type; then the namespace (unknown: ignored), the Overflow flag.
        __u32 rem = o[7] & 0x7f;
        if (olen < 10 + 4 * rem)
            return fill ? -1 : W_IOAM_INVALID;
        __u32 ty = (__u32)o[8] << 16 | (__u32)o[9] << 8 | o[10];
        __u32 key = ((__u32)o[4] << 8 | o[5]) | egress << 16;
        // This node's block precomputed whole (a namespace of this node): the same checks, then a copy.
        struct ioam_bkey bk = {.nse = key, .ty = ty, .ingress = ifindex};
        struct ioam_blk *pb = bpf_map_lookup_elem(&ioam_blk, &bk);
        if (pb) {
            if (pb->nl != (__u32)(o[6] >> 3))
                return fill ? -1 : W_IOAM_INVALID;
            filled++;
            if (o[6] & 4)
                continue;
            __u32 bw = pb->words;
            if (rem == 0 || rem < bw) {
                if (fill)
                    o[6] |= 4;
                continue;
            }
            if (pb->refuse)
                return fill ? -1 : W_IOAM_FIELD;
            if (!fill)
                continue;
            __u32 base = 12 + 4 * (rem - bw);
            for (__u32 w = 0; w < IOAM_BLOCK / 4; w++) {
                if (w >= bw)
                    break;
                __u32 to = (base + 4 * w) & 0xff;
                __u8 *d = o + to;
                if (d + 4 > end)
                    return -1;
                *(__u32 *)d = *(__u32 *)(pb->data + 4 * w);
            }
            for (__u32 j = 0; j < 2; j++) {
                if (j >= pb->nhl)
                    break;
                __u32 to = (base + pb->hl[j]) & 0xff;
                __u8 *d = o + to;
                if (d + 1 > end)
                    return -1;
                d[0] = hl;
            }
            o[7] = (o[7] & 0x80) | ((rem - bw) & 0x7f);
            continue;
        }
        if (!gen) {
            gen = bpf_map_lookup_elem(&ioam, &any);
            if (!gen)
                return fill ? -1 : W_HOP_BY_HOP;
        }
        struct ioam_ns *ns = bpf_map_lookup_elem(&ioam, &key);
        if (!ns || !ns->known)
            ns = gen;
        __u32 nl = 0, words = 0;
        for (__u32 k = 0; k < IOAM_BITS; k++) {
            __u32 b = (ty >> (IOAM_BITS - 1 - k)) & 1;
            nl += b * gen->nl[k];
            words += b * ns->len[k];
        }
        words /= 4;
        if (nl != (__u32)(o[6] >> 3))
            return fill ? -1 : W_IOAM_INVALID;
        if (!ns->known)
            continue;
        if (!fill) {
            // A namespace of this node without its block: the tier adds it (read from `ioam_miss`).
            __u32 zero = 0;
            struct ioam_misses *m = bpf_map_lookup_elem(&ioam_miss, &zero);
            if (m) {
                m->k[m->n & (IOAM_MISSES - 1)] = bk;
                m->n++;
            }
        }
        filled++;
        if (o[6] & 4)
            continue;
        if (rem == 0 || rem < words) {
            if (fill)
                o[6] |= 4;
            continue;
        }
        if (ty & ns->refuse)
            return fill ? -1 : W_IOAM_FIELD;
        if (!fill)
            continue;
        // This node's block, assembled in a per-CPU scratch buffer field by field (in bit order, without a branch
        // on the trace type), then copied to the end of the free space.
        __u32 zero = 0;
        __u8 *sb = bpf_map_lookup_elem(&scratch, &zero);
        if (!sb)
            return -1;
        __u32 pos = 0, xpos = 0, x = ns->ext & (IOAM_BITS - 1);
        for (__u32 k = 0; k < IOAM_BITS; k++) {
            __u32 b = (ty >> (IOAM_BITS - 1 - k)) & 1;
            __u32 n = ns->len[k] * b, from = ns->at[k];
            if (from > IOAM_DATA - 8)
                from = IOAM_DATA - 8;
            // The long field starts after the fields of the bits before it (no branch on k: the verifier keeps
            // one state per iteration).
            __u32 before = k - x;
            opaque(before);
            xpos = (xpos + n * (before >> 31)) & 0xff;
            *(__u64 *)(sb + pos) = *(__u64 *)(ns->data + from);
            __u8 *q = sb + pos + (ns->pat[k] & 7);
            __u32 code = ns->code[k] * b;
            if (code == OP_HLIM) {
                q[0] = hl;
            } else if (code == OP_ING16) {
                q[0] = ing16 >> 8;
                q[1] = ing16;
            } else if (code == OP_ING32) {
                q[0] = ing32 >> 24;
                q[1] = ing32 >> 16;
                q[2] = ing32 >> 8;
                q[3] = ing32;
            }
            pos = (pos + n) & 0xff;
        }
        // The one field longer than 8 bytes (the opaque state with its schema): the rest of it.
        {
            __u32 n = ns->len[x] * ((ty >> (IOAM_BITS - 1 - x)) & 1), from = ns->at[x];
            for (__u32 w = 2; w < 64; w++) {
                if (4 * w >= n)
                    break;
                __u32 f = from + 4 * w;
                opaque(f);
                if (f > IOAM_DATA - 4)
                    break;
                __u32 t = (xpos + 4 * w) & 0xff;
                *(__u32 *)(sb + t) = *(__u32 *)(ns->data + f);
            }
        }
        __u32 blk = 12 + 4 * (rem - words);
        for (__u32 w = 0; w < 64; w++) {
            if (w >= words)
                break;
            __u32 to = (blk + 4 * w) & 0xff;
            __u8 *d = o + to;
            if (d + 4 > end)
                return -1;
            __u8 *src = sb + 4 * w;
            d[0] = src[0];
            d[1] = src[1];
            d[2] = src[2];
            d[3] = src[3];
        }
        o[7] = (o[7] & 0x80) | ((rem - words) & 0x7f);
    }
    return fill ? filled : 0;
}

// A packet with a Hop-by-Hop header (`len` bytes in a frame of `flen`, hop limit `hlim` > 1) whose route's plan
// is `pl`: forwarded in the driver when the plan is plain forwarding (its template the Ethernet header, its one
// patch the hop limit) and the header holds IOAM traces the driver can fill (`lwt6_transit`); to the worker
// otherwise, unchanged. A path of its own, so that the verifier walks it apart from the other plans'.
static __always_inline int transit_forward(struct xdp_md *ctx, struct plan *pl, struct port *port,
                                           __u32 flen, __u32 len, __u8 hlim) {
    if (!(pl->flags & F_PLAIN) || pl->tlen != 14 || pl->skip || pl->growth || pl->nops != 1 ||
        pl->ops[0].code != OP_HLIM || pl->ops[0].at != 14 + 7)
        return slow(ctx, W_HOP_BY_HOP);
    __u32 out = pl->egress;
    if (out > 0xffff)
        return slow(ctx, W_BAD_PLAN);
    __u32 how = out | (__u32)(__u8)(hlim - 1) << 16;
    __u64 ids = (__u64)(port->flags & P_IOAM_ENABLED) | (__u64)port->ioam_id << 16 | (__u64)port->ioam_wide << 32;
    int w = lwt6_transit(ctx, how, ids);
    if (w)
        return slow(ctx, w);
    if (len > pl->max_len)
        return slow(ctx, W_MTU);
    if (!bpf_map_lookup_elem(&egress, &out))
        return slow(ctx, W_NO_EGRESS);
    __u32 trailer = flen - 14 - len;
    if (trailer && bpf_xdp_adjust_tail(ctx, -(int)trailer))
        return slow(ctx, W_SHORT);
    __u8 *p = (__u8 *)(long)ctx->data;
    __u8 *end = (__u8 *)(long)ctx->data_end;
    if (p + 14 + 8 > end)
        return XDP_ABORTED;
    for (int i = 0; i < 14; i++)
        p[i] = pl->tpl[i];
    p[14 + 7] = hlim - 1;
    int n = lwt6_transit(ctx, how | 1 << 24, ids);
    if (n < 0)
        return XDP_ABORTED;
    __u32 idx = C_IOAM_FILLED;
    __u64 *c = bpf_map_lookup_elem(&counters, &idx);
    if (c)
        *c += n;
    count(&counters, W_FORWARDED);
    count(&counters, C_KIND + KIND_TRANSIT);
    count(&egress_tx, out & 63);
    return bpf_redirect_map(&egress, out, 0);
}

// End.DT6 (plan `pl`) on the IPv6 packet `ip` (`len` bytes in a frame of `flen`): End.DX6's decapsulation (behind
// the outer header, or behind an SRH without TLVs with no segment left), then the inner destination looked up in
// the plan's table; out along that route's plan, which must be plain forwarding (its template the Ethernet
// header, its one patch the hop limit). Everything else goes to the worker unchanged. A path of its own.
static __always_inline int table_forward(struct xdp_md *ctx, struct plan *pl, struct port *port, __u8 *ip,
                                         __u8 *end, __u32 flen, __u32 len) {
    if ((port->flags & P_REQUIRE_HMAC) || len < 48)
        return slow(ctx, W_DECAP);
    __u32 pull;
    if (ip[6] == 41) {
        pull = 40;
    } else if (ip[6] == 43) {
        if (ip + 48 > end)
            return slow(ctx, W_SHORT);
        __u32 srh_len = ((__u32)ip[41] + 1) * 8, le = ip[44];
        if (ip[40] != 41 || ip[42] != 4 || srh_len != 8 + 16 * (le + 1) || ip[43] != 0)
            return slow(ctx, W_DECAP);
        pull = 40 + srh_len;
    } else {
        return slow(ctx, W_DECAP);
    }
    opaque(pull);
    if (pull > 40 + 8 + 16 * 256 || pull + 40 > len)
        return slow(ctx, W_DECAP);
    __u8 *in = ip + pull;
    if (in + 40 > end)
        return slow(ctx, W_SHORT);
    __u32 ilen = 40 + (((__u32)in[4] << 8) | in[5]);
    if ((in[0] >> 4) != 6 || pull + ilen > len)
        return slow(ctx, W_DECAP);
    __u8 ihl = in[7];
    if (ihl <= 1)
        return slow(ctx, W_HOP_LIMIT);
    if (special(in[8], in[9]) || special(in[24], in[25]))
        return slow(ctx, W_TABLE);
    struct vrf_key key = {.prefixlen = 32 + 128};
    __u32 t = pl->table;
    __builtin_memcpy(key.table, &t, 4);
    for (int i = 0; i < 16; i++)
        key.addr[i] = in[24 + i];
    struct route *r = bpf_map_lookup_elem(&vrf, &key);
    if (!r)
        return slow(ctx, W_TABLE);
    __u32 id = r->plan;
    if (id == NO_PLAN)
        return slow(ctx, r->why);
    struct plan *way = bpf_map_lookup_elem(&plans, &id);
    if (!way || !(way->flags & F_PLAIN) || way->tlen != 14 || way->skip || way->growth || way->nops != 1 ||
        way->ops[0].code != OP_HLIM || way->ops[0].at != 14 + 7)
        return slow(ctx, W_TABLE);
    if (ilen > way->max_len)
        return slow(ctx, W_MTU);
    __u32 out = way->egress;
    if (!bpf_map_lookup_elem(&egress, &out))
        return slow(ctx, W_NO_EGRESS);
    if (bpf_xdp_adjust_head(ctx, (int)pull))
        return slow(ctx, W_HEADROOM);
    __u32 trailer = flen - 14 - pull - ilen;
    if (trailer && bpf_xdp_adjust_tail(ctx, -(int)trailer)) {
        bpf_xdp_adjust_head(ctx, -(int)pull);
        return slow(ctx, W_SHORT);
    }
    __u8 *p = (__u8 *)(long)ctx->data;
    end = (__u8 *)(long)ctx->data_end;
    if (p + 14 + 8 > end)
        return XDP_ABORTED;
    for (int i = 0; i < 14; i++)
        p[i] = way->tpl[i];
    p[14 + 7] = ihl - 1;
    count(&counters, W_FORWARDED);
    count(&counters, C_KIND + KIND_DT6);
    count(&egress_tx, out & 63);
    return bpf_redirect_map(&egress, out, 0);
}

// The plan of route `r` (what an LPM lookup found), or none (0) with `*why` saying why the frame goes to the worker:
// no route, a route the driver has no plan for (its own reason), or a plan missing from the map.
static __always_inline struct plan *plan_of(struct route *r, __u32 *why) {
    if (!r) {
        *why = W_NO_ROUTE;
        return 0;
    }
    __u32 id = r->plan;
    if (id == NO_PLAN) {
        *why = r->why;
        return 0;
    }
    struct plan *pl = bpf_map_lookup_elem(&plans, &id);
    if (!pl)
        *why = W_NO_PLAN;
    return pl;
}

// Copies the first `tlen` bytes (8 to TPL_MAX) of template `tpl` to the frame at `p`, in 8-byte words, the last
// one ending exactly at tlen (overlapping the one before it). -1 when the frame is shorter (not after the checks).
static __always_inline int copy_template(__u8 *p, __u8 *end, __u8 *tpl, __u32 tlen) {
    for (__u32 i = 0; i < TPL_MAX / 8; i++) {
        __u32 off = 8 * i;
        if (off + 8 > tlen)
            break;
        if (p + off + 8 > end)
            return -1;
        *(__u64 *)(p + off) = *(__u64 *)(tpl + off);
    }
    __u32 off = tlen - 8;
    opaque(off);
    if (off > TPL_MAX - 8)
        return -1;
    if (p + off + 8 > end)
        return -1;
    *(__u64 *)(p + off) = *(__u64 *)(tpl + off);
    return 0;
}

// 0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4 and above (multicast, reserved, broadcast): left to the worker.
static __always_inline int special4(__u8 hi) {
    return hi == 0 || hi == 127 || hi >= 224;
}

// An IPv4 packet (frame `p` of `flen` bytes, received on `port`): looked up in `routes4`, and sent out along its
// route's plan, which has F_V4 (seg6 encap, encap.red, l2encap, l2encap.red of IPv4 packets: the template is the
// Ethernet header, the outer IPv6 header with its hop limit already set, the SRH; the one patch the outer Payload
// Length). The inner packet is not changed: Linux encapsulates it before IPv4 forwarding would look at its TTL
// (seg6's input tunnel), and so does the worker. A header with options, a wrong checksum, a special address go to
// the worker unchanged. A path of its own.
static __always_inline int ipv4_forward(struct xdp_md *ctx, struct port *port, __u8 *p, __u8 *end,
                                        __u32 flen) {
    __u8 *ip = p + 14;
    if (ip + 20 > end)
        return slow(ctx, W_SHORT);
    if ((ip[0] >> 4) != 4 || (ip[0] & 15) < 5)
        return slow(ctx, W_SHORT);
    if ((ip[0] & 15) != 5)
        return slow(ctx, W_V4_OPTIONS);
    __u32 sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += ((__u32)ip[i] << 8) | ip[i + 1];
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    if (sum != 0xffff)
        return slow(ctx, W_V4_CHECKSUM);
    __u32 len = ((__u32)ip[2] << 8) | ip[3];
    if (len < 20 || 14 + len > flen)
        return slow(ctx, W_SHORT);
    if (special4(ip[12]) || special4(ip[16]))
        return slow(ctx, W_ADDR);
    struct lpm_key4 key = {.prefixlen = 32};
    for (int i = 0; i < 4; i++)
        key.addr[i] = ip[16 + i];
    __u32 why;
    struct plan *pl = plan_of(bpf_map_lookup_elem(&routes4, &key), &why);
    if (!pl)
        return slow(ctx, why);
    __u32 tlen = pl->tlen, growth = pl->growth;
    __u32 l2 = pl->flags & F_L2;
    if (!(pl->flags & F_V4) || (pl->flags & ~(F_V4 | F_L2)) || pl->skip || tlen < 14 || tlen > TPL_MAX ||
        tlen != (l2 ? growth : 14 + growth) || pl->nops != 1 || pl->ops[0].code != OP_PLEN)
        return slow(ctx, W_BAD_PLAN);
    if (len + growth > pl->max_len)
        return slow(ctx, W_MTU);
    if (growth > port->headroom)
        return slow(ctx, W_HEADROOM);
    __u32 out = pl->egress;
    if (!bpf_map_lookup_elem(&egress, &out))
        return slow(ctx, W_NO_EGRESS);
    if (bpf_xdp_adjust_head(ctx, -(int)growth))
        return slow(ctx, W_HEADROOM);
    __u32 trailer = flen - 14 - len;
    if (trailer && bpf_xdp_adjust_tail(ctx, -(int)trailer)) {
        bpf_xdp_adjust_head(ctx, (int)growth);
        return slow(ctx, W_SHORT);
    }
    p = (__u8 *)(long)ctx->data;
    end = (__u8 *)(long)ctx->data_end;
    if (copy_template(p, end, pl->tpl, tlen))
        return XDP_ABORTED;
    __u32 plen = len + growth - 40;
    __u8 *d = p + (pl->ops[0].at & 511);
    if (d + 2 > end)
        return XDP_ABORTED;
    d[0] = plen >> 8;
    d[1] = plen;
    count(&counters, W_FORWARDED);
    count(&counters, C_KIND + (pl->kind & (KINDS - 1)));
    count(&egress_tx, out & 63);
    return bpf_redirect_map(&egress, out, 0);
}

SEC("xdp")
int lwt6_plan(struct xdp_md *ctx) {
    __u8 *p = (__u8 *)(long)ctx->data;
    __u8 *end = (__u8 *)(long)ctx->data_end;

    if (p + 14 > end)
        return slow(ctx, W_SHORT);
    int v4 = p[12] == 0x08 && p[13] == 0x00;
    if (!v4 && (p[12] != 0x86 || p[13] != 0xdd))
        return slow(ctx, W_NOT_IPV6);
    if (!v4 && p + 14 + RX_SAVE > end)
        return slow(ctx, W_SHORT);

    __u32 ifindex = ctx->ingress_ifindex;
    struct port *port = bpf_map_lookup_elem(&ports, &ifindex);
    if (!port)
        return slow(ctx, W_NO_PORT);
    if (p[0] != port->mac[0] || p[1] != port->mac[1] || p[2] != port->mac[2] || p[3] != port->mac[3] ||
        p[4] != port->mac[4] || p[5] != port->mac[5])
        return slow(ctx, W_NOT_FOR_US);
    __u32 flen = (__u32)(end - p);
    if (flen > port->max_frame)
        return slow(ctx, W_FRAME_LEN);
    if (v4)
        return ipv4_forward(ctx, port, p, end, flen);

    __u8 *ip = p + 14;
    if ((ip[0] >> 4) != 6)
        return slow(ctx, W_SHORT);
    __u32 len = 40 + (((__u32)ip[4] << 8) | ip[5]);
    if (14 + len > flen)
        return slow(ctx, W_SHORT);
    __u8 hlim = ip[7];
    if (hlim <= 1)
        return slow(ctx, W_HOP_LIMIT);
    if (special(ip[8], ip[9]) || special(ip[24], ip[25]))
        return slow(ctx, W_ADDR);
    struct lpm_key key = {.prefixlen = 128};
    for (int i = 0; i < 16; i++)
        key.addr[i] = ip[24 + i];
    __u32 why;
    struct plan *pl = plan_of(bpf_map_lookup_elem(&routes, &key), &why);
    if (!pl)
        return slow(ctx, why);

    if (ip[6] == 0)
        return transit_forward(ctx, pl, port, flen, len, hlim);
    if (pl->flags & F_TABLE)
        return table_forward(ctx, pl, port, ip, end, flen, len);

    // An SRH to advance (End.X): right after the IPv6 header, without TLVs, a segment left; its next segment
    // saved for OP_NEXT_SID.
    __u64 next[2] = {0, 0};
    __u32 sl = 0;
    if (pl->flags & F_SRH_ADVANCE) {
        if ((port->flags & P_REQUIRE_HMAC) || ip[6] != 43 || len < 48)
            return slow(ctx, W_SRH);
        if (ip + 48 > end)
            return slow(ctx, W_SHORT);
        __u32 srh_len = ((__u32)ip[41] + 1) * 8, le = ip[44];
        sl = ip[43];
        if (ip[42] != 4 || srh_len != 8 + 16 * (le + 1) || 40 + srh_len > len || sl == 0 || sl > le + 1)
            return slow(ctx, W_SRH);
        __u32 at = 48 + 16 * (sl - 1);
        opaque(at);
        if (at > 48 + 16 * 254)
            return slow(ctx, W_SRH);
        __u8 *seg = ip + at;
        if (seg + 16 > end)
            return slow(ctx, W_SHORT);
        next[0] = *(__u64 *)seg;
        next[1] = *(__u64 *)(seg + 8);
    }
    // The way out: the plan's own, or (End) the plan of the next segment's route, which must be plain forwarding.
    struct plan *way = pl;
    if (pl->flags & F_RELOOKUP) {
        __u8 *nb = (__u8 *)next;
        if (!(pl->flags & F_SRH_ADVANCE) || special(nb[0], nb[1]))
            return slow(ctx, W_NEXT);
        struct lpm_key key2 = {.prefixlen = 128};
        for (int i = 0; i < 16; i++)
            key2.addr[i] = nb[i];
        struct route *r2 = bpf_map_lookup_elem(&routes, &key2);
        if (!r2 || r2->plan == NO_PLAN)
            return slow(ctx, W_NEXT);
        __u32 id2 = r2->plan;
        way = bpf_map_lookup_elem(&plans, &id2);
        if (!way || !(way->flags & F_PLAIN))
            return slow(ctx, W_NEXT);
    }
    __u32 tlen = way->tlen, skip = way->skip, growth = way->growth;
    // F_L2: the template goes in front of the received frame (growth = tlen); else it replaces the Ethernet
    // header and the first `skip` bytes of the IPv6 packet.
    __u32 covers = (way->flags & F_L2) ? 0 : 14 + skip;
    if (tlen < 14 || tlen > TPL_MAX || skip > RX_SAVE || tlen != covers + growth || (way->flags & F_V4) ||
        ((way->flags & F_L2) && (skip || (pl->flags & (F_DECAP | F_RELOOKUP)))))
        return slow(ctx, W_BAD_PLAN);
    // A packet to decapsulate (End.DX6): from here on `ip`, `len` and `hlim` are the inner packet's, and `pull`
    // bytes of outer headers go.
    __u32 pull = 0;
    if (pl->flags & F_DECAP) {
        if ((port->flags & P_REQUIRE_HMAC) || len < 48 || growth || skip)
            return slow(ctx, W_DECAP);
        if (ip[6] == 41) {
            pull = 40;
        } else if (ip[6] == 43) {
            if (ip + 48 > end)
                return slow(ctx, W_SHORT);
            __u32 srh_len = ((__u32)ip[41] + 1) * 8, le = ip[44];
            if (ip[40] != 41 || ip[42] != 4 || srh_len != 8 + 16 * (le + 1) || ip[43] != 0)
                return slow(ctx, W_DECAP);
            pull = 40 + srh_len;
        } else {
            return slow(ctx, W_DECAP);
        }
        opaque(pull);
        if (pull > 40 + 8 + 16 * 256 || pull + 40 > len)
            return slow(ctx, W_DECAP);
        __u8 *in = ip + pull;
        if (in + 40 > end)
            return slow(ctx, W_SHORT);
        __u32 ilen = 40 + (((__u32)in[4] << 8) | in[5]);
        if ((in[0] >> 4) != 6 || pull + ilen > len)
            return slow(ctx, W_DECAP);
        if (in[7] <= 1)
            return slow(ctx, W_HOP_LIMIT);
        ip = in;
        len = ilen;
        hlim = in[7];
    }
    if (len + growth > way->max_len)
        return slow(ctx, W_MTU);
    if (growth > port->headroom)
        return slow(ctx, W_HEADROOM);
    __u32 out = way->egress;
    if (!bpf_map_lookup_elem(&egress, &out))
        return slow(ctx, W_NO_EGRESS);

    // The received header, saved before the template overwrites it; read at variable offsets by the patches
    // (64 bytes, all written, so that a masked index stays inside).
    __u64 rx[8] = {0};
    if (ip + RX_SAVE > end)
        return slow(ctx, W_SHORT);
    for (int i = 0; i < RX_SAVE / 8; i++)
        rx[i] = *(__u64 *)(ip + 8 * i);
    __u8 *rxb = (__u8 *)rx;

    // From here on the frame changes: every check that can send it to the slow path is above, but for the
    // headroom, which only the helper knows (it fails without touching the frame).
    int delta = (int)growth - (int)pull;
    if (delta && bpf_xdp_adjust_head(ctx, -delta))
        return slow(ctx, W_HEADROOM);
    __u32 trailer = flen - 14 - pull - len;
    if (trailer && bpf_xdp_adjust_tail(ctx, -(int)trailer)) {
        if (delta)
            bpf_xdp_adjust_head(ctx, delta);
        return slow(ctx, W_SHORT);
    }
    p = (__u8 *)(long)ctx->data;
    end = (__u8 *)(long)ctx->data_end;

    if (copy_template(p, end, way->tpl, tlen))
        return XDP_ABORTED;

    __u32 plen = len + growth - 40;
    __u32 ing16 = port->ioam_id, ing32 = port->ioam_wide;
    __u32 nops = pl->nops;
    for (__u32 i = 0; i < OPS_MAX; i++) {
        if (i >= nops)
            break;
        struct op *o = &pl->ops[i];
        __u32 at = o->at & 511;
        __u8 *d = p + at;
        switch (o->code) {
        case OP_RX: {
            __u32 n = o->len, from = o->from;
            if (n > RX_SAVE || from > RX_SAVE)
                return XDP_ABORTED;
            for (__u32 j = 0; j < RX_SAVE; j++) {
                if (j >= n)
                    break;
                if (d + j + 1 > end)
                    return XDP_ABORTED;
                d[j] = rxb[(from + j) & 63];
            }
            break;
        }
        case OP_FIRST_WORD: {
            if (d + 4 > end)
                return XDP_ABORTED;
            __u32 w = ((__u32)rxb[0] << 24 | (__u32)rxb[1] << 16 | (__u32)rxb[2] << 8 | rxb[3]) & o->mask;
            d[0] = w >> 24;
            d[1] = w >> 16;
            d[2] = w >> 8;
            d[3] = w;
            break;
        }
        case OP_PLEN:
            if (d + 2 > end)
                return XDP_ABORTED;
            d[0] = plen >> 8;
            d[1] = plen;
            break;
        case OP_HLIM:
            if (d + 1 > end)
                return XDP_ABORTED;
            d[0] = hlim - 1;
            break;
        case OP_BYTE:
            if (d + 1 > end)
                return XDP_ABORTED;
            d[0] = o->from;
            break;
        case OP_ING16:
            if (d + 2 > end)
                return XDP_ABORTED;
            d[0] = ing16 >> 8;
            d[1] = ing16;
            break;
        case OP_NEXT_SID:
            if (d + 16 > end)
                return XDP_ABORTED;
            *(__u64 *)d = next[0];
            *(__u64 *)(d + 8) = next[1];
            break;
        case OP_SL:
            if (d + 1 > end)
                return XDP_ABORTED;
            d[0] = sl - 1;
            break;
        case OP_ING32:
            if (d + 4 > end)
                return XDP_ABORTED;
            d[0] = ing32 >> 24;
            d[1] = ing32 >> 16;
            d[2] = ing32 >> 8;
            d[3] = ing32;
            break;
        default:
            return XDP_ABORTED;
        }
    }

    count(&counters, W_FORWARDED);
    count(&counters, C_KIND + (pl->kind & (KINDS - 1)));
    count(&egress_tx, out & 63);
    return bpf_redirect_map(&egress, out, 0);
}
