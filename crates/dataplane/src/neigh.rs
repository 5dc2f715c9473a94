//! Dynamic neighbours: what the workers report, the limits and timers of resolution, and the table the control
//! thread keeps (RFC 4861 §7.3 reachability states, simplified; ARP entries follow the same states). The packets a
//! worker keeps while a next hop is resolved are the worker's own (its pending queues).
//!
//! Neighbours are the one thing the data path changes. The split:
//!
//! - A **worker** (with [`Worker::resolve`](crate::worker::Worker::resolve) on) answers solicitations and ARP
//!   requests itself, and reports what it learns as [`NeighEvent`]s
//!   ([`Worker::take_neigh_events`](crate::worker::Worker::take_neigh_events)). A packet whose next hop is unknown
//!   waits in that worker's pending queues (bounded per neighbour and in all) while the worker sends multicast
//!   solicitations (ARP requests for IPv4), one per [`RETRANS_TIMER_NS`], [`MAX_MULTICAST_SOLICIT`] in all
//!   (RFC 4861 §7.2.2, §10); after the last one the queued packets are dropped (`neigh_unresolved`) with an
//!   ICMPv6 address unreachable (ICMPv4 host unreachable) to their sources, as Linux does.
//!   [`Worker::service`](crate::worker::Worker::service) runs these timers and re-processes, in order, the packets
//!   whose neighbour a newer snapshot knows.
//! - The **control thread** feeds the events to a [`NeighTable`], which decides the entries' states and returns
//!   [`Change::NeighSet`] / [`Change::NeighDel`] to publish with the next snapshot; its [`NeighTable::tick`] ages
//!   REACHABLE entries to STALE and probes the STALE ones that were used (DELAY, then up to
//!   [`MAX_UNICAST_SOLICIT`] unicast probes, then the entry is deleted).
//! - **Static** `neigh add` entries live in the snapshot beside the learned ones and always win.

use crate::fib::DevId;
use crate::snapshot::{Change, Snapshot};
use crate::wire::arp::{self, ArpRepr};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::ipv6;
use crate::wire::ndp::{self, Kind, NdRepr};
use std::collections::HashMap;
use std::net::IpAddr;

/// RFC 4861 §10: multicast solicitations sent before giving up on an address.
pub const MAX_MULTICAST_SOLICIT: u8 = 3;
/// RFC 4861 §10: unicast probes of a STALE neighbour before it is deleted.
pub const MAX_UNICAST_SOLICIT: u8 = 3;
/// RFC 4861 §10 RetransTimer: 1 s between solicitations.
pub const RETRANS_TIMER_NS: u64 = 1_000_000_000;
/// RFC 4861 §10 REACHABLE_TIME: 30 s (lwt6 does not randomise it).
pub const REACHABLE_TIME_NS: u64 = 30_000_000_000;
/// RFC 4861 §10 DELAY_FIRST_PROBE_TIME: 5 s.
pub const DELAY_FIRST_PROBE_TIME_NS: u64 = 5_000_000_000;
/// A STALE entry unused for this long is forgotten (Linux `gc_stale_time`, 60 s).
pub const GC_STALE_TIME_NS: u64 = 60_000_000_000;
/// Learned neighbours the table holds at most (Linux `gc_thresh3` for the ND table, 1024): a flood of
/// solicitations from made-up sources cannot grow it, or the snapshots, further.
pub const MAX_LEARNED: usize = 1024;
/// Packets one unresolved neighbour may hold.
pub const QUEUE_PER_NEIGH: usize = 16;
/// Packets all of one worker's pending queues may hold together.
pub const QUEUE_TOTAL: usize = 1024;
/// Unresolved neighbours one worker may be resolving at once.
pub const MAX_PENDING_NEIGHS: usize = 256;

/// What a worker learned about a neighbour, for the control thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighEvent {
    /// A link-layer address seen for `addr`: in a solicitation's source option, an advertisement, an ARP packet.
    Learned {
        /// Device it was seen on.
        dev: DevId,
        /// The neighbour's address.
        addr: IpAddr,
        /// Its link-layer address (`None`: an advertisement without a target link-layer option).
        mac: Option<Mac>,
        /// Reachability confirmed: a solicited advertisement (S flag), an ARP reply.
        confirmed: bool,
        /// The advertisement may replace a different cached address (O flag; always true for ARP and for
        /// solicitations).
        overrides: bool,
    },
    /// A STALE entry was used to forward: the control thread should probe it.
    UsedStale {
        /// Device.
        dev: DevId,
        /// The neighbour's address.
        addr: IpAddr,
    },
}

