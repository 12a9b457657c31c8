//! The examples under `examples/terraform/`, run as a user would: `terraform fmt
//! -check`, `terraform validate`, apply, a change, destroy.

use serde_json::Value;

use crate::harness::{FileServer, TestContext, fixture_operator, tool};
use crate::semantics::path_str;
use crate::skip;

/// Copies the example in and checks what `terraform fmt` and `validate` say.
fn prepare(name: &str) -> TestContext {
    let ctx = TestContext::new(&format!("example-{name}"));
    ctx.use_example(name);
    ctx.tf
        .run(&["fmt", "-check", "-recursive", "-no-color"])
        .assert_success();
    if ctx.workdir.join("modules").is_dir() {
        // Local modules must be "installed" (linked) before validate; providers come
        // from the test's dev override, so `init` is not needed.
        ctx.tf.run(&["get", "-no-color"]).assert_success();
    }
    ctx.tf
        .run(&["validate", "-no-color"])
        .assert_success()
        .assert_output_contains("The configuration is valid");
    ctx
}

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v:#}"))
        .to_string()
}

fn connection(ns: &str, size: usize) -> String {
    (0..size)
        .map(|i| format!("zk-{i}.zk-hs.{ns}:2181"))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn composition_feeds_one_instances_output_into_another_and_updates_both_in_one_apply() {
    let ctx = prepare("composition");
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success().assert_no_crash();

    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["zookeeper_connection"]), connection(ns, 3));
    assert_eq!(
        outputs["broker_zk_uri"], outputs["zookeeper_connection"],
        "{outputs:#?}"
    );
    let kube = ctx.kube();
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "broker-config");
    assert_eq!(
        text(&cm["data"]["server.properties"]).trim(),
        format!("zookeeper.connect={}", connection(ns, 3)),
        "{cm:#}"
    );

    // One plan shows both instances changing; one apply does both.
    let plan = ctx.tf.plan(&["-var", "zookeeper_size=5"]).assert_success();
    for address in [
        "module.zookeeper.kudo_instance.zk",
        "module.broker.kudo_instance.broker",
    ] {
        assert!(
            plan.stdout
                .contains(&format!("{address} will be updated in-place")),
            "{address} is not updated by the size change:\n{}",
            plan.stdout
        );
    }
    ctx.tf
        .apply(&["-var", "zookeeper_size=5"])
        .assert_success()
        .assert_no_crash();
    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["zookeeper_connection"]), connection(ns, 5));
    assert_eq!(text(&outputs["broker_zk_uri"]), connection(ns, 5));
    let sts = kube.must_get("apps/v1", "StatefulSet", Some(ns), "zk");
    assert_eq!(sts["spec"]["replicas"], 5, "{sts:#}");
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "broker-config");
    assert!(
        text(&cm["data"]["server.properties"]).contains(&connection(ns, 5)),
        "{cm:#}"
    );
    ctx.tf
        .plan(&["-var", "zookeeper_size=5", "-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    ctx.tf
        .destroy(&["-var", "zookeeper_size=5"])
        .assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("zk").is_empty());
    assert!(ctx.instance_objects("broker").is_empty());
}

