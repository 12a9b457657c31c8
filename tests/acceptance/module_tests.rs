//! `examples/terraform/module-tests`: its `terraform test` files run green with the
//! real Terraform, the plan-only file against a mocked provider and the apply file
//! against the test cluster (kube-sim, or `KUDO_TEST_KUBECONFIG`).

use crate::harness::{TestContext, flat};

#[test]
fn the_example_modules_terraform_tests_pass_mocked_and_against_the_cluster() {
    let ctx = TestContext::new("module-tests");
    ctx.use_example("module-tests");
    let run = ctx
        .tf
        .run(&["test", "-no-color"])
        .assert_success()
        .assert_no_crash();
    let out = flat(&run.stdout);
    for (file, runs) in [
        (
            "tests/unit.tftest.hcl",
            &[
                "plans_the_instance_with_the_given_parameters",
                "rejects_a_parameter_the_package_does_not_declare",
                "rejects_a_value_of_the_wrong_type",
            ][..],
        ),
        (
            "tests/integration.tftest.hcl",
            &["deploys_the_instance", "updates_a_parameter"][..],
        ),
    ] {
        assert!(out.contains(&format!("{file}... pass")), "{file}:\n{out}");
        for r in runs {
            assert!(
                out.contains(&format!("run \"{r}\"... pass")),
                "{file} {r}:\n{out}"
            );
        }
    }
    assert!(out.contains("5 passed, 0 failed"), "{out}");
    // `terraform test` destroys what its apply runs created.
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("web").is_empty());
}

#[test]
fn a_failing_assertion_fails_terraform_test() {
    // The check above is only worth something if a wrong expectation turns it red.
    let ctx = TestContext::new("module-tests-red");
    ctx.use_example("module-tests");
    let unit = ctx.workdir.join("tests/unit.tftest.hcl");
    let text = std::fs::read_to_string(&unit).expect("unit test file");
    std::fs::write(&unit, text.replace("== \"3\"", "== \"4\"")).expect("write");
    std::fs::remove_file(ctx.workdir.join("tests/integration.tftest.hcl")).expect("remove");
    let run = ctx.tf.run(&["test", "-no-color"]);
    assert!(!run.success(), "{run}");
    assert!(
        flat(&run.output()).contains("REPLICAS is not passed to the instance"),
        "{run}"
    );
    ctx.mark_cleaned();
}
