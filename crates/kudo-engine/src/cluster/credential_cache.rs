//! Credentials that can be fetched again (a credential plugin's, a kubeconfig user's
//! token file), kept until shortly before the expiry they state and fetched again when
//! the API server refuses them.
//!
//! What client-go does (`plugin/pkg/client/auth/exec`: `Authenticator.getCreds`,
//! `maybeRefreshCreds`, `refreshCredsLocked`): one credential shared by every request;
//! the plugin runs when there is none or it has expired, under one lock, so concurrent
//! requests share one run; and after a 401 it runs again unless another request renewed
//! the credential meanwhile. Two differences, both for a provider that must finish an
//! apply rather than let the user run kubectl again:
//! - client-go renews after a 401 but answers the 401; the request that was refused is
//!   sent once more here, with the new credential ([`super::renew_on_401`]), and only a
//!   second refusal is an error.
//! - client-go keeps a credential up to the second it expires; here it is renewed a
//!   little before ([`renewal_margin`]), so a request is never sent with a credential that
//!   expires on the way. kube-rs renews 60 s before, which for a credential of a minute
//!   or less (a short-lived ServiceAccount token, some cloud CLIs') meant running the
//!   plugin on every request.
//!
//! A credential that states no expiry is kept until the server refuses it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use kube::config::AuthInfo;

use super::credential::Credential;
#[cfg(test)]
use super::credential::{MAX_RENEWAL_MARGIN, MIN_RENEWAL_MARGIN, renewal_margin};
use super::credential_plugin::{CredentialPlugin, PluginError};

/// How often a token file is read again although the server accepts its token: a
/// projected ServiceAccount token is rewritten by the kubelet before it expires (the
/// period client-go's and kube-rs' token-file sources use).
const TOKEN_FILE_PERIOD: Duration = Duration::from_secs(60);

/// Why a credential could not be fetched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error(transparent)]
    Plugin(#[from] PluginError),
    #[error("cannot be read: {0}")]
    TokenFile(std::io::Error),
}

/// Where a credential comes from.
pub(crate) trait Fetch: Send + Sync {
    /// A new credential; `previous` is the one held until now, if any.
    fn fetch<'a>(
        &'a self,
        previous: Option<&'a Credential>,
    ) -> BoxFuture<'a, Result<Credential, FetchError>>;

    /// For messages and logs: `the credential plugin \`aws eks get-token\``.
    fn describe(&self) -> String;

    /// The plugin's command line, when the source is a plugin.
    fn plugin(&self) -> Option<String> {
        None
    }
}

/// A credential could not be fetched: through the client's service stack as the error of
/// the request that needed it, and found again in the error's causes for the message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{origin} {message}")]
pub(crate) struct CredentialError {
    /// [`Fetch::describe`].
    pub origin: String,
    /// [`Fetch::plugin`].
    pub plugin: Option<String>,
    /// What went wrong, after `origin`: `failed (exit status: 1): ...`.
    pub message: String,
}

#[derive(Default)]
struct State {
    current: Option<Arc<Credential>>,
    /// The last run's failure and its number, for the requests that waited on it.
    failure: Option<(u64, CredentialError)>,
}

/// One source's credential, shared by every request of a client.
pub(crate) struct CredentialCache {
    source: Box<dyn Fetch>,
    /// Held while fetching: requests that need a credential meanwhile wait for the run
    /// under way instead of starting their own (client-go's `Authenticator.mu`).
    state: tokio::sync::Mutex<State>,
    /// Fetches finished so far. A request that started waiting before a fetch finished
    /// takes that fetch's outcome, a failure too: sixteen requests waiting on a plugin
    /// that fails get its one failure rather than running it sixteen times in a row.
    fetches: AtomicU64,
}

impl CredentialCache {
    pub(crate) fn new(source: Box<dyn Fetch>) -> CredentialCache {
        CredentialCache {
            source,
            state: tokio::sync::Mutex::new(State::default()),
            fetches: AtomicU64::new(0),
        }
    }

    /// [`Fetch::describe`] of the source.
    pub(crate) fn describe(&self) -> String {
        self.source.describe()
    }

    /// [`Fetch::plugin`] of the source.
    pub(crate) fn plugin(&self) -> Option<String> {
        self.source.plugin()
    }

