//! `kudo_operator`: KUDO's Operator and OperatorVersion objects for one package.

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, Attr, AttributePath, Diagnostic, IdentitySchema, ImportResponse,
    ImportedResource, IntoValue, PlanRequest, PlanResponse, ReadRequest, ReadResponse, Resource,
    Schema, Value,
};
use tokio_util::sync::CancellationToken;

use kudo_engine::engine;

use kudo_package::Package;
use kudo_resolve::Resolution;

use super::packages::{self, parse_operator_id};
use super::resolve::{
    Dependency, cluster_of, load_with_dependencies, overrides_of, resolution_values, resolve_loaded,
};
use super::{Call, DEFAULT_NAMESPACE, Session, decode, namespace_of, schema};

tfplugin::model! {
    /// A `kudo_operator` value: configuration, plan or state.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct OperatorModel {
        pub package: Attr<String>,
        pub namespace: Attr<String>,
        pub id: Attr<String>,
        pub name: Attr<String>,
        pub operator_version: Attr<String>,
        pub app_version: Attr<String>,
        pub operator_version_name: Attr<String>,
        /// A value: its entries may be unknown while planning.
        pub dependency_overrides: Value,
        pub dependencies: Attr<Vec<Dependency>>,
        pub install_order: Attr<Vec<String>>,
        pub digest: Attr<String>,
    }
}

/// The `kudo_operator` resource type.
pub struct Operator;

#[async_trait]
impl Resource<Call> for Operator {
    fn name(&self) -> &'static str {
        schema::OPERATOR
    }

    fn schema(&self) -> Schema {
        schema::operator()
    }

    async fn read(&self, call: &Call, req: ReadRequest) -> ReadResponse {
        read(&call.session, req).await
    }

    async fn plan(&self, call: &Call, req: PlanRequest) -> PlanResponse {
        plan(&call.session, req).await
    }

    async fn apply(&self, call: &Call, req: ApplyRequest) -> ApplyResponse {
        apply(&call.session, req, &call.cancel).await
    }

    async fn import(&self, call: &Call, id: &str) -> ImportResponse {
        import(&call.session, id).await
    }

    fn identity(&self) -> Option<IdentitySchema> {
        Some(super::identity::operator())
    }

    async fn import_identity(&self, call: &Call, identity: &Value) -> ImportResponse {
        match super::identity::operator_import_id(&call.session, identity).await {
            Ok(id) => import(&call.session, &id).await,
            Err(d) => super::import_failed(d),
        }
    }
}

/// The resource's state for a loaded package (without the dependency attributes).
fn state_for(pkg: &Package, package: Attr<String>, namespace: &str) -> OperatorModel {
    let ov_name = pkg.operator_version_name();
    OperatorModel {
        package,
        namespace: namespace.into(),
        id: format!("{namespace}/{ov_name}").into(),
        name: pkg.operator.name.as_str().into(),
        operator_version: pkg.operator.operator_version.as_str().into(),
        app_version: pkg.operator.app_version.clone().into(),
        digest: packages::digest(pkg).into(),
        operator_version_name: ov_name.into(),
        ..Default::default()
    }
}

/// `state` with the dependency attributes of `resolution` and the configured overrides.
fn with_resolution(
    mut state: OperatorModel,
    resolution: &Resolution,
    overrides: Value,
) -> OperatorModel {
    let (deps, order) = resolution_values(resolution);
    state.dependency_overrides = overrides;
    state.dependencies = Attr::Known(deps);
    state.install_order = Attr::Known(order);
    state
}

pub async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
    let exists = !req.prior_state.is_null();
    let mut resp = plan_inner(session, req).await;
    if exists {
        super::diag::with_destroy_advice(&mut resp.diagnostics);
    }
    resp
}

