//! Dry-run answers shared by the plans of one Terraform run, through files.
//!
//! `terraform apply` plans twice: the plan the user reads, then (in another provider
//! process) the final plan the apply checks against it. Each used to dry-run every
//! object again, so an instance of 1,000 objects cost three passes over the API server
//! (two dry-runs, one write) where the work needs two. A plan now keeps each dry-run
//! answer it got, and a later plan asking the very same question takes it instead of
//! asking again. The same question means all of:
//! - the same API server (URL and trusted CA certificates), at the same version;
//! - the same credentials (the kubeconfig user's entry, hashed: a token, a client
//!   certificate, a plugin's command line), so that what one user may write is never
//!   taken as what another may;
//! - the same request, byte for byte (the object as the provider sends it, applied
//!   with our field manager, conflicts forced or not: an object Terraform's state
//!   records as ours takes back fields another manager took);
//! - the object found as it was: absent, or at the same `resourceVersion`. An answer is
//!   kept under the state the server gave it for (the version in the answer,
//!   [`Seen::of_answer`]) and looked up under the state the LIST the plan makes anyway
//!   for its ownership check has just shown. An object someone created, changed or
//!   deleted since is dry-run again.
//!
//! What is not in the key and can still change the answer (an admission webhook or a
//! CRD's schema changed between the two plans) is bounded by [`TTL`]: an answer older
//! than that is asked again; and the apply's own writes still meet the server's verdict.
//!
//! The answers can hold a Secret's data. They are encrypted (ChaCha20-Poly1305) with a
//! key derived from the question itself, which includes the object as sent: only a
//! process that is about to send that same Secret can read its answer, and a file's
//! name (another hash of the question) tells nothing of what it holds. Refusals are not
//! kept: a refused plan is always asked again.
//!
//! Files are written through a temporary file and a rename, so a reader never sees
//! half of one; an unreadable, corrupt or foreign file is a miss (a debug log).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use aws_lc_rs::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long an answer is taken after it was written: long enough for a user to read
/// the plan `terraform apply` shows before answering yes, short enough that a change
/// of the server's admission or schemas in between is seldom missed.
pub(crate) const TTL: Duration = Duration::from_secs(10 * 60);

/// Bumped when the key's inputs or the file layout change: older files then miss.
const FORMAT: &[u8] = b"kudo dry-run answer v1";

/// How the object stood when the plan listed it, as part of the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen<'a> {
    Absent,
    /// At this `resourceVersion`.
    At(&'a str),
}

impl<'a> Seen<'a> {
    /// How the object stood when the server answered this dry-run: an object a dry-run
    /// would create has no `resourceVersion` in the answer, one it would change has the
    /// version it found (nothing was stored, so nothing moved it). An answer is kept under
    /// the state it was given for, so a plan that listed the object a moment before or
    /// after the dry-run cannot pair an answer with a state it was not given for.
    pub(crate) fn of_answer(answer: &'a Value) -> Seen<'a> {
        match answer
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            Some(version) if !version.is_empty() => Seen::At(version),
            _ => Seen::Absent,
        }
    }
}

/// The answers of one API server for one set of credentials.
pub(crate) struct DryRunCache {
    dir: PathBuf,
    /// The server, its CA certificates and version, and the credentials, hashed.
    context: [u8; 32],
    /// Old answers are swept once per process, before its first write.
    swept: AtomicBool,
}

/// One question: where its answer is kept and the key that seals it.
struct Question {
    path: PathBuf,
    key: [u8; 32],
}

