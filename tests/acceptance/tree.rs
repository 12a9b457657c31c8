//! The whole dependency tree is planned as one (issue "the whole tree is planned"): a
//! dependency instance's object the API server would refuse, its removed API and its
//! unsafe CRD change fail `terraform plan` naming the chain, and an apply attempt writes
//! nothing, not the parent's first phase, not the child's; a dependency instance's
//! object changed with `kubectl` shows in the next plan and the apply takes it back;
//! `preview` keys objects as `objects` does, and shows each dependency instance's
//! changes.
//!
//! Packages: `parent` (phase `own` writes ConfigMap `<name>-own` holding GENERATION,
//! phase `deps` runs the child through a KudoOperator task) and `child` (phase `one`
//! writes ConfigMap `<name>-one`, phase `two` writes `two.yaml`, which each test picks).

use serde_json::json;

use crate::harness::{PREAMBLE, TestContext, flat, refused_writing_nothing, written};

/// Writes the parent at `version` (GENERATION's default is `generation`) and the child
/// at `child_version`, whose phase `two` writes `two` (a template's text).
fn write_tree(ctx: &TestContext, version: &str, generation: &str, child_version: &str, two: &str) {
    ctx.write(
        "parent/operator.yaml",
        &format!(
            r#"apiVersion: kudo.dev/v1beta1
name: parent
operatorVersion: {version}
kubernetesVersion: 1.20.0
tasks:
  - name: own
    kind: Apply
    spec:
      resources: [own.yaml]
  - name: child
    kind: KudoOperator
    spec:
      package: ../child
      parameterFile: child-params.yaml
plans:
  deploy:
    strategy: serial
    phases:
      - name: own
        strategy: serial
        steps:
          - name: own
            tasks: [own]
      - name: deps
        strategy: serial
        steps:
          - name: deps
            tasks: [child]
"#
        ),
    );
    ctx.write(
        "parent/params.yaml",
        &format!(
            "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GENERATION\n    default: \"{generation}\"\n"
        ),
    );
    ctx.write(
        "parent/templates/own.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-own\ndata:\n  generation: \"{{ .Params.GENERATION }}\"\n",
    );
    ctx.write(
        "parent/templates/child-params.yaml",
        "GENERATION: \"{{ .Params.GENERATION }}\"\n",
    );
    ctx.write(
        "child/operator.yaml",
        &format!(
            r#"apiVersion: kudo.dev/v1beta1
name: child
operatorVersion: {child_version}
kubernetesVersion: 1.20.0
tasks:
  - name: one
    kind: Apply
    spec:
      resources: [one.yaml]
  - name: two
    kind: Apply
    spec:
      resources: [two.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: one
        strategy: serial
        steps:
          - name: one
            tasks: [one]
      - name: two
        strategy: serial
        steps:
          - name: two
            tasks: [two]
"#
        ),
    );
    ctx.write(
        "child/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GENERATION\n    default: \"one\"\n",
    );
    ctx.write(
        "child/templates/one.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-one\ndata:\n  generation: \"{{ .Params.GENERATION }}\"\n",
    );
    ctx.write("child/templates/two.yaml", two);
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "parent" {{
  package   = "${{path.module}}/parent"
  namespace = var.namespace
}}

resource "kudo_instance" "p" {{
  name      = "p"
  namespace = var.namespace
  operator  = kudo_operator.parent.id
}}

output "preview" {{
  value = kudo_instance.p.preview
}}
"#
        ),
    );
}

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-two\ndata:\n  k: v\n";

#[test]
fn a_dependency_instances_invalid_object_fails_the_plan_and_nothing_is_written() {
    let ctx = TestContext::new("tree-invalid");
    write_tree(
        &ctx,
        "0.1.0",
        "one",
        "1.0.0",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-bad\ndata:\n  password: not base64!\n",
    );
    refused_writing_nothing(
        &ctx,
        "p-",
        &[
            "The API server refuses this object",
            "dependency instance p-child",
            "task \"child\"",
            "templates/two.yaml",
            "Secret",
        ],
    );
}

