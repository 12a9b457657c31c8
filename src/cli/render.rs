//! `render PATH [flags]`: what KUDO would send to the cluster, without a cluster, like
//! `helm template`.
//!
//! Every template is rendered with KUDO's variables. Template paths are shown as
//! `templates/<file>`, the path inside the package, in both the `# Source:` comments
//! and under `--output-dir`. Each rendered manifest is also parsed with Kubernetes'
//! YAML rules so that an author sees broken indentation before an apply does.

use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::process::ExitCode;

use kudo_package::{LoadContext, Package, Plan, TaskSpec};
use kudo_plan::{Action, Desired, Inputs};
use kudo_template::Vars;

use super::args::{self, Flag, Parsed};

const FLAGS: &[Flag] = &[
    Flag::value("--param").short("-p").repeated(),
    Flag::value("--name"),
    Flag::value("--namespace").short("-n"),
    Flag::value("--plan"),
    Flag::value("--phase"),
    Flag::value("--step"),
    Flag::value("--pipe").repeated(),
    Flag::value("--output-dir"),
    Flag::value("--kubernetes-version"),
];

const DEFAULT_PLAN: &str = "deploy";
const DEFAULT_NAMESPACE: &str = "default";

pub fn run(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out(&format!("{}\n", super::usage()));
        return ExitCode::SUCCESS;
    }
    let (parsed, path) = match super::parse_with_one(
        "render",
        argv,
        FLAGS,
        "PATH (a package folder, .tgz or URL)",
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
        Err(e) => return super::usage_error("render", &format!("--kubernetes-version: {e}")),
    };
    let values = match pairs(&parsed, "--param", "-p") {
        Ok(v) => v,
        Err(e) => return super::usage_error("render", &e),
    };
    let user_pipes = match pairs(&parsed, "--pipe", "--pipe") {
        Ok(v) => v,
        Err(e) => return super::usage_error("render", &e),
    };
    let pkg = match kudo_package::load(path, &LoadContext::default()) {
        Ok(p) => p,
        Err(e) => return fail(&format!("cannot load the package: {e}")),
    };
    let options = Options {
        values: &values,
        pipes: &user_pipes,
        plan: parsed.value("--plan").unwrap_or(DEFAULT_PLAN),
        phase: parsed.value("--phase"),
        step: parsed.value("--step"),
        name: parsed.value("--name"),
        namespace: parsed.value("--namespace"),
    };
    let Rendering {
        templates: mut results,
        dependencies,
        webhooks,
        problems: walk_problems,
    } = match render_templates(&pkg, &options) {
        Ok(r) => r,
        Err(message) => return fail(&message),
    };
    // As a cluster of that release will get them: converted where it no longer serves
    // the version a template writes (the provider's default translation rule).
    let mut problems = walk_problems;
    if let Some(release) = release {
        let translator = kube_api_versions::Translator::default();
        for (file, result) in results.iter_mut() {
            let Ok(text) = result else { continue };
            let (converted, notes) =
                super::api_versions::for_release(release, &translator, file, text);
            for note in notes {
                match note {
                    super::api_versions::Note::Converted(line) => eprintln!("warning: {line}"),
                    super::api_versions::Note::NotServed(line) => problems.push(line),
                }
            }
            *text = converted;
        }
    }
    match parsed.value("--output-dir") {
        Some(out) => write_dir(Path::new(out), &results, &dependencies, &webhooks, problems),
        None => print_manifests(&results, &dependencies, &webhooks, problems),
    }
}

/// What to render with: the `render` flags.
struct Options<'a> {
    values: &'a BTreeMap<String, String>,
    pipes: &'a BTreeMap<String, String>,
    plan: &'a str,
    phase: Option<&'a str>,
    step: Option<&'a str>,
    name: Option<&'a str>,
    namespace: Option<&'a str>,
}

/// What `render` shows.
struct Rendering<'p> {
    templates: Vec<Rendered<'p>>,
    /// The dependency instances the plan's KudoOperator tasks would run.
    dependencies: Vec<Dependency>,
    /// The plan's Webhook tasks, shown but never called.
    webhooks: Vec<Webhook>,
    /// What the apply of the plan would fail on without a cluster.
    problems: Vec<String>,
}

