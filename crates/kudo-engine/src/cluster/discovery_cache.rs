//! Discovery shared by the provider processes of one Terraform run, through a file.
//!
//! Terraform starts the provider several times for one command (a plan, then the
//! apply, ...), and each process used to ask the API server again which resource serves
//! each kind: a request per group-version it reads or writes, and `/apis` and `/api`
//! for the label sweep. Like kubectl's discovery cache (`~/.kube/cache/discovery`),
//! what one process learns is kept in a file the next process reads: one file per API
//! server in the directory [`super::ConnectionSettings::discovery_cache_dir`] names
//! (the provider's: under Terraform's data directory).
//!
//! The file is a hint the server always overrules:
//! - it is named by a hash of the server's URL and of the CA certificates trusted for
//!   it (a cluster created again at the same address has a new CA), and holds the
//!   `gitVersion` read from `/version` when connecting (read anyway: it is the first
//!   contact): a server upgraded since ignores it;
//! - it is used for [`TTL`] after it was started, then started again;
//! - when the server contradicts it (a group-version answers other kinds than the file
//!   lists, or 404; a resource it maps answers a write with 404; a kind the server
//!   serves is missing from its list of every served kind), the process removes it and
//!   asks the server again for everything it took from it
//!   ([`Cluster::forget_discovery_file`]);
//! - what it says is not served is asked again, except a built-in group-version
//!   ([`built_in`]), which only another server version can serve;
//! - an unreadable or corrupt file is ignored (a debug log) and replaced by the next
//!   write, which goes through a temporary file so that a reader never sees half.
//!
//! Processes write it without a lock between them: one that loses an update to another
//! costs a later process a request, nothing more.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::discovery::{ApiResource, Scope};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::discovery::ServedKind;
use super::retry::{RetryError, with_retry};
use super::{Cluster, ClusterError};

/// How long a file is used after it was started. The server contradicting it is what
/// normally ends it; this bounds what a long-lived data directory can serve that no
/// process happened to contradict (a kind nobody resolved, in the list of every served
/// kind of the label sweep).
pub(crate) const TTL: Duration = Duration::from_secs(10 * 60);

/// Bumped when the file's layout changes: older files are then ignored.
const FORMAT: u32 = 1;

/// Where a piece of discovery came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The server answered this process.
    Server,
    /// The file, written by an earlier process; the server may have changed since.
    File,
}

/// What this process knows of discovery.
#[derive(Default)]
pub(crate) struct Known {
    /// The kinds each group-version serves, as [`Cluster::resolve`] asked for them.
    group_versions: HashMap<String, (Vec<ServedKind>, Origin)>,
    /// Every served kind at its group's preferred version, for the label sweep.
    served_kinds: Option<(Arc<Vec<ServedKind>>, Origin)>,
    /// Group-versions of built-in groups ([`built_in`]) the server answered 404 for.
    unserved: HashMap<String, Origin>,
    /// The kinds of CRDs this process saw established, by CRD name
    /// ([`super::established`]): taken when discovery does not list them (yet).
    established: HashMap<String, Vec<ServedKind>>,
}

/// Where [`Known::lookup`] found a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mapped {
    /// In its group-version as discovered (by this process or the file).
    Discovery,
    /// Only from its CRD, seen established by this process.
    EstablishedCrd,
}

impl Known {
    /// The resource serving `kind` in `api_version`: the first of the group-version's
    /// resources with that kind, as kube's `pinned_kind` answers; else the kind of a CRD
    /// this process saw established ([`super::established`]).
    fn lookup(&self, api_version: &str, kind: &str) -> Option<(&ServedKind, Mapped)> {
        let discovered = self
            .group_versions
            .get(api_version)
            .and_then(|(kinds, _)| kinds.iter().find(|k| k.ar.kind == kind));
        match discovered {
            Some(k) => Some((k, Mapped::Discovery)),
            None => self
                .established
                .values()
                .flatten()
                .find(|k| k.ar.api_version == api_version && k.ar.kind == kind)
                .map(|k| (k, Mapped::EstablishedCrd)),
        }
    }
}

/// Whether `api_version`'s group is built into the API server (`v1`, `apps/v1`,
/// `policy/v1beta1`): a CRD's group must have a dot, so what such a group does not
/// serve changes only with the server's version, which the file is kept for. An
/// unserved built-in version (a template's `policy/v1beta1` on Kubernetes 1.25+) is
/// then not asked for again, by this process or the next ones; an unserved version of
/// any other group is, as a CRD may add it any moment.
fn built_in(api_version: &str) -> bool {
    api_version
        .split_once('/')
        .is_none_or(|(group, _)| !group.contains('.'))
}

