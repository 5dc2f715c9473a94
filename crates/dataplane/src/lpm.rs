//! Longest-prefix match for large tables: a multibit trie with a 16-bit first level and 8-bit levels below, leaf
//! pushed, so that a lookup is one read per level and the slot it ends on is the answer.
//!
//! Addresses are held left-aligned in a `u128` (an IPv4 address in the top 32 bits). A slot is a [`Best`] (the
//! route and its plan, 8 bytes) or a link to a node of 256 slots below it. A prefix of length `L` fills the
//! `2^(S - L)` slots it covers at the level whose bits `[S - 8, S)` (or `[0, 16)`) contain bit `L - 1`; a slot
//! that a longer prefix needs a node for gets one, filled with what covered the slot (leaf pushing). Each slot
//! also records the length of the prefix it holds, so that a shorter prefix never overwrites a longer one and a
//! removal restores what the next shorter prefix covers.
//!
//! Cost: the first level is 64 Ki slots (576 KiB with the lengths); every node 256 slots (2,304 bytes). A table of
//! /48s sharing their upper bits (a provider's table, the generated tables of `lwt6 bench fib`) needs few nodes; a
//! node per prefix is the worst case (/48s that share nothing below their /40).

use crate::fib::Best;

/// Bits resolved by the first level.
const TOP: u32 = 16;
/// Bits resolved by every other level.
const STRIDE: u32 = 8;
/// Slots of a node.
const NODE: usize = 1 << STRIDE;

/// A slot's route that marks "nothing here".
const EMPTY_ROUTE: u32 = u32::MAX;
/// A slot's route that marks "a node below, its index in `plan`".
const CHILD_ROUTE: u32 = u32::MAX - 1;

const EMPTY: Best = Best::raw(EMPTY_ROUTE, u32::MAX);

/// The trie.
#[derive(Debug, Clone)]
pub struct StrideTrie {
    /// The first level: one slot per value of the top 16 bits.
    root: Vec<Best>,
    /// The length + 1 of the prefix each root slot holds (0: none).
    root_len: Vec<u8>,
    /// Every node's slots, node `i` at `i * 256`.
    nodes: Vec<Best>,
    /// The length + 1 of the prefix each node slot holds (0: none).
    nodes_len: Vec<u8>,
}

impl Default for StrideTrie {
    fn default() -> Self {
        StrideTrie {
            root: vec![EMPTY; 1 << TOP],
            root_len: vec![0; 1 << TOP],
            nodes: Vec::new(),
            nodes_len: Vec::new(),
        }
    }
}

/// Where a slot is: the root (index) or a node slot (index into `nodes`).
#[derive(Debug, Clone, Copy)]
enum At {
    Root(usize),
    Node(usize),
}

impl StrideTrie {
    /// The entry of the longest prefix containing `key` (left-aligned), if any.
    #[inline]
    pub fn get(&self, key: u128) -> Option<&Best> {
        let mut slot = &self.root[(key >> (128 - TOP)) as usize];
        let mut shift = 128 - TOP;
        while slot.route == CHILD_ROUTE {
            shift -= STRIDE;
            let i = slot.plan as usize * NODE + ((key >> shift) as usize & (NODE - 1));
            slot = &self.nodes[i];
        }
        (slot.route != EMPTY_ROUTE).then_some(slot)
    }

    /// Sets `value` for the prefix `key`/`len` (host bits ignored); a longer prefix keeps its slots.
    pub fn insert(&mut self, key: u128, len: u8, value: Best) {
        self.fill(key, len, |t, at| t.apply(at, u32::from(len), value));
    }

    /// Removes the prefix `key`/`len`: its slots get `covering` (the next shorter prefix containing it, with its
    /// length), or nothing.
    pub fn remove(&mut self, key: u128, len: u8, covering: Option<(u8, Best)>) {
        self.fill(key, len, |t, at| t.restore(at, u32::from(len), covering));
    }

