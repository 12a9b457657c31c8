//! Resolution against our fixture packages (tests/fixtures/deps) and, when present, the
//! real KUDO operators in ../shared/fixtures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kudo_package::{Package, TaskSpec};
use kudo_resolve::{MemoryCatalog, RepositoryCatalog, Resolution, ResolveError, Resolver};

const DEPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/deps");
const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures");

fn deps(rel: &str) -> PathBuf {
    Path::new(DEPS).join(rel)
}

fn load(path: &Path) -> Package {
    Package::load_dir(path).unwrap_or_else(|e| panic!("{e}"))
}

fn shared_operators() -> Option<PathBuf> {
    let p = Path::new(SHARED).join("operators");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent (a clone without ../shared)",
            p.display()
        );
        None
    }
}

/// Set the version fields of one KudoOperator task.
fn set_task(pkg: &mut Package, task: &str, ov: Option<&str>, app: Option<&str>) {
    let t = pkg
        .operator
        .tasks
        .iter_mut()
        .find(|t| t.name == task)
        .expect("task");
    match &mut t.spec {
        TaskSpec::KudoOperator {
            operator_version,
            app_version,
            ..
        } => {
            *operator_version = ov.map(str::to_string);
            *app_version = app.map(str::to_string);
        }
        _ => panic!("{task} is not a KudoOperator task"),
    }
}

fn packages_in_order(r: &Resolution) -> Vec<String> {
    r.install_order
        .iter()
        .map(|i| r.node(i).expect("node").package.clone())
        .collect()
}

#[test]
fn kep29_example_installs_in_kep_order() {
    let catalog = RepositoryCatalog::folder("kep29", &deps("kep29"));
    let root = load(&deps("kep29/aa"));
    let r = Resolver::new(&catalog)
        .resolve(&root, "aa")
        .unwrap_or_else(|e| panic!("{e}"));
    // KEP-29: O = (EE, GG, BB, CC, AA)
    assert_eq!(packages_in_order(&r), ["ee", "gg", "bb", "cc", "aa"]);
    assert_eq!(
        r.install_order,
        ["aa-bb-ee", "aa-bb-gg", "aa-bb", "aa-cc", "aa"]
    );
    let bb = r.node("aa-bb").unwrap();
    assert_eq!(bb.parent.as_deref(), Some("aa"));
    assert_eq!(bb.children, ["aa-bb-ee", "aa-bb-gg"]);
    assert_eq!(bb.repository.as_deref(), Some("kep29"));
    assert_eq!(
        bb.constraint.as_deref(),
        Some("operatorVersion >=0.1.0 <1.0.0")
    );
    let tree = r.render_tree();
    assert!(
        tree.contains("aa-bb-ee: ee 0.1.0 from repository kep29"),
        "{tree}"
    );
    assert!(
        tree.contains("install order: aa-bb-ee, aa-bb-gg, aa-bb, aa-cc, aa"),
        "{tree}"
    );
    assert!(
        r.package_of("aa-cc")
            .is_some_and(|p| p.operator.name == "cc")
    );
}

#[test]
fn cycle_is_reported_with_its_path() {
    let catalog = MemoryCatalog::new();
    let root = load(&deps("cycle/a"));
    let err = Resolver::new(&catalog).resolve(&root, "a").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ResolveError::Cycle { .. }), "{text}");
    assert!(text.contains("a -> b -> c -> a"), "{text}");
}

