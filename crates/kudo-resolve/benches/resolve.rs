//! Resolution time on a synthetic catalog: 1,000 packages x 20 versions.
//!
//! Package `pN` has children `p(2N+1)` and `p(2N+2)` (a binary tree, about 10 levels)
//! and every package also needs `common`. Each version asks its children for a window
//! of versions and `common` for a window that shifts with the package, so the
//! windows only meet for some choices; the newest version of every 7th package asks for
//! an old `common`, which forces pubgrub to backtrack.
//!
//! Run: `cargo bench -p kudo-resolve` (prints timings; no criterion, to keep builds light).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kudo_package::{OperatorFile, Origin, Package, Phase, Plan, Step, Strategy, Task, TaskSpec};
use kudo_resolve::{MemoryCatalog, Resolver};

const PACKAGES: usize = 1_000;
const VERSIONS: usize = 20;

fn kudo_task(name: &str, package: &str, range: String, instance: String) -> Task {
    Task {
        name: name.to_string(),
        kind: "KudoOperator".to_string(),
        spec: TaskSpec::KudoOperator {
            package: package.to_string(),
            app_version: None,
            operator_version: Some(range),
            instance_name: Some(instance),
            parameter_file: None,
            enabling_parameter: None,
        },
    }
}

fn package(name: &str, version: &str, tasks: Vec<Task>) -> Package {
    let steps = tasks
        .iter()
        .map(|t| Step {
            name: t.name.clone(),
            tasks: vec![t.name.clone()],
        })
        .collect();
    let plan = Plan {
        strategy: Strategy::Serial,
        strategy_explicit: true,
        phases: vec![Phase {
            name: "main".to_string(),
            strategy: Strategy::Serial,
            strategy_explicit: true,
            steps,
        }],
    };
    Package {
        operator: OperatorFile {
            api_version: "kudo.dev/v1beta1".to_string(),
            name: name.to_string(),
            operator_version: version.to_string(),
            tasks,
            plans: BTreeMap::from([("deploy".to_string(), plan)]),
            ..OperatorFile::default()
        },
        parameters: Vec::new(),
        groups: Vec::new(),
        templates: BTreeMap::new(),
        origin: Origin::Memory,
    }
}

fn catalog(trap: bool) -> MemoryCatalog {
    let mut c = MemoryCatalog::new();
    for j in 0..VERSIONS {
        c.add(
            package("common", &format!("1.{j}.0"), Vec::new()),
            "synthetic",
            0,
        );
    }
    for i in 0..PACKAGES {
        for j in 0..VERSIONS {
            let mut tasks = Vec::new();
            for child in [2 * i + 1, 2 * i + 2] {
                if child < PACKAGES {
                    let low = j.saturating_sub(3);
                    tasks.push(kudo_task(
                        &format!("p{child}"),
                        &format!("p{child}"),
                        format!(">=1.{low}.0 <=1.{j}.0 || 1.{}.x", (j + 7) % VERSIONS),
                        format!("i{child}"),
                    ));
                }
            }
            let k = (i + j) % 10;
            let common = if trap && j == VERSIONS - 1 && i % 7 == 0 {
                "<1.5.0".to_string()
            } else {
                format!(">=1.{k}.0 <1.{}.0", k + 10)
            };
            tasks.push(kudo_task("common", "common", common, format!("c{i}")));
            c.add(
                package(&format!("p{i}"), &format!("1.{j}.0"), tasks),
                "synthetic",
                0,
            );
        }
    }
    c
}

fn run(trap: bool) {
    let t = Instant::now();
    let catalog = catalog(trap);
    let build = t.elapsed();
    let root = package(
        "app",
        "1.0.0",
        vec![kudo_task(
            "p0",
            "p0",
            ">=1.0.0".to_string(),
            "i0".to_string(),
        )],
    );
    let mut times: Vec<Duration> = Vec::new();
    let mut instances = 0;
    let mut newest = 0;
    let mut digest = 0;
    for _ in 0..5 {
        let t = Instant::now();
        match Resolver::new(&catalog).resolve(&root, "app") {
            Ok(r) => {
                instances = r.nodes.len();
                newest = r
                    .nodes
                    .iter()
                    .filter(|n| n.operator_version == format!("1.{}.0", VERSIONS - 1))
                    .count();
                // A digest of every chosen (instance, package, version): an optimisation
                // must leave it unchanged, since which versions users get must not move.
                let mut chosen: Vec<String> = r
                    .nodes
                    .iter()
                    .map(|n| format!("{} {} {}", n.instance, n.package, n.operator_version))
                    .collect();
                chosen.sort();
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&chosen, &mut h);
                digest = std::hash::Hasher::finish(&h);
            }
            Err(e) => {
                eprintln!("resolution failed: {e}");
                std::process::exit(1);
            }
        }
        times.push(t.elapsed());
    }
    times.sort();
    let what = if trap {
        "with conflicts (every 7th newest version needs an old `common`)"
    } else {
        "without conflicts"
    };
    println!(
        "{PACKAGES} packages x {VERSIONS} versions (+ common), {what}; catalog built in {build:?}"
    );
    println!(
        "  resolve: {instances} instances ({newest} at the newest version, choices digest {digest:016x}); min {:?}, median {:?}, max {:?} over {} runs",
        times[0],
        times[times.len() / 2],
        times[times.len() - 1],
        times.len()
    );
}

/// `cargo bench -p kudo-resolve -- conflicts` runs only the case with conflicts (for a
/// profiler); no argument runs both.
fn main() {
    let only_conflicts = std::env::args().skip(1).any(|a| a == "conflicts");
    if !only_conflicts {
        run(false);
    }
    run(true);
}
