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

use std::collections::BTreeMap;
use std::fmt;

use crate::error::ResolveError;
use crate::solve::PackageVersion;

/// One known version of one package, as the solver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rank(u64);

impl Rank {
    /// Above every rank given out (a sentinel for scans).
    pub const MAX: Rank = Rank(u64::MAX);
}

impl fmt::Display for Rank {
    // Only pubgrub's own logs print a bare rank; explanations map ranks back to
    // versions (`explain::Words`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The gap left between two versions listed together.
const SPACING: u64 = 1 << 32;

/// The numbers given to one package's versions so far.
#[derive(Debug, Default)]
pub(crate) struct Ranks {
    by_version: BTreeMap<PackageVersion, Rank>,
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
            .filter(|v| !self.by_version.contains_key(*v))
            .collect();
        new.sort();
        new.dedup();
        if self.by_version.is_empty() {
            // The first list: evenly spaced, leaving room below the lowest.
            for (i, v) in new.into_iter().enumerate() {
                let n = u64::try_from(i + 1).unwrap_or(u64::MAX / SPACING);
                self.by_version.insert(v.clone(), Rank(n * SPACING));
            }
            return Ok(());
        }
        for v in new {
            let below = self
                .by_version
                .range(..v)
                .next_back()
                .map_or(0, |(_, r)| r.0);
            let above = self
                .by_version
                .range(v..)
                .next()
                .map(|(_, r)| r.0)
                .unwrap_or_else(|| below.saturating_add(2 * SPACING));
            let mid = below + (above - below) / 2;
            if mid == below {
                return Err(ResolveError::Catalog(format!(
                    "{package}: too many versions found while resolving to order {v} among them"
                )));
            }
            self.by_version.insert(v.clone(), Rank(mid));
        }
        Ok(())
    }

    pub fn get(&self, v: &PackageVersion) -> Option<Rank> {
        self.by_version.get(v).copied()
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
