//! The loaded program and its maps (with aya, docs/xdp.md says why): load, fill from [`Tables`], read the
//! counters, run frames in memory (`BPF_PROG_TEST_RUN`).

use crate::layout::{
    C_IOAM_FILLED, C_KIND, COUNTERS, IoamBlock, IoamBlockKey, IoamEntry, IoamMisses, Kind,
    PlanEntry, PortEntry, RouteValue, Why,
};
use crate::tables::Tables;
use crate::{Absent, available};
use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{Array, DevMap, HashMap as BpfHashMap, MapData, PerCpuArray, XskMap};
use aya::programs::xdp::{XdpLinkId, XdpMode};
use aya::programs::{ProgramFd, TestRun, TestRunOptions, Xdp};
use aya::{Ebpf, EbpfLoader};
use ipnet::{Ipv4Net, Ipv6Net};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Name of the program in the object.
const PROGRAM: &str = "lwt6_plan";

/// What the tier failed at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Built without the program.
    #[error("{0}")]
    Absent(#[from] Absent),
    /// The kernel refused the object (the verifier's log is in the message).
    #[error("loading the XDP program: {0}")]
    Load(String),
    /// A map operation failed.
    #[error("XDP map {map}: {err}")]
    Map {
        /// The map.
        map: &'static str,
        /// What failed.
        err: String,
    },
    /// A test run failed.
    #[error("BPF_PROG_TEST_RUN: {0}")]
    TestRun(String),
}

fn map_err(map: &'static str) -> impl Fn(aya::maps::MapError) -> Error {
    move |e| Error::Map {
        map,
        err: e.to_string(),
    }
}

/// How many entries each map holds (fixed when the program is loaded).
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// LPM trie entries (routes and local /128s); allocated as used.
    pub routes: u32,
    /// Plan slots.
    pub plans: u32,
    /// Receiving interfaces.
    pub ports: u32,
    /// Egress slots (lwt6 device indexes).
    pub egress: u32,
    /// Receive queues with an AF_XDP socket.
    pub queues: u32,
    /// IOAM transit blocks precomputed whole (namespace, egress, trace type, ingress); allocated as used.
    pub ioam_blocks: u32,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            routes: 1 << 16,
            plans: 1 << 10,
            ports: 64,
            egress: 64,
            queues: 64,
            ioam_blocks: 1024,
        }
    }
}

/// The outcome of one frame run in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The XDP action returned (`XDP_PASS` 2 for the slow path without a socket, `XDP_REDIRECT` 4 when a plan
    /// sent the frame).
    pub action: u32,
    /// The frame as the program left it.
    pub frame: Vec<u8>,
}

/// `XDP_PASS`.
pub const XDP_PASS: u32 = 2;
/// `XDP_REDIRECT`.
pub const XDP_REDIRECT: u32 = 4;

/// The counters, summed over the CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames a plan sent from the driver.
    pub forwarded: u64,
    /// Of those, per plan kind.
    pub by_kind: BTreeMap<Kind, u64>,
    /// Frames sent to the slow path, per reason (reasons never counted are absent).
    pub slow: BTreeMap<Why, u64>,
    /// Frames sent per egress slot (the ones that sent any).
    pub egress: BTreeMap<u32, u64>,
    /// IOAM traces filled (or flagged Overflow) in transit, as the worker's `ioam_transit_filled`.
    pub ioam_filled: u64,
}

/// Runs the tier's program on frames in memory from any thread (its own descriptor of the program), also while
/// the [`Tier`] that made it installs a new snapshot.
#[derive(Debug)]
pub struct Runner {
    prog: std::os::fd::OwnedFd,
}

impl Runner {
    /// Runs the program once on `frame` (as [`Tier::test_run`]).
    pub fn run(&self, frame: &[u8]) -> Result<Run, Error> {
        let mut out = Vec::new();
        let (action, _) = crate::sys::test_run(&self.prog, frame, &mut out, 1)
            .map_err(|e| Error::TestRun(e.to_string()))?;
        Ok(Run { action, frame: out })
    }

