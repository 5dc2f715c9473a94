//! The tier's copy of the `routes` LPM map: which prefixes the map holds and with what value, so that an
//! installation writes only the entries that differ and a route change knows the plan slot it stops naming.
//!
//! A hash map from prefix to value costs 29 bytes a bucket, and its table doubles: between 33 and 66 bytes a
//! route, held while the routes are (a table of 120,000 routes sits in 262,144 buckets, 7.25 MiB). This copy
//! keeps its entries packed in vectors sorted by prefix: 13 bytes for a prefix of at most 64 bits (the top half of
//! its address, its length, and the index of its value among the distinct values met, which are few since routes
//! share their plans), 21 for a longer one; the vectors' capacity is exact after each merge. The changes since
//! the last merge wait in a small hash map beside them and are merged once they are an eighth of the entries (at
//! least [`MERGE_MIN`]): a merge moves every entry once, so each change pays for at most eight moves, and a lookup
//! is one hash probe then a binary search.

use crate::layout::RouteValue;
use ipnet::Ipv6Net;
use std::collections::HashMap;

/// Changes kept beside the sorted entries before they are merged, however small the table.
pub(crate) const MERGE_MIN: usize = 1024;

/// The order of the vectors: address, then prefix length.
type Key = ([u8; 16], u8);

fn key_of(net: &Ipv6Net) -> Key {
    (net.addr().octets(), net.prefix_len())
}

fn net_of((addr, len): Key) -> Ipv6Net {
    // The key was made from a valid prefix: its length is at most 128.
    Ipv6Net::new(addr.into(), len).unwrap_or_default()
}

/// Whether a prefix's entry fits the narrow vector: at most 64 bits long, nothing set below them (the usual case:
/// a prefix as `ip route` takes it).
fn narrow((addr, len): &Key) -> bool {
    *len <= 64 && addr[8..] == [0; 8]
}

/// A value's index in [`Values`], as the entries hold it.
type Index = [u8; 4];

/// The distinct values the entries name, each once: a value's index never changes (values are plan slots and
/// reasons, bounded by the `plans` array's size; they are not forgotten).
#[derive(Debug, Default)]
struct Values {
    list: Vec<RouteValue>,
    index: HashMap<RouteValue, u32>,
}

impl Values {
    fn index_of(&mut self, v: RouteValue) -> Index {
        let i = *self.index.entry(v).or_insert_with(|| {
            self.list.push(v);
            // Fewer distinct values than entries, and entries are counted in a `usize` bounded by memory.
            u32::try_from(self.list.len() - 1).unwrap_or(u32::MAX)
        });
        i.to_ne_bytes()
    }

    fn get(&self, i: Index) -> RouteValue {
        self.list[u32::from_ne_bytes(i) as usize]
    }
}

/// The entries as of the last merge, in two vectors sorted by [`Key`] (no key twice), byte arrays with no padding:
/// a [`narrow`] prefix in 13 bytes (the top 8 bytes of its address, its length, its value's index), any other in
/// 21 (the whole address).
#[derive(Debug, Default)]
struct Packed {
    narrow: Vec<[u8; 13]>,
    wide: Vec<[u8; 21]>,
}

fn pack_narrow((addr, len): &Key, i: Index) -> [u8; 13] {
    let mut e = [0u8; 13];
    e[..8].copy_from_slice(&addr[..8]);
    e[8] = *len;
    e[9..].copy_from_slice(&i);
    e
}

fn pack_wide((addr, len): &Key, i: Index) -> [u8; 21] {
    let mut e = [0u8; 21];
    e[..16].copy_from_slice(addr);
    e[16] = *len;
    e[17..].copy_from_slice(&i);
    e
}

fn unpack_narrow(e: &[u8; 13]) -> (Key, Index) {
    let mut addr = [0u8; 16];
    addr[..8].copy_from_slice(&e[..8]);
    let mut i = [0u8; 4];
    i.copy_from_slice(&e[9..]);
    ((addr, e[8]), i)
}

fn unpack_wide(e: &[u8; 21]) -> (Key, Index) {
    let mut addr = [0u8; 16];
    addr.copy_from_slice(&e[..16]);
    let mut i = [0u8; 4];
    i.copy_from_slice(&e[17..]);
    ((addr, e[16]), i)
}

impl Packed {
    /// The value index held for `key`.
    fn find(&self, key: &Key) -> Option<Index> {
        if narrow(key) {
            let k = pack_narrow(key, [0; 4]);
            let i = self.narrow.binary_search_by(|e| e[..9].cmp(&k[..9])).ok()?;
            Some(unpack_narrow(&self.narrow[i]).1)
        } else {
            let k = pack_wide(key, [0; 4]);
            let i = self.wide.binary_search_by(|e| e[..17].cmp(&k[..17])).ok()?;
            Some(unpack_wide(&self.wide[i]).1)
        }
    }

