//! How many API requests Terraform's apply, update and destroy of zookeeper and kafka
//! make, from kube-sim's counters: printed for `docs/benchmarks.md`, not asserted; and
//! the discovery requests the provider's processes share through the data directory,
//! asserted. Skipped on a real cluster (nothing counts its requests), except what does
//! not count.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::harness::{PREAMBLE, TestContext};
use crate::skip;

/// `after - before` summed by verb (`"get"`, `"list"`, `"watch"`, ...).
fn by_verb(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut verbs = BTreeMap::new();
    for (key, n) in after {
        let made = n - before.get(key).copied().unwrap_or(0);
        let verb = key.split(' ').next().unwrap_or_default().to_string();
        *verbs.entry(verb).or_insert(0) += made;
    }
    verbs.retain(|_, n| *n > 0);
    verbs
}

#[test]
fn requests_of_zookeeper_and_kafka_through_terraform() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("counts kube-sim's requests");
    }
    if crate::harness::fixture_operator("zookeeper").is_none()
        || crate::harness::fixture_operator("kafka").is_none()
    {
        skip!("../shared/fixtures/operators zookeeper or kafka not found");
    }
    let ctx = TestContext::new("requests");
    let Some(sim) = ctx.sim() else {
        skip!("counts kube-sim's requests");
    };
    for path in ["/tmp/tls.key", "/tmp/tls.crt"] {
        sim.add_exec_file(kube_sim::ExecFile {
            namespace: ctx.namespace.clone(),
            pod: None,
            selector: None,
            path: path.to_string(),
            content: String::new(),
        });
    }
    let apply = ["apply", "-input=false", "-no-color", "-auto-approve"];
    let destroy = ["destroy", "-input=false", "-no-color", "-auto-approve"];
    // (step, zookeeper CPUS and kafka mirror maker to configure first, command)
    let steps = [
        ("apply", Some(("250m", false)), &apply),
        ("update", Some(("300m", true)), &apply),
        ("destroy", None, &destroy),
    ];
    for (name, config, args) in steps {
        if let Some((cpus, mirror_maker)) = config {
            ctx.write(
                "main.tf",
                &crate::faults::zookeeper_and_kafka(cpus, mirror_maker),
            );
        }
        let before = sim.request_counts();
        ctx.tf.run(args).assert_success();
        let after = sim.request_counts();
        let verbs = by_verb(&before, &after);
        eprintln!(
            "[requests] terraform {name}: {} requests {verbs:?}, of them discovery {} (and \
             /version {})",
            verbs.values().sum::<u64>(),
            discovery_made(&before, &after).values().sum::<u64>(),
            connections(&before, &after),
        );
    }
    ctx.mark_cleaned();
}

/// Discovery requests made between two snapshots of kube-sim's counts, by path
/// (`"/apis"`, `"/api/v1"`, `"/apis/apps/v1"`, ...), leaving out `/version`: every
/// provider process reads that once when it connects, as its first contact.
fn discovery_made(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(key, n)| {
            let path = key.strip_prefix("get discovery ")?;
            let made = n - before.get(key).copied().unwrap_or(0);
            (path != "/version" && made > 0).then(|| (path.to_string(), made))
        })
        .collect()
}

/// `/version` requests between two snapshots: one per provider process that connected.
fn connections(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> u64 {
    let key = "get discovery /version";
    after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0)
}

fn write_configmap_package(ctx: &TestContext) {
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::serial_operator_yaml("disco-app", "0.1.0", &["config", "web"]),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  a: b\n",
    );
    ctx.write(
        "operator/templates/web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Name }}-web\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n",
    );
    ctx.write("main.tf", &crate::harness::local_instance_config("app", ""));
}

/// Terraform starts the provider several times per command (two of an apply's
/// processes talk to the cluster here: the plan's and the apply's), and each process
/// used to discover the API server's kinds again. The discovery is kept under
/// Terraform's data directory (`.terraform/kudo/discovery`): within the apply each
/// served group-version is asked for once, and the no-change plan after it makes no
/// discovery request at all; each process reads `/version` (its first contact, which
/// also tells a changed server apart) and nothing else of discovery. Counted by
/// kube-sim, so skipped elsewhere.
#[test]
fn a_no_change_plan_after_the_apply_makes_no_discovery_request() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("counts kube-sim's requests");
    }
    let ctx = TestContext::new("requests-discovery");
    let Some(sim) = ctx.sim() else {
        skip!("counts kube-sim's requests");
    };
    write_configmap_package(&ctx);
    let before = sim.request_counts();
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let after_apply = sim.request_counts();
    let applied = discovery_made(&before, &after_apply);
    eprintln!(
        "[requests] terraform apply: {} provider connections, discovery {applied:?} ({} requests)",
        connections(&before, &after_apply),
        applied.values().sum::<u64>()
    );
    // `kudo.dev/v1beta1` is asked while KUDO's CRDs are not served yet (a CRD may be
    // created any moment) and as the apply creates them.
    for (path, n) in &applied {
        assert!(
            *n == 1 || path == "/apis/kudo.dev/v1beta1",
            "{path} asked {n} times: {applied:?}"
        );
    }
    let plan = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(plan.code, Some(0), "no changes after the apply:\n{plan}");
    let after_plan = sim.request_counts();
    let planned = discovery_made(&after_apply, &after_plan);
    eprintln!(
        "[requests] terraform plan: {} provider connections, discovery {planned:?}",
        connections(&after_apply, &after_plan),
    );
    assert!(
        planned.is_empty(),
        "the plan's processes took the apply's discovery from the data directory, yet \
         asked {planned:?}"
    );
    assert!(
        ctx.workdir.join(".terraform/kudo/discovery").is_dir(),
        "the discovery is kept under the data directory"
    );
}

