//! `resolve --format dot|mermaid` read by the tools that draw it: Graphviz's `dot`
//! renders the DOT (`-Tsvg`, and `-Tjson` for the text it drew), and Mermaid itself
//! (the library GitHub and GitLab draw ```mermaid blocks with, run under Node by
//! tests/mermaid/check.mjs) parses the flowchart. Both must show exactly what the
//! resolution decided (`resolve --format json`): every instance with its package,
//! version and origin, parent -> child edges with the task, switched-off subtrees
//! dashed, required operators, names and paths with quotes, `#`, `<`, `&` and
//! backslashes intact.
//!
//! Needs `dot` (Debian's graphviz) and `scripts/install-mermaid.sh` (Node 20 + npm);
//! scripts/test.sh installs both. Without them the tests skip with a message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::harness::{fixture_operator, provider_binary, repo_root};
use crate::skip;

/// What a picture shows: nodes and edges, each with its text lines as drawn.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Shown {
    nodes: Vec<(String, Vec<String>, bool)>,
    edges: Vec<(String, String, Vec<String>, bool)>,
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `resolve PACKAGE --repo fixtures=REPO [--override ...] --format FORMAT`, run in
/// `cwd` (so that relative package paths stay as written).
fn resolve(cwd: &Path, package: &str, repo: &Path, overrides: &[&str], format: &str) -> String {
    let mut cmd = Command::new(provider_binary());
    cmd.current_dir(cwd)
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .args(["resolve", package, "--repo"])
        .arg(format!("fixtures={}", repo.display()));
    for o in overrides {
        cmd.args(["--override", o]);
    }
    let out = run(cmd.args(["--format", format]));
    assert!(
        out.status.success(),
        "resolve --format {format} failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The picture the resolution calls for, from `resolve --format json`: built from the
/// decisions, not from the drawing code. `root_path` is the package as given.
fn expected(json: &Value, root_path: &str, operators: &[(&str, &str, &str)]) -> Shown {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let instances = json["instances"].as_array().cloned().unwrap_or_default();
    let id_of = |name: &str| {
        instances
            .iter()
            .position(|i| i["instance"] == name)
            .map(|p| format!("i{p}"))
            .unwrap_or_else(|| panic!("no instance {name}"))
    };
    let version = |v: &Value| match v["app_version"].as_str() {
        Some(app) => format!(
            "{} {} (app {app})",
            s(&v["package"]),
            s(&v["operator_version"])
        ),
        None => format!("{} {}", s(&v["package"]), s(&v["operator_version"])),
    };
    let mut shown = Shown {
        nodes: Vec::new(),
        edges: Vec::new(),
    };
    for (k, i) in instances.iter().enumerate() {
        let on = i["enabled"] == true;
        let mut lines = vec![format!("instance {}", s(&i["instance"])), version(i)];
        lines.push(match i["parent"].is_null() {
            true => root_path.to_string(),
            false => format!("from {}", s(&i["source"])),
        });
        if let Some(p) = i["enabling_parameter"].as_str() {
            lines.push(format!("enabled by {p}: {}", if on { "on" } else { "off" }));
        } else if !on {
            lines.push("off with its parent".to_string());
        }
        shown.nodes.push((format!("i{k}"), lines, !on));
        if let Some(parent) = i["parent"].as_str() {
            shown.edges.push((
                id_of(parent),
                format!("i{k}"),
                vec![format!("task {}", s(&i["task"])), s(&i["constraint"])],
                !on,
            ));
        }
    }
    // Required operators (no instance): (package, reference, requiring instance).
    let deps = json["dependencies"].as_array().cloned().unwrap_or_default();
    for (k, (package, reference, from)) in operators.iter().enumerate() {
        let d = deps
            .iter()
            .find(|d| d["package"] == *package && d["required_by"].is_string())
            .unwrap_or_else(|| panic!("{package} is a dependency: {json:#}"));
        shown.nodes.push((
            format!("o{k}"),
            vec![
                version(d),
                "operator only, no instance".to_string(),
                format!("from {}", s(&d["source"])),
            ],
            false,
        ));
        shown.edges.push((
            id_of(from),
            format!("o{k}"),
            vec![format!("requires ({reference})"), s(&d["constraint"])],
            false,
        ));
    }
    shown.nodes.sort();
    shown.edges.sort();
    shown
}

/// Undoes Graphviz's escapes in a label as `-Tjson` gives it (`\n` line breaks, `\\`).
fn dot_label_lines(label: &str) -> Vec<String> {
    let mut lines = vec![String::new()];
    let mut chars = label.chars();
    while let Some(c) = chars.next() {
        match (c, lines.last_mut()) {
            ('\\', Some(line)) => match chars.next() {
                Some('n') => lines.push(String::new()),
                Some(other) => line.push(other),
                None => line.push('\\'),
            },
            (c, Some(line)) => line.push(c),
            (_, None) => {}
        }
    }
    lines
}

/// What `dot` drew: renders SVG (must succeed), then reads the same graph back as JSON
/// for its nodes, edges, labels and styles.
fn drawn_by_dot(dot_text: &str, dir: &Path, name: &str) -> Shown {
    let file = dir.join(format!("{name}.dot"));
    std::fs::write(&file, dot_text).expect("write the DOT file");
    let svg = run(Command::new("dot").arg("-Tsvg").arg(&file));
    assert!(
        svg.status.success(),
        "dot -Tsvg refused {name}:\n{}\n{dot_text}",
        text(&svg.stderr)
    );
    let svg = text(&svg.stdout);
    assert!(svg.contains("<svg") && svg.contains("</svg>"), "{svg}");
    let json = run(Command::new("dot").arg("-Tjson").arg(&file));
    assert!(json.status.success(), "{}", text(&json.stderr));
    let graph: Value = serde_json::from_slice(&json.stdout).expect("dot -Tjson is JSON");
    let styled = |o: &Value| o["style"].as_str().unwrap_or_default().contains("dashed");
    let objects = graph["objects"].as_array().cloned().unwrap_or_default();
    let name_of = |gvid: &Value| {
        objects
            .iter()
            .find(|o| o["_gvid"] == *gvid)
            .and_then(|o| o["name"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut shown = Shown {
        nodes: objects
            .iter()
            .map(|o| {
                (
                    o["name"].as_str().unwrap_or_default().to_string(),
                    dot_label_lines(o["label"].as_str().unwrap_or_default()),
                    styled(o),
                )
            })
            .collect(),
        edges: graph["edges"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    name_of(&e["tail"]),
                    name_of(&e["head"]),
                    dot_label_lines(e["label"].as_str().unwrap_or_default()),
                    styled(e),
                )
            })
            .collect(),
    };
    shown.nodes.sort();
    shown.edges.sort();
    shown
}

/// Node and the installed checker (`KUDO_TEST_MERMAID_DIR`, else `.tools/mermaid`).
fn mermaid_checker() -> Result<PathBuf, String> {
    let dir = std::env::var_os("KUDO_TEST_MERMAID_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".tools/mermaid"));
    if Command::new("node").arg("--version").output().is_err() {
        return Err("node is not installed".into());
    }
    if !dir.join("node_modules/mermaid").is_dir() || !dir.join("check.mjs").is_file() {
        return Err(format!(
            "Mermaid is not installed in {} (run scripts/install-mermaid.sh)",
            dir.display()
        ));
    }
    Ok(dir)
}

/// What Mermaid understood of the flowchart.
fn read_by_mermaid(checker: &Path, mermaid: &str, dir: &Path, name: &str) -> Shown {
    let file = dir.join(format!("{name}.mmd"));
    std::fs::write(&file, mermaid).expect("write the Mermaid file");
    let out = run(Command::new("node")
        .arg(checker.join("check.mjs"))
        .arg(&file));
    assert!(
        out.status.success(),
        "Mermaid refused {name}:\n{}\n{mermaid}",
        text(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).expect("the checker prints JSON");
    let chart = &parsed[0];
    assert_eq!(chart["type"], "flowchart-v2", "{chart:#}");
    let lines = |v: &Value| -> Vec<String> {
        v.as_str()
            .unwrap_or_default()
            .split('\n')
            .map(str::to_string)
            .collect()
    };
    let mut shown = Shown {
        nodes: chart["vertices"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| {
                let off = v["classes"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c == "off"));
                (
                    v["id"].as_str().unwrap_or_default().to_string(),
                    lines(&v["text"]),
                    off,
                )
            })
            .collect(),
        edges: chart["edges"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    e["start"].as_str().unwrap_or_default().to_string(),
                    e["end"].as_str().unwrap_or_default().to_string(),
                    lines(&e["text"]),
                    e["stroke"] == "dotted",
                )
            })
            .collect(),
    };
    shown.nodes.sort();
    shown.edges.sort();
    // Operators are hexagons, instances rounded boxes.
    for v in chart["vertices"].as_array().into_iter().flatten() {
        let want = match v["id"].as_str().unwrap_or_default().starts_with('o') {
            true => "hexagon",
            false => "round",
        };
        assert_eq!(v["shape"], want, "{v:#}");
    }
    shown
}

/// One tree to draw: how to resolve it and the operators it requires.
struct Tree {
    name: &'static str,
    cwd: PathBuf,
    package: String,
    repo: PathBuf,
    overrides: Vec<&'static str>,
    operators: Vec<(&'static str, &'static str, &'static str)>,
}

/// The trees every test draws: the KEP-29 demo of the real operators (flink-demo with
/// zookeeper, kafka and flink, ranges given as overrides, as its acceptance tests do),
/// an `enablingParameter` subtree that is off, required operators, and a root package
/// in a folder whose name needs escaping in both languages.
fn trees(tmp: &Path) -> Vec<Tree> {
    let deps = repo_root().join("tests/fixtures/deps");
    let mut out = Vec::new();
    match fixture_operator("flink-demo") {
        Some(demo) => out.push(Tree {
            name: "flink-demo",
            cwd: tmp.to_path_buf(),
            package: demo.display().to_string(),
            repo: demo.parent().map(Path::to_path_buf).unwrap_or_default(),
            overrides: vec!["kafka=1.3.x", "zookeeper=>=0.3.0 <0.4.0"],
            operators: Vec::new(),
        }),
        None => eprintln!("note: ../shared/fixtures/operators is absent; flink-demo is not drawn"),
    }
    out.push(Tree {
        name: "enabling",
        cwd: tmp.to_path_buf(),
        package: deps.join("enabling/parent").display().to_string(),
        repo: deps.join("enabling"),
        overrides: Vec::new(),
        operators: Vec::new(),
    });
    out.push(Tree {
        name: "olm",
        cwd: tmp.to_path_buf(),
        package: deps.join("olm/shop").display().to_string(),
        repo: deps.join("olm"),
        overrides: Vec::new(),
        operators: vec![
            ("zookeeper", "dependencies[0]", "shop"),
            ("kafka", "dependencies[1]", "shop"),
        ],
    });
    // KEP-29's own example (aa -> bb -> ee, gg; aa -> cc), its root copied into a folder
    // named with a quote, `#`, `<`, `&` and a backslash, given as a relative path.
    let odd = "we\"ird #1 <a&b> \\x";
    let root = tmp.join(odd).join("aa");
    copy_folder(&deps.join("kep29/aa"), &root);
    out.push(Tree {
        name: "kep29-odd-path",
        cwd: tmp.to_path_buf(),
        package: format!("{odd}/aa"),
        repo: deps.join("kep29"),
        overrides: Vec::new(),
        operators: Vec::new(),
    });
    out
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the package folder") {
        let path = entry.expect("folder entry").path();
        let Some(name) = path.file_name() else {
            continue;
        };
        if path.is_dir() {
            copy_folder(&path, &to.join(name));
        } else {
            std::fs::copy(&path, to.join(name)).expect("copy a package file");
        }
    }
}

#[test]
fn dot_renders_every_tree_as_resolved() {
    if Command::new("dot").arg("-V").output().is_err() {
        skip!("Graphviz `dot` is not installed (apt-get install graphviz; scripts/test.sh does)");
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    for tree in trees(tmp.path()) {
        let json: Value = serde_json::from_str(&resolve(
            &tree.cwd,
            &tree.package,
            &tree.repo,
            &tree.overrides,
            "json",
        ))
        .expect("resolve --format json");
        let want = expected(&json, &tree.package, &tree.operators);
        let dot = resolve(&tree.cwd, &tree.package, &tree.repo, &tree.overrides, "dot");
        let shown = drawn_by_dot(&dot, tmp.path(), tree.name);
        assert_eq!(shown, want, "{}: dot drew\n{dot}", tree.name);
    }
}

#[test]
fn mermaid_parses_every_tree_as_resolved() {
    let checker = match mermaid_checker() {
        Ok(dir) => dir,
        Err(why) => skip!("{why}; scripts/test.sh installs it"),
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    for tree in trees(tmp.path()) {
        let json: Value = serde_json::from_str(&resolve(
            &tree.cwd,
            &tree.package,
            &tree.repo,
            &tree.overrides,
            "json",
        ))
        .expect("resolve --format json");
        let want = expected(&json, &tree.package, &tree.operators);
        let mermaid = resolve(
            &tree.cwd,
            &tree.package,
            &tree.repo,
            &tree.overrides,
            "mermaid",
        );
        let shown = read_by_mermaid(&checker, &mermaid, tmp.path(), tree.name);
        assert_eq!(shown, want, "{}: Mermaid read\n{mermaid}", tree.name);
    }
}

/// The checker must be able to fail: Mermaid refuses a label with a bare quote (what
/// an unescaped name would produce).
#[test]
fn mermaid_refuses_an_unescaped_quote() {
    let checker = match mermaid_checker() {
        Ok(dir) => dir,
        Err(why) => skip!("{why}; scripts/test.sh installs it"),
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("bad.mmd");
    std::fs::write(&file, "flowchart TD\n  i0(\"instance we\"ird\")\n").expect("write");
    let out = run(Command::new("node")
        .arg(checker.join("check.mjs"))
        .arg(&file));
    assert!(!out.status.success(), "Mermaid accepted a bare quote");
    assert!(
        text(&out.stderr).contains("Parse error"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn resolve_refuses_an_unknown_format() {
    let deps = repo_root().join("tests/fixtures/deps");
    let out = run(Command::new(provider_binary())
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .args(["resolve"])
        .arg(deps.join("kep29/aa"))
        .args(["--format", "svg"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--format \"svg\": use text, json, mermaid or dot"),
        "{}",
        text(&out.stderr)
    );
}
