//! Authentication: bearer tokens mapped to users and groups, as the API server's token
//! authenticators do (kubernetes.io/docs/reference/access-authn-authz/authentication/).
//!
//! Three kinds of token: the admin token (`SimConfig::token`, in the group
//! `system:masters`, which RBAC never refuses), tokens added for users
//! ([`crate::KubeSim::add_user_token`], `POST /_sim/tokens`) and ServiceAccount tokens
//! from the TokenRequest API, each with an optional expiry; and families of tokens
//! that carry their own expiry ([`crate::KubeSim::add_expiring_tokens`]), for
//! credential plugins that hand out short-lived tokens.
//!
//! Any of them can be revoked before its expiry ([`crate::KubeSim::revoke_token`], or a
//! fault rule with `revokeToken`), as a real API server stops accepting a ServiceAccount
//! token whose ServiceAccount was deleted, or a cloud provider's authenticator a token of
//! a session that was ended: refused with 401 from then on.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// `system:masters`: RBAC allows its members everything (the API server's
/// superuser group, `k8s.io/apiserver/pkg/authorization/authorizerfactory`).
pub const MASTERS: &str = "system:masters";
/// Every authenticated user is in this group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The admin token's user name.
pub const ADMIN_USER: &str = "kube-sim:admin";

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
}

impl Identity {
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// A bearer token that authenticates as `user` (and `groups`; `system:authenticated` is
/// always added), until `expires` when set.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UserToken {
    pub token: String,
    pub user: String,
    #[serde(default)]
    pub groups: Vec<String>,
    /// Unix seconds; the token is refused from this second on.
    #[serde(default)]
    pub expires_at_unix: Option<u64>,
}

/// Every bearer token `<prefix><unix seconds>` authenticates as `user` until that
/// second, as a signed token carrying its own `exp` claim would (without the
/// signature: tests only). A credential plugin can then issue tokens of any lifetime
/// without asking the simulator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExpiringTokens {
    pub prefix: String,
    pub user: String,
    #[serde(default)]
    pub groups: Vec<String>,
}

/// Every credential the simulator accepts.
#[derive(Debug, Default)]
pub struct Tokens {
    pub admin: String,
    pub users: Vec<UserToken>,
    pub families: Vec<ExpiringTokens>,
    /// Tokens refused because they had expired (`/_sim/stats`).
    pub expired_refusals: u64,
    /// Tokens revoked before their expiry: refused whatever else would accept them.
    pub revoked: BTreeSet<String>,
    /// Requests refused because their token had been revoked (`/_sim/forbidden`).
    pub revoked_refusals: u64,
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

fn with_authenticated(user: &str, groups: &[String]) -> Identity {
    let mut groups = groups.to_vec();
    if !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.to_string());
    }
    Identity {
        user: user.to_string(),
        groups,
    }
}

/// The groups of ServiceAccount `name` in `namespace`, as the service account token
/// authenticator assigns them.
pub fn service_account(namespace: &str, name: &str) -> Identity {
    with_authenticated(
        &format!("system:serviceaccount:{namespace}:{name}"),
        &[
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ],
    )
}

impl Tokens {
    pub fn new(admin: String) -> Tokens {
        Tokens {
            admin,
            ..Default::default()
        }
    }

    /// Who `token` is, or None (401) when no credential matches or it has expired.
    pub fn authenticate(&mut self, token: &str) -> Option<Identity> {
        if self.revoked.contains(token) {
            self.revoked_refusals += 1;
            return None;
        }
        if token == self.admin {
            return Some(with_authenticated(ADMIN_USER, &[MASTERS.to_string()]));
        }
        let now = now_unix();
        if let Some(t) = self.users.iter().find(|t| t.token == token) {
            if t.expires_at_unix.is_some_and(|e| now >= e) {
                self.expired_refusals += 1;
                return None;
            }
            return Some(with_authenticated(&t.user, &t.groups));
        }
        for family in &self.families {
            let Some(expiry) = token
                .strip_prefix(family.prefix.as_str())
                .and_then(|s| s.parse::<u64>().ok())
            else {
                continue;
            };
            if now >= expiry {
                self.expired_refusals += 1;
                return None;
            }
            return Some(with_authenticated(&family.user, &family.groups));
        }
        None
    }

    /// `token` is refused from now on, before any expiry it carries. The admin token is
    /// never revoked: the simulator's own controls need it.
    pub fn revoke(&mut self, token: &str) {
        if token != self.admin {
            self.revoked.insert(token.to_string());
        }
    }

    /// Issues a token for ServiceAccount `name` in `namespace` that lasts `lifetime`
    /// (the TokenRequest API); returns it and its expiry in Unix seconds.
    pub fn issue(&mut self, namespace: &str, name: &str, lifetime: Duration) -> (String, u64) {
        let who = service_account(namespace, name);
        let token = format!("kube-sim-sa-{}", uuid::Uuid::new_v4().simple());
        let expires = now_unix() + lifetime.as_secs();
        self.users.push(UserToken {
            token: token.clone(),
            user: who.user,
            groups: who.groups,
            expires_at_unix: Some(expires),
        });
        (token, expires)
    }
}

/// `Authorization: Bearer <token>` of a request.
pub fn bearer(headers: &hyper::HeaderMap) -> Option<&str> {
    headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// RFC 3339 UTC, as Kubernetes writes timestamps.
pub fn rfc3339(unix: u64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(unix as i64)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_authenticate_until_they_expire() {
        let mut t = Tokens::new("admin".into());
        assert!(t.authenticate("admin").is_some_and(|i| i.is_master()));
        assert_eq!(t.authenticate("nobody"), None);
        t.users.push(UserToken {
            token: "old".into(),
            user: "alice".into(),
            groups: vec![],
            expires_at_unix: Some(now_unix() - 1),
        });
        assert_eq!(t.authenticate("old"), None);
        t.families.push(ExpiringTokens {
            prefix: "exec-".into(),
            user: "bob".into(),
            groups: vec!["devs".into()],
        });
        let later = format!("exec-{}", now_unix() + 60);
        let who = t.authenticate(&later).expect("valid until later");
        assert_eq!(who.user, "bob");
        assert!(who.in_group("devs") && who.in_group(AUTHENTICATED));
        assert_eq!(t.authenticate(&format!("exec-{}", now_unix())), None);
        assert_eq!(t.expired_refusals, 2);
        let (token, _) = t.issue("team-a", "tenant", Duration::from_secs(600));
        assert_eq!(
            t.authenticate(&token).map(|i| i.user).as_deref(),
            Some("system:serviceaccount:team-a:tenant")
        );
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn a_revoked_token_is_refused_before_its_expiry() {
        let mut t = Tokens::new("admin".into());
        t.families.push(ExpiringTokens {
            prefix: "exec-".into(),
            user: "bob".into(),
            groups: vec![],
        });
        let token = format!("exec-{}", now_unix() + 3600);
        assert!(t.authenticate(&token).is_some());
        t.revoke(&token);
        assert_eq!(t.authenticate(&token), None);
        let other = format!("exec-{}", now_unix() + 3601);
        assert!(
            t.authenticate(&other).is_some(),
            "only that token is revoked"
        );
        t.revoke("admin");
        assert!(t.authenticate("admin").is_some(), "the admin token stays");
        assert_eq!((t.revoked_refusals, t.expired_refusals), (1, 0));
    }
}
