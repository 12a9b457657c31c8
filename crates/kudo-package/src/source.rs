//! One entry point, [`load`], for every kind of package source, plus repository
//! resolution with priorities, digest checks and a digest-keyed download cache.
//!
//! Accepted `source` syntax:
//! * `http://…` / `https://…`: a package `.tgz`; append `#sha256=<hex>` to pin its digest.
//! * `file://…` or a filesystem path (relative to [`LoadContext::base_dir`] if set):
//!   a package folder, or a `.tgz` / `.tar.gz` file.
//! * `name`, `name@<operatorVersion>`, or `name@<appVersion>_<operatorVersion>` (the
//!   same separator KUDO uses in archive names): resolved through
//!   [`LoadContext::repositories`], lowest `priority` first; within a repository the
//!   newest match in KUDO's order wins.
//!
//! Packages that `extends` a base are resolved (the base is loaded with the same
//! context, by name and version), and the result must pass [`crate::verify`] without
//! errors.

use std::path::{Path, PathBuf};

use crate::error::PackageError;
use crate::fetch::{fetch_cached, http_get};
use crate::load::MAX_TOTAL_BYTES;
use crate::model::{Origin, Package};
use crate::repo::{Index, IndexEntry, parse_index};
use crate::tgz::{package_from_tgz, sha256_hex};

/// A package repository. `url` is an http(s) URL or a local path / `file://` URL of
/// either the repository folder (holding `index.yaml`) or the index file itself
/// (anything ending in `.yaml`). A local folder without `index.yaml` is read as a
/// folder of packages (sub-folders and `.tgz` files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    pub name: String,
    pub url: String,
    /// Lower wins (like OLM CatalogSource weights).
    pub priority: i32,
}

#[derive(Debug, Clone, Default)]
pub struct LoadContext {
    pub repositories: Vec<Repository>,
    /// Where downloaded archives are kept, named `<sha256>.tgz`, so that plan and apply
    /// read the same bytes without fetching twice. `None`: no cache.
    pub cache_dir: Option<PathBuf>,
    /// Base for relative filesystem sources; `None`: the current directory.
    pub base_dir: Option<PathBuf>,
}

/// A package found through a repository.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub package: Package,
    pub repository: String,
    pub entry: IndexEntry,
}

/// Load a package from any supported source (see the module docs for the syntax).
pub fn load(source: &str, ctx: &LoadContext) -> Result<Package, PackageError> {
    finish(load_raw(source, ctx)?, ctx)
}

fn finish(pkg: Package, ctx: &LoadContext) -> Result<Package, PackageError> {
    let pkg = resolve_extension(pkg, ctx)?;
    let errors: Vec<String> = crate::verify::verify(&pkg)
        .into_iter()
        .filter(|f| f.severity == crate::verify::Severity::Error)
        .map(|f| f.to_string())
        .collect();
    if errors.is_empty() {
        Ok(pkg)
    } else {
        Err(PackageError::Verify {
            package: pkg.origin.label(),
            findings: errors,
        })
    }
}

/// Like [`load`] without the final verification (for `package verify` tooling that
/// wants every finding).
pub fn load_unverified(source: &str, ctx: &LoadContext) -> Result<Package, PackageError> {
    resolve_extension(load_raw(source, ctx)?, ctx)
}

/// The base of an extension comes from the repositories; for an extension read from a
/// folder, a sibling folder named after the base operator is the fallback, so that a
/// base and its extension can be developed side by side without a repository.
fn resolve_extension(pkg: Package, ctx: &LoadContext) -> Result<Package, PackageError> {
    if pkg.operator.extends.is_none() {
        return Ok(pkg);
    }
    let sibling_root = match &pkg.origin {
        Origin::Dir(dir) => dir.parent().map(Path::to_path_buf),
        _ => None,
    };
    let loader = |name: &str, version: Option<&str>| {
        let reference = match version {
            Some(v) => format!("{name}@{v}"),
            None => name.to_string(),
        };
        let mut repository_error = None;
        if !ctx.repositories.is_empty() {
            match load_unverified(&reference, ctx) {
                Ok(base) => return Ok(base),
                Err(e) => repository_error = Some(e),
            }
        }
        if let Some(dir) = sibling_root.as_ref().map(|r| r.join(name))
            && dir.join("operator.yaml").is_file()
        {
            let base = load_unverified(&dir.display().to_string(), ctx)?;
            if base.operator.name == name {
                tracing::debug!(base = %name, "extension base from a sibling folder");
                return Ok(base);
            }
        }
        match repository_error {
            Some(e) => Err(e),
            None => load_unverified(&reference, ctx),
        }
    };
    crate::extend::resolve(pkg, &loader)
}

fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// The scheme of text written as a URL (`ftp` for `ftp://host/x`); `None` for paths,
/// Windows ones included (`C:\x`, `C:/x` have no `//` after the colon).
fn url_scheme(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (valid && rest.starts_with("//")).then_some(scheme)
}

/// The schemes a repository `url` or a package source may have, for messages.
pub const SUPPORTED_LOCATIONS: &str =
    "an http:// or https:// URL, a file:// URL, or a path to a folder";

/// Why `url` cannot be a repository's URL (a scheme other than http, https and file),
/// `None` when it can: the provider's `repository` blocks and the `--repo` options
/// check it before anything is read, so that `ftp://…` is not read as a folder.
pub fn repository_url_problem(url: &str) -> Option<String> {
    let scheme = url_scheme(url.trim())?;
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" | "file" => None,
        _ => Some(format!(
            "{url:?} uses the {scheme}:// scheme, which is not supported; a repository URL is {SUPPORTED_LOCATIONS} (holding index.yaml or packages)"
        )),
    }
}

/// Why a list of repositories cannot be searched as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryProblem {
    /// A `name@version` reference could not say which of the two it means.
    #[error("two repositories are named {name:?}")]
    DuplicateName {
        /// The second repository's position in the list.
        index: usize,
        name: String,
    },
    /// See [`repository_url_problem`].
    #[error("Repository {name:?}: {problem}.")]
    UnsupportedUrl {
        index: usize,
        name: String,
        problem: String,
    },
}

impl RepositoryProblem {
    /// A short title for the problem.
    pub fn summary(&self) -> &'static str {
        match self {
            RepositoryProblem::DuplicateName { .. } => "Duplicate repository name",
            RepositoryProblem::UnsupportedUrl { .. } => "Unsupported repository URL",
        }
    }

    /// The position in the list of the repository at fault.
    pub fn index(&self) -> usize {
        match self {
            RepositoryProblem::DuplicateName { index, .. }
            | RepositoryProblem::UnsupportedUrl { index, .. } => *index,
        }
    }

    /// The repository's field at fault: `name` or `url`.
    pub fn field(&self) -> &'static str {
        match self {
            RepositoryProblem::DuplicateName { .. } => "name",
            RepositoryProblem::UnsupportedUrl { .. } => "url",
        }
    }
}

/// Everything that keeps `repositories` from being searched as written, repository
/// by repository (checked before anything is read).
pub fn repository_problems(repositories: &[Repository]) -> Vec<RepositoryProblem> {
    let mut problems = Vec::new();
    for (index, repo) in repositories.iter().enumerate() {
        if repositories[..index].iter().any(|r| r.name == repo.name) {
            problems.push(RepositoryProblem::DuplicateName {
                index,
                name: repo.name.clone(),
            });
        }
        if let Some(problem) = repository_url_problem(&repo.url) {
            problems.push(RepositoryProblem::UnsupportedUrl {
                index,
                name: repo.name.clone(),
                problem,
            });
        }
    }
    problems
}

fn looks_like_path(s: &str) -> bool {
    s.contains('/')
        || s.contains('\\')
        || s.starts_with('.')
        || s.ends_with(".tgz")
        || s.ends_with(".tar.gz")
}

