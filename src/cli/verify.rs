//! `package verify PATH [--extended]`: KUDO's `kubectl kudo package verify`.
//!
//! KUDO printed warnings and errors and failed with "found N package verification
//! errors". Here every finding is one `error: <file>: <message>` or `warning: ...` line
//! on stdout (easy to grep and to read in CI logs), then a summary on stderr.

use std::process::ExitCode;

use kudo_package::{Finding, LoadContext, Severity};

use super::args::Flag;

const FLAGS: &[Flag] = &[
    Flag::switch("--extended"),
    Flag::value("--kubernetes-version"),
];

pub fn run(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out(&format!("{}\n", super::usage()));
        return ExitCode::SUCCESS;
    }
    let (parsed, path) = match super::parse_with_one(
        "package verify",
        argv,
        FLAGS,
        "PATH (a package folder or .tgz)",
    ) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let path = path.as_str();
    let release = match parsed
        .value("--kubernetes-version")
        .map(str::parse)
        .transpose()
    {
        Ok(r) => r,
        Err(e) => {
            return super::usage_error("package verify", &format!("--kubernetes-version: {e}"));
        }
    };
    // Unverified: `load` would stop at the first error, and verify must list them all.
    let pkg = match kudo_package::load_unverified(path, &LoadContext::default()) {
        Ok(p) => p,
        Err(e) => {
            // The package does not even parse; that is a verification error too.
            super::print_out(&format!("error: {e}\n"));
            eprintln!("{path}: found 1 package verification error");
            return ExitCode::FAILURE;
        }
    };
    // Everything a plan can know without a cluster (kudo-plan walks every plan with
    // the defaults), not only KUDO's rules: what verify passes, a plan does not refuse.
    let mut findings = kudo_plan::verify(&pkg);
    if parsed.has("--extended") {
        findings.extend(kudo_package::verify_extended(&pkg));
        // Keep errors first, as each list is, after merging the two lists.
        findings.sort_by_key(|f| f.severity);
    }
    if let Some(release) = release {
        findings.extend(api_version_findings(&pkg, release));
        findings.sort_by_key(|f| f.severity);
    }
    let text: String = findings.iter().map(|f| format!("{f}\n")).collect();
    super::print_out(&text);
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    if errors > 0 {
        eprintln!(
            "{path}: found {errors} package verification error{} and {warnings} warning{}",
            plural(errors),
            plural(warnings)
        );
        ExitCode::FAILURE
    } else {
        eprintln!(
            "{path}: package is valid ({warnings} warning{})",
            plural(warnings)
        );
        ExitCode::SUCCESS
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Every object a template writes for an API version `release` does not serve: a
/// warning when the provider converts it, an error when it cannot (like pluto or
/// kubent do for charts). Templates are rendered with the package's defaults; one that
/// does not render (a required parameter without a default) is read as written.
fn api_version_findings(
    pkg: &kudo_package::Package,
    release: kube_api_versions::Release,
) -> Vec<Finding> {
    let translator = kube_api_versions::Translator::default();
    let rendered = super::render::render_defaults(pkg);
    let mut out = Vec::new();
    for (file, text) in &pkg.templates {
        let objects: Vec<serde_json::Value> = match rendered.get(file.as_str()) {
            Some(Ok(text)) => kudo_template::split_documents(text)
                .iter()
                .filter_map(|d| kudo_yaml::to_json(d).ok())
                .filter(serde_json::Value::is_object)
                .collect(),
            _ => written_kinds(text),
        };
        for object in objects {
            if let Some((note, _)) = super::api_versions::check(release, &translator, file, &object)
            {
                let (severity, line) = match note {
                    super::api_versions::Note::Converted(l) => (Severity::Warning, l),
                    super::api_versions::Note::NotServed(l) => (Severity::Error, l),
                };
                // The line already starts with the file.
                let message = line
                    .strip_prefix(&format!("templates/{file}: "))
                    .unwrap_or(&line)
                    .to_string();
                out.push(Finding {
                    severity,
                    ..Finding::error(format!("templates/{file}"), message)
                });
            }
        }
    }
    out
}

/// `apiVersion` and `kind` of each document of an unrendered template, read from their
/// top-level lines (the rest may be template code).
fn written_kinds(text: &str) -> Vec<serde_json::Value> {
    text.split("\n---")
        .filter_map(|doc| {
            let top = |key: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
                    .filter(|v| !v.is_empty() && !v.contains("{{"))
            };
            Some(serde_json::json!({
                "apiVersion": top("apiVersion:")?,
                "kind": top("kind:")?,
                "metadata": {"name": "(templated)"},
            }))
        })
        .collect()
}