async fn plan_inner(session: &Session, req: PlanRequest) -> PlanResponse {
    let fail = |diagnostics| PlanResponse {
        diagnostics,
        ..Default::default()
    };
    let proposed: OperatorModel = match decode(&req.proposed_new_state) {
        Ok(Some(p)) => p,
        Ok(None) => return PlanResponse::default(),
        Err(d) => return fail(d),
    };
    let schema = schema::operator();
    // The package path depends on something not known yet: everything computed is too.
    let unknown = || {
        let mut planned: OperatorModel = match schema
            .mark_computed_unknown(&req.proposed_new_state)
            .decode()
        {
            Ok(p) => p,
            Err(d) => return fail(vec![d]),
        };
        if proposed.namespace.is_null() {
            planned.namespace = DEFAULT_NAMESPACE.into();
        }
        let planned = planned.into_value();
        PlanResponse {
            requires_replace: schema.requires_replace(&req.prior_state, &planned),
            planned_state: planned,
            ..Default::default()
        }
    };
    let Attr::Known(source) = &proposed.package else {
        return unknown();
    };
    if !proposed.dependency_overrides.is_fully_known() {
        return PlanResponse {
            planned_state: schema.mark_computed_unknown(&req.proposed_new_state),
            ..Default::default()
        };
    }
    // The cluster's version checks the package's kubernetesVersion and steers the
    // choice of dependency versions; offline (settings not known yet) the plan goes on
    // unchecked and the apply connects and checks again.
    let cluster = match session.planning_cluster().await {
        Ok(c) => c,
        Err(d) => return fail(vec![d]),
    };
    if cluster.is_none() && packages::cluster_source(source).is_some() {
        // Read from a cluster the plan cannot reach yet (offline): known at apply.
        return unknown();
    }
    let (pkg, resolution) = match load_package(
        session,
        cluster.as_ref(),
        source,
        overrides_of(&proposed.dependency_overrides),
    )
    .await
    {
        Ok(r) => r,
        Err(d) => return fail(vec![d]),
    };
    let namespace = namespace_of(&proposed.namespace);
    // KUDO's CRDs, when the apply would have to create them and these credentials may
    // not: the plan fails with the API server's refusal.
    if let Some(cluster) = &cluster
        && let Err(e) = cluster.check_kudo_crds().await
    {
        let mut d = session
            .cluster_error("Cannot install the KUDO CRDs", &e)
            .with_attribute(AttributePath::attribute("package"));
        d.detail = format!(
            "KUDO's CustomResourceDefinitions (operators.kudo.dev, operatorversions.kudo.dev, instances.kudo.dev) are not installed in this cluster, and these credentials may not install them. A cluster administrator installs them once (with the provider's `kudo_operator` and the kudo-admin ClusterRole of docs/guides/permissions.md, or with `kubectl kudo init --crd-only`); after that, credentials with rights in their namespace only are enough.\n\n{}",
            d.detail
        );
        return fail(vec![d]);
    }
    // What the apply would meet writing the Operator and OperatorVersion (an object too
    // large to store, a namespace being deleted, missing permissions) fails the plan.
    if let Some(cluster) = &cluster
        && let Err(e) = engine::check_operator(cluster, &pkg, &namespace).await
        && !e.is_cancelled()
        && matches!(
            engine::classify(e.clone(), "install"),
            engine::PlanFailure::Refused { .. }
        )
    {
        return fail(vec![
            session
                .engine_error("Cannot install the operator", &e)
                .with_attribute(AttributePath::attribute("package")),
        ]);
    }
    let mut diagnostics: Vec<Diagnostic> = kudo_package::warnings(&pkg)
        .into_iter()
        .map(|w| {
            Diagnostic::warning("Operator package verification", w.to_string())
                .with_attribute(AttributePath::attribute("package"))
        })
        .collect();
    // Offline, the cluster's version could not steer the choice of dependency
    // versions; when it might have (a chosen dependency needs a newer Kubernetes than
    // the oldest release there is), the tree is known only at apply, where Terraform
    // plans again connected and the two plans must agree.
    let tree_known =
        !session.config.offline() || !kudo_resolve::needs_cluster_version(&pkg, &resolution);
    let stored =
        packages::plan_cache().store_tree(&namespace, &pkg, tree_known.then_some(&resolution));
    if let Err(e) = stored {
        // Only plan-time checks of instances depend on the copy; apply reads the cluster.
        diagnostics.push(Diagnostic::warning(
            "Could not keep a plan-time copy of the package",
            format!(
                "Instances of this operator cannot check their parameters during this plan: {e}"
            ),
        ));
    }
    diagnostics.extend(super::resolve::unused_override_warnings(&resolution));
    let mut planned = with_resolution(
        state_for(&pkg, proposed.package.clone(), &namespace),
        &resolution,
        proposed.dependency_overrides,
    );
    if !tree_known {
        planned.dependencies = Attr::Unknown;
        planned.install_order = Attr::Unknown;
    }
    let planned = planned.into_value();
    PlanResponse {
        requires_replace: schema.requires_replace(&req.prior_state, &planned),
        planned_state: planned,
        planned_private: Vec::new(),
        diagnostics,
    }
}

