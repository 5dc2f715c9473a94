//! The routing table: IPv6 and IPv4 longest-prefix match over immutable snapshots.
//!
//! The control plane builds a [`Fib`] as part of a [`Snapshot`](crate::snapshot::Snapshot) and publishes it. The
//! data path takes one snapshot per batch and borrows it for every packet of the batch: no reference count is
//! touched per packet (the "noref" idea of the 2026 kernel patch set, done by construction).

pub mod lpm;
mod slots;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use lpm::StrideTrie;
use prefix_trie::PrefixMap;
pub use slots::RouteSlots;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Index of an interface in the router's link table.
pub type DevId = usize;
/// Index of a tunnel in the router's tunnel table.
pub type TunnelId = usize;

/// An optional index (a route's device or tunnel) held in 32 bits, `u32::MAX` standing for none: a route entry is
/// held once per route, and an `Option<usize>` takes 16 bytes where this takes 4 (issue 24 item 3).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OptId(u32);

impl OptId {
    /// No index.
    pub const NONE: OptId = OptId(u32::MAX);

    /// `id` as stored. Panics if `id` is `u32::MAX` or more (device and tunnel tables are far smaller: a tunnel
    /// is at most one per route, and a table has fewer than 2^32 routes).
    pub fn new(id: Option<usize>) -> OptId {
        match id {
            Some(i) => OptId(
                u32::try_from(i)
                    .ok()
                    .filter(|&v| v != u32::MAX)
                    .expect("an index under 2^32 - 1"),
            ),
            None => OptId::NONE,
        }
    }

    /// The index, if any.
    pub fn get(self) -> Option<usize> {
        (self.0 != u32::MAX).then_some(self.0 as usize)
    }
}

impl From<Option<usize>> for OptId {
    fn from(id: Option<usize>) -> OptId {
        OptId::new(id)
    }
}

impl std::fmt::Debug for OptId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// A configuration line number as a route entry stores it (lines past `u32::MAX` are stored as `u32::MAX`).
pub fn line32(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// Where a route came from (as `ip route` shows in `proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Configured with `route add`.
    Static,
    /// Derived from `addr add` (connected prefix, `proto kernel`).
    Connected,
    /// A route that drops what it matches (a kernel `blackhole`, `unreachable` or `prohibit` route, or a kernel
    /// multipath route lwt6 does not forward over): no device, no gateway, no plan.
    Reject(RejectKind),
}

pub use crate::spec::RejectKind;

/// One route.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteEntry {
    /// Destination prefix.
    pub prefix: IpNet,
    /// Gateway.
    pub via: Option<IpAddr>,
    /// Output interface ([`DevId`], in 32 bits: see [`OptId`]).
    pub dev: OptId,
    /// Metric: the lowest wins among routes for the same prefix.
    pub metric: u32,
    /// Route MTU (`mtu [lock] N`); the interface MTU applies otherwise.
    pub mtu: Option<crate::spec::RouteMtu>,
    /// Attached tunnel ([`TunnelId`], in 32 bits: see [`OptId`]).
    pub tunnel: OptId,
    /// Origin.
    pub origin: Origin,
    /// Configuration line (0 for derived routes; see [`line32`]).
    pub line: u32,
    /// Index of this route's precomputed forwarding [`Plan`](crate::plan::Plan) in the snapshot, when it has one.
    pub plan: Option<u32>,
}

/// Index of a route in a [`Fib`].
pub type RouteId = u32;

/// What the lookup index holds for a prefix: its best route and that route's forwarding plan, so that the fast
/// path reaches the plan without reading the route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Best {
    /// The route.
    pub route: RouteId,
    /// Its plan, `u32::MAX` for none.
    pub(crate) plan: u32,
}

impl Best {
    /// An entry from its two fields as stored (`plan` `u32::MAX`: none).
    pub const fn raw(route: RouteId, plan: u32) -> Best {
        Best { route, plan }
    }

    fn of(route: RouteId, plan: Option<u32>) -> Best {
        Best {
            route,
            plan: plan.unwrap_or(u32::MAX),
        }
    }

    /// The index of the route's forwarding plan, or `u32::MAX` (an index no plan has) when it has none: one
    /// bounds-checked read tells both.
    #[inline(always)]
    pub fn plan_or_max(&self) -> u32 {
        self.plan
    }
}

/// The routes of one prefix, lowest metric first: one inline, more in a boxed vector (rare: the same prefix with
/// several metrics). Boxed, the set is 16 bytes rather than 24: every prefix of the table has one, in each of
/// the writer's two snapshots.
#[derive(Debug, Clone)]
enum RouteSet {
    One(RouteId),
    #[allow(clippy::box_collection)]
    Many(Box<Vec<RouteId>>),
}

impl RouteSet {
    fn ids(&self) -> &[RouteId] {
        match self {
            RouteSet::One(id) => std::slice::from_ref(id),
            RouteSet::Many(v) => v,
        }
    }

    /// Adds `id`, in metric order among the routes of `routes` already here; returns the best route.
    fn add(&mut self, routes: &RouteSlots, id: RouteId) -> RouteId {
        let metric = routes[id as usize].metric;
        let mut v = self.ids().to_vec();
        let pos = v.partition_point(|x| routes[*x as usize].metric <= metric);
        v.insert(pos, id);
        let best = v[0];
        *self = RouteSet::Many(Box::new(v));
        best
    }

    /// Takes out the route of `metric`: its id and the set's new best route (None: the set is left empty, for
    /// the caller to remove).
    fn take(&mut self, routes: &RouteSlots, metric: u32) -> Option<(RouteId, Option<RouteId>)> {
        let ids = self.ids();
        let pos = ids
            .iter()
            .position(|x| routes[*x as usize].metric == metric)?;
        let id = ids[pos];
        let mut rest = ids.to_vec();
        rest.remove(pos);
        match rest.len() {
            0 => Some((id, None)),
            1 => {
                *self = RouteSet::One(rest[0]);
                Some((id, Some(rest[0])))
            }
            _ => {
                let best = rest[0];
                *self = RouteSet::Many(Box::new(rest));
                Some((id, Some(best)))
            }
        }
    }
}

