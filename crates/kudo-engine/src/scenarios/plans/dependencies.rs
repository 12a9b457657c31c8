//! KudoOperator dependencies: installed, owned, disabled, resolved trees, cleanup.

use crate::engine::{self, Cleanup, RunRequest, instance_ref};
use crate::scenarios::common::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const PARENT: &str = r#"
name: parent
operatorVersion: 0.1.0
tasks:
  - name: dep
    kind: KudoOperator
    spec:
      package: ../child
      parameterFile: child-params.yaml
      enablingParameter: WITH_CHILD
plans:
  deploy:
    strategy: serial
    phases:
      - name: deps
        strategy: serial
        steps:
          - name: child
            tasks: [dep]
"#;

const PARENT_PARAMS: &str = r#"
parameters:
  - name: WITH_CHILD
    type: boolean
    default: "true"
  - name: SIZE
    default: "2"
"#;

const CHILD_PARAMS: &str = "GREETING: hello-{{ .Name }}\nSIZE: {{ .Params.SIZE }}\n";

const CHILD: &str = r#"
name: child
operatorVersion: 1.0.0
tasks:
  - name: cm
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
            tasks: [cm]
"#;

const CHILD_PARAMS_YAML: &str = r#"
parameters:
  - name: GREETING
  - name: SIZE
    type: integer
"#;

const CHILD_CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-cm
data:
  greeting: {{ .Params.GREETING }}
  size: "{{ .Params.SIZE }}"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kudo_operator_dependency_is_installed_owned_and_disabled() {
    let root = temp_dir("deps");
    std::fs::create_dir_all(root.join("parent")).unwrap();
    std::fs::create_dir_all(root.join("child")).unwrap();
    write_package(
        &root.join("parent"),
        PARENT,
        PARENT_PARAMS,
        &[("child-params.yaml", CHILD_PARAMS)],
    );
    write_package(
        &root.join("child"),
        CHILD,
        CHILD_PARAMS_YAML,
        &[("cm.yaml", CHILD_CM)],
    );
    let pkg = kudo_package::Package::load_dir(&root.join("parent")).expect("parent package");
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();

    let on = params(&[("SIZE", "5")]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "p", "default", &on, "deploy"),
        &cancel,
    )
    .await
    .expect("parent deploy");
    let child = instance_ref("default", "p-child");
    assert_eq!(out.inventory, vec![child.clone()]);
    let c = cluster.get(&child).await.unwrap().expect("child instance");
    let parent = cluster
        .get(&instance_ref("default", "p"))
        .await
        .unwrap()
        .expect("parent instance");
    assert_eq!(
        c.pointer("/metadata/ownerReferences/0/uid"),
        parent.pointer("/metadata/uid")
    );
    assert_eq!(
        c.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("COMPLETE"))
    );
    let cm = oref("v1", "ConfigMap", Some("default"), "p-child-cm");
    let data = cluster.get(&cm).await.unwrap().expect("child object");
    assert_eq!(
        data.pointer("/data/greeting"),
        Some(&Value::from("hello-p"))
    );
    assert_eq!(data.pointer("/data/size"), Some(&Value::from("5")));
    assert!(
        engine::load_operator(&cluster, "default", "child-1.0.0", None)
            .await
            .unwrap()
            .is_some()
    );

    let off = params(&[("WITH_CHILD", "false")]);
    let out = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "p", "default", &off, "deploy")
        },
        &cancel,
    )
    .await
    .expect("parent deploy without the dependency");
    assert!(out.inventory.is_empty(), "{:?}", out.inventory);
    assert!(cluster.get(&child).await.unwrap().is_none());
    assert!(cluster.get(&cm).await.unwrap().is_none());
}

const REPO_PARENT: &str = r#"
name: parent
operatorVersion: 0.1.0
tasks:
  - name: middle
    kind: KudoOperator
    spec:
      package: middle
      operatorVersion: ">=1.0.0 <2.0.0"
      parameterFile: child-params.yaml
      enablingParameter: WITH_CHILD
