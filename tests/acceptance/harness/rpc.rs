//! The provider in this process, driven through `tfplugin::Provider`: the calls
//! Terraform makes over the plugin protocol, minus the encoding. Values are passed
//! through the wire encoding first (every attribute present, null when unset), so a
//! test sends what Terraform would send and reads what Terraform would get back.

use tfplugin::{AttributePath, Diagnostic, Provider, ProviderSchemas, Type, Value};

pub use terraform_provider_kudo::provider::KudoProvider;

/// The Terraform version the tests say they are (the oldest the provider supports is
/// not what is checked here; only that one is given).
pub const TERRAFORM_VERSION: &str = "1.15.5";

/// `value` as Terraform sends a value of type `ty`: encoded as cty msgpack and decoded
/// again, which fills unset attributes with null.
#[track_caller]
pub fn wire(value: &Value, ty: &Type) -> Value {
    let bytes = value
        .to_msgpack(ty)
        .unwrap_or_else(|e| panic!("value does not fit its type: {e}\n{value:?}"));
    Value::from_msgpack(&bytes, ty).unwrap_or_else(|e| panic!("msgpack round trip: {e}"))
}

/// The schemas Terraform gets from `GetProviderSchema`.
pub fn schemas() -> ProviderSchemas {
    KudoProvider::new().schemas()
}

/// A provider block with `attrs` set, as Terraform sends it.
#[track_caller]
pub fn provider_block<K: Into<String>>(attrs: impl IntoIterator<Item = (K, Value)>) -> Value {
    wire(&Value::object(attrs), &schemas().provider.value_type())
}

/// A `kind` (`resources`, `data_sources`, `actions`, ...) configuration or state of
/// `type_name` with `attrs` set, as Terraform sends it.
#[track_caller]
pub fn value_of<K: Into<String>>(
    type_name: &str,
    attrs: impl IntoIterator<Item = (K, Value)>,
) -> Value {
    let schemas = schemas();
    let schema = schemas
        .resources
        .get(type_name)
        .or_else(|| schemas.data_sources.get(type_name))
        .or_else(|| schemas.actions.get(type_name))
        .unwrap_or_else(|| panic!("no schema {type_name}"));
    wire(&Value::object(attrs), &schema.value_type())
}

/// A provider configured with `config` (see [`provider_block`]); fails the test on
/// any diagnostic.
#[track_caller]
pub fn configured(config: Value) -> KudoProvider {
    let provider = KudoProvider::new();
    let diags = block_on(provider.configure(config, TERRAFORM_VERSION.into()));
    assert!(diags.is_empty(), "configure: {diags:?}");
    provider
}

/// Runs `future` to completion on the runtime every in-process call shares: a
/// configured provider keeps its cluster client, whose connection tasks live on the
/// runtime that made them, so each call cannot have a runtime of its own.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    static RUNTIME: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
    });
    RUNTIME.block_on(future)
}

/// The first diagnostic on `path`, if any.
pub fn on<'a>(diags: &'a [Diagnostic], path: &AttributePath) -> Option<&'a Diagnostic> {
    diags.iter().find(|d| d.attribute.as_ref() == Some(path))
}

/// The diagnostics as one text, for assertion messages.
pub fn text(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| {
            let at = d.attribute.as_ref().map(|p| format!(" at {p}"));
            format!(
                "{:?}{}: {}: {}",
                d.severity,
                at.unwrap_or_default(),
                d.summary,
                d.detail
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A provider configured to reach the test's cluster (kube-sim, or the real cluster of
/// `KUDO_TEST_KUBECONFIG`) through the provider block's own settings: the test process's
/// environment (a developer's `KUBECONFIG`) plays no part.
#[track_caller]
pub fn connected(ctx: &super::TestContext) -> KudoProvider {
    let c = ctx.connection();
    let setting = |s: &str| Value::opt_string((!s.is_empty()).then_some(s));
    configured(provider_block([
        ("host", Value::string(&c.host)),
        ("token", setting(&c.token)),
        ("cluster_ca_certificate", setting(&c.cluster_ca_certificate)),
        ("client_certificate", setting(&c.client_certificate)),
        ("client_key", setting(&c.client_key)),
        ("insecure", Value::bool(c.insecure)),
    ]))
}
