//! Turning pubgrub's derivation tree into plain words: first the asks that clash (who
//! asked what of which package), then pubgrub's step-by-step reasoning, where version
//! sets are written as the known versions they contain and dependency edges as the
//! KudoOperator task that made them.

use std::collections::BTreeSet;
use std::sync::Arc;

use pubgrub::{
    DefaultStringReporter, DerivationTree, Derived, External, Map, ReportFormatter, Reporter, Term,
    VersionSet,
};

use crate::error::{MissingVersion, ResolveError};
use crate::solve::{PackageVersion, Provider, VSet};

type Tree = DerivationTree<String, VSet, String>;
type Ext = External<String, VSet, String>;

pub(crate) fn explain(provider: &Provider<'_>, mut tree: Tree) -> ResolveError {
    tree.collapse_no_versions();
    let words = Words { p: provider };
    let mut edges = Vec::new();
    collect_edges(&tree, &mut edges);

    let mut lines = Vec::new();
    let mut missing: Vec<MissingVersion> = Vec::new();
    let mut seen = BTreeSet::new();
    for (p, set_p, dep) in &edges {
        for v in words.versions_in(p, set_p) {
            let Ok(asks) = provider.asks(p, &v) else {
                continue;
            };
            for ask in asks.iter().filter(|a| a.dep == *dep) {
                let line = format!(
                    "{p} {v} ({}) asks for {}{}",
                    ask.origin(),
                    ask.phrase(),
                    words.matching_suffix(dep, ask)
                );
                if seen.insert(line.clone()) {
                    lines.push(format!("  - {line}"));
                }
                if provider.allowed(ask).is_ok_and(|s| s.is_empty()) {
                    let m = MissingVersion {
                        package: dep.clone(),
                        asked: ask.describe(),
                        asked_by: format!("{p} {v} ({})", ask.origin()),
                        available: provider.available(dep),
                    };
                    if !missing.contains(&m) {
                        missing.push(m);
                    }
                }
            }
        }
    }
    let reasoning = DefaultStringReporter::report_with_formatter(&tree, &words);
    let mut explanation = String::new();
    if !lines.is_empty() {
        explanation.push_str("The asks involved:\n");
        explanation.push_str(&lines.join("\n"));
        explanation.push_str("\nWhy they cannot all hold:\n");
    }
    for l in reasoning.lines() {
        explanation.push_str("  ");
        explanation.push_str(l);
        explanation.push('\n');
    }
    explanation.push_str(
        "Fix: widen a range in one of these KudoOperator tasks or `dependencies:` entries, or pin one version for the package with a user override.",
    );
    ResolveError::Unsatisfiable {
        explanation,
        missing,
    }
}

/// Every "p (in set) depends on dep" leaf of the tree, in tree order.
fn collect_edges(tree: &Tree, out: &mut Vec<(String, VSet, String)>) {
    match tree {
        DerivationTree::External(External::FromDependencyOf(p, set_p, dep, _)) => {
            if !out.iter().any(|(a, s, d)| a == p && s == set_p && d == dep) {
                out.push((p.clone(), set_p.clone(), dep.clone()));
            }
        }
        DerivationTree::External(_) => {}
        DerivationTree::Derived(d) => {
            collect_edges(Arc::as_ref(&d.cause1), out);
            collect_edges(Arc::as_ref(&d.cause2), out);
        }
    }
}

struct Words<'p, 'a> {
    p: &'p Provider<'a>,
}

