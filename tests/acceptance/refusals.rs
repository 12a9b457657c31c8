//! Whatever the API server would refuse fails `terraform plan` with the apply's own
//! words, and nothing is written: an object of the second phase that cannot be applied
//! must not leave the first phase, the Operator, the OperatorVersion or the Instance
//! behind. Each case is also run by `terraform apply`, whose own plan must refuse it.

use crate::harness::{PREAMBLE, TestContext, flat, refused_writing_nothing, written};

/// A two-phase package: phase `first` applies a ConfigMap, phase `second` applies
/// `second` (a template's text).
fn write_package(ctx: &TestContext, second: &str) {
    ctx.write(
        "operator/operator.yaml",
        r#"apiVersion: kudo.dev/v1beta1
name: refusal
operatorVersion: 0.1.0
kudoVersion: 0.19.0
kubernetesVersion: 1.20.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com
tasks:
  - name: first
    kind: Apply
    spec:
      resources:
        - first.yaml
  - name: second
    kind: Apply
    spec:
      resources:
        - second.yaml
plans:
  deploy:
    strategy: serial
    phases:
      - name: first
        strategy: serial
        steps:
          - name: first
            tasks:
              - first
      - name: second
        strategy: serial
        steps:
          - name: second
            tasks:
              - second
"#,
    );
    ctx.write(
        "operator/templates/first.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-first\ndata:\n  k: v\n",
    );
    ctx.write("operator/templates/second.yaml", second);
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}

resource "kudo_instance" "web" {{
  name      = "web"
  namespace = var.namespace
  operator  = kudo_operator.op.id
}}
"#
        ),
    );
}

const PSP: &str = r#"apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: {{ .Namespace }}-restricted
spec:
  privileged: false
  seLinux:
    rule: RunAsAny
  runAsUser:
    rule: RunAsAny
  supplementalGroups:
    rule: RunAsAny
  fsGroup:
    rule: RunAsAny
  volumes:
    - configMap
"#;

#[test]
fn a_removed_api_without_successor_fails_the_plan_and_writes_nothing() {
    let ctx = TestContext::new("refuse-psp");
    if ctx.kube().serves("policy/v1beta1", "PodSecurityPolicy") {
        eprintln!("SKIPPED: this cluster still serves policy/v1beta1 PodSecurityPolicy");
        return;
    }
    write_package(&ctx, PSP);
    refused_writing_nothing(
        &ctx,
        "web",
        &[
            "API removed, with nothing to replace it",
            "templates/second.yaml",
            "policy/v1beta1, which Kubernetes removed in 1.25 with nothing to replace it",
            "drop this template",
        ],
    );
}

#[test]
fn the_same_package_installs_where_the_api_is_still_served() {
    // kube-sim on 1.24; on a real cluster only when it serves PodSecurityPolicy.
    let ctx = match TestContext::on_kubernetes("refuse-psp-124", "1.24") {
        Some(ctx) => ctx,
        None => {
            let ctx = TestContext::new("refuse-psp-124");
            if !ctx.kube().serves("policy/v1beta1", "PodSecurityPolicy") {
                eprintln!("SKIPPED: this cluster does not serve PodSecurityPolicy");
                ctx.mark_cleaned();
                return;
            }
            ctx
        }
    };
    write_package(&ctx, PSP);
    ctx.tf.apply(&[]).assert_success();
    let psp = format!("{}-restricted", ctx.namespace);
    assert!(
        ctx.kube()
            .get("policy/v1beta1", "PodSecurityPolicy", None, &psp)
            .is_some()
    );
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf.destroy(&[]).assert_success();
    assert!(
        ctx.kube()
            .get("policy/v1beta1", "PodSecurityPolicy", None, &psp)
            .is_none()
    );
    ctx.mark_cleaned();
}

#[test]
fn a_secret_whose_data_is_not_base64_fails_the_plan_and_writes_nothing() {
    let ctx = TestContext::new("refuse-base64");
    write_package(
        &ctx,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-secret\ndata:\n  password: not base64!\n",
    );
    refused_writing_nothing(
        &ctx,
        "web",
        &[
            "The API server refuses this object",
            "templates/second.yaml",
            "illegal base64 data",
        ],
    );
}

#[test]
fn a_configmap_with_a_number_fails_the_plan_and_writes_nothing() {
    let ctx = TestContext::new("refuse-number");
    write_package(
        &ctx,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-numbers\ndata:\n  replicas: 3\n",
    );
    refused_writing_nothing(
        &ctx,
        "web",
        &[
            "The API server refuses this object",
            "templates/second.yaml",
            "ConfigMap",
        ],
    );
}