/// An immutable-once-published routing table: every route once, in a vector, indexed by prefix (with metric
/// order) and by a longest-prefix-match index of each prefix's best route.
#[derive(Debug, Clone, Default)]
pub struct Fib {
    /// Route slots, indexed by [`RouteId`], in chunks shared with the other snapshot of the writer
    /// ([`Fib::share_routes_from`]).
    routes: RouteSlots,
    /// IPv6 routes by prefix, but for host routes (/128), which are in `hosts6`.
    v6: PrefixMap<Ipv6Net, RouteSet>,
    /// IPv6 host routes (/128) by address, kept out of the prefix map: there a random /128 takes a node for
    /// every five bits below the path it shares with others (about 300 bytes in each of the writer's two
    /// snapshots), here a B-tree entry (about 50). A /128 covers no other prefix, so the longest-prefix questions
    /// `v6` answers (a removed prefix's cover, always shorter than /128) need not look here.
    hosts6: std::collections::BTreeMap<u128, RouteSet>,
    v4: PrefixMap<Ipv4Net, RouteSet>,
    /// Lookup index of `v6` and `hosts6`: the best route of every prefix, by prefix length.
    fast6: LpmIndex,
    /// Lookup index of `v4` (addresses widened to `u128`).
    fast4: LpmIndex,
    /// Routes in the table (`routes` also holds the slots of removed routes, listed in `free`).
    live: usize,
    /// Slots of removed routes, reused by the next insertions (lowest first) so that route churn does not grow
    /// `routes`; the ones at the end of `routes` are dropped ([`Fib::trim_free`]).
    free: std::collections::BTreeSet<RouteId>,
    /// The most prefixes `v6` and `v4` held since they were last rebuilt: the prefix map keeps the nodes of
    /// removed prefixes for reuse, so once it has lost an eighth of them it is rebuilt ([`Fib::compact_maps`]) and
    /// the memory of a deleted batch goes back.
    peak: (usize, usize),
}

/// Whether address `x` (an IPv6 address as a `u128`) lies in prefix `p/len`.
pub(crate) fn within(x: u128, p: u128, len: u32) -> bool {
    len == 0 || (x ^ p).checked_shr(128 - len).unwrap_or(0) == 0
}

/// A multiplicative hasher for tables keyed by configured addresses (route prefixes, neighbours, local
/// addresses). The keys are the configuration's, not the traffic's: packets only probe them, so the DoS resistance
/// of SipHash buys nothing here and costs a third of a lookup.
#[derive(Debug, Clone, Copy, Default)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // Multiplication only carries entropy upwards, and keys that differ only in their last bytes (neighbours
        // and addresses of one /64) differ only in the top bits of the last word: a full avalanche (the
        // MurmurHash3 64-bit finaliser) brings them down to the bucket index. Folding the high half down once was
        // not enough: 20,000 neighbours of one /64 shared their low 16 bits and one bucket, and loading them was
        // quadratic (the catalogue of hostile configurations found it, docs/hostile.md).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u128(&mut self, i: u128) {
        self.write_u64(i as u64);
        self.write_u64((i >> 64) as u64);
    }
}

/// `BuildHasher` of [`FastHasher`].
pub type FastBuild = std::hash::BuildHasherDefault<FastHasher>;

/// Mask and masked key of one prefix of the linear table, in 64-bit halves, and what the prefix leads to.
#[derive(Debug, Clone, Copy)]
struct SmallKey {
    mask_hi: u64,
    key_hi: u64,
    mask_lo: u64,
    key_lo: u64,
    best: Best,
}

/// Longest-prefix match over the best route of every prefix, kept in step by [`Fib::insert`]: a linear scan while
/// there are at most [`LpmIndex::SMALL`] prefixes (a scan of a few entries beats any structure), a
/// [`StrideTrie`] beyond for prefixes up to [`LpmIndex::long_from`] bits, and one hash table per longer prefix
/// length (`/56`, `/64`, `/128`...), probed longest first before the trie.
///
/// Why the long prefixes leave the trie: a trie node is 256 slots (2,304 bytes), and prefixes longer than the
/// shared part of a table each need nodes of their own (a random /64 of a /32 two or three, a random /128 up to
/// ten): 20,000 random /128s took 650 MB. In a hash table a prefix costs its key and entry (about 40 bytes), at
/// the price of one probe per long length present on the packet path (tables have few: /64, /128).
#[derive(Debug, Clone)]
struct LpmIndex {
    /// `(length, masked bits, best route)`, longest first, while there are at most [`LpmIndex::SMALL`] prefixes.
    small: Vec<(u8, u128, Best)>,
    /// Mask, key and best route of every `small` entry, in the same order (what the scan reads).
    small_masks: Vec<SmallKey>,
    /// Address width in bits (128 or 32).
    width: u8,
    /// Whether every `small` mask has a zero low half (all prefixes of an IPv6 table at most /64 long).
    small_hi_only: bool,
    /// The trie, once there are more prefixes than the scan serves (addresses left-aligned): the prefixes up to
    /// [`LpmIndex::long_from`] bits.
    trie: Option<Box<StrideTrie>>,
    /// Once the trie exists, the longer prefixes: per length, longest first, the masked bits to the best route.
    long: Vec<(u8, LongTable)>,
    /// Whether lookups scan `small_masks` (no trie yet): one flag test on the packet path.
    scan: bool,
    /// Number of prefixes.
    count: usize,
}

/// The long prefixes of one length ([`LpmIndex`]): keyed by their masked bits, in 64 bits when they fit (an IPv6
/// prefix of at most 64 bits, every IPv4 prefix). An entry of a `u128` key takes 32 bytes (the key's alignment
/// is 16), of a `u64` key 16: a /64 added to a table costs 16 bytes less in each of the writer's two snapshots,
/// about 35 bytes less with the table's room.
#[derive(Debug, Clone)]
enum LongTable {
    /// Keys of at most 64 bits: the top 64 bits of an IPv6 prefix, an IPv4 prefix as it is.
    Narrow(HashMap<u64, Best, FastBuild>),
    /// Longer IPv6 prefixes.
    Wide(HashMap<u128, Best, FastBuild>),
}

impl LongTable {
    /// An empty table for prefixes of `len` bits of a `width`-bit address.
    fn new(len: u8, width: u8) -> LongTable {
        if len <= 64 || width <= 64 {
            LongTable::Narrow(HashMap::default())
        } else {
            LongTable::Wide(HashMap::default())
        }
    }