/// The package `source` names, with its dependencies resolved. A `cluster:` source
/// (see [`packages::CLUSTER_SOURCE`]) is the OperatorVersion stored in `cluster`, read
/// as `terraform import` reads it (callers without a cluster do not ask for one).
async fn load_package(
    session: &Session,
    cluster: Option<&kudo_engine::cluster::Cluster>,
    source: &str,
    overrides: std::collections::BTreeMap<String, String>,
) -> Result<(Package, Resolution), Diagnostic> {
    let repositories = &session.config.repositories;
    let version = cluster.and_then(cluster_of);
    let Some((namespace, ov_name)) = packages::cluster_source(source) else {
        if source.starts_with(packages::CLUSTER_SOURCE) {
            return Err(super::resolve::package_error(
                source,
                "a cluster package source is `cluster:<namespace>/<operatorversion-name>`",
            ));
        }
        return load_with_dependencies(repositories, source, overrides, version).await;
    };
    let Some(cluster) = cluster else {
        return Err(super::resolve::package_error(
            source,
            "a cluster package source is read from the cluster, and its connection is not known yet",
        ));
    };
    let pkg = engine::load_operator(cluster, namespace, ov_name)
        .await
        .map_err(|e| session.engine_error("Cannot read the operator from the cluster", &e))?
        .ok_or_else(|| {
            super::resolve::package_error(
                source,
                format!("there is no OperatorVersion {ov_name} in namespace {namespace}; set `package` to the operator's folder, archive, URL or repository name"),
            )
        })?;
    resolve_loaded(repositories, source, pkg, overrides, version).await
}

