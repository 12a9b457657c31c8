//! Real KUDO packages from `../shared/fixtures/operators`: install, check the objects,
//! a second plan is empty, destroy leaves nothing behind.

use std::path::Path;

use serde_json::Value;

use crate::harness::{State, TestContext, fixture_operator};
use crate::skip;

/// A root module installing `package` as `kudo_instance.this` named `instance`.
fn config(package: &Path, instance: &str, params: &[(&str, &str)]) -> String {
    crate::harness::package_config(package, "this", instance, params)
}

/// Apply, check state and the Instance object, then check that a second plan is
/// empty. Returns the state for package-specific checks.
fn install(ctx: &TestContext, instance: &str) -> State {
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let inst = state
        .resource("kudo_instance.this")
        .expect("instance in state");
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_eq!(inst["last_plan"], "deploy", "{inst:#}");
    let obj = ctx
        .kube()
        .instance(&ctx.namespace, instance)
        .expect("Instance object exists");
    assert_eq!(
        obj["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
        "{obj:#}"
    );

    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    state
}

/// Destroy, then nothing labelled with the instance may remain.
fn uninstall(ctx: &TestContext, instance: &str) {
    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let left = ctx.left_after_destroy(instance, &destroy.output());
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
    assert!(ctx.kube().instance(&ctx.namespace, instance).is_none());
}

/// The `objects` entry of a given kind, so tests follow the apiVersion the package
/// actually used (e.g. policy/v1beta1 for zookeeper's PDB).
fn object_of_kind<'a>(state: &'a State, kind: &str) -> &'a Value {
    let inst = state
        .resource("kudo_instance.this")
        .expect("instance in state");
    crate::harness::managed_objects(inst)
        .into_iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in objects: {inst:#}"))
}

#[test]
fn zookeeper_with_three_nodes() {
    let Some(pkg) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let ctx = TestContext::new("zookeeper");
    ctx.write("main.tf", &config(&pkg, "zk", &[("NODE_COUNT", "3")]));
    let ns = ctx.namespace.as_str();
    let state = install(&ctx, "zk");

    let kube = ctx.kube();
    let sts = kube.must_get("apps/v1", "StatefulSet", Some(ns), "zk-zookeeper");
    assert_eq!(sts["spec"]["replicas"], 3, "{sts:#}");
    assert_eq!(
        sts["metadata"]["labels"]["kudo.dev/instance"], "zk",
        "{sts:#}"
    );
    // KUDO labels pod templates too, so selectors such as the PDB's match the pods.
    assert_eq!(
        sts["spec"]["template"]["metadata"]["labels"]["kudo.dev/instance"], "zk",
        "{sts:#}"
    );
    for svc in ["zk-hs", "zk-cs"] {
        kube.must_get("v1", "Service", Some(ns), svc);
    }
    let pdb = object_of_kind(&state, "PodDisruptionBudget");
    let pdb_api = pdb["api_version"].as_str().expect("api_version");
    kube.must_get(pdb_api, "PodDisruptionBudget", Some(ns), "zk-pdb");
    // The deploy plan's last step deletes the validation Job it ran.
    assert!(
        kube.get("batch/v1", "Job", Some(ns), "zk-validation")
            .is_none(),
        "validation Job should be removed by the cleanup step"
    );

    uninstall(&ctx, "zk");
}

#[test]
fn first_operator_lifecycle() {
    let Some(pkg) = fixture_operator("first-operator") else {
        skip!("../shared/fixtures/operators/first-operator not found (clone without ../shared)");
    };
    let ctx = TestContext::new("first-operator");
    ctx.write("main.tf", &config(&pkg, "first", &[]));
    let ns = ctx.namespace.as_str();
    let state = install(&ctx, "first");

    let inst = state.resource("kudo_instance.this").expect("instance");
    assert_eq!(inst["effective_parameters"]["replicas"], "2", "{inst:#}");
    // The template names no namespace: KUDO puts namespaced objects in the instance's.
    let deploy = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "nginx-deployment");
    assert_eq!(deploy["spec"]["replicas"], 2, "{deploy:#}");
    assert_eq!(
        deploy["metadata"]["labels"]["kudo.dev/operator"], "first-operator",
        "{deploy:#}"
    );

    uninstall(&ctx, "first");
}

/// The packages folder the all-packages test reads: `KUDO_TEST_OPERATORS` (for example
/// the `repository/*/operator` folders of kudobuilder/operators, extracted one folder per
/// package), else the shared fixtures.
fn all_packages() -> Vec<std::path::PathBuf> {
    let dir = match std::env::var_os("KUDO_TEST_OPERATORS") {
        Some(d) => std::path::PathBuf::from(d),
        None => match fixture_operator("zookeeper").and_then(|z| z.parent().map(Path::to_path_buf))
        {
            Some(d) => d,
            None => return Vec::new(),
        },
    };
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("operator.yaml").is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Pipe tasks need a container runtime, and packages with dependencies need theirs at
/// paths or repositories of their own: both have tests of their own.
fn standalone_without_pipe(package: &Path) -> bool {
    let text = std::fs::read_to_string(package.join("operator.yaml")).unwrap_or_default();
    !text.contains("kind: Pipe") && !text.contains("kind: KudoOperator")
}

/// Every real package without a Pipe task installs with its defaults, plans empty
/// again and destroys clean: the promise made to KUDO's users, checked package by
/// package; the failures are reported together.
#[test]
fn every_package_without_a_pipe_task_installs_with_its_defaults() {
    let packages: Vec<_> = all_packages()
        .into_iter()
        .filter(|p| standalone_without_pipe(p))
        .collect();
    if packages.is_empty() {
        skip!("no operator packages (../shared/fixtures/operators or KUDO_TEST_OPERATORS)");
    }
    let mut failures = Vec::new();
    for package in &packages {
        let name = package
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let ctx = TestContext::new(&format!("all-{name}"));
        ctx.write("main.tf", &config(package, &name, &[]));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            install(&ctx, &name);
            uninstall(&ctx, &name);
        }));
        match outcome {
            Ok(()) => eprintln!("[all-packages] {name}: installed, planned empty, destroyed clean"),
            Err(e) => {
                let why = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                eprintln!("[all-packages] {name}: FAILED");
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