    /// The narrow key of masked bits `key` (held in the low `width` bits): its top 64 bits.
    #[inline(always)]
    fn narrow(key: u128, width: u8) -> u64 {
        (key >> width.saturating_sub(64)) as u64
    }

    #[inline(always)]
    fn get(&self, key: u128, width: u8) -> Option<&Best> {
        match self {
            LongTable::Narrow(m) => m.get(&Self::narrow(key, width)),
            LongTable::Wide(m) => m.get(&key),
        }
    }

    fn insert(&mut self, key: u128, width: u8, best: Best) {
        match self {
            LongTable::Narrow(m) => m.insert(Self::narrow(key, width), best),
            LongTable::Wide(m) => m.insert(key, best),
        };
    }

    fn remove(&mut self, key: u128, width: u8) {
        match self {
            LongTable::Narrow(m) => m.remove(&Self::narrow(key, width)),
            LongTable::Wide(m) => m.remove(&key),
        };
    }

    fn len(&self) -> usize {
        match self {
            LongTable::Narrow(m) => m.len(),
            LongTable::Wide(m) => m.len(),
        }
    }

    fn capacity(&self) -> usize {
        match self {
            LongTable::Narrow(m) => m.capacity(),
            LongTable::Wide(m) => m.capacity(),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            LongTable::Narrow(m) => m.shrink_to_fit(),
            LongTable::Wide(m) => m.shrink_to_fit(),
        }
    }

    fn for_each_mut(&mut self, f: impl Fn(&mut Best)) {
        match self {
            LongTable::Narrow(m) => m.values_mut().for_each(f),
            LongTable::Wide(m) => m.values_mut().for_each(f),
        }
    }
}

impl Default for LpmIndex {
    fn default() -> Self {
        LpmIndex {
            small: Vec::new(),
            small_masks: Vec::new(),
            width: 128,
            small_hi_only: false,
            trie: None,
            long: Vec::new(),
            scan: true,
            count: 0,
        }
    }
}

impl LpmIndex {
    /// Largest table scanned linearly.
    const SMALL: usize = 16;

    /// Prefixes longer than this go to the hash tables rather than the trie (48 bits of an IPv6 address, 24 of
    /// an IPv4 one: where tables stop sharing their upper bits).
    fn long_from(width: u8) -> u8 {
        if width == 128 { 48 } else { 24 }
    }

    /// Puts the best route of long prefix `key`/`len` in its length's table.
    fn set_long(&mut self, key: u128, len: u8, best: Best) {
        let width = self.width;
        let at = self.long.partition_point(|(l, _)| *l > len);
        match self.long.get_mut(at) {
            Some((l, m)) if *l == len => m.insert(key, width, best),
            _ => {
                let mut m = LongTable::new(len, width);
                m.insert(key, width, best);
                self.long.insert(at, (len, m));
            }
        }
    }

    /// Takes long prefix `key`/`len` out of its length's table, giving memory back as the table empties.
    fn remove_long(&mut self, key: u128, len: u8, width: u8) {
        let Some(at) = self.long.iter().position(|(l, _)| *l == len) else {
            return;
        };
        let m = &mut self.long[at].1;
        m.remove(key, width);
        if m.len() == 0 {
            self.long.remove(at);
        } else if m.len() * 4 < m.capacity() {
            m.shrink_to_fit();
        }
    }

    fn mask(bits: u128, len: u8, width: u8) -> u128 {
        // Keep the top `len` bits of a `width`-bit address held in the low bits of a u128.
        if len == 0 {
            0
        } else {
            let keep = u128::MAX << (width - len);
            bits & keep & (u128::MAX >> (128 - width))
        }
    }

    /// Sets the best route of prefix `bits`/`len` (`new`: the prefix was not in the table before).
    fn set(&mut self, bits: u128, len: u8, width: u8, best: Best, new: bool) {
        self.width = width;
        let key = Self::mask(bits, len, width);
        if new {
            self.count += 1;
        }
        if let Some(t) = &mut self.trie {
            if len > Self::long_from(width) {
                self.set_long(key, len, best);
            } else {
                t.insert(key << (128 - u32::from(width)), len, best);
            }
            return;
        }
        if let Some(e) = self.small.iter_mut().find(|e| e.0 == len && e.1 == key) {
            e.2 = best;
        } else {
            let pos = self.small.partition_point(|e| e.0 >= len);
            self.small.insert(pos, (len, key, best));
        }
        if self.count > Self::SMALL {
            // Past the scan's size: the same prefixes go into a trie (in any order: it keeps the longest).
            let mut t = Box::<StrideTrie>::default();
            for (l, k, b) in std::mem::take(&mut self.small) {
                if l > Self::long_from(width) {
                    self.set_long(k, l, b);
                } else {
                    t.insert(k << (128 - u32::from(width)), l, b);
                }
            }
            self.trie = Some(t);
            self.scan = false;
            self.small_masks.clear();
            return;
        }
        self.rebuild_small_masks();
    }

    /// Removes prefix `bits`/`len`; its addresses fall back to `covering` (the next shorter prefix containing it,
    /// with its length and best route), or to nothing.
    fn remove(&mut self, bits: u128, len: u8, width: u8, covering: Option<(u8, Best)>) {
        let key = Self::mask(bits, len, width);
        self.count = self.count.saturating_sub(1);
        if let Some(t) = &mut self.trie {
            if len > Self::long_from(width) {
                self.remove_long(key, len, width);
            } else {
                t.remove(key << (128 - u32::from(width)), len, covering);
            }
            return;
        }
        self.small.retain(|e| !(e.0 == len && e.1 == key));
        self.rebuild_small_masks();
    }

    fn rebuild_small_masks(&mut self) {
        let width = self.width;
        self.small_masks = self
            .small
            .iter()
            .map(|e| {
                let m = Self::mask(u128::MAX, e.0, width);
                SmallKey {
                    mask_hi: (m >> 64) as u64,
                    key_hi: (e.1 >> 64) as u64,
                    mask_lo: m as u64,
                    key_lo: e.1 as u64,
                    best: e.2,
                }
            })
            .collect();
        self.small_hi_only = width == 128 && self.small_masks.iter().all(|m| m.mask_lo == 0);
    }

