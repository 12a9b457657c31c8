//! Version selection with pubgrub: one version per package name across the whole
//! dependency graph, newest satisfying (by repository priority first), deterministic.
//!
//! A package's pubgrub version is its ([`PackageVersion`]) pair (appVersion,
//! operatorVersion). An ask from a KudoOperator task constrains either field, so it is
//! turned into the set of *known* versions that satisfy it (a union of single
//! versions); the explanation code maps those sets back to the asks' own text.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use kudo_package::{Gvk, OperatorDependency, Package, TaskSpec};
use pubgrub::{
    Dependencies, DependencyConstraints, DependencyProvider, PackageResolutionStatistics,
    PubGrubError, VersionSet,
};
use rustc_hash::FxHashMap;

use crate::catalog::{Catalog, CatalogEntry, is_path_or_url};
use crate::error::{MissingVersion, ResolveError};
use crate::kubernetes::ClusterVersion;
use crate::range::{LenientVersion, RangeError, VersionReq};
use crate::rank::{Rank, Ranks};
use crate::rank_set::RankSet;

/// (appVersion, operatorVersion), ordered as KUDO orders repository entries: by
/// appVersion, then operatorVersion. A package without appVersion sorts first.
///
/// Shared behind an `Arc`, since lists, keys and results copy it. The solver itself
/// works on [`Rank`]s.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackageVersion(Arc<VersionPair>);

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct VersionPair {
    app: Option<LenientVersion>,
    operator: LenientVersion,
}

impl PackageVersion {
    pub fn new(operator: &str, app: Option<&str>) -> PackageVersion {
        PackageVersion(Arc::new(VersionPair {
            app: app.filter(|a| !a.is_empty()).map(LenientVersion::new),
            operator: LenientVersion::new(operator),
        }))
    }

    pub fn of(pkg: &Package) -> PackageVersion {
        PackageVersion::new(
            &pkg.operator.operator_version,
            pkg.operator.app_version.as_deref(),
        )
    }

    pub fn operator(&self) -> &LenientVersion {
        &self.0.operator
    }

    pub fn app(&self) -> Option<&LenientVersion> {
        self.0.app.as_ref()
    }
}

impl fmt::Display for PackageVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.app() {
            Some(a) => write!(f, "{} (app {})", self.operator(), a),
            None => write!(f, "{}", self.operator()),
        }
    }
}

pub(crate) type VSet = RankSet;

/// A user pin: replaces every ask on one package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub text: String,
    pub operator_version: Option<VersionReq>,
    pub app_version: Option<VersionReq>,
}

impl Override {
    /// `"<operatorVersion range>"`, `"app=<appVersion range>"`, or both separated by
    /// `;` (`">=1.3.0 <2.0.0; app=2.5.x"`).
    pub fn parse(text: &str) -> Result<Override, RangeError> {
        let mut o = Override {
            text: text.trim().to_string(),
            operator_version: None,
            app_version: None,
        };
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(app) = part
                .strip_prefix("app=")
                .or_else(|| part.strip_prefix("app:"))
            {
                o.app_version = Some(VersionReq::parse(app)?);
            } else {
                o.operator_version = Some(VersionReq::parse(part)?);
            }
        }
        if o.operator_version.is_none() && o.app_version.is_none() {
            return Err(RangeError {
                text: text.to_string(),
                message: "empty override; give an operatorVersion range and/or app=<range>".into(),
            });
        }
        Ok(o)
    }

    /// What the override asks, in words.
    pub fn describe(&self) -> String {
        describe_reqs(self.operator_version.as_ref(), self.app_version.as_ref())
    }
}

pub(crate) fn phrase(package: &str, described: &str) -> String {
    if described == "any version" {
        format!("any version of {package}")
    } else {
        format!("{package} {described}")
    }
}

pub(crate) fn describe_reqs(op: Option<&VersionReq>, app: Option<&VersionReq>) -> String {
    match (op, app) {
        (None, None) => "any version".to_string(),
        (Some(o), None) => format!("operatorVersion {o}"),
        (None, Some(a)) => format!("appVersion {a}"),
        (Some(o), Some(a)) => format!("operatorVersion {o}, appVersion {a}"),
    }
}

/// Where a candidate version comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Root,
    Catalog(Arc<CatalogEntry>),
    /// A folder, archive or URL named by a KudoOperator task.
    Path(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub version: PackageVersion,
    /// The version as the solver sees it.
    pub rank: Rank,
    pub source: Source,
}