/// What the file holds about the server.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Snapshot {
    #[serde(default)]
    group_versions: BTreeMap<String, Vec<ServedKind>>,
    #[serde(default)]
    served_kinds: Option<Vec<ServedKind>>,
    /// Built-in group-versions the server does not serve ([`built_in`]).
    #[serde(default)]
    unserved: BTreeSet<String>,
}

impl Snapshot {
    /// The list of every served kind must hold each kind a group-version serves: one
    /// that does not predates a CRD (another process resolved its kind since), and a
    /// label sweep with it would miss that kind's objects. Such a list is dropped. (A
    /// kind served only at a version its group does not prefer drops it too, which
    /// costs the next sweep its discovery, nothing else.)
    fn drop_incomplete_served_kinds(&mut self) {
        let complete = self.served_kinds.as_ref().is_none_or(|served| {
            self.group_versions
                .values()
                .flatten()
                .all(|kind| lists(served, kind))
        });
        if !complete {
            tracing::debug!("the list of every served kind lacks a resolved kind; dropped");
            self.served_kinds = None;
        }
    }
}

/// Whether two answers for one group-version serve the same kinds under the same
/// resources, scopes and verbs, in whatever order each lists them (servers order
/// resources and verbs as they like; the KUDO CRDs' kinds are written in ours when this
/// process established them, see `crds::ensure`).
fn same_kinds(a: &[ServedKind], b: &[ServedKind]) -> bool {
    let normal = |kinds: &[ServedKind]| {
        let mut out: Vec<(String, String, bool, BTreeSet<String>)> = kinds
            .iter()
            .map(|k| {
                (
                    k.ar.kind.clone(),
                    k.ar.plural.clone(),
                    k.namespaced,
                    k.verbs.iter().cloned().collect(),
                )
            })
            .collect();
        out.sort();
        out
    };
    normal(a) == normal(b)
}

/// Whether `served` has `kind`'s kind in its group (at whichever version).
fn lists(served: &[ServedKind], kind: &ServedKind) -> bool {
    served
        .iter()
        .any(|s| s.ar.group == kind.ar.group && s.ar.kind == kind.ar.kind)
}

/// The file as stored.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    format: u32,
    /// The server's URL: a hash names the file, this tells a collision apart.
    server: String,
    server_version: String,
    /// Seconds since the Unix epoch when the file was started; updates keep it, so
    /// that [`TTL`] counts from the oldest answer in it.
    started: u64,
    #[serde(flatten)]
    snapshot: Snapshot,
}

/// The discovery file of one API server.
pub(crate) struct DiscoveryFile {
    path: PathBuf,
    server: String,
    server_version: String,
    /// One update at a time within the process: each reads the file and writes it
    /// whole, and two at once would lose one's answers.
    writing: Mutex<()>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl DiscoveryFile {
    /// The file in `dir` for the server at `server` trusted through the DER certificates
    /// `ca`, which reported `server_version`.
    pub(crate) fn new(
        dir: &Path,
        server: &str,
        ca: &[Vec<u8>],
        server_version: &str,
    ) -> DiscoveryFile {
        let mut hash = Sha256::new();
        hash.update(server.as_bytes());
        for cert in ca {
            // Length first, so that certificates cannot shift into each other.
            hash.update((cert.len() as u64).to_le_bytes());
            hash.update(cert);
        }
        let name: String = hash.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        DiscoveryFile {
            path: dir.join(format!("{name}.json")),
            server: server.to_string(),
            server_version: server_version.to_string(),
            writing: Mutex::new(()),
        }
    }

    /// What the file holds, when it is this server's and not expired.
    pub(crate) fn load(&self) -> Option<Snapshot> {
        self.read(now()).map(|stored| stored.snapshot)
    }

    fn read(&self, now: u64) -> Option<Stored> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "cannot read the discovery file; ignored");
                return None;
            }
        };
        let stored: Stored = match serde_json::from_slice(&bytes) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "corrupt discovery file; ignored");
                return None;
            }
        };
        let unused = if stored.format != FORMAT {
            "written in another format"
        } else if stored.server != self.server {
            "of another server"
        } else if stored.server_version != self.server_version {
            "of another server version"
        } else if now < stored.started || now - stored.started >= TTL.as_secs() {
            "expired"
        } else {
            return Some(stored);
        };
        tracing::debug!(path = %self.path.display(), why = unused, "discovery file not used");
        None
    }

    /// Changes what the file holds by `change` (starting afresh when it is not usable),
    /// then writes it whole. A failure is logged and otherwise ignored: the file only
    /// saves requests. Plain blocking I/O: a file of some kilobytes, written a few
    /// times per process.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Snapshot)) {
        let _turn = self.writing.lock();
        self.update_at(now(), change);
    }

    fn update_at(&self, now: u64, change: impl FnOnce(&mut Snapshot)) {
        let mut stored = self.read(now).unwrap_or_else(|| Stored {
            format: FORMAT,
            server: self.server.clone(),
            server_version: self.server_version.clone(),
            started: now,
            snapshot: Snapshot::default(),
        });
        change(&mut stored.snapshot);
        stored.snapshot.drop_incomplete_served_kinds();
        if let Err(e) = self.write(&stored) {
            tracing::debug!(path = %self.path.display(), error = %e, "cannot write the discovery file");
        }
    }

    /// Through a temporary file of this process, renamed over the file: a reader never
    /// sees half a file, and two processes writing at once do not mix theirs.
    fn write(&self, stored: &Stored) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(stored).map_err(std::io::Error::other)?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension(format!(
            "{}.{}.tmp",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Removes the file, so that no later process takes what it holds.
    pub(crate) fn remove(&self) {
        let _turn = self.writing.lock();
        match std::fs::remove_file(&self.path) {
            Ok(()) => tracing::debug!(path = %self.path.display(), "discovery file removed"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "cannot remove the discovery file")
            }
        }
    }
}