    #[inline(always)]
    fn get(&self, bits: u128, width: u8) -> Option<&Best> {
        if self.scan {
            // One pass over (mask, key) pairs in 64-bit halves: xor, and, or, test per entry; the high halves
            // only when no prefix is longer than 64 bits (the usual IPv6 table).
            let (hi, lo) = ((bits >> 64) as u64, bits as u64);
            if self.small_hi_only {
                return self
                    .small_masks
                    .iter()
                    .find(|m| (hi ^ m.key_hi) & m.mask_hi == 0)
                    .map(|m| &m.best);
            }
            return self
                .small_masks
                .iter()
                .find(|m| ((hi ^ m.key_hi) & m.mask_hi) | ((lo ^ m.key_lo) & m.mask_lo) == 0)
                .map(|m| &m.best);
        }
        self.get_trie(bits, width)
    }

    /// Updates every entry's plan from its route.
    fn refresh_plans(&mut self, routes: &RouteSlots) {
        let fix = |b: Best| Best::of(b.route, routes[b.route as usize].plan);
        if let Some(t) = &mut self.trie {
            t.map_leaves(fix);
        }
        for (_, m) in &mut self.long {
            m.for_each_mut(|b| *b = fix(*b));
        }
        self.small.iter_mut().for_each(|e| e.2 = fix(e.2));
        self.rebuild_small_masks();
    }

    /// The trie lookup of tables too large for the linear scan (kept out of line so that the scan inlines into
    /// the data path).
    #[inline(never)]
    fn get_trie(&self, bits: u128, width: u8) -> Option<&Best> {
        for (len, m) in &self.long {
            if let Some(b) = m.get(Self::mask(bits, *len, width), width) {
                return Some(b);
            }
        }
        self.trie.as_ref()?.get(bits << (128 - u32::from(width)))
    }
}

impl Fib {
    /// Fewest prefixes a map must have held before it is rebuilt to give back the nodes of removed ones.
    const COMPACT_MIN: usize = 4096;

    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives each route the index of its forwarding plan: `plans[i]` for the route at index `i` of
    /// [`Fib::routes`] (the plans themselves live beside the table, in the
    /// [`Snapshot`](crate::snapshot::Snapshot)).
    pub fn assign_plans(&mut self, plans: &[Option<u32>]) {
        for (r, p) in self.routes.iter_mut().zip(plans) {
            r.plan = *p;
        }
        self.fast6.refresh_plans(&self.routes);
        self.fast4.refresh_plans(&self.routes);
    }

    /// Every route slot, indexed by [`RouteId`]: the routes in the table and the slots of removed ones (with no
    /// prefix set pointing at them, until an insertion reuses them: see [`Fib::remove`]).
    pub fn routes(&self) -> &RouteSlots {
        &self.routes
    }

    /// Shares with `other` the route slots both hold equal (see [`RouteSlots::share_from`]): the snapshot
    /// writer calls it once its spare has caught up with the published snapshot, so that the two hold one copy
    /// of the routes.
    pub(crate) fn share_routes_from(&mut self, other: &Fib) {
        self.routes.share_from(&other.routes);
    }

    /// Whether slot `id` holds a route of the table (not a removed route's slot waiting for reuse).
    pub fn is_live(&self, id: RouteId) -> bool {
        (id as usize) < self.routes.len() && !self.free.contains(&id)
    }

    /// Sets the plan of route `id` (and, when it is its prefix's best route, the lookup index's copy).
    pub fn set_plan(&mut self, id: RouteId, plan: Option<u32>) {
        let Some(r) = self.routes.get_mut(id as usize) else {
            return;
        };
        r.plan = plan;
        let best = Best::of(id, plan);
        match r.prefix {
            IpNet::V6(p) => {
                if self.set6(&p).is_some_and(|s| s.ids()[0] == id) {
                    self.fast6
                        .set(u128::from(p.addr()), p.prefix_len(), 128, best, false);
                }
            }
            IpNet::V4(p) => {
                if self.v4.get(&p).is_some_and(|s| s.ids()[0] == id) {
                    self.fast4.set(
                        u128::from(u32::from(p.addr())),
                        p.prefix_len(),
                        32,
                        best,
                        false,
                    );
                }
            }
        }
    }

    /// Removes the route for `prefix` with `metric`; returns its id. Its slot in [`Fib::routes`] stays,
    /// unreachable (no prefix set and no index entry points at it any more), until the next [`Fib::insert`]
    /// reuses it: ids of routes in the table are stable, the id of a removed route may name a new one.
    pub fn remove(&mut self, prefix: IpNet, metric: u32) -> Option<RouteId> {
        // The slots freed by earlier removals (this one's route stays readable until the next change).
        self.trim_free();
        /// Takes `id`'s route out of its prefix's set: the prefix's new best route, if any remains.
        fn take<P: prefix_trie::Prefix>(
            map: &mut PrefixMap<P, RouteSet>,
            routes: &RouteSlots,
            p: &P,
            metric: u32,
        ) -> Option<(RouteId, Option<RouteId>)> {
            let taken = map.get_mut(p)?.take(routes, metric)?;
            if taken.1.is_none() {
                map.remove(p);
            }
            Some(taken)
        }
        let best_of = |routes: &RouteSlots, id: RouteId| Best::of(id, routes[id as usize].plan);
        match prefix.trunc() {
            IpNet::V6(p) => {
                let (id, next) = if p.prefix_len() == 128 {
                    let key = u128::from(p.addr());
                    let taken = self.hosts6.get_mut(&key)?.take(&self.routes, metric)?;
                    if taken.1.is_none() {
                        self.hosts6.remove(&key);
                    }
                    taken
                } else {
                    take(&mut self.v6, &self.routes, &p, metric)?
                };
                let bits = u128::from(p.addr());
                match next {
                    Some(n) => {
                        let b = best_of(&self.routes, n);
                        self.fast6.set(bits, p.prefix_len(), 128, b, false);
                    }
                    None => {
                        let cover = p.prefix_len().checked_sub(1).and_then(|l| {
                            let up = Ipv6Net::new(p.addr(), l).ok()?;
                            let (q, set) = self.v6.get_lpm(&up)?;
                            Some((q.prefix_len(), best_of(&self.routes, set.ids()[0])))
                        });
                        self.fast6.remove(bits, p.prefix_len(), 128, cover);
                    }
                }
                self.live -= 1;
                self.free.insert(id);
                self.compact_maps();
                Some(id)
            }
            IpNet::V4(p) => {
                let (id, next) = take(&mut self.v4, &self.routes, &p, metric)?;
                let bits = u128::from(u32::from(p.addr()));
                match next {
                    Some(n) => {
                        let b = best_of(&self.routes, n);
                        self.fast4.set(bits, p.prefix_len(), 32, b, false);
                    }
                    None => {
                        let cover = p.prefix_len().checked_sub(1).and_then(|l| {
                            let up = Ipv4Net::new(p.addr(), l).ok()?;
                            let (q, set) = self.v4.get_lpm(&up)?;
                            Some((q.prefix_len(), best_of(&self.routes, set.ids()[0])))
                        });
                        self.fast4.remove(bits, p.prefix_len(), 32, cover);
                    }
                }
                self.live -= 1;
                self.free.insert(id);
                self.compact_maps();
                Some(id)
            }
        }
    }