    /// Updates every leaf: `f` gives the new entry for an old one.
    pub fn map_leaves(&mut self, f: impl Fn(Best) -> Best) {
        for s in self.root.iter_mut().chain(self.nodes.iter_mut()) {
            if s.route != EMPTY_ROUTE && s.route != CHILD_ROUTE {
                *s = f(*s);
            }
        }
    }

    /// Nodes below the first level.
    pub fn node_count(&self) -> usize {
        self.nodes.len() / NODE
    }

    /// Bytes of memory the trie holds.
    pub fn bytes(&self) -> usize {
        (self.root.len() + self.nodes.len()) * (std::mem::size_of::<Best>() + 1)
    }

    /// Calls `f` on every slot the prefix `key`/`len` covers at the level where it ends, creating nodes on the way
    /// down.
    fn fill(&mut self, key: u128, len: u8, mut f: impl FnMut(&mut Self, At)) {
        let len = u32::from(len.min(128));
        let top = (key >> (128 - TOP)) as usize;
        if len <= TOP {
            let span = 1usize << (TOP - len);
            let first = top & !(span - 1);
            for i in first..first + span {
                f(self, At::Root(i));
            }
            return;
        }
        let mut at = At::Root(top);
        let mut end = TOP;
        loop {
            let node = self.child_of(at);
            end += STRIDE;
            let byte = (key >> (128 - end)) as usize & (NODE - 1);
            if len <= end {
                let span = 1usize << (end - len);
                let first = byte & !(span - 1);
                for i in first..first + span {
                    f(self, At::Node(node * NODE + i));
                }
                return;
            }
            at = At::Node(node * NODE + byte);
        }
    }

    fn slot(&mut self, at: At) -> (&mut Best, &mut u8) {
        match at {
            At::Root(i) => (&mut self.root[i], &mut self.root_len[i]),
            At::Node(i) => (&mut self.nodes[i], &mut self.nodes_len[i]),
        }
    }

    /// The node below the slot at `at`, created (filled with what the slot held) when there is none.
    fn child_of(&mut self, at: At) -> usize {
        let (s, l) = self.slot(at);
        if s.route == CHILD_ROUTE {
            return s.plan as usize;
        }
        let (held, held_len) = (*s, *l);
        let node = self.nodes.len() / NODE;
        self.nodes.extend(std::iter::repeat_n(held, NODE));
        self.nodes_len.extend(std::iter::repeat_n(held_len, NODE));
        let (s, l) = self.slot(at);
        *s = Best::raw(CHILD_ROUTE, node as u32);
        *l = 0;
        node
    }

    /// Puts `value` (a prefix of length `len`) into the slot at `at` and, through a node, into every slot below
    /// that no longer prefix holds.
    fn apply(&mut self, at: At, len: u32, value: Best) {
        let (s, l) = self.slot(at);
        if s.route == CHILD_ROUTE {
            let node = s.plan as usize;
            for i in 0..NODE {
                self.apply(At::Node(node * NODE + i), len, value);
            }
        } else if u32::from(*l) <= len + 1 {
            *s = value;
            *l = (len + 1) as u8;
        }
    }

