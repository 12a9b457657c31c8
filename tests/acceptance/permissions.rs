//! Least privilege: the roles `docs/guides/permissions.md` documents
//! (`examples/permissions/*.yaml`, applied as they are, with the tenant's namespace
//! `team-a` renamed to the test's), a tenant that runs a namespaced package with rights
//! in its namespace only, and the plans that fail naming the permission a credential
//! lacks.

use crate::harness::{Terraform, TestContext, refused_writing_nothing, repo_root};

/// `examples/permissions/<file>` with namespace `team-a` renamed to `namespace`.
fn role_file(file: &str, namespace: &str) -> String {
    let path = repo_root().join("examples/permissions").join(file);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.replace("namespace: team-a", &format!("namespace: {namespace}"))
}

/// A provider block of `host`, `token` and `cluster_ca_certificate` variables (set by
/// [`use_token`]), with `resources` after it.
fn token_config(resources: &str) -> String {
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{
      source = "kudo/kudo"
    }}
  }}
}}

variable "namespace" {{
  type = string
}}

variable "host" {{
  type = string
}}

variable "token" {{
  type      = string
  sensitive = true
}}

variable "cluster_ca_certificate" {{
  type = string
}}

provider "kudo" {{
  host                   = var.host
  token                  = var.token
  cluster_ca_certificate = var.cluster_ca_certificate
}}
{resources}"#
    )
}

/// Terraform of `ctx` authenticates with `token` alone: the harness's kubeconfig (the
/// administrator's) is not read.
fn use_token(ctx: &mut TestContext, token: &str) {
    let connection = ctx.connection();
    ctx.tf.remove_env("KUBE_CONFIG_PATH");
    ctx.tf.set_env("TF_VAR_host", &connection.host);
    ctx.tf.set_env("TF_VAR_token", token);
    ctx.tf.set_env(
        "TF_VAR_cluster_ca_certificate",
        &connection.cluster_ca_certificate,
    );
}

/// A package whose one plan writes a ConfigMap in the instance's namespace.
fn write_configmap_package(ctx: &TestContext) {
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::serial_operator_yaml("tenant-app", "0.1.0", &["config"]),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  greeting: hello\n",
    );
}

/// The administrator of the guide (examples/permissions/kudo-admin.yaml, nothing else)
/// installs the package of `ctx` as an operator in a namespace of its own and removes
/// it again: KUDO's CRDs stay, as they do after `kubectl kudo init`. Terraform of `ctx`
/// must have `TF_VAR_host` and `TF_VAR_cluster_ca_certificate` set.
pub(crate) fn admin_installs_kudo(ctx: &TestContext) {
    let kube = ctx.kube();
    kube.apply_yaml(&role_file("kudo-admin.yaml", &ctx.namespace));
    let platform = format!("{}-platform", ctx.namespace);
    kube.create_namespace(&platform);
    let token = kube.create_token("kube-system", "kudo-admin", 3600);
    let dir = ctx.workdir.with_file_name("admin");
    let mut tf = Terraform {
        workdir: dir.clone(),
        ..ctx.tf.clone()
    };
    tf.set_env("TF_VAR_namespace", &platform);
    tf.set_env("TF_VAR_token", &token);
    crate::harness::copy_dir(&ctx.workdir.join("operator"), &dir.join("operator"));
    std::fs::write(
        dir.join("main.tf"),
        token_config(
            r#"
resource "kudo_operator" "app" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}
"#,
        ),
    )
    .expect("write the administrator's main.tf");
    tf.apply(&[]).assert_success();
    tf.destroy(&[]).assert_success();
    kube.delete_namespace(&platform);
}

const TENANT_RESOURCES: &str = r#"
resource "kudo_operator" "app" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

resource "kudo_instance" "app" {
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.app.id
}
"#;

/// Every request RBAC refused during the test, on kube-sim: the tenant's runs may only
/// have been refused listings in its own namespace (the sweep for labelled objects
/// skips kinds the credentials may not list), never a request outside it.
fn assert_only_namespaced_listings_refused(ctx: &TestContext) {
    let Some(sim) = ctx.sim() else { return };
    for message in sim.forbidden_requests() {
        assert!(
            message.contains(" cannot list resource ")
                && message.ends_with(&format!("in the namespace {:?}", ctx.namespace)),
            "the tenant asked for more than its namespace: {message}"
        );
    }
}

