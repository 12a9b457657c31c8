//! A credential fetched for the API server (a credential plugin's, a token file's), and
//! when it is renewed ahead of the expiry it states (see [`super::credential_cache`]).

use std::time::{Duration, SystemTime};

/// The most a credential is renewed ahead of its expiry: enough for a request to reach
/// the API server, and for a small difference between its clock and ours.
pub(super) const MAX_RENEWAL_MARGIN: Duration = Duration::from_secs(10);

/// The least, unless that is more than half the credential's lifetime: a request queued
/// behind others may wait a moment between taking the credential and reaching the
/// server.
pub(super) const MIN_RENEWAL_MARGIN: Duration = Duration::from_secs(1);

/// How long before `expires` a credential received at `received` is renewed: a tenth of
/// its lifetime, between [`MIN_RENEWAL_MARGIN`] and [`MAX_RENEWAL_MARGIN`], and never
/// more than half of it. A 15-minute cloud token is renewed 10 s before it expires; a
/// 15-second one 1.5 s before, so the plugin runs about once in 13 s rather than on
/// every request; a 3-second one after 2 s.
pub(crate) fn renewal_margin(received: SystemTime, expires: SystemTime) -> Duration {
    let lifetime = expires.duration_since(received).unwrap_or(Duration::ZERO);
    (lifetime / 10)
        .clamp(MIN_RENEWAL_MARGIN, MAX_RENEWAL_MARGIN)
        .min(lifetime / 2)
}

/// A credential: a bearer token, a client certificate and key (PEM), or both.
#[derive(Clone)]
pub(crate) struct Credential {
    token: Option<String>,
    certificate: Option<(String, String)>,
    pub(super) expires: Option<SystemTime>,
    /// When to fetch a new one although this one is accepted; `None`: never.
    renew_at: Option<SystemTime>,
    /// Which fetch of its cache this is: a request refused with generation `n` renews
    /// only if the cache still holds `n`.
    pub(super) generation: u64,
}

// Tokens and keys must never reach logs.
impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("certificate", &self.certificate.is_some())
            .field("expires", &self.expires)
            .field("renew_at", &self.renew_at)
            .field("generation", &self.generation)
            .finish()
    }
}

impl Credential {
    /// A credential received at `received`, renewed [`renewal_margin`] before `expires`.
    pub(crate) fn new(
        token: Option<String>,
        certificate: Option<(String, String)>,
        expires: Option<SystemTime>,
        received: SystemTime,
    ) -> Credential {
        Credential {
            token,
            certificate,
            expires,
            renew_at: expires.map(|e| e - renewal_margin(received, e)),
            generation: 0,
        }
    }

    /// The same credential as its cache's fetch number `generation`.
    pub(super) fn of_generation(self, generation: u64) -> Credential {
        Credential { generation, ..self }
    }

    /// A credential that is fetched again at `at` whatever it states.
    pub(super) fn renewed_at(self, at: SystemTime) -> Credential {
        Credential {
            renew_at: Some(at),
            ..self
        }
    }

    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Client certificate and key, PEM.
    pub(crate) fn certificate(&self) -> Option<(&str, &str)> {
        self.certificate
            .as_ref()
            .map(|(cert, key)| (cert.as_str(), key.as_str()))
    }

    #[cfg(test)]
    pub(crate) fn expires(&self) -> Option<SystemTime> {
        self.expires
    }

    /// Whether it may still be sent at `now`.
    pub(super) fn fresh(&self, now: SystemTime) -> bool {
        self.renew_at.is_none_or(|at| now < at)
    }
}