#[test]
fn a_dependency_instances_removed_api_fails_the_plan_and_nothing_is_written() {
    let ctx = TestContext::new("tree-removed");
    if ctx.kube().serves("policy/v1beta1", "PodSecurityPolicy") {
        eprintln!(
            "SKIPPED: this cluster still serves policy/v1beta1 PodSecurityPolicy (before 1.25)"
        );
        ctx.mark_cleaned();
        return;
    }
    write_tree(
        &ctx,
        "0.1.0",
        "one",
        "1.0.0",
        "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: {{ .Namespace }}-{{ .Name }}-psp\nspec:\n  seLinux:\n    rule: RunAsAny\n  runAsUser:\n    rule: RunAsAny\n  supplementalGroups:\n    rule: RunAsAny\n  fsGroup:\n    rule: RunAsAny\n",
    );
    refused_writing_nothing(
        &ctx,
        "p-",
        &[
            "API removed, with nothing to replace it",
            "dependency instance p-child",
            "templates/two.yaml",
            "PodSecurityPolicy",
        ],
    );
}

/// A CRD (and, in the same step, nothing else) whose `spec.color` the next version
/// requires.
fn crd(ctx: &TestContext, required: bool) -> String {
    let group = format!("{}.example.com", ctx.namespace);
    let required = match required {
        true => "\n              required: [color]",
        false => "",
    };
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: paints.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    kind: Paint
    plural: paints
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object{required}
              properties:
                color:
                  type: string
                size:
                  type: integer
"#
    )
}

#[test]
fn a_dependency_instances_unsafe_crd_change_fails_the_parent_upgrade_and_nothing_is_written() {
    let ctx = TestContext::new("tree-crd");
    write_tree(&ctx, "0.1.0", "one", "1.0.0", &crd(&ctx, false));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    // A user's custom resource, without a color.
    let group = format!("{}.example.com", ctx.namespace);
    ctx.kube().apply(&json!({
        "apiVersion": format!("{group}/v1"), "kind": "Paint",
        "metadata": {"name": "mine", "namespace": ctx.namespace},
        "spec": {"size": 1},
    }));
    // The parent's upgrade brings a child whose CRD requires the field.
    write_tree(&ctx, "0.2.0", "two", "1.1.0", &crd(&ctx, true));
    for command in ["plan", "apply"] {
        let run = match command {
            "plan" => ctx.tf.plan(&[]),
            _ => ctx.tf.apply(&[]),
        };
        let run = run.assert_clean_error();
        let out = flat(&run.output());
        for text in [
            "Unsafe CRD change",
            "dependency instance p-child",
            "newly-required",
            "spec.color",
            "templates/two.yaml",
        ] {
            assert!(
                out.contains(text),
                "terraform {command} does not say {text:?}:\n{run}"
            );
        }
        // Nothing was written: the parent's first phase still holds generation one.
        let own = ctx
            .kube()
            .must_get("v1", "ConfigMap", Some(&ctx.namespace), "p-own");
        assert_eq!(
            own["data"]["generation"], "one",
            "terraform {command} wrote:\n{run}"
        );
        let one = ctx
            .kube()
            .must_get("v1", "ConfigMap", Some(&ctx.namespace), "p-child-one");
        assert_eq!(
            one["data"]["generation"], "one",
            "terraform {command} wrote:\n{run}"
        );
    }
    // The custom resource goes first, so the destroy may remove the CRD.
    ctx.kube().delete(
        &format!("{group}/v1"),
        "Paint",
        Some(&ctx.namespace),
        "mine",
    );
    write_tree(&ctx, "0.1.0", "one", "1.0.0", &crd(&ctx, false));
}

