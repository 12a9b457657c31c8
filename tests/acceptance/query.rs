//! `terraform query` (Terraform 1.14+): `list "kudo_instance"` finds Instances made
//! without Terraform, and `-generate-config-out` writes configuration that adopts them.

use crate::harness::{Feature, PREAMBLE, TestContext, lacks};
use crate::skip;

/// `terraform query -generate-config-out=generated.tf`; every `expected` text must be in
/// the file (compared with spaces collapsed: Terraform aligns the `=` of neighbouring
/// lines). Returns the file.
fn generate_config(ctx: &TestContext, expected: &[&str]) -> String {
    ctx.tf
        .run(&["query", "-no-color", "-generate-config-out=generated.tf"])
        .assert_success();
    let generated =
        std::fs::read_to_string(ctx.workdir.join("generated.tf")).expect("generated.tf");
    let flat = generated.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in expected {
        assert!(
            flat.contains(expected),
            "{expected:?} missing from:\n{generated}"
        );
    }
    generated
}

/// Applies the generated configuration (the query file only lists, so it goes first);
/// the next plan must be empty. Returns the state after the apply.
fn adopt(ctx: &TestContext, generated: &str) -> crate::harness::State {
    std::fs::remove_file(ctx.workdir.join("find.tfquery.hcl")).expect("remove query file");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        plan.code,
        Some(0),
        "the generated configuration matches the cluster:\n{plan}\n{generated}"
    );
    state
}

#[test]
fn query_finds_instances_kudo_made_and_the_generated_configuration_adopts_them() {
    if let Some(why) = lacks(Feature::Query) {
        skip!("{why}");
    }
    let ctx = TestContext::new("query");
    let ns = ctx.namespace.as_str();
    crate::semantics::install_like_kudo(&ctx);
    ctx.write("main.tf", PREAMBLE);
    ctx.write(
        "find.tfquery.hcl",
        &format!(
            "list \"kudo_instance\" \"here\" {{\n  provider = kudo\n  config {{\n    namespace = {ns:?}\n  }}\n}}\n\nlist \"kudo_instance\" \"other_operator\" {{\n  provider = kudo\n  config {{\n    namespace = {ns:?}\n    operator  = \"zookeeper\"\n  }}\n}}\n"
        ),
    );

    let listed = ctx.tf.run(&["query", "-no-color"]).assert_success();
    let line = format!("{ns}/app (lifecycle-0.1.0)");
    assert!(listed.stdout.contains(&line), "{listed}");
    assert_eq!(
        listed.stdout.matches(&line).count(),
        1,
        "the operator filter leaves it out of the second list:\n{listed}"
    );

    let generated = generate_config(
        &ctx,
        &[
            "resource \"kudo_instance\"",
            "import {",
            &format!("operator = \"{ns}/lifecycle-0.1.0\""),
            "GREETING = \"hi\"",
        ],
    );
    let state = adopt(&ctx, &generated);
    let adopted: Vec<_> = state
        .resources()
        .into_iter()
        .filter(|r| r["type"] == "kudo_instance")
        .collect();
    assert_eq!(adopted.len(), 1, "{:#?}", state.resources());
    assert_eq!(
        adopted[0]["values"]["status"], "COMPLETE",
        "{:#}",
        adopted[0]
    );
    let kube = ctx.kube();
    assert!(kube.instance(ns, "app").is_some());
}

#[test]
fn query_finds_operators_kudo_installed_and_the_generated_configuration_keeps_them() {
    if let Some(why) = lacks(Feature::Query) {
        skip!("{why}");
    }
    let ctx = TestContext::new("query-operators");
    let ns = ctx.namespace.as_str();
    crate::semantics::install_like_kudo(&ctx);
    let ov_before = ctx.kube().must_get(
        "kudo.dev/v1beta1",
        "OperatorVersion",
        Some(ns),
        "lifecycle-0.1.0",
    );
    ctx.write("main.tf", PREAMBLE);
    ctx.write(
        "find.tfquery.hcl",
        &format!(
            "list \"kudo_operator\" \"here\" {{\n  provider = kudo\n  config {{\n    namespace = {ns:?}\n  }}\n}}\n\nlist \"kudo_instance\" \"here\" {{\n  provider = kudo\n  config {{\n    namespace = {ns:?}\n  }}\n}}\n"
        ),
    );
    let listed = ctx.tf.run(&["query", "-no-color"]).assert_success();
    assert!(
        listed.stdout.contains(&format!("{ns}/lifecycle-0.1.0\n"))
            || listed.stdout.contains(&format!("{ns}/lifecycle-0.1.0 ")),
        "{listed}"
    );

    let generated = generate_config(
        &ctx,
        &[
            "resource \"kudo_operator\"",
            &format!("package = \"cluster:{ns}/lifecycle-0.1.0\""),
            "resource \"kudo_instance\"",
            "identity = {",
        ],
    );
    let state = adopt(&ctx, &generated);
    let operators: Vec<_> = state
        .resources()
        .into_iter()
        .filter(|r| r["type"] == "kudo_operator")
        .collect();
    assert_eq!(operators.len(), 1, "{:#?}", state.resources());
    assert_eq!(
        operators[0]["values"]["package"],
        format!("cluster:{ns}/lifecycle-0.1.0")
    );
    // The OperatorVersion KUDO wrote is still the one in use, with its templates, tasks
    // and plans (the provider spells out each parameter's `value-type`, `string` when
    // the package leaves it unset).
    let ov_after = ctx.kube().must_get(
        "kudo.dev/v1beta1",
        "OperatorVersion",
        Some(ns),
        "lifecycle-0.1.0",
    );
    assert_eq!(ov_after["metadata"]["uid"], ov_before["metadata"]["uid"]);
    for field in ["templates", "tasks", "plans", "version", "operator"] {
        assert_eq!(ov_after["spec"][field], ov_before["spec"][field], "{field}");
    }
}
