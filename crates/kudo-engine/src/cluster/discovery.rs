//! Discovery of every kind the server serves, for the label sweep (`list_labelled`).
//!
//! One request at a time, each retried on its own: kube-rs's `Discovery::run` makes a
//! request per API group (about 30 on a real cluster) and fails as a whole on the first
//! error, so under a few percent of transient faults it almost never completes, and
//! retrying it as a whole does not help. Aggregated discovery (Kubernetes 1.26+) needs
//! two requests; older servers get the per-group walk. The caller keeps the result for
//! the provider process, and for the next processes in a file (`discovery_cache`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::Client;
use kube::core::discovery::v2::APIGroupDiscoveryList;
use kube::discovery::{ApiResource, Scope};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::retry::{RetryError, with_retry};

/// One served kind: at its group's preferred version in the list of every served kind,
/// or of the group-version asked for when a kind is resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ServedKind {
    pub ar: ApiResource,
    pub namespaced: bool,
    pub verbs: Vec<String>,
}

impl ServedKind {
    pub(crate) fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    pub(crate) fn scope(&self) -> Scope {
        match self.namespaced {
            true => Scope::Namespaced,
            false => Scope::Cluster,
        }
    }
}

/// Every kind the server serves, each at its group's preferred version.
pub(crate) async fn served_kinds(
    client: &Client,
    cancel: Option<&CancellationToken>,
) -> Result<Vec<ServedKind>, RetryError> {
    match aggregated(client, cancel).await? {
        Some(kinds) => Ok(kinds),
        None => per_group(client, cancel).await,
    }
}