#[test]
fn conflicting_ranges_are_explained() {
    let catalog = RepositoryCatalog::folder("conflict", &deps("conflict"));
    let root = load(&deps("conflict/top"));
    let err = Resolver::new(&catalog).resolve(&root, "top").unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    assert!(matches!(err, ResolveError::Unsatisfiable { .. }), "{text}");
    for needle in [
        "left 1.0.0 (task \"shared\") asks for shared operatorVersion >=1.0.0 <2.0.0 (matches 1.1.0, 1.0.0)",
        "right 1.0.0 (task \"shared\") asks for shared operatorVersion >=2.0.0 (matches 2.0.0)",
        "top 1.0.0 cannot be installed",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn user_override_resolves_a_conflict() {
    let catalog = RepositoryCatalog::folder("conflict", &deps("conflict"));
    let root = load(&deps("conflict/top"));
    let overrides = BTreeMap::from([
        ("shared".to_string(), "1.1.0".to_string()),
        ("nothing".to_string(), "1.x".to_string()),
    ]);
    let r = Resolver::new(&catalog)
        .with_overrides(overrides)
        .resolve(&root, "top")
        .unwrap_or_else(|e| panic!("{e}"));
    let shared: Vec<_> = r.nodes.iter().filter(|n| n.package == "shared").collect();
    assert_eq!(shared.len(), 2, "one instance under each parent");
    assert!(shared.iter().all(|n| n.operator_version == "1.1.0"));
    assert_eq!(
        shared
            .iter()
            .map(|n| n.instance.as_str())
            .collect::<Vec<_>>(),
        ["top-left-shared", "top-right-shared"]
    );
    assert!(
        shared[0]
            .constraint
            .as_deref()
            .unwrap()
            .contains("user override \"1.1.0\"")
    );
    assert_eq!(r.unused_overrides, ["nothing"]);
    // A bad override names the package and the text.
    let bad = Resolver::new(&catalog)
        .with_overrides(BTreeMap::from([("shared".to_string(), ">=x1".to_string())]))
        .resolve(&root, "top")
        .unwrap_err()
        .to_string();
    assert!(bad.contains("shared") && bad.contains(">=x1"), "{bad}");
}

#[test]
fn enabling_parameter_switches_a_subtree() {
    let catalog = RepositoryCatalog::folder("enabling", &deps("enabling"));
    let root = load(&deps("enabling/parent"));
    let r = Resolver::new(&catalog)
        .resolve(&root, "p")
        .unwrap_or_else(|e| panic!("{e}"));
    let child = r.node("p-monitor").expect("child instance");
    assert_eq!(
        child.enabling_parameter.as_deref(),
        Some("MONITORING_ENABLED")
    );
    assert!(!child.enabled, "default false");
    assert_eq!(child.operator_version, "0.2.0");

    let on = Resolver::new(&catalog)
        .with_root_parameters(BTreeMap::from([(
            "MONITORING_ENABLED".to_string(),
            "True".to_string(),
        )]))
        .resolve(&root, "p")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(on.node("p-monitor").unwrap().enabled);

    let values = |v: &str| {
        BTreeMap::from([(
            "p".to_string(),
            BTreeMap::from([("MONITORING_ENABLED".to_string(), v.to_string())]),
        )])
    };
    assert!(r.enabled(&values("1")).unwrap()["p-monitor"]);
    assert!(!r.enabled(&values("f")).unwrap()["p-monitor"]);
    assert!(!r.enabled(&BTreeMap::new()).unwrap()["p-monitor"]);
    let err = r.enabled(&values("maybe")).unwrap_err().to_string();
    assert!(
        err.contains("MONITORING_ENABLED") && err.contains("maybe"),
        "{err}"
    );

    let mut broken = root.clone();
    if let TaskSpec::KudoOperator {
        enabling_parameter, ..
    } = &mut broken.operator.tasks[0].spec
    {
        *enabling_parameter = Some("NO_SUCH_PARAM".to_string());
    }
    let err = Resolver::new(&catalog)
        .resolve(&broken, "p")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NO_SUCH_PARAM") && err.contains("monitoring"),
        "{err}"
    );
}

#[test]
fn resolution_is_deterministic() {
    let catalog = RepositoryCatalog::folder("kep29", &deps("kep29"));
    let root = load(&deps("kep29/aa"));
    let conflict = RepositoryCatalog::folder("conflict", &deps("conflict"));
    let top = load(&deps("conflict/top"));
    let run = || {
        let a = Resolver::new(&catalog).resolve(&root, "aa").unwrap();
        let b = Resolver::new(&conflict)
            .resolve(&top, "top")
            .unwrap_err()
            .to_string();
        (serde_json::to_string(&a).unwrap(), a.render_tree(), b)
    };
    let first = run();
    for _ in 0..19 {
        assert_eq!(run(), first);
    }
    let back: Resolution = serde_json::from_str(&first.0).unwrap();
    assert_eq!(back.install_order.len(), 5);
}

#[test]
fn priority_beats_newness_and_newest_wins_within_a_repository() {
    let shared = |v: &str| {
        let mut p = load(&deps("conflict/shared-1.0.0"));
        p.operator.operator_version = v.to_string();
        p
    };
    let mut root = load(&deps("conflict/left"));
    set_task(&mut root, "shared", Some("*"), None);
    let mut catalog = MemoryCatalog::new();
    catalog.add(shared("2.0.0"), "community", 10);
    catalog.add(shared("1.0.0"), "internal", 0);
    catalog.add(shared("1.1.0"), "internal", 0);
    let r = Resolver::new(&catalog).resolve(&root, "l").unwrap();
    let n = r.node("l-shared").unwrap();
    assert_eq!(
        (n.operator_version.as_str(), n.repository.as_deref()),
        ("1.1.0", Some("internal"))
    );
    set_task(&mut root, "shared", Some(">=2.0.0"), None);
    let r = Resolver::new(&catalog).resolve(&root, "l").unwrap();
    assert_eq!(
        r.node("l-shared").unwrap().repository.as_deref(),
        Some("community")
    );
}

#[test]
fn names_are_hierarchical_and_collisions_reported() {
    let catalog = RepositoryCatalog::folder("kep29", &deps("kep29"));
    let mut root = load(&deps("kep29/aa"));
    // cc installed twice by aa without instanceName: both would be "aa-cc".
    let mut twice = root.operator.tasks[1].clone();
    twice.name = "cc2".into();
    root.operator.tasks.push(twice);
    root.operator.plans.get_mut("deploy").unwrap().phases[0].steps[0]
        .tasks
        .push("cc2".into());
    let err = Resolver::new(&catalog)
        .resolve(&root, "aa")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"aa-cc\"") && err.contains("cc2") && err.contains("instanceName"),
        "{err}"
    );
    if let TaskSpec::KudoOperator { instance_name, .. } = &mut root.operator.tasks[3].spec {
        *instance_name = Some("second-cc".into());
    }
    let r = Resolver::new(&catalog)
        .resolve(&root, "aa")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(r.node("second-cc").is_some() && r.node("aa-cc").is_some());
}