plans:
  deploy:
    strategy: serial
    phases:
      - name: deps
        strategy: serial
        steps:
          - name: middle
            tasks: [middle]
"#;

const MIDDLE: &str = r#"
name: middle
operatorVersion: 1.2.0
tasks:
  - name: leaf
    kind: KudoOperator
    spec:
      package: https://example.invalid/leaf.tgz
  - name: cm
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
          - name: leaf
            tasks: [leaf]
          - name: cm
            tasks: [cm]
"#;

const LEAF: &str = r#"
name: leaf
operatorVersion: 3.0.0
tasks:
  - name: cm
    kind: Apply
    spec:
      resources: [cm.yaml]
  - name: boom
    kind: Dummy
    spec:
      wantErr: true
      fatal: true
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: cm
            tasks: [cm]
  broken:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: boom
            tasks: [boom]
"#;

const LEAF_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n";

/// Repository and URL dependencies run from the packages the caller resolved; a
/// disabled subtree goes away whole, and a FATAL grandchild makes the parent FATAL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolved_dependency_tree_runs_and_its_subtree_is_disabled() {
    let root = temp_dir("resolved-deps");
    for (dir, op, params, templates) in [
        (
            "parent",
            REPO_PARENT,
            PARENT_PARAMS,
            vec![("child-params.yaml", CHILD_PARAMS)],
        ),
        (
            "middle",
            MIDDLE,
            CHILD_PARAMS_YAML,
            vec![("cm.yaml", CHILD_CM)],
        ),
        ("leaf", LEAF, "", vec![("cm.yaml", LEAF_CM)]),
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        write_package(&root.join(dir), op, params, &templates);
    }
    let load = |d: &str| kudo_package::Package::load_dir(&root.join(d)).expect(d);
    let (parent, middle, mut leaf) = (load("parent"), load("middle"), load("leaf"));
    let mut deps = engine::DependencyPackages::new();
    deps.insert(&parent.operator_version_name(), "middle", middle.clone());
    deps.insert(&middle.operator_version_name(), "leaf", leaf.clone());
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let run = |parameters: &std::collections::BTreeMap<String, String>,
               deps: &engine::DependencyPackages| {
        let (cluster, cancel, parent, parameters, deps) =
            (&cluster, &cancel, &parent, parameters.clone(), deps.clone());
        async move {
            engine::run_plan(
                cluster,
                RunRequest {
                    dependencies: Some(&deps),
                    ..request(parent, "p", "default", &parameters, "deploy")
                },
                cancel,
            )
            .await
        }
    };

    let err = engine::run_plan(
        &cluster,
        request(&parent, "p", "default", &params(&[]), "deploy"),
        &cancel,
    )
    .await
    .expect_err("a repository dependency needs a resolved package");
    assert!(
        err.fatal && err.to_string().contains("no resolved package"),
        "{err}"
    );

    run(&params(&[]), &deps).await.expect("tree deploys");
    for (name, cm) in [
        ("p-middle", "p-middle-cm"),
        ("p-middle-leaf", "p-middle-leaf-cm"),
    ] {
        let i = cluster
            .get(&instance_ref("default", name))
            .await
            .unwrap()
            .expect(name);
        assert_eq!(
            i.pointer("/status/planStatus/deploy/status"),
            Some(&Value::from("COMPLETE")),
            "{name}"
        );
        let cm = oref("v1", "ConfigMap", Some("default"), cm);
        assert!(cluster.get(&cm).await.unwrap().is_some(), "{cm}");
    }

    // A new middle version renders another ConfigMap: the old one is pruned. (A child
    // whose version and parameters stay the same is left alone, so the version must
    // really change.)
    let mut renamed = middle.clone();
    renamed.operator.operator_version = "1.3.0".into();
    renamed
        .templates
        .insert("cm.yaml".into(), CHILD_CM.replace("-cm\n", "-cm2\n"));
    let mut swapped = deps.clone();
    swapped.insert(&renamed.operator_version_name(), "leaf", leaf.clone());
    swapped.insert(&parent.operator_version_name(), "middle", renamed);
    run(&params(&[]), &swapped).await.expect("new middle");
    let old_cm = oref("v1", "ConfigMap", Some("default"), "p-middle-cm");
    let new_cm = oref("v1", "ConfigMap", Some("default"), "p-middle-cm2");
    assert!(cluster.get(&old_cm).await.unwrap().is_none(), "pruned");
    assert!(cluster.get(&new_cm).await.unwrap().is_some());
    assert!(
        cluster
            .get(&oref(
                "v1",
                "ConfigMap",
                Some("default"),
                "p-middle-leaf-cm"
            ))
            .await
            .unwrap()
            .is_some(),
        "the leaf's objects are not the middle's to prune"
    );

    // Running the same tree again touches neither child.
    let rv = |obj: Option<Value>| {
        obj.and_then(|o| o.pointer("/metadata/resourceVersion").cloned())
            .expect("an object with a resourceVersion")
    };
    let (middle_ref, leaf_ref) = (
        instance_ref("default", "p-middle"),
        instance_ref("default", "p-middle-leaf"),
    );
    let before = (
        rv(cluster.get(&middle_ref).await.unwrap()),
        rv(cluster.get(&leaf_ref).await.unwrap()),
    );
    run(&params(&[]), &swapped).await.expect("same tree");
    let after = (
        rv(cluster.get(&middle_ref).await.unwrap()),
        rv(cluster.get(&leaf_ref).await.unwrap()),
    );
    assert_eq!(before, after, "settled children are left alone");

    // A new leaf version under an unchanged middle still reaches the leaf.
    let mut newer_leaf = leaf.clone();
    newer_leaf.operator.operator_version = "3.1.0".into();
    let middle_ov = swapped
        .get(&parent.operator_version_name(), "middle")
        .map(|m| m.operator_version_name())
        .expect("middle in the tree");
    swapped.insert(&middle_ov, "leaf", newer_leaf);
    run(&params(&[]), &swapped).await.expect("new leaf");
    let leaf_now = cluster.get(&leaf_ref).await.unwrap().expect("leaf");
    assert_eq!(
        leaf_now.pointer("/spec/operatorVersion/name"),
        Some(&Value::from("leaf-3.1.0"))
    );
    assert_eq!(
        leaf_now.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("COMPLETE"))
    );

    run(&params(&[("WITH_CHILD", "false")]), &deps)
        .await
        .expect("tree without the subtree");
    for name in ["p-middle", "p-middle-leaf"] {
        assert!(
            cluster
                .get(&instance_ref("default", name))
                .await
                .unwrap()
                .is_none(),
            "{name}"
        );
    }
    let leaf_cm = oref("v1", "ConfigMap", Some("default"), "p-middle-leaf-cm");
    assert!(cluster.get(&leaf_cm).await.unwrap().is_none());

    // The leaf's deploy plan now fails fatally: the whole chain reports FATAL.
    if let Some(plan) = leaf.operator.plans.remove("broken") {
        leaf.operator.plans.insert("deploy".into(), plan);
    }
    deps.insert(&middle.operator_version_name(), "leaf", leaf);
    let err = run(&params(&[]), &deps)
        .await
        .expect_err("fatal grandchild");
    assert!(err.fatal, "{err}");
    assert!(err.to_string().contains("p-middle-leaf"), "{err}");
    assert_eq!(
        err.to_string().matches("FATAL_ERROR").count(),
        1,
        "the verdict is stated once: {err}"
    );
    let p = cluster
        .get(&instance_ref("default", "p"))
        .await
        .unwrap()
        .expect("parent");
    assert_eq!(
        p.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("FATAL_ERROR"))
    );
}