/// One KudoOperator task's instance, as the apply would run it.
struct Dependency {
    task: String,
    instance: Option<String>,
    package: String,
    enabled: bool,
    parameters: BTreeMap<String, String>,
}

/// One Webhook task as the apply would call it: task name and the call as YAML.
struct Webhook {
    task: String,
    yaml: String,
}

/// What a Webhook task sends, without calling it (a call may have side effects) and
/// without anything secret: the URL redacted, headers by their Secret only.
fn webhook_yaml(task: &str, call: &kudo_plan::WebhookCall) -> String {
    let headers: Vec<serde_json::Value> = call
        .headers
        .iter()
        .map(|h| {
            serde_json::json!({"name": h.name, "secretKeyRef": {"name": h.secret_name, "key": h.secret_key}})
        })
        .collect();
    let doc = serde_json::json!({
        "task": task,
        "url": call.shown_url(),
        "timeout": format!("{}s", call.timeout.as_secs_f64()),
        "caBundle": call.ca_bundle.is_some(),
        "headers": headers,
        "request": call.body,
    });
    kudo_yaml::to_yaml(&doc)
}

/// Every template of the package rendered as the `render` flags say, with `.Pipes` and
/// the dependencies as the walk of the plan decides them (the apply's own decisions).
/// `Err` is the final error line (parameter errors are printed before it).
fn render_templates<'p>(pkg: &'p Package, o: &Options<'_>) -> Result<Rendering<'p>, String> {
    let effective = match pkg.effective_params(o.values) {
        Ok(p) => p,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            return Err(format!(
                "{} parameter error{}; fix the -p values or the defaults in params.yaml",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            ));
        }
    };
    let params = pkg.template_params(&effective).map_err(|e| e.to_string())?;
    let plan_name = o.plan;
    let Some(plan) = pkg.operator.plans.get(plan_name) else {
        let known: Vec<&str> = pkg.operator.plans.keys().map(String::as_str).collect();
        return Err(format!(
            "plan {plan_name:?} is not in operator.yaml; it has: {}",
            known.join(", ")
        ));
    };
    // Only a warning: rendering with names the plan does not have is legitimate (for
    // example to reproduce a case), but usually it is a typo.
    if let Err(e) = check_location(plan, o.phase, o.step) {
        eprintln!("warning: plan {plan_name:?}: {e}");
    }
    let name = o
        .name
        .map(str::to_string)
        // KUDO's default instance name (`kubectl kudo install`).
        .unwrap_or_else(|| format!("{}-instance", pkg.operator.name));
    let namespace = o.namespace.unwrap_or(DEFAULT_NAMESPACE);
    let walked = walk(pkg, &name, namespace, o.values, plan_name);
    let mut pipes = walked.pipes;
    pipes.extend(o.pipes.clone());
    let base = Vars {
        operator_name: pkg.operator.name.clone(),
        name,
        namespace: namespace.to_string(),
        operator_version: pkg.operator.operator_version.clone(),
        app_version: pkg.operator.app_version.clone().unwrap_or_default(),
        plan_name: plan_name.to_string(),
        phase_name: String::new(),
        step_name: String::new(),
        params,
        pipes,
    };
    let used_at = &walked.locations;
    let patch_files = patch_files(pkg);
    let mut results = Vec::new();
    for (file, text) in &pkg.templates {
        // A patch is shown applied, in the objects of the task that patches them
        // (below); printed alone it would look like an object of its own.
        if patch_files.contains(file.as_str()) {
            continue;
        }
        if let Some(objects) = walked.patched.get(file.as_str()) {
            let docs: Vec<String> = objects.iter().map(kudo_yaml::to_yaml).collect();
            results.push((file.as_str(), Ok(docs.join("---\n"))));
            continue;
        }
        let mut vars = base.clone();
        // A template sees the phase and step that use it, as during a real plan run,
        // unless the user asked for another location.
        let (phase, step) = used_at
            .get(file.as_str())
            .map_or(("", ""), |(p, s)| (p.as_str(), s.as_str()));
        vars.phase_name = o.phase.unwrap_or(phase).to_string();
        vars.step_name = o.step.unwrap_or(step).to_string();
        results.push((file.as_str(), kudo_template::render(file, text, &vars)));
    }
    Ok(Rendering {
        templates: results,
        dependencies: walked.dependencies,
        webhooks: walked.webhooks,
        problems: walked.problems,
    })
}

