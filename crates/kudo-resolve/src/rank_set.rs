//! The solver's version sets: sets of [`Rank`]s as sorted half-open intervals of
//! plain integers.
//!
//! pubgrub spends most of a hard resolution intersecting, complementing and comparing
//! version sets. `version_ranges::Ranges<Rank>` does that on pairs of `Bound`s and keeps
//! only one interval inline, so every set of two or more intervals (most sets of a
//! shared dependency) costs an allocation per operation. Here an interval is two
//! integers and four are kept inline: that holds most sets of the benchmark catalog,
//! and fewer allocations matter more than a larger set to copy (measured: same
//! instruction count as two inline, a sixth fewer allocations per resolution).
//!
//! **Same sets as `Ranges<Rank>`.** `Ranges` treats ranks like points of a continuous
//! line: `(#1, #2)` (both excluded) is not empty. To keep every set relation, and with
//! them every choice and explanation, exactly as they were, a rank `r` is the integer
//! `2r` and the open gap between `r` and `r + 1` is the integer `2r + 1`. Every set with
//! bounds at ranks is then a union of these integers, bounds map one to one (included
//! lower `r` -> `2r`, excluded lower `r` -> `2r + 1`, included upper `r` -> `2r + 1`
//! exclusive, excluded upper `r` -> `2r` exclusive) and the canonical forms match:
//! two sets are equal, disjoint or nested exactly when the `Ranges` were.

use std::fmt;
use std::ops::Bound;

use pubgrub::VersionSet;
use smallvec::SmallVec;

use crate::rank::Rank;

/// End of an unbounded interval (exclusive). Ranks stay below 2^62 (see
/// [`crate::rank::RANK_LIMIT`]), so `2r + 1` never reaches it.
const END: u64 = u64::MAX;

/// A set of ranks; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct RankSet {
    /// Sorted, non-empty, neither overlapping nor touching: `start < end`, and each
    /// start is above the previous end (touching intervals are merged), which makes the
    /// representation of a set unique, so derived equality is set equality.
    intervals: SmallVec<[(u64, u64); 4]>,
}

fn point(r: Rank) -> u64 {
    r.get() * 2
}

impl RankSet {
    /// The set of the inclusive runs `low..=high`, given in ascending order and apart
    /// (each run's low above the previous run's high).
    pub fn from_runs(runs: impl IntoIterator<Item = (Rank, Rank)>) -> RankSet {
        let mut out = RankSet::default();
        for (low, high) in runs {
            out.push(point(low), point(high) + 1);
        }
        out
    }

    /// Append `[start, end)` above every interval so far, merging with the last one
    /// when they touch or overlap.
    fn push(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        if let Some(last) = self.intervals.last_mut()
            && start <= last.1
        {
            last.1 = last.1.max(end);
            return;
        }
        self.intervals.push((start, end));
    }

    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// How many of `ascending` (sorted ranks) the set holds.
    pub fn count_of<T>(&self, ascending: &[T], rank: impl Fn(&T) -> Rank) -> usize {
        self.intervals
            .iter()
            .map(|&(start, end)| {
                let from = ascending.partition_point(|x| point(rank(x)) < start);
                let to = ascending.partition_point(|x| point(rank(x)) < end);
                to.saturating_sub(from)
            })
            .sum()
    }

    /// How many of the ranks `spacing`, `2 * spacing`, ..., `n * spacing` the set holds:
    /// [`RankSet::count_of`] for a package whose ranks are still those of its first
    /// list, by arithmetic instead of binary searches (the solver asks on every
    /// decision).
    pub fn count_spaced(&self, n: u64, spacing: u64) -> u64 {
        let step = 2 * spacing;
        self.intervals
            .iter()
            .map(|&(start, end)| {
                // The k in 1..=n with start <= k * step < end.
                let low = start.div_ceil(step).max(1);
                let high = end.div_ceil(step).min(n.saturating_add(1));
                high.saturating_sub(low)
            })
            .sum()
    }

    /// The intervals as rank bounds, as `Ranges::iter` gives them (for messages and
    /// tests).
    pub fn bounds(&self) -> impl Iterator<Item = (Bound<Rank>, Bound<Rank>)> + '_ {
        self.intervals.iter().map(|&(start, end)| {
            let low = if start == 0 {
                Bound::Unbounded
            } else if start % 2 == 0 {
                Bound::Included(Rank::from_raw(start / 2))
            } else {
                Bound::Excluded(Rank::from_raw(start / 2))
            };
            let high = if end == END {
                Bound::Unbounded
            } else if end % 2 == 0 {
                Bound::Excluded(Rank::from_raw(end / 2))
            } else {
                Bound::Included(Rank::from_raw(end / 2))
            };
            (low, high)
        })
    }
}

impl VersionSet for RankSet {
    type V = Rank;

    fn empty() -> RankSet {
        RankSet::default()
    }

    fn full() -> RankSet {
        let mut s = RankSet::default();
        s.intervals.push((0, END));
        s
    }

    fn singleton(v: Rank) -> RankSet {
        let mut s = RankSet::default();
        s.intervals.push((point(v), point(v) + 1));
        s
    }

    fn complement(&self) -> RankSet {
        let mut out = RankSet::default();
        let mut from = 0;
        for &(start, end) in &self.intervals {
            out.push(from, start);
            from = end;
        }
        out.push(from, END);
        out
    }

