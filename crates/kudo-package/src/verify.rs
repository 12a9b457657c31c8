//! Package checks in the spirit of `kubectl kudo package verify`: errors make a package
//! unusable, warnings point at likely mistakes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::model::{Package, ParamType, TaskSpec};
use crate::params::check_default;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// Path relative to the package root: `operator.yaml`, `params.yaml`, `templates/…`.
    pub file: String,
    /// 1-based line in `file`, when the finding is about one place in it.
    pub line: Option<usize>,
    /// 1-based column on `line`, when the parser knows it.
    pub column: Option<usize>,
    pub message: String,
}

impl Finding {
    pub fn error(file: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Error,
            file: file.into(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    pub fn warning(file: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warning,
            ..Finding::error(file, message)
        }
    }

    /// The same finding at `line` (and `column`) of its file.
    pub fn at(mut self, line: Option<usize>, column: Option<usize>) -> Finding {
        self.line = line;
        self.column = line.and(column);
        self
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                write!(
                    f,
                    "{level}: {}:{line}:{column}: {}",
                    self.file, self.message
                )
            }
            (Some(line), None) => write!(f, "{level}: {}:{line}: {}", self.file, self.message),
            _ => write!(f, "{level}: {}: {}", self.file, self.message),
        }
    }
}

/// Variables KUDO gives every template (besides `.Params` and `.Pipes`).
const IMPLICIT: &[&str] = &[
    "OperatorName",
    "Name",
    "Namespace",
    "OperatorVersion",
    "AppVersion",
    "PlanName",
    "PhaseName",
    "StepName",
    "Params",
    "Pipes",
    "AppVersionMajor",
];

struct Out(Vec<Finding>);

impl Out {
    fn error(&mut self, file: &str, message: String) {
        self.error_at(file, None, message);
    }
    fn error_at(&mut self, file: &str, line: Option<usize>, message: String) {
        self.0.push(Finding::error(file, message).at(line, None));
    }
    fn warn(&mut self, file: &str, message: String) {
        self.0.push(Finding::warning(file, message));
    }
}

const OP: &str = "operator.yaml";
const PARAMS: &str = "params.yaml";

/// The warnings of [`verify`]: what a loaded package may still carry (loading refuses
/// packages with verification errors), shown to users as they install it.
pub fn warnings(pkg: &Package) -> Vec<Finding> {
    verify(pkg)
        .into_iter()
        .filter(|f| f.severity == Severity::Warning)
        .collect()
}

/// Check a package; findings are sorted errors first.
pub fn verify(pkg: &Package) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    parameters(pkg, &mut out);
    tasks_and_plans(pkg, &mut out);
    templates(pkg, &mut out);
    namespace_manifest(pkg, &mut out);
    out.0.sort_by_key(|f| f.severity);
    out.0
}