impl Cluster {
    /// Takes what the discovery file holds (when connecting).
    pub(super) fn read_discovery_file(&self) {
        let Some(snapshot) = self.discovery_file.as_ref().and_then(|f| f.load()) else {
            return;
        };
        let Ok(mut known) = self.discovery.lock() else {
            return;
        };
        tracing::debug!(
            group_versions = snapshot.group_versions.len(),
            served_kinds = snapshot.served_kinds.is_some(),
            "discovery taken from the discovery file"
        );
        known.group_versions = snapshot
            .group_versions
            .into_iter()
            .map(|(gv, kinds)| (gv, (kinds, Origin::File)))
            .collect();
        known.served_kinds = snapshot
            .served_kinds
            .map(|kinds| (Arc::new(kinds), Origin::File));
        known.unserved = snapshot
            .unserved
            .into_iter()
            .map(|gv| (gv, Origin::File))
            .collect();
    }

    /// Whether `api_version` is a built-in group-version the server does not serve.
    pub(super) fn known_unserved(&self, api_version: &str) -> bool {
        self.discovery
            .lock()
            .is_ok_and(|known| known.unserved.contains_key(api_version))
    }

    /// The resource serving `kind` in `api_version` and its scope, when known
    /// ([`Known::lookup`]).
    pub(super) fn known_kind(&self, api_version: &str, kind: &str) -> Option<(ApiResource, Scope)> {
        let known = self.discovery.lock().ok()?;
        known
            .lookup(api_version, kind)
            .map(|(k, _)| (k.ar.clone(), k.scope()))
    }

    /// Whether this process knows which resource serves `kind` in `api_version`
    /// (discovered, from the discovery file, or from its CRD seen established), so that
    /// using it asks discovery nothing.
    pub(crate) fn knows_kind(&self, api_version: &str, kind: &str) -> bool {
        self.known_kind(api_version, kind).is_some()
    }

    /// Whether `kind` in `api_version` is known only from a CRD seen established, not
    /// from discovery: a write it answers 404 is the server's handler not having caught
    /// up with the definition yet, asked again ([`Cluster::asked_again_if_unserved`]).
    pub(super) fn mapped_by_established_crd(&self, api_version: &str, kind: &str) -> bool {
        self.discovery.lock().is_ok_and(|known| {
            matches!(
                known.lookup(api_version, kind),
                Some((_, Mapped::EstablishedCrd))
            )
        })
    }

    /// `crd` as this process saw it: when established, the kinds it serves are known
    /// from now on ([`super::established`]).
    pub(crate) fn saw_crd(&self, crd: &serde_json::Value) {
        let Some((name, kinds)) = super::established::served_by(crd) else {
            return;
        };
        if let Ok(mut known) = self.discovery.lock() {
            known.established.insert(name, kinds);
        }
    }

    /// This process deleted the CRD `name`: what its definition taught is forgotten.
    pub(super) fn crd_deleted(&self, name: &str) {
        if let Ok(mut known) = self.discovery.lock() {
            known.established.remove(name);
        }
    }