/// One KudoOperator task of one package version.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub task: String,
    /// The task's `package` value as written.
    pub reference: String,
    /// The dependency's package name.
    pub dep: String,
    /// Shared with every ask written the same way (parsed once per text), which also
    /// lets [`Provider::allowed`] reuse the set of an identical ask.
    pub operator_req: Option<Rc<VersionReq>>,
    pub app_req: Option<Rc<VersionReq>>,
    /// The user override that replaced the task's own versions.
    pub override_text: Option<String>,
    /// Folder/archive/URL dependencies have exactly one version.
    pub pinned: Option<PackageVersion>,
    pub instance_name: Option<String>,
    pub parameter_file: Option<String>,
    pub enabling_parameter: Option<String>,
    /// Position in operator.yaml `dependencies:` for a listed dependency: the package is
    /// installed as an operator only, so such an ask makes no instance.
    pub listed: Option<usize>,
    /// An API dependency: the API and the versions of `dep` that provide it.
    pub provides: Option<(Gvk, Vec<PackageVersion>)>,
}

impl Ask {
    /// Where the ask is written: `task "kafka"` or `dependencies[0]`.
    pub fn origin(&self) -> String {
        match self.listed {
            Some(i) => format!("dependencies[{i}]"),
            None => format!("task {:?}", self.task),
        }
    }

    /// What the ask requires, in words (`operatorVersion 1.3.x (overridden by the user; …)`).
    pub fn describe(&self) -> String {
        let reqs = describe_reqs(self.operator_req.as_deref(), self.app_req.as_deref());
        let base = match (&self.provides, reqs.as_str()) {
            (None, _) => reqs,
            (Some((gvk, _)), "any version") => format!("provides {gvk}"),
            (Some((gvk, _)), _) => format!("provides {gvk}, {reqs}"),
        };
        match &self.override_text {
            Some(t) => format!("{base} (user override {t:?})"),
            None => base,
        }
    }

    /// `kafka operatorVersion 1.3.x` or `any version of kafka`.
    pub fn phrase(&self) -> String {
        phrase(&self.dep, &self.describe())
    }

    pub fn matches(&self, v: &PackageVersion) -> bool {
        self.provides
            .as_ref()
            .is_none_or(|(_, versions)| versions.contains(v))
            && self
                .operator_req
                .as_ref()
                .is_none_or(|r| r.matches(v.operator()))
            && self
                .app_req
                .as_ref()
                .is_none_or(|r| v.app().is_some_and(|a| r.matches(a)))
    }
}

/// KudoOperator tasks in the order plans run them: `deploy` first, then the other plans
/// by name; each task once. Tasks no plan uses never run and are left out.
/// Every version field of `pkg` the resolver reads (the `operatorVersion` and
/// `appVersion` of its KudoOperator tasks that plans run, and of its `dependencies:`
/// entries), parsed as resolving parses them: the errors a resolution of this package
/// would stop at, found without a catalog (for `package verify`).
pub fn version_errors(pkg: &Package) -> Vec<ResolveError> {
    let who = || format!("{} {}", pkg.operator.name, PackageVersion::of(pkg));
    let parse = |text: &Option<String>| {
        text.as_deref()
            .filter(|t| !t.trim().is_empty())
            .and_then(|t| VersionReq::parse(t).err())
    };
    let mut errors = Vec::new();
    for task in operator_tasks(pkg) {
        if let TaskSpec::KudoOperator {
            operator_version,
            app_version,
            ..
        } = &task.spec
        {
            for (field, text) in [
                ("operatorVersion", operator_version),
                ("appVersion", app_version),
            ] {
                if let Some(source) = parse(text) {
                    errors.push(ResolveError::Range {
                        package: who(),
                        task: task.name.clone(),
                        field,
                        source,
                    });
                }
            }
        }
    }
    for (index, entry) in pkg.operator.dependencies.iter().enumerate() {
        if let OperatorDependency::Package {
            operator_version,
            app_version,
            ..
        } = entry
        {
            for (field, text) in [
                ("operatorVersion", operator_version),
                ("appVersion", app_version),
            ] {
                if let Some(source) = parse(text) {
                    errors.push(ResolveError::ListRange {
                        package: who(),
                        index,
                        field,
                        source,
                    });
                }
            }
        }
    }
    errors
}

pub(crate) fn operator_tasks(pkg: &Package) -> Vec<&kudo_package::Task> {
    let mut names: Vec<&str> = Vec::new();
    let plans = pkg
        .operator
        .plans
        .get_key_value("deploy")
        .into_iter()
        .chain(pkg.operator.plans.iter().filter(|(k, _)| *k != "deploy"));
    for (_, plan) in plans {
        for phase in &plan.phases {
            for step in &phase.steps {
                for t in &step.tasks {
                    if !names.contains(&t.as_str()) {
                        names.push(t);
                    }
                }
            }
        }
    }
    names
        .into_iter()
        .filter_map(|n| pkg.task(n))
        .filter(|t| matches!(t.spec, TaskSpec::KudoOperator { .. }))
        .collect()
}