/// A CRD that `group`'s `kind` objects need, written as an administrator would.
fn crd_yaml(group: &str, kind: &str, plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names:\n    kind: {kind}\n    plural: {plural}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n"
    )
}

/// A package `name` whose deploy plan writes one `kind` object of `group`, in `folder`.
fn write_custom_package(ctx: &TestContext, folder: &str, name: &str, group: &str, kind: &str) {
    ctx.write(
        &format!("{folder}/operator.yaml"),
        &crate::harness::serial_operator_yaml(name, "0.1.0", &["object"]),
    );
    ctx.write(
        &format!("{folder}/templates/object.yaml"),
        &format!(
            "apiVersion: {group}/v1\nkind: {kind}\nmetadata:\n  name: {{{{ .Name }}}}-{}\nspec:\n  size: 1\n",
            kind.to_lowercase()
        ),
    );
}

fn custom_instance_config(folder: &str, name: &str) -> String {
    format!(
        r#"
resource "kudo_operator" {name:?} {{
  package   = "${{path.module}}/{folder}"
  namespace = var.namespace
}}

resource "kudo_instance" {name:?} {{
  name      = {name:?}
  namespace = var.namespace
  operator  = kudo_operator.{name}.id
}}
"#
    )
}

/// The discovery kept under the data directory predates a CRD created between two
/// commands, in a group-version it lists: the kind it lacks is asked for (and the file
/// started again from the server's answers), the apply writes the new kind's object,
/// and the plan after it again makes no discovery request (kube-sim counts).
#[test]
fn a_crd_created_between_commands_is_found_although_discovery_was_kept() {
    let ctx = TestContext::new("requests-new-crd");
    let group = format!("{}.example.com", ctx.namespace);
    let kube = ctx.kube();
    kube.apply_yaml(&crd_yaml(&group, "Gadget", "gadgets"));
    kube.wait_for("Gadget served", Duration::from_secs(60), |k| {
        k.serves(&format!("{group}/v1"), "Gadget").then_some(())
    });
    write_custom_package(&ctx, "gadgets", "gadget-app", &group, "Gadget");
    let mut config = format!(
        "{}{}",
        PREAMBLE,
        custom_instance_config("gadgets", "gadget")
    );
    ctx.write("main.tf", &config);
    ctx.tf.apply(&[]).assert_success().assert_no_crash();

    kube.apply_yaml(&crd_yaml(&group, "Widget", "widgets"));
    kube.wait_for("Widget served", Duration::from_secs(60), |k| {
        k.serves(&format!("{group}/v1"), "Widget").then_some(())
    });
    write_custom_package(&ctx, "widgets", "widget-app", &group, "Widget");
    config.push_str(&custom_instance_config("widgets", "widget"));
    ctx.write("main.tf", &config);
    let before = ctx.sim().map(|s| s.request_counts());
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    // Counted before the test's own reads, which discover too.
    if let (Some(sim), Some(before)) = (ctx.sim(), &before) {
        let asked = discovery_made(before, &sim.request_counts());
        eprintln!("[requests] apply with the new CRD: discovery {asked:?}");
        assert_eq!(
            asked.get(&format!("/apis/{group}/v1")),
            Some(&1),
            "the group-version was asked again, once: {asked:?}"
        );
    }
    kube.must_get(
        &format!("{group}/v1"),
        "Widget",
        Some(&ctx.namespace),
        "widget-widget",
    );

    let before = ctx.sim().map(|s| s.request_counts());
    let plan = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(plan.code, Some(0), "no changes after the apply:\n{plan}");
    if let (Some(sim), Some(before)) = (ctx.sim(), &before) {
        let asked = discovery_made(before, &sim.request_counts());
        assert!(asked.is_empty(), "the plan asked {asked:?}");
    }

    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    for plural in ["gadgets", "widgets"] {
        kube.delete(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            &format!("{plural}.{group}"),
        );
    }
}
