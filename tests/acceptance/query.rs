//! `terraform query` (Terraform 1.14+): `list "kudo_instance"` finds Instances made
//! without Terraform, and `-generate-config-out` writes configuration that adopts them.

use crate::harness::{PREAMBLE, TestContext, terraform_version};
use crate::skip;

#[test]
fn query_finds_instances_kudo_made_and_the_generated_configuration_adopts_them() {
    if terraform_version() < (1, 14) {
        skip!(
            "terraform query needs Terraform 1.14 or later; this is {:?}",
            terraform_version()
        );
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

    ctx.tf
        .run(&["query", "-no-color", "-generate-config-out=generated.tf"])
        .assert_success();
    let generated =
        std::fs::read_to_string(ctx.workdir.join("generated.tf")).expect("generated.tf");
    // Terraform aligns the `=` of neighbouring lines; compare with spaces collapsed.
    let flat = generated.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "resource \"kudo_instance\"",
        "import {",
        &format!("operator = \"{ns}/lifecycle-0.1.0\""),
        "GREETING = \"hi\"",
    ] {
        assert!(
            flat.contains(expected),
            "{expected:?} missing from:\n{generated}"
        );
    }
    // The query file only lists; applying adopts what was generated.
    std::fs::remove_file(ctx.workdir.join("find.tfquery.hcl")).expect("remove query file");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
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
    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        plan.code,
        Some(0),
        "the generated configuration matches the instance:\n{plan}\n{generated}"
    );
    let kube = ctx.kube();
    assert!(kube.instance(ns, "app").is_some());
}
