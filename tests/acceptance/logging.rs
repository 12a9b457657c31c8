//! Provider logs reach Terraform's log, as with any Terraform provider: go-plugin
//! re-logs each JSON (hclog) line of the plugin's stderr under the logger
//! `provider.<binary name>` and appends the entry's `timestamp=`.

use crate::harness::TestContext;

#[test]
fn tf_log_debug_shows_provider_log_lines() {
    let ctx = TestContext::new("logging");
    ctx.use_example("quickstart");
    let run = ctx
        .tf
        .run_with_env(
            &["plan", "-input=false", "-no-color"],
            &[("TF_LOG", "DEBUG")],
        )
        .assert_success();
    let ours: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("provider.terraform-provider-kudo:"))
        .collect();
    assert!(
        !ours.is_empty(),
        "no log line from the provider in TF_LOG=DEBUG output:\n{run}"
    );
    // Parsed as structured hclog JSON, not passed through as raw text.
    assert!(
        ours.iter().any(|l| l.contains("timestamp=")),
        "provider log lines are not hclog JSON:\n{}",
        ours.join("\n")
    );
    // `@module` is the field Terraform users filter provider logs by
    // (e.g. `grep @module=provider`), as with providers built on terraform-plugin-log.
    assert!(
        ours.iter().any(|l| l.contains("@module=")),
        "provider log lines carry no @module:\n{}",
        ours.join("\n")
    );
}
