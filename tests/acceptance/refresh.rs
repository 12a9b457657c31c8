//! Refresh of an instance with many objects of one kind (#29): they are read with one
//! LIST of the instance's label, sent concurrently, and compared field by field only
//! when someone else wrote to the fields this provider applied. None of that may hide
//! a change: an object deleted out of band, one whose label someone removed (so the
//! list no longer shows it), and one whose data someone changed are all seen. Also the
//! `max_requests_in_flight` setting.

use serde_json::json;

use crate::harness::{PREAMBLE, TestContext, TfRun, one_task_operator_yaml};

/// ConfigMaps the package renders: more than the engine's `LIST_FROM` (8), so the
/// refresh lists them.
const COUNT: usize = 12;

/// One Apply task writing every ConfigMap, in one step (the objects of one task are
/// applied concurrently).
fn operator_yaml() -> String {
    let templates: Vec<String> = (1..=COUNT).map(|i| format!("cm-{i:02}")).collect();
    let templates: Vec<&str> = templates.iter().map(String::as_str).collect();
    one_task_operator_yaml("many", "0.1.0", "configmaps", &templates)
}

fn package(ctx: &TestContext) {
    ctx.write("operator/operator.yaml", &operator_yaml());
    ctx.write(
        "operator/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GREETING\n    default: hello\n",
    );
    for i in 1..=COUNT {
        ctx.write(
            &format!("operator/templates/cm-{i:02}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm-{i:02}\ndata:\n  greeting: {{{{ .Params.GREETING }}}}\n  index: \"{i}\"\n"
            ),
        );
    }
}

fn config(provider_settings: &str) -> String {
    let preamble = PREAMBLE.replace(
        "provider \"kudo\" {}",
        &format!("provider \"kudo\" {{\n{provider_settings}\n}}"),
    );
    format!(
        r#"{preamble}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}

resource "kudo_instance" "many" {{
  name      = "many"
  namespace = var.namespace
  operator  = kudo_operator.op.id
}}
"#
    )
}

fn plan(ctx: &TestContext) -> TfRun {
    ctx.tf
        .plan(&["-detailed-exitcode", "-no-color"])
        .assert_no_crash()
}

fn greeting(ctx: &TestContext, i: usize) -> Option<String> {
    let cm = ctx.kube().get(
        "v1",
        "ConfigMap",
        Some(&ctx.namespace),
        &format!("many-cm-{i:02}"),
    )?;
    cm["data"]["greeting"].as_str().map(str::to_string)
}

/// Requests kube-sim counted while `f` ran, by key (`"list configmaps"`); None on a
/// real cluster, which counts nothing.
fn counted(ctx: &TestContext, f: impl FnOnce()) -> Option<std::collections::BTreeMap<String, u64>> {
    let before = ctx.sim().map(|s| s.request_counts());
    f();
    let (sim, before) = (ctx.sim()?, before?);
    let mut made = sim.request_counts();
    for (key, n) in made.iter_mut() {
        *n -= before.get(key).copied().unwrap_or(0);
    }
    made.retain(|_, n| *n > 0);
    Some(made)
}

