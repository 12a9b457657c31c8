//! Listing every object of one kind, for decisions that depend on who else uses a
//! shared object (custom resources of a CRD, Instances of an OperatorVersion).

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use super::retry::{RetryError, with_retry};
use super::{Cluster, ClusterError};

/// Objects per page of a list: a page of 500 ConfigMaps is about a megabyte, and a
/// large instance is read in a few round trips rather than one huge answer.
const PAGE: u32 = 500;

impl Cluster {
    /// Every object of `kind` in `api_version`, in `namespace` (all namespaces when
    /// None or for cluster-scoped kinds), with apiVersion and kind filled in. Empty
    /// when the cluster does not serve the kind.
    pub async fn list_kind(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ClusterError> {
        self.list_selected(api_version, kind, namespace, None).await
    }

    /// [`Cluster::list_kind`] of the objects matching `label_selector` (all when None),
    /// page by page.
    pub async fn list_selected(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, ClusterError> {
        self.list_selected_map(api_version, kind, namespace, label_selector, |v| v)
            .await
    }

    /// [`Cluster::list_selected`], keeping `each(object)` of every object instead of the
    /// object: a page's objects are dropped as soon as they are mapped, so listing
    /// 10,000 objects to keep a few fields of each never holds them all.
    pub async fn list_selected_map<T>(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        mut each: impl FnMut(Value) -> T,
    ) -> Result<Vec<T>, ClusterError> {
        let (ar, scope) = match self.resolve(api_version, kind).await {
            Ok(found) => found,
            Err(ClusterError::UnknownKind { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let api: Api<DynamicObject> = match (scope, namespace) {
            (kube::discovery::Scope::Namespaced, Some(ns)) => {
                Api::namespaced_with(self.client.clone(), ns, &ar)
            }
            _ => Api::all_with(self.client.clone(), &ar),
        };
        let what = format!("{kind} objects");
        let mut found = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(PAGE);
            if let Some(selector) = label_selector {
                lp = lp.labels(selector);
            }
            if let Some(token) = &next {
                lp = lp.continue_token(token);
            }
            let page = match with_retry("list", None, || api.list(&lp)).await {
                Ok(l) => l,
                // The kind went away between discovery and the list (its CRD deleted).
                Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 404 => {
                    return Ok(Vec::new());
                }
                Err(e) => return Err(self.error("list", &what, e)),
            };
            for item in page.items {
                let mut v = serde_json::to_value(&item).map_err(|e| ClusterError::Other {
                    verb: "list",
                    object: what.clone(),
                    message: e.to_string(),
                })?;
                // List items come without type information.
                if let Some(m) = v.as_object_mut() {
                    m.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
                    m.insert("kind".into(), Value::String(ar.kind.clone()));
                }
                found.push(each(v));
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => next = Some(token),
                None => return Ok(found),
            }
        }
    }
}
