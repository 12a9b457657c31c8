//! Fault injection: rules matched against API requests that delay, fail, hang or drop them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One rule. Unset match fields match anything. Actions in order of precedence: `drop`
/// (close the connection without answering), `hang` (never answer), `revokeToken`
/// (revoke the bearer token the request carries, as if it had been revoked just before
/// the request: answered 401, and every later request with that token too), `status`
/// (answer a `Status` failure with that code); `latencyMs` delays any of them, or alone
/// just delays the request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection.
    #[serde(default)]
    pub verb: Option<String>,
    /// Resource plural (`deployments`), optionally with a subresource (`deployments/status`).
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub status: Option<u16>,
    /// `Retry-After` header (seconds) sent with `status` (typically 429).
    #[serde(default)]
    pub retry_after_seconds: Option<u64>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub hang: bool,
    #[serde(default)]
    pub drop: bool,
    /// Revoke the request's bearer token (see the type's doc): a credential that stops
    /// being accepted at a chosen point of a run, before the expiry it states.
    #[serde(default)]
    pub revoke_token: bool,
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Applies to the next `count` matching requests, then expires.
    #[serde(default)]
    pub count: Option<u32>,
    /// Applies to each matching request with this probability (0..1).
    #[serde(default)]
    pub probability: Option<f64>,
}

/// The `resource` discovery requests (`/version`, `/api`, `/api/v1`, `/apis`,
/// `/apis/<group>`, `/apis/<group>/<version>`) match as, with verb `get` and the request
/// path as `name`: a client discovers before it does anything else, so faults there
/// must be as injectable as anywhere.
pub const DISCOVERY: &str = "discovery";

/// What a request is, for matching.
#[derive(Debug, Clone)]
pub struct RequestInfo {
    pub verb: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// How many API requests went through fault matching and how many a rule fired on
/// (`/_sim/stats`; `KubeSim::request_stats`). Admin requests are not counted.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RequestStats {
    pub requests: u64,
    /// Requests a rule fired on, whatever its action (latency alone included).
    pub faulted: u64,
    /// Of `faulted`: those answered with an error status, dropped or hung.
    pub failed: u64,
    /// Discovery requests (see [`DISCOVERY`]), and how many of them a rule fired on.
    pub discovery_requests: u64,
    pub discovery_faulted: u64,
}

impl RequestInfo {
    /// `"<verb> <resource>"`, with `/<subresource>` when there is one (`"get
    /// deployments"`, `"watch configmaps"`, `"patch instances/status"`), and discovery
    /// with its path (`"get discovery /apis/apps/v1"`), so that a test can tell the
    /// version check from discovery proper: the key of [`crate::KubeSim::request_counts`].
    pub fn key(&self) -> String {
        match (&self.subresource, &self.name) {
            (Some(sub), _) => format!("{} {}/{sub}", self.verb, self.resource),
            (None, Some(path)) if self.resource == DISCOVERY => {
                format!("{} {} {path}", self.verb, self.resource)
            }
            (None, _) => format!("{} {}", self.verb, self.resource),
        }
    }
}

impl RequestStats {
    pub(crate) fn record(&mut self, r: &RequestInfo, fired: Option<&Triggered>) {
        let discovery = r.resource == DISCOVERY;
        self.requests += 1;
        self.discovery_requests += u64::from(discovery);
        if let Some(t) = fired {
            self.faulted += 1;
            self.failed += u64::from(t.action != Action::Delay);
            self.discovery_faulted += u64::from(discovery);
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Drop,
    Hang,
    RevokeToken,
    Status {
        code: u16,
        retry_after: Option<u64>,
        message: String,
    },
    Delay,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Triggered {
    pub latency: Duration,
    pub action: Action,
}

impl FaultRule {
    fn matches(&self, r: &RequestInfo) -> bool {
        let resource = match &r.subresource {
            Some(s) => format!("{}/{s}", r.resource),
            None => r.resource.clone(),
        };
        let eq = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_none_or(|w| Some(w) == have)
        };
        eq(&self.verb, Some(&r.verb))
            && self
                .resource
                .as_deref()
                .is_none_or(|w| w == resource || w == r.resource)
            && eq(&self.namespace, r.namespace.as_deref())
            && eq(&self.name, r.name.as_deref())
    }

    fn action(&self) -> Action {
        if self.drop {
            Action::Drop
        } else if self.hang {
            Action::Hang
        } else if self.revoke_token {
            Action::RevokeToken
        } else if let Some(code) = self.status {
            Action::Status {
                code,
                retry_after: self.retry_after_seconds,
                message: self
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("injected fault ({code})")),
            }
        } else {
            Action::Delay
        }
    }
}

/// The first rule matching `r` fires (consuming one of its `count`); expired rules go.
pub fn check(rules: &mut Vec<FaultRule>, r: &RequestInfo) -> Option<Triggered> {
    let mut fired = None;
    for rule in rules.iter_mut() {
        if !rule.matches(r) {
            continue;
        }
        if let Some(p) = rule.probability
            && rand::random::<f64>() >= p
        {
            continue;
        }
        if let Some(c) = rule.count.as_mut() {
            if *c == 0 {
                continue;
            }
            *c -= 1;
        }
        fired = Some(Triggered {
            latency: Duration::from_millis(rule.latency_ms.unwrap_or(0)),
            action: rule.action(),
        });
        break;
    }
    rules.retain(|r| r.count != Some(0));
    fired
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_rule_fires_then_expires() {
        let mut rules = vec![FaultRule {
            verb: Some("get".into()),
            resource: Some("configmaps".into()),
            status: Some(503),
            count: Some(1),
            ..Default::default()
        }];
        let info = RequestInfo {
            verb: "get".into(),
            resource: "configmaps".into(),
            subresource: None,
            namespace: Some("default".into()),
            name: Some("x".into()),
        };
        assert!(matches!(
            check(&mut rules, &info),
            Some(Triggered {
                action: Action::Status { code: 503, .. },
                ..
            })
        ));
        assert!(rules.is_empty());
        assert_eq!(check(&mut rules, &info), None);
    }

    #[test]
    fn stats_count_faulted_and_failed_requests_and_discovery_apart() {
        let mut stats = RequestStats::default();
        let discovery = RequestInfo {
            verb: "get".into(),
            resource: DISCOVERY.into(),
            subresource: None,
            namespace: None,
            name: Some("/apis".into()),
        };
        let delay = Triggered {
            latency: Duration::from_millis(5),
            action: Action::Delay,
        };
        let drop = Triggered {
            latency: Duration::ZERO,
            action: Action::Drop,
        };
        stats.record(&discovery, Some(&delay));
        stats.record(&discovery, None);
        let mut cm = discovery.clone();
        cm.resource = "configmaps".into();
        stats.record(&cm, Some(&drop));
        assert_eq!(
            stats,
            RequestStats {
                requests: 3,
                faulted: 2,
                failed: 1,
                discovery_requests: 2,
                discovery_faulted: 1,
            }
        );
        assert_eq!(discovery.key(), "get discovery /apis");
        assert_eq!(cm.key(), "get configmaps");
    }
}
