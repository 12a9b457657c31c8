//! Installing an operator with its dependency operators (the KEP-29 fixture tree): a
//! failed create takes back what it wrote, an update removes the versions the new tree
//! no longer uses, and a destroy removes the whole tree (and the namespace
//! `create_namespace` made).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use crate::cluster::{Cluster, KUDO_API_VERSION};
use crate::engine::{
    self, InstalledTree, InstalledVersion, NamespaceProblem, OperatorFailure, OperatorRequest,
    Released,
};
use kube_sim::FaultRule;
use kudo_package::{LoadContext, Package, Repository};
use kudo_resolve::{RepositoryCatalog, Resolution, Resolver};
use tokio_util::sync::CancellationToken;

use crate::scenarios::common::*;

const KEP29: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/deps/kep29"
);

fn kep29() -> (Package, Resolution) {
    let dir = Path::new(KEP29);
    let root = Package::load_dir(&dir.join("aa")).expect("root package");
    let catalog = RepositoryCatalog::folder("fixtures", dir);
    let resolution = Resolver::new(&catalog)
        .resolve(&root, &root.operator.name)
        .expect("resolves");
    (root, resolution)
}

/// The names of the objects of `kind` in `namespace`, sorted.
async fn names(cluster: &Cluster, kind: &str, namespace: &str) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .list_kind(KUDO_API_VERSION, kind, Some(namespace))
        .await
        .expect("list")
        .iter()
        .filter_map(|o| o.pointer("/metadata/name")?.as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

fn installed(root: &Package, resolution: &Resolution, namespace: &str) -> InstalledTree {
    let version = |p: &Package| InstalledVersion {
        operator: p.operator.name.clone(),
        operator_version_name: p.operator_version_name(),
    };
    InstalledTree {
        namespace: namespace.to_string(),
        root: version(root),
        dependencies: resolution
            .packages
            .values()
            .filter(|p| p.operator.name != root.operator.name)
            .map(version)
            .collect(),
        install_order: resolution.install_order_versions(),
        create_namespace: false,
    }
}

/// The KEP-29 fixtures as a folder repository, which the actions resolve `aa`'s tree from.
static SOURCES: LazyLock<LoadContext> = LazyLock::new(|| LoadContext {
    repositories: vec![Repository {
        name: "fixtures".into(),
        url: KEP29.into(),
        priority: 0,
    }],
    ..LoadContext::default()
});
static NO_OVERRIDES: BTreeMap<String, String> = BTreeMap::new();
const AA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/deps/kep29/aa"
);

/// The plan or apply of `aa`'s tree (the same as [`kep29`]'s) in `namespace`.
fn request<'a>(namespace: &'a str, previous: Option<&'a InstalledTree>) -> OperatorRequest<'a> {
    OperatorRequest {
        namespace,
        package: AA,
        sources: &SOURCES,
        overrides: &NO_OVERRIDES,
        planned: None,
        planned_digest: None,
        create_namespace: false,
        previous,
    }
}

/// Every plan here has an apply to check.
fn applies(_: &Package, _: &Resolution) -> bool {
    true
}

#[tokio::test]
async fn a_failed_create_takes_back_what_it_wrote() {
    let (sim, cluster) = sim().await;
    namespace(&cluster, "tree").await;
    // ee, gg and bb go in first; cc is refused.
    sim.add_faults([FaultRule {
        verb: Some("patch".into()),
        resource: Some("operatorversions".into()),
        name: Some("cc-0.1.0".into()),
        status: Some(422),
        message: Some("refused by the test".into()),
        ..Default::default()
    }]);
    let request = request("tree", None);
    let cancel = CancellationToken::new();
    match engine::apply_operator(&cluster, &request, &cancel).await {
        Err(OperatorFailure::Package {
            operator,
            root,
            error,
            left_behind,
        }) => {
            assert_eq!((operator.as_str(), root), ("cc", false));
            assert!(error.to_string().contains("refused by the test"), "{error}");
            assert!(left_behind.is_empty(), "{left_behind:?}");
        }
        other => panic!("expected cc's install to fail, got {other:?}"),
    }
    assert!(names(&cluster, "OperatorVersion", "tree").await.is_empty());
    assert!(names(&cluster, "Operator", "tree").await.is_empty());
}

