//! The sourced templates ([`TemplatesBuilder::add_sourced`](super::TemplatesBuilder::add_sourced)) grouped by
//! the source they hold and the device their routes leave by, each group sorted by the templates' outer
//! destination: what an `addr add` needs to find the templates whose selected source the new address takes over
//! without asking each tunnel.
//!
//! Why sorted destinations are enough. Before the address `a` comes, a group's templates (route device `dev`,
//! source `s`) all select `s`; after, each selects `s` or `a` (the other candidates were beaten by `s` already).
//! Which one depends on the destination only through the rules of [`saddr`](crate::hop::saddr): scope, label
//! and candidate set, which are constant inside any prefix holding none of the prefixes they are defined by
//! ([`classes_constant_on`](crate::hop::saddr::classes_constant_on), passed in by the snapshot), and rule 8, the
//! bits the destination shares with `a` and with `s`, which are constant inside any prefix that holds neither
//! `a` nor `s`. So the destination space splits into a few hundred prefixes at most (the paths towards `a`, `s`
//! and the class prefixes, one level at a time) inside each of which one destination answers for all: the
//! selection is asked once per such prefix holding templates, and the templates of the prefixes `a` wins are
//! rewritten and move to group (`dev`, `a`) in sorted runs.

use crate::fib::{DevId, FastBuild, within};
use std::collections::{BTreeSet, HashMap};
use std::net::Ipv6Addr;

/// A template's place in a group: its outer destination (big-endian bytes, so that the order is the address's)
/// and its start.
type Entry = ([u8; 16], u32);

/// Route device and source of a group.
type Key = (Option<DevId>, Ipv6Addr);

/// The groups (see the module's text).
#[derive(Debug, Clone, Default)]
pub(crate) struct SelectedSources {
    groups: HashMap<Key, BTreeSet<Entry>, FastBuild>,
}

/// A prefix of destinations, first and last address.
type Span = (u128, u128);

/// What [`TemplatesBuilder::take_over`](super::TemplatesBuilder::take_over) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeOver {
    /// The sources it took over were rewritten: this many templates.
    Done(usize),
    /// A group's templates select neither their source nor the new address (the groups do not hold what the
    /// selection says): nothing is known; every tunnel must be looked at.
    Stale,
}

impl SelectedSources {
    /// Files the template at `start` (route device `dev`, source `src`, outer destination `dst`).
    pub(crate) fn insert(&mut self, dev: Option<DevId>, src: Ipv6Addr, dst: Ipv6Addr, start: u32) {
        self.groups
            .entry((dev, src))
            .or_default()
            .insert((dst.octets(), start));
    }

    /// Takes the template at `start` out.
    pub(crate) fn remove(&mut self, dev: Option<DevId>, src: Ipv6Addr, dst: Ipv6Addr, start: u32) {
        let key = (dev, src);
        if let Some(g) = self.groups.get_mut(&key) {
            g.remove(&(dst.octets(), start));
            if g.is_empty() {
                self.groups.remove(&key);
            }
        }
    }

    /// The source of the template at `start` (route device `dev`, outer destination `dst`): its group's. One
    /// ordered-set lookup per group of the device (a few: one per source selected through it).
    pub(crate) fn source_of(
        &self,
        dev: Option<DevId>,
        dst: Ipv6Addr,
        start: u32,
    ) -> Option<Ipv6Addr> {
        let e = (dst.octets(), start);
        self.groups
            .iter()
            .find(|((d, _), g)| *d == dev && g.contains(&e))
            .map(|((_, s), _)| *s)
    }

    /// Calls `f` with every template's start and source.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u32, Ipv6Addr)) {
        for ((_, src), g) in &self.groups {
            for &(_, start) in g {
                f(start, *src);
            }
        }
    }

    /// Every template now holds `src` (a node tunnel source): one group per device.
    pub(crate) fn set_all(&mut self, src: Ipv6Addr) {
        let old = std::mem::take(&mut self.groups);
        for ((dev, _), mut g) in old {
            // `append` swaps when the group it joins is empty: one device's single group moves whole.
            self.groups.entry((dev, src)).or_default().append(&mut g);
        }
    }

    /// After address `a` came: `select(dev, dst)` is the source now selected (every address counted, `a` among
    /// them). The templates whose selection `a` takes over are rewritten by `write` (its start) and move to `a`'s
    /// groups; cost: the prefixes of the module's text with an ordered-set range query each, the selection asked
    /// once per prefix holding templates, and the templates moved.
    pub(crate) fn take_over(
        &mut self,
        a: Ipv6Addr,
        select: impl Fn(Option<DevId>, &Ipv6Addr) -> Option<Ipv6Addr>,
        classes: fn(u128, u32) -> bool,
        mut write: impl FnMut(u32),
    ) -> TakeOver {
        let keys: Vec<Key> = self
            .groups
            .keys()
            .filter(|(_, s)| *s != a)
            .copied()
            .collect();
        let mut moved_count = 0;
        for key in keys {
            let (dev, s) = key;
            let Some(mut g) = self.groups.remove(&key) else {
                continue;
            };
            let mut spans = Vec::new();
            split(
                &g,
                (u128::from(a), u128::from(s)),
                classes,
                0,
                0,
                &mut spans,
            );
            let mut wins = Vec::new();
            let mut stale = false;
            for span in spans {
                let Some(&(first, _)) = g.range(bounds(span)).next() else {
                    continue;
                };
                match select(dev, &Ipv6Addr::from(first)) {
                    Some(x) if x == s => {}
                    Some(x) if x == a => wins.push(span),
                    _ => stale = true,
                }
            }
            let mut moved = BTreeSet::new();
            for span in wins {
                let n = g.range(bounds(span)).count();
                let mut run = if n * 16 < g.len() {
                    // A few out of many: one by one.
                    let run: BTreeSet<Entry> = g.range(bounds(span)).copied().collect();
                    for e in &run {
                        g.remove(e);
                    }
                    run
                } else {
                    let mut run = g.split_off(&(span.0.to_be_bytes(), 0));
                    if let Some(after) = span.1.checked_add(1) {
                        let mut tail = run.split_off(&(after.to_be_bytes(), 0));
                        g.append(&mut tail);
                    }
                    run
                };
                moved.append(&mut run);
            }
            moved_count += moved.len();
            for (_, start) in &moved {
                write(*start);
            }
            if !moved.is_empty() {
                self.groups.entry((dev, a)).or_default().append(&mut moved);
            }
            if !g.is_empty() {
                self.groups.insert(key, g);
            }
            if stale {
                return TakeOver::Stale;
            }
        }
        TakeOver::Done(moved_count)
    }

    /// How many templates the groups hold (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.groups.values().map(BTreeSet::len).sum()
    }
}