#[test]
fn a_dependency_instances_object_changed_with_kubectl_is_drift_and_the_apply_takes_it_back() {
    let ctx = TestContext::new("tree-drift");
    write_tree(&ctx, "0.1.0", "one", "1.0.0", CONFIGMAP);
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let quiet = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(quiet.code, Some(0), "no changes after the apply:\n{quiet}");
    // kubectl edit of the child's ConfigMap.
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "p-child-one", "namespace": ctx.namespace},
        "data": {"generation": "changed by hand"},
    }));
    ctx.tf.run(&["refresh"]).assert_success();
    let state = ctx.tf.state();
    let p = state.resource("kudo_instance.p").expect("state").clone();
    let fields = p["drifted_fields"].as_array().cloned().unwrap_or_default();
    assert!(
        fields.iter().any(|f| f["instance"] == "p-child"
            && f["object"] == format!("ConfigMap {}/p-child-one", ctx.namespace)
            && f["field"] == "data.generation"
            && f["live"] == "changed by hand"),
        "drifted_fields names the child's object: {fields:?}"
    );
    let run = ctx
        .tf
        .plan(&["-detailed-exitcode", "-no-color"])
        .assert_no_crash();
    assert_eq!(run.code, Some(2), "the drift is a change to plan:\n{run}");
    let out = flat(&run.stdout);
    assert!(out.contains("p-child"), "the plan names the child:\n{run}");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "p-child-one");
    assert_eq!(
        cm["data"]["generation"], "one",
        "the apply took the change back"
    );
    let after = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(after.code, Some(0), "no changes once repaired:\n{after}");
}

/// Terraform plans every change again right before applying it, and that final plan
/// checks the whole tree against the cluster as it is then: the run does not dry-run
/// the tree a third time, nor read again what that plan read. During one
/// `terraform apply` each object of the tree (the parent's ConfigMap and the child's
/// two) is dry-run by the plan and by the final plan, then written: three patches each.
/// Counted by kube-sim, so skipped elsewhere.
#[test]
fn the_apply_does_not_dry_run_again_what_its_final_plan_checked() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        crate::skip!("counts kube-sim's requests");
    }
    let ctx = TestContext::new("tree-checked");
    let Some(sim) = ctx.sim() else {
        crate::skip!("counts kube-sim's requests");
    };
    write_tree(&ctx, "0.1.0", "one", "1.0.0", CONFIGMAP);
    let before = sim.request_counts();
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let after = sim.request_counts();
    let made =
        |key: &str| after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0);
    assert_eq!(
        made("patch configmaps"),
        9,
        "3 ConfigMaps, each dry-run by the plan and the final plan, then written once"
    );
    // The run takes the final plan's reads of the child Instance, and the state records
    // the uids and fingerprints the writes were answered with: nothing is read again.
    assert_eq!(
        made("get configmaps"),
        9,
        "3 ConfigMaps, each checked for another owner by the plan and the final plan, and read once by the apply before its first write to see that nobody took it since"
    );
    // The first plan runs before KUDO's CRDs exist: no Instance to read then.
    assert_eq!(
        made("get instances"),
        3,
        "the final plan reads the parent's Instance (is it someone else's?) and the \
         child's, the apply the parent's again before creating it"
    );
    // `kudo_operator` wrote the parent's and the child's Operator and OperatorVersion;
    // the child instance's run finds them and, as KUDO's KudoOperatorTask, applies
    // only its Instance (it wrote them a second time before).
    assert_eq!(made("patch operatorversions"), 2, "written once each");
    assert_eq!(made("patch operators"), 2, "written once each");
    for name in ["p-own", "p-child-one", "p-child-two"] {
        ctx.kube()
            .must_get("v1", "ConfigMap", Some(&ctx.namespace), name);
    }
    // What the writes were answered with is what a refresh reads: no drift.
    let before = sim.request_counts();
    let again = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(again.code, Some(0), "no changes after the apply:\n{again}");
    // A plan that changes no kudo_operator asks nothing about installing it (#48): no
    // dry-run of its Operator and OperatorVersion.
    let after = sim.request_counts();
    let made =
        |key: &str| after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0);
    assert_eq!(made("patch operators"), 0, "{after:?}");
    assert_eq!(made("patch operatorversions"), 0, "{after:?}");
}

