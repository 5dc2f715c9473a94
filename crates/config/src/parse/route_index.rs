//! The parser's route index: a route's identity (table, prefix, metric) → its position in the configuration's
//! list, ordered, so that a prefix's metrics and a table's routes are ranges.
//!
//! Entries live in one vector sorted by key, as of the last large transaction, plus a tree of the changes made
//! since. The vector is one block: from 128 KiB up a mapping of its own (`lwt6_io::heap::map_large_blocks`), that
//! goes back to the system whole when it is replaced. A tree holding the whole index instead is made of small nodes
//! (368 bytes for 11 routes); rebuilt after a large deletion, they fill the holes the deletion left all over the
//! heap, one or two per page, and keep those pages resident (on 20,000 routes that added and deleted 100,000,
//! about 120 such pages: docs/BENCHMARKS.md, *Memory per route*). Small requests only touch the tree: no request
//! copies the vector unless it changed at least an eighth of the index itself ([`RouteIndex::compact`]).

use super::RouteKey;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

/// Changes from which a merge is worth its pass over the index.
pub(super) const MERGE_MIN: usize = 1024;

/// The route index (see the module's documentation).
#[derive(Debug, Default)]
pub(super) struct RouteIndex {
    /// Entries as of the last merge, sorted by key, one per key.
    sorted: Vec<(RouteKey, u32)>,
    /// Changes since: a key set to a position (`Some`) or removed from `sorted` (`None`).
    changed: BTreeMap<RouteKey, Option<u32>>,
    /// Keys in the index.
    len: usize,
}

impl RouteIndex {
    /// An index of `entries`, in any order; of equal keys, the last one's position is kept (as inserting them in
    /// turn would).
    pub fn from_entries(mut entries: Vec<(RouteKey, u32)>) -> Self {
        entries.sort_by_key(|e| e.0);
        // `later` is removed when it has `kept`'s key: its position replaces kept's (the sort is stable).
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        entries.shrink_to_fit();
        RouteIndex {
            len: entries.len(),
            sorted: entries,
            changed: BTreeMap::new(),
        }
    }

    /// Keys in the index.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The position of `key`'s route.
    pub fn get(&self, key: &RouteKey) -> Option<u32> {
        self.with_sorted(key, self.in_sorted(key))
    }

    /// Sets `key`'s position.
    pub fn insert(&mut self, key: RouteKey, at: u32) {
        let sorted = self.in_sorted(&key);
        if self.with_sorted(&key, sorted).is_none() {
            self.len += 1;
        }
        if sorted == Some(at) {
            self.changed.remove(&key);
        } else {
            self.changed.insert(key, Some(at));
        }
    }

    /// Removes `key`: its position, if it was there.
    pub fn remove(&mut self, key: &RouteKey) -> Option<u32> {
        let sorted = self.in_sorted(key);
        let at = self.with_sorted(key, sorted)?;
        if sorted.is_some() {
            self.changed.insert(*key, None);
        } else {
            self.changed.remove(key);
        }
        self.len -= 1;
        Some(at)
    }

    /// `key`'s position given its position in the sorted vector (`sorted`): the change of `key`, if any, wins.
    fn with_sorted(&self, key: &RouteKey, sorted: Option<u32>) -> Option<u32> {
        match self.changed.get(key) {
            Some(c) => *c,
            None => sorted,
        }
    }

    /// The entries with keys in `range`, in key order.
    pub fn range<R: RangeBounds<RouteKey> + Clone>(
        &self,
        range: R,
    ) -> impl Iterator<Item = (RouteKey, u32)> {
        let from = match range.start_bound() {
            Bound::Included(k) => self.sorted.partition_point(|e| e.0 < *k),
            Bound::Excluded(k) => self.sorted.partition_point(|e| e.0 <= *k),
            Bound::Unbounded => 0,
        };
        let to = match range.end_bound() {
            Bound::Included(k) => self.sorted.partition_point(|e| e.0 <= *k),
            Bound::Excluded(k) => self.sorted.partition_point(|e| e.0 < *k),
            Bound::Unbounded => self.sorted.len(),
        };
        Merged {
            sorted: self.sorted[from..to.max(from)].iter().peekable(),
            changed: self.changed.range(range).peekable(),
        }
    }

