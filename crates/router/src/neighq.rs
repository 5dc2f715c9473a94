//! The neighbour events on their way from the workers to the control thread, coalesced per neighbour (device,
//! address): however many solicitations a flood brings between two turns of the control thread (50 ms), the
//! queue holds at most one event of each kind per neighbour and at most [`MAX_NEIGHBOURS`] neighbours, so its
//! memory is bounded (a few hundred kilobytes) whatever comes.
//!
//! Coalescing keeps what the table needs: for one neighbour in one interval the latest link-layer address seen
//! wins, and a confirmation (a solicited advertisement, an ARP reply) of that address is kept even when an
//! unconfirmed sighting of it came after; "used while STALE" is kept once. Past [`MAX_NEIGHBOURS`] different
//! neighbours, unconfirmed sightings are dropped (counted: `neigh_events_dropped`); confirmations, the answers to
//! the router's own solicitations, have [`RESERVED`] more places.

use crate::clients::ControlCounters;
use lwt6_dataplane::fib::DevId;
use lwt6_dataplane::neigh::{MAX_LEARNED, NeighEvent};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// Different neighbours the queue holds at most between two takes (for unconfirmed sightings).
pub const MAX_NEIGHBOURS: usize = 4 * MAX_LEARNED;
/// Places past [`MAX_NEIGHBOURS`] kept for confirmations.
pub const RESERVED: usize = MAX_LEARNED;

/// The queue: the workers deposit, the control thread takes.
#[derive(Debug, Default)]
pub struct NeighInbox {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    events: Vec<NeighEvent>,
    /// Where each neighbour's event is in `events`, by (used-stale?, device, address).
    at: HashMap<(bool, DevId, IpAddr), usize>,
    dropped: u64,
}

/// `next` merged into `prev`, both `Learned` about the same neighbour.
fn merge(prev: &mut NeighEvent, next: &NeighEvent) {
    if let (
        NeighEvent::Learned {
            mac: pm,
            confirmed: pc,
            overrides: po,
            ..
        },
        NeighEvent::Learned {
            mac: nm,
            confirmed: nc,
            overrides: no,
            ..
        },
    ) = (&mut *prev, next)
    {
        if nm.is_none() || *nm == *pm {
            // Nothing new about the address: keep a confirmation of it.
            *pm = pm.or(*nm);
            *pc |= *nc;
            *po |= *no;
        } else if pm.is_none() {
            *pm = *nm;
            *pc |= *nc;
            *po |= *no;
        } else {
            // Another address: the latest wins.
            *prev = *next;
        }
    }
}

impl NeighInbox {
    /// Adds what a worker learned.
    pub fn deposit(&self, events: &[NeighEvent]) {
        let Ok(mut q) = self.inner.lock() else {
            return;
        };
        let q = &mut *q;
        for e in events {
            let (key, confirmed) = match *e {
                NeighEvent::Learned {
                    dev,
                    addr,
                    confirmed,
                    ..
                } => ((false, dev, addr), confirmed),
                NeighEvent::UsedStale { dev, addr } => ((true, dev, addr), false),
            };
            if let Some(&i) = q.at.get(&key) {
                merge(&mut q.events[i], e);
                continue;
            }
            let room = if confirmed {
                MAX_NEIGHBOURS + RESERVED
            } else {
                MAX_NEIGHBOURS
            };
            if q.events.len() >= room {
                q.dropped += 1;
                continue;
            }
            q.at.insert(key, q.events.len());
            q.events.push(*e);
        }
    }

    /// Takes what was deposited, in the order the neighbours first came; the events dropped since the last take
    /// are added to `counters`.
    pub fn take(&self, counters: &ControlCounters) -> Vec<NeighEvent> {
        let Ok(mut q) = self.inner.lock() else {
            return Vec::new();
        };
        if q.dropped > 0 {
            counters
                .neigh_events_dropped
                .fetch_add(q.dropped, Ordering::Relaxed);
            q.dropped = 0;
        }
        q.at.clear();
        if q.at.capacity() > 2 * (MAX_NEIGHBOURS + RESERVED) {
            q.at.shrink_to(MAX_NEIGHBOURS);
        }
        std::mem::take(&mut q.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(addr: &str, mac: u8, confirmed: bool) -> NeighEvent {
        NeighEvent::Learned {
            dev: 1,
            addr: addr.parse().unwrap(),
            mac: Some([2, 0, 0, 0, 0, mac]),
            confirmed,
            overrides: true,
        }
    }

    #[test]
    fn a_flood_is_bounded_and_counted_and_confirmations_still_pass() {
        let q = NeighInbox::default();
        let c = ControlCounters::default();
        // 10 rounds of 4,096 different sources, as a flood of spoofed solicitations brings them.
        for round in 0..10u32 {
            let evs: Vec<_> = (0..4096u32)
                .map(|i| learned(&format!("fd00:2::{:x}:{:x}", round + 1, i + 1), 9, false))
                .collect();
            q.deposit(&evs);
        }
        q.deposit(&[learned("fd00:2::2", 2, true)]);
        let got = q.take(&c);
        assert_eq!(got.len(), MAX_NEIGHBOURS + 1);
        assert_eq!(
            c.neigh_events_dropped.load(Ordering::Relaxed),
            10 * 4096 - MAX_NEIGHBOURS as u64
        );
        assert_eq!(got.last(), Some(&learned("fd00:2::2", 2, true)));
        assert!(q.take(&c).is_empty());
    }

    #[test]
    fn one_event_per_neighbour_keeping_the_confirmation_and_the_latest_address() {
        let q = NeighInbox::default();
        let c = ControlCounters::default();
        q.deposit(&[
            learned("fd00:2::2", 2, true),
            learned("fd00:2::2", 2, false),
            learned("fd00:2::3", 3, false),
            learned("fd00:2::3", 4, false),
            NeighEvent::UsedStale {
                dev: 1,
                addr: "fd00:2::3".parse().unwrap(),
            },
            NeighEvent::UsedStale {
                dev: 1,
                addr: "fd00:2::3".parse().unwrap(),
            },
        ]);
        let got = q.take(&c);
        assert_eq!(
            got,
            vec![
                learned("fd00:2::2", 2, true),
                learned("fd00:2::3", 4, false),
                NeighEvent::UsedStale {
                    dev: 1,
                    addr: "fd00:2::3".parse().unwrap()
                },
            ]
        );
    }
}
