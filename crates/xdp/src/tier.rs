//! The loaded program and its maps (with aya, docs/xdp.md says why): load, fill from [`Tables`], read the
//! counters, run frames in memory (`BPF_PROG_TEST_RUN`).

use crate::layout::{C_KIND, COUNTERS, Kind, PlanEntry, PortEntry, RouteValue, Why};
use crate::tables::Tables;
use crate::{Absent, available};
use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{Array, DevMap, HashMap as BpfHashMap, MapData, PerCpuArray};
use aya::programs::{ProgramFd, TestRun, TestRunOptions, Xdp};
use aya::{Ebpf, EbpfLoader};
use std::collections::BTreeMap;

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
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            routes: 1 << 16,
            plans: 1 << 10,
            ports: 64,
            egress: 64,
            queues: 64,
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
}

/// The loaded XDP plan executor.
#[derive(Debug)]
pub struct Tier {
    ebpf: Ebpf,
    sizes: Sizes,
}

impl Tier {
    /// Loads the program (not attached to any interface) with maps of `sizes`.
    pub fn load(sizes: Sizes) -> Result<Tier, Error> {
        let object = available().map(|()| crate::object())?;
        let mut ebpf = EbpfLoader::new()
            .map_max_entries("routes", sizes.routes)
            .map_max_entries("plans", sizes.plans)
            .map_max_entries("ports", sizes.ports)
            .map_max_entries("egress", sizes.egress)
            .map_max_entries("egress_tx", sizes.egress)
            .map_max_entries("xsks", sizes.queues)
            .load(object)
            .map_err(|e| Error::Load(format!("{e:#}")))?;
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| Error::Load(format!("no program {PROGRAM} in the object")))?
            .try_into()
            .map_err(|e| Error::Load(format!("{e}")))?;
        prog.load().map_err(|e| Error::Load(verifier(&e)))?;
        Ok(Tier { ebpf, sizes })
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

    /// Writes the plans of `t` into their slots, then the routes that name them (a route never names a slot
    /// before its plan is there).
    pub fn install(&mut self, t: &Tables) -> Result<(), Error> {
        {
            let mut plans: Array<&mut MapData, PlanEntry> =
                Array::try_from(self.map_mut("plans")?).map_err(map_err("plans"))?;
            for (i, p) in t.plans.iter().enumerate() {
                plans.set(i as u32, p, 0).map_err(map_err("plans"))?;
            }
        }
        let mut routes: LpmTrie<&mut MapData, [u8; 16], RouteValue> =
            LpmTrie::try_from(self.map_mut("routes")?).map_err(map_err("routes"))?;
        for (net, v) in &t.routes {
            let key = Key::new(u32::from(net.prefix_len()), net.network().octets());
            routes.insert(&key, v, 0).map_err(map_err("routes"))?;
        }
        Ok(())
    }

    /// Describes receiving interface `ifindex`.
    pub fn set_port(&mut self, ifindex: u32, port: PortEntry) -> Result<(), Error> {
        let mut ports: BpfHashMap<&mut MapData, u32, PortEntry> =
            BpfHashMap::try_from(self.map_mut("ports")?).map_err(map_err("ports"))?;
        ports.insert(ifindex, port, 0).map_err(map_err("ports"))
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
