//! `kudo_operator`: KUDO's Operator and OperatorVersion objects for one package.

use tfplugin::{
    ApplyRequest, ApplyResponse, AttributePath, Diagnostic, ImportResponse, ImportedResource,
    PlanRequest, PlanResponse, ReadRequest, ReadResponse, Value,
};
use tokio_util::sync::CancellationToken;

use kudo_engine::engine;
use kudo_package::Package;

use super::packages::{self, PlanCache, parse_operator_id};
use super::{Session, schema};

const DEFAULT_NAMESPACE: &str = "default";

fn namespace_of(v: &Value) -> String {
    v.get("namespace")
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
        .to_string()
}

fn package_error(source: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        "Cannot load the operator package",
        format!("Package {source:?}: {e}"),
    )
    .with_attribute(AttributePath::attribute("package"))
}

/// The resource's state for a loaded package.
fn state_for(pkg: &Package, package_attr: Value, namespace: &str) -> Value {
    let ov_name = pkg.operator_version_name();
    Value::object([
        ("package", package_attr),
        ("namespace", Value::string(namespace)),
        ("id", Value::string(format!("{namespace}/{ov_name}"))),
        ("name", Value::string(&pkg.operator.name)),
        (
            "operator_version",
            Value::string(&pkg.operator.operator_version),
        ),
        (
            "app_version",
            Value::opt_string(pkg.operator.app_version.clone()),
        ),
        ("operator_version_name", Value::string(ov_name)),
        ("digest", Value::string(packages::digest(pkg))),
    ])
}

pub async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
    let proposed = req.proposed_new_state;
    if proposed.is_null() {
        return PlanResponse::default();
    }
    let schema = schema::operator();
    let Some(source) = proposed.get("package").as_str().map(str::to_string) else {
        // The package path depends on something not known yet: everything computed is too.
        let mut planned = schema.mark_computed_unknown(&proposed);
        if proposed.get("namespace").is_null() {
            planned.set_attr("namespace", Value::string(DEFAULT_NAMESPACE));
        }
        return PlanResponse {
            requires_replace: schema.requires_replace(&req.prior_state, &planned),
            planned_state: planned,
            ..Default::default()
        };
    };
    let repositories = session.config.repositories.clone();
    let loaded = {
        let source = source.clone();
        // Loading may download; keep it off the async workers.
        tokio::task::spawn_blocking(move || packages::load_source(&source, &repositories)).await
    };
    let pkg = match loaded {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            return PlanResponse {
                diagnostics: vec![package_error(&source, e)],
                ..Default::default()
            };
        }
        Err(e) => {
            return PlanResponse {
                diagnostics: vec![package_error(&source, e)],
                ..Default::default()
            };
        }
    };
    let namespace = namespace_of(&proposed);
    let mut diagnostics: Vec<Diagnostic> = packages::warnings(&pkg)
        .into_iter()
        .map(|w| {
            Diagnostic::warning("Operator package verification", w)
                .with_attribute(AttributePath::attribute("package"))
        })
        .collect();
    if let Err(e) = PlanCache::from_env().store(&namespace, &pkg) {
        // Only plan-time checks of instances depend on the copy; apply reads the cluster.
        diagnostics.push(Diagnostic::warning(
            "Could not keep a plan-time copy of the package",
            format!(
                "Instances of this operator cannot check their parameters during this plan: {e}"
            ),
        ));
    }
    let planned = state_for(&pkg, proposed.get("package").clone(), &namespace);
    PlanResponse {
        requires_replace: schema.requires_replace(&req.prior_state, &planned),
        planned_state: planned,
        planned_private: Vec::new(),
        diagnostics,
    }
}