fn load_raw(source: &str, ctx: &LoadContext) -> Result<Package, PackageError> {
    if let Some(scheme) = url_scheme(source)
        && !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "http" | "https" | "file"
        )
    {
        return Err(PackageError::source(
            source,
            format!(
                "the {scheme}:// scheme is not supported; a package is an http:// or https:// URL of a .tgz, a file:// URL or path of a folder or .tgz, or a name from a repository"
            ),
        ));
    }
    if is_url(source) {
        let (url, pinned) = match source.split_once("#sha256=") {
            Some((u, d)) => (u, Some(d.to_ascii_lowercase())),
            None => (source, None),
        };
        let bytes = fetch_cached(url, pinned.as_deref(), ctx)?;
        let digest = sha256_hex(&bytes);
        if let Some(want) = pinned
            && want != digest
        {
            return Err(PackageError::Digest {
                package: url.to_string(),
                repository: "(direct URL)".to_string(),
                url: url.to_string(),
                expected: want,
                actual: digest,
            });
        }
        return package_from_tgz(
            &bytes,
            url,
            Origin::Url {
                url: url.to_string(),
                digest,
            },
        );
    }
    let path_text = source.strip_prefix("file://").unwrap_or(source);
    let path = match &ctx.base_dir {
        Some(base) => base.join(path_text),
        None => PathBuf::from(path_text),
    };
    if path.is_dir() {
        return Package::load_dir(&path);
    }
    if path.is_file() {
        return load_tgz_file(&path);
    }
    if let Ok(meta) = std::fs::metadata(&path) {
        return Err(PackageError::Io {
            message: format!(
                "is a {}, not a package folder or a .tgz file",
                crate::load::special_kind(&meta.file_type())
            ),
            path,
            source: None,
        });
    }
    if looks_like_path(source) || source.starts_with("file://") {
        return Err(PackageError::Io {
            path,
            message: "no such package folder or .tgz file; check the path".to_string(),
            source: None,
        });
    }
    let (name, app, ov) = parse_reference(source);
    Ok(resolve(name, app, ov, ctx)?.package)
}