#[test]
fn extension_example_runs_the_base_deploy_and_an_added_plan() {
    let ctx = prepare("extension");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(text(&ctx.tf.outputs()["last_plan"]), "deploy");
    assert!(
        !ctx.instance_objects("db").is_empty(),
        "the base's deploy plan created nothing"
    );

    let load = ["-var", r#"triggers={load="1"}"#];
    ctx.tf.apply(&load).assert_success();
    assert_eq!(text(&ctx.tf.outputs()["last_plan"]), "load");
    let instance = ctx
        .kube()
        .instance(&ctx.namespace, "db")
        .expect("Instance object");
    assert_eq!(
        instance["status"]["planStatus"]["load"]["status"], "COMPLETE",
        "{instance:#}"
    );

    let destroy = ctx.tf.destroy(&load).assert_success();
    ctx.mark_cleaned();
    let left = ctx.left_after_destroy("db", &destroy.output());
    assert!(left.is_empty(), "{left:#?}");
}

/// `children` of a `kudo_instance` in the state, as (name, operator, version, enabled).
fn children(ctx: &TestContext, address: &str) -> Vec<(String, String, String, bool)> {
    let state = ctx.tf.state();
    let inst = state.resource(address).expect("instance in state");
    inst["children"]
        .as_array()
        .unwrap_or_else(|| panic!("children is a list: {inst:#}"))
        .iter()
        .map(|c| {
            (
                text(&c["name"]),
                text(&c["operator"]),
                text(&c["operator_version"]),
                c["enabled"]
                    .as_bool()
                    .unwrap_or_else(|| panic!("enabled is a bool: {c:#}")),
            )
        })
        .collect()
}

fn child(
    name: &str,
    operator: &str,
    version: &str,
    enabled: bool,
) -> (String, String, String, bool) {
    (name.into(), operator.into(), version.into(), enabled)
}

/// The named Instance exists and its deploy plan completed.
#[track_caller]
fn deployed_instance(ctx: &TestContext, name: &str) -> Value {
    let inst = ctx
        .kube()
        .instance(&ctx.namespace, name)
        .unwrap_or_else(|| panic!("Instance {name} exists"));
    assert_eq!(
        inst["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
        "{name}: {inst:#}"
    );
    inst
}

fn operator_version(ctx: &TestContext, name: &str) -> Option<Value> {
    ctx.kube().get(
        "kudo.dev/v1beta1",
        "OperatorVersion",
        Some(&ctx.namespace),
        name,
    )
}

#[test]
fn conditional_dependency_example_switches_the_child_on_with_a_variable_and_destroys_both() {
    let ctx = prepare("conditional-dependency");
    let ns = ctx.namespace.as_str();
    let configmap = |name: &str| ctx.kube().get("v1", "ConfigMap", Some(ns), name);

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx, "kudo_instance.shop"),
        vec![child("shop-metrics", "metrics", "0.1.0", false)]
    );
    let outputs = ctx.tf.outputs();
    assert_eq!(outputs["children"][0]["enabled"], false, "{outputs:#?}");
    assert_eq!(outputs["running_children"], serde_json::json!([]));
    assert_eq!(
        outputs["install_order"],
        serde_json::json!(["metrics-0.1.0", "shop-0.1.0"])
    );
    deployed_instance(&ctx, "shop");
    assert!(ctx.kube().instance(ns, "shop-metrics").is_none());
    assert!(configmap("shop-metrics-collector").is_none());
    assert!(ctx.instance_objects("shop-metrics").is_empty());
    let shop = configmap("shop-config").expect("the parent's ConfigMap");
    assert_eq!(shop["data"]["monitoring"], "false", "{shop:#}");

    let on = ["-var", "monitoring=true", "-var", "scrape_interval=15s"];
    let plan = ctx.tf.plan(&on).assert_success();
    assert!(
        plan.stdout
            .contains("kudo_instance.shop will be updated in-place")
            && plan.stdout.contains("false -> true"),
        "the plan shows the child switching on:\n{plan}"
    );
    ctx.tf.apply(&on).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx, "kudo_instance.shop"),
        vec![child("shop-metrics", "metrics", "0.1.0", true)]
    );
    let outputs = ctx.tf.outputs();
    assert_eq!(
        outputs["running_children"],
        serde_json::json!(["shop-metrics"])
    );
    assert_eq!(
        outputs["children"][0]["parameters"]["SCRAPE_INTERVAL"], "15s",
        "{outputs:#?}"
    );
    let metrics = deployed_instance(&ctx, "shop-metrics");
    assert_eq!(
        metrics["spec"]["operatorVersion"]["name"], "metrics-0.1.0",
        "{metrics:#}"
    );
    deployed_instance(&ctx, "shop");
    let collector = configmap("shop-metrics-collector").expect("the child's ConfigMap");
    assert_eq!(collector["data"]["interval"], "15s", "{collector:#}");
    assert_eq!(collector["data"]["target"], "shop-config", "{collector:#}");
    let shop = configmap("shop-config").expect("the parent's ConfigMap");
    assert_eq!(shop["data"]["monitoring"], "true", "{shop:#}");
    ctx.tf
        .plan(&[&on[..], &["-detailed-exitcode"]].concat())
        .assert_success()
        .assert_output_contains("No changes");

    ctx.tf.destroy(&on).assert_success();
    ctx.mark_cleaned();
    for name in ["shop-metrics", "shop"] {
        assert!(ctx.kube().instance(ns, name).is_none(), "{name} removed");
        assert!(
            ctx.instance_objects(name).is_empty(),
            "{name}'s objects removed"
        );
    }
    for ov in ["metrics-0.1.0", "shop-0.1.0"] {
        assert!(operator_version(&ctx, ov).is_none(), "{ov} removed");
    }
}