    /// Runs the program once on `frame` and returns the action and how long the run took in nanoseconds, as the
    /// kernel times it (`BPF_PROG_TEST_RUN`'s `duration` with one repetition: the program and the clock reads
    /// around it, not the copies in and out). A measurement for `tests/prog_cost.rs`: the runs of a program that
    /// changes its frame cannot be repeated in one call (see `sys::test_run`), so it is called once per
    /// run and the caller takes a median.
    pub fn timed(&self, frame: &[u8]) -> Result<(u32, u32), Error> {
        let mut out = Vec::new();
        crate::sys::test_run(&self.prog, frame, &mut out, 1)
            .map_err(|e| Error::TestRun(e.to_string()))
    }
}

/// The loaded XDP plan executor.
#[derive(Debug)]
pub struct Tier {
    pub(crate) ebpf: Ebpf,
    sizes: Sizes,
    /// The routes in the LPM trie, with the plan slots they name.
    pub(crate) routes: crate::mirror::RouteMirror,
    /// Per plan slot in use: how many `routes` and `vrf` entries name it.
    pub(crate) refs: HashMap<u32, u32>,
    /// The slots holding End.DT6 plans (`F_TABLE`).
    pub(crate) table_slots: HashSet<u32>,
    /// [`Tables::ways6`] of the last full installation: looked at again at every change.
    pub(crate) ways6: Vec<Ipv6Net>,
    /// [`Tables::ways4`] of the last full installation: while non-zero, route changes install whole.
    pub(crate) ways4: usize,
    /// The tables the `vrf` map holds.
    pub(crate) vrf_tables: BTreeSet<u32>,
    /// Plans in the `plans` array, by content: their slot.
    slots: HashMap<PlanEntry, u32>,
    /// Slots no route names and no running program can hold.
    free: Vec<u32>,
    /// Slots never used so far start here.
    fresh: u32,
    /// The `ioam` map's entries.
    ioam: HashMap<u32, IoamEntry>,
    /// The `vrf` map's entries (table, prefix), with the plan slots they name.
    vrf: HashMap<(u32, Ipv6Net), RouteValue>,
    /// The `routes4` map's entries, with the plan slots they name.
    routes4: HashMap<Ipv4Net, RouteValue>,
    /// The ports set (their IOAM ids are in the blocks).
    ports: HashMap<u32, PortEntry>,
    /// The `ioam_blk` map's entries.
    blocks: HashMap<IoamBlockKey, IoamBlock>,
    barrier: crate::sys::Barrier,
}

/// What one [`Tier::install`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Installed {
    /// Plans written (new ones: an unchanged plan keeps its slot).
    pub plans_written: usize,
    /// LPM entries added or changed.
    pub routes_set: usize,
    /// LPM entries removed.
    pub routes_removed: usize,
    /// Plan slots freed (after waiting for the programs that might hold them).
    pub slots_freed: usize,
}