/// `/apis` and `/api` in the aggregated form, or None when the server does not offer it
/// (it then answers the plain group list, which has no `items`).
async fn aggregated(
    client: &Client,
    cancel: Option<&CancellationToken>,
) -> Result<Option<Vec<ServedKind>>, RetryError> {
    let groups = match with_retry("discovery /apis", cancel, || {
        client.list_api_groups_aggregated()
    })
    .await
    {
        Ok(list) if !list.items.is_empty() => list,
        Ok(_) => return Ok(None),
        // Not offered in a form we can read (406, an undecodable answer): fall back.
        Err(RetryError::Kube(e)) if !matches!(e, kube::Error::Api(ref s) if s.code >= 500) => {
            tracing::debug!(error = %e, "no aggregated discovery; discovering group by group");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let core = with_retry("discovery /api", cancel, || {
        client.list_core_api_versions_aggregated()
    })
    .await?;
    let mut kinds = from_aggregated(&core);
    kinds.extend(from_aggregated(&groups));
    Ok(Some(kinds))
}

fn from_aggregated(list: &APIGroupDiscoveryList) -> Vec<ServedKind> {
    let mut kinds = Vec::new();
    for group in &list.items {
        let name = group
            .metadata
            .as_ref()
            .and_then(|m| m.name.clone())
            .unwrap_or_default();
        // Versions come in order of preference.
        let Some(preferred) = group.versions.first() else {
            continue;
        };
        let Some(version) = preferred.version.clone() else {
            continue;
        };
        for r in &preferred.resources {
            let (Some(plural), Some(kind)) = (
                r.resource.clone(),
                r.response_kind.as_ref().and_then(|k| k.kind.clone()),
            ) else {
                continue;
            };
            kinds.push(ServedKind {
                ar: ApiResource {
                    group: name.clone(),
                    version: version.clone(),
                    api_version: api_version(&name, &version),
                    kind,
                    plural,
                },
                namespaced: r.scope.as_deref() == Some("Namespaced"),
                verbs: r.verbs.clone(),
            });
        }
    }
    kinds
}

/// `/apis`, then the preferred version of each group and `/api/v1`, each request retried
/// on its own. A group listed by `/apis` whose version then answers 404 was removed
/// meanwhile (another instance's CRD deleted): it is skipped, as it no longer holds
/// anything.
async fn per_group(
    client: &Client,
    cancel: Option<&CancellationToken>,
) -> Result<Vec<ServedKind>, RetryError> {
    let groups = with_retry("discovery /apis", cancel, || client.list_api_groups()).await?;
    let core = with_retry("discovery /api/v1", cancel, || {
        client.list_core_api_resources("v1")
    })
    .await?;
    let mut kinds = from_resource_list(&core);
    for group in &groups.groups {
        let Some(gv) = group
            .preferred_version
            .as_ref()
            .or_else(|| group.versions.first())
            .map(|v| v.group_version.clone())
        else {
            continue;
        };
        match with_retry("discovery", cancel, || client.list_api_group_resources(&gv)).await {
            Ok(list) => kinds.extend(from_resource_list(&list)),
            Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 404 => {
                tracing::debug!(group_version = %gv, "API group vanished during discovery; skipped");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(kinds)
}

fn from_resource_list(list: &APIResourceList) -> Vec<ServedKind> {
    let (group, version) = match list.group_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), list.group_version.clone()),
    };
    list.resources
        .iter()
        // `deployments/status` and the like are subresources, not kinds.
        .filter(|r| !r.name.contains('/'))
        .map(|r| ServedKind {
            ar: ApiResource {
                group: group.clone(),
                version: version.clone(),
                api_version: list.group_version.clone(),
                kind: r.kind.clone(),
                plural: r.name.clone(),
            },
            namespaced: r.namespaced,
            verbs: r.verbs.clone(),
        })
        .collect()
}

fn api_version(group: &str, version: &str) -> String {
    match group {
        "" => version.to_string(),
        g => format!("{g}/{version}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_sim::{DISCOVERY, FaultRule, KubeSim, SimConfig};

    async fn sim_client(sim: &KubeSim) -> Client {
        let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml()).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        Client::try_from(config).expect("client")
    }

    fn names(kinds: &[ServedKind]) -> Vec<String> {
        let mut v: Vec<String> = kinds
            .iter()
            .map(|k| format!("{} {}", k.ar.api_version, k.ar.kind))
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn aggregated_and_per_group_discovery_agree() {
        let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
        let client = sim_client(&sim).await;
        let agg = aggregated(&client, None)
            .await
            .ok()
            .flatten()
            .expect("kube-sim offers aggregated discovery");
        let walked = per_group(&client, None).await.ok().expect("per group");
        assert_eq!(names(&agg), names(&walked));
        let cm = agg
            .iter()
            .find(|k| k.ar.kind == "ConfigMap")
            .expect("ConfigMap served");
        assert!(cm.namespaced && cm.supports("list") && cm.supports("delete"));
        assert_eq!(cm.ar.api_version, "v1");
        let dep = agg
            .iter()
            .find(|k| k.ar.kind == "Deployment")
            .expect("Deployment served");
        assert_eq!(dep.ar.api_version, "apps/v1");
    }

    /// Each discovery request is retried on its own: a drop, a 500 and a 503 on
    /// different discovery paths cost three retries, not a failed discovery.
    #[tokio::test]
    async fn transient_faults_on_single_discovery_requests_are_retried() {
        let sim = KubeSim::start(SimConfig::default()).await.expect("sim");
        let client = sim_client(&sim).await;
        let rule = |name: &str, f: fn(&mut FaultRule)| {
            let mut r = FaultRule {
                verb: Some("get".into()),
                resource: Some(DISCOVERY.into()),
                name: Some(name.into()),
                count: Some(1),
                ..Default::default()
            };
            f(&mut r);
            r
        };
        sim.add_faults([
            rule("/apis", |r| r.drop = true),
            rule("/api", |r| r.status = Some(500)),
        ]);
        let kinds = served_kinds(&client, None).await.ok().expect("discovered");
        assert!(kinds.iter().any(|k| k.ar.kind == "Deployment"));
        assert!(
            sim.faults().is_empty(),
            "both faults fired and were retried"
        );

        sim.add_faults([
            rule("/apis", |r| r.status = Some(500)),
            rule("/apis/apps/v1", |r| r.drop = true),
            rule("/api/v1", |r| r.status = Some(500)),
        ]);
        let walked = per_group(&client, None).await.ok().expect("walked");
        assert!(walked.iter().any(|k| k.ar.kind == "StatefulSet"));
        assert!(walked.iter().any(|k| k.ar.kind == "Secret"));
        assert!(sim.faults().is_empty(), "all three faults fired");
        assert!(sim.request_stats().discovery_faulted >= 5);
    }
}
