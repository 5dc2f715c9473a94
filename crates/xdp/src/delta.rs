//! The maps' changes derived from the snapshot's route changes, so that a route added, removed or replaced costs
//! a few map updates instead of a walk of the FIB ([`tables`](crate::tables::tables)) and of every map entry
//! ([`Tier::install`]).
//!
//! [`routes`] says, for the published changes ([`Change`]s, as `SnapshotHandle::changes_since` gives them), the
//! new driver state of every IPv6 prefix they reach: the changed route's prefix, and the prefixes of the tunnel
//! routes whose plans the change made anew (a seg6 route whose first SID routes through the changed prefix).
//! [`Tier::update`] writes them with the same order as a full installation: new plans first, then the LPM
//! entries, then the plans no route names are freed once no running program can hold them.
//!
//! What is not a main-table IPv6 route change (a neighbour, an IPv4 route, a table End.DT6 looks up, a whole
//! snapshot) is left to the full installation: [`routes`] or [`Tier::update`] says `None`.

use crate::layout::{F_TABLE, NO_PLAN, PlanEntry, RouteValue, Why};
use crate::tables::{Unplanned, plan_entry, unplanned};
use crate::tier::{Error, Installed, Tier};
use aya::maps::MapData;
use aya::maps::lpm_trie::{Key, LpmTrie};
use ipnet::{IpNet, Ipv6Net};
use lwt6_dataplane::snapshot::{Change, Snapshot};
use lwt6_dataplane::spec::MAIN_TABLE;
use std::collections::BTreeMap;

/// A prefix's new state in the driver: `Some(Ok(plan))` executed there, `Some(Err(why))` in the `routes` map but
/// handed to the worker, `None` no entry (no route).
pub type RouteState = Option<Result<PlanEntry, Why>>;

/// The new state of every IPv6 prefix of the main table that `changes` (applied to the snapshot `snap` holds
/// already) reach, in prefix order; `None` when one of them is not a main-table IPv6 route change (see the module
/// documentation): the caller installs the whole [`tables`](crate::tables::tables) instead.
///
/// `ways` are the routes planned for the driver alone that the tier holds ([`Tier::way_routes`]): their entries
/// follow the route to their first SID without a snapshot plan the changes would name, so each is looked at
/// again; a change that makes another prefix such a route returns `None` too.
pub fn routes(
    snap: &Snapshot,
    changes: &[Change],
    ways: &[Ipv6Net],
) -> Option<Vec<(Ipv6Net, RouteState)>> {
    let mut dirty: BTreeMap<Ipv6Net, ()> = BTreeMap::new();
    if !changes.is_empty() {
        dirty.extend(ways.iter().map(|n| (*n, ())));
    }
    for c in changes {
        let (prefix, table) = match c {
            Change::AddRoute(r) | Change::ReplaceRoute(r) => (r.prefix, r.table),
            Change::DelRoute { prefix, table, .. } => (*prefix, *table),
            Change::AddReject { prefix, .. } => (*prefix, MAIN_TABLE),
            _ => return None,
        };
        // Other tables are End.DT6's (the `vrf` map, filled by the full installation) or nobody's.
        if table != MAIN_TABLE {
            return None;
        }
        let IpNet::V6(p) = prefix.trunc() else {
            return None;
        };
        dirty.insert(p, ());
        for t in snap.tunnel_routes_within(prefix) {
            if let IpNet::V6(t) = t {
                dirty.insert(t, ());
            }
        }
    }
    dirty
        .into_keys()
        .map(|net| Some((net, state(snap, &net, ways)?)))
        .collect()
}

/// What [`tables`](crate::tables::tables) gives prefix `net`: one of the router's addresses (a /128) is local,
/// else the plan of its lowest-metric route, or why it has none; `None` (install whole) for a route planned for
/// the driver alone (seg6 l2encap: [`Unplanned::Way`]) that is not one of `ways` (the full tables count it).
fn state(snap: &Snapshot, net: &Ipv6Net, ways: &[Ipv6Net]) -> Option<RouteState> {
    if net.prefix_len() == 128
        && snap
            .links
            .iter()
            .any(|l| l.addrs6.iter().any(|(a, _)| *a == net.addr()))
    {
        return Some(Some(Err(Why::Local)));
    }
    let Some(r) = snap.fib().first_v6(*net) else {
        return Some(None);
    };
    Some(Some(match r.plan {
        None => match unplanned(snap, r) {
            Unplanned::Dt6(e, _) => Ok(e),
            Unplanned::Way(w) if ways.contains(net) => w,
            Unplanned::Way(_) => return None,
            Unplanned::No(why) => Err(why),
        },
        Some(id) => snap
            .plan(id)
            .ok_or(Why::NoPlan)
            .and_then(|plan| plan_entry(snap, plan, snap.template(plan))),
    }))
}