impl Words<'_, '_> {
    fn versions_in(&self, name: &str, set: &VSet) -> Vec<PackageVersion> {
        self.p
            .candidates(name)
            .map(|c| {
                c.iter()
                    .filter(|c| set.contains(&c.rank))
                    .map(|c| c.version.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A version set as words: `kafka 1.3.2`, `kafka 1.3.2 or 1.3.1`, `any version of kafka`.
    fn set(&self, name: &str, set: &VSet) -> String {
        let all = self.p.candidates(name).map(|c| c.len()).unwrap_or(0);
        let inside = self.versions_in(name, set);
        if *set == VSet::full() || (all > 1 && inside.len() == all) {
            return format!("any version of {name}");
        }
        match inside.as_slice() {
            [] => format!("no known version of {name}"),
            [one] => format!("{name} {one}"),
            many => {
                let shown: Vec<String> = many.iter().take(6).map(|v| v.to_string()).collect();
                let more = if many.len() > 6 {
                    format!(" and {} more", many.len() - 6)
                } else {
                    String::new()
                };
                format!("{name} {}{more}", shown.join(" or "))
            }
        }
    }

    fn matching_suffix(&self, dep: &str, ask: &crate::solve::Ask) -> String {
        let Ok(set) = self.p.allowed(ask) else {
            return String::new();
        };
        let matches = self.versions_in(dep, &set);
        if matches.is_empty() {
            let avail = self.p.available(dep);
            if avail.is_empty() {
                format!(", but no version of {dep} is known")
            } else {
                format!(
                    ", which no known version matches (available: {})",
                    avail.join(", ")
                )
            }
        } else {
            let shown: Vec<String> = matches.iter().map(|v| v.to_string()).collect();
            format!(" (matches {})", shown.join(", "))
        }
    }

    fn depends(&self, p: &str, set_p: &VSet, dep: &str, set_dep: &VSet) -> String {
        let who = if *p == self.p.root_name {
            format!("{p} {}", self.p.root_version)
        } else {
            self.set(p, set_p)
        };
        // When exactly one version of `p` is meant, quote its task's own words.
        let versions = self.versions_in(p, set_p);
        if let [v] = versions.as_slice()
            && let Ok(asks) = self.p.asks(p, v)
        {
            let texts: Vec<String> = asks
                .iter()
                .filter(|a| a.dep == dep)
                .map(|a| format!("{} via {}", a.phrase(), a.origin()))
                .collect();
            if !texts.is_empty() {
                let got = self.set(dep, set_dep);
                return format!("{who} needs {} (that is {got})", texts.join(" and "));
            }
        }
        format!("{who} needs {}", self.set(dep, set_dep))
    }

    fn term(&self, p: &str, t: &Term<VSet>) -> String {
        match t {
            Term::Positive(r) => self.set(p, r),
            Term::Negative(r) => format!("not {}", self.set(p, r)),
        }
    }
}

impl ReportFormatter<String, VSet, String> for Words<'_, '_> {
    type Output = String;

    fn format_external(&self, external: &Ext) -> String {
        match external {
            External::NotRoot(p, rank) => match self.p.version_of(p, *rank) {
                Ok(v) => format!("we are installing {p} {v}"),
                Err(_) => format!("we are installing {p}"),
            },
            External::NoVersions(p, set) => {
                if *set == VSet::full() {
                    format!("no version of {p} is known")
                } else {
                    format!("no version of {p} matches {}", self.set(p, set))
                }
            }
            External::Custom(p, set, why) => format!("{} cannot be used: {why}", self.set(p, set)),
            External::FromDependencyOf(p, sp, d, sd) => self.depends(p, sp, d, sd),
        }
    }

    fn format_terms(&self, terms: &Map<String, Term<VSet>>) -> String {
        let list: Vec<_> = terms.iter().collect();
        match list.as_slice() {
            [] => "no choice of versions works".to_string(),
            [(p, Term::Positive(_))] if **p == self.p.root_name => {
                format!("{p} {} cannot be installed", self.p.root_version)
            }
            [(p, Term::Positive(r))] => format!("{} cannot be used", self.set(p, r)),
            [(p, Term::Negative(r))] => format!("{} is required", self.set(p, r)),
            [(p1, Term::Positive(r1)), (p2, Term::Negative(r2))]
            | [(p2, Term::Negative(r2)), (p1, Term::Positive(r1))] => self.depends(p1, r1, p2, r2),
            many => {
                let mut parts: Vec<String> = many.iter().map(|(p, t)| self.term(p, t)).collect();
                let last = parts.pop().unwrap_or_default();
                format!("{} and {last} cannot be used together", parts.join(", "))
            }
        }
    }

    fn explain_both_external(
        &self,
        e1: &Ext,
        e2: &Ext,
        current: &Map<String, Term<VSet>>,
    ) -> String {
        format!(
            "Because {}, and {}, {}.",
            self.format_external(e1),
            self.format_external(e2),
            self.format_terms(current)
        )
    }

    fn explain_both_ref(
        &self,
        id1: usize,
        d1: &Derived<String, VSet, String>,
        id2: usize,
        d2: &Derived<String, VSet, String>,
        current: &Map<String, Term<VSet>>,
    ) -> String {
        format!(
            "Because {} ({id1}) and {} ({id2}), {}.",
            self.format_terms(&d1.terms),
            self.format_terms(&d2.terms),
            self.format_terms(current)
        )
    }

    fn explain_ref_and_external(
        &self,
        id: usize,
        d: &Derived<String, VSet, String>,
        e: &Ext,
        current: &Map<String, Term<VSet>>,
    ) -> String {
        format!(
            "Because {} ({id}), and {}, {}.",
            self.format_terms(&d.terms),
            self.format_external(e),
            self.format_terms(current)
        )
    }

    fn and_explain_external(&self, e: &Ext, current: &Map<String, Term<VSet>>) -> String {
        format!(
            "And because {}, {}.",
            self.format_external(e),
            self.format_terms(current)
        )
    }

    fn and_explain_ref(
        &self,
        id: usize,
        d: &Derived<String, VSet, String>,
        current: &Map<String, Term<VSet>>,
    ) -> String {
        format!(
            "And because {} ({id}), {}.",
            self.format_terms(&d.terms),
            self.format_terms(current)
        )
    }

    fn and_explain_prior_and_external(
        &self,
        prior: &Ext,
        e: &Ext,
        current: &Map<String, Term<VSet>>,
    ) -> String {
        format!(
            "And because {}, and {}, {}.",
            self.format_external(prior),
            self.format_external(e),
            self.format_terms(current)
        )
    }
}