    /// Replaces what the prefix of length `len` put in the slot at `at` (and below it) with `covering`.
    fn restore(&mut self, at: At, len: u32, covering: Option<(u8, Best)>) {
        let (s, l) = self.slot(at);
        if s.route == CHILD_ROUTE {
            let node = s.plan as usize;
            for i in 0..NODE {
                self.restore(At::Node(node * NODE + i), len, covering);
            }
        } else if u32::from(*l) == len + 1 {
            match covering {
                Some((clen, v)) => {
                    *s = v;
                    *l = clen + 1;
                }
                None => {
                    *s = EMPTY;
                    *l = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mask(key: u128, len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            key & (u128::MAX << (128 - u32::from(len)))
        }
    }

    /// The longest matching prefix by scanning every prefix: the reference.
    fn naive(prefixes: &[(u128, u8, u32)], key: u128) -> Option<u32> {
        prefixes
            .iter()
            .filter(|(p, l, _)| mask(key, *l) == mask(*p, *l))
            .max_by_key(|(_, l, _)| *l)
            .map(|(_, _, v)| *v)
    }

    #[test]
    fn edges_default_host_routes_and_nesting() {
        let mut t = StrideTrie::default();
        assert!(t.get(0).is_none());
        t.insert(0, 0, Best::raw(1, 1));
        t.insert(0x2001_0db8 << 96, 32, Best::raw(2, 2));
        t.insert((0x2001_0db8_0001 << 80) | 5, 128, Best::raw(3, 3));
        t.insert(0x2001_0db8_0001 << 80, 48, Best::raw(4, 4));
        let g = |t: &StrideTrie, k: u128| t.get(k).map(|b| b.route);
        assert_eq!(g(&t, u128::MAX), Some(1));
        assert_eq!(g(&t, (0x2001_0db8 << 96) | 7), Some(2));
        assert_eq!(g(&t, (0x2001_0db8_0001 << 80) | 5), Some(3));
        assert_eq!(g(&t, (0x2001_0db8_0001 << 80) | 6), Some(4));
        // Removing the /48 restores the /32 below it, but not over the /128.
        t.remove(0x2001_0db8_0001 << 80, 48, Some((32, Best::raw(2, 2))));
        assert_eq!(g(&t, (0x2001_0db8_0001 << 80) | 6), Some(2));
        assert_eq!(g(&t, (0x2001_0db8_0001 << 80) | 5), Some(3));
        // A shorter prefix inserted later does not cover the longer ones.
        t.insert(0x2000 << 112, 16, Best::raw(9, 9));
        assert_eq!(g(&t, (0x2001_0db8 << 96) | 7), Some(2));
        assert_eq!(g(&t, 0x2000_0001 << 96), Some(9));
        // The same prefix again replaces its entry, at every level.
        t.insert(0x2001_0db8 << 96, 32, Best::raw(7, 7));
        t.insert(0x2000 << 112, 16, Best::raw(8, 8));
        assert_eq!(g(&t, (0x2001_0db8 << 96) | 7), Some(7));
        assert_eq!(g(&t, 0x2000_0001 << 96), Some(8));
        t.remove(0, 0, None);
        assert_eq!(g(&t, u128::MAX), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Random prefixes (lengths weighted towards 16..64), random removals, random and covered lookups: the
        /// trie always answers what a full scan answers.
        #[test]
        fn agrees_with_a_full_scan(
            raw in proptest::collection::vec((any::<u128>(), prop_oneof![0u8..=128, 16u8..=64], any::<bool>()), 1..60),
            probes in proptest::collection::vec(any::<u128>(), 1..40),
        ) {
            let mut t = StrideTrie::default();
            let mut live: Vec<(u128, u8, u32)> = Vec::new();
            for (i, (k, l, keep)) in raw.iter().enumerate() {
                let k = mask(*k, *l);
                live.retain(|(p, pl, _)| !(*p == k && *pl == *l));
                live.push((k, *l, i as u32));
                t.insert(k, *l, Best::raw(i as u32, 0));
                if !keep {
                    live.retain(|(p, pl, _)| !(*p == k && *pl == *l));
                    let cover = live
                        .iter()
                        .filter(|(p, pl, _)| *pl < *l && mask(k, *pl) == *p)
                        .max_by_key(|(_, pl, _)| *pl)
                        .map(|(_, pl, v)| (*pl, Best::raw(*v, 0)));
                    t.remove(k, *l, cover);
                }
            }
            let inside = live.iter().map(|(p, l, _)| p | (!0u128).checked_shr(u32::from(*l)).unwrap_or(0) & 0x1234);
            for key in probes.into_iter().chain(inside) {
                prop_assert_eq!(t.get(key).map(|b| b.route), naive(&live, key), "key {:x}", key);
            }
        }
    }
}