pub async fn apply(
    session: &Session,
    req: ApplyRequest,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let prior = req.prior_state;
    let planned = req.planned_state;
    let fail = |state: Value, d: Diagnostic| ApplyResponse {
        new_state: state,
        diagnostics: vec![d],
        ..Default::default()
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return fail(prior, d),
    };

    if planned.is_null() {
        return destroy(&cluster, prior, cancel).await;
    }

    let source = planned
        .get("package")
        .as_str()
        .unwrap_or_default()
        .to_string();
    let repositories = session.config.repositories.clone();
    let loaded = {
        let source = source.clone();
        tokio::task::spawn_blocking(move || packages::load_source(&source, &repositories)).await
    };
    let pkg = match loaded {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return fail(prior, package_error(&source, e)),
        Err(e) => return fail(prior, package_error(&source, e)),
    };
    let namespace = namespace_of(&planned);
    let state = state_for(&pkg, planned.get("package").clone(), &namespace);
    if planned.get("digest").is_known() && planned.get("digest") != state.get("digest") {
        return fail(
            prior,
            Diagnostic::error(
                "Operator package changed after the plan",
                format!("The package at {source:?} is not the one Terraform planned with. Run `terraform plan` again and review the new changes."),
            )
            .with_attribute(AttributePath::attribute("package")),
        );
    }
    if let Err(e) = cluster.ensure_kudo_crds().await {
        return fail(
            prior,
            Diagnostic::error("Cannot install the KUDO CRDs", e.to_string()),
        );
    }
    if let Err(e) = engine::install_operator(&cluster, &pkg, &namespace).await {
        return fail(
            prior,
            Diagnostic::error("Cannot install the operator", e.to_string()),
        );
    }
    // A version change leaves the previous OperatorVersion unused: instances move to the
    // new one when they are updated after this resource.
    if let Some(old_ov) = prior.get("operator_version_name").as_str()
        && old_ov != pkg.operator_version_name()
        && let Err(e) = engine::uninstall_operator(
            &cluster,
            &namespace_of(&prior),
            &pkg.operator.name,
            old_ov,
            false,
            cancel,
        )
        .await
    {
        return ApplyResponse {
            new_state: state,
            diagnostics: vec![Diagnostic::warning(
                "Previous OperatorVersion not removed",
                format!("{old_ov}: {e}"),
            )],
            ..Default::default()
        };
    }
    ApplyResponse {
        new_state: state,
        ..Default::default()
    }
}

async fn destroy(
    cluster: &kudo_engine::cluster::Cluster,
    prior: Value,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let namespace = namespace_of(&prior);
    let name = prior.get("name").as_str().unwrap_or_default().to_string();
    let ov_name = prior
        .get("operator_version_name")
        .as_str()
        .unwrap_or_default()
        .to_string();
    match engine::uninstall_operator(cluster, &namespace, &name, &ov_name, true, cancel).await {
        Ok(()) => ApplyResponse::default(),
        Err(e) => ApplyResponse {
            new_state: prior,
            diagnostics: vec![Diagnostic::error(
                "Cannot remove the operator",
                e.to_string(),
            )],
            ..Default::default()
        },
    }
}

pub async fn read(session: &Session, req: ReadRequest) -> ReadResponse {
    let state = req.current_state;
    let keep = |state: Value, diagnostics: Vec<Diagnostic>| ReadResponse {
        new_state: state,
        private: req.private.clone(),
        diagnostics,
    };
    let (Some(namespace), Some(ov_name)) = (
        state.get("namespace").as_str().map(str::to_string),
        state
            .get("operator_version_name")
            .as_str()
            .map(str::to_string),
    ) else {
        return keep(state, Vec::new());
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return keep(state, vec![d]),
    };
    match engine::load_operator(&cluster, &namespace, &ov_name).await {
        // Deleted out of band: Terraform plans to create it again.
        Ok(None) => keep(Value::Null, Vec::new()),
        Ok(Some(pkg)) => {
            let mut fresh = state.clone();
            // A changed OperatorVersion shows up as a digest change, which plans an update.
            fresh.set_attr("digest", Value::string(packages::digest(&pkg)));
            keep(fresh, Vec::new())
        }
        Err(e) => keep(
            state,
            vec![Diagnostic::error("Cannot read the operator", e.to_string())],
        ),
    }
}

pub async fn import(session: &Session, id: &str) -> ImportResponse {
    let fail = |d: Diagnostic| ImportResponse {
        imported: Vec::new(),
        diagnostics: vec![d],
    };
    let Some((namespace, ov_name)) = parse_operator_id(id) else {
        return fail(Diagnostic::error(
            "Invalid import id",
            format!("{id:?} is not `<namespace>/<operatorversion-name>`."),
        ));
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return fail(d),
    };
    match engine::load_operator(&cluster, namespace, ov_name).await {
        Ok(Some(pkg)) => ImportResponse {
            imported: vec![ImportedResource {
                type_name: schema::OPERATOR.to_string(),
                // The package source is not recorded in the cluster; the next plan
                // takes it from the configuration.
                state: state_for(&pkg, Value::Null, namespace),
                private: Vec::new(),
            }],
            diagnostics: Vec::new(),
        },
        Ok(None) => fail(Diagnostic::error(
            "Nothing to import",
            format!("There is no OperatorVersion {ov_name} in namespace {namespace}."),
        )),
        Err(e) => fail(Diagnostic::error("Cannot read the operator", e.to_string())),
    }
}
