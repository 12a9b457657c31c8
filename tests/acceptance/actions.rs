//! `action "kudo_plan"` (Terraform 1.14+): a named plan of an instance run on demand
//! with `terraform apply -invoke=...` or from a resource's `action_trigger`, as
//! `kubectl kudo plan trigger` runs it.

use serde_json::Value;

use crate::harness::{Feature, TestContext, fixture_operator, flat, lacks, own_operator};
use crate::semantics::{completed_plan_status, config, destroy_leaves_nothing, path_str};
use crate::skip;

/// Why the client in use cannot run actions (Terraform before 1.14, OpenTofu).
fn without_actions() -> Option<String> {
    lacks(Feature::Actions)
}

/// `action "kudo_plan" "<name>"` running `plan` of `kudo_instance.this`, triggered by
/// that instance's `action_trigger`. Terraform 1.16 refuses an action that references
/// its triggering resource as a cycle ("action reference cycle", with the warning
/// "Reference to triggering resource") and names the resource `caller` there; 1.14 and
/// 1.15 have no `caller`.
fn triggered_action(name: &str, plan: &str) -> String {
    let action = action(name, plan, "");
    if crate::harness::terraform_version() >= (1, 16) {
        action.replace("kudo_instance.this.id", "caller.id")
    } else {
        action
    }
}

/// `action "kudo_plan" "<name>"` running `plan` of `kudo_instance.this`, with `extra`
/// lines inside `config`.
fn action(name: &str, plan: &str, extra: &str) -> String {
    format!(
        r#"
action "kudo_plan" "{name}" {{
  config {{
    instance = kudo_instance.this.id
    plan     = "{plan}"
{extra}  }}
}}
"#
    )
}

/// The day2 package (`tests/fixtures/operators/day2`) installed as instance `app`, with
/// the actions given appended.
fn day2(ctx: &TestContext, actions: &str) {
    let pkg = path_str(&own_operator("day2"));
    ctx.write(
        "main.tf",
        &format!("{}{actions}", config(&pkg, "app", &[], &[])),
    );
}

/// `terraform apply -invoke=action.kudo_plan.<name>`.
fn invoke(ctx: &TestContext, name: &str) -> crate::harness::TfRun {
    ctx.tf.apply(&[&format!("-invoke=action.kudo_plan.{name}")])
}