fn load_tgz_file(path: &Path) -> Result<Package, PackageError> {
    let len = std::fs::metadata(path)
        .map_err(|e| PackageError::io(path, e))?
        .len();
    if len > MAX_TOTAL_BYTES {
        return Err(PackageError::archive(
            &path.display().to_string(),
            format!("archive is {len} bytes, over the {MAX_TOTAL_BYTES} byte limit"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| PackageError::io(path, e))?;
    let digest = sha256_hex(&bytes);
    package_from_tgz(
        &bytes,
        &path.display().to_string(),
        Origin::Tgz {
            path: path.to_path_buf(),
            digest,
        },
    )
}

/// `name`, `name@ov`, `name@app_ov`.
pub fn parse_reference(reference: &str) -> (&str, Option<&str>, Option<&str>) {
    match reference.split_once('@') {
        None => (reference, None, None),
        Some((name, version)) => match version.split_once('_') {
            Some((app, ov)) => (name, Some(app), Some(ov)),
            None => (name, None, Some(version)),
        },
    }
}

/// Find and load `name` (optionally an exact appVersion / operatorVersion) through the
/// context's repositories, lowest priority number first. Unreachable repositories are
/// skipped with a warning (and named in the error if nothing matches).
pub fn resolve(
    name: &str,
    app_version: Option<&str>,
    operator_version: Option<&str>,
    ctx: &LoadContext,
) -> Result<Resolved, PackageError> {
    let wanted = describe_wanted(name, app_version, operator_version);
    if ctx.repositories.is_empty() {
        return Err(PackageError::source(
            &wanted,
            "not a folder, .tgz or URL, and no repositories are configured to look it up in; add a repository or give a path",
        ));
    }
    for repo in &ctx.repositories {
        check_repository(repo)?;
    }
    let mut repos: Vec<&Repository> = ctx.repositories.iter().collect();
    repos.sort_by_key(|r| r.priority);
    let mut problems = Vec::new();
    let mut read_any = false;
    for repo in repos {
        let index = match repository_index(repo, ctx) {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(repository = %repo.name, error = %e, "repository unavailable");
                problems.push(format!("repository {}: {e}", repo.name));
                continue;
            }
        };
        read_any = true;
        if let Some(entry) = index.find(name, app_version, operator_version) {
            let package = load_entry_raw(entry, repo, ctx)?;
            tracing::info!(package = %name, repository = %repo.name, version = %entry.operator_version, "resolved package");
            return Ok(Resolved {
                package,
                repository: repo.name.clone(),
                entry: entry.clone(),
            });
        }
        problems.push(format!(
            "repository {}: {}",
            repo.name,
            index.why_not_found(name)
        ));
    }
    if !read_any {
        return Err(PackageError::Unreachable {
            wanted,
            problems: problems.join("; "),
        });
    }
    Err(PackageError::source(
        &wanted,
        format!(
            "not found ({}); check the name and version, or the repository list",
            problems.join("; ")
        ),
    ))
}

fn describe_wanted(name: &str, app: Option<&str>, ov: Option<&str>) -> String {
    let mut s = format!("package {name}");
    if let Some(a) = app {
        s.push_str(&format!(" appVersion {a}"));
    }
    if let Some(o) = ov {
        s.push_str(&format!(" operatorVersion {o}"));
    }
    s
}

fn local_path(url: &str, ctx: &LoadContext) -> Option<PathBuf> {
    if is_url(url) {
        return None;
    }
    let p = url.strip_prefix("file://").unwrap_or(url);
    Some(match &ctx.base_dir {
        Some(base) => base.join(p),
        None => PathBuf::from(p),
    })
}

/// Every version a repository offers, in KUDO's order per name, with URLs made absolute
/// (resolved against the index location). A local folder without `index.yaml` is
/// listed by reading its packages (sub-folders and `.tgz` files); their URLs are paths.
/// Version-range resolution can pick from this and call [`load_entry`].
pub fn repository_index(repo: &Repository, ctx: &LoadContext) -> Result<Index, PackageError> {
    check_repository(repo)?;
    if let Some(dir) = local_path(&repo.url, ctx)
        && dir.is_dir()
        && !dir.join("index.yaml").is_file()
    {
        return folder_index(&dir);
    }
    let (mut index, location) = fetch_index(repo, ctx)?;
    for list in index.entries.values_mut() {
        for entry in list.iter_mut() {
            for url in entry.urls.iter_mut() {
                *url = join_url(&location, url);
            }
        }
    }
    Ok(index)
}

fn folder_index(dir: &Path) -> Result<Index, PackageError> {
    let mut index = Index::default();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| PackageError::io(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        let (pkg, digest) = if path.is_dir() && path.join("operator.yaml").is_file() {
            (Package::load_dir(&path), None)
        } else if path.extension().is_some_and(|x| x == "tgz") {
            match load_tgz_file(&path) {
                Ok(p) => {
                    let d = match &p.origin {
                        Origin::Tgz { digest, .. } => Some(digest.clone()),
                        _ => None,
                    };
                    (Ok(p), d)
                }
                Err(e) => (Err(e), None),
            }
        } else {
            continue;
        };
        let pkg = match pkg {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipping unreadable package");
                continue;
            }
        };
        let op = pkg.operator;
        index
            .entries
            .entry(op.name.clone())
            .or_default()
            .push(IndexEntry {
                name: op.name,
                operator_version: op.operator_version,
                app_version: op.app_version,
                description: Some(op.description).filter(|d| !d.is_empty()),
                maintainers: op.maintainers,
                urls: vec![path.display().to_string()],
                digest,
            });
    }
    for list in index.entries.values_mut() {
        crate::repo::sort_entries(list);
    }
    Ok(index)
}

/// Read a repository's `index.yaml` as published; returns it with the URL (or path) it
/// was read from. Most callers want [`repository_index`].
pub fn fetch_index(repo: &Repository, ctx: &LoadContext) -> Result<(Index, String), PackageError> {
    check_repository(repo)?;
    let index_url = if repo.url.ends_with(".yaml") {
        repo.url.clone()
    } else {
        format!("{}/index.yaml", repo.url.trim_end_matches('/'))
    };
    let (bytes, location) = match local_path(&index_url, ctx) {
        Some(p) => (
            std::fs::read(&p).map_err(|e| PackageError::io(&p, e))?,
            p.display().to_string(),
        ),
        None => (http_get(&index_url)?, index_url),
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| PackageError::source(&location, "index is not UTF-8 text"))?;
    Ok((parse_index(&text, &location)?, location))
}

fn check_repository(repo: &Repository) -> Result<(), PackageError> {
    match repository_url_problem(&repo.url) {
        Some(problem) => Err(PackageError::source(
            &format!("repository {}", repo.name),
            problem,
        )),
        None => Ok(()),
    }
}

fn join_url(index_location: &str, url: &str) -> String {
    if is_url(url) || url.starts_with("file://") || url.starts_with('/') {
        return url.to_string();
    }
    if is_url(index_location) {
        if let Ok(base) = url::Url::parse(index_location)
            && let Ok(joined) = base.join(url)
        {
            return joined.to_string();
        }
        return url.to_string();
    }
    Path::new(index_location)
        .parent()
        .unwrap_or(Path::new("."))
        .join(url)
        .display()
        .to_string()
}

/// Load one entry of [`repository_index`] (extensions resolved, verified like [`load`]).
pub fn load_entry(
    entry: &IndexEntry,
    repo: &Repository,
    ctx: &LoadContext,
) -> Result<Package, PackageError> {
    let pkg = load_entry_raw(entry, repo, ctx)?;
    finish(pkg, ctx)
}

fn load_entry_raw(
    entry: &IndexEntry,
    repo: &Repository,
    ctx: &LoadContext,
) -> Result<Package, PackageError> {
    let mut failures = Vec::new();
    for url in &entry.urls {
        let local = local_path(url, ctx);
        if let Some(dir) = local.as_ref().filter(|p| p.is_dir()) {
            return Package::load_dir(dir);
        }
        let bytes = match &local {
            None => match fetch_cached(url, entry.digest.as_deref(), ctx) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(%url, error = %e, "package URL failed; trying the next");
                    failures.push(e.to_string());
                    continue;
                }
            },
            Some(p) => match std::fs::read(p) {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{}: {e}", p.display()));
                    continue;
                }
            },
        };
        let digest = sha256_hex(&bytes);
        if let Some(want) = &entry.digest
            && *want != digest
        {
            return Err(PackageError::Digest {
                package: format!("{}-{}", entry.name, entry.operator_version),
                repository: repo.name.clone(),
                url: url.clone(),
                expected: want.clone(),
                actual: digest,
            });
        }
        return package_from_tgz(
            &bytes,
            url,
            Origin::Repository {
                repository: repo.name.clone(),
                url: url.clone(),
                digest,
            },
        );
    }
    Err(PackageError::source(
        &format!(
            "package {}-{} in repository {}",
            entry.name, entry.operator_version, repo.name
        ),
        format!("every URL failed: {}", failures.join("; ")),
    ))
}