#[test]
fn preview_shows_each_dependency_instance_and_keys_objects_as_objects_does() {
    let ctx = TestContext::new("tree-preview");
    write_tree(
        &ctx,
        "0.1.0",
        "one",
        "1.0.0",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: {{ .Name }}-db\nspec:\n  serviceName: db\n  replicas: 1\n  selector:\n    matchLabels:\n      app: db\n  template:\n    metadata:\n      labels:\n        app: db\n    spec:\n      containers:\n        - name: db\n          image: busybox:1.36\n          command: [sleep, \"3600\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Namespace }}-{{ .Name }}-reader\nrules:\n  - apiGroups: [\"\"]\n    resources: [configmaps]\n    verbs: [get]\n",
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let outputs = ctx.tf.outputs();
    let preview = &outputs["preview"];
    let child = &preview["dependencies"]["p-child"];
    assert_eq!(child["action"], "create", "{preview}");
    assert_eq!(child["plan"], "deploy", "{preview}");
    let ns = &ctx.namespace;
    let created: Vec<&String> = child["create"]
        .as_object()
        .expect("create")
        .keys()
        .collect();
    let sts = format!("StatefulSet.apps {ns}/p-child-db");
    let role = format!("ClusterRole.rbac.authorization.k8s.io {ns}-p-child-reader");
    assert!(
        created.contains(&&sts) && created.contains(&&role),
        "{created:?}"
    );
    // The parent's own keys are its `objects` keys.
    let state = ctx.tf.state();
    let p = state.resource("kudo_instance.p").expect("state");
    let objects: Vec<&String> = p["objects"].as_object().expect("objects").keys().collect();
    let own: Vec<&String> = preview["create"]
        .as_object()
        .expect("create")
        .keys()
        .collect();
    for key in own {
        assert!(
            objects.contains(&key),
            "{key} is not an objects key: {objects:?}"
        );
    }
    // The same spelling as the engine's inventory: a ClusterRole and a StatefulSet of a
    // top instance show under the keys `objects` has for them.
    ctx.write(
        "parent/templates/own.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: {{{{ .Name }}}}-web\nspec:\n  serviceName: web\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n        - name: web\n          image: busybox:1.36\n          command: [sleep, \"3600\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ns}-top-reader\nrules:\n  - apiGroups: [\"\"]\n    resources: [configmaps]\n    verbs: [get]\n"
        ),
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let outputs = ctx.tf.outputs();
    let preview = &outputs["preview"];
    let created: Vec<String> = preview["create"]
        .as_object()
        .expect("create")
        .keys()
        .cloned()
        .collect();
    let state = ctx.tf.state();
    let p = state.resource("kudo_instance.p").expect("state");
    let objects: Vec<String> = p["objects"]
        .as_object()
        .expect("objects")
        .keys()
        .cloned()
        .collect();
    for key in [
        format!("StatefulSet.apps {ns}/p-web"),
        format!("ClusterRole.rbac.authorization.k8s.io {ns}-top-reader"),
    ] {
        assert!(
            created.contains(&key),
            "preview.create lacks {key}: {created:?}"
        );
        assert!(objects.contains(&key), "objects lacks {key}: {objects:?}");
    }
}

/// The phases and steps of `kudo_instance.p` and of `p-child` as the saved plan shows
/// them, before anything runs: (instance, plan, [(phase, strategy, [steps])]).
type Outline = (String, String, Vec<(String, String, Vec<String>)>);

fn outlines(steps: &serde_json::Value) -> Vec<Outline> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    steps
        .as_array()
        .unwrap_or_else(|| panic!("plan_steps is a list: {steps:#}"))
        .iter()
        .map(|o| {
            let phases = o["phases"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    let steps = p["steps"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(text)
                        .collect();
                    (text(&p["name"]), text(&p["strategy"]), steps)
                })
                .collect();
            (text(&o["instance"]), text(&o["plan"]), phases)
        })
        .collect()
}

/// A plan as KUDO's status tree names it: (plan, [(phase, [steps])]).
type Named = (String, Vec<(String, Vec<String>)>);

/// KUDO's plan status tree as [`Named`].
fn status_outline(status: &serde_json::Value) -> Named {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let phases = status["phases"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let steps = p["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| text(&s["name"]))
                .collect();
            (text(&p["name"]), steps)
        })
        .collect();
    (text(&status["name"]), phases)
}

#[test]
fn the_plan_shows_each_instances_phases_and_steps_before_they_run() {
    let ctx = TestContext::new("tree-steps");
    write_tree(&ctx, "0.1.0", "one", "1.0.0", CONFIGMAP);
    ctx.tf.plan(&["-out=tfplan"]).assert_success();
    let json = ctx
        .tf
        .run(&["show", "-json", "tfplan"])
        .assert_success()
        .json();
    let planned = json["resource_changes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["address"] == "kudo_instance.p")
        .map(|c| c["change"]["after"]["plan_steps"].clone())
        .expect("kudo_instance.p in the plan");
    let serial = || "serial".to_string();
    let step = |phase: &str, step: &str| (phase.to_string(), serial(), vec![step.to_string()]);
    assert_eq!(
        outlines(&planned),
        vec![
            (
                "p".to_string(),
                "deploy".to_string(),
                vec![step("own", "own"), step("deps", "deps")]
            ),
            (
                "p-child".to_string(),
                "deploy".to_string(),
                vec![step("one", "one"), step("two", "two")]
            ),
        ],
        "{planned:#}"
    );
    assert!(written(&ctx, "p-").is_empty(), "a plan writes nothing");
    ctx.tf
        .run(&["apply", "-input=false", "-no-color", "tfplan"])
        .assert_success();
    // After the apply KUDO's plan status reports the same plans, phases and steps.
    let expected: Vec<(String, Named)> = outlines(&planned)
        .into_iter()
        .map(|(i, plan, phases)| {
            let phases = phases.into_iter().map(|(p, _, steps)| (p, steps)).collect();
            (i, (plan, phases))
        })
        .collect();
    let state = ctx.tf.state();
    let p = state.resource("kudo_instance.p").expect("state");
    assert_eq!(status_outline(&p["plan_status"]), expected[0].1, "{p:#}");
    let child = ctx
        .kube()
        .instance(&ctx.namespace, "p-child")
        .expect("p-child Instance");
    let status = &child["status"]["planStatus"]["deploy"];
    assert_eq!(status_outline(status), expected[1].1, "{status:#}");
    assert_eq!(status["status"], "COMPLETE", "{status:#}");
}

#[test]
fn a_replaced_instance_recreates_its_dependency_instances_as_planned() {
    let ctx = TestContext::new("tree-replace");
    write_tree(&ctx, "0.1.0", "one", "1.0.0", CONFIGMAP);
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let before = ctx
        .kube()
        .instance(&ctx.namespace, "p-child")
        .expect("p-child");
    // The plan is made while the old dependency instance still stands; the apply's own
    // plan after the destroy half must agree with it.
    let run = ctx
        .tf
        .apply(&["-replace=kudo_instance.p"])
        .assert_success()
        .assert_no_crash();
    assert!(
        !run.output().contains("inconsistent"),
        "the apply's plan agrees with the plan:\n{run}"
    );
    let after = ctx
        .kube()
        .instance(&ctx.namespace, "p-child")
        .expect("p-child again");
    assert_ne!(
        before["metadata"]["uid"], after["metadata"]["uid"],
        "the dependency instance was created again"
    );
    let state = ctx.tf.state();
    let p = state.resource("kudo_instance.p").expect("state");
    assert_eq!(
        p["preview"]["dependencies"]["p-child"]["action"], "create",
        "{p:#}"
    );
}