/// Every template some Apply task of the package names under `patches`.
fn patch_files(pkg: &Package) -> std::collections::BTreeSet<&str> {
    pkg.operator
        .tasks
        .iter()
        .filter_map(|t| match &t.spec {
            TaskSpec::Apply { patches, .. } => Some(patches.iter().map(String::as_str)),
            _ => None,
        })
        .flatten()
        .collect()
}

/// What the walk of the plan says `render` must agree with.
struct Walked {
    /// Templates of tasks with `patches`, as the walk rendered and patched them
    /// (template file -> its objects): what the apply sends.
    patched: BTreeMap<String, Vec<serde_json::Value>>,
    pipes: BTreeMap<String, String>,
    /// For each template, the first (phase, step) of the plan whose tasks use it.
    locations: BTreeMap<String, (String, String)>,
    dependencies: Vec<Dependency>,
    webhooks: Vec<Webhook>,
    problems: Vec<String>,
}

/// The walk of `plan_name` (kudo-plan), as an apply with these values would walk it,
/// with the public seed (`render` has no instance's secret one). Dependencies are read
/// from folders next to a folder package; others show their task and package only.
fn walk(
    pkg: &Package,
    instance: &str,
    namespace: &str,
    values: &BTreeMap<String, String>,
    plan_name: &str,
) -> Walked {
    let mut out = Walked {
        patched: BTreeMap::new(),
        pipes: BTreeMap::new(),
        locations: BTreeMap::new(),
        dependencies: Vec::new(),
        webhooks: Vec::new(),
        problems: Vec::new(),
    };
    let desired = match Desired::new(Inputs {
        package: pkg,
        instance,
        namespace,
        parameters: values,
        seed: None,
        dependencies: None,
    }) {
        Ok(d) => d,
        // Parameter errors were reported already.
        Err(_) => return out,
    };
    let walked = match desired.plan(plan_name) {
        Ok(w) => w,
        Err(e) => {
            out.problems.push(format!(
                "{e} (the apply of plan {plan_name:?} would fail on this)"
            ));
            return out;
        }
    };
    out.pipes = walked.pipes.clone();
    for step in walked.steps() {
        let here = (step.location.phase.clone(), step.location.step.clone());
        for task in step.tasks.iter().filter_map(|t| pkg.task(&t.name)) {
            for file in task.spec.template_files() {
                out.locations
                    .entry(file.to_string())
                    .or_insert_with(|| here.clone());
            }
        }
    }
    out.webhooks = walked
        .webhooks()
        .map(|(_, task, call)| Webhook {
            task: task.to_string(),
            yaml: webhook_yaml(task, call),
        })
        .collect();
    for task in walked.tasks() {
        let patches = matches!(
            pkg.task(&task.name).map(|t| &t.spec),
            Some(TaskSpec::Apply { patches, .. }) if !patches.is_empty()
        );
        if let (true, Action::Apply(objects)) = (patches, &task.action) {
            for r in objects {
                let file = r.template.strip_prefix("templates/").unwrap_or(&r.template);
                out.patched
                    .entry(file.to_string())
                    .or_default()
                    .push(r.object.clone());
            }
        }
    }
    for task in walked.tasks() {
        let Action::Child(child) = &task.action else {
            continue;
        };
        let package = match pkg.task(&task.name).map(|t| &t.spec) {
            Some(TaskSpec::KudoOperator { package, .. }) => package.clone(),
            _ => String::new(),
        };
        out.dependencies.push(Dependency {
            task: task.name.clone(),
            instance: child.target.as_ref().ok().map(|t| t.instance.clone()),
            package,
            enabled: child.enabled,
            parameters: child.parameters.clone(),
        });
    }
    out
}

