//! The README's quickstart example, end to end, as a user runs it.

use serde_json::Value;

use crate::harness::TestContext;

const OV_NAME: &str = "webapp-1.27.0-0.1.0";

/// `kind/name` of every entry of a `kudo_instance.objects` attribute.
fn object_names(instance: &Value) -> Vec<String> {
    let mut names: Vec<String> = crate::harness::managed_objects(instance)
        .into_iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    names.sort();
    names
}

/// Checks that every `objects` entry carries the uid the object has in the cluster.
fn assert_uids_match_the_cluster(ctx: &TestContext, instance: &Value) {
    let kube = ctx.kube();
    let objects = crate::harness::managed_objects(instance);
    assert!(!objects.is_empty(), "{instance:#}");
    for o in objects {
        let field = |name: &str| {
            o[name]
                .as_str()
                .unwrap_or_else(|| panic!("no {name} in {o:#}"))
        };
        let namespace = Some(field("namespace")).filter(|ns| !ns.is_empty());
        let live = kube.must_get(
            field("api_version"),
            field("kind"),
            namespace,
            field("name"),
        );
        let uid = live["metadata"]["uid"]
            .as_str()
            .unwrap_or_else(|| panic!("no uid in the cluster: {live:#}"));
        assert!(!uid.is_empty(), "{live:#}");
        assert_eq!(field("uid"), uid, "uid in state vs cluster: {o:#}");
    }
}

#[test]
fn quickstart_apply_is_stable_and_destroy_is_clean() {
    let ctx = TestContext::new("quickstart");
    ctx.use_example("quickstart");
    let ns = ctx.namespace.as_str();

    ctx.tf.apply(&[]).assert_success().assert_no_crash();

    // What Terraform recorded.
    let state = ctx.tf.state();
    let op = state
        .resource("kudo_operator.webapp")
        .expect("operator in state");
    assert_eq!(op["id"], format!("{ns}/{OV_NAME}").as_str(), "{op:#}");
    assert_eq!(op["name"], "webapp");
    assert_eq!(op["operator_version"], "0.1.0");
    assert_eq!(op["app_version"], "1.27.0");
    assert_eq!(op["operator_version_name"], OV_NAME);

    let inst = state
        .resource("kudo_instance.web")
        .expect("instance in state");
    assert_eq!(inst["id"], format!("{ns}/web").as_str(), "{inst:#}");
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_eq!(inst["last_plan"], "deploy", "{inst:#}");
    // Defaults are filled in next to the values the configuration set.
    assert_eq!(inst["effective_parameters"]["REPLICAS"], "2", "{inst:#}");
    assert_eq!(
        inst["effective_parameters"]["IMAGE"], "nginx:1.27-alpine",
        "{inst:#}"
    );
    assert_eq!(
        object_names(inst),
        ["ConfigMap/web-content", "Deployment/web", "Service/web"],
        "{inst:#}"
    );
    assert_uids_match_the_cluster(&ctx, inst);

    let outputs = ctx.tf.outputs();
    assert_eq!(outputs["status"], "COMPLETE");
    assert_eq!(outputs["operator_version"], OV_NAME);

    // What the cluster holds.
    let kube = ctx.kube();
    kube.must_get("kudo.dev/v1beta1", "Operator", Some(ns), "webapp");
    let ov = kube.must_get("kudo.dev/v1beta1", "OperatorVersion", Some(ns), OV_NAME);
    assert_eq!(ov["spec"]["version"], "0.1.0", "{ov:#}");
    let instance = kube.instance(ns, "web").expect("Instance object");
    assert_eq!(
        instance["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
        "{instance:#}"
    );
    let deploy = kube.must_get("apps/v1", "Deployment", Some(ns), "web");
    assert_eq!(deploy["spec"]["replicas"], 2, "{deploy:#}");
    assert_eq!(
        deploy["metadata"]["labels"]["kudo.dev/instance"], "web",
        "{deploy:#}"
    );
    assert_eq!(
        deploy["metadata"]["labels"]["heritage"], "kudo",
        "{deploy:#}"
    );
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "web-content");
    assert_eq!(
        cm["data"]["MESSAGE"], "Hello from KUDO on Terraform",
        "{cm:#}"
    );
    kube.must_get("v1", "Service", Some(ns), "web");

    // A second plan right after apply must be empty: no perpetual diff.
    let again = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(again.code, Some(0), "no changes expected:\n{again}");
    assert!(again.stdout.contains("No changes"), "{again}");
    // That plan refreshed the state: the uids it read back are the ones apply recorded.
    assert_eq!(
        ctx.tf
            .state()
            .resource("kudo_instance.web")
            .expect("instance in state")["objects"],
        inst["objects"]
    );

    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let left = ctx.instance_objects("web");
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
    assert!(
        kube.instance(ns, "web").is_none(),
        "Instance left after destroy"
    );
    assert!(ctx.tf.state().is_empty(), "state not empty after destroy");
}