#[test]
fn an_invalid_object_fails_the_plan_with_every_field_the_server_names() {
    let ctx = TestContext::new("refuse-invalid");
    // Two mistakes in one object: the server names both, and so must the plan.
    write_package(
        &ctx,
        r#"apiVersion: v1
kind: Service
metadata:
  name: {{ .Name }}-svc
spec:
  ports:
    - name: a
      port: 80
    - port: 81
  type: NoSuchType
"#,
    );
    refused_writing_nothing(
        &ctx,
        "web",
        &[
            "The API server refuses this object",
            "templates/second.yaml",
            "spec.ports[1].name",
            "spec.type",
        ],
    );
}

const PROTECTED_CRD_V1: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{{ .Namespace }}.example.k8s.io
spec:
  group: {{ .Namespace }}.example.k8s.io
  scope: Namespaced
  names:
    kind: Widget
    plural: widgets
    singular: widget
    listKind: WidgetList
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

#[test]
fn a_v1_crd_of_a_protected_group_without_approval_fails_the_plan() {
    let ctx = TestContext::new("refuse-protected");
    write_package(&ctx, PROTECTED_CRD_V1);
    refused_writing_nothing(
        &ctx,
        "web",
        &[
            "The API server refuses this object",
            "templates/second.yaml",
            "api-approved.kubernetes.io",
            "protected groups must have approval annotation",
        ],
    );
    let name = format!("widgets.{}.example.k8s.io", ctx.namespace);
    assert!(
        ctx.kube()
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                &name
            )
            .is_none()
    );
}

#[test]
fn a_v1beta1_crd_of_a_protected_group_is_converted_with_the_unapproved_annotation() {
    let ctx = TestContext::new("protected-converted");
    if ctx
        .kube()
        .serves("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition")
    {
        eprintln!("SKIPPED: this cluster still serves apiextensions.k8s.io/v1beta1");
        ctx.mark_cleaned();
        return;
    }
    write_package(
        &ctx,
        r#"apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: gadgets.{{ .Namespace }}.example.k8s.io
spec:
  group: {{ .Namespace }}.example.k8s.io
  version: v1
  names:
    kind: Gadget
    plural: gadgets
"#,
    );
    let plan = ctx.tf.plan(&[]).assert_success();
    let out = flat(&plan.output());
    assert!(
        out.contains("api-approved.kubernetes.io") && out.contains("protected"),
        "the conversion warning does not mention the approval annotation:\n{plan}"
    );
    ctx.tf.apply(&[]).assert_success();
    let name = format!("gadgets.{}.example.k8s.io", ctx.namespace);
    let crd = ctx.kube().must_get(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        &name,
    );
    let approval = crd["metadata"]["annotations"]["api-approved.kubernetes.io"]
        .as_str()
        .unwrap_or_default();
    assert!(approval.starts_with("unapproved"), "{crd:#}");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
}

#[test]
fn an_operator_too_large_to_store_fails_naming_its_largest_parts_and_leaves_nothing() {
    let ctx = TestContext::new("refuse-too-large");
    write_package(
        &ctx,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-second\ndata:\n  k: v\n",
    );
    // A 2 MiB default: the OperatorVersion cannot be stored (etcd keeps objects under
    // about 1.5 MiB). The plan refuses it when the KUDO CRDs exist already; on a fresh
    // cluster the apply installs them first and then fails before any instance object.
    ctx.write(
        "operator/params.yaml",
        &format!(
            "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: BLOB\n    description: A large default.\n    default: \"{}\"\n",
            "x".repeat(2 << 20)
        ),
    );
    for _ in 0..2 {
        let run = ctx.tf.apply(&[]);
        assert!(!run.success(), "the apply passed");
        // Only the error text: the plan output repeats the 2 MiB value.
        let text = flat(&run.stderr);
        let shown: String = text.chars().take(3000).collect();
        for expected in [
            "Cannot install the operator",
            "too large",
            "parameter BLOB (its default)",
        ] {
            assert!(text.contains(expected), "no {expected:?} in:\n{shown}");
        }
        assert!(!text.contains("transient"), "{shown}");
        assert_eq!(written(&ctx, "web"), Vec::<String>::new(), "{shown}");
    }
    ctx.mark_cleaned();
}