pub async fn apply(
    session: &Session,
    req: ApplyRequest,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let fail = |state: Value, diagnostics: Vec<Diagnostic>| ApplyResponse {
        new_state: state,
        diagnostics,
        ..Default::default()
    };
    let (prior, planned) = match (
        decode::<OperatorModel>(&req.prior_state),
        decode::<OperatorModel>(&req.planned_state),
    ) {
        (Ok(prior), Ok(planned)) => (prior, planned),
        (Err(d), _) | (_, Err(d)) => return fail(req.prior_state, d),
    };
    let cluster = match session.cluster_for_change(planned.is_none()).await {
        Ok(c) => c,
        Err(d) => return fail(req.prior_state, vec![d]),
    };
    let Some(planned) = planned else {
        return match prior {
            Some(prior) => destroy(session, &cluster, req.prior_state, &prior, cancel).await,
            // Nothing planned and nothing there: nothing to do.
            None => ApplyResponse::default(),
        };
    };
    let prior_state = req.prior_state;

    let source = planned.package.as_deref().unwrap_or_default().to_string();
    let (pkg, resolution) = match load_package(
        session,
        Some(&cluster),
        &source,
        overrides_of(&planned.dependency_overrides),
    )
    .await
    {
        Ok(r) => r,
        Err(d) => return fail(prior_state, vec![d]),
    };
    let namespace = namespace_of(&planned.namespace);
    let state = with_resolution(
        state_for(&pkg, planned.package.clone(), &namespace),
        &resolution,
        planned.dependency_overrides.clone(),
    );
    // A null digest (never planned so) counts as a change, as any value but unknown does.
    if !planned.digest.is_unknown() && planned.digest != state.digest {
        return fail(
            prior_state,
            vec![Diagnostic::error(
                "Operator package changed after the plan",
                format!("The package at {source:?} is not the one Terraform planned with. Run `terraform plan` again and review the new changes."),
            )
            .with_attribute(AttributePath::attribute("package"))],
        );
    }
    // Instances read their dependency tree from this copy; the plan may have been made
    // elsewhere (a saved plan file), so the apply keeps it too.
    // Offline, the cluster's version could not steer the choice of dependency
    // versions; when it might have (a chosen dependency needs a newer Kubernetes than
    // the oldest release there is), the tree is known only at apply, where Terraform
    // plans again connected and the two plans must agree.
    let tree_known =
        !session.config.offline() || !kudo_resolve::needs_cluster_version(&pkg, &resolution);
    let stored =
        packages::plan_cache().store_tree(&namespace, &pkg, tree_known.then_some(&resolution));
    if let Err(e) = stored {
        tracing::warn!(error = %e, "could not keep a copy of the dependency tree");
    }
    if let Err(e) = cluster.ensure_kudo_crds().await {
        return fail(
            prior_state,
            vec![session.cluster_error("Cannot install the KUDO CRDs", &e)],
        );
    }
    // A create that fails half-way removes what it wrote itself (Terraform keeps no
    // state of a failed create, so nothing else would): the OperatorVersions that did
    // not exist before and, once unused, their Operators. What existed before stays.
    let creating = prior.is_none();
    let mut written: Vec<(String, String)> = Vec::new();
    // Dependencies first, as KUDO's install did: their OperatorVersions must exist before
    // an instance's KudoOperator task asks for them. The resolution's install order puts
    // each package after what it needs, so an interrupted apply never leaves a package
    // installed without its own dependencies.
    let sequence = dependency_install_sequence(&resolution, &pkg);
    for (dep, is_root) in sequence
        .into_iter()
        .map(|d| (d, false))
        .chain(std::iter::once((&pkg, true)))
    {
        let name = dep.operator.name.clone();
        let ov_name = dep.operator_version_name();
        let existed = match creating {
            true => matches!(
                cluster
                    .get(&engine::operator_version_ref(&namespace, &ov_name))
                    .await,
                Ok(Some(_))
            ),
            false => true,
        };
        if let Err(e) = engine::install_operator(&cluster, dep, &namespace).await {
            if !existed {
                written.push((name.clone(), ov_name));
            }
            let summary = match is_root {
                true => "Cannot install the operator".to_string(),
                false => format!(
                    "Cannot install dependency {name} of operator {}",
                    pkg.operator.name
                ),
            };
            let mut diagnostics = vec![session.engine_error(&summary, &e)];
            diagnostics.extend(remove_written(&cluster, &namespace, &written, cancel).await);
            return fail(prior_state, diagnostics);
        }
        if !existed {
            written.push((name, ov_name));
        }
    }
    // A version change leaves the previous OperatorVersion unused: instances move to the
    // new one when they are updated after this resource. The same holds for dependency
    // versions the new resolution no longer picks.
    let mut stale: Vec<(String, String)> = Vec::new();
    let prior = prior.unwrap_or_default();
    if let Some(old_ov) = prior.operator_version_name.as_deref()
        && old_ov != pkg.operator_version_name()
    {
        stale.push((pkg.operator.name.clone(), old_ov.to_string()));
    }
    // Operators installed without an instance count too: they are not `nodes`.
    let current = resolution.install_order_versions();
    for dep in dependency_versions(&prior) {
        if !current.contains(&dep.1) && !stale.contains(&dep) {
            stale.push(dep);
        }
    }
    let mut diagnostics = Vec::new();
    for (name, old_ov) in &stale {
        tracing::info!(operator = %name, operator_version = %old_ov, "removing an OperatorVersion no longer used");
        if let Err(e) =
            // Not kept while used: this configuration's instances move to the new
            // version later in the same apply.
            engine::uninstall_operator(
                &cluster,
                &namespace_of(&prior.namespace),
                name,
                old_ov,
                false,
                false,
                cancel,
            )
            .await
        {
            diagnostics.push(Diagnostic::warning(
                "Previous OperatorVersion not removed",
                format!(
                    "{old_ov}: {e}\n\nNothing uses it any more; delete it with kubectl if it stays."
                ),
            ));
        }
    }
    ApplyResponse {
        new_state: state.into_value(),
        diagnostics,
        ..Default::default()
    }
}

/// The dependency packages of a resolution in install order (the root package excluded:
/// it is installed last, by the caller). A chosen package the order does not name still
/// gets installed, after the others, so nothing the tree needs is skipped.
fn dependency_install_sequence<'r>(resolution: &'r Resolution, root: &Package) -> Vec<&'r Package> {
    let root_ov = root.operator_version_name();
    let mut sequence: Vec<&Package> = Vec::new();
    for ov_name in resolution.install_order_versions() {
        if ov_name == root_ov {
            continue;
        }
        if let Some(p) = resolution
            .packages
            .values()
            .find(|p| p.operator_version_name() == ov_name)
        {
            sequence.push(p);
        }
    }
    for (name, p) in &resolution.packages {
        if *name != root.operator.name && !sequence.iter().any(|s| std::ptr::eq(*s, p)) {
            sequence.push(p);
        }
    }
    sequence
}