fn parameters(pkg: &Package, out: &mut Out) {
    let mut seen = BTreeSet::new();
    let mut groups = BTreeSet::new();
    for g in &pkg.groups {
        if !groups.insert(g.name.as_str()) {
            out.error(
                PARAMS,
                format!("group {:?} is declared twice; keep one", g.name),
            );
        }
    }
    for p in &pkg.parameters {
        let n = &p.name;
        if !seen.insert(n.as_str()) {
            out.error(
                PARAMS,
                format!("parameter {n:?} is declared twice; keep one"),
            );
        }
        if n.contains(':') {
            out.error(PARAMS, format!("parameter {n:?}: names cannot contain ':'"));
        }
        if let Some(t) = &p.trigger
            && !pkg.operator.plans.contains_key(t)
        {
            out.error(
                PARAMS,
                format!("parameter {n:?} triggers plan {t:?}, which operator.yaml does not define; name an existing plan"),
            );
        }
        // KUDO's `paramDefaults` (pkg/kudoctl/packages/verifier/template/verify_parameters.go):
        // only a written default is checked; an array/map without one defaults to null.
        if let Some(d) = &p.default
            && let Err(m) = check_default(p, d)
        {
            out.error(PARAMS, format!("parameter {n:?}: default {m}"));
        }
        if let Some(e) = &p.enum_values {
            if e.is_empty() {
                out.error(
                    PARAMS,
                    format!(
                        "parameter {n:?} is an enum without allowed values; list them under enum"
                    ),
                );
            }
            // KUDO's `enumParams`: every allowed value must have the parameter's type
            // (array/map enums are allowed; items compare as YAML text).
            let mut typed = p.clone();
            typed.enum_values = None;
            for v in e {
                if let Err(m) = check_default(&typed, v) {
                    out.error(
                        PARAMS,
                        format!("parameter {n:?} has an invalid enum value: {m}"),
                    );
                }
            }
        }
        if let Some(d) = &p.display_name
            && d.ends_with(':')
        {
            out.warn(
                PARAMS,
                format!("parameter {n:?}: displayName ends with ':'; drop it"),
            );
        }
        if let Some(g) = &p.group {
            if g.contains('/') {
                out.error(
                    PARAMS,
                    format!("parameter {n:?} has a group with the invalid character '/'"),
                );
            }
            if !groups.contains(g.as_str()) {
                out.error(
                    PARAMS,
                    format!("parameter {n:?} has group {g:?}, which is not defined in the groups section; add it under groups"),
                );
            }
        }
        if p.immutable && !p.required && p.default.is_none() {
            out.error(
                PARAMS,
                format!("parameter {n:?} is immutable but neither required nor defaulted; mark it required or give a default"),
            );
        }
        if p.advanced && p.required && p.default.is_none() {
            out.error(
                PARAMS,
                format!("parameter {n:?} is advanced and required without a default; make it optional or give a default"),
            );
        }
    }
    for g in &pkg.groups {
        if g.name.contains('/') {
            out.error(
                PARAMS,
                format!("group {:?} contains the invalid character '/'", g.name),
            );
        }
    }
}

/// The optional, stricter checks of `kubectl kudo package verify --extended`: every
/// parameter documented (description and hint ending with '.', display name, group,
/// explicit type). Only warnings, except group descriptions not ending with '.'.
pub fn verify_extended(pkg: &Package) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    for p in &pkg.parameters {
        let n = &p.name;
        match p.description.as_deref() {
            None | Some("") => out.warn(PARAMS, format!("parameter {n:?} has no description")),
            Some(d) if !d.ends_with('.') => out.warn(
                PARAMS,
                format!("parameter {n:?} has a description not ending with '.'"),
            ),
            _ => {}
        }
        if p.display_name.as_deref().unwrap_or("").is_empty() {
            out.warn(PARAMS, format!("parameter {n:?} has no display name"));
        }
        match p.hint.as_deref() {
            None | Some("") => out.warn(PARAMS, format!("parameter {n:?} has no hint")),
            Some(h) if !h.ends_with('.') => out.warn(
                PARAMS,
                format!("parameter {n:?} has a hint not ending with '.'"),
            ),
            _ => {}
        }
        if p.group.as_deref().unwrap_or("").is_empty() {
            out.warn(PARAMS, format!("parameter {n:?} has no group"));
        }
        if !p.type_explicit {
            out.warn(PARAMS, format!("parameter {n:?} has no explicit type"));
        }
    }
    for g in &pkg.groups {
        if let Some(d) = &g.description
            && !d.is_empty()
            && !d.ends_with('.')
        {
            out.error(
                PARAMS,
                format!("group {:?} has a description not ending with '.'", g.name),
            );
        }
    }
    out.0.sort_by_key(|f| f.severity);
    out.0
}

fn namespace_manifest(pkg: &Package, out: &mut Out) {
    let manifest = pkg
        .operator
        .namespace_manifest
        .as_deref()
        .filter(|m| !m.is_empty());
    if let Some(m) = manifest
        && !pkg.templates.contains_key(m)
    {
        out.error(
            OP,
            format!("namespaceManifest {m:?} is not in templates/; add the file or fix the name"),
        );
    }
    for (name, text) in &pkg.templates {
        if Some(name.as_str()) == manifest {
            continue;
        }
        let declares_namespace = text.lines().any(|l| {
            l.trim_start()
                .strip_prefix("kind:")
                .is_some_and(|k| k.trim() == "Namespace")
        });
        if declares_namespace {
            out.error(
                &format!("templates/{name}"),
                "contains `kind: Namespace`, which is only allowed in the template named by namespaceManifest".to_string(),
            );
        }
    }
}