/// One multicast solicitation per next hop and retransmission interval among the workers of one router
/// ([`Worker::solicit_gate`](crate::worker::Worker::solicit_gate)). Each worker queues the packets it received
/// for an unresolved next hop and runs its own retransmission timer; the gate lets only the first worker whose
/// timer fires in an interval send, so a neighbour gets [`MAX_MULTICAST_SOLICIT`] solicitations, as from Linux,
/// not that many per worker. A worker whose turn was taken counts the solicitation as made (its packets wait for
/// the same answer). A lock is taken per solicitation due, never per packet.
#[derive(Debug, Default)]
pub struct SolicitGate {
    /// When each next hop's last multicast solicitation went (ns).
    sent: std::sync::Mutex<HashMap<(DevId, IpAddr), u64>>,
}

impl SolicitGate {
    /// Whether the caller sends `key`'s solicitation at `now` (then recorded): no other one went less than
    /// [`RETRANS_TIMER_NS`] before. Entries older than a whole resolution are forgotten once the map is large.
    pub fn claim(&self, key: (DevId, IpAddr), now: u64) -> bool {
        let Ok(mut m) = self.sent.lock() else {
            return true;
        };
        if let Some(&at) = m.get(&key)
            && now < at.saturating_add(RETRANS_TIMER_NS)
        {
            return false;
        }
        if m.len() >= 4 * MAX_PENDING_NEIGHS {
            let life = RETRANS_TIMER_NS * (MAX_MULTICAST_SOLICIT as u64 + 1);
            m.retain(|_, at| now.saturating_sub(*at) < life);
        }
        m.insert(key, now);
        true
    }

    /// Whether a multicast solicitation for `key` went at most one whole resolution
    /// ([`MAX_MULTICAST_SOLICIT`] + 1 retransmission intervals) before `now`: an advertisement for it answers the
    /// router's own question.
    pub fn solicited(&self, key: (DevId, IpAddr), now: u64) -> bool {
        let life = RETRANS_TIMER_NS * (MAX_MULTICAST_SOLICIT as u64 + 1);
        self.sent
            .lock()
            .is_ok_and(|m| m.get(&key).is_some_and(|&at| now.saturating_sub(at) < life))
    }
}

/// Writes into `out` a solicitation for `target` out of `dev`: for IPv6 a Neighbor Solicitation (RFC 4861 §7.2.2:
/// to the solicited-node group, or to `unicast` when probing a known neighbour; source link-layer option; from
/// `dev`'s link-local address as Linux sends it for forwarded packets, else the address selected on `dev` for the
/// target), for IPv4 an ARP request (broadcast, or to `unicast`; sender address: `dev`'s
/// address on the target's subnet, else its first). Returns false (and writes nothing usable) when `dev` has no
/// address to send it from.
pub fn solicitation(
    snap: &Snapshot,
    dev: DevId,
    target: IpAddr,
    unicast: Option<Mac>,
    out: &mut Vec<u8>,
) -> bool {
    let link = &snap.links[dev];
    const E: usize = ethernet::HEADER_LEN;
    match target {
        IpAddr::V6(t) => {
            let link_local = link
                .addrs6
                .iter()
                .map(|(a, _)| *a)
                .find(|a| a.segments()[0] & 0xffc0 == 0xfe80);
            let Some(src) = link_local.or_else(|| snap.source_for(Some(dev), &t)) else {
                return false;
            };
            let (dst, dst_mac) = match unicast {
                Some(m) => (t, m),
                None => {
                    let g = ndp::solicited_node(&t);
                    (g, ndp::multicast_mac(&g))
                }
            };
            let nd = NdRepr {
                kind: Kind::Solicit,
                flags: 0,
                target: t,
                lladdr: Some(link.mac),
            };
            out.clear();
            out.resize(E + ipv6::HEADER_LEN + nd.icmp_len(), 0);
            EthernetRepr {
                dst: dst_mac,
                src: link.mac,
                ethertype: ethernet::ETHERTYPE_IPV6,
            }
            .emit(out);
            nd.emit(&mut out[E..], src, dst);
            true
        }
        IpAddr::V4(t) => {
            let in_subnet = |(a, len): &(std::net::Ipv4Addr, u8)| {
                let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
                u32::from(*a) & mask == u32::from(t) & mask
            };
            let Some(&(src, _)) = link
                .addrs4
                .iter()
                .find(|a| in_subnet(a))
                .or(link.addrs4.first())
            else {
                return false;
            };
            out.clear();
            out.resize(E + arp::LEN, 0);
            EthernetRepr {
                dst: unicast.unwrap_or([0xff; 6]),
                src: link.mac,
                ethertype: arp::ETHERTYPE_ARP,
            }
            .emit(out);
            ArpRepr {
                op: arp::OP_REQUEST,
                sender_mac: link.mac,
                sender_ip: src,
                target_mac: [0; 6],
                target_ip: t,
            }
            .emit(&mut out[E..]);
            true
        }
    }
}