    /// The server answered `kinds` for `api_version`. An answer the file contradicts
    /// (it lists other kinds, or its list of every served kind lacks one) makes this
    /// process forget the file; the answer is written to it.
    pub(super) fn learned_group_version(&self, api_version: &str, kinds: Vec<ServedKind>) {
        let contradicted = self.discovery.lock().is_ok_and(|known| {
            matches!(
                known.group_versions.get(api_version),
                Some((listed, Origin::File)) if !same_kinds(listed, &kinds)
            ) || matches!(
                &known.served_kinds,
                Some((served, Origin::File)) if !kinds.iter().all(|k| lists(served, k))
            )
        });
        if contradicted {
            tracing::debug!(group_version = %api_version, "the discovery file is out of date");
            self.forget_discovery_file();
        }
        if let Ok(mut known) = self.discovery.lock() {
            // This process discovered every served kind before a CRD was created (by
            // someone else): a sweep with the list would miss the new kind's objects.
            if known
                .served_kinds
                .as_ref()
                .is_some_and(|(served, _)| !kinds.iter().all(|k| lists(served, k)))
            {
                known.served_kinds = None;
            }
            known
                .group_versions
                .insert(api_version.to_string(), (kinds, Origin::Server));
        }
        self.save_discovery();
    }

    /// The server serves nothing of `api_version` (404): a file listing it is out of
    /// date; a built-in one is remembered as unserved.
    pub(super) fn group_version_gone(&self, api_version: &str) {
        let listed_by_file = self.discovery.lock().is_ok_and(|known| {
            matches!(
                known.group_versions.get(api_version),
                Some((_, Origin::File))
            )
        });
        if listed_by_file {
            tracing::debug!(group_version = %api_version, "the discovery file lists a group-version the server does not serve");
            self.forget_discovery_file();
        }
        if let Ok(mut known) = self.discovery.lock() {
            known.group_versions.remove(api_version);
            if built_in(api_version) {
                known
                    .unserved
                    .insert(api_version.to_string(), Origin::Server);
            }
        }
        if built_in(api_version) {
            self.save_discovery();
        }
    }

    /// Every served kind, when discovered by this process or taken from the file.
    pub(super) fn known_served_kinds(&self) -> Option<Arc<Vec<ServedKind>>> {
        let known = self.discovery.lock().ok()?;
        known.served_kinds.as_ref().map(|(kinds, _)| kinds.clone())
    }

    /// The server answered every served kind (see [`super::discovery`]).
    pub(super) fn learned_served_kinds(&self, kinds: Arc<Vec<ServedKind>>) {
        if let Ok(mut known) = self.discovery.lock() {
            known.served_kinds = Some((kinds, Origin::Server));
        }
        self.save_discovery();
    }

    /// A CRD we created adds a kind the list of every served kind lacks: dropped here
    /// and in the file. The group-versions stay: a kind they lack is asked for again.
    pub(super) fn forget_served_kinds(&self) {
        if let Ok(mut known) = self.discovery.lock() {
            known.served_kinds = None;
        }
        if let Some(file) = &self.discovery_file {
            file.update(|snapshot| snapshot.served_kinds = None);
        }
    }

    /// Whether what this process knows of `api_version` came from the discovery file: a
    /// request that fails as unserved is then asked again, whether this request or
    /// another one running beside it forgets the file first.
    pub(super) fn mapped_by_file(&self, api_version: &str) -> bool {
        self.discovery.lock().is_ok_and(|known| {
            matches!(
                known.group_versions.get(api_version),
                Some((_, Origin::File))
            )
        })
    }

    /// The server contradicted the discovery file: it is removed, and what this process
    /// took from it is asked of the server again (once: nothing of the file is left).
    /// Whether anything of the file was in use.
    pub(super) fn forget_discovery_file(&self) -> bool {
        let Some(file) = &self.discovery_file else {
            return false;
        };
        let Ok(mut known) = self.discovery.lock() else {
            return false;
        };
        let before = known.group_versions.len() + known.unserved.len();
        known
            .group_versions
            .retain(|_, (_, origin)| *origin == Origin::Server);
        known.unserved.retain(|_, origin| *origin == Origin::Server);
        let mut in_use = known.group_versions.len() + known.unserved.len() != before;
        if matches!(known.served_kinds, Some((_, Origin::File))) {
            known.served_kinds = None;
            in_use = true;
        }
        drop(known);
        // Nothing of it in use: whatever failed, the file was not the cause.
        if in_use {
            file.remove();
        }
        in_use
    }