    /// The credential to send now: the one held while it is fresh, else a new one.
    pub(crate) async fn get(&self) -> Result<Arc<Credential>, CredentialError> {
        let arrived = self.fetches.load(Ordering::SeqCst);
        let mut state = self.state.lock().await;
        if let Some(current) = &state.current
            && current.fresh(SystemTime::now())
        {
            return Ok(current.clone());
        }
        self.fetch_locked(&mut state, arrived).await
    }

    /// A credential to send instead of `refused`, which the API server refused (401):
    /// the one another request already fetched after the refusal, else a new one.
    pub(crate) async fn renew(
        &self,
        refused: &Credential,
    ) -> Result<Arc<Credential>, CredentialError> {
        let arrived = self.fetches.load(Ordering::SeqCst);
        let mut state = self.state.lock().await;
        if let Some(current) = &state.current
            && current.generation != refused.generation
            && current.fresh(SystemTime::now())
        {
            return Ok(current.clone());
        }
        tracing::info!(
            source = %self.source.describe(),
            "the Kubernetes API server refused the credential (HTTP 401): fetching a new one"
        );
        self.fetch_locked(&mut state, arrived).await
    }

    async fn fetch_locked(
        &self,
        state: &mut State,
        arrived: u64,
    ) -> Result<Arc<Credential>, CredentialError> {
        if let Some((fetch, failure)) = &state.failure
            && *fetch > arrived
        {
            return Err(failure.clone());
        }
        tracing::debug!(source = %self.source.describe(), "fetching a credential");
        let fetched = self.source.fetch(state.current.as_deref()).await;
        let fetch = self.fetches.fetch_add(1, Ordering::SeqCst) + 1;
        match fetched {
            Ok(credential) => {
                let credential = Arc::new(credential.of_generation(fetch));
                tracing::debug!(
                    source = %self.source.describe(),
                    expires = ?credential.expires,
                    "fetched a credential"
                );
                state.current = Some(credential.clone());
                state.failure = None;
                Ok(credential)
            }
            Err(e) => {
                let failure = CredentialError {
                    origin: self.source.describe(),
                    plugin: self.source.plugin(),
                    message: e.to_string(),
                };
                tracing::warn!(error = %failure, "could not fetch a credential");
                state.failure = Some((fetch, failure.clone()));
                Err(failure)
            }
        }
    }
}

/// A [`Fetch`] that runs the plugin.
impl Fetch for CredentialPlugin {
    fn fetch<'a>(
        &'a self,
        _previous: Option<&'a Credential>,
    ) -> BoxFuture<'a, Result<Credential, FetchError>> {
        Box::pin(async move { self.run().await.map_err(FetchError::from) })
    }

    fn describe(&self) -> String {
        format!("the credential plugin `{}`", self.command_line())
    }

    fn plugin(&self) -> Option<String> {
        Some(self.command_line())
    }
}

/// A kubeconfig user's `tokenFile`: read again every minute and after a refusal.
struct TokenFile {
    path: PathBuf,
}

impl Fetch for TokenFile {
    fn fetch<'a>(
        &'a self,
        previous: Option<&'a Credential>,
    ) -> BoxFuture<'a, Result<Credential, FetchError>> {
        Box::pin(async move {
            let now = SystemTime::now();
            match std::fs::read_to_string(&self.path) {
                Ok(text) => Ok(
                    Credential::new(Some(text.trim().to_string()), None, None, now)
                        .renewed_at(now + TOKEN_FILE_PERIOD),
                ),
                // As client-go and kube-rs: a file removed after it was read (to limit
                // who can read the token) leaves the token last read in use.
                Err(e) => match previous {
                    Some(previous) => {
                        tracing::warn!(path = %self.path.display(), error = %e, "cannot read the token file again; using the token read before");
                        Ok(previous.clone().renewed_at(now + TOKEN_FILE_PERIOD))
                    }
                    None => Err(FetchError::TokenFile(e)),
                },
            }
        })
    }

    fn describe(&self) -> String {
        format!("the token file {}", self.path.display())
    }
}