    /// Rebuilds a prefix map that has lost an eighth of the most prefixes it held (and at least
    /// [`Fib::COMPACT_MIN`]): `prefix_trie` keeps the nodes of removed prefixes for reuse and never gives them
    /// back, so deleting a large batch would leave its nodes allocated. A rebuild costs a pass over the prefixes
    /// left, paid for by the eighth removed since the last one (amortised: at most 8 prefixes moved per removal).
    fn compact_maps(&mut self) {
        fn shrunk(len: usize, peak: usize) -> bool {
            peak >= Fib::COMPACT_MIN && len < peak - peak / 8
        }
        if shrunk(self.v6.len(), self.peak.0) {
            self.v6 = std::mem::take(&mut self.v6).into_iter().collect();
            self.peak.0 = self.v6.len();
        }
        if shrunk(self.v4.len(), self.peak.1) {
            self.v4 = std::mem::take(&mut self.v4).into_iter().collect();
            self.peak.1 = self.v4.len();
        }
    }

    /// Gives back the memory of removed routes (at the next insertion or removal: a removed route stays readable
    /// by its id until then; a snapshot calls it once it has read the route it removed, so that a batch of
    /// deletions frees its slots within the batch): the free slots at the end of the route slots are dropped (the
    /// ids of the routes in the table do not change), and with them the chunks they leave empty.
    pub(crate) fn trim_free(&mut self) {
        // Chunks of slots left empty are freed as they empty (fib/slots.rs).
        while let Some(&last) = self.free.last() {
            if last as usize + 1 != self.routes.len() {
                break;
            }
            self.free.pop_last();
            self.routes.pop();
        }
    }
    /// Adds a route; routes for the same prefix are kept sorted by metric. Returns its id: the slot of a removed
    /// route when there is one, else a new one.
    pub fn insert(&mut self, r: RouteEntry) -> RouteId {
        /// Adds `id` to its prefix's set; returns the prefix's best route and whether the prefix is new.
        fn add<P: prefix_trie::Prefix>(
            map: &mut PrefixMap<P, RouteSet>,
            routes: &RouteSlots,
            p: P,
            id: RouteId,
        ) -> (RouteId, bool) {
            match map.get_mut(&p) {
                None => {
                    map.insert(p, RouteSet::One(id));
                    (id, true)
                }
                Some(set) => (set.add(routes, id), false),
            }
        }
        self.trim_free();
        let prefix = r.prefix.trunc();
        let entry = RouteEntry { prefix, ..r };
        let id = match self.free.pop_first() {
            Some(id) => {
                *self
                    .routes
                    .get_mut(id as usize)
                    .expect("a free slot is a slot") = entry;
                id
            }
            None => {
                self.routes.push(entry);
                self.routes.len() as RouteId - 1
            }
        };
        self.live += 1;
        match prefix {
            IpNet::V6(p) => {
                let (best, new) = if p.prefix_len() == 128 {
                    match self.hosts6.entry(u128::from(p.addr())) {
                        std::collections::btree_map::Entry::Vacant(e) => {
                            e.insert(RouteSet::One(id));
                            (id, true)
                        }
                        std::collections::btree_map::Entry::Occupied(mut e) => {
                            (e.get_mut().add(&self.routes, id), false)
                        }
                    }
                } else {
                    add(&mut self.v6, &self.routes, p, id)
                };
                self.peak.0 = self.peak.0.max(self.v6.len());
                let best = Best::of(best, self.routes[best as usize].plan);
                self.fast6
                    .set(u128::from(p.addr()), p.prefix_len(), 128, best, new);
            }
            IpNet::V4(p) => {
                let (best, new) = add(&mut self.v4, &self.routes, p, id);
                self.peak.1 = self.peak.1.max(self.v4.len());
                let best = Best::of(best, self.routes[best as usize].plan);
                self.fast4.set(
                    u128::from(u32::from(p.addr())),
                    p.prefix_len(),
                    32,
                    best,
                    new,
                );
            }
        }
        id
    }

    /// Longest-prefix match for an IPv6 destination (lowest metric among equal prefixes).
    #[inline(always)]
    pub fn lookup_v6(&self, dst: Ipv6Addr) -> Option<&RouteEntry> {
        self.best_v6(dst).and_then(|b| self.route(b.route))
    }

    /// Longest-prefix match for an IPv6 destination, as the index holds it: the route and its plan.
    #[inline(always)]
    pub fn best_v6(&self, dst: Ipv6Addr) -> Option<&Best> {
        self.fast6.get(u128::from(dst), 128)
    }

    /// A route by index.
    #[inline(always)]
    pub fn route(&self, id: RouteId) -> Option<&RouteEntry> {
        self.routes.get(id as usize)
    }

    /// Longest-prefix match for an IPv4 destination.
    pub fn lookup_v4(&self, dst: Ipv4Addr) -> Option<&RouteEntry> {
        self.fast4
            .get(u128::from(u32::from(dst)), 32)
            .and_then(|b| self.route(b.route))
    }

    /// The route of IPv6 prefix `prefix` a lookup finds (the lowest metric), if the table has one.
    pub fn first_v6(&self, prefix: Ipv6Net) -> Option<&RouteEntry> {
        let set = self.set6(&prefix.trunc())?;
        self.route(*set.ids().first()?)
    }

