//! Parse + execute every template of the kafka and zookeeper fixture packages.
//! Skips (does nothing) when `../shared/fixtures` is absent.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_template::{Vars, render};

fn package_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/operators")
        .join(name)
}

/// Templates and default-parameter variables, loaded with `kudo-package`.
fn load(name: &str) -> Option<(Vec<(String, String)>, Vars)> {
    let pkg = kudo_package::Package::load_dir(&package_dir(name)).ok()?;
    let effective = pkg.effective_params(&BTreeMap::new()).ok()?;
    let vars = Vars {
        operator_name: pkg.operator.name.clone(),
        name: "demo".into(),
        namespace: "kudo-test".into(),
        operator_version: pkg.operator.operator_version.clone(),
        app_version: pkg.operator.app_version.clone().unwrap_or_default(),
        plan_name: "deploy".into(),
        phase_name: "main".into(),
        step_name: "everything".into(),
        params: pkg.template_params(&effective).ok()?,
        pipes: BTreeMap::new(),
    };
    Some((pkg.templates.into_iter().collect(), vars))
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
