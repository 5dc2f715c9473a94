//! The tier's copy of the `routes` LPM map: which prefixes the map holds and with what value, so that an
//! installation writes only the entries that differ and a route change knows the plan slot it stops naming.
//!
//! A hash map from prefix to value costs 29 bytes a bucket, and its table doubles: between 33 and 66 bytes a
//! route, held while the routes are (a table of 120,000 routes sits in 262,144 buckets, 7.25 MiB). This copy
//! keeps its entries packed in one vector sorted by prefix (21 bytes each: the prefix and the index of its value
//! among the distinct values met, which are few since routes share their plans; the vector's capacity exact after
//! each merge), with the changes since the last merge in a small hash map beside it. The changes are merged
//! into the vector once they are an eighth of it (at least [`MERGE_MIN`]): a merge moves every entry once, so
//! each change pays for at most eight moves, and a lookup is one hash probe then a binary search.

use crate::layout::RouteValue;
use ipnet::Ipv6Net;
use std::collections::HashMap;

/// Changes kept beside the sorted entries before they are merged, however small the table.
pub(crate) const MERGE_MIN: usize = 1024;

/// One route of the sorted vector: the prefix (address as given, length) and the index of its value in
/// [`Values`], byte arrays only so that the entry takes 21 bytes with no padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    addr: [u8; 16],
    len: u8,
    value: [u8; 4],
}

/// The distinct values the entries name, each once: a value's index never changes (values are plan slots and
/// reasons, bounded by the `plans` array's size; they are not forgotten).
#[derive(Debug, Default)]
struct Values {
    list: Vec<RouteValue>,
    index: HashMap<RouteValue, u32>,
}

impl Values {
    fn index_of(&mut self, v: RouteValue) -> [u8; 4] {
        let i = *self.index.entry(v).or_insert_with(|| {
            self.list.push(v);
            // Fewer distinct values than entries, and entries are counted in a `usize` bounded by memory.
            u32::try_from(self.list.len() - 1).unwrap_or(u32::MAX)
        });
        i.to_ne_bytes()
    }

    fn get(&self, i: [u8; 4]) -> RouteValue {
        self.list[u32::from_ne_bytes(i) as usize]
    }
}

/// The order of the vector: address, then prefix length.
type Key = ([u8; 16], u8);

fn key_of(net: &Ipv6Net) -> Key {
    (net.addr().octets(), net.prefix_len())
}

impl Entry {
    fn new(net: &Ipv6Net, v: RouteValue, values: &mut Values) -> Entry {
        let (addr, len) = key_of(net);
        Entry {
            addr,
            len,
            value: values.index_of(v),
        }
    }

    fn key(&self) -> Key {
        (self.addr, self.len)
    }
}

/// Prefix → value, as the `routes` map holds them.
#[derive(Debug, Default)]
pub(crate) struct RouteMirror {
    /// Entries as of the last merge, sorted by [`Key`], no two with the same key.
    sorted: Vec<Entry>,
    /// Changes since: the new value, or `None` for a prefix removed.
    changed: HashMap<Ipv6Net, Option<RouteValue>>,
    /// The values `sorted` names.
    values: Values,
    /// Prefixes held.
    len: usize,
}

impl RouteMirror {
    /// The value held for `net`.
    pub(crate) fn get(&self, net: &Ipv6Net) -> Option<RouteValue> {
        if let Some(v) = self.changed.get(net) {
            return *v;
        }
        let key = key_of(net);
        self.sorted
            .binary_search_by(|e| e.key().cmp(&key))
            .ok()
            .map(|i| self.values.get(self.sorted[i].value))
    }

    /// Prefixes held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Holds `v` for `net` (added or replaced).
    pub(crate) fn set(&mut self, net: Ipv6Net, v: RouteValue) {
        if self.get(&net).is_none() {
            self.len += 1;
        }
        self.changed.insert(net, Some(v));
        self.merge_when_due();
    }