/// The plan output names `version` as a chosen `operator_version` (Terraform pads
/// the `=` to align a block's attributes).
fn chosen(plan: &str, version: &str) -> bool {
    plan.lines().any(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.contains(&"operator_version")
            && words.last() == Some(&format!("{version:?}").as_str())
    })
}

#[test]
fn version_ranges_example_picks_the_newest_in_range_and_an_override_pins_another() {
    let ctx = prepare("version-ranges");
    let ns = ctx.namespace.as_str();

    // Without a URL the example reads its own folder of packages.
    let plan = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    assert!(
        chosen(&plan.stdout, "1.2.0") && !chosen(&plan.stdout, "2.0.0"),
        "the folder repository resolves the range to 1.2.0:\n{plan}"
    );

    // Published as a user would: archives and an index, served over HTTP.
    let served = ctx.workdir.join("served");
    std::fs::create_dir_all(&served).expect("served dir");
    let server = FileServer::start(served.clone());
    let served_dir = served.to_str().expect("utf-8");
    for v in ["1.0.0", "1.2.0", "2.0.0"] {
        let package = ctx.workdir.join(format!("repository/cache-{v}"));
        tool(&[
            "package",
            "create",
            package.to_str().expect("utf-8"),
            "-o",
            served_dir,
        ]);
    }
    tool(&["repo", "index", served_dir, "--url", &server.url]);
    // Nothing to fall back on: the packages can only come from the server.
    std::fs::remove_dir_all(ctx.workdir.join("repository")).expect("remove the folder");
    let repo_var = format!("repository_url={}", server.url);
    let base = ["-var", repo_var.as_str()];

    let plan = ctx.tf.plan(&base).assert_success();
    assert!(
        chosen(&plan.stdout, "1.2.0") && !chosen(&plan.stdout, "2.0.0"),
        "the plan shows 1.2.0 chosen from the served repository:\n{plan}"
    );
    ctx.tf.apply(&base).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx, "kudo_instance.app"),
        vec![child("app-cache", "cache", "1.2.0", true)]
    );
    let state = ctx.tf.state();
    let dependency = &state
        .resource("kudo_operator.app")
        .expect("operator in state")["dependencies"][0];
    assert!(
        text(&dependency["constraint"]).ends_with(">=1.0.0 <2.0.0"),
        "{dependency:#}"
    );
    assert_eq!(dependency["source"], "repository example", "{dependency:#}");
    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["cache_version"]), "1.2.0");
    assert_eq!(
        outputs["install_order"],
        serde_json::json!(["cache-1.2.0", "app-0.1.0"])
    );
    let cache = deployed_instance(&ctx, "app-cache");
    assert_eq!(
        cache["spec"]["operatorVersion"]["name"], "cache-1.2.0",
        "{cache:#}"
    );
    let settings = || {
        ctx.kube()
            .must_get("v1", "ConfigMap", Some(ns), "app-cache-settings")
    };
    assert_eq!(settings()["data"]["release"], "1.2.0");
    assert!(operator_version(&ctx, "cache-2.0.0").is_none());
    deployed_instance(&ctx, "app");

    // An older child is a downgrade, refused until the example's allow_downgrade is set.
    let pinned = [&base[..], &["-var", r#"overrides={cache="1.0.0"}"#]].concat();
    let refused = ctx.tf.plan(&pinned).assert_clean_error();
    assert!(
        crate::harness::flat(&refused.output()).contains("- app-cache (cache): 1.2.0 -> 1.0.0"),
        "{refused}"
    );
    let pinned = [&pinned[..], &["-var", "allow_downgrade=true"]].concat();
    let plan = ctx.tf.plan(&pinned).assert_success();
    assert!(
        plan.stdout.contains(r#""1.2.0" -> "1.0.0""#)
            && plan
                .stdout
                .contains("kudo_instance.app will be updated in-place")
            && !plan.stdout.contains("must be replaced"),
        "the plan moves the child to 1.0.0 in place:\n{plan}"
    );
    ctx.tf.apply(&pinned).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx, "kudo_instance.app"),
        vec![child("app-cache", "cache", "1.0.0", true)]
    );
    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["cache_version"]), "1.0.0");
    let constraint = text(&outputs["dependencies"][0]["constraint"]);
    assert!(
        constraint.contains("user override") && !constraint.contains("<2.0.0"),
        "the override replaces the range: {outputs:#?}"
    );
    let moved = deployed_instance(&ctx, "app-cache");
    assert_eq!(
        moved["spec"]["operatorVersion"]["name"], "cache-1.0.0",
        "{moved:#}"
    );
    assert_eq!(
        moved["metadata"]["uid"], cache["metadata"]["uid"],
        "the same child Instance, not a new one"
    );
    assert_eq!(settings()["data"]["release"], "1.0.0");
    assert!(operator_version(&ctx, "cache-1.0.0").is_some());
    assert!(
        operator_version(&ctx, "cache-1.2.0").is_none(),
        "the version no longer used is removed"
    );
    ctx.tf
        .plan(&[&pinned[..], &["-detailed-exitcode"]].concat())
        .assert_success()
        .assert_output_contains("No changes");

    ctx.tf.destroy(&pinned).assert_success();
    ctx.mark_cleaned();
    for name in ["app-cache", "app"] {
        assert!(ctx.kube().instance(ns, name).is_none(), "{name} removed");
        assert!(
            ctx.instance_objects(name).is_empty(),
            "{name}'s objects removed"
        );
    }
    for ov in ["cache-1.0.0", "app-0.1.0"] {
        assert!(operator_version(&ctx, ov).is_none(), "{ov} removed");
    }
}

