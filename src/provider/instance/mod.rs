//! `kudo_instance`: an Instance of an installed operator and everything its plans create.
//! Each RPC has a file of its own (plan, apply, destroy, read, import); this one holds
//! the resource type that dispatches to them. Values, validation, plan-time renders,
//! the plan decision and timeouts live beside them.

pub(super) mod action;
mod apply;
mod deadline;
mod destroy;
mod import;
mod lookup;
mod model;
mod plan;
mod read;
mod refusal;
mod rollback;
mod upgrade;
mod validate;
mod views;

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, ClientCapabilities, Diagnostic, IdentitySchema, ImportResponse,
    PlanRequest, PlanResponse, ReadRequest, ReadResponse, Resource, Schema, Value,
};

use kudo_engine::engine;

use super::{Call, schema};
// The RPC files call into these provider modules as `super::write_only::…` and so on;
// importing them here is what makes those paths resolve from inside `instance`.
use super::{diag, drift, plan_status, volumes, write_only};

use self::apply::apply;
use self::import::import;
pub use self::rollback::RollbackTarget;

/// The state an import of the Instance `namespace/name` builds from what the engine
/// read (`terraform query` offers it for generated configuration).
pub(super) fn imported_state(namespace: &str, name: &str, imported: &engine::Imported) -> Value {
    tfplugin::IntoValue::into_value(import::imported_model(namespace, name, imported))
}
pub(super) use self::import::import_request;
pub use self::model::InstanceModel;

/// `pkg`'s effective parameters, or the diagnostics `kudo_instance` gives for them;
/// also what `provider::kudo::validate_parameters` returns (see `functions`).
pub(super) fn parameter_diagnostics(
    pkg: &kudo_package::Package,
    params: &std::collections::BTreeMap<String, String>,
    secret: &std::collections::BTreeMap<String, String>,
) -> Result<std::collections::BTreeMap<String, String>, Vec<Diagnostic>> {
    pkg.effective_params(params)
        .map_err(|errs| refusal::parameters(Some(pkg), params, secret, errs))
}
use self::plan::plan;
use self::read::read;
pub use self::upgrade::upgrade_state;
pub use self::validate::validate;

/// The `kudo_instance` resource type.
pub struct Instance;

#[async_trait]
impl Resource<Call> for Instance {
    fn name(&self) -> &'static str {
        schema::INSTANCE
    }

    fn schema(&self) -> Schema {
        schema::instance()
    }

    async fn validate(&self, config: Value, client: ClientCapabilities) -> Vec<Diagnostic> {
        let config: InstanceModel = match config.decode() {
            Ok(c) => c,
            Err(d) => return vec![d],
        };
        let mut diags = super::write_only::validate(&config, client);
        diags.extend(validate(&config));
        diags
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
        Some(super::identity::instance())
    }

    async fn import_identity(&self, call: &Call, identity: &Value) -> ImportResponse {
        match super::identity::instance_import_id(identity) {
            Ok(id) => import(&call.session, &id).await,
            Err(d) => super::import_failed(d),
        }
    }
}
