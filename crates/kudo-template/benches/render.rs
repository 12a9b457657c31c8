//! Parse + execute every template of the kafka and zookeeper fixture packages.
//! Skips (does nothing) when `../shared/fixtures` is absent.

use std::collections::BTreeMap;
use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_template::{Vars, render};

fn package_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/operators")
        .join(name)
}

/// Templates and default-parameter variables, as the conformance test builds them.
fn load(name: &str) -> Option<(Vec<(String, String)>, Vars)> {
    let dir = package_dir(name);
    let params: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&fs::read_to_string(dir.join("params.yaml")).ok()?).ok()?;
    let operator: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&fs::read_to_string(dir.join("operator.yaml")).ok()?).ok()?;
    let text = |v: Option<&serde_yaml_ng::Value>| -> Option<String> {
        match v? {
            serde_yaml_ng::Value::String(s) => Some(s.clone()),
            serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
            serde_yaml_ng::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    };
    let mut values = BTreeMap::new();
    for p in params.get("parameters")?.as_sequence()? {
        let value =
            text(p.get("default")).map_or(serde_json::Value::Null, serde_json::Value::String);
        values.insert(text(p.get("name"))?, value);
    }
    let vars = Vars {
        operator_name: text(operator.get("name")).unwrap_or_default(),
        name: "demo".into(),
        namespace: "kudo-test".into(),
        operator_version: text(operator.get("operatorVersion")).unwrap_or_default(),
        app_version: text(operator.get("appVersion")).unwrap_or_default(),
        plan_name: "deploy".into(),
        phase_name: "main".into(),
        step_name: "everything".into(),
        params: values,
        pipes: BTreeMap::new(),
    };
    let mut templates = Vec::new();
    for e in fs::read_dir(dir.join("templates")).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        templates.push((name, fs::read_to_string(e.path()).ok()?));
    }
    templates.sort();
    Some((templates, vars))
}

fn bench(c: &mut Criterion) {
    for pkg in ["kafka", "zookeeper"] {
        let Some((templates, vars)) = load(pkg) else {
            eprintln!("SKIP: fixtures for {pkg} not found");
            continue;
        };
        c.bench_function(
            &format!("render {pkg} package ({} templates)", templates.len()),
            |b| {
                b.iter(|| {
                    for (name, text) in &templates {
                        // Templates that need pipes fail; the work until then is still measured.
                        let _ = black_box(render(name, text, black_box(&vars)));
                    }
                })
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