#[test]
fn write_only_example_takes_the_password_from_an_ephemeral_variable() {
    const PASSWORD: &str = "example-Passw0rd-never-stored";
    let ctx = prepare("write-only");
    let with_password = [("TF_VAR_db_password", PASSWORD)];
    let apply = ctx
        .tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &with_password,
        )
        .assert_success()
        .assert_no_crash();
    assert!(!apply.output().contains(PASSWORD), "{apply}");
    let secret = ctx.kube().must_get(
        "v1",
        "Secret",
        Some(&ctx.namespace),
        &text(&ctx.tf.outputs()["credentials_secret"]),
    );
    // "example-Passw0rd-never-stored" in base64, as the Secret's data holds it.
    assert_eq!(
        secret["data"]["password"], "ZXhhbXBsZS1QYXNzdzByZC1uZXZlci1zdG9yZWQ=",
        "{secret:#}"
    );
    let state = std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("state");
    assert!(!state.contains(PASSWORD), "the state holds the password");

    ctx.tf
        .run_with_env(
            &["destroy", "-input=false", "-no-color", "-auto-approve"],
            &with_password,
        )
        .assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("app").is_empty());
}

#[test]
fn cluster_and_operators_example_plans_offline_and_installs_in_one_apply() {
    let mut ctx = prepare("cluster-and-operators");
    let ns = ctx.namespace.clone();
    // The connection reaches the provider only through the stand-in cluster module.
    for (k, v) in ctx.connection().tf_vars("") {
        ctx.tf.set_env(&k, v);
    }
    ctx.tf.remove_env("KUBE_CONFIG_PATH");
    ctx.tf.set_env("TF_VAR_greeting", "hi");

    let plan = ctx.tf.plan(&["-detailed-exitcode"]).assert_no_crash();
    assert_eq!(plan.code, Some(2), "expected a plan with changes:\n{plan}");
    let shown = plan.flat_output();
    assert!(
        shown.contains("+ preview") && shown.contains("(known after apply)"),
        "{plan}"
    );
    // Rendered offline from the package: the output is already in the plan.
    assert!(shown.contains("hi from greeter"), "{plan}");

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["message"]), "hi from greeter");
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ns), "greeter-greeting");
    assert_eq!(cm["data"]["greeting"], "hi", "{cm:#}");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("greeter").is_empty());
    assert!(ctx.kube().instance(&ns, "greeter").is_none());
}