#[tokio::test]
async fn an_update_removes_unused_versions_and_a_destroy_removes_the_tree() {
    let (_sim, cluster) = sim().await;
    namespace(&cluster, "tree").await;
    let (root, resolution) = kep29();
    let cancel = CancellationToken::new();
    // A previous install of aa 0.0.9 that also installed an operator the tree dropped.
    let mut old_root = root.clone();
    old_root.operator.operator_version = "0.0.9".into();
    let mut dropped = root.clone();
    dropped.operator.name = "dropped".into();
    for pkg in [&old_root, &dropped] {
        engine::install_operator(&cluster, pkg, "tree")
            .await
            .expect("install");
    }
    let previous = InstalledTree {
        namespace: "tree".into(),
        root: InstalledVersion {
            operator: "aa".into(),
            operator_version_name: old_root.operator_version_name(),
        },
        dependencies: vec![InstalledVersion {
            operator: "dropped".into(),
            operator_version_name: dropped.operator_version_name(),
        }],
        install_order: Vec::new(),
        create_namespace: false,
    };
    let request = request("tree", Some(&previous));
    let done = engine::apply_operator(&cluster, &request, &cancel)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(done.stale_left.is_empty(), "{:?}", done.stale_left);
    // Read before they went, for the caller's copies.
    let mut stale: Vec<String> = done
        .stale
        .iter()
        .map(|p| p.operator_version_name())
        .collect();
    stale.sort();
    assert_eq!(
        stale,
        [
            old_root.operator_version_name(),
            dropped.operator_version_name()
        ]
    );
    assert_eq!(
        names(&cluster, "OperatorVersion", "tree").await,
        ["aa-0.1.0", "bb-0.1.0", "cc-0.1.0", "ee-0.1.0", "gg-0.1.0"]
    );

    let destroyed =
        engine::destroy_operator(&cluster, &installed(&root, &resolution, "tree"), &cancel)
            .await
            .expect("destroy");
    assert!(destroyed.kept.is_empty(), "{:?}", destroyed.kept);
    assert!(destroyed.namespace.is_none(), "{:?}", destroyed.namespace);
    assert!(names(&cluster, "OperatorVersion", "tree").await.is_empty());
    // The dropped operator's Operator stayed with the update (only versions go then).
    assert_eq!(names(&cluster, "Operator", "tree").await, ["dropped"]);
}

#[tokio::test]
async fn create_namespace_is_planned_created_and_released_with_the_tree() {
    let (_sim, cluster) = sim().await;
    let (root, resolution) = kep29();
    let cancel = CancellationToken::new();
    let mut request = request("made", None);
    // A plan with no apply to check (Terraform plans no change) asks nothing more.
    let (planned, _) = engine::plan_operator(Some(&cluster), &request, |_, _| false)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(planned.operator_version_name(), "aa-0.1.0");
    // Without `create_namespace` a missing namespace fails the plan and the apply.
    match engine::plan_operator(Some(&cluster), &request, applies).await {
        Err(OperatorFailure::Namespace(NamespaceProblem::Missing { namespace })) => {
            assert_eq!(namespace, "made");
        }
        other => panic!("expected a missing namespace, got {other:?}"),
    }
    assert!(matches!(
        engine::apply_operator(&cluster, &request, &cancel).await,
        Err(OperatorFailure::Namespace(NamespaceProblem::Missing { .. }))
    ));
    request.create_namespace = true;
    engine::plan_operator(Some(&cluster), &request, applies)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    engine::apply_operator(&cluster, &request, &cancel)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        names(&cluster, "OperatorVersion", "made").await,
        ["aa-0.1.0", "bb-0.1.0", "cc-0.1.0", "ee-0.1.0", "gg-0.1.0"]
    );

    let tree = InstalledTree {
        create_namespace: true,
        ..installed(&root, &resolution, "made")
    };
    let destroyed = engine::destroy_operator(&cluster, &tree, &cancel)
        .await
        .expect("destroy");
    assert!(
        matches!(destroyed.namespace, Some(Ok(Released::Deleted))),
        "{:?}",
        destroyed.namespace
    );
    let namespace = crate::cluster::ObjectRef::new("v1", "Namespace", None, "made");
    assert!(cluster.get(&namespace).await.expect("get").is_none());
}