    /// Holds nothing for `net` any more.
    pub(crate) fn remove(&mut self, net: &Ipv6Net) {
        if self.get(net).is_some() {
            self.len -= 1;
            self.changed.insert(*net, None);
            self.merge_when_due();
        }
    }

    /// Every value held (for counting the plan slots named), in no particular order.
    pub(crate) fn values(&mut self) -> impl Iterator<Item = RouteValue> + '_ {
        self.merge();
        self.sorted.iter().map(|e| self.values.get(e.value))
    }

    /// Replaces the whole content with `want` (prefix → value; of two entries with the same prefix the later
    /// one counts, as when collected into a map), calling `write` with the value of each entry that is new or
    /// differs and with `None` for each prefix held that `want` lacks, in prefix order. Stops at the first
    /// error, with the content left as it was.
    pub(crate) fn replace_with<E>(
        &mut self,
        mut want: Vec<(Ipv6Net, RouteValue)>,
        mut write: impl FnMut(&Ipv6Net, Option<&RouteValue>) -> Result<(), E>,
    ) -> Result<(), E> {
        want.sort_by_key(|(net, _)| key_of(net));
        // Of equal keys the stable sort kept the order given: keep the last one.
        want.dedup_by(|later, earlier| {
            let same = key_of(&later.0) == key_of(&earlier.0);
            if same {
                *earlier = *later;
            }
            same
        });
        self.merge();
        let mut old = self.sorted.iter().peekable();
        for (net, v) in &want {
            let key = key_of(net);
            while let Some(o) = old.next_if(|o| o.key() < key) {
                write(&net_of(o), None)?;
            }
            match old.next_if(|o| o.key() == key) {
                Some(o) if self.values.get(o.value) == *v => {}
                _ => write(net, Some(v))?,
            }
        }
        for o in old {
            write(&net_of(o), None)?;
        }
        let mut sorted = Vec::with_capacity(want.len());
        sorted.extend(
            want.iter()
                .map(|(net, v)| Entry::new(net, *v, &mut self.values)),
        );
        self.len = sorted.len();
        self.sorted = sorted;
        Ok(())
    }

    fn merge_when_due(&mut self) {
        if self.changed.len() > MERGE_MIN.max(self.sorted.len() / 8) {
            self.merge();
        }
    }

    /// Merges the changes into the sorted vector, which is made anew at its exact size (and the change map
    /// freed: after a large batch it would keep its buckets).
    fn merge(&mut self) {
        if self.changed.is_empty() {
            return;
        }
        let changed = std::mem::take(&mut self.changed);
        let mut news: Vec<Entry> = changed
            .iter()
            .filter_map(|(net, v)| v.map(|v| Entry::new(net, v, &mut self.values)))
            .collect();
        news.sort_unstable_by_key(Entry::key);
        let mut sorted = Vec::with_capacity(self.len);
        let mut news = news.into_iter().peekable();
        for e in &self.sorted {
            while let Some(n) = news.next_if(|n| n.key() < e.key()) {
                sorted.push(n);
            }
            if news.peek().is_some_and(|n| n.key() == e.key()) {
                continue; // replaced: the new entry comes next
            }
            if changed.contains_key(&net_of(e)) {
                continue; // removed
            }
            sorted.push(*e);
        }
        sorted.extend(news);
        debug_assert_eq!(sorted.len(), self.len);
        self.sorted = sorted;
    }
}