#[test]
fn missing_deep_version_names_who_asked() {
    let bb = {
        let mut p = load(&deps("kep29/bb"));
        set_task(&mut p, "ee", Some("9.9.9"), None);
        p
    };
    let mut catalog = MemoryCatalog::new();
    for n in ["cc", "ee", "gg"] {
        catalog.add(load(&deps(&format!("kep29/{n}"))), "kep29", 0);
    }
    catalog.add(bb, "kep29", 0);
    let root = load(&deps("kep29/aa"));
    let err = Resolver::new(&catalog).resolve(&root, "aa").unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    match &err {
        ResolveError::Unsatisfiable { missing, .. } => {
            assert_eq!(missing.len(), 1, "{text}");
            assert_eq!(missing[0].package, "ee");
            assert!(missing[0].asked_by.contains("bb 0.1.0"));
            assert_eq!(missing[0].available, ["0.1.0"]);
        }
        other => panic!("unexpected {other}"),
    }
    assert!(text.contains("operatorVersion 9.9.9"), "{text}");
}

#[test]
fn flink_demo_as_written_names_both_missing_versions() {
    let Some(ops) = shared_operators() else {
        return;
    };
    let catalog = RepositoryCatalog::folder("fixtures", &ops);
    let root = load(&ops.join("flink-demo"));
    let err = Resolver::new(&catalog).resolve(&root, "demo").unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    let ResolveError::MissingVersions(missing) = &err else {
        panic!("unexpected: {text}")
    };
    let names: Vec<_> = missing.iter().map(|m| m.package.as_str()).collect();
    // In plan order: the zookeeper step runs first.
    assert_eq!(names, ["zookeeper", "kafka"], "{text}");
    for needle in [
        "flink-demo 0.1.6 (task \"kafka\") asks for kafka operatorVersion 1.3.1, appVersion 2.5.0",
        "available versions of kafka: 1.3.2 (app 2.5.1)",
        "flink-demo 0.1.6 (task \"zookeeper\") asks for zookeeper operatorVersion 0.3.1, appVersion 3.4.14",
        "available versions of zookeeper: 0.3.3 (app 3.6.2)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn flink_demo_with_ranges_resolves_to_the_fixture_versions() {
    let Some(ops) = shared_operators() else {
        return;
    };
    let catalog = RepositoryCatalog::folder("fixtures", &ops);
    let mut root = load(&ops.join("flink-demo"));
    set_task(&mut root, "kafka", Some(">=1.3.1 <1.4.0"), Some("2.5.x"));
    set_task(&mut root, "zookeeper", Some("0.3.x"), Some(">=3.4.14"));
    let r = Resolver::new(&catalog)
        .resolve(&root, "demo")
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", r.render_tree());
    let v = |i: &str| r.node(i).map(|n| n.operator_version.clone());
    assert_eq!(v("kafka").as_deref(), Some("1.3.2"));
    assert_eq!(v("zk").as_deref(), Some("0.3.3"));
    assert_eq!(v("flink").as_deref(), Some("0.2.1"));
    // Plan order: the zookeeper step runs before kafka, then flink.
    assert_eq!(r.install_order, ["zk", "kafka", "flink", "demo"]);

    // The same without editing the package: user overrides.
    let plain = load(&ops.join("flink-demo"));
    let r = Resolver::new(&catalog)
        .with_overrides(BTreeMap::from([
            ("kafka".to_string(), "1.3.x; app=2.5.x".to_string()),
            ("zookeeper".to_string(), "0.3.x".to_string()),
        ]))
        .resolve(&plain, "demo")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.node("kafka").unwrap().operator_version, "1.3.2");
    assert_eq!(r.node("zk").unwrap().app_version.as_deref(), Some("3.6.2"));
}

