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
//! A node lives only while it holds something its parent's slot could not: a removal that leaves a node's 256
//! slots all holding the same entry (what the parent's slot held before the node was made) folds the node back
//! into that slot, and up the path while the parents fold too; folded nodes go on a free list that the next
//! node taken reuses. So route churn (prefixes added and removed, ever new ones) keeps the trie at the size of
//! what is in it at once: no node is uniform, and every node is reachable.
//!
//! Cost: the first level is 64 Ki slots (576 KiB with the lengths); every node 256 slots (2,304 bytes). A table of
//! /48s sharing their upper bits (a provider's table, the generated tables of `lwt6 bench fib`) needs few nodes; a
//! node per prefix is the worst case (/48s that share nothing below their /40).

use super::Best;

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
    /// Nodes folded back into their parent's slot, reused before `nodes` grows.
    free: Vec<u32>,
}

impl Default for StrideTrie {
    fn default() -> Self {
        StrideTrie {
            root: vec![EMPTY; 1 << TOP],
            root_len: vec![0; 1 << TOP],
            nodes: Vec::new(),
            nodes_len: Vec::new(),
            free: Vec::new(),
        }
    }
}

/// Levels below the root: a path from the root to a slot links at most this many nodes.
const DEPTH: usize = ((128 - TOP) / STRIDE) as usize;

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
    /// length), or nothing. Nodes on its path left uniform fold back into their parents' slots.
    pub fn remove(&mut self, key: u128, len: u8, covering: Option<(u8, Best)>) {
        let (path, depth) = self.fill(key, len, |t, at| t.restore(at, u32::from(len), covering));
        // Deepest first: a node that keeps something of its own keeps its ancestors too.
        for d in (0..depth).rev() {
            if !self.fold(path[d], TOP + STRIDE * d as u32) {
                break;
            }
        }
    }

    /// Updates every leaf: `f` gives the new entry for an old one.
    pub fn map_leaves(&mut self, f: impl Fn(Best) -> Best) {
        for s in self.root.iter_mut().chain(self.nodes.iter_mut()) {
            if s.route != EMPTY_ROUTE && s.route != CHILD_ROUTE {
                *s = f(*s);
            }
        }
    }

    /// Nodes below the first level in use.
    pub fn node_count(&self) -> usize {
        self.nodes.len() / NODE - self.free.len()
    }

    /// Nodes below the first level allocated: in use, and folded ones waiting on the free list.
    pub fn node_slots(&self) -> usize {
        self.nodes.len() / NODE
    }

    /// Bytes of memory the trie holds (the capacity of its vectors).
    pub fn bytes(&self) -> usize {
        (self.root.capacity() + self.nodes.capacity()) * std::mem::size_of::<Best>()
            + self.root_len.capacity()
            + self.nodes_len.capacity()
            + self.free.capacity() * std::mem::size_of::<u32>()
    }

    /// Calls `f` on every slot the prefix `key`/`len` covers at the level where it ends, creating nodes on the way
    /// down. Returns the path: the slots linking to the nodes passed through, from the root down, and how many.
    fn fill(
        &mut self,
        key: u128,
        len: u8,
        mut f: impl FnMut(&mut Self, At),
    ) -> ([At; DEPTH], usize) {
        let mut path = [At::Root(0); DEPTH];
        let len = u32::from(len.min(128));
        let top = (key >> (128 - TOP)) as usize;
        if len <= TOP {
            let span = 1usize << (TOP - len);
            let first = top & !(span - 1);
            for i in first..first + span {
                f(self, At::Root(i));
            }
            return (path, 0);
        }
        let mut at = At::Root(top);
        let mut end = TOP;
        let mut depth = 0;
        loop {
            path[depth] = at;
            depth += 1;
            let node = self.child_of(at);
            end += STRIDE;
            let byte = (key >> (128 - end)) as usize & (NODE - 1);
            if len <= end {
                let span = 1usize << (end - len);
                let first = byte & !(span - 1);
                for i in first..first + span {
                    f(self, At::Node(node * NODE + i));
                }
                return (path, depth);
            }
            at = At::Node(node * NODE + byte);
        }
    }

    /// Folds the node below the slot at `at` (a slot of the level ending at bit `end`) back into that slot if all
    /// its slots hold the same entry, of a prefix no longer than `end`; returns whether it did.
    fn fold(&mut self, at: At, end: u32) -> bool {
        let (s, _) = self.slot(at);
        if s.route != CHILD_ROUTE {
            return false;
        }
        let node = s.plan as usize;
        let slots = node * NODE..(node + 1) * NODE;
        let (first, first_len) = (self.nodes[slots.start], self.nodes_len[slots.start]);
        let uniform = first.route != CHILD_ROUTE
            && u32::from(first_len) <= end + 1
            && self.nodes[slots.clone()].iter().all(|b| *b == first)
            && self.nodes_len[slots.clone()]
                .iter()
                .all(|l| *l == first_len);
        if !uniform {
            return false;
        }
        self.nodes[slots.clone()].fill(EMPTY);
        self.nodes_len[slots].fill(0);
        self.free.push(node as u32);
        let (s, l) = self.slot(at);
        *s = first;
        *l = first_len;
        true
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
        let node = match self.free.pop() {
            Some(n) => {
                let n = n as usize;
                self.nodes[n * NODE..(n + 1) * NODE].fill(held);
                self.nodes_len[n * NODE..(n + 1) * NODE].fill(held_len);
                n
            }
            None => {
                self.nodes.extend(std::iter::repeat_n(held, NODE));
                self.nodes_len.extend(std::iter::repeat_n(held_len, NODE));
                self.nodes.len() / NODE - 1
            }
        };
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

    /// Checks the shape: every node in use is reached from the root exactly once, none is on the free list, and
    /// none is uniform (it would have been folded). Returns the number reached.
    fn check_shape(t: &StrideTrie) -> usize {
        let mut seen = vec![0u32; t.node_slots()];
        let mut stack: Vec<usize> = t
            .root
            .iter()
            .filter(|b| b.route == CHILD_ROUTE)
            .map(|b| b.plan as usize)
            .collect();
        while let Some(n) = stack.pop() {
            seen[n] += 1;
            assert_eq!(seen[n], 1, "node {n} linked twice");
            assert!(!t.free.contains(&(n as u32)), "node {n} in use and free");
            let slots = &t.nodes[n * NODE..(n + 1) * NODE];
            let lens = &t.nodes_len[n * NODE..(n + 1) * NODE];
            assert!(
                slots
                    .iter()
                    .any(|b| *b != slots[0] || b.route == CHILD_ROUTE)
                    || lens.iter().any(|l| *l != lens[0]),
                "node {n} is uniform and was not folded"
            );
            stack.extend(
                slots
                    .iter()
                    .filter(|b| b.route == CHILD_ROUTE)
                    .map(|b| b.plan as usize),
            );
        }
        let reached = seen.iter().filter(|c| **c > 0).count();
        assert_eq!(reached, t.node_count(), "nodes in use but unreachable");
        reached
    }

    /// The same prefixes added and removed again and again: from the second round on, the trie's nodes, its
    /// allocated nodes and its memory are what they were; with the prefixes gone, no node is left.
    #[test]
    fn churn_of_the_same_prefixes_returns_to_its_plateau() {
        let mut t = StrideTrie::default();
        let base = t.bytes();
        // /48s, /64s and a /128 sharing upper bits, a /20 and a /30 covering some of them.
        let prefixes: Vec<(u128, u8)> = (0..300u128)
            .map(|i| ((0x2001_0db8_0000 + i * 7) << 80, 48))
            .chain((0..50u128).map(|i| ((0x2001_0db8_0000_0000 + i * 0x1_0001) << 64, 64)))
            .chain([
                ((0x2001_0db8_0001 << 80) | 5, 128),
                (0x2001_0d00 << 96, 20),
                (0x2001_0db8 << 96, 30),
            ])
            .collect();
        let mut plateau = None;
        for round in 0..5u32 {
            for (i, (k, l)) in prefixes.iter().enumerate() {
                t.insert(*k, *l, Best::raw(i as u32, round));
            }
            let full = (t.node_count(), t.node_slots(), t.bytes());
            assert_eq!(check_shape(&t), full.0);
            // The free list's vector is allocated in the first round of removals: the plateau starts after it.
            if round > 0 {
                assert!(
                    *plateau.get_or_insert(full) == full,
                    "round {round}: {full:?} after {plateau:?}"
                );
            }
            // Remove in an order unlike the insertions': covering prefixes go first half the time.
            let order: Vec<usize> = if round % 2 == 0 {
                (0..prefixes.len()).rev().collect()
            } else {
                (0..prefixes.len()).collect()
            };
            let mut live: Vec<bool> = vec![true; prefixes.len()];
            for i in order {
                live[i] = false;
                let (k, l) = prefixes[i];
                let cover = prefixes
                    .iter()
                    .enumerate()
                    .filter(|(j, (p, pl))| live[*j] && *pl < l && mask(k, *pl) == *p)
                    .max_by_key(|(_, (_, pl))| *pl)
                    .map(|(j, (_, pl))| (*pl, Best::raw(j as u32, round)));
                t.remove(k, l, cover);
                check_shape(&t);
            }
            assert_eq!(
                t.node_count(),
                0,
                "round {round}: nodes left with no prefix"
            );
            assert!(t.root.iter().all(|b| *b == EMPTY) && t.root_len.iter().all(|l| *l == 0));
            assert_eq!(
                t.node_slots(),
                full.1,
                "round {round}: allocated nodes grew"
            );
        }
        assert!(t.bytes() > base);
    }

    /// A window of /48s moving through ever new addresses (the soak's route churn): the trie's allocated nodes
    /// and memory stop growing once the window has moved a few nodes' worth, however far it moves.
    #[test]
    fn a_moving_window_of_prefixes_keeps_the_trie_bounded() {
        const WINDOW: u128 = 1000;
        let p = |k: u128| ((0x2001_0db8_0000 + k) << 80, 48u8);
        let mut t = StrideTrie::default();
        for k in 0..WINDOW {
            let (key, len) = p(k);
            t.insert(key, len, Best::raw(k as u32, 0));
        }
        let step = |t: &mut StrideTrie, k: u128| {
            let (key, len) = p(k - WINDOW);
            t.remove(key, len, None);
            let (key, len) = p(k);
            t.insert(key, len, Best::raw(k as u32, 0));
        };
        // Past the first carry into bits 24..32 (k = 2^16), the window has taken every shape it will take.
        for k in WINDOW..70_000 {
            step(&mut t, k);
        }
        let warm = (t.node_slots(), t.bytes());
        for k in 70_000..300_000 {
            step(&mut t, k);
        }
        check_shape(&t);
        // A window of 1000 consecutive /48s spans at most 5 nodes of /48s, 2 above them, 2 above those and 1.
        assert!(t.node_slots() <= 10, "{} nodes allocated", t.node_slots());
        assert_eq!(
            (t.node_slots(), t.bytes()),
            warm,
            "the trie grew with the churn"
        );
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
            check_shape(&t);
            // Everything removed, longest first or in table order: nothing is left, no node either.
            let mut rest = live.clone();
            if raw.len() % 2 == 0 {
                rest.sort_by_key(|e| std::cmp::Reverse(e.1));
            }
            for (k, l, _) in rest {
                live.retain(|(p, pl, _)| !(*p == k && *pl == l));
                let cover = live
                    .iter()
                    .filter(|(p, pl, _)| *pl < l && mask(k, *pl) == *p)
                    .max_by_key(|(_, pl, _)| *pl)
                    .map(|(_, pl, v)| (*pl, Best::raw(*v, 0)));
                t.remove(k, l, cover);
                check_shape(&t);
            }
            prop_assert_eq!(t.node_count(), 0);
            prop_assert!(t.root.iter().all(|b| *b == EMPTY));
        }
    }
}
