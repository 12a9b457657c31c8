//! Package sources: .tgz files, URLs, repository indexes (over HTTP on 127.0.0.1 and
//! from files), priorities, digests and the cache; and extensions.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::Server;
use kudo_package::{
    LoadContext, Origin, Package, Repository, TaskSpec, create_tgz, index_dir, load, parse_index,
    read_tgz, sha256_hex, tgz_file_name,
};

fn write_pkg(dir: &Path, version: &str, app: Option<&str>) {
    std::fs::create_dir_all(dir.join("templates/sub")).unwrap();
    let mut op = common::OPERATOR.replace("0.1.0", version);
    if let Some(a) = app {
        op = format!("appVersion: {a}\n{op}");
    }
    std::fs::write(dir.join("operator.yaml"), op).unwrap();
    std::fs::write(dir.join("templates/cm.yaml"), common::TEMPLATE).unwrap();
    std::fs::write(dir.join("templates/sub/extra.yaml"), "# extra\n").unwrap();
    std::fs::write(dir.join("README.md"), "ignored\n").unwrap();
}

fn ctx_with(repos: Vec<Repository>, cache: Option<PathBuf>) -> LoadContext {
    LoadContext {
        repositories: repos,
        cache_dir: cache,
        base_dir: None,
    }
}

fn repo(name: &str, url: &str, priority: i32) -> Repository {
    Repository {
        name: name.into(),
        url: url.into(),
        priority,
    }
}