#[test]
fn quickstart_parameter_change_updates_the_objects() {
    let ctx = TestContext::new("quickstart-update");
    ctx.use_example("quickstart");
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success();

    // The plan shows an in-place update of the instance, not a replacement.
    let plan = ctx.tf.plan(&[
        "-detailed-exitcode",
        "-var=replicas=3",
        "-var=message=Updated",
    ]);
    assert_eq!(plan.code, Some(2), "expected changes:\n{plan}");
    assert!(
        plan.stdout
            .contains("kudo_instance.web will be updated in-place"),
        "{plan}"
    );
    assert!(
        plan.stdout.contains("0 to add, 1 to change, 0 to destroy"),
        "{plan}"
    );

    ctx.tf
        .apply(&["-var=replicas=3", "-var=message=Updated"])
        .assert_success();
    let state = ctx.tf.state();
    let inst = state
        .resource("kudo_instance.web")
        .expect("instance in state");
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_eq!(inst["effective_parameters"]["REPLICAS"], "3", "{inst:#}");

    let kube = ctx.kube();
    let deploy = kube.must_get("apps/v1", "Deployment", Some(ns), "web");
    assert_eq!(deploy["spec"]["replicas"], 3, "{deploy:#}");
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "web-content");
    assert_eq!(cm["data"]["MESSAGE"], "Updated", "{cm:#}");
    let instance = kube.instance(ns, "web").expect("Instance object");
    assert_eq!(
        instance["spec"]["parameters"]["REPLICAS"], "3",
        "{instance:#}"
    );

    ctx.tf
        .plan(&[
            "-detailed-exitcode",
            "-var=replicas=3",
            "-var=message=Updated",
        ])
        .assert_success()
        .assert_output_contains("No changes");
}

#[test]
fn a_service_deleted_out_of_band_is_restored_by_the_next_apply() {
    let ctx = TestContext::new("drift");
    ctx.use_example("quickstart");
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success();

    // What `kubectl delete service web` does.
    ctx.kube().delete("v1", "Service", Some(ns), "web");

    // The refresh notices, and the plan proposes running deploy again.
    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(plan.code, Some(2), "a change is proposed:\n{plan}");
    assert!(plan.stdout.contains("DRIFTED"), "{plan}");
    assert!(
        plan.stdout
            .contains("kudo_instance.web will be updated in-place"),
        "{plan}"
    );

    ctx.tf.apply(&[]).assert_success();
    ctx.kube().must_get("v1", "Service", Some(ns), "web");
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.web", "status"),
        "COMPLETE"
    );
    // The re-created Service is recorded with its new uid.
    let state = ctx.tf.state();
    assert_uids_match_the_cluster(&ctx, state.resource("kudo_instance.web").expect("instance"));
    let again = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        again.code,
        Some(0),
        "repaired, nothing left to do:\n{again}"
    );
}