/// Takes out of `auth` the credential source the provider renews itself: its `exec`
/// plugin or its `tokenFile`, in kube-rs' order of precedence (an auth provider, a user
/// name and password, then a fixed token come first and stay with kube-rs, as do client
/// certificates, which are fixed too).
pub(crate) fn take_renewable(auth: &mut AuthInfo) -> Option<Box<dyn Fetch>> {
    if auth.auth_provider.is_some()
        || (auth.username.is_some() && auth.password.is_some())
        || auth.token.is_some()
    {
        return None;
    }
    let exec = auth.exec.take();
    if let Some(path) = auth.token_file.take() {
        return Some(Box::new(TokenFile {
            path: PathBuf::from(path),
        }));
    }
    exec.map(|exec| Box::new(CredentialPlugin::new(&exec)) as Box<dyn Fetch>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A source that hands out credentials expiring `lifetime` from now (`None`: no
    /// expiry) and counts its runs; a run waits for `gate` when given, and fails while
    /// `failing` is set.
    struct Counting {
        runs: AtomicU64,
        lifetime: Option<Duration>,
        gate: Option<tokio::sync::Semaphore>,
        failing: Mutex<bool>,
    }

    impl Counting {
        fn new(lifetime: Option<Duration>) -> Counting {
            Counting {
                runs: AtomicU64::new(0),
                lifetime,
                gate: None,
                failing: Mutex::new(false),
            }
        }
    }

    impl Fetch for Arc<Counting> {
        fn fetch<'a>(
            &'a self,
            _previous: Option<&'a Credential>,
        ) -> BoxFuture<'a, Result<Credential, FetchError>> {
            Box::pin(async move {
                let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
                if let Some(gate) = &self.gate {
                    let _pass = gate.acquire().await;
                }
                if self.failing.lock().map(|f| *f).unwrap_or(false) {
                    return Err(FetchError::Plugin(PluginError::NoStatus));
                }
                let now = SystemTime::now();
                Ok(Credential::new(
                    Some(format!("token-{run}")),
                    None,
                    self.lifetime.map(|l| now + l),
                    now,
                ))
            })
        }

        fn describe(&self) -> String {
            "the credential plugin `counting`".into()
        }

        fn plugin(&self) -> Option<String> {
            Some("counting".into())
        }
    }

    fn cache(source: &Arc<Counting>) -> CredentialCache {
        CredentialCache::new(Box::new(source.clone()))
    }

    #[test]
    fn the_margin_is_a_tenth_of_the_lifetime_between_one_and_ten_seconds() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let margin = |secs| renewal_margin(t, t + Duration::from_secs(secs));
        assert_eq!(margin(15), Duration::from_millis(1500));
        assert_eq!(margin(3600), MAX_RENEWAL_MARGIN);
        assert_eq!(margin(3), MIN_RENEWAL_MARGIN);
        assert_eq!(margin(1), Duration::from_millis(500), "half of a short one");
        assert_eq!(
            renewal_margin(t, t - Duration::from_secs(1)),
            Duration::ZERO,
            "already expired"
        );
    }

    // kube-rs ran the plugin again for any credential within 60 s of its expiry: a
    // 15-second one, on every request.
    #[tokio::test]
    async fn a_credential_is_kept_until_shortly_before_its_expiry() {
        for lifetime in [
            Some(Duration::from_secs(15)),
            Some(Duration::from_secs(3600)),
            None,
        ] {
            let source = Arc::new(Counting::new(lifetime));
            let cache = cache(&source);
            for _ in 0..50 {
                assert_eq!(cache.get().await.unwrap().token(), Some("token-1"));
            }
            assert_eq!(source.runs.load(Ordering::SeqCst), 1, "{lifetime:?}");
        }
        // One that has expired, or is within its margin, is fetched again.
        let source = Arc::new(Counting::new(Some(Duration::ZERO)));
        let cache = cache(&source);
        assert_eq!(cache.get().await.unwrap().token(), Some("token-1"));
        assert_eq!(cache.get().await.unwrap().token(), Some("token-2"));
        assert_eq!(source.runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_run() {
        let source = Arc::new(Counting {
            gate: Some(tokio::sync::Semaphore::new(0)),
            ..Counting::new(None)
        });
        let cache = Arc::new(cache(&source));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(async move { cache.get().await.map(|c| c.token().map(String::from)) })
            })
            .collect();
        // Every caller is waiting (one in the run, the others on it) before it ends.
        while source.runs.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        if let Some(gate) = &source.gate {
            gate.add_permits(100);
        }
        for caller in callers {
            let token = caller.await.expect("joins").expect("a credential");
            assert_eq!(token.as_deref(), Some("token-1"));
        }
        assert_eq!(source.runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_refusal_renews_once_for_every_request_that_was_refused() {
        let source = Arc::new(Counting::new(None));
        let cache = cache(&source);
        let refused = cache.get().await.unwrap();
        // Two requests sent with the first credential are refused: the first renews,
        // the second takes what it fetched.
        let first = cache.renew(&refused).await.unwrap();
        let second = cache.renew(&refused).await.unwrap();
        assert_eq!(first.token(), Some("token-2"));
        assert_eq!(second.token(), Some("token-2"));
        assert_eq!(source.runs.load(Ordering::SeqCst), 2);
        // A refusal of the renewed one renews again.
        assert_eq!(cache.renew(&second).await.unwrap().token(), Some("token-3"));
    }

    #[tokio::test]
    async fn a_failed_run_is_an_error_naming_the_plugin_and_is_not_kept() {
        let source = Arc::new(Counting::new(None));
        let cache = cache(&source);
        let refused = cache.get().await.unwrap();
        *source.failing.lock().unwrap() = true;
        let err = cache.renew(&refused).await.unwrap_err();
        assert_eq!(err.plugin.as_deref(), Some("counting"));
        assert_eq!(
            err.to_string(),
            "the credential plugin `counting` printed an ExecCredential without `status` (no token or certificate)"
        );
        // The failure is not kept: the next refusal runs the plugin again, which now
        // works.
        *source.failing.lock().unwrap() = false;
        assert_eq!(
            cache.renew(&refused).await.unwrap().token(),
            Some("token-3")
        );
        assert_eq!(source.runs.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn requests_waiting_on_a_failing_run_share_its_failure() {
        let source = Arc::new(Counting {
            gate: Some(tokio::sync::Semaphore::new(0)),
            ..Counting::new(None)
        });
        *source.failing.lock().unwrap() = true;
        let cache = Arc::new(cache(&source));
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(async move { cache.get().await.map(|_| ()) })
            })
            .collect();
        while source.runs.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        if let Some(gate) = &source.gate {
            gate.add_permits(100);
        }
        for caller in callers {
            assert!(caller.await.expect("joins").is_err());
        }
        assert_eq!(source.runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_token_file_is_read_again_after_a_refusal_and_kept_when_it_is_gone() {
        let dir = std::env::temp_dir().join(format!("kudo-engine-tf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "first\n").unwrap();
        let mut auth = AuthInfo {
            token_file: Some(path.to_string_lossy().into_owned()),
            ..Default::default()
        };
        let source = take_renewable(&mut auth).expect("a token file is renewable");
        assert!(auth.token_file.is_none(), "kube-rs does not read it too");
        let cache = CredentialCache::new(source);
        let refused = cache.get().await.unwrap();
        assert_eq!(refused.token(), Some("first"));
        std::fs::write(&path, "second").unwrap();
        let renewed = cache.renew(&refused).await.unwrap();
        assert_eq!(renewed.token(), Some("second"));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(cache.renew(&renewed).await.unwrap().token(), Some("second"));
    }

    #[test]
    fn a_fixed_token_stays_with_kube() {
        let mut auth: AuthInfo = serde_json::from_value(serde_json::json!({
            "token": "fixed",
            "exec": { "command": "aws", "apiVersion": "client.authentication.k8s.io/v1" },
        }))
        .unwrap();
        assert!(take_renewable(&mut auth).is_none());
        assert!(auth.exec.is_some(), "left as it was");
        let mut auth: AuthInfo = serde_json::from_value(serde_json::json!({
            "exec": { "command": "aws", "args": ["eks", "get-token"], "apiVersion": "client.authentication.k8s.io/v1" },
        }))
        .unwrap();
        let source = take_renewable(&mut auth).expect("exec is renewable");
        assert!(auth.exec.is_none());
        assert_eq!(source.plugin().as_deref(), Some("aws eks get-token"));
    }
}
