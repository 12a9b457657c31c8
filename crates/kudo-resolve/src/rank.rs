//! The solver's version type: a number per known version of one package, ordered as
//! the versions themselves are.
//!
//! pubgrub compares, copies and drops versions in every range operation; with
//! [`PackageVersion`] each of those is a semver comparison or an atomic reference
//! count. pubgrub only ever compares two versions of the same package, so a number
//! that keeps each package's own order is enough, and turns that work into integer
//! operations.
//!
//! Numbers are spaced [`SPACING`] apart, so a version found later (a folder or URL
//! dependency read while solving) gets a number between its neighbours and every
//! number already handed to the solver keeps its meaning. Every range the solver sees
//! has bounds at known versions, so the numbers between two known versions play the
//! part the unknown versions between them did before: set relations, and therefore
//! every choice and every explanation, are the same.

use std::fmt;

use crate::error::ResolveError;
use crate::solve::PackageVersion;

/// One known version of one package, as the solver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rank(u64);

/// Ranks stay below this, so that [`crate::rank_set::RankSet`] can double them.
pub(crate) const RANK_LIMIT: u64 = 1 << 62;

impl Rank {
    pub fn get(self) -> u64 {
        self.0
    }

    /// A rank from its number (sets turning their bounds back into ranks, tests).
    pub fn from_raw(n: u64) -> Rank {
        Rank(n)
    }
}

/// The rank of the `i`-th (from 0) version of a first list, or `None` past the limit.
pub(crate) fn spaced(i: usize) -> Option<Rank> {
    let n = u64::try_from(i).ok()?.checked_add(1)?;
    n.checked_mul(SPACING).filter(|r| *r < RANK_LIMIT).map(Rank)
}

fn too_many(package: &str) -> ResolveError {
    ResolveError::Catalog(format!("{package}: too many versions to order"))
}

impl fmt::Display for Rank {
    // Only pubgrub's own logs print a bare rank; explanations map ranks back to
    // versions (`explain::Words`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The gap left between two versions listed together.
pub(crate) const SPACING: u64 = 1 << 32;

/// The numbers given to one package's versions so far.
#[derive(Debug, Default)]
pub(crate) struct Ranks {
    /// Ascending by version (so also by rank): a sorted vector rather than a map, since
    /// a package is ranked once in bulk and looked up by binary search; versions found
    /// later are rare and few.
    by_version: Vec<(PackageVersion, Rank)>,
}

impl Ranks {
    /// The rank of every version in `versions`, giving new ones a number between their
    /// ranked neighbours.
    pub fn assign<'v>(
        &mut self,
        package: &str,
        versions: impl IntoIterator<Item = &'v PackageVersion>,
    ) -> Result<(), ResolveError> {
        let mut new: Vec<&PackageVersion> = versions
            .into_iter()
            .filter(|v| self.get(v).is_none())
            .collect();
        // Candidate lists come newest first: the sort sees one descending run and only
        // reverses it.
        new.sort();
        new.dedup();
        if self.by_version.is_empty() {
            // The first list: evenly spaced, leaving room below the lowest.
            self.by_version = new
                .into_iter()
                .enumerate()
                .map(|(i, v)| Ok((v.clone(), spaced(i).ok_or_else(|| too_many(package))?)))
                .collect::<Result<_, ResolveError>>()?;
            return Ok(());
        }
        for v in new {
            let at = self.by_version.partition_point(|(x, _)| x < v);
            let below = at
                .checked_sub(1)
                .and_then(|i| self.by_version.get(i))
                .map_or(0, |(_, r)| r.0);
            let above = self
                .by_version
                .get(at)
                .map(|(_, r)| r.0)
                .unwrap_or_else(|| below.saturating_add(2 * SPACING));
            let mid = below + (above - below) / 2;
            if mid == below || mid >= RANK_LIMIT {
                return Err(ResolveError::Catalog(format!(
                    "{package}: too many versions found while resolving to order {v} among them"
                )));
            }
            self.by_version.insert(at, (v.clone(), Rank(mid)));
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.by_version.is_empty()
    }

    /// The first list of a package when it is strictly descending (the usual candidate
    /// order): the same ranks [`Ranks::assign`] gives, without sorting; returned in the
    /// list's order.
    pub fn first_descending<'v>(
        &mut self,
        package: &str,
        versions: impl DoubleEndedIterator<Item = &'v PackageVersion>,
    ) -> Result<Vec<Rank>, ResolveError> {
        debug_assert!(self.by_version.is_empty());
        self.by_version = versions
            .rev()
            .enumerate()
            .map(|(i, v)| Ok((v.clone(), spaced(i).ok_or_else(|| too_many(package))?)))
            .collect::<Result<_, ResolveError>>()?;
        Ok(self.by_version.iter().rev().map(|(_, r)| *r).collect())
    }

    pub fn get(&self, v: &PackageVersion) -> Option<Rank> {
        self.by_version
            .binary_search_by(|(x, _)| x.cmp(v))
            .ok()
            .and_then(|i| self.by_version.get(i))
            .map(|(_, r)| *r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> PackageVersion {
        PackageVersion::new(s, None)
    }

    #[test]
    fn ranks_follow_version_order_and_never_move() {
        let mut r = Ranks::default();
        let first = [v("1.0.0"), v("1.2.0"), v("0.9.0")];
        r.assign("p", &first).unwrap();
        let before: Vec<Rank> = first.iter().map(|x| r.get(x).unwrap()).collect();
        // Found later: below, between and above the first ones.
        let later = [v("0.1.0"), v("1.1.0"), v("1.1.5"), v("3.0.0")];
        r.assign("p", &later).unwrap();
        let after: Vec<Rank> = first.iter().map(|x| r.get(x).unwrap()).collect();
        assert_eq!(before, after);
        let mut all: Vec<PackageVersion> = first.iter().chain(&later).cloned().collect();
        all.sort();
        let ranks: Vec<Rank> = all.iter().map(|x| r.get(x).unwrap()).collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{ranks:?}");
    }

    #[test]
    fn a_descending_first_list_gets_the_ranks_assign_gives() {
        let list = [v("2.0.0"), v("1.10.0"), v("1.2.0"), v("0.1.0")];
        let mut sorted = Ranks::default();
        sorted.assign("p", &list).unwrap();
        let mut fast = Ranks::default();
        let given = fast.first_descending("p", list.iter()).unwrap();
        let expected: Vec<Rank> = list.iter().map(|x| sorted.get(x).unwrap()).collect();
        assert_eq!(given, expected);
        let looked_up: Vec<Rank> = list.iter().map(|x| fast.get(x).unwrap()).collect();
        assert_eq!(looked_up, expected);
    }

    #[test]
    fn an_exhausted_gap_is_an_error_not_a_wrong_order() {
        let mut r = Ranks::default();
        r.assign("p", &[v("1.0.0"), v("2.0.0")]).unwrap();
        let mut failed = false;
        for i in 0..40 {
            // Each one lands just above 1.0.0, halving the same gap.
            let x = v(&format!("1.0.{}", 1000 - i));
            if r.assign("p", [&x]).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }
}