    /// Asks the server for `api_version` when what this process knows of it came from
    /// the file: for decisions that write (whether KUDO's CRDs must be created), which
    /// must not rest on a file from before someone deleted them.
    pub(super) async fn confirm_group_version(
        &self,
        api_version: &str,
    ) -> Result<(), ClusterError> {
        let from_file = self.discovery.lock().ok().is_some_and(|known| {
            matches!(
                known.group_versions.get(api_version),
                Some((_, Origin::File))
            )
        });
        if !from_file {
            return Ok(());
        }
        match self.ask_group_version(api_version).await {
            Ok(kinds) => self.learned_group_version(api_version, kinds),
            Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 404 => {
                self.group_version_gone(api_version)
            }
            Err(e) => return Err(self.error("discover", api_version, e)),
        }
        Ok(())
    }

    /// The kinds the server serves in `api_version` (one request, retried).
    pub(super) async fn ask_group_version(
        &self,
        api_version: &str,
    ) -> Result<Vec<ServedKind>, RetryError> {
        let gv = match api_version.split_once('/') {
            Some((group, version)) => kube::core::GroupVersion::gv(group, version),
            None => kube::core::GroupVersion::gv("", api_version),
        };
        let group = with_retry("discovery", None, || {
            kube::discovery::pinned_group(&self.client, &gv)
        })
        .await?;
        Ok(group
            .versioned_resources(&gv.version)
            .into_iter()
            .map(|(ar, caps)| ServedKind {
                ar,
                namespaced: caps.scope == Scope::Namespaced,
                verbs: caps.operations,
            })
            .collect())
    }