    /// Merges the changes into the sorted vector, in a vector of the index's exact size, after a transaction of
    /// `ops` route operations that were at least an eighth of the index (and 1,024): the merge, a pass over the
    /// whole index, is paid for by them (amortised: at most 8 entries moved per operation). Smaller transactions
    /// leave their changes in the tree.
    pub fn compact(&mut self, ops: usize) {
        if ops >= MERGE_MIN && ops >= self.len / 8 && !self.changed.is_empty() {
            self.merge();
        }
    }

    /// Merges the changes into the sorted vector once they are an eighth of it (and 1,024): each merge is paid for
    /// by the changes since the last one (amortised: at most 8 entries moved per change).
    pub fn merge_if_due(&mut self) {
        if self.changed.len() >= MERGE_MIN.max(self.sorted.len() / 8) {
            self.merge();
        }
    }

    /// The changes merged into a sorted vector of the index's exact size.
    fn merge(&mut self) {
        let mut merged = Vec::with_capacity(self.len);
        merged.extend(self.range(..));
        self.sorted = merged;
        self.changed = BTreeMap::new();
    }

    /// `key`'s position in the sorted vector (changes aside).
    fn in_sorted(&self, key: &RouteKey) -> Option<u32> {
        self.sorted
            .binary_search_by(|e| e.0.cmp(key))
            .ok()
            .map(|i| self.sorted[i].1)
    }
}

/// The sorted vector's entries in a range merged with the changes in it (a change wins over the entry of its key).
struct Merged<
    'a,
    S: Iterator<Item = &'a (RouteKey, u32)>,
    C: Iterator<Item = (&'a RouteKey, &'a Option<u32>)>,
> {
    sorted: std::iter::Peekable<S>,
    changed: std::iter::Peekable<C>,
}