fn tasks_and_plans(pkg: &Package, out: &mut Out) {
    let op = &pkg.operator;
    let mut task_names = BTreeSet::new();
    for t in &op.tasks {
        if !task_names.insert(t.name.as_str()) {
            out.error(
                OP,
                format!(
                    "task {:?} is defined twice; task names must be unique",
                    t.name
                ),
            );
        }
        let n = &t.name;
        for f in t.spec.template_files() {
            if !pkg.templates.contains_key(f) {
                out.error(
                    OP,
                    format!("task {n:?} uses template {f:?}, which is not in templates/; add the file or fix the name"),
                );
            }
        }
        match &t.spec {
            TaskSpec::Apply { resources, .. } | TaskSpec::Delete { resources }
                if resources.is_empty() =>
            {
                out.error(OP, format!("task {n:?} ({}) has no resources; list template files under spec.resources", t.kind));
            }
            TaskSpec::Toggle {
                parameter,
                resources,
            } => {
                if resources.is_empty() {
                    out.error(OP, format!("task {n:?} (Toggle) has no resources; list template files under spec.resources"));
                }
                boolean_param(pkg, out, n, "parameter", parameter);
            }
            TaskSpec::KudoOperator {
                enabling_parameter: Some(p),
                ..
            } => boolean_param(pkg, out, n, "enablingParameter", p),
            TaskSpec::Webhook(w) => {
                // Only what is written out can be judged here; a templated URL is
                // checked once rendered (kudo-plan).
                if !w.url.contains("{{") {
                    match url::Url::parse(w.url.trim()) {
                        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
                        _ => out.error(
                            OP,
                            format!("task {n:?} (Webhook): url is not an http(s):// URL; write `https://host/path`"),
                        ),
                    }
                }
                if let Some(ca) = &w.ca_bundle
                    && !ca.contains("{{")
                    && !ca.contains("-----BEGIN CERTIFICATE-----")
                {
                    out.error(
                        OP,
                        format!("task {n:?} (Webhook): caBundle holds no PEM certificate (-----BEGIN CERTIFICATE-----)"),
                    );
                }
            }
            TaskSpec::Pipe { pipe, .. } => {
                if pipe.is_empty() {
                    out.error(
                        OP,
                        format!("task {n:?} (Pipe) has no pipe entries; add spec.pipe"),
                    );
                }
                let mut keys = BTreeSet::new();
                for p in pipe {
                    if p.file.is_none() && p.env_file.is_none() {
                        out.error(
                            OP,
                            format!("task {n:?}: pipe {:?} needs `file` or `envFile`", p.key),
                        );
                    }
                    if !keys.insert(p.key.as_str()) {
                        out.error(
                            OP,
                            format!("task {n:?}: pipe key {:?} is used twice", p.key),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    if !op.plans.contains_key("deploy") {
        out.error(
            OP,
            "no deploy plan; every operator needs `plans: {deploy: ...}`".to_string(),
        );
    }
    let mut used = BTreeSet::new();
    for (plan_name, plan) in &op.plans {
        if !plan.strategy_explicit {
            out.warn(OP, format!("plan {plan_name:?} has no strategy; it runs parallel (write `strategy: serial` or `parallel`)"));
        }
        if plan.phases.is_empty() {
            out.error(
                OP,
                format!("plan {plan_name:?} has no phases; add at least one phase with steps"),
            );
        }
        let mut phase_names = BTreeSet::new();
        for phase in &plan.phases {
            let ph = &phase.name;
            if ph.is_empty() {
                out.error(OP, format!("plan {plan_name:?} has a phase without a name"));
            }
            if !phase_names.insert(ph.as_str()) {
                out.error(OP, format!("plan {plan_name:?}: phase {ph:?} appears twice; phase names must be unique in a plan"));
            }
            if !phase.strategy_explicit {
                out.warn(
                    OP,
                    format!("plan {plan_name:?} phase {ph:?} has no strategy; it runs parallel"),
                );
            }
            if phase.steps.is_empty() {
                out.error(OP, format!("plan {plan_name:?} phase {ph:?} has no steps"));
            }
            let mut step_names = BTreeSet::new();
            for step in &phase.steps {
                let st = &step.name;
                if st.is_empty() {
                    out.error(
                        OP,
                        format!("plan {plan_name:?} phase {ph:?} has a step without a name"),
                    );
                }
                if !step_names.insert(st.as_str()) {
                    out.error(
                        OP,
                        format!("plan {plan_name:?} phase {ph:?}: step {st:?} appears twice"),
                    );
                }
                if step.tasks.is_empty() {
                    out.warn(
                        OP,
                        format!("plan {plan_name:?} phase {ph:?} step {st:?} has no tasks"),
                    );
                }
                for t in &step.tasks {
                    used.insert(t.as_str());
                    if !task_names.contains(t.as_str()) {
                        out.error(
                            OP,
                            format!("plan {plan_name:?} phase {ph:?} step {st:?} references task {t:?}, which is not defined under tasks"),
                        );
                    }
                }
            }
        }
    }
    for t in &op.tasks {
        if !used.contains(t.name.as_str()) {
            out.warn(OP, format!("task {:?} is not used by any plan", t.name));
        }
    }
}

fn boolean_param(pkg: &Package, out: &mut Out, task: &str, field: &str, name: &str) {
    match pkg.parameter(name) {
        None => out.error(
            OP,
            format!("task {task:?}: {field} {name:?} is not a declared parameter; declare it in params.yaml"),
        ),
        Some(p) => {
            if p.value_type != ParamType::Boolean
                && let Some(d) = &p.default
                && crate::params::parse_bool(d).is_none()
            {
                out.error(
                    OP,
                    format!("task {task:?}: {field} {name:?} must be boolean, but its default is {d:?}"),
                );
            }
        }
    }
}

/// `.Params.X` / `.Pipes.X` / `.X` references inside `{{ … }}` actions.
fn references(text: &str) -> Vec<(String, String)> {
    let mut refs = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let action = &after[..end];
        rest = &after[end + 2..];
        if action
            .trim_start_matches('-')
            .trim_start()
            .starts_with("/*")
        {
            continue;
        }
        let bytes = action.as_bytes();
        let mut in_string: Option<u8> = None;
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if let Some(q) = in_string {
                if c == b'\\' && q == b'"' {
                    i += 1;
                } else if c == q {
                    in_string = None;
                }
                i += 1;
                continue;
            }
            if c == b'"' || c == b'`' {
                in_string = Some(c);
                i += 1;
                continue;
            }
            // A field chain starts at a '.' that follows a non-identifier character
            // (or `$`): `.Params.X`, `$.Params.X`.
            let prev_ok = i == 0 || {
                let p = bytes[i - 1];
                !(p.is_ascii_alphanumeric() || p == b'_' || p == b')' || p == b']') || p == b'$'
            };
            if c == b'.' && prev_ok {
                let chain: Vec<&str> = action[i + 1..]
                    .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.'))
                    .next()
                    .unwrap_or("")
                    .split('.')
                    .collect();
                if let Some(first) = chain.first().filter(|f| !f.is_empty()) {
                    let second = chain.get(1).copied().unwrap_or("");
                    refs.push((first.to_string(), second.to_string()));
                }
                let len: usize = chain.iter().map(|s| s.len() + 1).sum();
                i += len.max(1);
                continue;
            }
            i += 1;
        }
    }
    refs
}

/// The 1-based line of `text` where `needle` first occurs.
fn first_line_with(text: &str, needle: &str) -> Option<usize> {
    text.find(needle)
        .map(|at| text[..at].matches('\n').count() + 1)
}

fn templates(pkg: &Package, out: &mut Out) {
    let declared: BTreeSet<&str> = pkg.parameters.iter().map(|p| p.name.as_str()).collect();
    let mut pipe_keys = BTreeSet::new();
    let mut referenced_files = BTreeSet::new();
    for t in &pkg.operator.tasks {
        if let TaskSpec::Pipe { pipe, .. } = &t.spec {
            pipe_keys.extend(pipe.iter().map(|p| p.key.as_str()));
        }
        referenced_files.extend(t.spec.template_files());
    }
    let mut used_params: BTreeMap<&str, ()> = BTreeMap::new();
    for (file, text) in &pkg.templates {
        let path = format!("templates/{file}");
        if !referenced_files.contains(file.as_str()) {
            out.warn(&path, "template is not used by any task".to_string());
        }
        for (first, second) in references(text) {
            match first.as_str() {
                "Params" if !second.is_empty() => {
                    if let Some(p) = declared.get(second.as_str()) {
                        used_params.insert(p, ());
                    } else {
                        out.error_at(
                            &path,
                            first_line_with(text, &format!(".Params.{second}")),
                            format!("template uses parameter {second:?}, which params.yaml does not declare; declare it or fix the name"),
                        );
                    }
                }
                "Pipes" if !second.is_empty() && !pipe_keys.contains(second.as_str()) => {
                    out.error_at(
                        &path,
                        first_line_with(text, &format!(".Pipes.{second}")),
                        format!("template uses pipe {second:?}, which no Pipe task produces; fix the key"),
                    );
                }
                "Params" | "Pipes" => {}
                // Inside range/with blocks `.X` is the element's field, so only warn.
                f if !IMPLICIT.contains(&f) && f.chars().next().is_some_and(char::is_uppercase) => {
                    out.warn(
                        &path,
                        format!(
                            ".{f} is not a KUDO template variable; use one of .{}",
                            IMPLICIT.join(", .")
                        ),
                    );
                }
                _ => {}
            }
        }
    }
    // A Webhook task's url, caBundle and Secret names are templates too.
    for t in &pkg.operator.tasks {
        let TaskSpec::Webhook(w) = &t.spec else {
            continue;
        };
        let texts = std::iter::once(w.url.as_str())
            .chain(w.ca_bundle.as_deref())
            .chain(w.headers.iter().map(|h| h.secret_name.as_str()));
        for text in texts {
            for (first, second) in references(text) {
                if first != "Params" || second.is_empty() {
                    continue;
                }
                match declared.get(second.as_str()) {
                    Some(p) => {
                        used_params.insert(p, ());
                    }
                    None => out.error(
                        OP,
                        format!(
                            "task {:?} (Webhook) uses parameter {second:?}, which params.yaml does not declare; declare it or fix the name",
                            t.name
                        ),
                    ),
                }
            }
        }
    }
    for p in &pkg.parameters {
        let used_by_task = pkg.operator.tasks.iter().any(|t| match &t.spec {
            TaskSpec::Toggle { parameter, .. } => parameter == &p.name,
            TaskSpec::KudoOperator {
                enabling_parameter, ..
            } => enabling_parameter.as_deref() == Some(&p.name),
            _ => false,
        });
        // A parameter may exist only to trigger a plan.
        if !used_params.contains_key(p.name.as_str()) && !used_by_task && p.trigger.is_none() {
            out.warn(
                PARAMS,
                format!("parameter {:?} is declared but no template uses it", p.name),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;

    fn pkg(operator: &str, params: &str, templates: &[(&str, &str)]) -> Package {
        let mut files = crate::load::Files::new();
        files.insert("operator.yaml".into(), operator.as_bytes().to_vec());
        files.insert("params.yaml".into(), params.as_bytes().to_vec());
        for (k, v) in templates {
            files.insert(format!("templates/{k}"), v.as_bytes().to_vec());
        }
        Package::from_files(&files, "t/", Origin::Memory).unwrap()
    }

    const OPERATOR: &str = "name: t\noperatorVersion: 0.1.0\ntasks:\n- name: a\n  kind: Apply\n  spec: {resources: [a.yaml]}\n- name: idle\n  kind: Dummy\nplans:\n  deploy:\n    phases:\n    - name: p\n      strategy: serial\n      steps:\n      - name: s\n        tasks: [a]\n";

    #[test]
    fn warnings_for_likely_mistakes() {
        let p = pkg(
            OPERATOR,
            "parameters:\n- name: USED\n  default: x\n- name: UNUSED\n  displayName: 'Unused:'\n  default: y\n",
            &[
                ("a.yaml", "v: {{ .Params.USED }} {{ .Nme }}"),
                ("orphan.yaml", "x: 1"),
            ],
        );
        let findings = verify(&p);
        let text: Vec<String> = findings.iter().map(ToString::to_string).collect();
        let has = |s: &str| text.iter().any(|t| t.contains(s));
        assert!(
            findings.iter().all(|f| f.severity == Severity::Warning),
            "{text:?}"
        );
        assert!(
            has("warning: operator.yaml: plan \"deploy\" has no strategy"),
            "{text:?}"
        );
        assert!(has(
            "params.yaml: parameter \"UNUSED\" is declared but no template uses it"
        ));
        assert!(has("displayName ends with ':'"));
        assert!(has(
            "templates/orphan.yaml: template is not used by any task"
        ));
        assert!(has("task \"idle\" is not used by any plan"));
        assert!(has(".Nme is not a KUDO template variable"));
        assert!(!has("\"USED\" is declared but"));
    }

    #[test]
    fn warnings_leave_the_errors_out() {
        let p = pkg(
            OPERATOR,
            "parameters:\n- name: 'A:B'\n  default: x\n",
            &[("a.yaml", "v: 1")],
        );
        assert!(verify(&p).iter().any(|f| f.severity == Severity::Error));
        let warned = warnings(&p);
        assert!(!warned.is_empty());
        assert!(warned.iter().all(|f| f.severity == Severity::Warning));
    }

    #[test]
    fn extended_checks_only_warn_about_documentation() {
        let p = pkg(
            OPERATOR,
            "groups:\n- name: g\n  description: no period\nparameters:\n- name: A\n  displayName: A\n  description: Documented.\n  hint: Say it.\n  group: g\n  type: string\n  default: x\n- name: B\n  default: y\n",
            &[("a.yaml", "{{ .Params.A }} {{ .Params.B }}")],
        );
        let text: Vec<String> = verify_extended(&p)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            text,
            [
                "error: params.yaml: group \"g\" has a description not ending with '.'",
                "warning: params.yaml: parameter \"B\" has no description",
                "warning: params.yaml: parameter \"B\" has no display name",
                "warning: params.yaml: parameter \"B\" has no hint",
                "warning: params.yaml: parameter \"B\" has no group",
                "warning: params.yaml: parameter \"B\" has no explicit type",
            ]
        );
    }

    #[test]
    fn errors_for_broken_references() {
        let op = OPERATOR.replace("tasks: [a]", "tasks: [a, ghost]");
        let p = pkg(
            &op,
            "parameters: []\n",
            &[("a.yaml", "{{ .Pipes.nokey }}\nb: {{ .Params.NOPE }}")],
        );
        let text: Vec<String> = verify(&p)
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        assert_eq!(text.len(), 3, "{text:?}");
        // Template findings name the line, as `file:line`.
        let has = |s: &str| text.iter().any(|t| t.starts_with(s));
        assert!(
            has("error: templates/a.yaml:1: template uses pipe \"nokey\""),
            "{text:?}"
        );
        assert!(
            has("error: templates/a.yaml:2: template uses parameter \"NOPE\""),
            "{text:?}"
        );
    }

    #[test]
    fn finds_references() {
        let refs = references(
            "a: {{ .Params.A }} {{ if eq $.Params.B \"x.Params.Z\" }}{{ .Name }}{{ end }} {{ range .Pipes.K }}{{ .foo }}{{ end }}",
        );
        let got: Vec<String> = refs.iter().map(|(a, b)| format!("{a}.{b}")).collect();
        assert_eq!(got, ["Params.A", "Params.B", "Name.", "Pipes.K", "foo."]);
    }
}