/// `(package, OperatorVersion name)` of what a state installed, in removal order: this
/// operator first, then its dependencies in reverse install order, so a package goes
/// before the ones it needs. Dependencies the state's `install_order` does not name
/// (a state written before it had one) follow in reverse `dependencies` order.
fn removal_order(state: &OperatorModel) -> Vec<(String, String)> {
    let name = state.name.as_deref().unwrap_or_default().to_string();
    let ov_name = state
        .operator_version_name
        .as_deref()
        .unwrap_or_default()
        .to_string();
    let deps = dependency_versions(state);
    let mut removals = vec![(name, ov_name)];
    let order = state
        .install_order
        .known()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for ov in order.iter().rev() {
        if let Some(d) = deps.iter().find(|d| d.1 == *ov)
            && !removals.contains(d)
        {
            removals.push(d.clone());
        }
    }
    for d in deps.into_iter().rev() {
        if !removals.contains(&d) {
            removals.push(d);
        }
    }
    removals
}

/// `(package, OperatorVersion name)` of each entry of a state's `dependencies`.
fn dependency_versions(state: &OperatorModel) -> Vec<(String, String)> {
    state
        .dependencies
        .known()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|d| Some((d.package.clone()?, d.operator_version_name.clone()?)))
        .collect()
}

/// Removes what `prior` installed; `prior_state` is the same state as Terraform sent
/// it, handed back unchanged when the destroy fails.
async fn destroy(
    session: &Session,
    cluster: &kudo_engine::cluster::Cluster,
    prior_state: Value,
    prior: &OperatorModel,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let namespace = namespace_of(&prior.namespace);
    // Everything it installed for its dependencies goes too, so nothing is left behind
    // the way KUDO left it.
    // This configuration's instances are gone by now (they depend on this resource);
    // versions other instances still run stay, with a warning.
    let removals = removal_order(prior);
    let mut result = Ok(Vec::new());
    for (name, ov_name) in &removals {
        match engine::uninstall_operator(cluster, &namespace, name, ov_name, true, true, cancel)
            .await
        {
            Ok(kept) => {
                if let Ok(all) = &mut result {
                    all.extend(kept);
                }
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    match result {
        Ok(kept) => ApplyResponse {
            diagnostics: super::diag::kept_warnings(&kept),
            ..Default::default()
        },
        Err(e) => ApplyResponse {
            new_state: prior_state,
            diagnostics: vec![session.destroy_error("Cannot remove the operator", &e)],
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
    let model = match decode::<OperatorModel>(&state) {
        Ok(m) => m.unwrap_or_default(),
        Err(d) => return keep(state, d),
    };
    let (Some(namespace), Some(ov_name)) = (
        model.namespace.as_deref(),
        model.operator_version_name.as_deref(),
    ) else {
        return keep(state, Vec::new());
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return keep(state, vec![d]),
    };
    match engine::load_operator(&cluster, namespace, ov_name).await {
        // Deleted out of band: Terraform plans to create it again.
        Ok(None) => keep(Value::Null, Vec::new()),
        Ok(Some(pkg)) => {
            // A changed OperatorVersion shows up as a digest change, which plans an update.
            let fresh = OperatorModel {
                digest: packages::digest(&pkg).into(),
                ..model.clone()
            };
            keep(fresh.into_value(), Vec::new())
        }
        Err(e) => keep(
            state.clone(),
            vec![session.engine_error("Cannot read the operator", &e)],
        ),
    }
}

pub async fn import(session: &Session, id: &str) -> ImportResponse {
    let fail = super::import_failed;
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
        Ok(Some(pkg)) => {
            // The package source is not recorded in the cluster; the next plan
            // takes it from the configuration.
            let mut state = state_for(&pkg, Attr::Null, namespace);
            // Without KudoOperator tasks or a `dependencies:` list the resolution is known without repositories:
            // record it, so the next plan shows only the `package` it cannot know.
            let has_dependencies =
                !pkg.operator.dependencies.is_empty() || kudo_plan::has_dependency_tasks(&pkg);
            if !has_dependencies {
                state.dependencies = Attr::Known(Vec::new());
                state.install_order = Attr::Known(vec![pkg.operator_version_name()]);
            }
            ImportResponse {
                imported: vec![ImportedResource {
                    type_name: schema::OPERATOR.to_string(),
                    state: state.into_value(),
                    private: Vec::new(),
                }],
                diagnostics: Vec::new(),
            }
        }
        Ok(None) => fail(Diagnostic::error(
            "Nothing to import",
            format!("There is no OperatorVersion {ov_name} in namespace {namespace}."),
        )),
        Err(e) => fail(session.engine_error("Cannot read the operator", &e)),
    }
}

/// Removes the OperatorVersions (and unused Operators) a failed create wrote, newest
/// first; a failure to remove is a warning naming what is left.
async fn remove_written(
    cluster: &kudo_engine::cluster::Cluster,
    namespace: &str,
    written: &[(String, String)],
    cancel: &CancellationToken,
) -> Vec<Diagnostic> {
    let mut warnings = Vec::new();
    for (name, ov_name) in written.iter().rev() {
        if let Err(e) =
            engine::uninstall_operator(cluster, namespace, name, ov_name, true, true, cancel).await
        {
            warnings.push(Diagnostic::warning(
                format!("OperatorVersion {namespace}/{ov_name} left behind"),
                format!("The failed create could not remove what it wrote: {e}. Delete it with kubectl delete operatorversion -n {namespace} {ov_name}."),
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_resolve::{RepositoryCatalog, Resolver};
    use std::path::Path;

    #[test]
    fn dependencies_install_children_first_not_alphabetically() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/deps/kep29");
        let root = Package::load_dir(&dir.join("aa")).expect("root package");
        let catalog = RepositoryCatalog::folder("fixtures", &dir);
        let resolution = Resolver::new(&catalog)
            .resolve(&root, &root.operator.name)
            .expect("resolves");
        let installed: Vec<&str> = dependency_install_sequence(&resolution, &root)
            .into_iter()
            .map(|p| p.operator.name.as_str())
            .collect();
        // bb needs ee and gg; aa (installed last by apply) needs bb and cc.
        assert_eq!(installed, ["ee", "gg", "bb", "cc"]);
    }

    fn dependency(package: &str, ov: &str) -> Value {
        Value::object([
            ("package", Value::string(package)),
            ("operator_version_name", Value::string(ov)),
        ])
    }

    #[test]
    fn destroy_removes_the_operator_then_dependencies_in_reverse_install_order() {
        let state = Value::object([
            ("name", Value::string("aa")),
            ("operator_version_name", Value::string("aa-0.1.0")),
            (
                "dependencies",
                Value::list([
                    dependency("bb", "bb-0.1.0"),
                    dependency("ee", "ee-0.1.0"),
                    dependency("gg", "gg-0.1.0"),
                    dependency("cc", "cc-0.1.0"),
                ]),
            ),
            (
                "install_order",
                Value::list(
                    ["ee-0.1.0", "gg-0.1.0", "bb-0.1.0", "cc-0.1.0", "aa-0.1.0"].map(Value::string),
                ),
            ),
        ]);
        let state = state.decode().expect("an operator state");
        let removed: Vec<String> = removal_order(&state).into_iter().map(|d| d.0).collect();
        assert_eq!(removed, ["aa", "cc", "bb", "gg", "ee"]);
    }

    #[test]
    fn the_model_names_every_attribute_of_the_schema() {
        schema::assert_model_covers(&schema::operator(), OperatorModel::ATTRIBUTES);
    }

    #[test]
    fn a_state_without_install_order_still_removes_every_dependency() {
        let state = Value::object([
            ("name", Value::string("aa")),
            ("operator_version_name", Value::string("aa-0.1.0")),
            (
                "dependencies",
                Value::list([dependency("bb", "bb-0.1.0"), dependency("cc", "cc-0.1.0")]),
            ),
            ("install_order", Value::Null),
        ]);
        let state = state.decode().expect("an operator state");
        let removed: Vec<String> = removal_order(&state).into_iter().map(|d| d.0).collect();
        assert_eq!(removed, ["aa", "cc", "bb"]);
    }
}
