//! Listing every object of one kind, for decisions that depend on who else uses a
//! shared object (custom resources of a CRD, Instances of an OperatorVersion), and every
//! object carrying a label across all kinds (the sweep of an instance's objects).

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
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
        match self
            .list_pages(
                &api,
                &ar,
                label_selector,
                &what,
                &mut |v| Some(each(v)),
                &mut found,
            )
            .await
        {
            Ok(()) => Ok(found),
            // The kind went away between discovery and the list (its CRD deleted).
            Err(Paged::Retry(RetryError::Kube(kube::Error::Api(s)))) if s.code == 404 => {
                Ok(Vec::new())
            }
            Err(Paged::Retry(e)) => Err(self.error("list", &what, e)),
            Err(Paged::Cluster(e)) => Err(e),
        }
    }

    /// Every namespaced object in `namespace` matching `label_selector`, across all kinds
    /// the server serves that can be listed and deleted.
    pub async fn list_labelled(
        &self,
        namespace: &str,
        label_selector: &str,
    ) -> Result<Vec<Value>, ClusterError> {
        self.list_labelled_map(namespace, label_selector, Some)
            .await
    }

    /// [`Cluster::list_labelled`], keeping what `each(object)` returns (when Some) instead
    /// of the object, page by page as [`Cluster::list_selected_map`] does.
    pub async fn list_labelled_map<T>(
        &self,
        namespace: &str,
        label_selector: &str,
        mut each: impl FnMut(Value) -> Option<T>,
    ) -> Result<Vec<T>, ClusterError> {
        let kinds = self.served_kinds().await?;
        let mut found = Vec::new();
        for served in kinds.iter() {
            if !served.namespaced || !served.supports("list") || !served.supports("delete") {
                continue;
            }
            let ar = &served.ar;
            let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, ar);
            let mut of_kind = Vec::new();
            match self
                .list_pages(
                    &api,
                    ar,
                    Some(label_selector),
                    &ar.kind,
                    &mut each,
                    &mut of_kind,
                )
                .await
            {
                Ok(()) => found.append(&mut of_kind),
                // Forbidden or oddly served kinds cannot hold our objects in any way we
                // could remove; skip them rather than fail the uninstall. So are kinds
                // gone since discovery (404: their CRD was deleted).
                Err(Paged::Retry(RetryError::Kube(kube::Error::Api(s)))) => {
                    tracing::debug!(kind = %ar.kind, code = s.code, "cannot list kind; skipped");
                }
                Err(Paged::Retry(e)) => return Err(self.error("list", &ar.kind, e)),
                Err(Paged::Cluster(e)) => return Err(e),
            }
        }
        Ok(found)
    }

    /// Appends `each(object)` of every object `api` lists (those matching
    /// `label_selector`) to `found`, a page at a time, with apiVersion and kind filled in.
    async fn list_pages<T>(
        &self,
        api: &Api<DynamicObject>,
        ar: &ApiResource,
        label_selector: Option<&str>,
        what: &str,
        each: &mut impl FnMut(Value) -> Option<T>,
        found: &mut Vec<T>,
    ) -> Result<(), Paged> {
        let mut next: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(PAGE);
            if let Some(selector) = label_selector {
                lp = lp.labels(selector);
            }
            if let Some(token) = &next {
                lp = lp.continue_token(token);
            }
            let page = with_retry("list", None, || api.list(&lp))
                .await
                .map_err(Paged::Retry)?;
            for item in page.items {
                let mut v = serde_json::to_value(&item).map_err(|e| {
                    Paged::Cluster(ClusterError::Other {
                        verb: "list",
                        object: what.to_string(),
                        message: e.to_string(),
                    })
                })?;
                // List items come without type information.
                if let Some(m) = v.as_object_mut() {
                    m.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
                    m.insert("kind".into(), Value::String(ar.kind.clone()));
                }
                found.extend(each(v));
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => next = Some(token),
                None => return Ok(()),
            }
        }
    }
}

/// Why a paged list stopped: the request failed (the caller decides what that means for
/// its kind), or an answer could not be read.
enum Paged {
    Retry(RetryError),
    Cluster(ClusterError),
}