    /// The route set of IPv6 prefix `p` (truncated), in `v6` or, a /128, in `hosts6`.
    fn set6(&self, p: &Ipv6Net) -> Option<&RouteSet> {
        if p.prefix_len() == 128 {
            self.hosts6.get(&u128::from(p.addr()))
        } else {
            self.v6.get(p)
        }
    }

    /// Every IPv6 route, in prefix order (lowest metric first within a prefix): the prefix map's order, by
    /// address then length (a prefix before the longer ones it contains), with the host routes merged in.
    pub fn routes_v6(&self) -> impl Iterator<Item = &RouteEntry> {
        let mut nets = self.v6.iter().peekable();
        let mut hosts = self.hosts6.iter().peekable();
        std::iter::from_fn(move || {
            let net_first = match (nets.peek(), hosts.peek()) {
                (Some((p, _)), Some((h, _))) => u128::from(p.addr()) <= **h,
                (n, _) => n.is_some(),
            };
            if net_first {
                nets.next().map(|(_, set)| set)
            } else {
                hosts.next().map(|(_, set)| set)
            }
        })
        .flat_map(|set| set.ids().iter().map(|id| &self.routes[*id as usize]))
    }

    /// Every IPv4 route, in prefix order.
    pub fn routes_v4(&self) -> impl Iterator<Item = &RouteEntry> {
        self.v4
            .iter()
            .flat_map(|(_, set)| set.ids().iter().map(|id| &self.routes[*id as usize]))
    }

    /// Whether a route for `prefix` with `metric` is in the table.
    pub fn contains(&self, prefix: IpNet, metric: u32) -> bool {
        let has = |ids: &[RouteId]| {
            ids.iter()
                .any(|id| self.routes[*id as usize].metric == metric)
        };
        match prefix.trunc() {
            IpNet::V6(p) => self.set6(&p).is_some_and(|s| has(s.ids())),
            IpNet::V4(p) => self.v4.get(&p).is_some_and(|s| has(s.ids())),
        }
    }

    /// The routes whose prefix contains `addr`, every prefix length and metric (at most one look per length).
    pub fn covering_v6(&self, addr: Ipv6Addr) -> Vec<RouteId> {
        (0..=128u8)
            .filter_map(|len| Ipv6Net::new(addr, len).ok())
            .filter_map(|p| self.set6(&p.trunc()))
            .flat_map(|s| s.ids().iter().copied())
            .collect()
    }

    /// Number of routes in the table.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the table has no route.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {

    /// Neighbours of one /64 differing only in their last 16 bits (what a large neighbour table looks like) must
    /// spread over the buckets: 4096 random hashes take about 3968 distinct values of their low 16 bits
    /// (4096 − 4096²/2¹⁷ expected collisions); the folded hash used before gave 1.
    #[test]
    fn fast_hasher_spreads_addresses_of_one_prefix() {
        use std::hash::BuildHasher;
        let b = FastBuild::default();
        let mut low16 = std::collections::HashSet::new();
        for i in 0..4096u16 {
            let mut o = [0u8; 16];
            o[0] = 0xfd;
            o[14..].copy_from_slice(&i.to_be_bytes());
            low16.insert(b.hash_one((0usize, Ipv6Addr::from(o))) & 0xffff);
        }
        assert!(low16.len() > 3900, "{} distinct of 4096", low16.len());
    }
    use super::*;

    /// A static route to `prefix` on device `dev`, with no gateway.
    pub(super) fn r(prefix: &str, metric: u32, dev: DevId) -> RouteEntry {
        RouteEntry {
            prefix: prefix.parse().unwrap(),
            via: None,
            dev: OptId::new(Some(dev)),
            metric,
            mtu: None,
            tunnel: OptId::NONE,
            origin: Origin::Static,
            line: 0,
            plan: None,
        }
    }

    /// Route churn (issue 15's soak): a window of routes removed and added one by one must reuse the removed
    /// slots, so that the route vector stays the size of the most routes ever present at once; the routes that
    /// stay keep their ids and lookups see the new routes.
    #[test]
    fn churn_reuses_removed_slots() {
        let mut f = Fib::new();
        let keep = f.insert(r("fc00::/16", 1024, 9));
        for i in 0..100u32 {
            f.insert(r(&format!("2001:db8:{i:x}::/48"), 1024, 1));
        }
        for i in 100..10_000u32 {
            let old: IpNet = format!("2001:db8:{:x}::/48", i - 100).parse().unwrap();
            assert!(f.remove(old, 1024).is_some());
            f.insert(r(&format!("2001:db8:{i:x}::/48"), 1024, 2));
        }
        assert_eq!(f.len(), 101);
        assert_eq!(f.routes().len(), 101, "removed slots were not reused");
        assert_eq!(f.route(keep).unwrap().dev.get(), Some(9));
        let at = |a: &str| {
            f.lookup_v6(a.parse().unwrap())
                .map(|r| (r.prefix, r.dev.get()))
        };
        assert_eq!(
            at("2001:db8:2700::1"),
            Some(("2001:db8:2700::/48".parse().unwrap(), Some(2)))
        );
        assert_eq!(at("2001:db8:26ab::1"), None);
        assert_eq!(at("fc00::1").map(|x| x.1), Some(Some(9)));
    }

