//! A plan a reviewer can read (#51): with the real zookeeper and kafka packages from
//! `../shared/fixtures/operators`, `terraform plan` names the KUDO plan that runs and
//! its phases and steps (`summary`), keeps what it already knows known (`objects`
//! uids, `plan_status`), shows a drifted multi-line value as a line diff, a deleted
//! object as "deleted, will be re-created", and a create without every default
//! parameter. Each test counts the plan's lines (Terraform's dev-override warning box
//! left out) with the default view, `show_manifests` off.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{TestContext, TfRun, fixture_operator};
use crate::skip;

/// `kudo_operator.this` and `kudo_instance.<instance>` of `package` with `params`.
fn config(package: &Path, instance: &str, params: &[(&str, &str)]) -> String {
    crate::harness::package_config(package, instance, instance, params)
}

/// The lines of a command's output (stdout, then stderr), without Terraform's
/// "Provider development overrides are in effect" warning box, which only the test
/// set-up causes, and without leading and trailing blank lines.
fn plan_lines(run: &TfRun) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut in_box = false;
    for line in run.output().lines() {
        if line.contains("Warning: Provider development overrides are in effect") {
            in_box = true;
        }
        if !in_box {
            lines.push(line.to_string());
        }
        if in_box && line.trim_end().ends_with("releases.") {
            in_box = false;
        }
    }
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

/// A test context for the default view (`show_manifests` off), with zookeeper's
/// instance `zk` applied at `NODE_COUNT = 3`; `None` when the fixture is absent.
fn zookeeper(name: &str) -> Option<(TestContext, std::path::PathBuf)> {
    let pkg = fixture_operator("zookeeper")?;
    let mut ctx = TestContext::new(name);
    ctx.tf.remove_env("KUDO_SHOW_MANIFESTS");
    ctx.write("main.tf", &config(&pkg, "zk", &[("NODE_COUNT", "3")]));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    Some((ctx, pkg))
}

/// `objects` of `kudo_instance.zk` in the state.
fn objects(ctx: &TestContext) -> Value {
    let state = ctx.tf.state();
    state
        .resource("kudo_instance.zk")
        .map(|r| r["objects"].clone())
        .unwrap_or_else(|| panic!("no kudo_instance.zk: {:#}", state.0))
}

#[track_caller]
fn assert_contains(run: &TfRun, needles: &[&str]) {
    let out = run.output();
    for needle in needles {
        assert!(
            out.contains(needle),
            "the plan must show {needle:?}:\n{run}"
        );
    }
}

#[track_caller]
fn assert_lacks(run: &TfRun, needles: &[&str]) {
    let out = run.output();
    for needle in needles {
        assert!(
            !out.contains(needle),
            "the plan must not show {needle:?}:\n{run}"
        );
    }
}

/// `NODE_COUNT` 3 -> 5: at most 60 lines, naming the plan (which stays `deploy`), its
/// phases and steps, without the prior `objects` and `plan_status` as removals; the
/// saved plan applies (Terraform holds the apply to every value planned) and keeps
/// every object's uid.
#[test]
fn a_parameter_change_names_the_plan_in_a_short_plan() {
    let Some((ctx, pkg)) = zookeeper("readable-node-count") else {
        skip!("../shared/fixtures/operators/zookeeper not found");
    };
    let before = objects(&ctx);
    ctx.write("main.tf", &config(&pkg, "zk", &[("NODE_COUNT", "5")]));
    let run = ctx
        .tf
        .plan(&["-out=tfplan"])
        .assert_success()
        .assert_no_crash();
    let lines = plan_lines(&run);
    eprintln!(
        "[readable] NODE_COUNT 3 -> 5: {} plan lines:\n{}",
        lines.len(),
        lines.join("\n")
    );
    assert_contains(
        &run,
        &[
            "\"NODE_COUNT\" = \"3\" -> \"5\"",
            "zk runs plan deploy (serial), its run #2: 1 to create, 1 to update, 0 to delete",
            "phase zookeeper (parallel): deploy",
            "phase validation (serial): validation, cleanup",
            "\"StatefulSet.apps",
        ],
    );
    // Nothing known is printed as removed: not the objects, not the plan status.
    assert_lacks(&run, &["- uid", "- api_version", "- phases", "- status"]);
    assert!(
        lines.len() <= 60,
        "{} lines:\n{}",
        lines.len(),
        lines.join("\n")
    );

    let applied = ctx
        .tf
        .run(&["apply", "-input=false", "-no-color", "tfplan"])
        .assert_success()
        .assert_no_crash();
    assert_lacks(&applied, &["inconsistent"]);
    assert_eq!(
        objects(&ctx),
        before,
        "the same objects, with the same uids"
    );
    let state = ctx.tf.state();
    let zk = state.resource("kudo_instance.zk").expect("zk in state");
    assert_eq!(zk["plan_status"]["status"], "COMPLETE", "{zk:#}");
    assert_eq!(
        zk["plan_status"]["phases"][1]["steps"][1]["name"], "cleanup",
        "{zk:#}"
    );
    assert!(
        zk["plan_status"]["last_updated"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{zk:#}"
    );
    let sts = ctx.kube().must_get(
        "apps/v1",
        "StatefulSet",
        Some(&ctx.namespace),
        "zk-zookeeper",
    );
    assert_eq!(sts["spec"]["replicas"], 5, "{sts:#}");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    // A refresh changes nothing the apply recorded: drift detection by
    // `-refresh-only -detailed-exitcode` sees no change right after an apply.
    let refresh_only = ctx.tf.plan(&["-refresh-only", "-detailed-exitcode"]);
    assert_eq!(refresh_only.code, Some(0), "{refresh_only}");
}

/// One line edited out of band inside the 330-line `bootstrap.sh` of zookeeper's
/// ConfigMap: at most 50 lines, the edited line with one line of context each side,
/// not the whole script, not twice; the apply takes it back.
#[test]
fn a_drifted_script_line_shows_as_a_line_diff() {
    let Some((ctx, _)) = zookeeper("readable-drift") else {
        skip!("../shared/fixtures/operators/zookeeper not found");
    };
    let ns = ctx.namespace.as_str();
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "zk-bootstrap");
    let script = cm["data"]["bootstrap.sh"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let lines: Vec<&str> = script.lines().collect();
    assert!(lines.len() > 300, "bootstrap.sh has {} lines", lines.len());
    let target = lines
        .iter()
        .position(|l| l.contains("--servers"))
        .unwrap_or_else(|| panic!("no --servers line in bootstrap.sh:\n{script}"));
    let edited = script.replacen(
        lines[target],
        "#     --servers           EDITED OUT OF BAND",
        1,
    );
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "zk-bootstrap", "namespace": ns },
        "data": { "bootstrap.sh": edited },
    }));

    let run = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(run.code, Some(2), "drift is a change to plan:\n{run}");
    let shown = plan_lines(&run);
    eprintln!(
        "[readable] one line of bootstrap.sh edited: {} plan lines:\n{}",
        shown.len(),
        shown.join("\n")
    );
    assert_contains(
        &run,
        &[
            "data.bootstrap.sh",
            "+#     --servers           EDITED OUT OF BAND",
            &format!("-{}", lines[target]),
            &format!(" {}", lines[target - 1]),
            "DRIFTED",
        ],
    );
    // Not the whole script: its first lines are far from the edit.
    assert_lacks(
        &run,
        &["#!/usr/bin/env bash", "Licensed under the Apache License"],
    );
    assert_eq!(
        run.output().matches("EDITED OUT OF BAND").count(),
        1,
        "the edit once:\n{run}"
    );
    assert!(
        shown.len() <= 50,
        "{} lines:\n{}",
        shown.len(),
        shown.join("\n")
    );

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "zk-bootstrap");
    assert_eq!(cm["data"]["bootstrap.sh"].as_str(), Some(script.as_str()));
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