pub(crate) type Key = (String, PackageVersion);

/// One package's candidates as listed once: in preference order, and by rank.
pub(crate) struct Listing {
    list: Rc<Vec<Candidate>>,
    /// (rank, position in `list`) in ascending rank order: what turns an ask into
    /// intervals and counts a range's members, without sorting per call.
    ascending: Vec<(Rank, usize)>,
    /// Whether the ranks are exactly those of a first list (`SPACING`, `2 * SPACING`,
    /// ...): then counting a set's members is arithmetic.
    spaced: bool,
}

/// (operatorVersion, appVersion) reqs of an override, shared like parsed ones.
type SharedReqs = (Option<Rc<VersionReq>>, Option<Rc<VersionReq>>);

/// The package chosen to provide an API, and its versions that do.
type ApiProvider = (String, Vec<PackageVersion>);

pub(crate) struct Provider<'a> {
    catalog: &'a dyn Catalog,
    overrides: &'a BTreeMap<String, Override>,
    pub root_name: String,
    pub root_version: PackageVersion,
    root: Arc<Package>,
    pinned: RefCell<HashMap<String, Vec<(PackageVersion, Source)>>>,
    listings: RefCell<FxHashMap<String, Rc<Listing>>>,
    /// Kept when a package's candidates are listed again: ranks never move.
    ranks: RefCell<FxHashMap<String, Ranks>>,
    packages: RefCell<FxHashMap<Key, Arc<Package>>>,
    /// Parsed catalog versions: appVersion text ("" for none) -> operatorVersion text.
    parsed_versions: RefCell<FxHashMap<String, FxHashMap<String, PackageVersion>>>,
    /// Parsed version ranges by their text: the same range is written by many versions.
    reqs: RefCell<FxHashMap<String, Rc<VersionReq>>>,
    /// Each used override's ranges, shared like parsed ones.
    override_reqs: RefCell<FxHashMap<String, SharedReqs>>,
    /// [`Provider::allowed`] by (package, operatorVersion req, appVersion req), the reqs
    /// by address (0: none): many versions ask the same range of a shared dependency.
    /// Emptied when a folder adds a version, since the sets list known versions.
    allowed_sets: RefCell<FxHashMap<(String, usize, usize), VSet>>,
    asks: RefCell<FxHashMap<Key, Rc<Vec<Ask>>>>,
    pub missing: RefCell<Vec<MissingVersion>>,
    /// API -> the package chosen to provide it and its versions that do.
    api_providers: RefCell<HashMap<Gvk, Option<ApiProvider>>>,
    pub used_overrides: RefCell<BTreeSet<String>>,
    /// The cluster whose Kubernetes version candidates must meet (none: no filter).
    cluster: Option<ClusterVersion>,
    /// Versions skipped because they need a newer cluster: package -> (version,
    /// kubernetesVersion), for the error when nothing else fits.
    pub too_new: RefCell<BTreeMap<String, Vec<(String, String)>>>,
}