#[test]
fn self_dependency_and_bad_ranges_are_reported() {
    let catalog = MemoryCatalog::new();
    let mut root = load(&deps("conflict/left"));
    root.operator.name = "shared".into();
    let err = Resolver::new(&catalog)
        .resolve(&root, "s")
        .unwrap_err()
        .to_string();
    assert!(err.contains("dependency cycle: shared -> shared"), "{err}");

    let mut root = load(&deps("conflict/left"));
    set_task(&mut root, "shared", Some(">=1.0.0 <abc"), None);
    let err = Resolver::new(&catalog)
        .resolve(&root, "l")
        .unwrap_err()
        .to_string();
    for needle in [
        "left 1.0.0",
        "task \"shared\"",
        "operatorVersion",
        "\">=1.0.0 <abc\"",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in {err}");
    }
}

#[test]
fn backtracks_to_an_older_parent_when_the_newest_conflicts() {
    let mut catalog = MemoryCatalog::new();
    for dir in [
        "right",
        "shared-1.0.0",
        "shared-1.1.0",
        "shared-2.0.0",
        "left",
    ] {
        catalog.add(load(&deps(&format!("conflict/{dir}"))), "repo", 0);
    }
    // An older left that accepts shared 2.x, as right needs.
    let mut old_left = load(&deps("conflict/left"));
    old_left.operator.operator_version = "0.9.0".into();
    set_task(&mut old_left, "shared", Some("2.x"), None);
    catalog.add(old_left, "repo", 0);
    let root = load(&deps("conflict/top"));
    let r = Resolver::new(&catalog)
        .resolve(&root, "top")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.node("top-left").unwrap().operator_version, "0.9.0");
    assert_eq!(r.node("top-left-shared").unwrap().operator_version, "2.0.0");
    assert_eq!(
        r.node("top-right-shared").unwrap().operator_version,
        "2.0.0"
    );
}