/// The quickstart example without its `timeouts` block: timeouts live only in
/// Terraform's configuration and state, never in the cluster, so a configuration that
/// matches an import has none.
pub(crate) fn use_quickstart_without_timeouts(ctx: &TestContext) {
    ctx.use_example("quickstart");
    let main_tf = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("main.tf");
    let start = main_tf
        .find("  timeouts {")
        .expect("the example sets timeouts");
    let end = start + main_tf[start..].find("  }\n").expect("end of timeouts") + 4;
    ctx.write(
        "main.tf",
        &format!("{}{}", &main_tf[..start], &main_tf[end..]),
    );
}

/// The quickstart installed, then `kudo_instance.web` removed from the state: Terraform
/// forgets the instance, the cluster still has it (what both import tests adopt).
fn installed_then_forgotten(test: &str) -> TestContext {
    let ctx = TestContext::new(test);
    use_quickstart_without_timeouts(&ctx);
    ctx.tf.apply(&[]).assert_success();
    ctx.tf
        .run(&["state", "rm", "kudo_instance.web"])
        .assert_success();
    assert!(ctx.kube().instance(&ctx.namespace, "web").is_some());
    ctx
}

/// An `import` block by id (Terraform 1.5+, OpenTofu 1.6+): the plan says it imports,
/// the apply adopts the instance as `terraform import` does, and the next plan is empty.
#[test]
fn an_import_block_by_id_adopts_the_instance_and_the_next_plan_is_empty() {
    let ctx = installed_then_forgotten("import-block");
    let ns = ctx.namespace.as_str();
    ctx.write(
        "imports.tf",
        &format!("import {{\n  to = kudo_instance.web\n  id = \"{ns}/web\"\n}}\n"),
    );
    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_output_contains("Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.web", "status"), "COMPLETE");
    assert_eq!(
        state.attr_str("kudo_instance.web", "operator"),
        format!("{ns}/{OV_NAME}")
    );
    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        plan.code,
        Some(0),
        "the import block leaves nothing to do:\n{plan}"
    );
}

#[test]
fn an_existing_instance_is_imported_and_the_next_plan_is_empty() {
    let ctx = installed_then_forgotten("import");
    let ns = ctx.namespace.as_str();

    ctx.tf
        .import("kudo_instance.web", &format!("{ns}/web"), &[])
        .assert_success();
    let state = ctx.tf.state();
    let instance = state.resource("kudo_instance.web").expect("imported");
    assert_eq!(instance["status"], "COMPLETE", "{instance:#}");
    assert_eq!(instance["operator"], format!("{ns}/{OV_NAME}").as_str());
    assert!(
        object_names(instance).contains(&"Service/web".to_string()),
        "{instance:#}"
    );
    assert_uids_match_the_cluster(&ctx, instance);
    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        plan.code,
        Some(0),
        "configuration matches the import:\n{plan}"
    );
}

#[test]
fn an_object_re_created_out_of_band_is_drift_and_gets_its_new_uid() {
    let ctx = TestContext::new("recreated");
    ctx.use_example("quickstart");
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success();
    let kube = ctx.kube();
    let before = kube.must_get("v1", "ConfigMap", Some(ns), "web-content");

    // `kubectl delete` then `kubectl apply` of a hand-written copy: same name, but a
    // new object whose content nobody vouches for.
    kube.delete("v1", "ConfigMap", Some(ns), "web-content");
    let copy = kube.apply(&serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": "web-content", "namespace": ns },
        "data": { "MESSAGE": "edited by hand" },
    }));
    assert_ne!(copy["metadata"]["uid"], before["metadata"]["uid"]);

    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(plan.code, Some(2), "a change is proposed:\n{plan}");
    assert!(plan.stdout.contains("DRIFTED"), "{plan}");

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "web-content");
    assert_eq!(
        cm["data"]["MESSAGE"], "Hello from KUDO on Terraform",
        "{cm:#}"
    );
    let state = ctx.tf.state();
    let inst = state.resource("kudo_instance.web").expect("instance");
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_uids_match_the_cluster(&ctx, inst);
    let again = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        again.code,
        Some(0),
        "repaired, nothing left to do:\n{again}"
    );
}