    /// Host routes (/128) live outside the prefix map: they are found, ordered among the other prefixes (by
    /// address, a prefix before the longer ones it contains, as `ip -6 route` lists them), sorted by metric,
    /// removed, and a /128's removal falls back to the prefix covering it.
    #[test]
    fn host_routes_beside_the_prefix_map() {
        let mut f = Fib::new();
        for (p, metric, dev) in [
            ("2001:db8::5/128", 1024, 1),
            ("2001:db8::/64", 1024, 2),
            ("2001:db8::5/128", 10, 3),
            ("2001:db8::4/127", 1024, 4),
            ("2001:db8::4/128", 1024, 5),
            ("::/0", 1024, 6),
            ("2001:db9::/32", 1024, 7),
            ("2001:db8:ffff::1/128", 1024, 8),
        ] {
            f.insert(r(p, metric, dev));
        }
        let order: Vec<(String, u32)> = f
            .routes_v6()
            .map(|r| (r.prefix.to_string(), r.metric))
            .collect();
        let mut want = order.clone();
        want.sort_by_key(|(p, m)| {
            let n: Ipv6Net = p.parse().unwrap();
            (u128::from(n.addr()), n.prefix_len(), *m)
        });
        assert_eq!(order, want);
        assert_eq!(order.len(), 8);
        let dev = |f: &Fib, a: &str| f.lookup_v6(a.parse().unwrap()).and_then(|r| r.dev.get());
        assert_eq!(dev(&f, "2001:db8::5"), Some(3), "the lower metric");
        assert_eq!(dev(&f, "2001:db8::4"), Some(5));
        assert_eq!(dev(&f, "2001:db8::6"), Some(2));
        assert!(f.contains("2001:db8::5/128".parse().unwrap(), 1024));
        assert_eq!(f.covering_v6("2001:db8::5".parse().unwrap()).len(), 5);
        assert!(f.remove("2001:db8::5/128".parse().unwrap(), 10).is_some());
        assert_eq!(dev(&f, "2001:db8::5"), Some(1));
        assert!(f.remove("2001:db8::5/128".parse().unwrap(), 1024).is_some());
        assert!(f.remove("2001:db8::5/128".parse().unwrap(), 1024).is_none());
        assert_eq!(dev(&f, "2001:db8::5"), Some(4), "the /127 covers it again");
        assert!(f.remove("2001:db8::4/128".parse().unwrap(), 1024).is_some());
        assert_eq!(dev(&f, "2001:db8::4"), Some(4));
        assert_eq!(f.len(), 5);
        assert!(f.hosts6.len() == 1 && f.routes_v6().count() == 5);
    }

    #[test]
    fn longest_prefix_then_lowest_metric() {
        let mut f = Fib::new();
        f.insert(r("::/0", 1024, 0));
        f.insert(r("fc00::/16", 1024, 1));
        f.insert(r("fc00:1::/32", 1024, 2));
        f.insert(r("fc00:1::/32", 10, 3));
        let dev = |a: &str| {
            f.lookup_v6(a.parse().unwrap())
                .map(|r| r.dev.get().unwrap())
        };
        assert_eq!(dev("fc00:1::5"), Some(3));
        assert_eq!(dev("fc00:2::5"), Some(1));
        assert_eq!(dev("2001:db8::1"), Some(0));
        assert_eq!(f.lookup_v4("10.0.0.1".parse().unwrap()), None);
        f.insert(r("10.0.0.0/8", 0, 4));
        assert_eq!(
            f.lookup_v4("10.1.2.3".parse().unwrap()).unwrap().dev.get(),
            Some(4)
        );
        assert_eq!(f.routes_v6().count(), 4);
    }