#[test]
fn unknown_package_is_named() {
    let catalog = MemoryCatalog::new();
    let mut root = load(&deps("conflict/left"));
    set_task(&mut root, "shared", None, None);
    let err = Resolver::new(&catalog)
        .resolve(&root, "l")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("left 1.0.0 (task \"shared\") asks for any version of shared")
            && err.contains("no version of shared is known at all"),
        "{err}"
    );
}

/// The `deps/olm` repository: `shop` requires zookeeper by range and an API by kind.
fn olm() -> (RepositoryCatalog, Package) {
    (
        RepositoryCatalog::folder("olm", &deps("olm")),
        load(&deps("olm/shop")),
    )
}

#[test]
fn listed_dependencies_are_operators_not_instances() {
    let (catalog, root) = olm();
    let r = Resolver::new(&catalog)
        .resolve(&root, "shop")
        .unwrap_or_else(|e| panic!("{e}"));
    let deps: Vec<(String, String, String, Option<String>)> = r
        .dependencies()
        .into_iter()
        .map(|d| (d.package, d.operator_version, d.required_by, d.constraint))
        .collect();
    assert_eq!(
        deps,
        [
            (
                "zookeeper".to_string(),
                "0.3.1".to_string(),
                "shop".to_string(),
                Some("operatorVersion >=0.3.0 <0.4.0".to_string())
            ),
            (
                "kafka".to_string(),
                "1.1.0".to_string(),
                "shop".to_string(),
                Some("provides kafka.example.com/v1 Broker".to_string())
            ),
        ]
    );
    assert_eq!(
        r.install_order_versions(),
        ["zookeeper-0.3.1", "kafka-1.1.0", "shop-0.1.0"]
    );
    // No instance is made for them: the tree is the root alone.
    assert_eq!(r.instance_names(), ["shop"]);
    assert!(r.nodes[0].children.is_empty());
    let mut packages: Vec<&str> = r.packages.keys().map(String::as_str).collect();
    packages.sort();
    assert_eq!(packages, ["kafka", "shop", "zookeeper"]);
    let tree = r.render_tree();
    assert!(
        tree.contains(
            "kafka 1.1.0 from repository olm; shop dependencies[1] asks provides kafka.example.com/v1 Broker"
        ),
        "{tree}"
    );
}

#[test]
fn an_api_nobody_provides_is_named_with_who_asked() {
    let (catalog, mut root) = olm();
    for d in &mut root.operator.dependencies {
        if let kudo_package::OperatorDependency::Api(gvk) = d {
            gvk.version = "v3".to_string();
        }
    }
    let err = Resolver::new(&catalog)
        .resolve(&root, "shop")
        .expect_err("no package serves v3")
        .to_string();
    assert!(
        err.contains("shop 0.1.0 requires the API kafka.example.com/v3 Broker")
            && err.contains("dependencies[1]")
            && err.contains("no package in the repositories provides it"),
        "{err}"
    );
}

#[test]
fn a_list_range_and_a_task_range_that_clash_are_explained() {
    let catalog = RepositoryCatalog::folder("olm", &deps("olm"));
    let root = load(&deps("olm/strict"));
    let err = Resolver::new(&catalog)
        .resolve(&root, "strict")
        .expect_err("0.3.x and >=0.4.0 cannot both hold")
        .to_string();
    assert!(
        err.contains("dependencies[0]")
            && err.contains("operatorVersion >=0.3.0 <0.4.0")
            && err.contains("task \"zookeeper\"")
            && err.contains("operatorVersion >=0.4.0"),
        "{err}"
    );
}