/// The range of entries whose destination lies in `span`.
fn bounds((first, last): Span) -> std::ops::RangeInclusive<Entry> {
    (first.to_be_bytes(), 0)..=(last.to_be_bytes(), u32::MAX)
}

/// Appends to `out`, in order, the prefixes under `p/len` holding entries of `g` inside each of which the choice
/// between `a` and `s` is the same for every destination (see the module's text; `classes`: whether scope, label
/// and candidate set are constant on a prefix).
fn split(
    g: &BTreeSet<Entry>,
    (a, s): (u128, u128),
    classes: fn(u128, u32) -> bool,
    p: u128,
    len: u32,
    out: &mut Vec<Span>,
) {
    let last = p | u128::MAX.checked_shr(len).unwrap_or(0);
    if g.range(bounds((p, last))).next().is_none() {
        return;
    }
    let constant = len == 128 || (!within(a, p, len) && !within(s, p, len) && classes(p, len));
    if constant {
        out.push((p, last));
    } else {
        split(g, (a, s), classes, p, len + 1, out);
        split(g, (a, s), classes, p | 1 << (127 - len), len + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// No scope or label prefixes: the prefixes split along the paths to `a` and `s` alone (the snapshot's
    /// tests cover the real ones).
    fn classes(_: u128, _: u32) -> bool {
        true
    }

    /// Group (r1, fd00:2::1) holds templates towards fc00::/8 and towards fd00:2:0:1::/64 (rule 8 keeps these
    /// with fd00:2::1 against fd00:3::1, 47 bits against 30... and a tie elsewhere that the newest wins): with
    /// a selection by hand (a wins but inside fd00:2::/32), only the others move, and are written.
    #[test]
    fn moves_the_prefixes_the_new_address_wins() {
        let mut g = SelectedSources::default();
        let (s, new) = (a("fd00:2::1"), a("fd00:3::1"));
        let dsts = [
            "fc00::1",
            "fc00::2",
            "fc00:5::9",
            "fd00:2:0:1::5",
            "fd00:2::7",
            "2001:db8::1",
        ];
        for (i, d) in dsts.iter().enumerate() {
            g.insert(Some(1), s, a(d), 64 * i as u32);
        }
        g.insert(Some(0), s, a("fc00::1"), 1000);
        // By hand: `new` wins on device 1 outside fd00:2::/32; device 0 keeps `s`.
        let select = |dev: Option<DevId>, d: &Ipv6Addr| {
            let inside = u128::from(*d) >> 96 == 0xfd00_0002;
            Some(if dev == Some(1) && !inside { new } else { s })
        };
        let mut written = Vec::new();
        assert_eq!(
            g.take_over(new, select, classes, |st| written.push(st)),
            TakeOver::Done(4)
        );
        written.sort_unstable();
        assert_eq!(written, vec![0, 64, 128, 320]);
        assert_eq!(g.groups[&(Some(1), new)].len(), 4);
        assert_eq!(g.groups[&(Some(1), s)].len(), 2);
        assert_eq!(g.groups[&(Some(0), s)].len(), 1);
        assert_eq!(g.len(), 7);
        // A selection that is neither: stale.
        let other = a("fd00:9::1");
        assert_eq!(
            g.take_over(a("fd00:4::1"), |_, _| Some(other), classes, |_| {}),
            TakeOver::Stale
        );
    }

    /// The prefixes split where `a` and `s` part, and nowhere else but at class prefixes: a group of 10,000
    /// destinations in fc00::/8 is asked once for (a, s) in fd00::/8.
    #[test]
    fn one_question_for_a_uniform_prefix() {
        let mut g = SelectedSources::default();
        let s = a("fd00:2::1");
        for i in 0..10_000u32 {
            g.insert(
                Some(1),
                s,
                Ipv6Addr::from(0xfc00u128 << 112 | u128::from(i)),
                i * 64,
            );
        }
        let asked = std::cell::Cell::new(0);
        let new = a("fd00:3::1");
        let r = g.take_over(
            new,
            |_, _| {
                asked.set(asked.get() + 1);
                Some(new)
            },
            classes,
            |_| {},
        );
        assert_eq!(r, TakeOver::Done(10_000));
        assert_eq!(asked.get(), 1);
        assert!(!g.groups.contains_key(&(Some(1), s)));
    }
}
