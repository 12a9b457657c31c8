//! `resolve PATH [--repo NAME=URL]... [--override PACKAGE=RANGE]... [--name INSTANCE]
//! [--format text|json|mermaid|dot]`: the dependency decisions `terraform plan` would
//! make, without a cluster, for CI.
//!
//! Repositories are tried in the order given (the first has the highest priority).
//! Exit 0 with the tree and install order, 1 when the constraints cannot be met.
//! `--format json` (or `--json`) prints `dependencies` and `install_order` exactly as the
//! `kudo_dependencies` data source and `kudo_operator` show them, so CI can compare them
//! as they are; `--format mermaid` prints their `graph` attribute, `--format dot` the
//! same picture for Graphviz (both from `kudo_resolve::diagram`).

use std::collections::BTreeMap;
use std::process::ExitCode;

use kudo_package::{LoadContext, Repository};
use kudo_resolve::ClusterVersion;
use kudo_resolve::{Dependency, Resolution, ResolvedInstance};
use serde::Serialize;

use super::args::{self, Flag};

const FLAGS: &[Flag] = &[
    Flag::value("--repo").repeated(),
    Flag::value("--override").repeated(),
    Flag::value("--name"),
    Flag::value("--kubernetes-version"),
    Flag::switch("--json"),
    Flag::value("--format"),
];

/// What `--format` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Mermaid,
    Dot,
}

const FORMATS: &str = "text, json, mermaid or dot";

fn format_of(parsed: &args::Parsed) -> Result<Format, String> {
    let format = match parsed.value("--format") {
        None | Some("text") => Format::Text,
        Some("json") => Format::Json,
        Some("mermaid") => Format::Mermaid,
        Some("dot") => Format::Dot,
        Some(other) => return Err(format!("--format {other:?}: use {FORMATS}")),
    };
    match (parsed.has("--json"), format) {
        (false, f) => Ok(f),
        (true, Format::Text | Format::Json) if parsed.value("--format") != Some("text") => {
            Ok(Format::Json)
        }
        (true, _) => Err("--json is --format json; give one of them".to_string()),
    }
}

pub fn run(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out(
            "resolve PATH [--repo NAME=URL]... [--override PACKAGE=VERSION]... [--name INSTANCE] [--kubernetes-version 1.X] [--format text|json|mermaid|dot]\n  \
             Resolves the operator's KudoOperator dependencies as `terraform plan` does;\n  \
             --kubernetes-version chooses versions a cluster of that release runs, as the plan does with a reachable cluster;\n  \
             --format json (or --json) prints the `dependencies` and `install_order` Terraform shows,\n  \
             mermaid the `graph` attribute (a Mermaid flowchart), dot the same picture for Graphviz.\n",
        );
        return ExitCode::SUCCESS;
    }
    let (parsed, path) = match super::parse_with_one(
        "resolve",
        argv,
        FLAGS,
        "PATH (a package folder, .tgz or URL)",
    ) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let path = path.as_str();
    let format = match format_of(&parsed) {
        Ok(f) => f,
        Err(e) => return super::usage_error("resolve", &e),
    };
    let mut repositories = Vec::new();
    for (i, text) in parsed.values("--repo").iter().enumerate() {
        match args::key_value(text, "--repo") {
            Ok((name, url)) => {
                if let Some(problem) = kudo_package::repository_url_problem(&url) {
                    return super::usage_error("resolve", &format!("--repo {name}: {problem}"));
                }
                repositories.push(Repository {
                    name,
                    url,
                    priority: i32::try_from(i).unwrap_or(i32::MAX),
                });
            }
            Err(e) => return super::usage_error("resolve", &e),
        }
    }
    let mut overrides = BTreeMap::new();
    for text in parsed.values("--override") {
        match args::key_value(text, "--override") {
            Ok((k, v)) => {
                overrides.insert(k, v);
            }
            Err(e) => return super::usage_error("resolve", &e),
        }
    }
    let ctx = LoadContext {
        repositories,
        ..LoadContext::default()
    };
    let pkg = match kudo_package::load(path, &ctx) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let instance = parsed
        .value("--name")
        .map_or_else(|| pkg.operator.name.clone(), str::to_string);
    let cluster = match parsed
        .value("--kubernetes-version")
        .map(ClusterVersion::parse)
    {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(e)) => {
            return super::usage_error("resolve", &format!("--kubernetes-version: {e}"));
        }
    };
    if let Some(c) = &cluster {
        match kudo_resolve::runs_on(&pkg, c.release) {
            Ok(true) => {}
            Ok(false) => {
                eprintln!(
                    "error: {path}: {} {} declares kubernetesVersion {}, newer than Kubernetes {}",
                    pkg.operator.name,
                    pkg.operator.operator_version,
                    pkg.operator.kubernetes_version.trim(),
                    c.reported
                );
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("error: {path}: operator.yaml kubernetesVersion: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    match kudo_resolve::resolve_from_repositories(&pkg, &instance, ctx, overrides, cluster) {
        Ok(resolution) => {
            match format {
                Format::Json => match serde_json::to_string_pretty(&json_report(&resolution)) {
                    Ok(json) => super::print_out(&format!("{json}\n")),
                    Err(e) => {
                        eprintln!("error: cannot write JSON: {e}");
                        return ExitCode::FAILURE;
                    }
                },
                // The rendering already ends with the install order line.
                Format::Text => super::print_out(&resolution.render_tree()),
                // Values known at resolution time: the defaults (no parameters here),
                // as the `graph` attributes show them.
                Format::Mermaid => super::print_out(&kudo_resolve::to_mermaid(&resolution, None)),
                Format::Dot => super::print_out(&kudo_resolve::to_dot(&resolution, None)),
            }
            for unused in &resolution.unused_overrides {
                eprintln!("warning: --override {unused} names no dependency of this operator");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What `--json` prints. `dependencies` and `install_order` have the shape of the
/// Terraform attributes of the same names; `instances` is the full tree for tools that
/// need instance names, tasks or parameter files.
#[derive(Serialize)]
struct JsonReport<'a> {
    dependencies: Vec<Dependency>,
    install_order: Vec<String>,
    unused_overrides: &'a [String],
    instances: &'a [ResolvedInstance],
}

fn json_report(resolution: &Resolution) -> JsonReport<'_> {
    JsonReport {
        dependencies: resolution.dependencies(),
        install_order: resolution.install_order_versions(),
        unused_overrides: &resolution.unused_overrides,
        instances: &resolution.nodes,
    }
}