/// On a cluster without KUDO's CRDs, the install creates them and learns their kinds
/// from their establishment: no discovery of `kudo.dev/v1beta1` and no read of an
/// OperatorVersion that cannot exist yet goes out before the first write, and what it
/// learned is what discovery answers.
#[tokio::test]
async fn a_fresh_cluster_is_installed_without_asking_what_it_just_made() {
    let mut sim = kube_sim::KubeSim::start(kube_sim::SimConfig::default())
        .await
        .expect("start kube-sim");
    let settings = crate::cluster::ConnectionSettings {
        host: Some(sim.url()),
        token: Some(sim.token().to_string()),
        cluster_ca_certificate: Some(sim.ca_pem()),
        ..Default::default()
    };
    let cluster = Cluster::connect(&settings).await.expect("connect");
    namespace(&cluster, "fresh").await;
    let request = request("fresh", None);
    let before = sim.request_counts();
    engine::apply_operator(&cluster, &request, &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let after = sim.request_counts();
    let asked =
        |what: &str| after.get(what).copied().unwrap_or(0) - before.get(what).copied().unwrap_or(0);
    // Once, by the check that found the CRDs missing.
    assert_eq!(
        asked("get discovery /apis/kudo.dev/v1beta1"),
        1,
        "{after:?}"
    );
    assert_eq!(asked("get operatorversions"), 0, "{after:?}");
    assert_eq!(names(&cluster, "OperatorVersion", "fresh").await.len(), 5);

    // A new connection asks the server: the same resources and scopes.
    let asking = Cluster::connect(&settings).await.expect("connect");
    for kind in ["Operator", "OperatorVersion", "Instance"] {
        let learned = cluster.resolve(KUDO_API_VERSION, kind).await.expect(kind);
        let answered = asking.resolve(KUDO_API_VERSION, kind).await.expect(kind);
        assert_eq!(learned, answered, "{kind}");
    }
    // Served now: the next install ensures nothing.
    assert_eq!(
        cluster.ensure_kudo_crds().await.expect("ensure"),
        crate::cluster::CrdsEnsured::Served
    );
    sim.shutdown();
}

/// The apply loads the package itself and holds it to the digest its plan showed: a
/// package that changed since is refused before anything is written.
#[tokio::test]
async fn an_apply_refuses_a_package_that_changed_since_its_plan() {
    let (_sim, cluster) = sim().await;
    namespace(&cluster, "tree").await;
    let (root, _) = kep29();
    let digest = kudo_package::crd::content_digest(&root);
    let mut request = request("tree", None);
    request.planned_digest = Some("sha256:what-the-plan-saw");
    let cancel = CancellationToken::new();
    match engine::apply_operator(&cluster, &request, &cancel).await {
        Err(OperatorFailure::Changed { package }) => assert_eq!(package, AA),
        other => panic!("expected the changed package refused, got {other:?}"),
    }
    assert!(names(&cluster, "OperatorVersion", "tree").await.is_empty());

    request.planned_digest = Some(&digest);
    let applied = engine::apply_operator(&cluster, &request, &cancel)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(applied.package.operator_version_name(), "aa-0.1.0");
    assert_eq!(applied.resolution.install_order_versions().len(), 5);
    assert_eq!(names(&cluster, "OperatorVersion", "tree").await.len(), 5);
}

/// Offline, a package read from the cluster cannot be loaded: the plan says so rather
/// than guessing (the provider plans the operator unknown).
#[tokio::test]
async fn an_offline_plan_of_a_cluster_package_is_no_cluster() {
    let mut request = request("tree", None);
    request.package = "cluster:tree/aa-0.1.0";
    match engine::plan_operator(None, &request, applies).await {
        Err(OperatorFailure::Load(e)) => {
            assert!(
                matches!(*e, engine::TreeLoadError::NoCluster { .. }),
                "{e:?}"
            )
        }
        other => panic!("expected NoCluster, got {other:?}"),
    }
}