// The tenant of the guide installs an operator and runs an instance of it in its
// namespace, plans nothing more, refreshes, imports both back and destroys them, with the
// Role of examples/permissions/kudo-tenant.yaml and nothing else; the administrator of
// examples/permissions/kudo-admin.yaml installed KUDO's CRDs before.
#[test]
fn a_tenant_with_rights_in_its_namespace_only_runs_a_namespaced_package() {
    let mut ctx = TestContext::new("perm-tenant");
    let ns = ctx.namespace.clone();
    ctx.kube().apply_yaml(&role_file("kudo-tenant.yaml", &ns));
    let token = ctx.kube().create_token(&ns, "tenant", 3600);
    use_token(&mut ctx, &token);
    write_configmap_package(&ctx);
    admin_installs_kudo(&ctx);
    if let Some(sim) = ctx.sim() {
        assert_eq!(
            sim.forbidden_requests(),
            Vec::<String>::new(),
            "the administrator's role lacks something"
        );
    }
    ctx.write("main.tf", &token_config(TENANT_RESOURCES));

    ctx.tf.apply(&[]).assert_success();
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ns), "app-config");
    assert_eq!(cm["data"]["greeting"], "hello");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf
        .run(&["apply", "-refresh-only", "-auto-approve"])
        .assert_success();
    ctx.tf
        .run(&["state", "rm", "kudo_instance.app", "kudo_operator.app"])
        .assert_success();
    ctx.tf
        .import("kudo_operator.app", &format!("{ns}/tenant-app-0.1.0"), &[])
        .assert_success();
    ctx.tf
        .import("kudo_instance.app", &format!("{ns}/app"), &[])
        .assert_success();
    // The cluster does not record an operator's package folder: the first apply after
    // its import records it and changes nothing in the cluster.
    ctx.tf.apply(&[]).assert_success();
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert_eq!(
        ctx.kube().get("v1", "ConfigMap", Some(&ns), "app-config"),
        None
    );
    assert_eq!(ctx.kube().instance(&ns, "app"), None);
    assert_eq!(
        ctx.kube().get(
            "kudo.dev/v1beta1",
            "OperatorVersion",
            Some(&ns),
            "tenant-app-0.1.0"
        ),
        None
    );
    assert_only_namespaced_listings_refused(&ctx);
}

/// The tenant of the guide in a fresh test namespace, KUDO's CRDs installed by the
/// administrator of the guide; Terraform of the context authenticates as the tenant.
fn tenant_context(test: &str) -> TestContext {
    let mut ctx = TestContext::new(test);
    let ns = ctx.namespace.clone();
    ctx.kube().apply_yaml(&role_file("kudo-tenant.yaml", &ns));
    let token = ctx.kube().create_token(&ns, "tenant", 3600);
    use_token(&mut ctx, &token);
    write_configmap_package(&ctx);
    if !ctx.kube().serves("kudo.dev/v1beta1", "Instance") {
        admin_installs_kudo(&ctx);
    }
    ctx
}

/// The rule of a refusal's advice, as the diagnostic prints it.
fn rule(group: &str, resource: &str) -> String {
    format!(
        "- apiGroups: [\"{group}\"]\n    resources: [\"{resource}\"]\n    verbs: [\"create\", \"patch\"]"
    )
}