fn net_of(e: &Entry) -> Ipv6Net {
    // The entry was made from a valid prefix: its length is at most 128.
    Ipv6Net::new(e.addr.into(), e.len).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn net(i: u16, len: u8) -> Ipv6Net {
        let mut a = [0u8; 16];
        a[0] = 0x20;
        a[2..4].copy_from_slice(&i.to_be_bytes());
        Ipv6Net::new(a.into(), len).expect("a valid length")
    }

    fn value(x: u8) -> RouteValue {
        RouteValue {
            plan: u32::from(x),
            why: u32::from(x) * 7,
        }
    }

    #[test]
    fn an_entry_is_21_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 21);
    }

    /// A prefix length is part of the key: 2000::/16 and 2000::/24 are two routes.
    #[test]
    fn the_same_address_with_two_lengths_is_two_entries() {
        let mut m = RouteMirror::default();
        m.set(net(0, 16), value(1));
        m.set(net(0, 24), value(2));
        m.merge();
        assert_eq!(
            (m.get(&net(0, 16)), m.get(&net(0, 24))),
            (Some(value(1)), Some(value(2)))
        );
        m.remove(&net(0, 16));
        m.merge();
        assert_eq!(
            (m.get(&net(0, 16)), m.get(&net(0, 24)), m.len()),
            (None, Some(value(2)), 1)
        );
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u16, u8, u8),
        Remove(u16, u8),
        Replace(Vec<(u16, u8, u8)>),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct prefixes, so that sets, removals and replacements meet the same ones.
        let prefix = (0u16..3000, prop::sample::select(vec![32u8, 48, 64]));
        prop_oneof![
            40 => (prefix.clone(), any::<u8>()).prop_map(|((i, l), v)| Op::Set(i, l, v)),
            40 => prefix.clone().prop_map(|(i, l)| Op::Remove(i, l)),
            1 => prop::collection::vec((prefix, any::<u8>()), 0..2000)
                .prop_map(|v| Op::Replace(v.into_iter().map(|((i, l), x)| (i, l, x)).collect())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Against a map: every lookup, the count, the values, and what a replacement reports as set and
        /// removed (the entries of the map that differ, the prefixes it loses).
        #[test]
        fn agrees_with_a_map(ops in prop::collection::vec(op(), 1..6000)) {
            let mut m = RouteMirror::default();
            let mut model: BTreeMap<Ipv6Net, RouteValue> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Set(i, l, x) => {
                        m.set(net(i, l), value(x));
                        model.insert(net(i, l), value(x));
                    }
                    Op::Remove(i, l) => {
                        m.remove(&net(i, l));
                        model.remove(&net(i, l));
                    }
                    Op::Replace(list) => {
                        let want: Vec<(Ipv6Net, RouteValue)> =
                            list.iter().map(|&(i, l, x)| (net(i, l), value(x))).collect();
                        let next: BTreeMap<Ipv6Net, RouteValue> = want.iter().copied().collect();
                        let (mut set, mut gone) = (BTreeMap::new(), Vec::new());
                        m.replace_with::<()>(want, |n, v| {
                            match v {
                                Some(v) => set.insert(*n, *v).map_or((), |_| ()),
                                None => gone.push(*n),
                            }
                            Ok(())
                        })
                        .expect("no error");
                        let differ: BTreeMap<Ipv6Net, RouteValue> = next
                            .iter()
                            .filter(|(n, v)| model.get(n) != Some(v))
                            .map(|(n, v)| (*n, *v))
                            .collect();
                        prop_assert_eq!(set, differ);
                        gone.sort();
                        let lost: Vec<Ipv6Net> = model.keys().filter(|n| !next.contains_key(n)).copied().collect();
                        prop_assert_eq!(gone, lost);
                        model = next;
                    }
                }
                prop_assert_eq!(m.len(), model.len());
            }
            for i in 0..3000 {
                for l in [32, 48, 64] {
                    prop_assert_eq!(m.get(&net(i, l)), model.get(&net(i, l)).copied());
                }
            }
            let mut values: Vec<(u32, u32)> = m.values().map(|v| (v.plan, v.why)).collect();
            let mut expected: Vec<(u32, u32)> = model.values().map(|v| (v.plan, v.why)).collect();
            values.sort_unstable();
            expected.sort_unstable();
            prop_assert_eq!(values, expected);
        }
    }
}