/// The reachability state of a learned neighbour (RFC 4861 §7.3.2; INCOMPLETE lives in the workers' pending
/// queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Confirmed recently; becomes STALE at the time given.
    Reachable {
        /// When it goes stale (ns).
        until: u64,
    },
    /// Unconfirmed since the time given; usable, probed once used, forgotten after [`GC_STALE_TIME_NS`] unused.
    Stale {
        /// When it became STALE (ns).
        since: u64,
    },
    /// Used while STALE; the first probe is sent at the time given unless confirmed first.
    Delay {
        /// When the first probe goes (ns).
        until: u64,
    },
    /// Being probed by unicast solicitations.
    Probe {
        /// Probes sent.
        sent: u8,
        /// When the next is due (ns).
        next: u64,
    },
}

/// A learned neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Link-layer address.
    pub mac: Mac,
    /// State.
    pub state: State,
}

/// The control thread's table of learned neighbours: events in, snapshot changes (and probes) out.
#[derive(Debug, Clone, Default)]
pub struct NeighTable {
    entries: HashMap<(DevId, IpAddr), Entry>,
    /// Unicast probes sent (by [`NeighTable::tick`]).
    pub probes_sent: u64,
    /// New neighbours not learned because the table held [`MAX_LEARNED`] entries it keeps.
    pub refused: u64,
    /// Unconfirmed, unused entries forgotten to make room for an answer to the router's own solicitation.
    pub evicted: u64,
    /// The routers' solicitations (the workers' [`SolicitGate`]): a full table makes room for an advertisement
    /// only when it answers one. `None`: for any solicited advertisement (the S flag).
    pub solicited: Option<std::sync::Arc<SolicitGate>>,
}

/// What one [`NeighTable::tick`] asks for: changes to publish and probe frames to send `(device, frame)`.
#[derive(Debug, Clone, Default)]
pub struct Tick {
    /// Changes to apply to the snapshot and publish.
    pub changes: Vec<Change>,
    /// Frames to send.
    pub frames: Vec<(DevId, Vec<u8>)>,
}

impl NeighTable {
    /// The entry for `addr` on `dev`.
    pub fn get(&self, dev: DevId, addr: IpAddr) -> Option<&Entry> {
        self.entries.get(&(dev, addr))
    }