const CLEANUP_PARENT: &str = r#"
name: tidy
operatorVersion: 0.1.0
tasks:
  - name: noop
    kind: Dummy
    spec:
      done: true
  - name: leaf
    kind: KudoOperator
    spec:
      package: https://example.invalid/leaf.tgz
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: noop
            tasks: [noop]
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: leaf
            tasks: [leaf]
"#;

/// A cleanup plan's KudoOperator task runs a URL dependency from the tree the caller
/// resolved, as the other plans do; without the tree it cannot, and nothing is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_runs_dependencies_from_the_resolved_tree() {
    let pkg = package(CLEANUP_PARENT, "", &[]);
    let leaf = package(LEAF, "", &[("cm.yaml", LEAF_CM)]);
    let mut deps = engine::DependencyPackages::new();
    deps.insert(&pkg.operator_version_name(), "leaf", leaf);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let none = params(&[]);
    let out = engine::run_plan(
        &cluster,
        RunRequest {
            dependencies: Some(&deps),
            ..request(&pkg, "c", "default", &none, "deploy")
        },
        &cancel,
    )
    .await
    .expect("deploy");
    let cleanup = |dependencies| Cleanup {
        dependencies,
        package: &pkg,
        parameters: &none,
        render_seed: None,
    };

    let err = engine::uninstall_instance(
        &cluster,
        "default",
        "c",
        &out.inventory,
        Some(cleanup(None)),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect_err("a URL dependency needs the resolved tree");
    assert!(
        err.plan.as_deref() == Some("cleanup") && err.to_string().contains("no resolved package"),
        "{err}"
    );
    let instance = instance_ref("default", "c");
    assert!(cluster.get(&instance).await.unwrap().is_some());

    engine::uninstall_instance(
        &cluster,
        "default",
        "c",
        &out.inventory,
        Some(cleanup(Some(&deps))),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("cleanup runs the dependency from the tree");
    for gone in [
        instance,
        instance_ref("default", "c-leaf"),
        oref("v1", "ConfigMap", Some("default"), "c-leaf-cm"),
    ] {
        assert!(
            cluster.get(&gone).await.unwrap().is_none(),
            "{gone} removed"
        );
    }
}

/// A dependency instance waits by its parent's health policy: the parent's rule for
/// ConfigMaps holds the child's ConfigMap until it is cancelled, and the cause chain
/// names the rule and the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_instances_inherit_the_health_policy() {
    let root = temp_dir("deps-health");
    std::fs::create_dir_all(root.join("parent")).unwrap();
    std::fs::create_dir_all(root.join("child")).unwrap();
    write_package(
        &root.join("parent"),
        PARENT,
        PARENT_PARAMS,
        &[("child-params.yaml", CHILD_PARAMS)],
    );
    write_package(
        &root.join("child"),
        CHILD,
        CHILD_PARAMS_YAML,
        &[("cm.yaml", CHILD_CM)],
    );
    let pkg = kudo_package::Package::load_dir(&root.join("parent")).expect("parent package");
    let rules = engine::ReadyRules::new([(
        String::new(),
        "ConfigMap".to_string(),
        "self.data.size == '7'".to_string(),
    )])
    .expect("rule compiles");
    let policy = engine::HealthPolicy::Ready(rules);

    let (_sim, cluster) = sim().await;
    let seven = params(&[("SIZE", "7")]);
    bounded(run(
        &cluster,
        RunRequest {
            health: &policy,
            progress: None,
            ..request(&pkg, "p", "default", &seven, "deploy")
        },
    ))
    .await
    .expect("the child's ConfigMap passes the rule");

    let (sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let two = params(&[("SIZE", "2")]);
    let waiting = engine::run_plan(
        &cluster,
        RunRequest {
            health: &policy,
            progress: None,
            ..request(&pkg, "q", "default", &two, "deploy")
        },
        &cancel,
    );
    let stop = async {
        eventually("the child's wait to watch its ConfigMap", || async {
            sim.request_counts()
                .get("watch configmaps")
                .is_some_and(|n| *n >= 1)
        })
        .await;
        cancel.cancel();
    };
    let (result, ()) = bounded(async { tokio::join!(waiting, stop) }).await;
    let err = result.expect_err("cancelled");
    let mut chain = Vec::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = cause {
        chain.push(e.to_string());
        cause = e.source();
    }
    assert!(
        chain
            .iter()
            .any(|m| m.contains(r#"rule "self.data.size == '7'" is false (self.data.size = "2")"#)),
        "{chain:#?}"
    );
}