    /// Writes what the server answered this process to the file (what came from the
    /// file is there already, or was removed with it for a reason).
    fn save_discovery(&self) {
        let Some(file) = &self.discovery_file else {
            return;
        };
        let Some(answered) = self.discovery.lock().ok().map(|known| Snapshot {
            group_versions: known
                .group_versions
                .iter()
                .filter(|(_, (_, origin))| *origin == Origin::Server)
                .map(|(gv, (kinds, _))| (gv.clone(), kinds.clone()))
                .collect(),
            served_kinds: known
                .served_kinds
                .as_ref()
                .filter(|(_, origin)| *origin == Origin::Server)
                .map(|(kinds, _)| kinds.to_vec()),
            unserved: known
                .unserved
                .iter()
                .filter(|(_, origin)| **origin == Origin::Server)
                .map(|(gv, _)| gv.clone())
                .collect(),
        }) else {
            return;
        };
        file.update(|snapshot| {
            for gv in &answered.unserved {
                snapshot.group_versions.remove(gv);
            }
            snapshot.group_versions.extend(answered.group_versions);
            if answered.served_kinds.is_some() {
                snapshot.served_kinds = answered.served_kinds;
            }
            snapshot.unserved.extend(answered.unserved);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(api_version: &str, kind: &str, plural: &str) -> ServedKind {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        ServedKind {
            ar: ApiResource {
                group: group.into(),
                version: version.into(),
                api_version: api_version.into(),
                kind: kind.into(),
                plural: plural.into(),
            },
            namespaced: true,
            verbs: vec!["get".into(), "list".into(), "delete".into()],
        }
    }

    /// The order a server lists resources and verbs in says nothing: a file the KUDO
    /// CRDs' kinds were written to in ours is not contradicted by the server's order
    /// (which would forget the whole file in every later process).
    #[test]
    fn the_same_kinds_in_another_order_are_the_same_answer() {
        let ours = vec![
            kind("kudo.dev/v1beta1", "Operator", "operators"),
            kind("kudo.dev/v1beta1", "Instance", "instances"),
        ];
        let mut theirs: Vec<ServedKind> = ours.iter().rev().cloned().collect();
        theirs[0].verbs.reverse();
        assert!(same_kinds(&ours, &theirs));
        theirs[0].verbs.pop();
        assert!(!same_kinds(&ours, &theirs));
        theirs.pop();
        assert!(!same_kinds(&ours, &theirs[..1]));
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            group_versions: BTreeMap::from([
                ("v1".into(), vec![kind("v1", "ConfigMap", "configmaps")]),
                (
                    "apps/v1".into(),
                    vec![kind("apps/v1", "Deployment", "deployments")],
                ),
            ]),
            served_kinds: Some(vec![
                kind("v1", "ConfigMap", "configmaps"),
                kind("apps/v1", "Deployment", "deployments"),
            ]),
            unserved: BTreeSet::from(["policy/v1beta1".to_string()]),
        }
    }

    #[test]
    fn only_groups_without_a_dot_are_built_in() {
        for gv in ["v1", "apps/v1", "policy/v1beta1", "autoscaling/v2"] {
            assert!(built_in(gv), "{gv}");
        }
        for gv in [
            "kudo.dev/v1beta1",
            "apiextensions.k8s.io/v1",
            "example.com/v1",
        ] {
            assert!(!built_in(gv), "{gv}");
        }
    }

    fn file(dir: &Path, server: &str) -> DiscoveryFile {
        DiscoveryFile::new(dir, server, &[b"ca".to_vec()], "v1.36.0")
    }

    #[test]
    fn what_is_written_is_read_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        let f = file(dir.path(), "https://10.0.0.1:6443/");
        assert_eq!(f.load(), None, "no file yet");
        f.update(|s| *s = snapshot());
        assert_eq!(f.load(), Some(snapshot()));
        // A later update adds to it and keeps what it does not change.
        f.update(|s| {
            s.group_versions
                .insert("batch/v1".into(), vec![kind("batch/v1", "Job", "jobs")]);
        });
        let read = f.load().expect("read");
        assert_eq!(read.group_versions.len(), 3);
        assert!(
            read.served_kinds.is_none(),
            "the list of every served kind lacks Job: dropped"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }

    #[test]
    fn a_corrupt_or_foreign_file_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().expect("temp dir");
        let f = file(dir.path(), "https://10.0.0.1:6443/");
        for bad in [&b"{not json"[..], b"", b"{\"format\": 1}", b"[]"] {
            std::fs::write(&f.path, bad).expect("write");
            assert_eq!(f.load(), None, "{}", String::from_utf8_lossy(bad));
        }
        f.update(|s| *s = snapshot());
        assert_eq!(f.load(), Some(snapshot()), "the next write replaces it");
        let mut stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&f.path).expect("read")).expect("JSON");
        stored["format"] = 99.into();
        std::fs::write(&f.path, stored.to_string()).expect("write");
        assert_eq!(f.load(), None, "another format");
    }

    #[test]
    fn each_server_has_its_own_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let a = file(dir.path(), "https://10.0.0.1:6443/");
        let b = file(dir.path(), "https://10.0.0.2:6443/");
        let a_again = DiscoveryFile::new(dir.path(), "https://10.0.0.1:6443/", &[], "v1.36.0");
        assert_ne!(a.path, b.path);
        assert_ne!(a.path, a_again.path, "another CA: a cluster created again");
        a.update(|s| *s = snapshot());
        assert_eq!(b.load(), None);
        assert_eq!(a_again.load(), None);
        // The same server after an upgrade: the file is not used, and started again.
        let upgraded = DiscoveryFile::new(
            dir.path(),
            "https://10.0.0.1:6443/",
            &[b"ca".to_vec()],
            "v1.37.0",
        );
        assert_eq!(upgraded.path, a.path);
        assert_eq!(upgraded.load(), None);
        upgraded.update(|s| s.group_versions.clear());
        assert_eq!(a.load(), None, "v1.36.0 finds the upgraded server's file");
        upgraded.remove();
        assert!(!a.path.exists());
        upgraded.remove();
    }

    #[test]
    fn a_file_expires_ttl_after_it_was_started() {
        let dir = tempfile::tempdir().expect("temp dir");
        let f = file(dir.path(), "https://10.0.0.1:6443/");
        let start = 1_000_000;
        f.update_at(start, |s| *s = snapshot());
        // Updates keep the start: the oldest answer in the file decides.
        f.update_at(start + 300, |s| s.served_kinds = None);
        assert!(f.read(start + TTL.as_secs() - 1).is_some());
        assert!(f.read(start + TTL.as_secs()).is_none());
        assert!(f.read(start - 10).is_none(), "started in the future");
    }

    mod processes {
        //! Clusters connected one after the other with the same directory, as the
        //! provider processes of one Terraform run are, against kube-sim.

        use std::collections::BTreeMap;

        use kube_sim::{KubeSim, SimConfig};
        use serde_json::json;
        use tokio_util::sync::CancellationToken;

        use crate::cluster::{Cluster, ClusterError, ConnectionSettings, ObjectRef};

        fn settings(sim: &KubeSim, dir: Option<&std::path::Path>) -> ConnectionSettings {
            ConnectionSettings {
                host: Some(sim.url()),
                token: Some(sim.token().to_string()),
                cluster_ca_certificate: Some(sim.ca_pem()),
                discovery_cache_dir: dir.map(Into::into),
                ..Default::default()
            }
        }

        /// Discovery requests since `before`, by path, `/version` (every connection's
        /// first contact) left out.
        fn discovered_since(sim: &KubeSim, before: &BTreeMap<String, u64>) -> Vec<String> {
            sim.request_counts()
                .into_iter()
                .filter(|(key, n)| *n > before.get(key).copied().unwrap_or(0))
                .filter_map(|(key, _)| key.strip_prefix("get discovery ").map(str::to_string))
                .filter(|path| path != "/version")
                .collect()
        }

        fn crd(group: &str, kind: &str, plural: &str) -> serde_json::Value {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": { "name": format!("{plural}.{group}") },
                "spec": {
                    "group": group,
                    "scope": "Namespaced",
                    "names": { "kind": kind, "plural": plural, "singular": kind.to_lowercase() },
                    "versions": [{
                        "name": "v1", "served": true, "storage": true,
                        "schema": { "openAPIV3Schema": {
                            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        }},
                    }],
                },
            })
        }

        fn custom(kind: &str, name: &str) -> serde_json::Value {
            json!({
                "apiVersion": "example.com/v1",
                "kind": kind,
                "metadata": { "name": name, "namespace": "default" },
                "spec": { "size": 1 },
            })
        }

        #[tokio::test]
        async fn a_later_process_takes_the_discovery_of_an_earlier_one() {
            let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
            let dir = tempfile::tempdir().expect("temp dir");
            let first = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            first.resolve("v1", "ConfigMap").await.expect("ConfigMap");
            first
                .resolve("apps/v1", "Deployment")
                .await
                .expect("Deployment");
            first.served_kinds().await.expect("served kinds");
            // kube-sim serves Kubernetes 1.25+, without policy/v1beta1: asked once.
            let unserved = || ("policy/v1beta1", "PodDisruptionBudget");
            for _ in 0..2 {
                let (gv, kind) = unserved();
                let e = first.resolve(gv, kind).await.expect_err("not served");
                assert!(matches!(e, ClusterError::UnknownKind { .. }), "{e}");
            }
            let counts = sim.request_counts();
            assert_eq!(counts.get("get discovery /apis/policy/v1beta1"), Some(&1));

            let before = sim.request_counts();
            let second = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            let (gv, kind) = unserved();
            assert!(second.resolve(gv, kind).await.is_err(), "not served");
            let (ar, _) = second
                .resolve("apps/v1", "Deployment")
                .await
                .expect("Deployment");
            assert_eq!(ar.plural, "deployments");
            assert!(
                second
                    .is_namespaced("v1", "ConfigMap")
                    .await
                    .expect("ConfigMap")
            );
            let kinds = second.served_kinds().await.expect("served kinds");
            assert!(kinds.iter().any(|k| k.ar.kind == "StatefulSet"));
            assert_eq!(discovered_since(&sim, &before), Vec::<String>::new());

            // Without the directory, every process discovers for itself.
            let before = sim.request_counts();
            let alone = Cluster::connect(&settings(&sim, None))
                .await
                .expect("connect");
            alone.resolve("v1", "ConfigMap").await.expect("ConfigMap");
            assert_eq!(discovered_since(&sim, &before), ["/api/v1"]);
        }

        /// A CRD created by someone else after the file was written: the kind is found
        /// (the group-version asked again), the list of every served kind the file held
        /// is not used, and the file is started again from the server's answers.
        #[tokio::test]
        async fn a_kind_the_file_does_not_list_is_asked_for_and_the_file_forgotten() {
            let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
            let dir = tempfile::tempdir().expect("temp dir");
            let kubectl = Cluster::connect(&settings(&sim, None))
                .await
                .expect("connect");
            kubectl
                .apply(&crd("example.com", "Gadget", "gadgets"), false)
                .await
                .expect("Gadget CRD");
            let first = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            first
                .resolve("example.com/v1", "Gadget")
                .await
                .expect("Gadget");
            first.served_kinds().await.expect("served kinds");

            kubectl
                .apply(&crd("example.com", "Widget", "widgets"), false)
                .await
                .expect("Widget CRD");
            let before = sim.request_counts();
            let second = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            let (ar, _) = second
                .resolve("example.com/v1", "Widget")
                .await
                .expect("Widget");
            assert_eq!(ar.plural, "widgets");
            let kinds = second.served_kinds().await.expect("served kinds");
            assert!(
                kinds.iter().any(|k| k.ar.kind == "Widget"),
                "discovered again"
            );
            let asked = discovered_since(&sim, &before);
            assert!(
                asked.contains(&"/apis/example.com/v1".to_string()),
                "{asked:?}"
            );
            assert!(asked.contains(&"/apis".to_string()), "{asked:?}");

            // What the second process learned is what the next one takes.
            let before = sim.request_counts();
            let third = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            third
                .resolve("example.com/v1", "Widget")
                .await
                .expect("Widget");
            third
                .resolve("example.com/v1", "Gadget")
                .await
                .expect("Gadget");
            let kinds = third.served_kinds().await.expect("served kinds");
            assert!(kinds.iter().any(|k| k.ar.kind == "Widget"));
            assert_eq!(discovered_since(&sim, &before), Vec::<String>::new());
        }

        /// kubectl installs the Gadget CRD (`gadgets`), a first process with `dir` writes
        /// Gadget `one` (so the file maps the kind), then kubectl deletes the CRD, as a
        /// destroy does. Returns kubectl's connection.
        async fn gadget_mapped_then_crd_deleted(sim: &KubeSim, dir: &std::path::Path) -> Cluster {
            let kubectl = Cluster::connect(&settings(sim, None))
                .await
                .expect("connect");
            let gadgets = crd("example.com", "Gadget", "gadgets");
            kubectl.apply(&gadgets, false).await.expect("CRD");
            let first = Cluster::connect(&settings(sim, Some(dir)))
                .await
                .expect("connect");
            first
                .apply(&custom("Gadget", "one"), false)
                .await
                .expect("Gadget");
            let cancel = CancellationToken::new();
            let r = ObjectRef::from_object(&gadgets).expect("ref");
            kubectl.delete_and_wait(&r, &cancel).await.expect("deleted");
            kubectl
        }

        /// The CRD is gone: its group answers the real server's plain `404 page not
        /// found`, while the file still maps the kind. The read forgets the file and
        /// finds the object absent rather than failing.
        #[tokio::test]
        async fn a_read_of_a_group_no_longer_served_asks_again_rather_than_failing() {
            let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
            let dir = tempfile::tempdir().expect("temp dir");
            gadget_mapped_then_crd_deleted(&sim, dir.path()).await;
            let second = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            let one = ObjectRef::from_object(&custom("Gadget", "one")).expect("ref");
            let found = second
                .get(&one)
                .await
                .expect("a read of an unserved kind is no error");
            assert!(found.is_none());
        }

        /// Two reads of the unserved kind side by side (a plan reads an object's owner
        /// beside its dry-run): whichever forgets the file first, neither fails.
        #[tokio::test]
        async fn reads_side_by_side_of_a_group_no_longer_served_both_ask_again() {
            let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
            let dir = tempfile::tempdir().expect("temp dir");
            gadget_mapped_then_crd_deleted(&sim, dir.path()).await;
            let second = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            let one = ObjectRef::from_object(&custom("Gadget", "one")).expect("ref");
            let two = ObjectRef::from_object(&custom("Gadget", "two")).expect("ref");
            let (first, other) = futures::future::join(second.get(&one), second.get(&two)).await;
            for found in [first, other] {
                let found = found.expect("a read of an unserved kind is no error");
                assert!(found.is_none());
            }
        }

        /// The file maps kind Gadget to `gadgets`, but its CRD was replaced by one
        /// serving it as `gizmos`: the write answered 404 forgets the file and is sent
        /// again to the resource the server names.
        #[tokio::test]
        async fn a_write_the_server_answers_404_forgets_the_file_and_is_sent_again() {
            let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
            let dir = tempfile::tempdir().expect("temp dir");
            let kubectl = gadget_mapped_then_crd_deleted(&sim, dir.path()).await;
            kubectl
                .apply(&crd("example.com", "Gadget", "gizmos"), false)
                .await
                .expect("CRD");
            let second = Cluster::connect(&settings(&sim, Some(dir.path())))
                .await
                .expect("connect");
            second
                .apply(&custom("Gadget", "two"), false)
                .await
                .expect("the write goes to gizmos");
            let (ar, _) = second
                .resolve("example.com/v1", "Gadget")
                .await
                .expect("Gadget");
            assert_eq!(ar.plural, "gizmos");
            let counts = sim.request_counts();
            assert_eq!(counts.get("patch gadgets"), Some(&2), "{counts:?}");
            assert_eq!(counts.get("patch gizmos"), Some(&1), "{counts:?}");
            assert!(
                kubectl
                    .get(&ObjectRef::new(
                        "example.com/v1",
                        "Gadget",
                        Some("default"),
                        "two"
                    ))
                    .await
                    .expect("get")
                    .is_some()
            );
        }
    }
}
