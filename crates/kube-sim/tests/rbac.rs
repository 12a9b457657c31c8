//! Users, tokens and RBAC: who a bearer token is, and what Roles, ClusterRoles and their
//! bindings let them do, refused as the API server refuses (403, its wording).

use crate::common::*;
use http::Request;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube_sim::KubeSim;
use serde_json::{Value, json};

/// A client presenting `token` to `sim`.
async fn client_with(sim: &KubeSim, token: &str) -> Client {
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml_with_token(token))
        .expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    Client::try_from(cfg).expect("client")
}

async fn create(client: &Client, api_version: &str, kind: &str, ns: Option<&str>, v: Value) {
    let (api, _) = api_for(client, api_version, kind, ns).await;
    api.create(&PostParams::default(), &dynamic(v))
        .await
        .unwrap_or_else(|e| panic!("create {kind}: {e}"));
}

/// Namespace `team-a` with ServiceAccount `tenant`, a Role granting everything in
/// `team-a` and a RoleBinding of it to the ServiceAccount; returns a token of the
/// ServiceAccount from the TokenRequest API.
async fn tenant(admin: &Client) -> String {
    create(
        admin,
        "v1",
        "Namespace",
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    )
    .await;
    create(admin, "v1", "ServiceAccount", Some("team-a"), json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": "team-a"}})).await;
    create(
        admin,
        "rbac.authorization.k8s.io/v1",
        "Role",
        Some("team-a"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "tenant", "namespace": "team-a"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
        }),
    )
    .await;
    create(
        admin,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some("team-a"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "tenant", "namespace": "team-a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
            "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": "team-a"}]
        }),
    )
    .await;
    let req = Request::post("/api/v1/namespaces/team-a/serviceaccounts/tenant/token")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})).expect("body"))
        .expect("request");
    let answer: Value = admin.request(req).await.expect("TokenRequest");
    assert_eq!(answer["kind"], "TokenRequest");
    assert!(
        answer["status"]["expirationTimestamp"].is_string(),
        "{answer}"
    );
    answer["status"]["token"]
        .as_str()
        .expect("token")
        .to_string()
}

fn configmap(ns: &str, name: &str) -> DynamicObject {
    dynamic(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"a": "1"}}),
    )
}

const USER: &str = "system:serviceaccount:team-a:tenant";

// kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/#tokenrequest-api
// kubernetes.io/docs/reference/access-authn-authz/rbac/#role-and-clusterrole
#[tokio::test]
async fn a_service_account_token_has_its_roles_rights_in_its_namespace_only() {
    let (sim, admin) = start().await;
    let token = tenant(&admin).await;
    let client = client_with(&sim, &token).await;
    let team: Api<DynamicObject> = api_for(&client, "v1", "ConfigMap", Some("team-a")).await.0;
    team.create(&PostParams::default(), &configmap("team-a", "mine"))
        .await
        .expect("allowed in team-a");
    team.list(&ListParams::default())
        .await
        .expect("list in team-a");
    let mut pp = PatchParams::apply("tenant");
    pp.force = true;
    team.patch(
        "applied",
        &pp,
        &Patch::Apply(configmap("team-a", "applied")),
    )
    .await
    .expect("server-side apply in team-a");

    let (default, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let (code, reason, message) = api_code(
        default
            .create(&PostParams::default(), &configmap("default", "theirs"))
            .await
            .expect_err("refused outside team-a"),
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        format!(
            r#"configmaps is forbidden: User "{USER}" cannot create resource "configmaps" in API group "" in the namespace "default""#
        )
    );
    // A dry-run is authorized as the request it rehearses.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let (code, _, _) = api_code(
        default
            .create(&dry, &configmap("default", "theirs"))
            .await
            .expect_err("dry-run refused too"),
    );
    assert_eq!(code, 403);
    let (code, _, message) = api_code(
        default
            .patch("theirs", &pp, &Patch::Apply(configmap("default", "theirs")))
            .await
            .expect_err("apply refused"),
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            r#"configmaps "theirs" is forbidden: User "{USER}" cannot patch resource "configmaps" in API group "" in the namespace "default""#
        )
    );

    // Cluster-scoped objects and listings across namespaces.
    let crds: Api<DynamicObject> = api_for(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await
    .0;
    let (code, _, message) = api_code(crds.get("operators.kudo.dev").await.expect_err("refused"));
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            r#"customresourcedefinitions.apiextensions.k8s.io "operators.kudo.dev" is forbidden: User "{USER}" cannot get resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
        )
    );
    let all: Api<DynamicObject> = api_for(&client, "v1", "ConfigMap", None).await.0;
    let (_, _, message) = api_code(all.list(&ListParams::default()).await.expect_err("refused"));
    assert_eq!(
        message,
        format!(
            r#"configmaps is forbidden: User "{USER}" cannot list resource "configmaps" in API group "" at the cluster scope"#
        )
    );
    assert_eq!(
        sim.forbidden_requests().len(),
        5,
        "{:?}",
        sim.forbidden_requests()
    );
    // The admin endpoint is the administrator's.
    let req = Request::get("/_sim/stats")
        .body(Vec::new())
        .expect("request");
    let (code, _, _) = api_code(client.request_text(req).await.expect_err("refused"));
    assert_eq!(code, 403);
}

