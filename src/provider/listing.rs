//! `terraform query` (Terraform 1.14+): `list "kudo_instance"` and `list "kudo_operator"`
//! find the KUDO Instances and OperatorVersions in a cluster, whoever made them, so that
//! users of `kubectl kudo` can adopt them with generated configuration instead of
//! writing it from `kubectl get instance -o yaml`. Which objects are listed is the
//! engine's ([`engine::list_instances`], [`engine::list_operators`]).

use tfplugin::{Attr, Diagnostic, IntoValue, ListRequest, Listed, Value};

use kudo_engine::engine::{self, ListFilter};

use super::instance;
use super::{Session, packages};

tfplugin::model! {
    /// The `config` block, as the schema (`schema::instance_list`) declares it.
    #[derive(Debug, Clone, Default, PartialEq)]
    struct ListConfig {
        namespace: Attr<String>,
        operator: Attr<String>,
        label_selector: Attr<String>,
    }
}

impl ListConfig {
    /// The engine's filter: what is set and not empty selects; at most `req.limit`, each
    /// with what its import reads when Terraform wants the resource objects.
    fn filter<'a>(&'a self, session: &Session, req: &ListRequest) -> ListFilter<'a> {
        fn set(a: &Attr<String>) -> Option<&str> {
            a.as_deref().filter(|s| !s.is_empty())
        }
        ListFilter {
            namespace: set(&self.namespace),
            operator: set(&self.operator),
            label_selector: set(&self.label_selector),
            // A dependency comes with what installs it.
            dependencies: false,
            limit: (req.limit > 0).then(|| usize::try_from(req.limit).unwrap_or(usize::MAX)),
            import: req
                .include_resource_object
                .then(|| instance::import_request(session)),
            version: None,
        }
    }
}

/// The Instances `req.config` selects, sorted by namespace and name, at most
/// `req.limit`; with `include_resource_object`, each with the state an import builds.
pub async fn instances(session: &Session, req: &ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
    let config: ListConfig = match req.config.decode() {
        Ok(c) => c,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let listed = match session.cluster().await {
        Ok(cluster) => engine::list_instances(&cluster, &config.filter(session, req))
            .await
            .map_err(|e| session.cluster_error("Cannot list the KUDO Instances", &e)),
        Err(d) => Err(d),
    };
    let listed = match listed {
        Ok(l) => l,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for f in listed {
        let state = match &f.imported {
            None => None,
            Some(Ok(Some(imported))) => {
                Some(instance::imported_state(&f.namespace, &f.name, imported))
            }
            // Gone since it was listed.
            Some(Ok(None)) => continue,
            Some(Err(e)) => {
                diags.push(super::running::error(session, e));
                continue;
            }
        };
        out.push(Listed {
            display_name: format!("{}/{} ({})", f.namespace, f.name, f.operator_version),
            identity: Value::object([
                ("namespace", Value::string(&f.namespace)),
                ("name", Value::string(&f.name)),
            ]),
            state,
        });
    }
    (out, diags)
}

/// The operators (OperatorVersions) `req.config` selects, sorted by namespace and
/// name, at most `req.limit`; with `include_resource_object`, each with the state an
/// import builds and `package` naming the OperatorVersion in the cluster.
pub async fn operators(session: &Session, req: &ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
    let config: ListConfig = match req.config.decode() {
        Ok(c) => c,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let listed = match session.cluster().await {
        Ok(cluster) => engine::list_operators(&cluster, &config.filter(session, req))
            .await
            .map_err(|e| session.cluster_error("Cannot list the KUDO OperatorVersions", &e)),
        Err(d) => Err(d),
    };
    let selected = match listed {
        Ok(l) => l,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for f in selected {
        let id = format!("{}/{}", f.namespace, f.name);
        let state = match &f.package {
            None => None,
            Some(Ok(Some(pkg))) => Some(
                super::operator::imported_state(pkg, &f.namespace)
                    .into_value()
                    .with(
                        "package",
                        Value::string(format!("{}{id}", packages::CLUSTER_SOURCE)),
                    ),
            ),
            // Gone since it was listed.
            Some(Ok(None)) => continue,
            Some(Err(e)) => {
                diags.push(session.engine_error("Cannot read the operator", e));
                continue;
            }
        };
        out.push(Listed {
            display_name: id,
            identity: Value::object([
                ("namespace", Value::string(&f.namespace)),
                ("name", Value::string(&f.operator)),
                ("version", Value::string(&f.version)),
            ]),
            state,
        });
    }
    (out, diags)
}

/// `list "kudo_instance"`.
pub struct InstanceList;

#[async_trait::async_trait]
impl tfplugin::ListResource<super::Call> for InstanceList {
    fn name(&self) -> &'static str {
        super::schema::INSTANCE
    }

    fn schema(&self) -> tfplugin::Schema {
        super::schema::instance_list()
    }

    async fn list(&self, call: &super::Call, req: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
        instances(&call.session, &req).await
    }
}

/// `list "kudo_operator"`.
pub struct OperatorList;

#[async_trait::async_trait]
impl tfplugin::ListResource<super::Call> for OperatorList {
    fn name(&self) -> &'static str {
        super::schema::OPERATOR
    }

    fn schema(&self) -> tfplugin::Schema {
        super::schema::operator_list()
    }

    async fn list(&self, call: &super::Call, req: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
        operators(&call.session, &req).await
    }
}