    /// The lookup index (linear for small tables, hashed per length for larger ones) agrees with the prefix
    /// trie's own longest-prefix match on random tables and addresses.
    #[test]
    fn fast_lookup_agrees_with_trie() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::default();
        let strat = (
            proptest::collection::vec((any::<u128>(), 0u8..=128, 0u32..4), 1..40),
            proptest::collection::vec(any::<u128>(), 1..20),
        );
        runner
            .run(&strat, |(routes, probes)| {
                let mut f = Fib::new();
                for (i, (bits, len, metric)) in routes.iter().enumerate() {
                    let net = Ipv6Net::new(Ipv6Addr::from(*bits), *len).unwrap().trunc();
                    f.insert(RouteEntry {
                        prefix: IpNet::V6(net),
                        metric: *metric,
                        ..r("::/0", 0, i)
                    });
                }
                // Probe both random addresses and the configured prefixes themselves.
                let all = probes.iter().chain(routes.iter().map(|r| &r.0));
                for &a in all {
                    let a = Ipv6Addr::from(a);
                    let key = Ipv6Net::new(a, 128).unwrap();
                    let want = f
                        .set6(&key)
                        .or_else(|| f.v6.get_lpm(&key).map(|(_, set)| set))
                        .map(|set| &f.routes[set.ids()[0] as usize]);
                    prop_assert_eq!(f.lookup_v6(a), want);
                }
                Ok(())
            })
            .unwrap();
    }

    /// Routes added and removed at random (crossing the linear scan's size both ways) answer every lookup as a
    /// scan of the routes still there does: longest prefix, then lowest metric.
    #[test]
    fn removals_agree_with_a_scan() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::default();
        let strat = proptest::collection::vec(
            (0u128..8, 0u8..=24, 0u32..3, any::<bool>(), any::<u128>()),
            1..80,
        );
        runner
            .run(&strat, |ops| {
                let mut f = Fib::new();
                let mut live: Vec<(Ipv6Net, u32, DevId)> = Vec::new();
                for (i, (hi, len, metric, add, probe)) in ops.iter().enumerate() {
                    // Prefixes under a few /8s, so that they nest and collide.
                    let net =
                        Ipv6Net::new(Ipv6Addr::from(hi << 120 | (probe & (u128::MAX >> 8))), *len)
                            .unwrap()
                            .trunc();
                    let exists = live.iter().any(|(p, m, _)| *p == net && m == metric);
                    if *add && !exists {
                        f.insert(RouteEntry {
                            prefix: IpNet::V6(net),
                            metric: *metric,
                            ..r("::/0", 0, i)
                        });
                        live.push((net, *metric, i));
                    } else if !*add && exists {
                        prop_assert!(f.remove(IpNet::V6(net), *metric).is_some());
                        live.retain(|(p, m, _)| !(*p == net && m == metric));
                    } else if !*add {
                        prop_assert!(f.remove(IpNet::V6(net), *metric).is_none());
                    }
                    prop_assert_eq!(f.len(), live.len());
                    for a in [*probe, hi << 120, u128::from(net.addr())] {
                        let a = Ipv6Addr::from(a);
                        let want = live
                            .iter()
                            .filter(|(p, _, _)| p.contains(&a))
                            .max_by_key(|(p, m, _)| (p.prefix_len(), std::cmp::Reverse(*m)))
                            .map(|x| x.2);
                        prop_assert_eq!(f.lookup_v6(a).and_then(|r| r.dev.get()), want, "{}", a);
                    }
                }
                prop_assert_eq!(f.routes_v6().count(), live.len());
                Ok(())
            })
            .unwrap();
    }

    /// A large batch removed: the prefix map is rebuilt on the way ([`Fib::compact_maps`]) and every lookup
    /// still answers as a scan of the routes left does; the routes listed are those left.
    #[test]
    fn a_large_removal_rebuilds_the_prefix_map_and_keeps_the_routes() {
        let mut f = Fib::new();
        let net = |i: u32, len: u8| {
            let bits = (0x2001_0db8u128 << 96) | (u128::from(i.wrapping_mul(0x9e37_79b9)) << 64);
            Ipv6Net::new(Ipv6Addr::from(bits), len).unwrap().trunc()
        };
        let mut live = Vec::new();
        for i in 0..6000u32 {
            // Mostly /64s, a /40 every 100th (covering some of them).
            let p = net(i, if i % 100 == 0 { 40 } else { 64 });
            if !live.contains(&p) {
                f.insert(RouteEntry {
                    prefix: IpNet::V6(p),
                    ..r("::/0", 1024, i as usize)
                });
                live.push(p);
            }
        }
        let peak = f.v6.len();
        let (gone, kept) = live.split_at(live.len() * 5 / 6);
        for p in gone {
            assert!(f.remove(IpNet::V6(*p), 1024).is_some());
        }
        assert!(f.peak.0 < peak, "the map was rebuilt on the way");
        assert_eq!(f.len(), kept.len());
        assert_eq!(f.routes_v6().count(), kept.len());
        for i in 0..6000u32 {
            let a = Ipv6Net::new(net(i, 64).addr(), 128).unwrap().addr();
            let want = kept
                .iter()
                .filter(|p| p.contains(&a))
                .max_by_key(|p| p.prefix_len())
                .copied();
            assert_eq!(f.lookup_v6(a).map(|r| r.prefix), want.map(IpNet::V6), "{a}");
        }
    }

    /// The same with prefixes on both sides of the trie's limit (/48) and the hash tables' (/49 to /128), nested
    /// under one /32 so that long prefixes cover and are covered by short ones, past the linear scan's size.
    #[test]
    fn long_prefixes_agree_with_a_scan() {
        use proptest::prelude::*;
        const LENS: [u8; 12] = [0, 32, 40, 47, 48, 49, 56, 64, 65, 96, 127, 128];
        let mut runner = proptest::test_runner::TestRunner::default();
        let strat = proptest::collection::vec(
            (
                0usize..LENS.len(),
                0u128..4,
                0u32..2,
                any::<bool>(),
                any::<u128>(),
            ),
            20..160,
        );
        runner
            .run(&strat, |ops| {
                let mut f = Fib::new();
                let mut live: Vec<(Ipv6Net, u32, DevId)> = Vec::new();
                let base = 0x2001_0db8u128 << 96;
                // A few values in the bits of each boundary, so that prefixes nest and collide.
                let addr = |v: u128| base | (v & 3) << 80 | (v & 3) << 62 | (v & 1) << 40 | (v & 3);
                for (i, (li, v, metric, add, probe)) in ops.iter().enumerate() {
                    let net = Ipv6Net::new(Ipv6Addr::from(addr(*v)), LENS[*li])
                        .unwrap()
                        .trunc();
                    let exists = live.iter().any(|(p, m, _)| *p == net && m == metric);
                    // Mostly additions, so that the table crosses the linear scan's size.
                    if (*add || i % 3 == 0) && !exists {
                        f.insert(RouteEntry {
                            prefix: IpNet::V6(net),
                            metric: *metric,
                            ..r("::/0", 0, i)
                        });
                        live.push((net, *metric, i));
                    } else if !*add && exists {
                        prop_assert!(f.remove(IpNet::V6(net), *metric).is_some());
                        live.retain(|(p, m, _)| !(*p == net && m == metric));
                    }
                    for a in [addr(*probe), addr(probe >> 2), base | (probe & 0xffff)] {
                        let a = Ipv6Addr::from(a);
                        let want = live
                            .iter()
                            .filter(|(p, _, _)| p.contains(&a))
                            .max_by_key(|(p, m, _)| (p.prefix_len(), std::cmp::Reverse(*m)))
                            .map(|x| x.2);
                        prop_assert_eq!(f.lookup_v6(a).and_then(|r| r.dev.get()), want, "{}", a);
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    /// The same for IPv4, whose long prefixes (/25 to /32) are keyed in 64 bits: on both sides of the trie's
    /// limit (/24), nested under one /16.
    #[test]
    fn long_ipv4_prefixes_agree_with_a_scan() {
        use proptest::prelude::*;
        const LENS: [u8; 9] = [0, 16, 23, 24, 25, 28, 30, 31, 32];
        let mut runner = proptest::test_runner::TestRunner::default();
        let strat = proptest::collection::vec(
            (0usize..LENS.len(), 0u32..8, any::<bool>(), any::<u32>()),
            20..160,
        );
        runner
            .run(&strat, |ops| {
                let mut f = Fib::new();
                let mut live: Vec<(Ipv4Net, DevId)> = Vec::new();
                // Values in the bits around /24 and /32, so that prefixes nest and collide.
                let addr = |v: u32| 0xc633_0000 | (v & 1) << 8 | (v & 6) >> 1;
                for (i, (li, v, add, probe)) in ops.iter().enumerate() {
                    let net = Ipv4Net::new(Ipv4Addr::from(addr(*v)), LENS[*li])
                        .unwrap()
                        .trunc();
                    let exists = live.iter().any(|(p, _)| *p == net);
                    if (*add || i % 3 == 0) && !exists {
                        f.insert(RouteEntry {
                            prefix: IpNet::V4(net),
                            ..r("::/0", 0, i)
                        });
                        live.push((net, i));
                    } else if !*add && exists {
                        prop_assert!(f.remove(IpNet::V4(net), 0).is_some());
                        live.retain(|(p, _)| *p != net);
                    }
                    for a in [addr(*probe), addr(probe >> 3), probe & 0xffff_ff0f] {
                        let a = Ipv4Addr::from(a);
                        let want = live
                            .iter()
                            .filter(|(p, _)| p.contains(&a))
                            .max_by_key(|(p, _)| p.prefix_len())
                            .map(|x| x.1);
                        prop_assert_eq!(f.lookup_v4(a).and_then(|r| r.dev.get()), want, "{}", a);
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}