#[test]
fn a_large_instance_refreshes_by_listing_and_still_sees_every_change() {
    let ctx = TestContext::new("refresh-many");
    package(&ctx);
    ctx.write("main.tf", &config(""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    for i in 1..=COUNT {
        assert_eq!(greeting(&ctx, i).as_deref(), Some("hello"), "cm {i}");
    }

    // Nothing changed: no plan, and (on kube-sim, which counts) the ConfigMaps were
    // read by listing and none was dry-run for drift.
    let mut quiet = None;
    let requests = counted(&ctx, || quiet = Some(plan(&ctx)));
    let quiet = quiet.expect("plan ran");
    assert_eq!(quiet.code, Some(0), "nothing changed:\n{quiet}");
    if let Some(requests) = requests {
        eprintln!("[refresh] requests of a no-change plan: {requests:?}");
        assert!(
            requests.get("list configmaps").copied().unwrap_or(0) >= 1,
            "the ConfigMaps are listed: {requests:?}"
        );
        assert_eq!(
            requests.get("patch configmaps"),
            None,
            "no ConfigMap is dry-run when nobody wrote to it: {requests:?}"
        );
        assert!(
            requests.get("get configmaps").copied().unwrap_or(0) < COUNT as u64,
            "not one GET per ConfigMap: {requests:?}"
        );
    }

    // Someone changes one ConfigMap's data and removes its instance label, so the
    // list no longer finds it: the refresh reads it on its own and sees the data (the
    // `kudo.dev/` labels are bookkeeping, never shown as drift; the apply puts the
    // label back all the same).
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "many-cm-05", "namespace": ctx.namespace },
        "data": { "greeting": "changed out of band" },
    }));
    ctx.kube().patch_merge(
        "v1",
        "ConfigMap",
        Some(&ctx.namespace),
        "many-cm-05",
        &json!({"metadata": {"labels": {"kudo.dev/instance": null}}}),
    );
    let run = plan(&ctx);
    assert_eq!(run.code, Some(2), "drift is a change to plan:\n{run}");
    let out = run.output();
    for needle in [
        "many-cm-05",
        "data.greeting",
        "changed out of band",
        "DRIFTED",
    ] {
        assert!(
            out.contains(needle),
            "the plan must show {needle:?}:\n{run}"
        );
    }
    // `summary` names each drifted field's object (`ConfigMap ns/name data.greeting
    // changed outside Terraform`); only the changed ConfigMap has one.
    let drifted: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("changed outside Terraform"))
        .collect();
    assert!(
        !drifted.is_empty() && drifted.iter().all(|l| l.contains("many-cm-05")),
        "only cm 05 drifted: {drifted:?}\n{run}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(greeting(&ctx, 5).as_deref(), Some("hello"));
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "many-cm-05");
    assert_eq!(cm["metadata"]["labels"]["kudo.dev/instance"], "many");
    let after = plan(&ctx);
    assert_eq!(after.code, Some(0), "repaired, nothing left:\n{after}");

    // Someone deletes one: the refresh notices it is gone and the apply puts it back.
    ctx.kube()
        .delete("v1", "ConfigMap", Some(&ctx.namespace), "many-cm-09");
    let run = plan(&ctx);
    assert_eq!(run.code, Some(2), "a deleted object is a change:\n{run}");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(greeting(&ctx, 9).as_deref(), Some("hello"));
    let after = plan(&ctx);
    assert_eq!(after.code, Some(0), "repaired, nothing left:\n{after}");
}