// A package that writes a ClusterRole needs rights at the cluster scope the tenant
// lacks: the plan fails with the API server's refusal of the apply, naming the object,
// the verb and resource, and the rule that would allow it.
#[test]
fn a_cluster_role_package_fails_the_tenants_plan_naming_the_permission() {
    let ctx = tenant_context("perm-clusterrole");
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::serial_operator_yaml("tenant-app", "0.1.0", &["config", "reader"]),
    );
    ctx.write(
        "operator/templates/reader.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Namespace }}-reader\nrules:\n  - apiGroups: [\"\"]\n    resources: [\"configmaps\"]\n    verbs: [\"get\"]\n",
    );
    ctx.write("main.tf", &token_config(TENANT_RESOURCES));
    let ns = &ctx.namespace;
    refused_writing_nothing(
        &ctx,
        "app",
        &[
            "Error: Not allowed for these credentials",
            "(rendered from templates/reader.yaml)",
            &format!(
                r#"clusterroles.rbac.authorization.k8s.io "{ns}-reader" is forbidden: User "system:serviceaccount:{ns}:tenant" cannot patch resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope"#
            ),
            &format!(
                r#"These credentials (User "system:serviceaccount:{ns}:tenant") may not patch clusterroles.rbac.authorization.k8s.io at the cluster scope."#
            ),
            "a ClusterRole bound to them by a ClusterRoleBinding, with this rule (docs/guides/permissions.md lists what the provider needs):",
            &rule("rbac.authorization.k8s.io", "clusterroles"),
        ],
    );
}

// A package with a CRD the administrator installed: the tenant may not read it, so CRD
// upgrade safety cannot compare it, and may not change it, which the plan says in the
// words of the apply.
#[test]
fn a_crd_package_fails_the_tenants_plan_naming_the_permission() {
    let ctx = tenant_context("perm-crd");
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::serial_operator_yaml("tenant-app", "0.1.0", &["config", "crd"]),
    );
    let group = format!("{}.example.com", ctx.namespace);
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n"
    );
    ctx.kube().apply(&kudo_yaml::to_json(&crd).expect("CRD"));
    ctx.write("operator/templates/crd.yaml", &crd);
    ctx.write("main.tf", &token_config(TENANT_RESOURCES));
    let ns = &ctx.namespace;
    refused_writing_nothing(
        &ctx,
        "app",
        &[
            "Error: Not allowed for these credentials",
            &format!(
                r#"customresourcedefinitions.apiextensions.k8s.io "widgets.{group}" is forbidden: User "system:serviceaccount:{ns}:tenant" cannot patch resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
            ),
            &rule("apiextensions.k8s.io", "customresourcedefinitions"),
        ],
    );
    ctx.kube().delete(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        &format!("widgets.{group}"),
    );
}

// KUDO's CRDs are missing and the tenant may not install them: the plan says so, with
// the API server's refusal of the install.
#[test]
fn missing_kudo_crds_fail_the_tenants_plan_naming_the_permission() {
    let mut ctx = TestContext::new("perm-nocrds");
    if ctx.kube().serves("kudo.dev/v1beta1", "Instance") {
        crate::skip!(
            "KUDO's CRDs are installed in this cluster; the test needs a cluster without them"
        );
    }
    let ns = ctx.namespace.clone();
    ctx.kube().apply_yaml(&role_file("kudo-tenant.yaml", &ns));
    let token = ctx.kube().create_token(&ns, "tenant", 3600);
    use_token(&mut ctx, &token);
    write_configmap_package(&ctx);
    ctx.write("main.tf", &token_config(TENANT_RESOURCES));
    refused_writing_nothing(
        &ctx,
        "app",
        &[
            "Error: Cannot install the KUDO CRDs",
            "KUDO's CustomResourceDefinitions (operators.kudo.dev, operatorversions.kudo.dev, instances.kudo.dev) are not installed in this cluster",
            &format!(
                r#"customresourcedefinitions.apiextensions.k8s.io "operators.kudo.dev" is forbidden: User "system:serviceaccount:{ns}:tenant" cannot patch resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
            ),
            &rule("apiextensions.k8s.io", "customresourcedefinitions"),
        ],
    );
    assert!(
        !ctx.kube().serves("kudo.dev/v1beta1", "Instance"),
        "the CRDs were installed"
    );
}

// The guide shows the role files exactly as the tests apply them.
#[test]
fn the_permissions_guide_shows_the_role_files_as_they_are() {
    let guide = std::fs::read_to_string(repo_root().join("docs/guides/permissions.md"))
        .expect("read the permissions guide");
    for file in ["kudo-admin.yaml", "kudo-tenant.yaml"] {
        let text = std::fs::read_to_string(repo_root().join("examples/permissions").join(file))
            .unwrap_or_else(|e| panic!("read {file}: {e}"));
        assert!(
            guide.contains(&format!("```yaml\n{text}```")),
            "docs/guides/permissions.md does not show examples/permissions/{file} as it is"
        );
    }
}

