//! Golden renders: every case under `../shared/fixtures/conformance/` rendered by this
//! crate must match Go's text/template + Sprig byte for byte, and fail exactly on the
//! templates listed in the case's `_errors.txt`.
//!
//! Packages are loaded with `kudo-package` (`load_dir`, `effective_params`,
//! `template_params`), so this also checks that the two crates agree on parameters.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use kudo_template::{Vars, render};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures")
}

fn short_diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    for i in 0..w.len().max(g.len()) {
        if w.get(i) != g.get(i) {
            return format!(
                "line {}:\n      want: {:?}\n      got:  {:?}",
                i + 1,
                w.get(i).unwrap_or(&"<end>"),
                g.get(i).unwrap_or(&"<end>")
            );
        }
    }
    "identical lines, different bytes".into()
}

/// One case: returns (template count, mismatches).
fn run_case(case_json: &Path) -> (usize, Vec<String>) {
    run_case_with(case_json, |_| {})
}

fn run_case_with(case_json: &Path, tweak: impl Fn(&mut Vars)) -> (usize, Vec<String>) {
    let case: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(case_json).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{}: {e}", case_json.display()));
    let get = |k: &str| {
        case.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let case_dir = case_json.with_extension("");
    let pkg = case_json
        .parent()
        .unwrap_or(Path::new("."))
        .join(get("package"));
    let package = kudo_package::Package::load_dir(&pkg)
        .unwrap_or_else(|e| panic!("{}: {e:?}", pkg.display()));
    let values: BTreeMap<String, String> = case
        .get("params")
        .and_then(|p| p.as_object())
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let pipes: BTreeMap<String, String> = case
        .get("pipes")
        .and_then(|p| p.as_object())
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let effective = package
        .effective_params(&values)
        .unwrap_or_else(|e| panic!("{}: {e:?}", case_json.display()));
    let params = package
        .template_params(&effective)
        .unwrap_or_else(|e| panic!("{}: {e:?}", case_json.display()));
    let vars = Vars {
        operator_name: package.operator.name.clone(),
        name: get("name"),
        namespace: get("namespace"),
        operator_version: package.operator.operator_version.clone(),
        app_version: package.operator.app_version.clone().unwrap_or_default(),
        plan_name: get("planName"),
        phase_name: get("phaseName"),
        step_name: get("stepName"),
        params,
        pipes,
    };
    let mut vars = vars;
    tweak(&mut vars);
    let expected_errors: Vec<String> = fs::read_to_string(case_dir.join("_errors.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(t, _)| t.to_string()))
        .collect();
    let all = package.templates.clone();
    let mut mismatches = Vec::new();
    for (name, text) in &all {
        let result = render(name, text, &vars);
        let should_fail = expected_errors.contains(name);
        match (result, should_fail) {
            (Ok(_), true) => mismatches.push(format!("{name}: rendered, but Go fails")),
            (Err(e), false) => mismatches.push(format!("{name}: unexpected error: {e}")),
            (Err(_), true) => {}
            (Ok(got), false) => {
                let want = fs::read_to_string(case_dir.join(name)).unwrap_or_default();
                if want != got {
                    mismatches.push(format!("{name}: {}", short_diff(&want, &got)));
                }
            }
        }
    }
    (all.len(), mismatches)
}

#[test]
fn golden_renders_are_identical() {
    let dir = fixtures().join("conformance");
    let Ok(entries) = fs::read_dir(&dir) else {
        eprintln!(
            "SKIPPED: {} not found (clone without ../shared)",
            dir.display()
        );
        return;
    };
    let mut cases: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no cases in {}", dir.display());
    let (mut identical, mut templates_ok, mut templates_total) = (0, 0, 0);
    let mut report = Vec::new();
    for case in &cases {
        let (count, mismatches) = run_case(case);
        templates_total += count;
        templates_ok += count - mismatches.len();
        let name = case
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        if mismatches.is_empty() {
            identical += 1;
        } else {
            report.push(format!("  {name}:\n    {}", mismatches.join("\n    ")));
        }
    }
    println!(
        "{identical}/{} cases identical ({templates_ok}/{templates_total} templates)",
        cases.len()
    );
    for r in &report {
        println!("{r}");
    }
    assert!(
        report.is_empty(),
        "{} case(s) differ:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// The comparison must be able to fail: a different instance name changes the output.
#[test]
fn harness_reports_differences() {
    let case = fixtures().join("conformance/zookeeper-default.json");
    if !case.exists() {
        eprintln!(
            "SKIPPED: {} not found (clone without ../shared)",
            case.display()
        );
        return;
    }
    let (_, mismatches) = run_case_with(&case, |v| v.name = "other".into());
    assert!(!mismatches.is_empty());
    let (_, mismatches) = run_case_with(&case, |v| {
        v.params.remove("NODE_COUNT");
    });
    assert!(
        mismatches.iter().any(|m| m.contains("NODE_COUNT")),
        "{mismatches:?}"
    );
}