#[test]
fn create_tgz_is_reproducible_and_loads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    write_pkg(&dir, "0.1.0", None);
    let a = create_tgz(&dir).unwrap();
    // Touching files must not change the archive.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(dir.join("templates/cm.yaml"), common::TEMPLATE).unwrap();
    let b = create_tgz(&dir).unwrap();
    assert_eq!(sha256_hex(&a), sha256_hex(&b));
    let files = read_tgz(&a, "demo.tgz").unwrap();
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        [
            "operator.yaml",
            "templates/cm.yaml",
            "templates/sub/extra.yaml"
        ]
    );
    let path = tmp.path().join("demo-0.1.0.tgz");
    std::fs::write(&path, &a).unwrap();
    let pkg = load(&path.display().to_string(), &LoadContext::default()).unwrap();
    assert_eq!(pkg.templates.len(), 2);
    assert_eq!(tgz_file_name(&pkg), "demo-0.1.0.tgz");
    match &pkg.origin {
        Origin::Tgz { digest, .. } => assert_eq!(*digest, sha256_hex(&a)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tgz_with_top_level_folder_loads() {
    let bytes = common::raw_tgz(&[
        common::file("demo/operator.yaml", common::OPERATOR.as_bytes()),
        common::file("demo/templates/cm.yaml", common::TEMPLATE.as_bytes()),
        common::file("demo/notes.txt", b"ignored"),
    ]);
    let pkg = kudo_package::package_from_tgz(&bytes, "x.tgz", Origin::Memory).unwrap();
    assert_eq!(pkg.operator.name, "demo");
    assert_eq!(pkg.templates.keys().collect::<Vec<_>>(), ["cm.yaml"]);
}

/// Publishes versions of `demo` into a served repository with a generated index.
fn served_repo(server: &Server, prefix: &str, versions: &[(&str, Option<&str>)]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    for (v, app) in versions {
        let dir = tmp.path().join(format!("src-{v}"));
        write_pkg(&dir, v, *app);
        let bytes = create_tgz(&dir).unwrap();
        let pkg = Package::load_dir(&dir).unwrap();
        let name = tgz_file_name(&pkg);
        std::fs::write(tmp.path().join(&name), &bytes).unwrap();
        server.put(&format!("{prefix}/pkgs/{name}"), bytes);
    }
    // Relative URLs: resolved against the index URL.
    let index = index_dir(tmp.path(), Some("pkgs")).unwrap();
    server.put(&format!("{prefix}/index.yaml"), index.clone().into_bytes());
    index
}

#[test]
fn repository_over_http_picks_newest_and_exact_versions() {
    let server = Server::start();
    let index = served_repo(
        &server,
        "/r1",
        &[
            ("0.1.0", Some("1.0.0")),
            ("0.2.0", Some("1.0.0")),
            ("0.10.0", Some("0.9.0")),
        ],
    );
    let parsed = parse_index(&index, "index.yaml").unwrap();
    let order: Vec<_> = parsed.entries["demo"]
        .iter()
        .map(|e| e.operator_version.as_str())
        .collect();
    assert_eq!(
        order,
        ["0.2.0", "0.1.0", "0.10.0"],
        "appVersion first, then operatorVersion"
    );
    let ctx = ctx_with(vec![repo("main", &format!("{}/r1", server.base), 0)], None);
    let newest = load("demo", &ctx).unwrap();
    assert_eq!(newest.operator.operator_version, "0.2.0");
    let exact = load("demo@0.10.0", &ctx).unwrap();
    assert_eq!(exact.operator.operator_version, "0.10.0");
    let both = load("demo@1.0.0_0.1.0", &ctx).unwrap();
    assert_eq!(both.operator.operator_version, "0.1.0");
    match &both.origin {
        Origin::Repository {
            repository, url, ..
        } => {
            assert_eq!(repository, "main");
            assert!(url.ends_with("/r1/pkgs/demo-1.0.0_0.1.0.tgz"), "{url}");
        }
        other => panic!("{other:?}"),
    }
    let err = load("demo@9.9.9", &ctx).unwrap_err().to_string();
    assert!(
        err.contains("package demo operatorVersion 9.9.9")
            && err.contains("repository main: it has demo 0.2.0 (app 1.0.0), 0.1.0 (app 1.0.0)")
            && err.contains("without a version the newest is taken"),
        "{err}"
    );
    // A name the index lacks says so, with the closest name it has.
    let err = load("dmeo", &ctx).unwrap_err().to_string();
    assert!(
        err.contains("repository main: it has no package dmeo; did you mean demo?"),
        "{err}"
    );
}

#[test]
fn lower_priority_number_wins_and_unavailable_repositories_are_skipped() {
    let server = Server::start();
    served_repo(&server, "/low", &[("0.1.0", None)]);
    served_repo(&server, "/high", &[("0.2.0", None)]);
    let ctx = ctx_with(
        vec![
            repo("newer-but-later", &format!("{}/high", server.base), 10),
            repo("down", &format!("{}/missing", server.base), -5),
            repo("preferred", &format!("{}/low", server.base), 1),
        ],
        None,
    );
    let pkg = load("demo", &ctx).unwrap();
    assert_eq!(pkg.operator.operator_version, "0.1.0");
}

#[test]
fn no_readable_repository_is_unreachable_not_a_missing_package() {
    let server = Server::start();
    served_repo(&server, "/up", &[("0.1.0", None)]);
    let down = vec![repo("down", &format!("{}/missing", server.base), 0)];
    let err = load("demo", &ctx_with(down, None)).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("no repository could be read") && text.contains("repository down"),
        "{text}"
    );
    // One repository answering makes it a question of the name or version again.
    let some_up = vec![
        repo("down", &format!("{}/missing", server.base), 0),
        repo("up", &format!("{}/up", server.base), 1),
    ];
    let err = load("other", &ctx_with(some_up, None)).unwrap_err();
    assert!(!err.is_unreachable(), "{err}");
    assert!(
        err.to_string()
            .contains("repository up: it has no package other"),
        "{err}"
    );
}

#[test]
fn cache_avoids_second_download_and_direct_url_pins_digest() {
    let server = Server::start();
    served_repo(&server, "/c", &[("0.3.0", None)]);
    let cache = tempfile::tempdir().unwrap();
    let ctx = ctx_with(
        vec![repo("c", &format!("{}/c", server.base), 0)],
        Some(cache.path().to_path_buf()),
    );
    let first = load("demo", &ctx).unwrap();
    let second = load("demo", &ctx).unwrap();
    assert_eq!(first, second);
    assert_eq!(server.hits("/c/pkgs/demo-0.3.0.tgz"), 1);
    let Origin::Repository { digest, .. } = &first.origin else {
        panic!()
    };
    assert!(cache.path().join(format!("{digest}.tgz")).is_file());

    let url = format!("{}/c/pkgs/demo-0.3.0.tgz", server.base);
    let pinned = load(&format!("{url}#sha256={digest}"), &ctx).unwrap();
    assert_eq!(pinned.operator.operator_version, "0.3.0");
    assert_eq!(
        server.hits("/c/pkgs/demo-0.3.0.tgz"),
        1,
        "pinned URL served from cache"
    );
    let wrong = format!("{url}#sha256={}", "1".repeat(64));
    let err = load(&wrong, &LoadContext::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("digest mismatch"), "{err}");
    let missing = load(
        &format!("{}/nope.tgz", server.base),
        &LoadContext::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        missing.contains("404") && missing.contains("nope.tgz"),
        "{missing}"
    );
}

#[test]
fn file_index_and_package_folder_repositories() {
    let tmp = tempfile::tempdir().unwrap();
    let repo_dir = tmp.path().join("repo");
    std::fs::create_dir_all(&repo_dir).unwrap();
    let src = tmp.path().join("src");
    write_pkg(&src, "1.2.3", None);
    std::fs::write(repo_dir.join("demo-1.2.3.tgz"), create_tgz(&src).unwrap()).unwrap();
    std::fs::write(
        repo_dir.join("index.yaml"),
        index_dir(&repo_dir, None).unwrap(),
    )
    .unwrap();
    let ctx = ctx_with(
        vec![repo("files", &repo_dir.display().to_string(), 0)],
        None,
    );
    assert_eq!(
        load("demo", &ctx).unwrap().operator.operator_version,
        "1.2.3"
    );

    let folder_ctx = ctx_with(
        vec![repo(
            "folders",
            &common::repo_fixtures()
                .join("operators")
                .display()
                .to_string(),
            0,
        )],
        None,
    );
    assert_eq!(
        load("kep12-base", &folder_ctx).unwrap().operator.name,
        "kep12-base"
    );
}

#[test]
fn kep12_extension_resolves_against_its_base() {
    let ops = common::repo_fixtures().join("operators");
    let ctx = ctx_with(vec![repo("local", &ops.display().to_string(), 0)], None);
    let pkg = load(&ops.join("kep12-extension").display().to_string(), &ctx).unwrap();
    let op = &pkg.operator;
    assert!(op.extends.is_none());
    assert_eq!(op.app_version.as_deref(), Some("11.0.0"), "inherited");
    let plans: Vec<_> = op.plans.keys().map(String::as_str).collect();
    assert_eq!(plans, ["backup", "clear", "deploy", "load"]);
    match &pkg.task("backup").unwrap().spec {
        TaskSpec::Apply { resources, patches } => {
            assert_eq!(resources, &["backup-job.yaml"]);
            assert_eq!(patches, &["backup-compression-patch.yaml"]);
        }
        other => panic!("{other:?}"),
    }
    // base/backup in the clear plan is the base's own, unpatched task.
    let clear = &op.plans["clear"];
    assert_eq!(clear.phases[0].steps[0].tasks, ["base-backup"]);
    match &pkg.task("base-backup").unwrap().spec {
        TaskSpec::Apply { patches, .. } => assert!(patches.is_empty()),
        other => panic!("{other:?}"),
    }
    let replicas = pkg.parameter("REPLICAS").unwrap();
    assert_eq!(replicas.default.as_deref(), Some("3"), "extension wins");
    assert_eq!(
        replicas.description.as_deref(),
        Some("Number of database pods."),
        "base kept"
    );
    assert_eq!(replicas.value_type, kudo_package::ParamType::Integer);
    assert!(pkg.parameter("DATASET").is_some() && pkg.parameter("IMAGE").is_some());
    for t in [
        "statefulset.yaml",
        "service.yaml",
        "load-job.yaml",
        "backup-compression-patch.yaml",
    ] {
        assert!(pkg.templates.contains_key(t), "{t}");
    }
    let errors: Vec<_> = kudo_package::verify(&pkg)
        .into_iter()
        .filter(|f| f.severity == kudo_package::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn extension_base_from_a_sibling_folder_or_a_clear_error() {
    let ops = common::repo_fixtures().join("operators");
    let sibling = load(
        &ops.join("kep12-extension").display().to_string(),
        &LoadContext::default(),
    )
    .unwrap();
    assert!(
        sibling.parameter("STORAGE").is_some(),
        "base parameters inherited"
    );

    let tmp = tempfile::tempdir().unwrap();
    let lonely = tmp.path().join("ext");
    std::fs::create_dir_all(lonely.join("templates")).unwrap();
    for f in ["operator.yaml", "params.yaml"] {
        std::fs::copy(ops.join("kep12-extension").join(f), lonely.join(f)).unwrap();
    }
    let err = load(&lonely.display().to_string(), &LoadContext::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot load base operator \"kep12-base\""),
        "{err}"
    );
}

#[test]
fn repository_index_lists_absolute_urls_and_load_entry_loads_them() {
    let server = Server::start();
    served_repo(&server, "/li", &[("0.1.0", None), ("0.2.0", None)]);
    let r = repo("li", &format!("{}/li", server.base), 0);
    let ctx = ctx_with(vec![r.clone()], None);
    let index = kudo_package::repository_index(&r, &ctx).unwrap();
    let entries = &index.entries["demo"];
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[1].urls,
        [format!("{}/li/pkgs/demo-0.1.0.tgz", server.base)]
    );
    let pkg = kudo_package::load_entry(&entries[1], &r, &ctx).unwrap();
    assert_eq!(pkg.operator.operator_version, "0.1.0");

    let folder = repo(
        "f",
        &common::repo_fixtures()
            .join("operators")
            .display()
            .to_string(),
        0,
    );
    let listed = kudo_package::repository_index(&folder, &ctx).unwrap();
    let names: Vec<_> = listed.entries.keys().map(String::as_str).collect();
    for expected in ["kep12-base", "kep12-extension", "lifecycle"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // Two folders of one operator (lifecycle-v1, lifecycle-v2) are two versions of it.
    let versions: Vec<_> = listed.entries["lifecycle"]
        .iter()
        .map(|e| e.operator_version.as_str())
        .collect();
    assert_eq!(versions.len(), 2, "{versions:?}");
}

#[test]
fn plain_tar_is_accepted_when_already_decompressed() {
    use std::io::Read;
    let gz = common::raw_tgz(&[
        common::file("operator.yaml", common::OPERATOR.as_bytes()),
        common::file("templates/cm.yaml", common::TEMPLATE.as_bytes()),
    ]);
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut plain)
        .unwrap();
    let files = read_tgz(&plain, "plain.tar").unwrap();
    assert!(files.contains_key("operator.yaml"));
}

#[test]
fn dependencies_from_relative_folders_and_repositories() {
    let tmp = tempfile::tempdir().unwrap();
    let parent_dir = tmp.path().join("parent");
    write_pkg(&parent_dir, "1.0.0", None);
    write_pkg(&tmp.path().join("child"), "0.5.0", Some("2.0.0"));
    let parent = Package::load_dir(&parent_dir).unwrap();
    let ctx = LoadContext::default();
    let child =
        kudo_package::load_dependency(&parent, "../child", Some("2.0.0"), Some("0.5.0"), &ctx)
            .unwrap();
    assert_eq!(child.operator.operator_version, "0.5.0");
    let err = kudo_package::load_dependency(&parent, "../child", None, Some("0.6.0"), &ctx)
        .unwrap_err()
        .to_string();
    assert!(err.contains("operatorVersion 0.6.0 was asked for"), "{err}");

    let ops = common::repo_fixtures().join("operators");
    let repo_ctx = ctx_with(vec![repo("local", &ops.display().to_string(), 0)], None);
    let base = kudo_package::load_dependency(&parent, "kep12-base", None, Some("0.1.0"), &repo_ctx)
        .unwrap();
    assert_eq!(base.operator.name, "kep12-base");
}

/// A repository or package written as a URL of a scheme we cannot read (`ftp://`) is
/// named with the schemes that work, before anything is read: not "no such folder".
#[test]
fn unsupported_url_schemes_are_named_with_the_supported_ones() {
    let ftp = repo("mirror", "ftp://example.com/kudo", 0);
    let ctx = ctx_with(vec![ftp.clone()], None);
    for e in [
        kudo_package::repository_index(&ftp, &ctx).unwrap_err(),
        kudo_package::fetch_index(&ftp, &ctx).unwrap_err(),
        load("zookeeper", &ctx).unwrap_err(),
    ] {
        let text = e.to_string();
        assert!(text.contains("repository mirror"), "{text}");
        assert!(
            text.contains(
                "\"ftp://example.com/kudo\" uses the ftp:// scheme, which is not supported"
            ),
            "{text}"
        );
        assert!(
            text.contains("http:// or https:// URL, a file:// URL, or a path to a folder"),
            "{text}"
        );
        assert!(!text.contains("No such file"), "{text}");
    }
    let e = load(
        "ftp://example.com/kudo/zk-0.1.0.tgz",
        &ctx_with(Vec::new(), None),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("ftp://example.com/kudo/zk-0.1.0.tgz: the ftp:// scheme is not supported"),
        "{text}"
    );
    for ok in [
        "http://x/",
        "https://x/i.yaml",
        "file:///srv/repo",
        "/srv/repo",
        "repo",
        "C:\\repo",
        "C:/repo",
        "HTTPS://x/",
    ] {
        assert_eq!(kudo_package::repository_url_problem(ok), None, "{ok}");
    }
    for bad in [
        "ftp://x",
        "s3://bucket/repo",
        "oci://registry/x",
        "git+ssh://h/r",
    ] {
        assert!(kudo_package::repository_url_problem(bad).is_some(), "{bad}");
    }
}

#[test]
fn repositories_with_one_name_or_an_unsupported_url_are_problems() {
    let repo = |name: &str, url: &str| kudo_package::Repository {
        name: name.into(),
        url: url.into(),
        priority: 0,
    };
    use kudo_package::RepositoryProblem;
    let problems = kudo_package::repository_problems(&[
        repo("a", "http://x/"),
        repo("b", "ftp://example.com/kudo"),
        repo("a", "http://y/"),
    ]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(matches!(
        &problems[0],
        RepositoryProblem::UnsupportedUrl { index: 1, name, .. } if name == "b"
    ));
    assert_eq!(problems[0].summary(), "Unsupported repository URL");
    assert_eq!(problems[0].field(), "url");
    assert!(
        problems[0]
            .to_string()
            .starts_with("Repository \"b\": \"ftp://example.com/kudo\" uses the ftp:// scheme"),
        "{}",
        problems[0]
    );
    assert_eq!(
        problems[1],
        RepositoryProblem::DuplicateName {
            index: 2,
            name: "a".into()
        }
    );
    assert_eq!(problems[1].summary(), "Duplicate repository name");
    assert_eq!((problems[1].index(), problems[1].field()), (2, "name"));
    assert!(
        kudo_package::repository_problems(&[repo("a", "http://x/"), repo("b", "/srv")]).is_empty()
    );
}