/// A dependency as YAML: what the child Instance would get.
fn dependency_yaml(d: &Dependency) -> String {
    let mut doc = serde_json::Map::new();
    doc.insert("task".into(), d.task.clone().into());
    doc.insert("package".into(), d.package.clone().into());
    if let Some(instance) = &d.instance {
        doc.insert("instance".into(), instance.clone().into());
    }
    doc.insert("enabled".into(), d.enabled.into());
    doc.insert(
        "parameters".into(),
        serde_json::Value::Object(
            d.parameters
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect(),
        ),
    );
    kudo_yaml::to_yaml(&serde_json::Value::Object(doc))
}

/// Every template as `render PATH` renders it without flags (defaults, plan `deploy`);
/// empty when the defaults do not render at all.
pub(super) fn render_defaults(
    pkg: &Package,
) -> BTreeMap<&str, Result<String, kudo_template::RenderError>> {
    let none = BTreeMap::new();
    let options = Options {
        values: &none,
        pipes: &none,
        plan: DEFAULT_PLAN,
        phase: None,
        step: None,
        name: None,
        namespace: None,
    };
    render_templates(pkg, &options)
        .map(|r| r.templates.into_iter().collect())
        .unwrap_or_default()
}

/// Print a final error line and exit 1.
fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

/// `KEY=VALUE` values of a repeatable flag; a later value for the same key wins.
fn pairs(parsed: &Parsed, long: &str, shown: &str) -> Result<BTreeMap<String, String>, String> {
    parsed
        .values(long)
        .iter()
        .map(|text| args::key_value(text, shown))
        .collect()
}

fn check_location(plan: &Plan, phase: Option<&str>, step: Option<&str>) -> Result<(), String> {
    let Some(phase_name) = phase else {
        return match step {
            Some(_) => Err("--step without --phase".to_string()),
            None => Ok(()),
        };
    };
    let Some(found) = plan.phases.iter().find(|p| p.name == phase_name) else {
        let known: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "no phase {phase_name:?}; phases: {}",
            known.join(", ")
        ));
    };
    match step {
        Some(s) if !found.steps.iter().any(|x| x.name == s) => {
            let known: Vec<&str> = found.steps.iter().map(|x| x.name.as_str()).collect();
            Err(format!(
                "phase {phase_name:?} has no step {s:?}; steps: {}",
                known.join(", ")
            ))
        }
        _ => Ok(()),
    }
}

type Rendered<'a> = (&'a str, Result<String, kudo_template::RenderError>);