/// Load the package a `KudoOperator` task names: a URL, a folder or `.tgz` relative to
/// the parent package's folder (when the parent came from a folder), or a repository
/// name. Versions are exact here; a loaded folder or archive must match them too.
/// (Version ranges are resolved by the caller from [`repository_index`] entries.)
pub fn load_dependency(
    parent: &Package,
    package: &str,
    app_version: Option<&str>,
    operator_version: Option<&str>,
    ctx: &LoadContext,
) -> Result<Package, PackageError> {
    let relative = match &parent.origin {
        Origin::Dir(dir) if !is_url(package) => Some(dir.join(package)).filter(|p| p.exists()),
        _ => None,
    };
    let pkg = match relative {
        Some(path) => load(&path.display().to_string(), ctx)?,
        None if is_url(package) || looks_like_path(package) => load(package, ctx)?,
        None => {
            let found = resolve(package, app_version, operator_version, ctx)?;
            finish(found.package, ctx)?
        }
    };
    let op = &pkg.operator;
    let mismatch = |what: &str, want: &str, got: &str| {
        PackageError::source(
            &format!("dependency {package} of {}", parent.operator.name),
            format!(
                "{what} {want} was asked for, but {} has {got}; fix the KudoOperator task",
                pkg.origin.label()
            ),
        )
    };
    if let Some(v) = operator_version
        && op.operator_version != v
    {
        return Err(mismatch("operatorVersion", v, &op.operator_version));
    }
    if let Some(v) = app_version
        && op.app_version.as_deref() != Some(v)
    {
        return Err(mismatch(
            "appVersion",
            v,
            op.app_version.as_deref().unwrap_or("none"),
        ));
    }
    Ok(pkg)
}
