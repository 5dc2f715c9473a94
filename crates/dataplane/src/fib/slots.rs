//! The route slots of a [`Fib`](super::Fib), in chunks that two snapshots share.
//!
//! The snapshot writer keeps two snapshots that hold the same routes (the published one and its spare, see
//! [`SnapshotWriter`](crate::snapshot::SnapshotWriter)). A route entry is 68 bytes; held twice, the
//! entries were the largest part of what a route costs. Here they are stored in chunks of [`CHUNK`] slots behind
//! reference counts: a copy of the table shares every chunk, a change copies the one chunk it writes (copy on
//! write), and [`RouteSlots::share_from`] lets two tables that have applied the same changes share the chunks
//! whose contents are equal again. So the two snapshots hold one copy of the entries, but for the chunks the
//! latest batch wrote.
//!
//! Reading a slot costs one more load than a flat vector (the chunk, then the entry). The forwarding fast path
//! does not read route entries: the lookup index holds each prefix's best route and plan
//! ([`Best`](super::Best)).

use super::RouteEntry;
use std::sync::Arc;

/// log2 of [`CHUNK`].
const SHIFT: u32 = 8;
/// Slots per chunk: 256 entries of 68 bytes (a chunk written by a change is copied whole).
pub const CHUNK: usize = 1 << SHIFT;

/// Route slots indexed by [`RouteId`](super::RouteId), in shared chunks of `CHUNK` (256) (every chunk full but the
/// last).
#[derive(Debug, Clone, Default)]
pub struct RouteSlots {
    chunks: Vec<Arc<Vec<RouteEntry>>>,
    len: usize,
}

impl RouteSlots {
    /// Number of slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no slot.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&RouteEntry> {
        self.chunks.get(i >> SHIFT)?.get(i & (CHUNK - 1))
    }

    /// The slot `i`, to change (its chunk copied first when another table shares it).
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut RouteEntry> {
        Arc::make_mut(self.chunks.get_mut(i >> SHIFT)?).get_mut(i & (CHUNK - 1))
    }

    /// Every slot, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &RouteEntry> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// Every slot, to change (every chunk made this table's own).
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut RouteEntry> {
        self.chunks
            .iter_mut()
            .flat_map(|c| Arc::make_mut(c).iter_mut())
    }

    /// Adds a slot at the end.
    pub(crate) fn push(&mut self, e: RouteEntry) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        let last = self.chunks.last_mut().expect("a chunk with room");
        Arc::make_mut(last).push(e);
        self.len += 1;
    }

    /// Removes the last slot; a chunk left empty is freed.
    pub(crate) fn pop(&mut self) {
        let Some(last) = self.chunks.last_mut() else {
            return;
        };
        Arc::make_mut(last).pop();
        self.len -= 1;
        if last.is_empty() {
            self.chunks.pop();
            if self.chunks.len() < self.chunks.capacity() / 2 {
                self.chunks.shrink_to_fit();
            }
        }
    }

    /// Shares with `other` every chunk whose slots are equal to its own (tables that applied the same changes
    /// from the same state): afterwards the two hold one copy of them. Chunks already shared are skipped
    /// without being read.
    pub(crate) fn share_from(&mut self, other: &RouteSlots) {
        for (a, b) in self.chunks.iter_mut().zip(&other.chunks) {
            if !Arc::ptr_eq(a, b) && a == b {
                *a = Arc::clone(b);
            }
        }
    }

    /// How many chunks this table shares with `other` (tests).
    #[cfg(test)]
    pub(crate) fn shared_with(&self, other: &RouteSlots) -> usize {
        self.chunks
            .iter()
            .zip(&other.chunks)
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }
}

impl std::ops::Index<usize> for RouteSlots {
    type Output = RouteEntry;

    fn index(&self, i: usize) -> &RouteEntry {
        &self.chunks[i >> SHIFT][i & (CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::r;
    use super::super::{Fib, RouteEntry};
    use ipnet::IpNet;

    /// Route `i` of many: 2001:db8:(i >> 16):(i & 0xffff)::/64 on device `dev`.
    fn route(i: u32, dev: usize) -> RouteEntry {
        r(
            &format!("2001:db8:{:x}:{:x}::/64", i >> 16, i & 0xffff),
            1024,
            dev,
        )
    }

    /// A copy of a table shares its chunks; a change to the copy writes a copy of the one chunk it touches and
    /// leaves the original as it was; once the original has the same change, the two share every chunk again.
    #[test]
    fn copies_share_chunks_and_write_their_own() {
        let mut a = Fib::new();
        for i in 0..1000 {
            a.insert(route(i, 1));
        }
        let chunks = 1000usize.div_ceil(super::CHUNK);
        let mut b = a.clone();
        assert_eq!(b.routes.shared_with(&a.routes), chunks);
        let gone: IpNet = "2001:db8:0:300::/64".parse().unwrap();
        assert!(b.remove(gone, 1024).is_some());
        let id = b.insert(route(5000, 2));
        assert_eq!(id, 0x300, "the freed slot is reused");
        assert_eq!(b.routes.shared_with(&a.routes), chunks - 1);
        // The original is untouched.
        assert_eq!(a.route(0x300).unwrap().prefix, gone);
        assert_eq!(a.route(0x300).unwrap().dev.get(), Some(1));
        let at = |f: &Fib, s: &str| f.lookup_v6(s.parse().unwrap()).and_then(|r| r.dev.get());
        assert_eq!(at(&a, "2001:db8:0:300::1"), Some(1));
        assert_eq!(at(&b, "2001:db8:0:300::1"), None);
        assert_eq!(at(&b, "2001:db8:0:1388::1"), Some(2));
        // The same changes on the original: equal slots, shared again.
        assert!(a.remove(gone, 1024).is_some());
        a.insert(route(5000, 2));
        assert_eq!(b.routes.shared_with(&a.routes), chunks - 1);
        b.share_routes_from(&a);
        assert_eq!(b.routes.shared_with(&a.routes), chunks);
        assert_eq!(at(&b, "2001:db8:0:1388::1"), Some(2));
        // Slots that differ are not shared.
        a.set_plan(7, Some(3));
        b.share_routes_from(&a);
        assert_eq!(b.routes.shared_with(&a.routes), chunks - 1);
        assert_eq!(b.route(7).unwrap().plan, None);
    }

    /// Removing the routes at the end frees the chunks they leave empty.
    #[test]
    fn chunks_emptied_at_the_end_are_freed() {
        let mut f = Fib::new();
        for i in 0..1000 {
            f.insert(route(i, 1));
        }
        for i in 300..1000 {
            let p: IpNet = format!("2001:db8:{:x}:{:x}::/64", i >> 16, i & 0xffff)
                .parse()
                .unwrap();
            assert!(f.remove(p, 1024).is_some());
        }
        // A removed slot stays until the next change; one more gives them back.
        f.insert(route(7000, 1));
        assert_eq!(f.routes.len(), 301);
        assert_eq!(f.routes.chunks.len(), 301usize.div_ceil(super::CHUNK));
        assert_eq!(f.len(), 301);
    }
}