impl<'a> Provider<'a> {
    pub fn new(
        catalog: &'a dyn Catalog,
        overrides: &'a BTreeMap<String, Override>,
        root: &Package,
        cluster: Option<ClusterVersion>,
    ) -> Provider<'a> {
        Provider {
            catalog,
            overrides,
            root_name: root.operator.name.clone(),
            root_version: PackageVersion::of(root),
            root: Arc::new(root.clone()),
            reqs: RefCell::default(),
            parsed_versions: RefCell::default(),
            override_reqs: RefCell::default(),
            allowed_sets: RefCell::default(),
            pinned: RefCell::default(),
            listings: RefCell::default(),
            ranks: RefCell::default(),
            packages: RefCell::default(),
            asks: RefCell::default(),
            missing: RefCell::default(),
            api_providers: RefCell::default(),
            used_overrides: RefCell::default(),
            cluster,
            too_new: RefCell::default(),
        }
    }

    /// Versions of `name` in preference order: the root package and folder/URL
    /// dependencies first, then repositories by priority (ties: list order), newest first.
    /// A version offered twice keeps its most preferred source.
    pub fn candidates(&self, name: &str) -> Result<Rc<Vec<Candidate>>, ResolveError> {
        self.listing(name).map(|l| l.list.clone())
    }

    /// The candidates of `name` and their rank order, listed once.
    fn listing(&self, name: &str) -> Result<Rc<Listing>, ResolveError> {
        if let Some(l) = self.listings.borrow().get(name) {
            return Ok(l.clone());
        }
        let mut list: Vec<(PackageVersion, Source)> = Vec::new();
        if name == self.root_name {
            list.push((self.root_version.clone(), Source::Root));
        }
        list.extend(self.pinned.borrow().get(name).cloned().unwrap_or_default());
        let mut entries: Vec<(Arc<CatalogEntry>, PackageVersion)> = self
            .catalog
            .shared_versions(name)?
            .into_iter()
            .map(|e| {
                let v = self.parse_version(&e.operator_version, e.app_version.as_deref());
                (e, v)
            })
            .collect();
        // Newest first, then (stable) by repository priority and list order: the order
        // of sorting by (priority, order, newest first), with one version sort instead of
        // a version comparison inside every tie of the integer keys. Catalogs usually
        // list oldest first, and the small-slice sort is quadratic on a reversed run, so
        // a strictly ascending list is just reversed (no equal versions to keep stable).
        if entries.windows(2).all(|w| w[0].1 < w[1].1) {
            entries.reverse();
        } else {
            entries.sort_by(|(_, va), (_, vb)| vb.cmp(va));
        }
        entries.sort_by_key(|(e, _)| (e.priority, e.order));
        list.reserve(entries.len());
        for (e, v) in entries {
            list.push((v, Source::Catalog(e)));
        }
        // A strictly descending list (one repository, nothing pinned: the usual case) has
        // no version twice; otherwise keep each version's first, most preferred, place.
        let descending = list.windows(2).all(|w| w[0].0 > w[1].0);
        if !descending {
            let mut seen = BTreeSet::new();
            list.retain(|(v, _)| seen.insert(v.clone()));
        }
        let mut ranks = self.ranks.borrow_mut();
        let ranks = ranks.entry(name.to_string()).or_default();
        let list = if descending && ranks.is_empty() {
            let given = ranks.first_descending(name, list.iter().map(|(v, _)| v))?;
            list.into_iter()
                .zip(given)
                .map(|((version, source), rank)| Candidate {
                    version,
                    rank,
                    source,
                })
                .collect()
        } else {
            ranks.assign(name, list.iter().map(|(v, _)| v))?;
            list.into_iter()
                .map(|(version, source)| {
                    let rank = ranks.get(&version).ok_or_else(|| {
                        ResolveError::Catalog(format!("{name} {version}: no rank was given"))
                    })?;
                    Ok(Candidate {
                        version,
                        rank,
                        source,
                    })
                })
                .collect::<Result<Vec<_>, ResolveError>>()?
        };
        // Read from the end: a newest-first list is then already ascending (the
        // small-slice sort would be quadratic on its reverse).
        let mut ascending: Vec<(Rank, usize)> = list
            .iter()
            .enumerate()
            .rev()
            .map(|(i, c)| (c.rank, i))
            .collect();
        if !ascending.is_sorted() {
            ascending.sort_unstable();
        }
        let spaced = ascending
            .iter()
            .enumerate()
            .all(|(i, (rank, _))| crate::rank::spaced(i) == Some(*rank));
        let listing = Rc::new(Listing {
            list: Rc::new(list),
            ascending,
            spaced,
        });
        self.listings
            .borrow_mut()
            .insert(name.to_string(), listing.clone());
        Ok(listing)
    }

    fn candidate(&self, name: &str, v: &PackageVersion) -> Result<Candidate, ResolveError> {
        self.candidates(name)?
            .iter()
            .find(|c| c.version == *v)
            .cloned()
            .ok_or_else(|| ResolveError::Catalog(format!("{name} {v}: not a known version")))
    }

    /// The solver's number for a known version.
    pub fn rank_of(&self, name: &str, v: &PackageVersion) -> Result<Rank, ResolveError> {
        self.candidate(name, v).map(|c| c.rank)
    }

    /// The version behind a rank the solver chose or asked about.
    pub fn version_of(&self, name: &str, rank: Rank) -> Result<PackageVersion, ResolveError> {
        self.candidates(name)?
            .iter()
            .find(|c| c.rank == rank)
            .map(|c| c.version.clone())
            .ok_or_else(|| ResolveError::Catalog(format!("{name}: no version has rank {rank}")))
    }

    pub fn source_of(&self, name: &str, v: &PackageVersion) -> Option<Source> {
        self.candidate(name, v).ok().map(|c| c.source)
    }

    /// The package of one version (loaded once).
    pub fn package(&self, name: &str, v: &PackageVersion) -> Result<Arc<Package>, ResolveError> {
        let key = (name.to_string(), v.clone());
        if let Some(p) = self.packages.borrow().get(&key) {
            return Ok(p.clone());
        }
        let pkg = match self.candidate(name, v)?.source {
            Source::Root => self.root.clone(),
            Source::Catalog(entry) => {
                tracing::debug!(package = %name, version = %v, repository = %entry.repository, "loading dependency");
                let p = self.catalog.load(&entry)?;
                // Parsed through the cache: the entry's own text is already there.
                let got = self.parse_version(
                    &p.operator.operator_version,
                    p.operator.app_version.as_deref(),
                );
                if p.operator.name != name || got != *v {
                    return Err(ResolveError::Catalog(format!(
                        "repository {} lists {name} {v} at {}, but that package is {} {got}; fix the repository index",
                        entry.repository, entry.location, p.operator.name
                    )));
                }
                p
            }
            Source::Path(label) => {
                return Err(ResolveError::Catalog(format!(
                    "{name} {v} from {label} was not loaded"
                )));
            }
        };
        self.packages.borrow_mut().insert(key, pkg.clone());
        Ok(pkg)
    }

    /// A user override replaces whatever the package asked for that dependency; the
    /// override's text is kept so explanations can say where a range came from.
    fn apply_override(
        &self,
        dep: &str,
        operator_req: &mut Option<Rc<VersionReq>>,
        app_req: &mut Option<Rc<VersionReq>>,
    ) -> Option<String> {
        let o = self.overrides.get(dep)?;
        self.used_overrides.borrow_mut().insert(dep.to_string());
        let (op, app) = self
            .override_reqs
            .borrow_mut()
            .entry(dep.to_string())
            .or_insert_with(|| {
                (
                    o.operator_version.clone().map(Rc::new),
                    o.app_version.clone().map(Rc::new),
                )
            })
            .clone();
        *operator_req = op;
        *app_req = app;
        Some(o.text.clone())
    }

    fn add_pinned(&self, pkg: Package, label: String) -> PackageVersion {
        let name = pkg.operator.name.clone();
        let v = PackageVersion::of(&pkg);
        let key = (name.clone(), v.clone());
        let mut packages = self.packages.borrow_mut();
        if packages.contains_key(&key) {
            // The same name and version from another place: the first one read wins.
            return v;
        }
        packages.insert(key, Arc::new(pkg));
        self.pinned
            .borrow_mut()
            .entry(name.clone())
            .or_default()
            .push((v.clone(), Source::Path(label)));
        self.listings.borrow_mut().remove(&name);
        self.allowed_sets.borrow_mut().clear();
        v
    }

    /// A catalog entry's version, parsed once per text: catalogs repeat the same few
    /// version numbers across packages, and equal versions then share one allocation.
    fn parse_version(&self, operator: &str, app: Option<&str>) -> PackageVersion {
        let app = app.filter(|a| !a.is_empty()).unwrap_or_default();
        if let Some(v) = self
            .parsed_versions
            .borrow()
            .get(app)
            .and_then(|by_operator| by_operator.get(operator))
        {
            return v.clone();
        }
        let v = PackageVersion::new(operator, Some(app));
        self.parsed_versions
            .borrow_mut()
            .entry(app.to_string())
            .or_default()
            .insert(operator.to_string(), v.clone());
        v
    }

    fn parse_req(&self, text: &str) -> Result<Rc<VersionReq>, RangeError> {
        if let Some(r) = self.reqs.borrow().get(text) {
            return Ok(r.clone());
        }
        let r = Rc::new(VersionReq::parse(text)?);
        self.reqs.borrow_mut().insert(text.to_string(), r.clone());
        Ok(r)
    }

    /// The KudoOperator asks of one package version (computed once).
    pub fn asks(&self, name: &str, v: &PackageVersion) -> Result<Rc<Vec<Ask>>, ResolveError> {
        let key = (name.to_string(), v.clone());
        if let Some(a) = self.asks.borrow().get(&key) {
            return Ok(a.clone());
        }
        let pkg = self.package(name, v)?;
        let tasks = operator_tasks(&pkg);
        let mut out = Vec::with_capacity(tasks.len() + pkg.operator.dependencies.len());
        // Who asks, in words: only for errors, so written only when one occurs.
        let who = || format!("{name} {v}");
        for task in tasks {
            let TaskSpec::KudoOperator {
                package,
                app_version,
                operator_version,
                instance_name,
                parameter_file,
                enabling_parameter,
            } = &task.spec
            else {
                continue;
            };
            let parse = |field: &'static str, text: &Option<String>| {
                text.as_deref()
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| self.parse_req(t))
                    .transpose()
                    .map_err(|source| ResolveError::Range {
                        package: who(),
                        task: task.name.clone(),
                        field,
                        source,
                    })
            };
            let mut operator_req = parse("operatorVersion", operator_version)?;
            let mut app_req = parse("appVersion", app_version)?;
            if let Some(param) = enabling_parameter
                && pkg.parameter(param).is_none()
            {
                return Err(ResolveError::UnknownEnablingParameter {
                    package: who(),
                    task: task.name.clone(),
                    parameter: param.clone(),
                });
            }
            let (dep, pinned) = if is_path_or_url(&pkg, package) {
                let loaded = self.catalog.load_source(&pkg, package)?;
                let label = loaded.origin.label();
                let dep = loaded.operator.name.clone();
                (dep, Some((self.add_pinned(loaded, label.clone()), label)))
            } else {
                (package.clone(), None)
            };
            let override_text = self.apply_override(&dep, &mut operator_req, &mut app_req);
            let ask = Ask {
                task: task.name.clone(),
                reference: package.clone(),
                dep,
                operator_req,
                app_req,
                override_text,
                pinned: pinned.as_ref().map(|(v, _)| v.clone()),
                instance_name: instance_name.clone(),
                parameter_file: parameter_file.clone(),
                enabling_parameter: enabling_parameter.clone(),
                listed: None,
                provides: None,
            };
            if let Some((pv, label)) = &pinned
                && !ask.matches(pv)
            {
                return Err(ResolveError::SourceMismatch {
                    asked_by: format!("{} (task {:?})", who(), task.name),
                    package: ask.dep.clone(),
                    asked: ask.describe(),
                    source_label: label.clone(),
                    found: pv.to_string(),
                });
            }
            out.push(ask);
        }
        for (index, entry) in pkg.operator.dependencies.iter().enumerate() {
            if let Some(ask) = self.listed_ask(name, v, &pkg, index, entry)? {
                out.push(ask);
            }
        }
        let out = Rc::new(out);
        self.asks.borrow_mut().insert(key, out.clone());
        Ok(out)
    }

    /// One entry of operator.yaml `dependencies:` as an ask; `None` for an API the
    /// package provides itself.
    fn listed_ask(
        &self,
        name: &str,
        v: &PackageVersion,
        pkg: &Package,
        index: usize,
        entry: &OperatorDependency,
    ) -> Result<Option<Ask>, ResolveError> {
        let who = format!("{name} {v}");
        let (dep, mut operator_req, mut app_req, provides) = match entry {
            OperatorDependency::Package {
                name: dep,
                operator_version,
                app_version,
            } => {
                let parse = |field: &'static str, text: &Option<String>| {
                    text.as_deref()
                        .map(|t| self.parse_req(t))
                        .transpose()
                        .map_err(|source| ResolveError::ListRange {
                            package: who.clone(),
                            index,
                            field,
                            source,
                        })
                };
                let op = parse("operatorVersion", operator_version)?;
                let app = parse("appVersion", app_version)?;
                (dep.clone(), op, app, None)
            }
            OperatorDependency::Api(gvk) => {
                if pkg.provides(gvk) {
                    return Ok(None);
                }
                let Some((dep, versions)) = self.provider_of(gvk, name)? else {
                    return Err(ResolveError::NoProvider {
                        api: gvk.to_string(),
                        asked_by: who,
                        index,
                    });
                };
                (dep, None, None, Some((gvk.clone(), versions)))
            }
        };
        let override_text = self.apply_override(&dep, &mut operator_req, &mut app_req);
        Ok(Some(Ask {
            task: String::new(),
            reference: match entry {
                OperatorDependency::Package { name, .. } => name.clone(),
                OperatorDependency::Api(gvk) => gvk.to_string(),
            },
            dep,
            operator_req,
            app_req,
            override_text,
            pinned: None,
            instance_name: None,
            parameter_file: None,
            enabling_parameter: None,
            listed: Some(index),
            provides,
        }))
    }

    /// The package that provides `gvk`: the first version, in the order versions of one
    /// package are preferred (repository priority, list order, newest first; package
    /// name breaks ties), whose templates hold the CRD. Every version of that package
    /// that provides it is allowed, so that other asks on the package can still pick.
    /// Costly on big repositories (versions are loaded until one matches), hence cached.
    fn provider_of(&self, gvk: &Gvk, asker: &str) -> Result<Option<ApiProvider>, ResolveError> {
        if let Some(found) = self.api_providers.borrow().get(gvk) {
            return Ok(found.clone());
        }
        let mut all: Vec<((i32, usize), String, Candidate)> = Vec::new();
        for name in self.catalog.names()? {
            if name == asker {
                continue;
            }
            for c in self.candidates(&name)?.iter() {
                let rank = match &c.source {
                    Source::Catalog(e) => (e.priority, e.order),
                    // Root and folder versions come before every repository.
                    Source::Root | Source::Path(_) => (i32::MIN, 0),
                };
                all.push((rank, name.clone(), c.clone()));
            }
        }
        all.sort_by(|(ra, na, ca), (rb, nb, cb)| {
            (ra, Reverse(&ca.version), na).cmp(&(rb, Reverse(&cb.version), nb))
        });
        let provides = |name: &str, v: &PackageVersion| match self.package(name, v) {
            Ok(p) => p.provides(gvk),
            Err(e) => {
                // One broken package must not hide every other provider.
                tracing::warn!(package = %name, version = %v, error = %e, "cannot read a package while looking for an API provider; skipping it");
                false
            }
        };
        let mut found = None;
        if let Some((_, name, _)) = all.iter().find(|(_, n, c)| provides(n, &c.version)) {
            let versions: Vec<PackageVersion> = self
                .candidates(name)?
                .iter()
                .filter(|c| provides(name, &c.version))
                .map(|c| c.version.clone())
                .collect();
            found = Some((name.clone(), versions));
        }
        self.api_providers
            .borrow_mut()
            .insert(gvk.clone(), found.clone());
        Ok(found)
    }

    /// Whether version `v` of `name` runs on the cluster (always, without one). Loads the
    /// package to read its `kubernetesVersion`: only for versions the solver is about to
    /// choose, in preference order, so the newest runnable one is usually the first.
    fn runs_on_cluster(&self, name: &str, v: &PackageVersion) -> Result<bool, ResolveError> {
        let Some(cluster) = &self.cluster else {
            return Ok(true);
        };
        // The root is what the user asked for, not a choice: its own check names the
        // attribute that selects it (kudo_operator's `package`).
        if name == self.root_name && *v == self.root_version {
            return Ok(true);
        }
        let pkg = self.package(name, v)?;
        let runs = crate::kubernetes::runs_on(&pkg, cluster.release).map_err(|source| {
            ResolveError::KubernetesVersion {
                package: name.to_string(),
                version: v.to_string(),
                value: pkg.operator.kubernetes_version.clone(),
                source,
            }
        })?;
        if !runs {
            tracing::debug!(package = %name, version = %v, needs = %pkg.operator.kubernetes_version,
                cluster = %cluster.reported, "skipping a version the cluster is too old for");
            let mut too_new = self.too_new.borrow_mut();
            let list = too_new.entry(name.to_string()).or_default();
            let entry = (v.to_string(), pkg.operator.kubernetes_version.clone());
            if !list.contains(&entry) {
                list.push(entry);
            }
        }
        Ok(runs)
    }

    /// The version set one ask allows: the matching known versions.
    pub fn allowed(&self, ask: &Ask) -> Result<VSet, ResolveError> {
        if let Some(v) = &ask.pinned {
            return Ok(RankSet::singleton(self.rank_of(&ask.dep, v)?));
        }
        // The reqs live as long as the provider (kept in `reqs` / `override_reqs`), so
        // an address names one req for the cache's whole life.
        let address = |r: &Option<Rc<VersionReq>>| r.as_ref().map_or(0, |r| Rc::as_ptr(r) as usize);
        let key = ask.provides.is_none().then(|| {
            (
                ask.dep.clone(),
                address(&ask.operator_req),
                address(&ask.app_req),
            )
        });
        if let Some(set) = key
            .as_ref()
            .and_then(|k| self.allowed_sets.borrow().get(k).cloned())
        {
            return Ok(set);
        }
        // Each run of neighbouring matching versions becomes one interval from its
        // first to its last: pubgrub works much faster on a few segments than on many
        // single points. Nothing outside the known versions' hull is in the set (the
        // graph step re-checks every choice against the asks in case a folder adds a
        // version inside an interval).
        let listing = self.listing(&ask.dep)?;
        let mut runs: Vec<(Rank, Rank)> = Vec::new();
        let mut run: Option<(Rank, Rank)> = None;
        for &(rank, at) in &listing.ascending {
            let matches = listing
                .list
                .get(at)
                .is_some_and(|c| ask.matches(&c.version));
            match (matches, run) {
                (true, None) => run = Some((rank, rank)),
                (true, Some((low, _))) => run = Some((low, rank)),
                (false, Some(done)) => {
                    runs.push(done);
                    run = None;
                }
                (false, None) => {}
            }
        }
        runs.extend(run);
        let set = RankSet::from_runs(runs);
        if let Some(key) = key {
            self.allowed_sets.borrow_mut().insert(key, set.clone());
        }
        Ok(set)
    }

    /// How many known versions of `name` a set holds: a binary search per segment
    /// over the ascending ranks (the solver asks this on every decision).
    fn count_in(&self, name: &str, set: &VSet) -> usize {
        let Ok(listing) = self.listing(name) else {
            return 0;
        };
        if listing.spaced {
            let n = u64::try_from(listing.ascending.len()).unwrap_or(u64::MAX);
            let count = set.count_spaced(n, crate::rank::SPACING);
            return usize::try_from(count).unwrap_or(usize::MAX);
        }
        set.count_of(&listing.ascending, |(rank, _)| *rank)
    }

    pub fn available(&self, name: &str) -> Vec<String> {
        self.candidates(name)
            .map(|c| c.iter().map(|c| c.version.to_string()).collect())
            .unwrap_or_default()
    }

    fn dependencies(
        &self,
        name: &str,
        v: &PackageVersion,
    ) -> Result<Vec<(String, VSet)>, ResolveError> {
        let mut by_dep: Vec<(String, VSet)> = Vec::new();
        for ask in self.asks(name, v)?.iter() {
            if ask.dep == name {
                // A package installing itself is a cycle; the graph step reports it.
                continue;
            }
            let set = self.allowed(ask)?;
            if set.is_empty() {
                let m = MissingVersion {
                    package: ask.dep.clone(),
                    asked: ask.describe(),
                    asked_by: format!("{name} {v} ({})", ask.origin()),
                    available: self.available(&ask.dep),
                };
                let mut missing = self.missing.borrow_mut();
                if !missing.contains(&m) {
                    missing.push(m);
                }
            }
            match by_dep.iter_mut().find(|(d, _)| *d == ask.dep) {
                Some((_, s)) => *s = s.intersection(&set),
                None => by_dep.push((ask.dep.clone(), set)),
            }
        }
        Ok(by_dep)
    }
}