/// stdout: every manifest with its `# Source:`; stderr: every problem. Exit 1 if any.
fn print_manifests(
    results: &[Rendered<'_>],
    dependencies: &[Dependency],
    webhooks: &[Webhook],
    mut problems: Vec<String>,
) -> ExitCode {
    let mut out = String::new();
    for (file, result) in results {
        match result {
            Ok(text) => {
                for (i, doc) in kudo_template::split_documents(text).iter().enumerate() {
                    out.push_str(&format!("---\n# Source: templates/{file}\n"));
                    let body = display_body(doc, i);
                    out.push_str(body);
                    // Only add what is missing: trimming would change `|+` block scalars.
                    if !body.ends_with('\n') {
                        out.push('\n');
                    }
                    if let Err(e) = check_manifest(doc) {
                        problems.push(format!("templates/{file}: document {}: {e}", i + 1));
                    }
                }
            }
            Err(e) => problems.push(format!("templates/{e}")),
        }
    }
    for d in dependencies {
        out.push_str(&format!(
            "---\n# Dependency: task {} (the child Instance the apply runs)\n{}",
            d.task,
            dependency_yaml(d)
        ));
    }
    for w in webhooks {
        out.push_str(&format!(
            "---\n# Webhook: task {} (called at apply time, never by render; the objects it answers are applied then)\n{}",
            w.task, w.yaml
        ));
    }
    super::print_out(&out);
    report(results.len(), &problems)
}

/// A document as split by KUDO, without what is left of its separator: the first one
/// may still start with its `---` line, later ones with the rest of the separator line.
fn display_body(doc: &str, index: usize) -> &str {
    let (separator_rest, had_separator) = match doc.strip_prefix("---") {
        Some(rest) => (rest, true),
        None => (doc, index > 0),
    };
    match separator_rest.split_once('\n') {
        Some((first, rest)) if had_separator && first.trim().is_empty() => rest,
        _ => separator_rest,
    }
}

/// The manifest must parse with Kubernetes' YAML rules and be an object, as the
/// engine requires before applying it.
fn check_manifest(doc: &str) -> Result<(), String> {
    match kudo_yaml::to_json(doc) {
        Ok(serde_json::Value::Object(_) | serde_json::Value::Null) => Ok(()),
        Ok(other) => Err(format!(
            "is not a Kubernetes object (a YAML mapping) but {}",
            match other {
                serde_json::Value::Array(_) => "a list",
                serde_json::Value::String(_) => "a string",
                _ => "a scalar",
            }
        )),
        Err(e) => Err(format!("invalid YAML at {e}")),
    }
}

/// `--output-dir OUT`: each template's raw rendered text at `OUT/templates/<file>`.
fn write_dir(
    out_dir: &Path,
    results: &[Rendered<'_>],
    dependencies: &[Dependency],
    webhooks: &[Webhook],
    mut problems: Vec<String>,
) -> ExitCode {
    let mut written = String::new();
    // `dependencies/<task>.yaml`: what each KudoOperator task's child would get;
    // `webhooks/<task>.yaml`: what each Webhook task would send (it is not called).
    let extras = dependencies
        .iter()
        .map(|d| ("dependencies", &d.task, dependency_yaml(d)))
        .chain(
            webhooks
                .iter()
                .map(|w| ("webhooks", &w.task, w.yaml.clone())),
        );
    for (folder, task, yaml) in extras {
        let file = format!("{}.yaml", sanitize_file_name(task));
        let target = out_dir.join(folder).join(file);
        let write = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, yaml));
        match write {
            Ok(()) => written.push_str(&format!("wrote {}\n", target.display())),
            Err(e) => problems.push(format!(
                "{}: cannot write: {e}; check that --output-dir is writable",
                target.display()
            )),
        }
    }
    for (file, result) in results {
        let text = match result {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("templates/{e}"));
                continue;
            }
        };
        for (i, doc) in kudo_template::split_documents(text).iter().enumerate() {
            if let Err(e) = check_manifest(doc) {
                problems.push(format!("templates/{file}: document {}: {e}", i + 1));
            }
        }
        // Template keys come from the package loader, which already rejects `..` and
        // absolute paths in archives; check again since this writes to the disk.
        let relative = Path::new("templates").join(file);
        if relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            problems.push(format!("templates/{file}: unsafe path, not written"));
            continue;
        }
        let target = out_dir.join(relative);
        let write = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, text));
        match write {
            Ok(()) => written.push_str(&format!("wrote {}\n", target.display())),
            Err(e) => problems.push(format!(
                "{}: cannot write: {e}; check that --output-dir is writable",
                target.display()
            )),
        }
    }
    super::print_out(&written);
    report(results.len(), &problems)
}

/// A task name as a file name: path separators and dots cannot climb out of the folder.
fn sanitize_file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn report(total: usize, problems: &[String]) -> ExitCode {
    for p in problems {
        eprintln!("error: {p}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "error: {} problem{} in {total} templates",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        );
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_trims_separators() {
        assert_eq!(display_body("---\nkind: A\n", 0), "kind: A\n");
        assert_eq!(display_body("kind: A", 0), "kind: A");
        assert_eq!(display_body("\nkind: B\n\n", 1), "kind: B\n\n");
        assert_eq!(display_body(" # note\nkind: B", 1), " # note\nkind: B");
    }

    #[test]
    fn manifests_must_be_objects() {
        assert!(check_manifest("kind: A\n").is_ok());
        assert!(check_manifest("- a\n").unwrap_err().contains("a list"));
        assert!(
            check_manifest("a: [\n")
                .unwrap_err()
                .contains("invalid YAML")
        );
    }
}
