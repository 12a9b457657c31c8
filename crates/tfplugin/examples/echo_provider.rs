//! A tiny provider used by the tests: `echo_thing` (a resource whose id is
//! derived from its `input`) and `echo_data` (a data source echoing `input`).
//! Built as `terraform-provider-echo` by the Terraform integration test.

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, Attribute, Block, Diagnostic, PlanRequest, PlanResponse, Provider,
    ProviderSchemas, ReadRequest, ReadResponse, Schema, Type, Value,
};

struct Echo;

fn thing_schema() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("Echoes its input.")
            .attribute(
                Attribute::new("input", Type::String)
                    .required()
                    .requires_replace()
                    .description("Any text."),
            )
            .attribute(
                Attribute::new("id", Type::String)
                    .computed()
                    .description("`echo-` + input."),
            ),
    )
}

#[async_trait]
impl Provider for Echo {
    fn schemas(&self) -> ProviderSchemas {
        let mut s = ProviderSchemas {
            provider: Schema::new(
                0,
                Block::new().attribute(Attribute::new("prefix", Type::String).optional()),
            ),
            ..Default::default()
        };
        s.resources.insert("echo_thing".into(), thing_schema());
        s.data_sources.insert(
            "echo_data".into(),
            Schema::new(
                0,
                Block::new()
                    .attribute(Attribute::new("input", Type::String).required())
                    .attribute(Attribute::new("output", Type::String).computed()),
            ),
        );
        s
    }

    async fn configure(&self, config: Value, terraform_version: String) -> Vec<Diagnostic> {
        tracing::info!(terraform_version, prefix = ?config.get("prefix").as_str(), "echo provider configured");
        Vec::new()
    }

    async fn read_resource(&self, req: ReadRequest) -> ReadResponse {
        ReadResponse {
            new_state: req.current_state,
            private: req.private,
            diagnostics: Vec::new(),
        }
    }

    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        if req.proposed_new_state.is_null() {
            return PlanResponse::default();
        }
        let schema = thing_schema();
        let mut planned = req.proposed_new_state.clone();
        let replace = schema.requires_replace(&req.prior_state, &planned);
        if req.prior_state.is_null() || !replace.is_empty() {
            planned.set_attr("id", Value::Unknown);
        }
        PlanResponse {
            planned_state: planned,
            requires_replace: replace,
            ..Default::default()
        }
    }

    async fn apply_resource_change(&self, req: ApplyRequest) -> ApplyResponse {
        if req.planned_state.is_null() {
            tracing::info!("echo_thing destroyed");
            return ApplyResponse::default();
        }
        let Some(input) = req.planned_state.get("input").as_str() else {
            return ApplyResponse {
                new_state: req.prior_state,
                diagnostics: vec![Diagnostic::error("input is not known", "")],
                ..Default::default()
            };
        };
        let state = Value::object([
            ("input", Value::string(input)),
            ("id", Value::string(format!("echo-{input}"))),
        ]);
        tracing::info!(input, "echo_thing applied");
        ApplyResponse {
            new_state: state,
            ..Default::default()
        }
    }

    async fn read_data_source(&self, _type_name: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        let output = config.get("input").clone();
        (config.with("output", output), Vec::new())
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tfplugin::init_logging();
    match tfplugin::serve(Echo).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "provider stopped");
            std::process::ExitCode::FAILURE
        }
    }
}