    fn intersection(&self, other: &RankSet) -> RankSet {
        let mut out = RankSet::default();
        let (mut i, mut j) = (0, 0);
        while let (Some(&(a0, a1)), Some(&(b0, b1))) =
            (self.intervals.get(i), other.intervals.get(j))
        {
            out.push(a0.max(b0), a1.min(b1));
            if a1 < b1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        out
    }

    fn union(&self, other: &RankSet) -> RankSet {
        let mut out = RankSet::default();
        let (mut i, mut j) = (0, 0);
        loop {
            let next = match (self.intervals.get(i), other.intervals.get(j)) {
                (Some(a), Some(b)) if a.0 <= b.0 => {
                    i += 1;
                    *a
                }
                (_, Some(b)) => {
                    j += 1;
                    *b
                }
                (Some(a), None) => {
                    i += 1;
                    *a
                }
                (None, None) => break,
            };
            out.push(next.0, next.1);
        }
        out
    }

    fn contains(&self, v: &Rank) -> bool {
        let p = point(*v);
        let at = self.intervals.partition_point(|&(_, end)| end <= p);
        self.intervals.get(at).is_some_and(|&(start, _)| start <= p)
    }

    fn is_disjoint(&self, other: &RankSet) -> bool {
        let (mut i, mut j) = (0, 0);
        while let (Some(&(a0, a1)), Some(&(b0, b1))) =
            (self.intervals.get(i), other.intervals.get(j))
        {
            if a0.max(b0) < a1.min(b1) {
                return false;
            }
            if a1 < b1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        true
    }

    fn subset_of(&self, other: &RankSet) -> bool {
        // Each interval of `self` must lie inside one interval of `other` (intervals of
        // a set never touch, so it cannot span two).
        let mut j = 0;
        for &(a0, a1) in &self.intervals {
            while other.intervals.get(j).is_some_and(|&(_, b1)| b1 <= a0) {
                j += 1;
            }
            match other.intervals.get(j) {
                Some(&(b0, b1)) if b0 <= a0 && a1 <= b1 => {}
                _ => return false,
            }
        }
        true
    }
}

impl fmt::Display for RankSet {
    // Only pubgrub's own logs print a set; explanations name versions (`explain`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("∅");
        }
        for (i, (low, high)) in self.bounds().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            match low {
                Bound::Included(r) => write!(f, ">={r}")?,
                Bound::Excluded(r) => write!(f, ">{r}")?,
                Bound::Unbounded => f.write_str("*")?,
            }
            match high {
                Bound::Included(r) => write!(f, ", <={r}")?,
                Bound::Excluded(r) => write!(f, ", <{r}")?,
                Bound::Unbounded => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use version_ranges::Ranges;

    /// Every set with bounds among a few ranks, built both ways from the same
    /// operations: the integer sets must answer every question as `Ranges` does.
    #[test]
    fn agrees_with_ranges_on_every_operation() {
        let r = |n: u64| Rank::from_raw(n);
        let ranks = [1u64, 2, 4, 5, 9];
        let mut sets: Vec<(RankSet, Ranges<Rank>)> = vec![
            (RankSet::empty(), Ranges::empty()),
            (RankSet::full(), Ranges::full()),
        ];
        for &a in &ranks {
            sets.push((RankSet::singleton(r(a)), Ranges::singleton(r(a))));
            for &b in ranks.iter().filter(|&&b| b >= a) {
                sets.push((
                    RankSet::from_runs([(r(a), r(b))]),
                    Ranges::from_range_bounds(r(a)..=r(b)),
                ));
            }
        }
        // Grow the family with complements, unions and intersections of pairs.
        let base = sets.clone();
        for (x, rx) in &base {
            sets.push((x.complement(), rx.complement()));
            for (y, ry) in &base {
                sets.push((x.union(y), rx.union(ry)));
                sets.push((
                    x.complement().intersection(y),
                    rx.complement().intersection(ry),
                ));
            }
        }
        for (x, rx) in &sets {
            let shown: Vec<_> = x.bounds().collect();
            let expected: Vec<_> = rx.iter().map(|(l, h)| (*l, *h)).collect();
            assert_eq!(shown, expected, "{x}");
            for v in 0..11 {
                assert_eq!(x.contains(&r(v)), rx.contains(&r(v)));
            }
        }
        // Counting: spaced ranks 2, 4, 6, 8 (spacing 2) against the same by search.
        let spaced: Vec<Rank> = (1..=4).map(|k| r(2 * k)).collect();
        for (x, _) in &sets {
            let by_search = x.count_of(&spaced, |r| *r) as u64;
            assert_eq!(x.count_spaced(4, 2), by_search, "{x}");
        }
        for (x, rx) in sets.iter().step_by(7) {
            for (y, ry) in &sets {
                assert_eq!(x == y, rx == ry);
                assert_eq!(x.is_disjoint(y), rx.is_disjoint(ry), "{x} / {y}");
                assert_eq!(x.subset_of(y), rx.subset_of(ry), "{x} / {y}");
                let both: Vec<_> = x.intersection(y).bounds().collect();
                let expected: Vec<_> = rx.intersection(ry).iter().map(|(l, h)| (*l, *h)).collect();
                assert_eq!(both, expected);
            }
        }
    }
}