impl Tier {
    /// Loads the program (not attached to any interface) with maps of `sizes`.
    pub fn load(sizes: Sizes) -> Result<Tier, Error> {
        let object = available().map(|()| crate::object())?;
        let mut ebpf = EbpfLoader::new()
            .map_max_entries("routes", sizes.routes)
            .map_max_entries("vrf", sizes.routes)
            .map_max_entries("routes4", sizes.routes)
            .map_max_entries("plans", sizes.plans)
            .map_max_entries("ports", sizes.ports)
            .map_max_entries("egress", sizes.egress)
            .map_max_entries("egress_tx", sizes.egress)
            .map_max_entries("xsks", sizes.queues)
            .map_max_entries("xsk_base", sizes.ports)
            .map_max_entries("ioam_blk", sizes.ioam_blocks.max(1))
            .load(object)
            .map_err(|e| Error::Load(format!("{e:#}")))?;
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| Error::Load(format!("no program {PROGRAM} in the object")))?
            .try_into()
            .map_err(|e| Error::Load(format!("{e}")))?;
        prog.load().map_err(|e| Error::Load(verifier(&e)))?;
        let barrier = crate::sys::Barrier::new().map_err(|e| Error::Map {
            map: "barrier",
            err: e.to_string(),
        })?;
        Ok(Tier {
            ebpf,
            sizes,
            routes: crate::mirror::RouteMirror::default(),
            refs: HashMap::new(),
            table_slots: HashSet::new(),
            ways6: Vec::new(),
            ways4: 0,
            vrf_tables: BTreeSet::new(),
            slots: HashMap::new(),
            free: Vec::new(),
            fresh: 0,
            ioam: HashMap::new(),
            vrf: HashMap::new(),
            routes4: HashMap::new(),
            ports: HashMap::new(),
            blocks: HashMap::new(),
            barrier,
        })
    }

    /// The map sizes the program was loaded with.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    fn prog(&self) -> &Xdp {
        self.ebpf
            .program(PROGRAM)
            .and_then(|p| <&Xdp>::try_from(p).ok())
            .expect("loaded in Tier::load")
    }

    /// A [`Runner`] of this program for another thread.
    pub fn runner(&self) -> Result<Runner, Error> {
        use std::os::fd::AsFd;
        let prog = self
            .program_fd()?
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::TestRun(e.to_string()))?;
        Ok(Runner { prog })
    }

    /// The program's descriptor (to attach it).
    pub fn program_fd(&self) -> Result<&ProgramFd, Error> {
        self.prog().fd().map_err(|e| Error::Load(e.to_string()))
    }

    fn map_mut(&mut self, name: &'static str) -> Result<&mut aya::maps::Map, Error> {
        self.ebpf.map_mut(name).ok_or(Error::Map {
            map: name,
            err: "not in the object".into(),
        })
    }

    fn map(&self, name: &'static str) -> Result<&aya::maps::Map, Error> {
        self.ebpf.map(name).ok_or(Error::Map {
            map: name,
            err: "not in the object".into(),
        })
    }

    /// Makes the maps hold `t` (a snapshot's tables), changing only what differs from what they hold, so that
    /// no packet ever sees half a plan:
    ///
    /// 1. plans not in the maps yet are written into slots that no route names and no running program holds
    ///    (an unchanged plan keeps its slot);
    /// 2. the LPM entries that differ are set (each update replaces one node: a lookup finds the old value or
    ///    the new one, and either names a complete plan), those of routes gone are removed;
    /// 3. the slots no route names any more are freed once every program that was running has finished (so a
    ///    packet that found a route before step 2 still reads the plan it found).
    ///
    /// A packet may meet the old table for some routes and the new one for others while step 2 runs, as a
    /// packet meets routes changed one by one in the kernel.
    pub fn install(&mut self, t: &Tables) -> Result<Installed, Error> {
        let mut done = Installed::default();
        // 1. Plans: the slot of each of `t`'s plans.
        let mut slot_of = Vec::with_capacity(t.plans.len());
        for p in &t.plans {
            let (s, new) = self.slot_for(p)?;
            slot_of.push(s);
            done.plans_written += usize::from(new);
        }
        // 2. Routes.
        let want: Vec<(Ipv6Net, RouteValue)> = t
            .routes
            .iter()
            .map(|(net, v)| {
                let plan = match slot_of.get(v.plan as usize) {
                    Some(&s) => s,
                    None => v.plan,
                };
                (*net, RouteValue { plan, why: v.why })
            })
            .collect();
        {
            let mut routes: LpmTrie<&mut MapData, [u8; 16], RouteValue> =
                LpmTrie::try_from(self.ebpf.map_mut("routes").ok_or(Error::Map {
                    map: "routes",
                    err: "not in the object".into(),
                })?)
                .map_err(map_err("routes"))?;
            let key = |net: &Ipv6Net| Key::new(u32::from(net.prefix_len()), net.network().octets());
            self.routes.replace_with(want, |net, v| match v {
                Some(v) => {
                    done.routes_set += 1;
                    routes.insert(&key(net), v, 0).map_err(map_err("routes"))
                }
                None => {
                    done.routes_removed += 1;
                    routes.remove(&key(net)).map_err(map_err("routes"))
                }
            })?;
        }
        // The tables End.DT6 looks up, the same way.
        {
            let want: HashMap<(u32, Ipv6Net), RouteValue> = t
                .table_routes
                .iter()
                .map(|(table, net, v)| {
                    let plan = match slot_of.get(v.plan as usize) {
                        Some(&s) => s,
                        None => v.plan,
                    };
                    ((*table, *net), RouteValue { plan, why: v.why })
                })
                .collect();
            let mut vrf: LpmTrie<&mut MapData, [u8; 20], RouteValue> =
                LpmTrie::try_from(self.ebpf.map_mut("vrf").ok_or(Error::Map {
                    map: "vrf",
                    err: "not in the object".into(),
                })?)
                .map_err(map_err("vrf"))?;
            let key = |table: u32, net: &Ipv6Net| {
                let mut k = [0u8; 20];
                k[..4].copy_from_slice(&table.to_be_bytes());
                k[4..].copy_from_slice(&net.network().octets());
                Key::new(32 + u32::from(net.prefix_len()), k)
            };
            for ((table, net), v) in &want {
                if self.vrf.get(&(*table, *net)) != Some(v) {
                    vrf.insert(&key(*table, net), v, 0)
                        .map_err(map_err("vrf"))?;
                    done.routes_set += 1;
                }
            }
            for (table, net) in self.vrf.keys() {
                if !want.contains_key(&(*table, *net)) {
                    vrf.remove(&key(*table, net)).map_err(map_err("vrf"))?;
                    done.routes_removed += 1;
                }
            }
            self.vrf = want;
        }
        self.install_routes4(t, &slot_of, &mut done)?;
        self.ways6 = t.ways6.clone();
        self.ways4 = t.ways4;
        // IOAM transit entries (a hash without preallocation: an update replaces the element under RCU, a
        // packet reads the old one or the new one).
        {
            let want: HashMap<u32, IoamEntry> = t.ioam.iter().copied().collect();
            let mut map: BpfHashMap<&mut MapData, u32, IoamEntry> =
                BpfHashMap::try_from(self.ebpf.map_mut("ioam").ok_or(Error::Map {
                    map: "ioam",
                    err: "not in the object".into(),
                })?)
                .map_err(map_err("ioam"))?;
            for (k, v) in &want {
                if self.ioam.get(k) != Some(v) {
                    map.insert(k, v, 0).map_err(map_err("ioam"))?;
                }
            }
            for k in self.ioam.keys() {
                if !want.contains_key(k) {
                    map.remove(k).map_err(map_err("ioam"))?;
                }
            }
            self.ioam = want;
        }
        self.refresh_ioam_blocks()?;
        // 3. Slots no route names.
        self.refs.clear();
        for v in self
            .routes
            .values()
            .chain(self.vrf.values().copied())
            .chain(self.routes4.values().copied())
        {
            if v.plan != crate::layout::NO_PLAN {
                *self.refs.entry(v.plan).or_default() += 1;
            }
        }
        self.vrf_tables = self.vrf.keys().map(|(t, _)| *t).collect();
        let gone: Vec<u32> = self
            .slots
            .values()
            .filter(|s| !self.refs.contains_key(s))
            .copied()
            .collect();
        self.free_slots(&gone)?;
        done.slots_freed = gone.len();
        Ok(done)
    }

    /// Step 2 for the IPv4 routes (`routes4`): the entries that differ set, those of routes gone removed.
    fn install_routes4(
        &mut self,
        t: &Tables,
        slot_of: &[u32],
        done: &mut Installed,
    ) -> Result<(), Error> {
        let want: HashMap<Ipv4Net, RouteValue> = t
            .routes4
            .iter()
            .map(|(net, v)| {
                let plan = slot_of.get(v.plan as usize).copied().unwrap_or(v.plan);
                (*net, RouteValue { plan, why: v.why })
            })
            .collect();
        let mut map: LpmTrie<&mut MapData, [u8; 4], RouteValue> =
            LpmTrie::try_from(self.ebpf.map_mut("routes4").ok_or(Error::Map {
                map: "routes4",
                err: "not in the object".into(),
            })?)
            .map_err(map_err("routes4"))?;
        let key = |net: &Ipv4Net| Key::new(u32::from(net.prefix_len()), net.network().octets());
        for (net, v) in &want {
            if self.routes4.get(net) != Some(v) {
                map.insert(&key(net), v, 0).map_err(map_err("routes4"))?;
                done.routes_set += 1;
            }
        }
        for net in self.routes4.keys() {
            if !want.contains_key(net) {
                map.remove(&key(net)).map_err(map_err("routes4"))?;
                done.routes_removed += 1;
            }
        }
        self.routes4 = want;
        Ok(())
    }

    /// The slot of plan `p`: the one holding it already, else a free one it is written into (`true`).
    pub(crate) fn slot_for(&mut self, p: &PlanEntry) -> Result<(u32, bool), Error> {
        if let Some(&s) = self.slots.get(p) {
            return Ok((s, false));
        }
        let s = match self.free.pop() {
            Some(s) => s,
            None if self.fresh < self.sizes.plans => {
                self.fresh += 1;
                self.fresh - 1
            }
            None => {
                return Err(Error::Map {
                    map: "plans",
                    err: format!("full ({} slots)", self.sizes.plans),
                });
            }
        };
        let mut plans: Array<&mut MapData, PlanEntry> =
            Array::try_from(self.map_mut("plans")?).map_err(map_err("plans"))?;
        if let Err(e) = plans.set(s, p, 0) {
            self.free.push(s);
            return Err(map_err("plans")(e));
        }
        self.slots.insert(*p, s);
        if p.flags & crate::layout::F_TABLE != 0 {
            self.table_slots.insert(s);
        }
        Ok((s, true))
    }

    /// Frees plan slots no route names any more, once every program that was running has finished (so a
    /// packet that found a route before its entry changed still reads the plan it found).
    pub(crate) fn free_slots(&mut self, gone: &[u32]) -> Result<(), Error> {
        if gone.is_empty() {
            return Ok(());
        }
        self.barrier.wait().map_err(|e| Error::Map {
            map: "barrier",
            err: e.to_string(),
        })?;
        if gone.len() > self.slots.len() / 8 {
            let gone: HashSet<u32> = gone.iter().copied().collect();
            self.slots.retain(|_, s| !gone.contains(s));
        } else {
            // A few: their contents (the keys of `slots`) read back from the map rather than a pass over it.
            let plans: Array<&MapData, PlanEntry> =
                Array::try_from(self.ebpf.map("plans").ok_or(Error::Map {
                    map: "plans",
                    err: "not in the object".into(),
                })?)
                .map_err(map_err("plans"))?;
            for s in gone {
                let p = plans.get(s, 0).map_err(map_err("plans"))?;
                if self.slots.get(&p) == Some(s) {
                    self.slots.remove(&p);
                }
            }
        }
        for s in gone {
            self.table_slots.remove(s);
        }
        self.free.extend_from_slice(gone);
        Ok(())
    }

    /// LPM entries of the `routes` map (routes and the router's addresses).
    pub fn routes_installed(&self) -> usize {
        self.routes.len()
    }

    /// Plan slots in use.
    pub fn plans_in_use(&self) -> usize {
        self.slots.len()
    }

    /// Makes the slow-path frames received on interface `ifindex` use the `xsks` slots from `base` on: queue `q`
    /// goes to slot `base + q` (one XSKMAP serves every interface). Without a base, slot `q`.
    pub fn set_xsk_base(&mut self, ifindex: u32, base: u32) -> Result<(), Error> {
        let mut m: BpfHashMap<&mut MapData, u32, u32> =
            BpfHashMap::try_from(self.map_mut("xsk_base")?).map_err(map_err("xsk_base"))?;
        m.insert(ifindex, base, 0).map_err(map_err("xsk_base"))
    }

    /// The `xsks` map's descriptor (an XSKMAP: socket descriptors by slot), for an AF_XDP engine that registers
    /// its sockets itself.
    pub fn xsk_map_fd(&self) -> Result<std::os::fd::BorrowedFd<'_>, Error> {
        map_fd(self.map("xsks")?, "xsks")
    }

    /// Removes egress slot `slot` from the devmap: the plans that leave by it go to the worker again, counted
    /// `no_egress`. Removing a slot that is not set is not an error.
    pub fn clear_egress(&mut self, slot: u32) -> Result<(), Error> {
        let fd = map_fd(self.map("egress")?, "egress")?;
        match crate::sys::map_delete(fd, slot) {
            Err(e) if e.raw_os_error() != Some(libc::ENOENT) => Err(Error::Map {
                map: "egress",
                err: e.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Hands the slow-path frames of receive queue `queue` to AF_XDP socket `socket` (without one, they go on to
    /// the kernel).
    pub fn set_socket(
        &mut self,
        queue: u32,
        socket: impl std::os::fd::AsRawFd,
    ) -> Result<(), Error> {
        let mut xsks: XskMap<&mut MapData> =
            XskMap::try_from(self.map_mut("xsks")?).map_err(map_err("xsks"))?;
        xsks.set(queue, socket, 0).map_err(map_err("xsks"))
    }

    /// Attaches the program to interface `ifindex` (`driver`: native XDP only, else the kernel's choice); the
    /// attachment lasts as long as the tier.
    pub fn attach(&mut self, ifindex: u32, driver: bool) -> Result<XdpLinkId, Error> {
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| Error::Load(format!("no program {PROGRAM}")))?
            .try_into()
            .map_err(|e| Error::Load(format!("{e}")))?;
        let mode = if driver {
            XdpMode::Driver
        } else {
            XdpMode::Default
        };
        prog.attach_to_if_index(ifindex, mode)
            .map_err(|e| Error::Load(verifier(&e)))
    }

    /// Describes receiving interface `ifindex`.
    pub fn set_port(&mut self, ifindex: u32, port: PortEntry) -> Result<(), Error> {
        let mut ports: BpfHashMap<&mut MapData, u32, PortEntry> =
            BpfHashMap::try_from(self.map_mut("ports")?).map_err(map_err("ports"))?;
        ports.insert(ifindex, port, 0).map_err(map_err("ports"))?;
        self.ports.insert(ifindex, port);
        self.refresh_ioam_blocks()
    }

    /// Makes every precomputed IOAM block follow the `ioam` entries and the ports' ids (after a change of
    /// either): a block whose entry or port is gone is removed, a changed one rewritten (a hash update replaces
    /// the element under RCU: a packet reads the old block or the new one).
    fn refresh_ioam_blocks(&mut self) -> Result<(), Error> {
        if self.blocks.is_empty() {
            return Ok(());
        }
        let keys: Vec<IoamBlockKey> = self.blocks.keys().copied().collect();
        let (ioam, ports) = (&self.ioam, &self.ports);
        let mut map: BpfHashMap<&mut MapData, IoamBlockKey, IoamBlock> =
            BpfHashMap::try_from(self.ebpf.map_mut("ioam_blk").ok_or(Error::Map {
                map: "ioam_blk",
                err: "not in the object".into(),
            })?)
            .map_err(map_err("ioam_blk"))?;
        for k in keys {
            let now = ioam
                .get(&k.nse)
                .and_then(|e| crate::ioam_block::block(e, k.ty, ports.get(&k.ingress)?));
            match now {
                Some(b) if self.blocks.get(&k) != Some(&b) => {
                    map.insert(k, b, 0).map_err(map_err("ioam_blk"))?;
                    self.blocks.insert(k, b);
                }
                Some(_) => {}
                None => {
                    map.remove(&k).map_err(map_err("ioam_blk"))?;
                    self.blocks.remove(&k);
                }
            }
        }
        Ok(())
    }

    /// Adds the IOAM transit blocks the driver looked for and did not find since the last call (the keys it
    /// records per CPU in `ioam_miss`), as far as the map has room; returns how many were added. Called by the
    /// engine at every turn of its control loop: a trace type met in transit is filled by copying its block from
    /// then on (before, and for keys that have no block — a namespace this node does not know, a block the map
    /// has no room for — the driver assembles the block field by field, with the same bytes).
    pub fn learn_ioam(&mut self) -> Result<usize, Error> {
        let misses: PerCpuArray<&MapData, IoamMisses> =
            PerCpuArray::try_from(self.map("ioam_miss")?).map_err(map_err("ioam_miss"))?;
        let per_cpu = misses.get(&0, 0).map_err(map_err("ioam_miss"))?;
        let mut want: Vec<IoamBlockKey> = Vec::new();
        for m in per_cpu.iter() {
            let n = (m.n as usize).min(crate::layout::IOAM_MISSES);
            want.extend(m.k[..n].iter().filter(|k| !self.blocks.contains_key(k)));
        }
        want.sort_unstable();
        want.dedup();
        let mut added = 0;
        for k in want {
            if self.blocks.len() >= self.sizes.ioam_blocks as usize {
                break;
            }
            let Some(b) = self
                .ioam
                .get(&k.nse)
                .and_then(|e| crate::ioam_block::block(e, k.ty, self.ports.get(&k.ingress)?))
            else {
                continue;
            };
            let mut map: BpfHashMap<&mut MapData, IoamBlockKey, IoamBlock> =
                BpfHashMap::try_from(self.map_mut("ioam_blk")?).map_err(map_err("ioam_blk"))?;
            map.insert(k, b, 0).map_err(map_err("ioam_blk"))?;
            self.blocks.insert(k, b);
            added += 1;
        }
        Ok(added)
    }

    /// The IOAM transit blocks in the driver's map.
    pub fn ioam_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// How many times the driver found no precomputed block for a trace of a namespace of this node (summed over
    /// the CPUs): it then assembled the block field by field.
    pub fn ioam_misses(&self) -> Result<u64, Error> {
        let misses: PerCpuArray<&MapData, IoamMisses> =
            PerCpuArray::try_from(self.map("ioam_miss")?).map_err(map_err("ioam_miss"))?;
        let per_cpu = misses.get(&0, 0).map_err(map_err("ioam_miss"))?;
        Ok(per_cpu.iter().map(|m| u64::from(m.n)).sum())
    }

    /// Sends the plans whose egress is `slot` (an lwt6 device index) out of interface `ifindex`.
    pub fn set_egress(&mut self, slot: u32, ifindex: u32) -> Result<(), Error> {
        let mut egress: DevMap<&mut MapData> =
            DevMap::try_from(self.map_mut("egress")?).map_err(map_err("egress"))?;
        egress.set(slot, ifindex, None, 0).map_err(|e| Error::Map {
            map: "egress",
            err: e.to_string(),
        })
    }

    /// The counters, summed over the CPUs.
    pub fn counters(&self) -> Result<Counters, Error> {
        let sum = |name: &'static str, n: u32| -> Result<Vec<u64>, Error> {
            let arr: PerCpuArray<&MapData, u64> =
                PerCpuArray::try_from(self.map(name)?).map_err(map_err(name))?;
            (0..n)
                .map(|i| {
                    arr.get(&i, 0)
                        .map(|v| v.iter().sum())
                        .map_err(map_err(name))
                })
                .collect()
        };
        let c = sum("counters", COUNTERS as u32)?;
        let mut out = Counters {
            forwarded: c[0],
            ioam_filled: c[C_IOAM_FILLED],
            ..Counters::default()
        };
        for w in Why::ALL {
            if c[w as usize] > 0 {
                out.slow.insert(w, c[w as usize]);
            }
        }
        for k in Kind::ALL {
            let n = c[C_KIND + k as usize];
            if n > 0 {
                out.by_kind.insert(k, n);
            }
        }
        for (i, n) in sum("egress_tx", self.sizes.egress)?.into_iter().enumerate() {
            if n > 0 {
                out.egress.insert(i as u32, n);
            }
        }
        Ok(out)
    }

    /// Runs the program once on `frame` in memory (`BPF_PROG_TEST_RUN`: received on the loopback device, queue
    /// 0, with 256 bytes of headroom as a driver gives; needs root). A redirect is not carried out: the action
    /// says where the frame would go and the frame is the program's output.
    pub fn test_run(&self, frame: &[u8]) -> Result<Run, Error> {
        let mut out = vec![0u8; frame.len() + 512];
        let r = self
            .prog()
            .test_run(TestRunOptions {
                data_in: Some(frame),
                data_out: Some(&mut out),
                ..TestRunOptions::default()
            })
            .map_err(|e| Error::TestRun(verifier(&e)))?;
        out.truncate(r.data_size_out as usize);
        Ok(Run {
            action: r.return_value,
            frame: out,
        })
    }
}

/// The descriptor of one of the program's maps.
fn map_fd<'a>(
    m: &'a aya::maps::Map,
    name: &'static str,
) -> Result<std::os::fd::BorrowedFd<'a>, Error> {
    use aya::maps::Map as M;
    use std::os::fd::AsFd;
    let data: &MapData = match m {
        M::XskMap(d) | M::DevMap(d) | M::HashMap(d) | M::Array(d) | M::PerCpuArray(d) => d,
        _ => {
            return Err(Error::Map {
                map: name,
                err: "of an unexpected type".into(),
            });
        }
    };
    Ok(data.fd().as_fd())
}

/// An aya error with its sources (the verifier's log is one of them: its last 40 lines, which say why).
fn verifier(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s += &format!(": {x}");
        src = x.source();
    }
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
