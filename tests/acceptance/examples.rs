//! The examples under `examples/terraform/`, run as a user would: `terraform fmt
//! -check`, `terraform validate`, apply, a change, destroy.

use serde_json::Value;

use crate::harness::TestContext;

/// Copies the example in and checks what `terraform fmt` and `validate` say.
fn prepare(name: &str) -> TestContext {
    let ctx = TestContext::new(&format!("example-{name}"));
    ctx.use_example(name);
    ctx.tf
        .run(&["fmt", "-check", "-recursive", "-no-color"])
        .assert_success();
    if ctx.workdir.join("modules").is_dir() {
        // Local modules must be "installed" (linked) before validate; providers come
        // from the test's dev override, so `init` is not needed.
        ctx.tf.run(&["get", "-no-color"]).assert_success();
    }
    ctx.tf
        .run(&["validate", "-no-color"])
        .assert_success()
        .assert_output_contains("The configuration is valid");
    ctx
}

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v:#}"))
        .to_string()
}

fn connection(ns: &str, size: usize) -> String {
    (0..size)
        .map(|i| format!("zk-{i}.zk-hs.{ns}:2181"))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn composition_feeds_one_instances_output_into_another_and_updates_both_in_one_apply() {
    let ctx = prepare("composition");
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success().assert_no_crash();

    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["zookeeper_connection"]), connection(ns, 3));
    assert_eq!(
        outputs["broker_zk_uri"], outputs["zookeeper_connection"],
        "{outputs:#?}"
    );
    let kube = ctx.kube();
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "broker-config");
    assert_eq!(
        text(&cm["data"]["server.properties"]).trim(),
        format!("zookeeper.connect={}", connection(ns, 3)),
        "{cm:#}"
    );

    // One plan shows both instances changing; one apply does both.
    let plan = ctx.tf.plan(&["-var", "zookeeper_size=5"]).assert_success();
    for address in [
        "module.zookeeper.kudo_instance.zk",
        "module.broker.kudo_instance.broker",
    ] {
        assert!(
            plan.stdout
                .contains(&format!("{address} will be updated in-place")),
            "{address} is not updated by the size change:\n{}",
            plan.stdout
        );
    }
    ctx.tf
        .apply(&["-var", "zookeeper_size=5"])
        .assert_success()
        .assert_no_crash();
    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["zookeeper_connection"]), connection(ns, 5));
    assert_eq!(text(&outputs["broker_zk_uri"]), connection(ns, 5));
    let sts = kube.must_get("apps/v1", "StatefulSet", Some(ns), "zk");
    assert_eq!(sts["spec"]["replicas"], 5, "{sts:#}");
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "broker-config");
    assert!(
        text(&cm["data"]["server.properties"]).contains(&connection(ns, 5)),
        "{cm:#}"
    );
    ctx.tf
        .plan(&["-var", "zookeeper_size=5", "-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    ctx.tf
        .destroy(&["-var", "zookeeper_size=5"])
        .assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("zk").is_empty());
    assert!(ctx.instance_objects("broker").is_empty());
}

#[test]
fn extension_example_runs_the_base_deploy_and_an_added_plan() {
    let ctx = prepare("extension");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(text(&ctx.tf.outputs()["last_plan"]), "deploy");
    assert!(
        !ctx.instance_objects("db").is_empty(),
        "the base's deploy plan created nothing"
    );

    let load = ["-var", r#"triggers={load="1"}"#];
    ctx.tf.apply(&load).assert_success();
    assert_eq!(text(&ctx.tf.outputs()["last_plan"]), "load");
    let instance = ctx
        .kube()
        .instance(&ctx.namespace, "db")
        .expect("Instance object");
    assert_eq!(
        instance["status"]["planStatus"]["load"]["status"], "COMPLETE",
        "{instance:#}"
    );

    ctx.tf.destroy(&load).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("db").is_empty());
}