    fn len(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    /// Every entry, in key order.
    fn iter(&self) -> impl Iterator<Item = (Key, Index)> + '_ {
        let mut n = self.narrow.iter().map(unpack_narrow).peekable();
        let mut w = self.wide.iter().map(unpack_wide).peekable();
        std::iter::from_fn(move || match (n.peek(), w.peek()) {
            (Some(a), Some(b)) if a.0 < b.0 => n.next(),
            (Some(_), Some(_)) | (None, Some(_)) => w.next(),
            (Some(_), None) => n.next(),
            (None, None) => None,
        })
    }

    /// Appends an entry (keys in order, each after the last).
    fn push(&mut self, key: &Key, i: Index) {
        if narrow(key) {
            self.narrow.push(pack_narrow(key, i));
        } else {
            self.wide.push(pack_wide(key, i));
        }
    }

    /// With room for `narrow` and `wide` entries.
    fn with_capacity(narrow: usize, wide: usize) -> Packed {
        Packed {
            narrow: Vec::with_capacity(narrow),
            wide: Vec::with_capacity(wide),
        }
    }

    /// Gives back the room no entry takes.
    fn shrink(&mut self) {
        self.narrow.shrink_to_fit();
        self.wide.shrink_to_fit();
    }
}

/// Prefix → value, as the `routes` map holds them.
#[derive(Debug, Default)]
pub(crate) struct RouteMirror {
    /// Entries as of the last merge.
    sorted: Packed,
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
        self.sorted.find(&key_of(net)).map(|i| self.values.get(i))
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
        self.sorted.iter().map(|(_, i)| self.values.get(i))
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
            while let Some((o, _)) = old.next_if(|(o, _)| *o < key) {
                write(&net_of(o), None)?;
            }
            match old.next_if(|(o, _)| *o == key) {
                Some((_, i)) if self.values.get(i) == *v => {}
                _ => write(net, Some(v))?,
            }
        }
        for (o, _) in old {
            write(&net_of(o), None)?;
        }
        let narrows = want.iter().filter(|(net, _)| narrow(&key_of(net))).count();
        let mut sorted = Packed::with_capacity(narrows, want.len() - narrows);
        for (net, v) in &want {
            sorted.push(&key_of(net), self.values.index_of(*v));
        }
        self.len = sorted.len();
        self.sorted = sorted;
        Ok(())
    }

    fn merge_when_due(&mut self) {
        if self.changed.len() > MERGE_MIN.max(self.sorted.len() / 8) {
            self.merge();
        }
    }

    /// Merges the changes into the sorted vectors, which are made anew at their exact size (and the change map
    /// freed: after a large batch it would keep its buckets).
    fn merge(&mut self) {
        if self.changed.is_empty() {
            return;
        }
        let changed = std::mem::take(&mut self.changed);
        let mut news: Vec<(Key, Index)> = changed
            .iter()
            .filter_map(|(net, v)| v.map(|v| (key_of(net), self.values.index_of(v))))
            .collect();
        news.sort_unstable_by_key(|(k, _)| *k);
        let new_narrow = news.iter().filter(|(k, _)| narrow(k)).count();
        let mut sorted = Packed::with_capacity(
            self.sorted.narrow.len() + new_narrow,
            self.sorted.wide.len() + news.len() - new_narrow,
        );
        let mut news = news.into_iter().peekable();
        for (k, i) in self.sorted.iter() {
            while let Some((n, j)) = news.next_if(|(n, _)| *n < k) {
                sorted.push(&n, j);
            }
            if news.peek().is_some_and(|(n, _)| *n == k) {
                continue; // replaced: the new entry comes next
            }
            if changed.contains_key(&net_of(k)) {
                continue; // removed
            }
            sorted.push(&k, i);
        }
        for (n, j) in news {
            sorted.push(&n, j);
        }
        sorted.shrink();
        debug_assert_eq!(sorted.len(), self.len);
        self.sorted = sorted;
    }
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
        if i.is_multiple_of(3) {
            // Bits below the first 64: kept in the wide vector whatever the length.
            a[12..14].copy_from_slice(&i.to_be_bytes());
        }
        Ipv6Net::new(a.into(), len).expect("a valid length")
    }

    fn value(x: u8) -> RouteValue {
        RouteValue {
            plan: u32::from(x),
            why: u32::from(x) * 7,
        }
    }

    /// A prefix with bits set below its first 64 is no narrow prefix: kept whole, apart from the prefix
    /// without them.
    #[test]
    fn host_bits_keep_a_prefix_wide() {
        let mut m = RouteMirror::default();
        let plain: Ipv6Net = "2001:db8::/64".parse().expect("a prefix");
        let bits = Ipv6Net::new("2001:db8::1".parse().expect("an address"), 64).expect("a prefix");
        m.set(plain, value(1));
        m.set(bits, value(2));
        m.merge();
        assert_eq!((m.sorted.narrow.len(), m.sorted.wide.len()), (1, 1));
        assert_eq!(
            (m.get(&plain), m.get(&bits)),
            (Some(value(1)), Some(value(2)))
        );
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
        let prefix = (0u16..3000, prop::sample::select(vec![32u8, 48, 64, 128]));
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
                for l in [32, 48, 64, 128] {
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