/// The getting-started guide's configuration with the real zookeeper and kafka packages,
/// served as a KUDO repository (`index.yaml` and archives, as the community repository
/// serves them) from the fixtures, since CI reaches no other network.
#[test]
fn getting_started_installs_real_zookeeper_and_kafka_from_a_repository_wired_by_reference() {
    let (Some(zookeeper), Some(kafka)) = (fixture_operator("zookeeper"), fixture_operator("kafka"))
    else {
        skip!("../shared/fixtures/operators not found (clone without ../shared)");
    };
    let ctx = prepare("getting-started");
    if !ctx.runs_pods() {
        ctx.mark_cleaned();
        skip!("no node: kafka's deploy runs a Pipe task, whose pod never runs here");
    }
    let repo = ctx.workdir.join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    let server = FileServer::start(repo.clone());
    for package in [&zookeeper, &kafka] {
        tool(&[
            "package",
            "create",
            &path_str(package),
            "-o",
            &path_str(&repo),
        ]);
    }
    tool(&["repo", "index", &path_str(&repo), "--url", &server.url]);

    // The guide's namespace does not exist: the configuration creates it.
    let ns = format!("{}-gs", ctx.namespace);
    assert!(ctx.kube().get("v1", "Namespace", None, &ns).is_none());
    if let Some(sim) = ctx.sim() {
        // kafka's Pipe task reads its TLS files from the pod (empty unless
        // USE_AUTO_TLS_CERTIFICATE); on a real cluster the pod writes them itself.
        for path in ["/tmp/tls.key", "/tmp/tls.crt"] {
            sim.add_exec_file(kube_sim::ExecFile {
                namespace: ns.clone(),
                pod: None,
                selector: None,
                path: path.to_string(),
                content: String::new(),
            });
        }
    }
    let url_var = format!("repository_url={}", server.url);
    let ns_var = format!("namespace={ns}");
    let vars = ["-var", url_var.as_str(), "-var", ns_var.as_str()];
    ctx.tf.apply(&vars).assert_success().assert_no_crash();

    let uri = connection_to(&ns, 3);
    let outputs = ctx.tf.outputs();
    assert_eq!(text(&outputs["zookeeper_uri"]), uri);
    assert_eq!(text(&outputs["kafka_status"]), "COMPLETE");
    let kube = ctx.kube();
    kube.must_get("apps/v1", "StatefulSet", Some(&ns), "zk-zookeeper");
    let config = kube.must_get("v1", "ConfigMap", Some(&ns), "kafka-serverproperties");
    let properties = text(&config["data"]["server.properties"]);
    assert!(
        properties.contains(&format!("zookeeper.connect={uri}/kafka")),
        "kafka is not pointed at zookeeper:\n{properties}"
    );

    // One more ZooKeeper node reaches kafka through the reference, in the same apply.
    let more = [
        "-var",
        url_var.as_str(),
        "-var",
        ns_var.as_str(),
        "-var",
        "zookeeper_nodes=4",
    ];
    let plan = ctx.tf.plan(&more).assert_success();
    for address in ["kudo_instance.zk", "kudo_instance.kafka"] {
        assert!(
            plan.stdout
                .contains(&format!("{address} will be updated in-place")),
            "{address} is not updated:\n{plan}"
        );
    }
    ctx.tf.apply(&more).assert_success().assert_no_crash();
    let config = kube.must_get("v1", "ConfigMap", Some(&ns), "kafka-serverproperties");
    assert!(
        text(&config["data"]["server.properties"]).contains(&format!(
            "zookeeper.connect={}/kafka",
            connection_to(&ns, 4)
        )),
        "{config:#}"
    );

    ctx.tf.destroy(&more).assert_success();
    assert!(
        kube.get("v1", "Namespace", None, &ns).is_none(),
        "destroy left the namespace the configuration created"
    );
    ctx.mark_cleaned();
}

/// kafka's `ZOOKEEPER_URI` for `nodes` nodes of zookeeper instance `zk` in `ns`.
fn connection_to(ns: &str, nodes: usize) -> String {
    (0..nodes)
        .map(|i| format!("zk-zookeeper-{i}.zk-hs.{ns}.svc:2181"))
        .collect::<Vec<_>>()
        .join(",")
}
