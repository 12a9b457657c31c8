//! Sensitive parameters: rendered into objects, kept in the instance's Secret rather
//! than the Instance spec, read back by runs that were not given them, removed with
//! the instance.

use crate::engine::{self, ANNOTATION_SENSITIVE, instance_ref, sensitive_secret_ref};
use crate::scenarios::common::*;
use tokio_util::sync::CancellationToken;

const OPERATOR: &str = r#"
name: login
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [app]
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [app]
"#;

const PARAMS: &str = r#"
parameters:
  - name: USER
    default: admin
  - name: PASSWORD
    default: none
"#;

const CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-login
data:
  user: {{ .Params.USER | quote }}
  password: {{ .Params.PASSWORD | quote }}
"#;

const SECRET: &str = "p4ss-w0rd-value";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sensitive_values_render_from_the_secret_and_never_reach_the_instance() {
    let pkg = package(OPERATOR, PARAMS, &[("cm.yaml", CM)]);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let cm = oref("v1", "ConfigMap", Some("default"), "s-login");
    let secret_ref = sensitive_secret_ref("default", "s");
    let request = |parameters| request(&pkg, "s", "default", parameters, "deploy");

    let public = params(&[("USER", "alice")]);
    let sensitive = params(&[("PASSWORD", SECRET)]);
    engine::run_plan_with_sensitive(&cluster, request(&public), &sensitive, &cancel)
        .await
        .expect("run with a sensitive value");
    let rendered = cluster.get(&cm).await.expect("get").expect("ConfigMap");
    assert_eq!(rendered["data"]["password"], SECRET, "{rendered:#}");
    assert_eq!(rendered["data"]["user"], "alice", "{rendered:#}");
    let instance = cluster
        .get(&instance_ref("default", "s"))
        .await
        .expect("get")
        .expect("Instance");
    assert!(!instance.to_string().contains(SECRET), "{instance:#}");
    assert_eq!(
        instance["metadata"]["annotations"][ANNOTATION_SENSITIVE], "s-kudo-sensitive",
        "{instance:#}"
    );
    let secret = cluster
        .get(&secret_ref)
        .await
        .expect("get")
        .expect("Secret");
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["uid"], instance["metadata"]["uid"],
        "{secret:#}"
    );
    assert_eq!(
        engine::read_sensitive(&cluster, "default", "s")
            .await
            .expect("read back"),
        sensitive
    );

    // A run that is not given the values (a cleanup, a dependency) reads them back.
    let bob = params(&[("USER", "bob")]);
    engine::run_plan(&cluster, request(&bob), &cancel)
        .await
        .expect("run without the values");
    let rendered = cluster.get(&cm).await.expect("get").expect("ConfigMap");
    assert_eq!(rendered["data"]["password"], SECRET, "{rendered:#}");
    assert_eq!(rendered["data"]["user"], "bob", "{rendered:#}");

    // An empty map means "none any more": the Secret and the annotation go.
    engine::run_plan_with_sensitive(&cluster, request(&bob), &params(&[]), &cancel)
        .await
        .expect("run without sensitive values");
    assert!(cluster.get(&secret_ref).await.expect("get").is_none());
    let rendered = cluster.get(&cm).await.expect("get").expect("ConfigMap");
    assert_eq!(rendered["data"]["password"], "none", "{rendered:#}");
    let instance = cluster
        .get(&instance_ref("default", "s"))
        .await
        .expect("get")
        .expect("Instance");
    assert!(
        instance["metadata"]["annotations"][ANNOTATION_SENSITIVE].is_null(),
        "{instance:#}"
    );

    // Uninstall removes the Secret too, after a cleanup plan that rendered with it.
    let out = engine::run_plan_with_sensitive(&cluster, request(&bob), &sensitive, &cancel)
        .await
        .expect("run again with the value");
    engine::uninstall_instance(
        &cluster,
        "default",
        "s",
        &out.inventory,
        Some(engine::Cleanup {
            dependencies: None,
            package: &pkg,
            parameters: &bob,
            render_seed: None,
        }),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("uninstall");
    assert!(cluster.get(&secret_ref).await.expect("get").is_none());
    assert!(cluster.get(&cm).await.expect("get").is_none());
}