/// `status.planStatus.<plan>` of the Instance, whatever its state.
fn plan_status(ctx: &TestContext, instance: &str, plan: &str) -> Value {
    ctx.kube()
        .instance(&ctx.namespace, instance)
        .map(|i| i["status"]["planStatus"][plan].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn an_action_runs_mysql_backup_and_reports_each_step() {
    if let Some(why) = without_actions() {
        skip!("{why}");
    }
    let Some(pkg) = fixture_operator("mysql") else {
        skip!("../shared/fixtures/operators/mysql not found (clone without ../shared)");
    };
    let ctx = TestContext::new("action-backup");
    let ns = ctx.namespace.as_str();
    let main = config(&path_str(&pkg), "db", &[], &[]);
    let backup = action(
        "backup",
        "backup",
        "    parameters = { BACKUP_FILE = \"nightly.sql\" }\n",
    );
    ctx.write("main.tf", &format!("{main}{backup}"));
    ctx.tf.apply(&[]).assert_success();
    assert!(
        plan_status(&ctx, "db", "backup")["status"] != "COMPLETE",
        "an apply does not run the backup plan"
    );

    // The action's plan says what it will run, before it runs.
    let planned = ctx
        .tf
        .plan(&["-invoke=action.kudo_plan.backup"])
        .assert_success();
    let shown = flat(&planned.output());
    for text in [
        &format!("kudo_plan runs plan backup of instance {ns}/db"),
        "- phase backup (serial): pv, backup, cleanup",
    ] {
        assert!(
            shown.contains(text),
            "the action's plan lacks {text:?}:\n{planned}"
        );
    }
    let run = invoke(&ctx, "backup").assert_success().assert_no_crash();
    let out = flat(&run.output());
    for line in [
        "instance db plan backup: phase backup started",
        "instance db plan backup: step backup/pv started",
        "instance db plan backup: step backup/pv complete",
        "instance db plan backup: step backup/backup complete",
        "instance db plan backup: step backup/cleanup complete",
        "instance db plan backup: phase backup complete",
    ] {
        assert!(out.contains(line), "missing progress {line:?}:\n{run}");
    }
    // Every step ran, and the Job had the value the action set.
    let status = completed_plan_status(&ctx, "db", "backup");
    let steps: Vec<&str> = status["phases"][0]["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["status"] == "COMPLETE")
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(steps, ["pv", "backup", "cleanup"], "{status:#}");
    let instance = ctx.kube().instance(ns, "db").expect("Instance");
    assert_eq!(
        instance["spec"]["parameters"]["BACKUP_FILE"], "nightly.sql",
        "{instance:#}"
    );
    assert!(
        ctx.kube()
            .get("v1", "PersistentVolumeClaim", Some(ns), "db-backup-pv")
            .is_some()
    );
    // The deploy plan's record stays, and Terraform sees nothing to do.
    completed_plan_status(&ctx, "db", "deploy");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    // What the backup made goes with the instance.
    destroy_leaves_nothing(&ctx, "db");
}

#[test]
fn a_failing_plan_fails_the_action_with_the_failed_step() {
    if let Some(why) = without_actions() {
        skip!("{why}");
    }
    let ctx = TestContext::new("action-fail");
    day2(&ctx, &action("fail", "fail", ""));
    ctx.tf.apply(&[]).assert_success();

    let run = invoke(&ctx, "fail").assert_clean_error();
    let out = flat(&run.output());
    assert!(out.contains("Plan fail of instance app failed"), "{run}");
    assert!(
        out.contains("step checks/report complete") && out.contains("step checks/boom failed: "),
        "progress up to the failure:\n{run}"
    );
    // The status tree, as the Instance records it.
    assert!(
        out.contains("Plan fail [FATAL_ERROR]")
            && out.contains("Step report [COMPLETE]")
            && out.contains("Step boom [FATAL_ERROR]: ")
            && out.contains("dummy task failed as configured"),
        "{run}"
    );
    let status = plan_status(&ctx, "app", "fail");
    assert_eq!(status["status"], "FATAL_ERROR", "{status:#}");
    // The instance itself is as Terraform left it.
    completed_plan_status(&ctx, "app", "deploy");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

#[test]
fn ctrl_c_stops_an_action_and_leaves_the_instance_consistent() {
    if let Some(why) = without_actions() {
        skip!("{why}");
    }
    let ctx = TestContext::new("action-interrupt");
    day2(
        &ctx,
        &format!(
            "{}{}",
            action("hang", "hang", ""),
            action("report", "report", "")
        ),
    );
    ctx.tf.apply(&[]).assert_success();

    // Interrupted once its step is running (a Dummy task that never finishes).
    let run = ctx.tf.run_interrupted_when(
        &[
            "apply",
            "-input=false",
            "-no-color",
            "-auto-approve",
            "-invoke=action.kudo_plan.hang",
        ],
        || plan_status(&ctx, "app", "hang")["phases"][0]["steps"][0]["status"] == "IN_PROGRESS",
    );
    assert!(!run.timed_out && run.code.is_some_and(|c| c != 0), "{run}");
    let out = flat(&run.output());
    assert!(out.contains("Plan hang of instance app failed"), "{run}");
    assert!(out.contains("cancelled"), "{run}");
    // The Instance says the plan stopped; it is not left running.
    let status = plan_status(&ctx, "app", "hang");
    assert_eq!(status["status"], "ERROR", "{status:#}");
    assert_eq!(
        status["phases"][0]["steps"][0]["status"], "ERROR",
        "{status:#}"
    );
    // And everything still works: Terraform sees no change, another plan runs.
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    invoke(&ctx, "report").assert_success();
    completed_plan_status(&ctx, "app", "report");
    destroy_leaves_nothing(&ctx, "app");
}

#[test]
fn an_action_times_out_naming_its_timeout() {
    if let Some(why) = without_actions() {
        skip!("{why}");
    }
    let ctx = TestContext::new("action-timeout");
    day2(&ctx, &action("hang", "hang", "    timeout = \"1s\"\n"));
    ctx.tf.apply(&[]).assert_success();
    let run = invoke(&ctx, "hang").assert_clean_error();
    assert!(
        flat(&run.output()).contains("did not finish within the 1s allowed by `timeout`"),
        "{run}"
    );
    assert_eq!(plan_status(&ctx, "app", "hang")["status"], "ERROR");
}

#[test]
fn parameters_of_other_plans_and_unknown_plans_fail_the_plan() {
    if let Some(why) = without_actions() {
        skip!("{why}");
    }
    let ctx = TestContext::new("action-refusals");
    let actions = [
        action(
            "configures",
            "report",
            "    parameters = { MESSAGE = \"changed\" }\n",
        ),
        action(
            "undeclared",
            "report",
            "    parameters = { NO_SUCH = \"x\" }\n",
        ),
        action("missing", "no-such-plan", ""),
    ]
    .concat();
    day2(&ctx, &actions);
    ctx.tf.apply(&[]).assert_success();
    let cases = [
        (
            "configures",
            "\"MESSAGE\" is not one: it has no `trigger`, so it configures the instance",
        ),
        ("undeclared", "declares no parameter \"NO_SUCH\""),
        (
            "missing",
            "has no plan \"no-such-plan\"; its plans are deploy, fail, hang, report, rotate",
        ),
    ];
    for (name, message) in cases {
        let run = ctx
            .tf
            .plan(&[&format!("-invoke=action.kudo_plan.{name}")])
            .assert_clean_error();
        assert!(flat(&run.output()).contains(message), "{name}: {run}");
    }
    // Nothing ran.
    let instance = ctx
        .kube()
        .instance(&ctx.namespace, "app")
        .expect("Instance");
    assert!(
        instance["spec"]["parameters"]["MESSAGE"].is_null(),
        "{instance:#}"
    );
    assert!(plan_status(&ctx, "app", "report")["status"] != "COMPLETE");
}

/// `app-key`'s random value: rendered from the instance's seed.
fn key(ctx: &TestContext) -> String {
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-key")["data"]["key"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_plan_using_the_seed_runs_from_action_trigger_and_is_refused_by_invoke() {
    if let Some(why) = without_actions() {
        skip!("{why}");
    }
    let ctx = TestContext::new("action-seed");
    let pkg = path_str(&own_operator("day2"));
    let with_trigger = |message: &str| {
        config(&pkg, "app", &[("MESSAGE", message)], &[]).replace(
            "  operator  = kudo_operator.this.id\n",
            "  operator  = kudo_operator.this.id\n  lifecycle {\n    action_trigger {\n      events  = [after_update]\n      actions = [action.kudo_plan.rotate]\n    }\n  }\n",
        ) + &triggered_action("rotate", "rotate")
    };
    ctx.write("main.tf", &with_trigger("one"));
    ctx.tf.apply(&[]).assert_success();
    let generated = key(&ctx);
    assert!(plan_status(&ctx, "app", "rotate")["status"] != "COMPLETE");

    // Invoked alone, the action cannot know the seed: refused before anything runs.
    let run = invoke(&ctx, "rotate").assert_clean_error();
    assert!(
        flat(&run.output())
            .contains("Task \"key\" of plan \"rotate\" renders differently for each seed"),
        "{run}"
    );
    assert!(plan_status(&ctx, "app", "rotate")["status"] != "COMPLETE");

    // Triggered by the instance's update, the apply hands the seed over: the plan runs
    // and the generated value stays what it was.
    ctx.write("main.tf", &with_trigger("two"));
    let run = ctx.tf.apply(&[]).assert_success();
    assert!(
        flat(&run.output()).contains("instance app plan rotate: step rotate/key complete"),
        "{run}"
    );
    completed_plan_status(&ctx, "app", "rotate");
    assert_eq!(key(&ctx), generated);
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

/// A `kudo_plan` configuration, as Terraform sends it.
fn action_value(instance: tfplugin::Value, plan: &str, timeout: Option<&str>) -> tfplugin::Value {
    use tfplugin::Value as V;
    crate::harness::rpc::value_of(
        "kudo_plan",
        [
            ("instance", instance),
            ("plan", V::string(plan)),
            ("timeout", V::opt_string(timeout)),
        ],
    )
}

#[test]
fn bad_values_name_their_attribute() {
    use crate::harness::rpc::{KudoProvider, block_on, text};
    use tfplugin::Provider;

    let config = action_value(tfplugin::Value::string("Bad_NS!/db"), "", Some("-1s"));
    let problems = block_on(KudoProvider::new().validate_action_config("kudo_plan", config));
    let attributes: Vec<String> = problems
        .iter()
        .map(|d| format!("{:?}", d.attribute))
        .collect();
    assert_eq!(problems.len(), 3, "{}", text(&problems));
    for name in ["instance", "plan", "timeout"] {
        assert!(
            attributes.iter().any(|a| a.contains(name)),
            "{name}: {attributes:?}"
        );
    }
}

/// An action whose instance an earlier resource of the same apply makes is planned
/// without a look at the cluster (here: nothing listens at `host`).
#[test]
fn unknown_values_wait_for_the_apply() {
    use crate::harness::rpc::{block_on, configured, provider_block, text};
    use tfplugin::{Provider, Value};

    let provider = configured(provider_block([(
        "host",
        Value::string("https://127.0.0.1:1"),
    )]));
    let config = action_value(Value::Unknown, "backup", None);
    let diags = block_on(provider.plan_action("kudo_plan", config));
    assert!(diags.is_empty(), "{}", text(&diags));
    // The same action with the instance known does ask the cluster.
    let config = action_value(Value::string("x"), "backup", None);
    let diags = block_on(provider.plan_action("kudo_plan", config));
    assert!(text(&diags).contains("Cannot reach"), "{}", text(&diags));
}

/// `instance` is `<namespace>/<name>` or a name in namespace `default`, as the refusal
/// of a missing instance says (`InvokeAction` over the plugin protocol).
#[test]
fn the_instance_is_namespace_and_name_or_a_name_in_default() {
    use crate::harness::plugin::{Plugin, capabilities, dynamic, errors};
    use tfplugin::proto::tfplugin6 as pb;

    let ctx = TestContext::new("action-instance");
    let ns = ctx.namespace.clone();
    let plugin = Plugin::start(&ctx.workdir, &ctx.tf.env);
    let ty = crate::harness::rpc::schemas().actions["kudo_plan"].value_type();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let cases = [
        (
            format!("{ns}/kudo-test-absent"),
            None,
            format!("There is no Instance kudo-test-absent in namespace {ns}"),
        ),
        (
            "kudo-test-absent".to_string(),
            Some("90s"),
            "There is no Instance kudo-test-absent in namespace default".to_string(),
        ),
    ];
    runtime.block_on(async {
        let mut client = plugin
            .configured(
                &tfplugin::Value::object(Vec::<(String, tfplugin::Value)>::new()),
                crate::harness::rpc::TERRAFORM_VERSION,
            )
            .await;
        for (instance, timeout, expected) in cases {
            let config = action_value(tfplugin::Value::string(&instance), "backup", timeout);
            let mut events = client
                .invoke_action(pb::invoke_action::Request {
                    action_type: "kudo_plan".into(),
                    config: dynamic(&config, &ty),
                    client_capabilities: Some(capabilities()),
                })
                .await
                .expect("InvokeAction")
                .into_inner();
            let mut diagnostics = Vec::new();
            while let Some(event) = events.message().await.expect("an event") {
                if let Some(pb::invoke_action::event::Type::Completed(done)) = event.r#type {
                    diagnostics.extend(done.diagnostics);
                }
            }
            let text = errors(&diagnostics);
            assert!(text.contains(&expected), "{instance}: {text}");
        }
    });
}
