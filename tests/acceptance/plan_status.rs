//! `kudo_instance.plan_status`: KUDO's status tree of the last plan run, as the Instance
//! records it, in KUDO's spelling, with the failed step's message, and no sensitive
//! value in it. Package: `tests/fixtures/operators/day2` (plan `fail`: step `report`,
//! then step `boom`, whose Dummy task fails).

use serde_json::Value;

use crate::harness::{TestContext, own_operator};
use crate::semantics::{config, path_str};

#[test]
fn a_failed_plan_is_recorded_in_kudo_spelling_naming_the_step_without_secrets() {
    let ctx = TestContext::new("plan-status");
    let pkg = path_str(&own_operator("day2"));
    // "failed" is in the failing step's message: as a sensitive value it is redacted
    // there.
    let sensitive = "  sensitive_parameters = { MESSAGE = \"failed\" }\n";
    let with = |triggers: &[(&str, &str)]| {
        config(&pkg, "app", &[], triggers).replacen(
            "  operator  = kudo_operator.this.id\n",
            &format!("  operator  = kudo_operator.this.id\n{sensitive}"),
            1,
        )
    };
    ctx.write("main.tf", &with(&[]));
    ctx.tf.apply(&[]).assert_success();
    let status = plan_status(&ctx);
    assert_eq!(status["name"], "deploy", "{status:#}");
    assert_eq!(status["status"], "COMPLETE", "{status:#}");

    // Adding a plan trigger runs plan `fail` on the next apply.
    ctx.write("main.tf", &with(&[("fail", "1")]));
    ctx.tf.apply(&[]).assert_clean_error();
    ctx.tf.apply(&["-refresh-only"]).assert_success();
    let status = plan_status(&ctx);
    assert_eq!(status["name"], "fail", "{status:#}");
    assert_eq!(status["status"], "FATAL_ERROR", "{status:#}");
    let updated = status["last_updated"].as_str().unwrap_or_default();
    assert!(
        updated.len() >= 20 && updated.contains('T') && updated.ends_with('Z'),
        "last_updated is RFC 3339: {status:#}"
    );
    let phase = &status["phases"][0];
    assert_eq!(phase["name"], "checks", "{status:#}");
    let boom = phase["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["name"] == "boom"))
        .unwrap_or_else(|| panic!("no step boom: {status:#}"));
    assert_eq!(boom["status"], "FATAL_ERROR", "{status:#}");
    let message = boom["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("boom") && message.contains("(sensitive value)"),
        "{status:#}"
    );
    assert!(!message.contains("failed"), "{status:#}");
}

/// `plan_status` of `kudo_instance.this` in the state.
fn plan_status(ctx: &TestContext) -> Value {
    let state = ctx.tf.state();
    state
        .resource("kudo_instance.this")
        .map(|r| r["plan_status"].clone())
        .unwrap_or_else(|| panic!("no kudo_instance.this: {:#}", state.0))
}