// `create_namespace` needs the right to create namespaces, which the tenant's Role
// cannot grant: the plan's dry-run fails as the apply would, naming the permission,
// and nothing is written.
#[test]
fn create_namespace_fails_the_tenants_plan_naming_the_permission() {
    let ctx = tenant_context("perm-create-ns");
    let target = format!("{}-new", ctx.namespace);
    ctx.write(
        "main.tf",
        &token_config(&format!(
            r#"
resource "kudo_operator" "app" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}

resource "kudo_instance" "app" {{
  name             = "app"
  namespace        = {target:?}
  operator         = kudo_operator.app.id
  create_namespace = true
}}
"#
        )),
    );
    let ns = &ctx.namespace;
    refused_writing_nothing(
        &ctx,
        "app",
        &[
            &format!("Error: Cannot create namespace {target}"),
            &format!(
                r#"These credentials (User "system:serviceaccount:{ns}:tenant") may not create namespaces at the cluster scope."#
            ),
        ],
    );
    assert!(
        ctx.kube().get("v1", "Namespace", None, &target).is_none(),
        "the tenant's plan created the namespace"
    );
}

/// The tenant's resources, its instance with a write-only value (rendered into its
/// ConfigMap).
fn write_only_resources() -> String {
    let line = "  operator  = kudo_operator.app.id\n";
    let resources = TENANT_RESOURCES.replace(
        line,
        &format!("{line}  parameters_wo = {{ GREETING = \"hello-from-wo\" }}\n  parameters_wo_version = 1\n"),
    );
    assert!(resources.contains("parameters_wo_version"), "{resources}");
    resources
}

// An instance with write-only values, planned with credentials that may not read
// Secrets: the apply of any change would fail reading the values the instance keeps in
// its Secret (the version did not change), so the plan fails first, in the apply's
// words (the same refusal), and nothing is written. The tenant's own credentials then
// destroy it.
#[test]
fn credentials_that_may_not_read_secrets_fail_the_plan_of_write_only_values() {
    let mut ctx = tenant_context("perm-wo-secrets");
    let ns = ctx.namespace.clone();
    ctx.write(
        "operator/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GREETING\n    default: hello\n",
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  greeting: {{ .Params.GREETING | quote }}\n",
    );
    // A second account of the guide's tenant rights less Secrets.
    let no_secrets = role_file("kudo-tenant.yaml", &ns)
        .replace("\"secrets\", ", "")
        .replace("name: kudo-tenant", "name: kudo-no-secrets")
        .replace("name: tenant\n", "name: no-secrets\n");
    assert!(
        !no_secrets.contains("\"secrets\"") && no_secrets.contains("name: no-secrets"),
        "{no_secrets}"
    );
    ctx.kube().apply_yaml(&no_secrets);
    ctx.write("main.tf", &token_config(&write_only_resources()));
    ctx.tf.apply(&[]).assert_success();
    let greeting = |ctx: &TestContext| {
        let cm = ctx
            .kube()
            .must_get("v1", "ConfigMap", Some(&ns), "app-config");
        cm["data"]["greeting"].as_str().map(str::to_string)
    };
    assert_eq!(greeting(&ctx).as_deref(), Some("hello-from-wo"));

    let token = ctx.kube().create_token(&ns, "no-secrets", 3600);
    use_token(&mut ctx, &token);
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = crate::harness::flat(&run.output());
    for text in [
        "Cannot read the write-only parameters",
        &format!(r#"User "system:serviceaccount:{ns}:no-secrets" cannot get resource "secrets""#),
    ] {
        assert!(out.contains(text), "the plan does not say {text:?}:\n{run}");
    }
    assert!(!out.contains("hello-from-wo"), "{run}");
    assert_eq!(greeting(&ctx).as_deref(), Some("hello-from-wo"));

    let token = ctx.kube().create_token(&ns, "tenant", 3600);
    use_token(&mut ctx, &token);
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
}