impl Tier {
    /// The IPv6 routes planned for the driver alone (seg6 l2encap, l2encap.red) as of the last full installation:
    /// [`routes`] looks at each again at every change.
    pub fn way_routes(&self) -> &[Ipv6Net] {
        &self.ways6
    }

    /// Writes the new states of `routes` (from [`routes`]) without a torn plan, as [`Tier::install`] does: plans
    /// not in the `plans` array yet are written into free slots, then the LPM entries are set or removed (a packet
    /// finds the old value or the new one, each naming a complete plan), then the slots no route names any more
    /// are freed after the programs that might hold them have finished. Cost: a few map updates per prefix.
    ///
    /// `Ok(None)`, with nothing changed, when the update must be a full installation: a route that is or was
    /// End.DT6 (its table's routes are in the `vrf` map), a `vrf` map holding the main table, or IPv4 routes
    /// whose entries only the full tables follow ([`Tables::ways4`](crate::tables::Tables::ways4)).
    pub fn update(&mut self, routes: &[(Ipv6Net, RouteState)]) -> Result<Option<Installed>, Error> {
        let table_plan =
            |s: &Self, v: Option<&RouteValue>| v.is_some_and(|v| s.table_slots.contains(&v.plan));
        if self.ways4 > 0
            || self.vrf_tables.contains(&MAIN_TABLE)
            || routes.iter().any(|(net, st)| {
                matches!(st, Some(Ok(p)) if p.flags & F_TABLE != 0)
                    || table_plan(self, self.routes.get(net).as_ref())
            })
        {
            return Ok(None);
        }
        let mut done = Installed::default();
        // 1. Plans.
        let mut want = Vec::with_capacity(routes.len());
        for (net, st) in routes {
            let v = match st {
                None => None,
                Some(Err(why)) => Some(RouteValue {
                    plan: NO_PLAN,
                    why: *why as u32,
                }),
                Some(Ok(p)) => {
                    let (slot, new) = self.slot_for(p)?;
                    done.plans_written += usize::from(new);
                    Some(RouteValue { plan: slot, why: 0 })
                }
            };
            if let Some(v) = v
                && v.plan != NO_PLAN
            {
                *self.refs.entry(v.plan).or_default() += 1;
            }
            want.push((net, v));
        }
        // 2. LPM entries.
        let mut lpm: LpmTrie<&mut MapData, [u8; 16], RouteValue> =
            LpmTrie::try_from(self.ebpf.map_mut("routes").ok_or(Error::Map {
                map: "routes",
                err: "not in the object".into(),
            })?)
            .map_err(|e| Error::Map {
                map: "routes",
                err: e.to_string(),
            })?;
        let mut unref = Vec::new();
        for (net, v) in want {
            let key = Key::new(u32::from(net.prefix_len()), net.network().octets());
            let old = self.routes.get(net);
            match v {
                Some(v) if old != Some(v) => {
                    lpm.insert(&key, v, 0).map_err(|e| Error::Map {
                        map: "routes",
                        err: e.to_string(),
                    })?;
                    self.routes.set(*net, v);
                    done.routes_set += 1;
                }
                Some(_) => {}
                None => {
                    if old.is_some() {
                        lpm.remove(&key).map_err(|e| Error::Map {
                            map: "routes",
                            err: e.to_string(),
                        })?;
                        self.routes.remove(net);
                        done.routes_removed += 1;
                    }
                }
            }
            if let Some(o) = old
                && o.plan != NO_PLAN
            {
                unref.push(o.plan);
            }
        }
        // 3. Slots no route names any more.
        let mut gone = Vec::new();
        for s in unref {
            if let Some(n) = self.refs.get_mut(&s) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.refs.remove(&s);
                    gone.push(s);
                }
            }
        }
        self.free_slots(&gone)?;
        done.slots_freed = gone.len();
        Ok(Some(done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tables;
    use lwt6_dataplane::snapshot::{SnapshotHandle, SnapshotWriter};
    use std::collections::HashMap;
    use std::sync::Arc;

    /// The full tables as prefix → state (plans by content, not by slot).
    fn resolved(snap: &Snapshot) -> HashMap<Ipv6Net, Result<PlanEntry, Why>> {
        let t = tables(snap);
        t.routes
            .iter()
            .map(|(net, v)| {
                let st = match t.plans.get(v.plan as usize) {
                    Some(p) => Ok(*p),
                    None => Err(Why::ALL
                        .into_iter()
                        .find(|w| *w as u32 == v.why)
                        .expect("a reason")),
                };
                (*net, st)
            })
            .collect()
    }

    const BASE: &str = "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
        addr add fd00:1::2/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
        neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\nneigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1\n\
        -6 route add fc00::/16 via fd00:2::2 dev r1\n\
        -6 route add 2001:db8:1::/48 encap seg6 mode encap segs fc00::1 dev r1\n\
        -6 route add 2001:db8:2::/48 encap seg6 mode encap segs fc00:5::1 dev r1\n\
        -6 route add 2001:db8:3::/48 via fd00:2::3 dev r1\n";

    fn change(line: &str) -> Change {
        let cfg = lwt6_config::parse(&format!("{BASE}{line}\n")).expect("parses");
        let r = cfg.routes.last().expect("a route").clone();
        if line.contains("replace") {
            Change::ReplaceRoute(r)
        } else {
            Change::AddRoute(r)
        }
    }

    fn del(prefix: &str, metric: u32) -> Change {
        Change::DelRoute {
            prefix: prefix.parse().expect("a prefix"),
            metric,
            table: MAIN_TABLE,
            line: 0,
        }
    }

    /// Applies `changes` through the writer and checks that the full tables before, with the states [`routes`]
    /// derives from the journal, are the full tables after.
    fn check(batches: &[Vec<Change>]) {
        let cfg = lwt6_config::parse(BASE).expect("parses");
        let handle = Arc::new(SnapshotHandle::new(Snapshot::build(&cfg).expect("builds")));
        handle.follow_changes();
        let mut w = SnapshotWriter::new(Arc::clone(&handle));
        let mut have = resolved(&handle.load());
        let ways = tables(&handle.load()).ways6;
        let mut since = handle.generation();
        for b in batches {
            w.apply(b).expect("the changes apply");
            let (now, changes) = handle.changes_since(since);
            since = now;
            let changes = changes.expect("the journal has every change");
            assert_eq!(&changes, b);
            let snap = handle.load();
            for (net, st) in routes(&snap, &changes, &ways).expect("route changes") {
                match st {
                    Some(st) => have.insert(net, st),
                    None => have.remove(&net),
                };
            }
            let want = resolved(&snap);
            let mut diff: Vec<_> = want
                .iter()
                .filter(|(n, v)| have.get(n) != Some(v))
                .map(|(n, _)| *n)
                .chain(have.keys().filter(|n| !want.contains_key(n)).copied())
                .collect();
            diff.sort();
            assert!(diff.is_empty(), "after {b:?}: differs at {diff:?}");
        }
    }

    #[test]
    fn route_changes_give_the_full_tables() {
        check(&[
            vec![change("-6 route add 2001:db8:4::/48 via fd00:2::2 dev r1")],
            vec![change(
                "-6 route add 2001:db8:5::/48 encap seg6 mode inline segs fc00::9 dev r1",
            )],
            // A second route of a prefix with a higher metric: the first stays.
            vec![change(
                "-6 route add 2001:db8:4::/48 via fd00:2::3 dev r1 metric 2000",
            )],
            vec![del("2001:db8:4::/48", 1024)],
            vec![change(
                "-6 route replace 2001:db8:3::/48 encap seg6 mode encap segs fc00::2 dev r1",
            )],
            // The route the SIDs of two tunnels route through: their plans are made anew.
            vec![change("-6 route replace fc00::/16 via fd00:2::3 dev r1")],
            vec![
                change("-6 route add fc00:5::/32 via fd00:2::2 dev r1"),
                change("-6 route add 2001:db8:6::/48 via fd00:9::1 dev r1"),
            ],
            vec![del("fc00::/16", 1024)],
            // One of the router's addresses: stays local with or without a route.
            vec![change("-6 route add fd00:2::1/128 via fd00:2::2 dev r1")],
            vec![del("fd00:2::1/128", 1024), del("2001:db8:1::/48", 1024)],
        ]);
    }

    #[test]
    fn other_changes_ask_for_the_full_tables() {
        let snap = Snapshot::build(&lwt6_config::parse(BASE).expect("parses")).expect("builds");
        let neigh = Change::NeighDel {
            dev: 1,
            addr: "fd00:2::2".parse().expect("an address"),
        };
        assert!(routes(&snap, &[neigh], &[]).is_none());
        let v4 = Change::DelRoute {
            prefix: "10.0.0.0/8".parse().expect("a prefix"),
            metric: 0,
            table: MAIN_TABLE,
            line: 0,
        };
        assert!(routes(&snap, &[v4], &[]).is_none());
        let mut other = del("2001:db8:1::/48", 1024);
        if let Change::DelRoute { table, .. } = &mut other {
            *table = 100;
        }
        assert!(routes(&snap, &[other], &[]).is_none());
    }

    /// seg6 l2encap routes have no snapshot plan to follow the route to their first SID: the full tables list
    /// them, a change looks at each of them again (its new entry is the full tables'), and a change making a
    /// prefix such a route asks for the full tables.
    #[test]
    fn l2encap_routes_follow_the_route_to_their_first_sid() {
        let l2 = "-6 route add 2001:db8:7::/48 encap seg6 mode l2encap segs fc00::7 dev r1";
        let l2net: Ipv6Net = "2001:db8:7::/48".parse().expect("a prefix");
        let snap = Snapshot::build(&lwt6_config::parse(BASE).expect("parses")).expect("builds");
        assert!(tables(&snap).ways6.is_empty());
        let text = format!("{BASE}{l2}\n");
        let with = Snapshot::build(&lwt6_config::parse(&text).expect("parses")).expect("builds");
        let ways = tables(&with).ways6;
        assert_eq!(ways, vec![l2net]);
        // Its first SID's route replaced: the full tables give it a new entry (a new next hop) ...
        let next = change("-6 route replace fc00::/16 via fd00:2::3 dev r1");
        let text = text.replace(
            "route add fc00::/16 via fd00:2::2",
            "route add fc00::/16 via fd00:2::3",
        );
        let after = Snapshot::build(&lwt6_config::parse(&text).expect("parses")).expect("builds");
        let want = resolved(&after).get(&l2net).copied();
        assert_ne!(resolved(&with).get(&l2net).copied(), want);
        // ... which the changes give too, because the l2encap route is looked at again.
        let reached = routes(&after, std::slice::from_ref(&next), &ways).expect("route changes");
        let got = reached.iter().find(|(n, _)| *n == l2net).map(|(_, st)| *st);
        assert_eq!(got, Some(want));
        // Without the list it would be missed (why the list exists).
        let blind = routes(&after, std::slice::from_ref(&next), &[]).expect("route changes");
        assert!(blind.iter().all(|(n, _)| *n != l2net));
        // A new l2encap route: the full tables.
        assert!(routes(&with, &[change(l2)], &[]).is_none());
    }

    #[test]
    fn the_journal_is_lost_with_a_whole_snapshot() {
        let cfg = lwt6_config::parse(BASE).expect("parses");
        let handle = Arc::new(SnapshotHandle::new(Snapshot::build(&cfg).expect("builds")));
        handle.follow_changes();
        let since = handle.generation();
        let mut w = SnapshotWriter::new(Arc::clone(&handle));
        w.apply(&[change("-6 route add 2001:db8:4::/48 via fd00:2::2 dev r1")])
            .expect("applies");
        handle.publish(Snapshot::build(&cfg).expect("builds"));
        let (now, c) = handle.changes_since(since);
        assert_eq!((now, c), (since + 2, None));
        // From there on it holds the changes again.
        w = SnapshotWriter::new(Arc::clone(&handle));
        let b = vec![del("2001:db8:3::/48", 1024)];
        w.apply(&b).expect("applies");
        assert_eq!(handle.changes_since(now), (now + 1, Some(b)));
        // Asked from a generation it was not taken at: lost.
        assert_eq!(handle.changes_since(now).1, None);
    }

    #[test]
    fn the_journal_keeps_at_most_journal_max_changes() {
        use lwt6_dataplane::snapshot::JOURNAL_MAX;
        let cfg = lwt6_config::parse(BASE).expect("parses");
        let handle = Arc::new(SnapshotHandle::new(Snapshot::build(&cfg).expect("builds")));
        handle.follow_changes();
        let mut w = SnapshotWriter::new(Arc::clone(&handle));
        let Change::AddRoute(r) = change("-6 route add 2001:db8:4::/48 via fd00:2::2 dev r1")
        else {
            unreachable!("an addition")
        };
        let adds = |from: usize, n: usize| -> Vec<Change> {
            (from..from + n)
                .map(|i| {
                    let mut r = r.clone();
                    r.prefix = format!("3000:{:x}:{:x}::/64", i >> 16, i & 0xffff)
                        .parse()
                        .expect("a prefix");
                    Change::AddRoute(r)
                })
                .collect()
        };
        let since = handle.generation();
        w.apply(&adds(0, JOURNAL_MAX)).expect("applies");
        let (now, c) = handle.changes_since(since);
        assert_eq!(c.map(|c| c.len()), Some(JOURNAL_MAX));
        w.apply(&adds(JOURNAL_MAX, JOURNAL_MAX)).expect("applies");
        w.apply(&adds(2 * JOURNAL_MAX, 1)).expect("applies");
        assert_eq!(handle.changes_since(now), (now + 2, None));
    }
}
