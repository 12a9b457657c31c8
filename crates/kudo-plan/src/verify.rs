//! `package verify`: everything a plan can know about a package without a cluster.
//!
//! Each rule lives where the plan applies it, and is only called from here:
//!
//! * what loading refuses, and KUDO's verifier rules ([`kudo_package::verify`]; a
//!   package with such an error does not load, so no plan gets further);
//! * every template parses and calls only functions that exist
//!   ([`kudo_template::check`], the checks a render makes before executing), for every
//!   file, with its line and column;
//! * the versions the resolver reads: operator.yaml `kubernetesVersion`
//!   ([`kudo_resolve::kubernetes_minimum`]) and the ranges of KudoOperator tasks and
//!   `dependencies:` ([`kudo_resolve::version_errors`]);
//! * the walk of every plan with the default parameters ([`Desired`]): templates
//!   render, rendered objects have valid names and no task applies one object twice,
//!   patches find their targets, and so on: what `terraform plan` with the defaults
//!   would refuse.

use std::collections::{BTreeMap, BTreeSet};

use kudo_package::{Finding, Package, Severity};

use crate::{Desired, Inputs, PlanError, located_text};

const OP: &str = "operator.yaml";
const PARAMS: &str = "params.yaml";

/// The namespace verify renders in: `render`'s default, as `kubectl kudo install`'s.
const NAMESPACE: &str = "default";

/// Every finding about `pkg`, errors first. An error here is something a plan (with
/// the package's defaults, where parameters matter) would refuse.
pub fn verify(pkg: &Package) -> Vec<Finding> {
    let mut findings = kudo_package::verify(pkg);
    let loads = !findings.iter().any(|f| f.severity == Severity::Error);
    let syntax = template_syntax(pkg);
    findings.extend(versions(pkg));
    // A package that does not load never reaches the walk, in a plan as here; its
    // errors above are what the plan reports. A template that does not parse fails the
    // walk with the message found above: said once, with its line and column.
    if loads {
        let broken: BTreeSet<&str> = syntax.iter().map(|f| f.file.as_str()).collect();
        findings.extend(
            walk_defaults(pkg)
                .into_iter()
                .filter(|f| !broken.contains(f.file.as_str())),
        );
    }
    findings.extend(syntax);
    findings.sort_by_key(|f| f.severity);
    findings
}

/// Every template parses, closes its blocks and calls only functions that exist (also
/// in branches a render would skip), whether or not a plan renders it.
fn template_syntax(pkg: &Package) -> Vec<Finding> {
    pkg.templates
        .iter()
        .filter_map(|(file, text)| {
            let e = kudo_template::check(file, text).err()?;
            Some(Finding::error(format!("templates/{file}"), e.message).at(e.line, e.column))
        })
        .collect()
}

fn versions(pkg: &Package) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Err(e) = kudo_resolve::kubernetes_minimum(pkg) {
        out.push(Finding::error(
            OP,
            format!("kubernetesVersion: {e} (the oldest release the package runs on)"),
        ));
    }
    out.extend(
        kudo_resolve::version_errors(pkg)
            .into_iter()
            .map(|e| Finding::error(OP, e.to_string())),
    );
    out
}