impl DryRunCache {
    /// The answers in `dir` for the server at `server`, trusted through the DER
    /// certificates `ca`, which reported `server_version`, asked with `credentials` (the
    /// kubeconfig user's entry as JSON).
    pub(crate) fn new(
        dir: &Path,
        server: &str,
        ca: &[Vec<u8>],
        server_version: &str,
        credentials: &[u8],
    ) -> DryRunCache {
        let mut hash = Sha256::new();
        // Each part's length first, so that parts cannot shift into each other.
        for part in [server.as_bytes(), server_version.as_bytes(), credentials]
            .into_iter()
            .chain(ca.iter().map(Vec::as_slice))
        {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        DryRunCache {
            dir: dir.to_path_buf(),
            context: hash.finalize().into(),
            swept: AtomicBool::new(false),
        }
    }

    fn question(&self, body: &Value, owned: bool, seen: Seen<'_>) -> Question {
        let mut hash = Sha256::new();
        hash.update(FORMAT);
        hash.update(self.context);
        hash.update([u8::from(owned)]);
        match seen {
            Seen::Absent => hash.update([0u8]),
            Seen::At(version) => {
                hash.update([1u8]);
                hash.update((version.len() as u64).to_le_bytes());
                hash.update(version.as_bytes());
            }
        }
        // serde_json writes a value the same way each time: the same object, the same
        // bytes.
        hash.update(body.to_string().as_bytes());
        let question: [u8; 32] = hash.finalize().into();
        let derive = |purpose: &[u8]| -> [u8; 32] {
            let mut h = Sha256::new();
            h.update(purpose);
            h.update(question);
            h.finalize().into()
        };
        let name: String = derive(b"name")[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Question {
            path: self.dir.join(name),
            key: derive(b"key"),
        }
    }

    /// The answer an earlier plan got to the same question, if it is still fresh.
    pub(crate) fn get(&self, body: &Value, owned: bool, seen: Seen<'_>) -> Option<Value> {
        let q = self.question(body, owned, seen);
        let fresh = std::fs::metadata(&q.path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|written| SystemTime::now().duration_since(written).ok())
            .is_some_and(|age| age <= TTL);
        if !fresh {
            return None;
        }
        let sealed = std::fs::read(&q.path).ok()?;
        match open(&q.key, sealed) {
            Some(answer) => Some(answer),
            None => {
                tracing::debug!(file = %q.path.display(), "unreadable dry-run answer; asking the server");
                None
            }
        }
    }

    /// Whether any answer is kept (for any server): when none is, a plan has nothing to
    /// look up and need not list before its dry-runs.
    pub(crate) fn holds_any(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|mut entries| entries.next().is_some())
    }

    /// Keeps `answer` for the plans after this one, under the state it was given for
    /// ([`Seen::of_answer`]).
    pub(crate) fn put(&self, body: &Value, owned: bool, answer: &Value) {
        if !self.swept.swap(true, Ordering::Relaxed) {
            self.sweep();
        }
        let q = self.question(body, owned, Seen::of_answer(answer));
        let Some(sealed) = seal(&q.key, answer) else {
            return;
        };
        if let Err(e) = write_whole(&self.dir, &q.path, &sealed) {
            tracing::debug!(error = %e, dir = %self.dir.display(), "cannot keep a dry-run answer");
        }
    }

    /// Removes answers past [`TTL`], so that the directory does not grow with each run.
    fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|written| now.duration_since(written).ok())
                .is_some_and(|age| age > TTL);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

fn sealing_key(key: &[u8; 32]) -> Option<LessSafeKey> {
    UnboundKey::new(&CHACHA20_POLY1305, key)
        .ok()
        .map(LessSafeKey::new)
}

/// The nonce, then `answer` encrypted and its tag.
fn seal(key: &[u8; 32], answer: &Value) -> Option<Vec<u8>> {
    let key = sealing_key(key)?;
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new().fill(&mut nonce).ok()?;
    let mut data = serde_json::to_vec(answer).ok()?;
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
        .ok()?;
    let mut sealed = nonce.to_vec();
    sealed.extend_from_slice(&data);
    Some(sealed)
}

fn open(key: &[u8; 32], mut sealed: Vec<u8>) -> Option<Value> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let key = sealing_key(key)?;
    let mut data = sealed.split_off(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(&sealed).ok()?;
    let plain = key.open_in_place(nonce, Aad::empty(), &mut data).ok()?;
    serde_json::from_slice(plain).ok()
}

fn write_whole(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!(
        "{}.{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cache(dir: &Path, credentials: &[u8]) -> DryRunCache {
        DryRunCache::new(
            dir,
            "https://10.0.0.1:6443/",
            &[b"ca".to_vec()],
            "v1.36.0",
            credentials,
        )
    }

    fn secret() -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"},
               "stringData": {"password": "hunter2-very-secret"}})
    }

    #[test]
    fn the_same_question_gets_the_answer_back() {
        let dir = tempfile::tempdir().expect("dir");
        let answer = json!({"metadata": {"uid": "u1"}, "data": {"password": "aHVudGVyMg=="}});
        cache(dir.path(), b"alice").put(&secret(), false, &answer);
        let again = cache(dir.path(), b"alice");
        assert_eq!(again.get(&secret(), false, Seen::Absent), Some(answer));
    }

    #[test]
    fn another_object_state_user_server_or_body_misses() {
        let dir = tempfile::tempdir().expect("dir");
        let answer = json!({"metadata": {"uid": "u1"}});
        cache(dir.path(), b"alice").put(&secret(), false, &answer);
        let alice = cache(dir.path(), b"alice");
        assert_eq!(
            alice.get(&secret(), false, Seen::At("7")),
            None,
            "object created since"
        );
        let mut changed = secret();
        changed["stringData"]["password"] = json!("other");
        assert_eq!(
            alice.get(&changed, false, Seen::Absent),
            None,
            "another body"
        );
        assert_eq!(
            alice.get(&secret(), true, Seen::Absent),
            None,
            "conflicts forced"
        );
        assert_eq!(
            cache(dir.path(), b"bob").get(&secret(), false, Seen::Absent),
            None,
            "another user"
        );
        let upgraded = DryRunCache::new(
            dir.path(),
            "https://10.0.0.1:6443/",
            &[b"ca".to_vec()],
            "v1.37.0",
            b"alice",
        );
        assert_eq!(
            upgraded.get(&secret(), false, Seen::Absent),
            None,
            "another server version"
        );
    }

    /// An answer is kept under the state the server gave it for, whatever a LIST beside
    /// it saw: an object that changed between the two is asked again.
    #[test]
    fn an_answer_is_kept_under_the_version_it_answers_for() {
        let dir = tempfile::tempdir().expect("dir");
        let c = cache(dir.path(), b"alice");
        assert!(!c.holds_any());
        let update = json!({"metadata": {"uid": "u1", "resourceVersion": "8"}});
        c.put(&secret(), false, &update);
        assert!(c.holds_any());
        assert_eq!(c.get(&secret(), false, Seen::At("8")), Some(update));
        assert_eq!(c.get(&secret(), false, Seen::At("7")), None);
        assert_eq!(c.get(&secret(), false, Seen::Absent), None);
    }

    #[test]
    fn files_hold_nothing_readable_of_the_answer() {
        let dir = tempfile::tempdir().expect("dir");
        let answer = json!({"stringData": {"password": "hunter2-very-secret"}});
        cache(dir.path(), b"alice").put(&secret(), false, &answer);
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .collect();
        assert_eq!(files.len(), 1);
        let bytes = std::fs::read(files[0].path()).expect("file");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("hunter2"), "the answer is in the clear");
        assert!(!text.contains("password"), "the answer is in the clear");
    }

    #[test]
    fn a_corrupt_file_is_a_miss() {
        let dir = tempfile::tempdir().expect("dir");
        let c = cache(dir.path(), b"alice");
        c.put(&secret(), false, &json!({"a": 1}));
        for f in std::fs::read_dir(dir.path()).expect("dir").flatten() {
            std::fs::write(f.path(), b"garbage that is long enough to hold a nonce")
                .expect("write");
        }
        assert_eq!(c.get(&secret(), false, Seen::Absent), None);
    }

    #[test]
    fn an_old_answer_is_a_miss_and_swept() {
        let dir = tempfile::tempdir().expect("dir");
        let c = cache(dir.path(), b"alice");
        c.put(&secret(), false, &json!({"a": 1}));
        let old = SystemTime::now() - TTL - Duration::from_secs(5);
        for f in std::fs::read_dir(dir.path()).expect("dir").flatten() {
            let file = std::fs::File::options()
                .write(true)
                .open(f.path())
                .expect("open");
            file.set_modified(old).expect("mtime");
        }
        assert_eq!(c.get(&secret(), false, Seen::Absent), None);
        // A new process sweeps it before its first write.
        cache(dir.path(), b"alice").put(
            &secret(),
            false,
            &json!({"metadata": {"resourceVersion": "1"}, "b": 2}),
        );
        let left = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .count();
        assert_eq!(left, 1, "the old answer is swept");
    }
}