/// A managed object deleted out of band: the plan names it "deleted, will be
/// re-created", with an unknown uid for it alone; the apply creates it again.
#[test]
fn a_deleted_object_shows_as_deleted_and_recreated() {
    let Some((ctx, _)) = zookeeper("readable-deleted") else {
        skip!("../shared/fixtures/operators/zookeeper not found");
    };
    let ns = ctx.namespace.as_str();
    let before = objects(&ctx);
    ctx.kube()
        .delete("v1", "ConfigMap", Some(ns), "zk-healthcheck");
    let run = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(
        run.code,
        Some(2),
        "a deleted object is a change to plan:\n{run}"
    );
    let shown = plan_lines(&run);
    eprintln!(
        "[readable] one object deleted: {} plan lines:\n{}",
        shown.len(),
        shown.join("\n")
    );
    assert_contains(
        &run,
        &[
            &format!("ConfigMap {ns}/zk-healthcheck: deleted, will be re-created"),
            "+ uid         = (known after apply)",
        ],
    );
    assert_eq!(
        run.output().matches("(known after apply)").count(),
        // status, plan_status.last_updated and the one uid.
        3,
        "{run}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(ns), "zk-healthcheck");
    let after = objects(&ctx);
    let key = format!("ConfigMap {ns}/zk-healthcheck");
    assert!(
        after[&key]["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "{after:#}"
    );
    assert_ne!(after[&key]["uid"], before[&key]["uid"], "a new object");
    let other = format!("StatefulSet.apps {ns}/zk-zookeeper");
    assert_eq!(after[&other], before[&other], "the others keep their uid");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

/// A kafka create: `parameters` shows what the configuration sets and
/// `effective_parameters` (every one of kafka's ~200 parameters) is known after apply:
/// at most 30 lines of parameters.
#[test]
fn a_create_does_not_list_every_default_parameter() {
    let Some(pkg) = fixture_operator("kafka") else {
        skip!("../shared/fixtures/operators/kafka not found");
    };
    let mut ctx = TestContext::new("readable-kafka");
    ctx.tf.remove_env("KUDO_SHOW_MANIFESTS");
    ctx.write(
        "main.tf",
        &config(
            &pkg,
            "kafka",
            &[
                ("ZOOKEEPER_URI", "zk-zookeeper-0.zk-hs:2181"),
                ("BROKER_COUNT", "1"),
            ],
        ),
    );
    let run = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    let shown = plan_lines(&run);
    // Entries of a parameter map: `"NAME" = "value"`, NAME in params.yaml's spelling.
    let parameter_lines = shown
        .iter()
        .filter(|l| {
            let entry = l.trim_start().trim_start_matches(['+', '~', '-', ' ']);
            let name = entry
                .strip_prefix('"')
                .and_then(|rest| rest.split_once('"'))
                .map(|(name, _)| name);
            name.is_some_and(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            })
        })
        .count();
    eprintln!(
        "[readable] kafka create: {} plan lines, {parameter_lines} of parameters",
        shown.len()
    );
    assert_contains(
        &run,
        &[
            "+ effective_parameters = (known after apply)",
            "kafka runs plan deploy (serial), its run #1:",
        ],
    );
    assert!(
        shown
            .iter()
            .any(|l| l.contains("\"BROKER_COUNT\"") && l.ends_with("= \"1\"")),
        "{run}"
    );
    assert!(
        parameter_lines <= 30,
        "{parameter_lines} lines of parameters:\n{run}"
    );
}