/// Every plan walked as `terraform plan` walks it for an instance with the defaults
/// (KUDO's default instance name, the `default` namespace, no dependency packages
/// beyond sibling folders). One finding per distinct error: plans that share a task
/// fail the same way.
fn walk_defaults(pkg: &Package) -> Vec<Finding> {
    let none = BTreeMap::new();
    let instance = format!("{}-instance", pkg.operator.name);
    let desired = match Desired::new(Inputs {
        package: pkg,
        instance: &instance,
        namespace: NAMESPACE,
        parameters: &none,
        seed: None,
        dependencies: None,
    }) {
        Ok(d) => d,
        Err(e) => {
            return vec![Finding::warning(
                PARAMS,
                format!(
                    "templates not rendered, so the objects they render (names, duplicates) were not checked: the defaults are not enough ({}); `render PATH -p NAME=VALUE` shows them with values",
                    e.message
                ),
            )];
        }
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for plan in pkg.operator.plans.keys() {
        let Err(e) = desired.plan(plan) else {
            continue;
        };
        if !seen.insert((e.task.clone(), e.template.clone(), e.message.clone())) {
            continue;
        }
        out.push(Finding::error(file_of(pkg, &e), message_of(&e)));
    }
    out
}

/// The package file an error of the walk is about: its template, else the first
/// template its message names, else operator.yaml (a task or plan).
fn file_of(pkg: &Package, e: &PlanError) -> String {
    if let Some(t) = &e.template {
        return t.clone();
    }
    let mut named: Vec<(usize, &String)> = pkg
        .templates
        .keys()
        .filter_map(|file| {
            let path = format!("templates/{file}");
            // The whole file name: `a.yaml` must not match inside `a.yaml.bak`.
            e.message.match_indices(&path).find_map(|(at, _)| {
                let next = e.message[at + path.len()..].chars().next();
                next.is_none_or(|c| {
                    !(c.is_alphanumeric() || c == '.' || c == '/' || c == '_' || c == '-')
                })
                .then_some((at, file))
            })
        })
        .collect();
    named.sort();
    named
        .first()
        .map_or_else(|| OP.to_string(), |(_, file)| format!("templates/{file}"))
}

/// Where in which plan, and what: the file is already the finding's.
fn message_of(e: &PlanError) -> String {
    located_text([&e.plan, &e.phase, &e.step, &e.task], None, &e.message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_package::{Files, Origin};

    const OPERATOR: &str = "name: demo
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml, other.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
";

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n";
    const SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}\n";

    fn package(operator: &str, templates: &[(&str, &str)]) -> Package {
        let mut files = Files::new();
        files.insert("operator.yaml".into(), operator.as_bytes().to_vec());
        for (name, text) in templates {
            files.insert(format!("templates/{name}"), text.as_bytes().to_vec());
        }
        Package::from_files(&files, "pkg/", Origin::Memory).expect("loads")
    }

    fn errors(pkg: &Package) -> Vec<String> {
        verify(pkg)
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_valid_package_has_no_errors() {
        let pkg = package(OPERATOR, &[("cm.yaml", CM), ("other.yaml", SECRET)]);
        assert_eq!(errors(&pkg), Vec::<String>::new());
    }

    #[test]
    fn an_invalid_rendered_name_is_an_error_of_its_template() {
        let bad = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}_Secret\n";
        let pkg = package(OPERATOR, &[("cm.yaml", CM), ("other.yaml", bad)]);
        assert_eq!(
            errors(&pkg),
            [
                "error: templates/other.yaml: plan \"deploy\", phase \"main\", step \"app\", task \"app\": Secret \"demo-instance_Secret\" (document 1): metadata.name is not a valid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (at most 253 characters); the API server would refuse it"
            ]
        );
    }

    #[test]
    fn two_templates_rendering_one_object_name_both() {
        let pkg = package(OPERATOR, &[("cm.yaml", CM), ("other.yaml", CM)]);
        let e = errors(&pkg);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("error: templates/cm.yaml: plan \"deploy\", phase \"main\", step \"app\", task \"app\": templates/cm.yaml (document 1) and templates/other.yaml (document 1) both render ConfigMap \"demo-instance\" in namespace \"default\""),
            "{e:?}"
        );
        let twice = format!("{CM}---\n{CM}");
        let pkg = package(OPERATOR, &[("cm.yaml", &twice), ("other.yaml", SECRET)]);
        let e = errors(&pkg);
        assert!(
            e[0].contains("templates/cm.yaml renders ConfigMap \"demo-instance\" in namespace \"default\" twice (documents 1 and 2)"),
            "{e:?}"
        );
    }

    #[test]
    fn template_errors_name_file_line_and_column() {
        let unclosed_if = format!("{CM}{{{{ if .Name }}}}\ndata: {{}}\n");
        let unclosed_action = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name\n";
        let unknown = format!("{SECRET}stringData:\n  a: {{{{ nosuchfunc }}}}\n");
        let dead_branch =
            format!("{SECRET}{{{{ if false }}}}\n  {{{{ env \"HOME\" }}}}\n{{{{ end }}}}\n");
        for (cm, other, want) in [
            (
                unclosed_if.as_str(),
                SECRET,
                "error: templates/cm.yaml:5: unexpected EOF: {{if}} is never closed",
            ),
            (
                CM,
                unclosed_action,
                "error: templates/other.yaml:4:9: unclosed action",
            ),
            (
                CM,
                unknown.as_str(),
                "error: templates/other.yaml:6:9: function \"nosuchfunc\" not defined",
            ),
            (
                CM,
                dead_branch.as_str(),
                "error: templates/other.yaml:6:6: function \"env\" not defined",
            ),
        ] {
            let pkg = package(OPERATOR, &[("cm.yaml", cm), ("other.yaml", other)]);
            // Said once: the walk of the deploy plan fails on the same template.
            let e = errors(&pkg);
            assert!(e.len() == 1 && e[0].starts_with(want), "{want}: {e:?}");
        }
        // A template no task uses is checked too (the walk never renders it).
        let pkg = package(
            OPERATOR,
            &[
                ("cm.yaml", CM),
                ("other.yaml", SECRET),
                ("unused.yaml", "{{ end }}"),
            ],
        );
        assert_eq!(
            errors(&pkg),
            ["error: templates/unused.yaml:1: unexpected {{end}}"]
        );
    }

    #[test]
    fn versions_are_read_as_the_resolver_reads_them() {
        let op = OPERATOR
            .replace("operatorVersion: 0.1.0\n", "operatorVersion: 0.1.0\nkubernetesVersion: latest\ndependencies:\n  - name: zk\n    operatorVersion: \">= 1.0 <<2\"\n")
            .replace("tasks: [app]", "tasks: [app, dep]")
            .replace("plans:", "  - name: dep\n    kind: KudoOperator\n    spec:\n      package: zk\n      appVersion: \"~> 3.4\"\nplans:");
        let pkg = package(&op, &[("cm.yaml", CM), ("other.yaml", SECRET)]);
        let e = errors(&pkg);
        let has = |s: &str| e.iter().any(|l| l.contains(s));
        assert!(
            has("error: operator.yaml: kubernetesVersion: \"latest\" is not a Kubernetes version"),
            "{e:?}"
        );
        assert!(
            has(
                "error: operator.yaml: demo 0.1.0 (task \"dep\"): appVersion: invalid version range \"~> 3.4\""
            ),
            "{e:?}"
        );
        assert!(
            has(
                "error: operator.yaml: demo 0.1.0: operator.yaml dependencies[0].operatorVersion: invalid version range \">= 1.0 <<2\""
            ),
            "{e:?}"
        );
        // Exact texts that are no version (`latest`) are matched as written, as the
        // resolver does.
        let fine = op
            .replace("kubernetesVersion: latest", "kubernetesVersion: 1.16.0")
            .replace("\"~> 3.4\"", "latest")
            .replace("\">= 1.0 <<2\"", "\">=1.0.0 <2.0.0\"");
        let pkg = package(&fine, &[("cm.yaml", CM), ("other.yaml", SECRET)]);
        assert_eq!(errors(&pkg), Vec::<String>::new());
    }

    #[test]
    fn without_defaults_the_walk_is_skipped_with_a_warning() {
        let mut files = Files::new();
        files.insert("operator.yaml".into(), OPERATOR.as_bytes().to_vec());
        files.insert(
            "params.yaml".into(),
            b"parameters:\n  - name: PASSWORD\n    required: true\n".to_vec(),
        );
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Params.PASSWORD }}\n";
        files.insert("templates/cm.yaml".into(), cm.as_bytes().to_vec());
        files.insert("templates/other.yaml".into(), SECRET.as_bytes().to_vec());
        let pkg = Package::from_files(&files, "pkg/", Origin::Memory).expect("loads");
        let findings = verify(&pkg);
        assert!(
            findings.iter().all(|f| f.severity == Severity::Warning),
            "{findings:?}"
        );
        assert!(
            findings
                .iter()
                .any(|f| f.file == "params.yaml" && f.message.contains("templates not rendered")),
            "{findings:?}"
        );
    }
}