impl DependencyProvider for Provider<'_> {
    type P = String;
    type V = Rank;
    type VS = VSet;
    type M = String;
    type Err = ResolveError;
    type Priority = (u32, Reverse<usize>);

    fn prioritize(
        &self,
        package: &String,
        range: &VSet,
        stats: &PackageResolutionStatistics,
    ) -> Self::Priority {
        // Packages that conflicted often, then those with few choices, first: the
        // usual pubgrub heuristic; deterministic because it only reads the inputs.
        let count = self.count_in(package, range);
        (stats.conflict_count(), Reverse(count))
    }

    fn choose_version(&self, package: &String, range: &VSet) -> Result<Option<Rank>, ResolveError> {
        // The most preferred version in range that the cluster can run; none means "no
        // version here" to the solver, which then backtracks or explains.
        for c in self.listing(package)?.list.iter() {
            if range.contains(&c.rank) && self.runs_on_cluster(package, &c.version)? {
                return Ok(Some(c.rank));
            }
        }
        Ok(None)
    }

    fn get_dependencies(
        &self,
        package: &String,
        rank: &Rank,
    ) -> Result<Dependencies<String, VSet, String>, ResolveError> {
        let version = self.version_of(package, *rank)?;
        let deps = self.dependencies(package, &version)?;
        Ok(Dependencies::Available(DependencyConstraints::from_iter(
            deps,
        )))
    }
}