#[test]
fn a_bad_range_in_the_list_names_the_entry() {
    let (catalog, mut root) = olm();
    if let Some(kudo_package::OperatorDependency::Package {
        operator_version, ..
    }) = root.operator.dependencies.first_mut()
    {
        *operator_version = Some(">=banana".to_string());
    }
    let err = Resolver::new(&catalog)
        .resolve(&root, "shop")
        .expect_err("not a range")
        .to_string();
    assert!(
        err.contains("shop 0.1.0: operator.yaml dependencies[0].operatorVersion"),
        "{err}"
    );
}

/// `deps/kube-versions`: engine 1.0.0 / 1.1.0 / 1.2.0 need Kubernetes 1.16 / 1.30 / 1.99.
fn engine_for(cluster: Option<&str>, overrides: &[(&str, &str)]) -> Result<String, ResolveError> {
    let catalog = RepositoryCatalog::folder("kube-versions", &deps("kube-versions"));
    let root = load(&deps("kube-versions/app"));
    let cluster = cluster.map(|c| kudo_resolve::ClusterVersion::parse(c).expect("version"));
    let resolution = Resolver::new(&catalog)
        .with_overrides(
            overrides
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
        .with_cluster(cluster)
        .resolve(&root, "app")?;
    let deps = resolution.dependencies();
    Ok(deps
        .iter()
        .find(|d| d.package == "engine")
        .map(|d| d.operator_version.clone())
        .expect("engine is a dependency"))
}

#[test]
fn a_range_resolves_to_the_newest_version_the_cluster_runs() {
    // Without a cluster nothing is filtered: the newest in range.
    assert_eq!(engine_for(None, &[]).expect("resolves"), "1.2.0");
    assert_eq!(engine_for(Some("v1.36.0"), &[]).expect("resolves"), "1.1.0");
    assert_eq!(
        engine_for(Some("v1.24.17+k3s1"), &[]).expect("resolves"),
        "1.0.0"
    );
    // KUDO compares major and minor only: 1.30.0 runs on 1.30.x.
    assert_eq!(engine_for(Some("v1.30.0"), &[]).expect("resolves"), "1.1.0");
}

#[test]
fn no_runnable_version_names_each_candidates_kubernetes_version_and_the_cluster() {
    let err = engine_for(Some("v1.24.3"), &[("engine", ">=1.1.0")]).expect_err("none runs");
    let text = err.to_string();
    assert!(matches!(err, ResolveError::ClusterTooOld { .. }), "{text}");
    for wanted in [
        "no version of engine fits the ranges and runs on this cluster (Kubernetes v1.24.3)",
        "1.2.0 needs kubernetesVersion 1.99.0",
        "1.1.0 needs kubernetesVersion 1.30.0",
        "dependency_overrides",
    ] {
        assert!(text.contains(wanted), "{wanted:?} missing from:\n{text}");
    }
}

#[test]
fn offline_trees_are_cluster_dependent_only_when_a_dependency_needs_a_newer_kubernetes() {
    let catalog = RepositoryCatalog::folder("fixtures", &deps("kep29"));
    let root = load(&deps("kep29/aa"));
    let mut resolution = Resolver::new(&catalog)
        .resolve(&root, &root.operator.name)
        .expect("resolves");
    let mut set = |name: &str, version: &str| {
        for pkg in resolution.packages.values_mut() {
            if name == "*" || pkg.operator.name == name {
                pkg.operator.kubernetes_version = version.to_string();
            }
        }
        kudo_resolve::needs_cluster_version(&root, &resolution)
    };
    assert!(!set("*", ""), "no requirements: any cluster picks the same");
    assert!(!set("bb", "1.16.0"), "the oldest release runs it anyway");
    // The root is checked at apply, never swapped for another version.
    assert!(!set("aa", "1.30.0"));
    assert!(
        set("gg", "1.25.0"),
        "an older cluster may skip this version"
    );
    assert!(set("gg", "not a version"));
    // Such a tree is known only when resolved for the cluster.
    assert!(resolution.known(&root, false).is_none());
    assert!(resolution.known(&root, true).is_some());
    for pkg in resolution.packages.values_mut() {
        pkg.operator.kubernetes_version = String::new();
    }
    assert!(resolution.known(&root, false).is_some());
}

#[test]
fn the_root_package_is_checked_against_the_clusters_kubernetes_version() {
    use kudo_resolve::{ClusterVersion, KubernetesRequirement, check_cluster};
    let mut root = load(&deps("kep29/aa"));
    let cluster = ClusterVersion::parse("v1.24.17").expect("a release");
    assert_eq!(check_cluster(&root, &cluster), Ok(()), "no requirement");
    root.operator.kubernetes_version = " 1.24.0 ".into();
    assert_eq!(check_cluster(&root, &cluster), Ok(()), "major.minor only");
    root.operator.kubernetes_version = "1.25.0".into();
    let err = check_cluster(&root, &cluster).expect_err("too old");
    assert_eq!(
        err.to_string(),
        "it needs Kubernetes 1.25 or newer, but the cluster runs v1.24.17"
    );
    assert!(matches!(err, KubernetesRequirement::TooOld { declared, .. } if declared == "1.25.0"));
    root.operator.kubernetes_version = "soon".into();
    assert!(matches!(
        check_cluster(&root, &cluster),
        Err(KubernetesRequirement::Unreadable(_))
    ));
}

#[test]
fn a_failed_load_has_a_summary_and_names_the_source() {
    use kudo_resolve::{ClusterVersion, LoadRequest, load_and_resolve};
    let mut root = load(&deps("kep29/aa"));
    root.operator.kubernetes_version = "1.25.0".into();
    let request = |root: Package| LoadRequest {
        source: "./aa".into(),
        loaded: Some(root),
        context: Default::default(),
        overrides: BTreeMap::new(),
        cluster: Some(ClusterVersion::parse("v1.24.17").expect("a release")),
        planned: None,
    };
    let err = load_and_resolve(request(root.clone())).expect_err("too old");
    assert_eq!(
        err.summary(),
        "The operator package needs a newer Kubernetes version"
    );
    assert_eq!(
        err.describe("./aa", "https://k8s:6443"),
        format!(
            "Package \"./aa\" (aa {}) declares kubernetesVersion 1.25.0 in operator.yaml: it needs Kubernetes 1.25 or newer, but the cluster at https://k8s:6443 runs v1.24.17. Use a version of the package written for this cluster, or upgrade the cluster.",
            root.operator.operator_version
        )
    );
    root.operator.kubernetes_version = "soon".into();
    let err = load_and_resolve(request(root)).expect_err("unreadable");
    assert_eq!(
        err.summary(),
        "Cannot read the Kubernetes version the package needs"
    );
    assert!(
        err.describe("./aa", "")
            .contains("(aa 0.1.0): operator.yaml kubernetesVersion: "),
        "{}",
        err.describe("./aa", "")
    );
    let missing = LoadRequest {
        source: "/nowhere/at/all".into(),
        loaded: None,
        context: Default::default(),
        overrides: BTreeMap::new(),
        cluster: None,
        planned: None,
    };
    let err = load_and_resolve(missing).expect_err("no such folder");
    assert_eq!(err.summary(), "Cannot load the operator package");
    assert!(
        err.describe("/nowhere/at/all", "")
            .starts_with("Package \"/nowhere/at/all\": "),
        "{}",
        err.describe("/nowhere/at/all", "")
    );
}