    /// Every learned neighbour, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = ((DevId, IpAddr), Entry)> + '_ {
        self.entries.iter().map(|(k, e)| (*k, *e))
    }

    /// How many neighbours are learned.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no neighbour is learned.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes in one event at time `now` (ns); the changes to publish, if the snapshot's view changes, are pushed
    /// to `out`.
    /// Addresses with a static entry in `snap` are left alone (static wins). RFC 4861 §7.2.5 / §7.2.3: a confirmed
    /// advertisement makes the entry REACHABLE (and replaces its address only with the O flag, or when it had
    /// none); an unconfirmed one with a new address makes it STALE; the same address changes nothing.
    ///
    /// A full table ([`MAX_LEARNED`]) cannot be filled against the router's own next hops: a new neighbour is
    /// refused (counted in [`NeighTable::refused`]) unless it is a confirmed answer to the router's solicitation
    /// ([`NeighTable::solicited`]); then the STALE entry unused for longest (learned from a solicitation or an
    /// unsolicited advertisement and never used since: what a flood of made-up sources leaves) is forgotten to
    /// make room (counted in [`NeighTable::evicted`]). Entries in use (REACHABLE, DELAY, PROBE) are never evicted.
    pub fn learn(&mut self, snap: &Snapshot, ev: &NeighEvent, now: u64, out: &mut Vec<Change>) {
        if let Some(c) = self.learn_one(snap, ev, now, out) {
            out.push(c);
        }
    }

    /// Makes room for a solicited answer about `key` in a full table: forgets the oldest unused STALE entry.
    fn evict_for(&mut self, key: (DevId, IpAddr), now: u64, out: &mut Vec<Change>) -> bool {
        if self
            .solicited
            .as_ref()
            .is_some_and(|g| !g.solicited(key, now))
        {
            return false;
        }
        let victim = self
            .entries
            .iter()
            .filter_map(|(k, e)| match e.state {
                State::Stale { since } => Some((since, *k)),
                _ => None,
            })
            .min();
        let Some((_, (dev, addr))) = victim else {
            return false;
        };
        self.entries.remove(&(dev, addr));
        self.evicted += 1;
        out.push(Change::NeighDel { dev, addr });
        true
    }

    fn learn_one(
        &mut self,
        snap: &Snapshot,
        ev: &NeighEvent,
        now: u64,
        out: &mut Vec<Change>,
    ) -> Option<Change> {
        match *ev {
            NeighEvent::UsedStale { dev, addr } => {
                if let Some(e) = self.entries.get_mut(&(dev, addr))
                    && matches!(e.state, State::Stale { .. })
                {
                    e.state = State::Delay {
                        until: now.saturating_add(DELAY_FIRST_PROBE_TIME_NS),
                    };
                }
                None
            }
            NeighEvent::Learned {
                dev,
                addr,
                mac,
                confirmed,
                overrides,
            } => {
                let is_static = match addr {
                    IpAddr::V6(a) => snap.neigh6.contains_key(&(dev, a)),
                    IpAddr::V4(a) => snap.neigh4.contains_key(&(dev, a)),
                };
                if is_static {
                    return None;
                }
                let reachable = State::Reachable {
                    until: now.saturating_add(REACHABLE_TIME_NS),
                };
                let set = |mac, stale| Change::NeighSet {
                    dev,
                    addr,
                    mac,
                    stale,
                };
                match self.entries.get_mut(&(dev, addr)) {
                    None => {
                        let mac = mac?;
                        if self.entries.len() >= MAX_LEARNED
                            && !(confirmed && self.evict_for((dev, addr), now, out))
                        {
                            self.refused += 1;
                            return None;
                        }
                        let state = if confirmed {
                            reachable
                        } else {
                            State::Stale { since: now }
                        };
                        self.entries.insert((dev, addr), Entry { mac, state });
                        Some(set(mac, !confirmed))
                    }
                    Some(e) => {
                        let new_mac = mac.filter(|m| *m != e.mac);
                        match (confirmed, new_mac) {
                            (true, Some(_)) if !overrides => {
                                // §7.2.5: a different address without O does not replace; a REACHABLE entry
                                // becomes STALE.
                                if matches!(e.state, State::Reachable { .. }) {
                                    e.state = State::Stale { since: now };
                                    return Some(set(e.mac, true));
                                }
                                None
                            }
                            (true, m) => {
                                let was_stale = !matches!(e.state, State::Reachable { .. });
                                e.state = reachable;
                                if let Some(m) = m {
                                    e.mac = m;
                                    return Some(set(m, false));
                                }
                                was_stale.then(|| set(e.mac, false))
                            }
                            (false, Some(m)) => {
                                e.mac = m;
                                e.state = State::Stale { since: now };
                                Some(set(m, true))
                            }
                            (false, None) => None,
                        }
                    }
                }
            }
        }
    }

    /// Runs the timers at `now` (ns): REACHABLE entries past their time become STALE; STALE entries unused for
    /// [`GC_STALE_TIME_NS`] are deleted; DELAY entries past their time send their first unicast probe; PROBE
    /// entries send the next, or are deleted after [`MAX_UNICAST_SOLICIT`] unanswered probes.
    pub fn tick(&mut self, snap: &Snapshot, now: u64) -> Tick {
        let mut t = Tick::default();
        let mut gone = Vec::new();
        for (&(dev, addr), e) in self.entries.iter_mut() {
            let probe = match e.state {
                State::Reachable { until } if now >= until => {
                    e.state = State::Stale { since: now };
                    t.changes.push(Change::NeighSet {
                        dev,
                        addr,
                        mac: e.mac,
                        stale: true,
                    });
                    false
                }
                State::Stale { since } if now >= since.saturating_add(GC_STALE_TIME_NS) => {
                    gone.push((dev, addr));
                    false
                }
                State::Delay { until } if now >= until => {
                    e.state = State::Probe {
                        sent: 1,
                        next: now.saturating_add(RETRANS_TIMER_NS),
                    };
                    true
                }
                State::Probe { sent, next } if now >= next => {
                    if sent >= MAX_UNICAST_SOLICIT {
                        gone.push((dev, addr));
                        false
                    } else {
                        e.state = State::Probe {
                            sent: sent + 1,
                            next: now.saturating_add(RETRANS_TIMER_NS),
                        };
                        true
                    }
                }
                _ => false,
            };
            if probe {
                let mut f = Vec::new();
                if solicitation(snap, dev, addr, Some(e.mac), &mut f) {
                    t.frames.push((dev, f));
                    self.probes_sent += 1;
                }
            }
        }
        for (dev, addr) in gone {
            self.entries.remove(&(dev, addr));
            t.changes.push(Change::NeighDel { dev, addr });
        }
        t
    }
}