#[test]
fn one_request_in_flight_still_applies_and_refreshes() {
    let ctx = TestContext::new("refresh-one-in-flight");
    package(&ctx);
    ctx.write("main.tf", &config("  max_requests_in_flight = 1"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    for i in 1..=COUNT {
        assert_eq!(greeting(&ctx, i).as_deref(), Some("hello"), "cm {i}");
    }
    let quiet = plan(&ctx);
    assert_eq!(quiet.code, Some(0), "nothing changed:\n{quiet}");
}

#[test]
fn an_invalid_max_requests_in_flight_is_refused_naming_the_setting() {
    let ctx = TestContext::new("refresh-bad-in-flight");
    package(&ctx);
    for bad in ["0", "1.5", "1000"] {
        ctx.write(
            "main.tf",
            &config(&format!("  max_requests_in_flight = {bad}")),
        );
        let run = ctx.tf.plan(&["-no-color"]).assert_clean_error();
        let out = run.output();
        assert!(
            out.contains("Invalid max_requests_in_flight") && out.contains("from 1 to 256"),
            "{bad}: the error names the setting and its range:\n{run}"
        );
    }
}

/// State written before `objects` and `preview`'s parts were maps (schema version 0,
/// lists; #29 made them maps so that Terraform's plan stays linear in the number of
/// objects) still plans without changes, and the next apply stores the maps with every
/// uid and apiVersion.
#[test]
fn state_with_the_older_objects_list_upgrades_without_a_change() {
    let ctx = TestContext::new("refresh-upgrade");
    package(&ctx);
    ctx.write("main.tf", &config(""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let applied = ctx.tf.state();
    let inst = applied.resource("kudo_instance.many").expect("instance");
    let entries: Vec<serde_json::Value> = crate::harness::managed_objects(inst)
        .into_iter()
        .cloned()
        .collect();
    assert!(entries.len() >= COUNT, "every ConfigMap: {inst:#}");

    // Rewrite the state as version 0 of the schema stored it: `objects` a list, in
    // the order the apply ran (not the map's key order).
    let path = ctx.workdir.join("terraform.tfstate");
    let text = std::fs::read_to_string(&path).expect("local state");
    let mut raw: serde_json::Value = serde_json::from_str(&text).expect("state JSON");
    raw["serial"] = json!(raw["serial"].as_u64().unwrap_or(0) + 1);
    let mut rewritten = false;
    for r in raw["resources"].as_array_mut().expect("resources") {
        if r["type"] != "kudo_instance" {
            continue;
        }
        let inst = &mut r["instances"][0];
        inst["schema_version"] = json!(0);
        // Written before this provider had identities.
        if let Some(i) = inst.as_object_mut() {
            i.remove("identity");
            i.remove("identity_schema_version");
        }
        let mut list = entries.clone();
        list.reverse();
        inst["attributes"]["objects"] = json!(list);
        // `preview` kept lists of labels too.
        let preview = &mut inst["attributes"]["preview"];
        for part in ["create", "update", "delete"] {
            let labels: Vec<String> = preview[part]
                .as_object()
                .unwrap_or_else(|| panic!("preview.{part} is not a map: {preview:#}"))
                .keys()
                .cloned()
                .collect();
            preview[part] = json!(labels);
        }
        rewritten = true;
    }
    assert!(rewritten, "no kudo_instance in {text}");
    std::fs::write(&path, raw.to_string()).expect("write state");

    let run = plan(&ctx);
    assert_eq!(
        run.code,
        Some(0),
        "an upgraded state plans no change:\n{run}"
    );
    ctx.tf
        .apply(&["-refresh-only"])
        .assert_success()
        .assert_no_crash();
    let upgraded = ctx.tf.state();
    let inst = upgraded.resource("kudo_instance.many").expect("instance");
    let now: Vec<serde_json::Value> = crate::harness::managed_objects(inst)
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(now, entries, "the same objects and uids, as a map");
    assert_eq!(
        inst["preview"],
        applied.resource("kudo_instance.many").expect("instance")["preview"],
        "the same preview, as maps of apiVersions"
    );
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("state")).expect("JSON");
    let versions: Vec<&serde_json::Value> = stored["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter(|r| r["type"] == "kudo_instance")
        .map(|r| &r["instances"][0]["schema_version"])
        .collect();
    assert_eq!(
        versions,
        [&json!(2)],
        "stored with the current schema version"
    );
    if crate::harness::lacks(crate::harness::Feature::Identity).is_none() {
        let ns = ctx.namespace.as_str();
        assert_eq!(
            ctx.tf.stored_identities().get("kudo_instance.many"),
            Some(&json!({"namespace": ns, "name": "many"})),
            "the refresh gave the older state its identity"
        );
    }
}

/// An `objects` entry that names no object (a damaged or hand-edited state) is left out
/// of the refresh, and dropped from the state, instead of failing every plan.
#[test]
fn an_objects_entry_that_names_no_object_is_dropped_by_the_refresh() {
    let ctx = TestContext::new("refresh-bad-entry");
    package(&ctx);
    ctx.write("main.tf", &config(""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let before = ctx.tf.state();
    let count = before.resource("kudo_instance.many").expect("instance")["objects"]
        .as_object()
        .map(|m| m.len())
        .unwrap_or_default();

    let path = ctx.workdir.join("terraform.tfstate");
    let text = std::fs::read_to_string(&path).expect("local state");
    let mut raw: serde_json::Value = serde_json::from_str(&text).expect("state JSON");
    raw["serial"] = json!(raw["serial"].as_u64().unwrap_or(0) + 1);
    for r in raw["resources"].as_array_mut().expect("resources") {
        if r["type"] == "kudo_instance" {
            r["instances"][0]["attributes"]["objects"]["Secret"] = json!({
                "api_version": null, "kind": "Secret", "namespace": null, "name": null, "uid": null,
            });
        }
    }
    std::fs::write(&path, raw.to_string()).expect("write the state");

    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_no_crash();
    ctx.tf
        .apply(&["-refresh-only"])
        .assert_success()
        .assert_no_crash();
    let after = ctx.tf.state();
    let objects = &after.resource("kudo_instance.many").expect("instance")["objects"];
    assert!(objects.get("Secret").is_none(), "{objects:#}");
    assert_eq!(
        objects.as_object().map(|m| m.len()),
        Some(count),
        "{objects:#}"
    );
}
