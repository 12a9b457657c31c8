//! Installing an operator with its dependency operators (the KEP-29 fixture tree): a
//! failed create takes back what it wrote, an update removes the versions the new tree
//! no longer uses, and a destroy removes the whole tree (and the namespace
//! `create_namespace` made).

use std::path::Path;

use crate::cluster::{Cluster, KUDO_API_VERSION};
use crate::engine::{
    self, InstalledTree, InstalledVersion, NamespaceProblem, OperatorFailure, OperatorRequest,
    Released,
};
use kube_sim::FaultRule;
use kudo_package::Package;
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

fn request<'a>(
    namespace: &'a str,
    root: &'a Package,
    resolution: &'a Resolution,
    previous: Option<&'a InstalledTree>,
) -> OperatorRequest<'a> {
    OperatorRequest {
        namespace,
        root,
        resolution,
        create_namespace: false,
        previous,
    }
}

#[tokio::test]
async fn a_failed_create_takes_back_what_it_wrote() {
    let (sim, cluster) = sim().await;
    namespace(&cluster, "tree").await;
    let (root, resolution) = kep29();
    // ee, gg and bb go in first; cc is refused.
    sim.add_faults([FaultRule {
        verb: Some("patch".into()),
        resource: Some("operatorversions".into()),
        name: Some("cc-0.1.0".into()),
        status: Some(422),
        message: Some("refused by the test".into()),
        ..Default::default()
    }]);
    let request = request("tree", &root, &resolution, None);
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
    let request = request("tree", &root, &resolution, Some(&previous));
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
    let mut request = request("made", &root, &resolution, None);
    // Without `create_namespace` a missing namespace fails the plan and the apply.
    match engine::plan_operator(&cluster, &request).await {
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
    engine::plan_operator(&cluster, &request)
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
    let (root, resolution) = kep29();
    let request = request("fresh", &root, &resolution, None);
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