impl<'a, S, C> Iterator for Merged<'a, S, C>
where
    S: Iterator<Item = &'a (RouteKey, u32)>,
    C: Iterator<Item = (&'a RouteKey, &'a Option<u32>)>,
{
    type Item = (RouteKey, u32);

    fn next(&mut self) -> Option<(RouteKey, u32)> {
        loop {
            let take_change = match (self.sorted.peek(), self.changed.peek()) {
                (None, None) => return None,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(s), Some(c)) => {
                    let (s, c) = (s.0, *c.0);
                    if s == c {
                        // The change replaces the sorted entry of its key.
                        self.sorted.next();
                    }
                    c <= s
                }
            };
            if take_change {
                let (k, c) = self.changed.next().expect("peeked");
                if let Some(at) = c {
                    return Some((*k, *at));
                }
            } else {
                return self.sorted.next().copied();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipnet::{IpNet, Ipv4Net, Ipv6Net};
    use proptest::prelude::*;
    use std::net::Ipv6Addr;

    fn key(table: u32, net: u8, metric: u32) -> RouteKey {
        let p = Ipv6Net::new(Ipv6Addr::new(0xfd00, u16::from(net), 0, 0, 0, 0, 0, 0), 48).unwrap();
        (table, IpNet::V6(p), metric)
    }

    #[test]
    fn the_last_of_equal_keys_wins_and_changes_win_over_the_sorted_entries() {
        let mut ix = RouteIndex::from_entries(vec![
            (key(254, 2, 1024), 0),
            (key(254, 1, 5), 1),
            (key(254, 2, 1024), 2),
        ]);
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.get(&key(254, 2, 1024)), Some(2));
        ix.insert(key(254, 1, 5), 7);
        ix.insert(key(254, 1, 9), 8);
        assert_eq!(ix.remove(&key(254, 2, 1024)), Some(2));
        assert_eq!(ix.remove(&key(254, 2, 1024)), None);
        let all: Vec<_> = ix.range(..).collect();
        assert_eq!(all, [(key(254, 1, 5), 7), (key(254, 1, 9), 8)]);
        assert_eq!(ix.len(), 2);
        // A prefix's metrics: a range of keys.
        let metrics: Vec<_> = ix
            .range(key(254, 1, 0)..=key(254, 1, u32::MAX))
            .map(|e| e.0.2)
            .collect();
        assert_eq!(metrics, [5, 9]);
        // Too small a transaction: the changes stay apart; a large one merges them.
        ix.compact(1023);
        assert_eq!(ix.changed.len(), 3);
        ix.compact(1024);
        assert!(ix.changed.is_empty());
        assert_eq!(ix.sorted, [(key(254, 1, 5), 7), (key(254, 1, 9), 8)]);
        assert_eq!(ix.sorted.capacity(), 2, "merged at the index's exact size");
    }

    #[test]
    fn changes_are_merged_once_they_are_an_eighth_of_the_index() {
        let mut ix = RouteIndex::default();
        for m in 0..1023 {
            ix.insert(key(254, 1, m), m);
            ix.merge_if_due();
        }
        assert_eq!(
            (ix.sorted.len(), ix.changed.len()),
            (0, 1023),
            "fewer than 1,024 changes: kept apart"
        );
        ix.insert(key(254, 1, 1023), 1023);
        ix.merge_if_due();
        assert_eq!((ix.sorted.len(), ix.changed.len()), (1024, 0));
        // 8,192 entries: the next merge waits for 1,024 changes again (an eighth).
        for m in 1024..8192 {
            ix.insert(key(254, 1, m), m);
            ix.merge_if_due();
        }
        assert!(ix.changed.len() < 1024, "{}", ix.changed.len());
        for m in 0..1023 {
            assert_eq!(ix.remove(&key(254, 1, m)), Some(m));
            ix.merge_if_due();
        }
        assert_eq!(ix.len(), 8192 - 1023);
        assert_eq!(ix.get(&key(254, 1, 8000)), Some(8000));
        assert_eq!(ix.range(..).count(), ix.len());
    }

    #[test]
    fn a_table_is_a_range_from_its_first_possible_key() {
        let ix = RouteIndex::from_entries(vec![(key(100, 1, 1), 0), (key(300, 1, 1), 1)]);
        let first = (200, IpNet::V4(Ipv4Net::default()), 0);
        assert_eq!(ix.range(first..).next().map(|e| e.0.0), Some(300));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(RouteKey, u32),
        Remove(RouteKey),
        Compact(usize),
        MergeIfDue,
    }

    fn small_key() -> impl Strategy<Value = RouteKey> {
        (0u32..3, 0u8..6, 0u32..4).prop_map(|(t, n, m)| key(t, n, m))
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (small_key(), 0u32..50).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => small_key().prop_map(Op::Remove),
            1 => prop_oneof![Just(0usize), Just(1024), Just(5000)].prop_map(Op::Compact),
            1 => Just(Op::MergeIfDue),
        ]
    }

    proptest! {
        // Against a tree holding every entry (what the index was): the same answers to every question, whatever
        // sequence of insertions, removals and merges came before.
        #[test]
        fn answers_as_an_ordered_map_does(
            start in proptest::collection::vec((small_key(), 0u32..50), 0..40),
            ops in proptest::collection::vec(op(), 0..120),
            lo in small_key(),
            hi in small_key(),
        ) {
            let mut model: BTreeMap<RouteKey, u32> = start.iter().copied().collect();
            let mut ix = RouteIndex::from_entries(start);
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        model.insert(k, v);
                        ix.insert(k, v);
                    }
                    Op::Remove(k) => prop_assert_eq!(ix.remove(&k), model.remove(&k)),
                    Op::Compact(n) => ix.compact(n),
                    Op::MergeIfDue => ix.merge_if_due(),
                }
                prop_assert_eq!(ix.len(), model.len());
            }
            for k in model.keys() {
                prop_assert_eq!(ix.get(k), model.get(k).copied());
            }
            let all: Vec<_> = model.iter().map(|(k, v)| (*k, *v)).collect();
            prop_assert_eq!(ix.range(..).collect::<Vec<_>>(), all);
            if lo <= hi {
                let want: Vec<_> = model.range(lo..=hi).map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(ix.range(lo..=hi).collect::<Vec<_>>(), want);
            }
            if lo < hi {
                let open = (Bound::Excluded(lo), Bound::Excluded(hi));
                let want: Vec<_> = model.range(open).map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(ix.range(open).collect::<Vec<_>>(), want);
            }
            let want: Vec<_> = model.range(lo..).map(|(k, v)| (*k, *v)).collect();
            prop_assert_eq!(ix.range(lo..).collect::<Vec<_>>(), want);
        }
    }
}