// kubernetes.io/docs/reference/access-authn-authz/rbac/#discovery-roles
#[tokio::test]
async fn discovery_is_open_to_every_authenticated_user() {
    let (sim, _admin) = start().await;
    sim.add_user_token("nobody-token", "nobody", &[]);
    let client = client_with(&sim, "nobody-token").await;
    client.apiserver_version().await.expect("/version");
    kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let (code, _, message) = api_code(
        cms.list(&ListParams::default())
            .await
            .expect_err("no rights"),
    );
    assert_eq!(code, 403);
    assert!(
        message.contains(r#"User "nobody" cannot list"#),
        "{message}"
    );
}

use k8s_openapi::api::core::v1::ConfigMap;

// kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources
// kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-subjects
#[tokio::test]
async fn cluster_roles_bind_groups_subresources_and_resource_names() {
    let (sim, admin) = start().await;
    sim.add_user_token("dev-token", "alice", &["devs"]);
    create(&admin, "rbac.authorization.k8s.io/v1", "ClusterRole", None, json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "crd-reader"},
        "rules": [
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["only-this"], "verbs": ["get", "list", "watch"]}
        ]
    })).await;
    create(&admin, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None, json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "devs-read-crds"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crd-reader"},
        "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]
    })).await;
    let client = client_with(&sim, "dev-token").await;
    let crds: Api<DynamicObject> = api_for(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await
    .0;
    crds.list(&ListParams::default())
        .await
        .expect("the group may list CRDs");
    let (code, _, message) = api_code(
        crds.delete("x.example.com", &Default::default())
            .await
            .expect_err("not delete"),
    );
    assert_eq!(code, 403);
    assert!(
        message.contains(r#"User "alice" cannot delete resource "customresourcedefinitions""#),
        "{message}"
    );

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let (code, _, _) = api_code(
        cms.get("only-this")
            .await
            .expect_err("missing, but allowed"),
    );
    assert_eq!(code, 404, "allowed by name, then not found");
    let (code, _, _) = api_code(cms.get("other").await.expect_err("refused"));
    assert_eq!(code, 403);
    // A list narrowed to the name by a field selector is a request for that name.
    cms.list(&ListParams::default().fields("metadata.name=only-this"))
        .await
        .expect("list of the one name");
    let (code, _, _) = api_code(cms.list(&ListParams::default()).await.expect_err("refused"));
    assert_eq!(code, 403);

    let deps: Api<DynamicObject> = api_for(&client, "apps/v1", "Deployment", Some("default"))
        .await
        .0;
    let (code, _, message) = api_code(deps.get_status("web").await.expect_err("missing"));
    assert_eq!(code, 404, "{message}");
    let (code, _, message) = api_code(deps.get("web").await.expect_err("refused"));
    assert_eq!(code, 403);
    assert!(
        message.starts_with(r#"deployments.apps "web" is forbidden"#),
        "{message}"
    );
}

// kubernetes.io/docs/reference/access-authn-authz/authentication/#service-account-tokens
#[tokio::test]
async fn expired_tokens_are_refused() {
    let (sim, admin) = start().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    sim.add_expiring_tokens("exec-", "alice", &["system:masters"]);
    let fresh = client_with(&sim, &format!("exec-{}", now + 600)).await;
    fresh.apiserver_version().await.expect("valid until then");
    let stale = client_with(&sim, &format!("exec-{}", now - 1)).await;
    let (code, reason, _) = api_code(stale.apiserver_version().await.expect_err("expired"));
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));
    assert_eq!(sim.expired_token_refusals(), 1);

    // The TokenRequest API issues tokens of ten minutes or more.
    create(&admin, "v1", "ServiceAccount", Some("default"), json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "short", "namespace": "default"}})).await;
    let req = Request::post("/api/v1/namespaces/default/serviceaccounts/short/token")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&json!({"spec": {"expirationSeconds": 60}})).expect("body"))
        .expect("request");
    let (code, _, message) = api_code(admin.request::<Value>(req).await.expect_err("too short"));
    assert_eq!(code, 422);
    assert_eq!(
        message,
        r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
    );
    let req = Request::post("/api/v1/namespaces/default/serviceaccounts/missing/token")
        .header("Content-Type", "application/json")
        .body(b"{}".to_vec())
        .expect("request");
    let (code, _, _) = api_code(
        admin
            .request::<Value>(req)
            .await
            .expect_err("no such account"),
    );
    assert_eq!(code, 404);
}

// kubernetes.io/docs/reference/using-api/server-side-apply/ (an apply creates what is
// missing: RBAC is asked for `patch`, then for `create`, as a real 1.36 server does)
#[tokio::test]
async fn an_apply_that_creates_needs_create_as_well_as_patch() {
    let (sim, admin) = start().await;
    sim.add_user_token("patcher-token", "patcher", &[]);
    create(
        &admin,
        "rbac.authorization.k8s.io/v1",
        "Role",
        Some("default"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "patch-only", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "patch"]}]
        }),
    )
    .await;
    create(&admin, "rbac.authorization.k8s.io/v1", "RoleBinding", Some("default"), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "patch-only", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "patch-only"},
        "subjects": [{"kind": "User", "name": "patcher", "apiGroup": "rbac.authorization.k8s.io"}]
    })).await;
    create(&admin, "v1", "ConfigMap", Some("default"), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "existing", "namespace": "default"}})).await;
    let client = client_with(&sim, "patcher-token").await;
    let (cms, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let mut pp = PatchParams::apply("patcher");
    pp.force = true;
    cms.patch(
        "existing",
        &pp,
        &Patch::Apply(configmap("default", "existing")),
    )
    .await
    .expect("patching what exists needs patch only");
    for dry_run in [true, false] {
        let mut pp = pp.clone();
        pp.dry_run = dry_run;
        let (code, _, message) = api_code(
            cms.patch("new", &pp, &Patch::Apply(configmap("default", "new")))
                .await
                .expect_err("creating needs create"),
        );
        assert_eq!(code, 403);
        assert_eq!(
            message,
            r#"configmaps "new" is forbidden: User "patcher" cannot create resource "configmaps" in API group "" in the namespace "default""#
        );
    }
}