/// Choose one version per package. Every missing version the root itself asks for is
/// reported at once (the usual first mistake); deeper problems come with pubgrub's
/// derivation, in words.
pub(crate) fn solve(
    provider: &Provider<'_>,
) -> Result<BTreeMap<String, PackageVersion>, ResolveError> {
    provider.dependencies(&provider.root_name, &provider.root_version)?;
    let missing = provider.missing.borrow().clone();
    if !missing.is_empty() {
        return Err(ResolveError::MissingVersions(missing));
    }
    let root = provider.rank_of(&provider.root_name, &provider.root_version)?;
    match pubgrub::resolve(provider, provider.root_name.clone(), root) {
        Ok(sel) => sel
            .iter()
            .map(|(p, r)| Ok((p.clone(), provider.version_of(p, *r)?)))
            .collect(),
        Err(PubGrubError::NoSolution(tree)) => {
            let explained = crate::explain::explain(provider, tree);
            let too_new = provider.too_new.borrow();
            match (&provider.cluster, too_new.is_empty()) {
                (Some(cluster), false) => Err(ResolveError::ClusterTooOld {
                    cluster: cluster.reported.clone(),
                    too_new: too_new
                        .iter()
                        .map(|(package, versions)| crate::TooNew {
                            package: package.clone(),
                            versions: versions.clone(),
                        })
                        .collect(),
                    explanation: match explained {
                        ResolveError::Unsatisfiable { explanation, .. } => explanation,
                        other => other.to_string(),
                    },
                }),
                _ => Err(explained),
            }
        }
        Err(PubGrubError::ErrorRetrievingDependencies { source, .. }) => Err(source),
        Err(PubGrubError::ErrorChoosingVersion { source, .. }) => Err(source),
        Err(PubGrubError::ErrorInShouldCancel(e)) => Err(e),
    }
}
