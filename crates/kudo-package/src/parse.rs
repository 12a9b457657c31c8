//! Reading operator.yaml and params.yaml into the model.

use std::collections::BTreeMap;

use kudo_yaml::{Node, NodeValue};

use crate::error::PackageError;
use crate::fields::At;
use crate::model::*;
use crate::versions::parse_lenient;

fn parse_doc(file: &str, text: &str) -> Result<Option<Node>, PackageError> {
    let mut docs = kudo_yaml::parse_nodes(text).map_err(|e| PackageError::yaml(file, e))?;
    if docs.len() > 1 {
        let second = &docs[1];
        return Err(PackageError::Yaml {
            file: file.to_string(),
            line: second.line,
            column: second.column,
            message: "expected one YAML document, found several (`---`); keep one".to_string(),
        });
    }
    let doc = docs.pop().filter(|d| !d.is_null());
    // A field written twice is a mistake KUDO hid (the last one won); every package
    // file is read here, so the plan refuses it as `package verify` does.
    if let Some(d) = &doc {
        d.check_unique_keys()
            .map_err(|e| PackageError::yaml(file, e))?;
    }
    Ok(doc)
}

fn check_api_version(root: At<'_>) -> Result<String, PackageError> {
    match root.opt_text("apiVersion", "apiVersion")? {
        None => Ok(API_VERSION.to_string()),
        Some(v) if v == API_VERSION => Ok(v),
        Some(v) => Err(root.get("apiVersion").unwrap_or(root).err(
            "apiVersion",
            format!("unsupported apiVersion {v:?}; use {API_VERSION} (or leave it out)"),
        )),
    }
}

pub(crate) fn operator_file(file: &str, text: &str) -> Result<OperatorFile, PackageError> {
    let Some(doc) = parse_doc(file, text)? else {
        return Err(PackageError::invalid(
            file,
            None,
            "name",
            "operator.yaml is empty; it needs at least name, operatorVersion, tasks and plans",
        ));
    };
    let root = At::new(file, &doc);
    root.expect_mapping("(top level)")?;
    let api_version = check_api_version(root)?;

    let name = root.text_or_empty("name", "name")?;
    if name.is_empty() {
        return Err(root.err("name", "missing operator name; add `name: <operator>`"));
    }
    if let Some(rule) = operator_name_problem(&name) {
        return Err(root.get("name").unwrap_or(root).err(
            "name",
            format!("{name:?} is not a valid operator name: {rule}. It names the Operator object and labels every object the operator creates; use e.g. {:?}", suggest_name(&name)),
        ));
    }
    let operator_version = root.text_or_empty("operatorVersion", "operatorVersion")?;
    let ov_at = root.get("operatorVersion").unwrap_or(root);
    if operator_version.is_empty() {
        return Err(ov_at.err(
            "operatorVersion",
            "missing; add `operatorVersion: \"x.y.z\"` (semantic version)",
        ));
    }
    if parse_lenient(&operator_version).is_none() {
        return Err(ov_at.err(
            "operatorVersion",
            format!("{operator_version:?} is not a semantic version; use e.g. \"0.1.0\""),
        ));
    }

    let maintainers = root
        .list("maintainers", "maintainers")?
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let f = format!("maintainers[{i}]");
            m.expect_mapping(&f)?;
            Ok(Maintainer {
                name: m.text_or_empty("name", &format!("{f}.name"))?,
                email: m.text_or_empty("email", &format!("{f}.email"))?,
            })
        })
        .collect::<Result<Vec<_>, PackageError>>()?;

    let mut task_from = BTreeMap::new();
    let tasks = root
        .list("tasks", "tasks")?
        .iter()
        .enumerate()
        .map(|(i, t)| task(*t, i, &mut task_from))
        .collect::<Result<Vec<_>, _>>()?;

    let mut plans = BTreeMap::new();
    if let Some(p) = root.get("plans") {
        for (plan_name, plan_at) in p.entries("plans")? {
            let plan = plan(plan_at, &plan_name)?;
            plans.insert(plan_name, plan);
        }
    }

    let first_from = task_from.keys().next().cloned();
    let extends = match root.get("extends") {
        None => None,
        Some(e) => {
            let kudo = e.get("kudo").ok_or_else(|| {
                e.err(
                    "extends.kudo",
                    "missing; write `extends: {kudo: {operator: NAME, version: VERSION}}`",
                )
            })?;
            let operator = kudo.text_or_empty("operator", "extends.kudo.operator")?;
            if operator.is_empty() {
                return Err(kudo.err("extends.kudo.operator", "missing base operator name"));
            }
            Some(Extends {
                operator,
                version: kudo.opt_text("version", "extends.kudo.version")?,
                task_from,
                param_fields: BTreeMap::new(),
            })
        }
    };
    if extends.is_none()
        && let Some(task) = first_from
    {
        return Err(root.err(
            "tasks",
            format!("task {task:?} uses `from:` but the operator has no `extends`; add extends or remove from"),
        ));
    }

    let mut outputs = BTreeMap::new();
    if let Some(node) = root.get("outputs") {
        for (key, value) in node.entries("outputs")? {
            outputs.insert(key.clone(), value.text(&format!("outputs.{key}"))?);
        }
    }

    let dependencies = root
        .list("dependencies", "dependencies")?
        .iter()
        .enumerate()
        .map(|(i, d)| dependency(*d, i))
        .collect::<Result<Vec<_>, _>>()?;

    Ok(OperatorFile {
        api_version,
        name,
        description: root.text_or_empty("description", "description")?,
        operator_version,
        app_version: root
            .opt_text("appVersion", "appVersion")?
            .filter(|s| !s.is_empty()),
        kudo_version: root.text_or_empty("kudoVersion", "kudoVersion")?,
        kubernetes_version: root.text_or_empty("kubernetesVersion", "kubernetesVersion")?,
        maintainers,
        url: root.text_or_empty("url", "url")?,
        tasks,
        plans,
        namespace_manifest: root.opt_text("namespaceManifest", "namespaceManifest")?,
        extends,
        outputs,
        dependencies,
    })
}

fn dependency(d: At<'_>, index: usize) -> Result<OperatorDependency, PackageError> {
    let f = format!("dependencies[{index}]");
    d.expect_mapping(&f)?;
    let text = |key: &str| -> Result<Option<String>, PackageError> {
        Ok(d.opt_text(key, &format!("{f}.{key}"))?
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty()))
    };
    let name = text("name")?;
    let gvk = [text("group")?, text("version")?, text("kind")?];
    let operator_version = text("operatorVersion")?;
    let app_version = text("appVersion")?;
    match (name, gvk) {
        (Some(name), [None, None, None]) => Ok(OperatorDependency::Package {
            name,
            operator_version,
            app_version,
        }),
        (Some(_), _) => Err(d.err(
            &f,
            "gives both `name` and `group`/`version`/`kind`; an entry names either a package or an API, so split it into two entries",
        )),
        (None, [Some(group), Some(version), Some(kind)]) => {
            if operator_version.is_some() || app_version.is_some() {
                return Err(d.err(
                    &f,
                    "operatorVersion/appVersion only apply to an entry with `name`; an API entry (group/version/kind) takes whichever package provides it",
                ));
            }
            Ok(OperatorDependency::Api(Gvk {
                group,
                version,
                kind,
            }))
        }
        (None, [None, None, None]) => Err(d.err(
            &f,
            "names neither a package nor an API; add `name: <package>` or `group:`, `version:` and `kind:`",
        )),
        (None, [group, version, kind]) => {
            let missing: Vec<&str> = [("group", group), ("version", version), ("kind", kind)]
                .into_iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k)
                .collect();
            Err(d.err(
                &f,
                format!(
                    "an API entry needs group, version and kind; missing {}",
                    missing.join(", ")
                ),
            ))
        }
    }
}

fn task(
    t: At<'_>,
    index: usize,
    task_from: &mut BTreeMap<String, String>,
) -> Result<Task, PackageError> {
    let f = format!("tasks[{index}]");
    t.expect_mapping(&f)?;
    let name = t.text_or_empty("name", &format!("{f}.name"))?;
    if name.is_empty() {
        return Err(t.err(&format!("{f}.name"), "task without a name; add `name:`"));
    }
    let f = format!("tasks[{index}] ({name})");
    let from = t.opt_text("from", &format!("{f}.from"))?;
    let kind = t.text_or_empty("kind", &format!("{f}.kind"))?;
    let spec_at = t.get("spec");
    if let Some(s) = spec_at {
        s.expect_mapping(&format!("{f}.spec"))?;
    }
    let sf = |field: &str| format!("{f}.spec.{field}");
    let strings = |key: &str| -> Result<Vec<String>, PackageError> {
        match spec_at {
            Some(s) => s.string_list(key, &sf(key)),
            None => Ok(Vec::new()),
        }
    };
    let opt = |key: &str| -> Result<Option<String>, PackageError> {
        match spec_at {
            Some(s) => Ok(s.opt_text(key, &sf(key))?.filter(|v| !v.is_empty())),
            None => Ok(None),
        }
    };
    let flag = |key: &str| -> Result<bool, PackageError> {
        match spec_at {
            Some(s) => Ok(s.opt_bool(key, &sf(key))?.unwrap_or(false)),
            None => Ok(false),
        }
    };
    if let Some(base_task) = from {
        // Completed from the base task when the extension is resolved.
        task_from.insert(name.clone(), base_task);
        return Ok(Task {
            name,
            kind,
            spec: TaskSpec::Apply {
                resources: strings("resources")?,
                patches: strings("patches")?,
            },
        });
    }
    let spec = match kind.as_str() {
        "Apply" => TaskSpec::Apply {
            resources: strings("resources")?,
            patches: strings("patches")?,
        },
        "Delete" => TaskSpec::Delete {
            resources: strings("resources")?,
        },
        "Toggle" => TaskSpec::Toggle {
            parameter: opt("parameter")?.ok_or_else(|| {
                t.err(
                    &sf("parameter"),
                    "Toggle task needs `parameter:` naming a boolean parameter",
                )
            })?,
            resources: strings("resources")?,
        },
        "Dummy" => TaskSpec::Dummy {
            want_err: flag("wantErr")?,
            fatal: flag("fatal")?,
            done: flag("done")?,
        },
        "Pipe" => {
            let pod = opt("pod")?.ok_or_else(|| {
                t.err(
                    &sf("pod"),
                    "Pipe task needs `pod:` naming a pod template file",
                )
            })?;
            let items = match spec_at {
                Some(s) => s.list("pipe", &sf("pipe"))?,
                None => Vec::new(),
            };
            let pipe = items
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let pf = sf(&format!("pipe[{i}]"));
                    p.expect_mapping(&pf)?;
                    let kind = p.text_or_empty("kind", &format!("{pf}.kind"))?;
                    if kind != "Secret" && kind != "ConfigMap" {
                        return Err(p.err(
                            &format!("{pf}.kind"),
                            format!("{kind:?} is not a pipe kind; use Secret or ConfigMap"),
                        ));
                    }
                    let key = p.text_or_empty("key", &format!("{pf}.key"))?;
                    if key.is_empty() {
                        return Err(p.err(&format!("{pf}.key"), "missing pipe key"));
                    }
                    Ok(PipeSpec {
                        file: p.opt_text("file", &format!("{pf}.file"))?,
                        env_file: p.opt_text("envFile", &format!("{pf}.envFile"))?,
                        kind,
                        key,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            TaskSpec::Pipe { pod, pipe }
        }
        "KudoOperator" => TaskSpec::KudoOperator {
            package: opt("package")?.ok_or_else(|| {
                t.err(
                    &sf("package"),
                    "KudoOperator task needs `package:` (repository name, folder or URL)",
                )
            })?,
            app_version: opt("appVersion")?,
            operator_version: opt("operatorVersion")?,
            instance_name: opt("instanceName")?,
            parameter_file: opt("parameterFile")?,
            enabling_parameter: opt("enablingParameter")?,
        },
        "Webhook" => TaskSpec::Webhook(webhook(t, spec_at, &f)?),
        "" => {
            return Err(t.err(
                &format!("{f}.kind"),
                format!("missing task kind; use one of {}", TASK_KINDS.join(", ")),
            ));
        }
        other => {
            return Err(t.get("kind").unwrap_or(t).err(
                &format!("{f}.kind"),
                format!(
                    "unknown task kind {other:?}; use one of {}",
                    TASK_KINDS.join(", ")
                ),
            ));
        }
    };
    Ok(Task { name, kind, spec })
}

/// A Webhook task's spec (see `docs/webhook-tasks.md`).
fn webhook(t: At<'_>, spec_at: Option<At<'_>>, f: &str) -> Result<WebhookSpec, PackageError> {
    let sf = |field: &str| format!("{f}.spec.{field}");
    let Some(s) = spec_at else {
        return Err(t.err(&sf("url"), "Webhook task needs `spec.url`"));
    };
    let url = s.text_or_empty("url", &sf("url"))?;
    if url.trim().is_empty() {
        return Err(s.err(
            &sf("url"),
            "Webhook task needs `url:` (an https:// URL, may use template variables)",
        ));
    }
    let ca_bundle = s
        .opt_text("caBundle", &sf("caBundle"))?
        .filter(|v| !v.trim().is_empty());
    let timeout = match s.get("timeout") {
        None => WEBHOOK_MAX_TIMEOUT,
        Some(n) => {
            let text = n.text(&sf("timeout"))?;
            parse_webhook_timeout(&text).map_err(|m| n.err(&sf("timeout"), m))?
        }
    };
    let mut headers: Vec<WebhookHeader> = Vec::new();
    for (i, h) in s.list("headers", &sf("headers"))?.iter().enumerate() {
        let hf = sf(&format!("headers[{i}]"));
        h.expect_mapping(&hf)?;
        let name = h.text_or_empty("name", &format!("{hf}.name"))?;
        if !is_header_name(&name) {
            return Err(h.err(
                &format!("{hf}.name"),
                format!(
                    "{name:?} is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)"
                ),
            ));
        }
        // The request's own framing is not the package's to change.
        if [
            "content-type",
            "content-length",
            "host",
            "transfer-encoding",
        ]
        .contains(&name.to_ascii_lowercase().as_str())
        {
            return Err(h.err(
                &format!("{hf}.name"),
                format!("header {name:?} is set by the provider; remove it"),
            ));
        }
        if headers.iter().any(|o| o.name.eq_ignore_ascii_case(&name)) {
            return Err(h.err(
                &format!("{hf}.name"),
                format!("header {name:?} is listed twice"),
            ));
        }
        let Some(r) = h.get("secretKeyRef") else {
            return Err(h.err(
                &format!("{hf}.secretKeyRef"),
                "a header's value comes from a Secret: add `secretKeyRef: {name: <secret>, key: <key>}`",
            ));
        };
        let rf = format!("{hf}.secretKeyRef");
        r.expect_mapping(&rf)?;
        let secret_name = r.text_or_empty("name", &format!("{rf}.name"))?;
        let secret_key = r.text_or_empty("key", &format!("{rf}.key"))?;
        if secret_name.is_empty() || secret_key.is_empty() {
            return Err(r.err(&rf, "needs both `name` (the Secret) and `key`"));
        }
        headers.push(WebhookHeader {
            name,
            secret_name,
            secret_key,
        });
    }
    Ok(WebhookSpec {
        url,
        ca_bundle,
        headers,
        timeout,
    })
}

/// RFC 9110 token characters.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `timeout:` of a Webhook task: whole seconds (`10`), or a number with `s`, `ms` or
/// `m` (`10s`, `1500ms`); more than [`WEBHOOK_MAX_TIMEOUT`] or zero is an error.
pub(crate) fn parse_webhook_timeout(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let amount: u64 = number.parse().map_err(|_| {
        format!("timeout {text:?} is not a duration; write seconds like `10s` (at most 30s)")
    })?;
    let duration = match unit {
        "s" => Duration::from_secs(amount),
        "ms" => Duration::from_millis(amount),
        "m" => Duration::from_secs(amount.saturating_mul(60)),
        _ => {
            return Err(format!(
                "timeout {text:?} has unit {unit:?}; use s, ms or m (at most 30s)"
            ));
        }
    };
    if duration.is_zero() {
        return Err(format!(
            "timeout {text:?} is zero; give the webhook up to 30s"
        ));
    }
    if duration > WEBHOOK_MAX_TIMEOUT {
        return Err(format!(
            "timeout {text:?} is longer than the 30s a webhook may take; shorten it (work that takes longer belongs in a Job)"
        ));
    }
    Ok(duration)
}

/// The form [`parse_webhook_timeout`] reads back.
pub(crate) fn format_webhook_timeout(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

fn parse_strategy(parent: At<'_>, field: &str) -> Result<(Strategy, bool), PackageError> {
    let Some(s) = parent.get("strategy") else {
        return Ok((Strategy::Parallel, false));
    };
    match s.text(field)?.as_str() {
        "serial" => Ok((Strategy::Serial, true)),
        "parallel" => Ok((Strategy::Parallel, true)),
        other => Err(s.err(
            field,
            format!("unknown strategy {other:?}; use serial or parallel"),
        )),
    }
}

fn plan(p: At<'_>, plan_name: &str) -> Result<Plan, PackageError> {
    let f = format!("plans.{plan_name}");
    p.expect_mapping(&f)?;
    let (strategy, strategy_explicit) = parse_strategy(p, &format!("{f}.strategy"))?;
    let phases = p
        .list("phases", &format!("{f}.phases"))?
        .iter()
        .enumerate()
        .map(|(i, ph)| {
            let pf = format!("{f}.phases[{i}]");
            ph.expect_mapping(&pf)?;
            let name = ph.text_or_empty("name", &format!("{pf}.name"))?;
            let (strategy, strategy_explicit) = parse_strategy(*ph, &format!("{pf}.strategy"))?;
            let steps = ph
                .list("steps", &format!("{pf}.steps"))?
                .iter()
                .enumerate()
                .map(|(j, st)| {
                    let sf = format!("{pf}.steps[{j}]");
                    st.expect_mapping(&sf)?;
                    Ok(Step {
                        name: st.text_or_empty("name", &format!("{sf}.name"))?,
                        tasks: st.string_list("tasks", &format!("{sf}.tasks"))?,
                    })
                })
                .collect::<Result<Vec<_>, PackageError>>()?;
            Ok(Phase {
                name,
                strategy,
                strategy_explicit,
                steps,
            })
        })
        .collect::<Result<Vec<_>, PackageError>>()?;
    Ok(Plan {
        strategy,
        strategy_explicit,
        phases,
    })
}

/// params.yaml: parameters and groups.
/// Parameters, groups, and which keys each parameter wrote.
pub(crate) type ParamsFile = (
    Vec<Parameter>,
    Vec<ParamGroup>,
    BTreeMap<String, Vec<String>>,
);

pub(crate) fn params_file(file: &str, text: &str) -> Result<ParamsFile, PackageError> {
    let Some(doc) = parse_doc(file, text)? else {
        return Ok((Vec::new(), Vec::new(), BTreeMap::new()));
    };
    let root = At::new(file, &doc);
    root.expect_mapping("(top level)")?;
    check_api_version(root)?;
    let groups = root
        .list("groups", "groups")?
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let f = format!("groups[{i}]");
            g.expect_mapping(&f)?;
            let name = g.text_or_empty("name", &format!("{f}.name"))?;
            if name.is_empty() {
                return Err(g.err(&format!("{f}.name"), "group without a name; add `name:`"));
            }
            let priority = match g.get("priority") {
                None => None,
                Some(p) => Some(
                    p.text(&format!("{f}.priority"))?
                        .parse::<i64>()
                        .map_err(|_| p.err(&format!("{f}.priority"), "expected an integer"))?,
                ),
            };
            Ok(ParamGroup {
                name,
                display_name: g.opt_text("displayName", &format!("{f}.displayName"))?,
                description: g.opt_text("description", &format!("{f}.description"))?,
                priority,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let list = root.list("parameters", "parameters")?;
    let parameters = list
        .iter()
        .enumerate()
        .map(|(i, p)| parameter(*p, i))
        .collect::<Result<Vec<_>, _>>()?;
    let fields = list
        .iter()
        .zip(&parameters)
        .map(|(at, p)| {
            let keys = at
                .node
                .merged_entries()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(k, _)| k.as_scalar().map(|s| s.text.clone()))
                .collect();
            (p.name.clone(), keys)
        })
        .collect();
    Ok((parameters, groups, fields))
}

fn parameter(p: At<'_>, index: usize) -> Result<Parameter, PackageError> {
    let f = format!("parameters[{index}]");
    p.expect_mapping(&f)?;
    let name = p.text_or_empty("name", &format!("{f}.name"))?;
    if name.is_empty() {
        return Err(p.err(
            &format!("{f}.name"),
            "parameter without a name; add `name:`",
        ));
    }
    let f = format!("parameters[{index}] ({name})");
    let type_text = p.text_or_empty("type", &format!("{f}.type"))?;
    let value_type = ParamType::parse(&type_text).ok_or_else(|| {
        p.get("type").unwrap_or(p).err(
            &format!("{f}.type"),
            format!(
                "unknown type {type_text:?}; use string, integer, number, boolean, array or map"
            ),
        )
    })?;
    // Enum items are stringified like defaults: KUDO's `ParametersToCRDType`
    // (pkg/kudoctl/packages/convert/parameters.go) runs each through `WrapParamValue`,
    // so list/map items of array/map parameters become YAML text.
    let enum_values = match p.get("enum") {
        None => None,
        Some(e) => Some(
            e.node
                .as_sequence()
                .ok_or_else(|| e.err(&format!("{f}.enum"), "expected a list of values"))?
                .iter()
                .map(default_text)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| e.err(&format!("{f}.enum"), err.message))?,
        ),
    };
    Ok(Parameter {
        display_name: p.opt_text("displayName", &format!("{f}.displayName"))?,
        description: p.opt_text("description", &format!("{f}.description"))?,
        required: p
            .opt_bool("required", &format!("{f}.required"))?
            .unwrap_or(true),
        default: p
            .get("default")
            .map(|d| default_text(d.node))
            .transpose()
            .map_err(|e| {
                PackageError::invalid(p.file, Some(p.node), &format!("{f}.default"), e.message)
            })?,
        trigger: p
            .opt_text("trigger", &format!("{f}.trigger"))?
            .filter(|t| !t.is_empty()),
        value_type,
        type_explicit: !type_text.is_empty(),
        immutable: p
            .opt_bool("immutable", &format!("{f}.immutable"))?
            .unwrap_or(false),
        enum_values,
        group: p.opt_text("group", &format!("{f}.group"))?,
        advanced: p
            .opt_bool("advanced", &format!("{f}.advanced"))?
            .unwrap_or(false),
        hint: p.opt_text("hint", &format!("{f}.hint"))?,
        name,
    })
}

/// A default (or enum item) as the string KUDO stores. KUDO's `WrapParamValue`
/// (pkg/util/convert/convert.go) formats the decoded YAML value with `%v` for scalars
/// and `yaml.Marshal`s lists and maps. We follow it except for numbers, which keep their
/// literal text (**[better]**: KUDO turned `1000000` into "1e+06" and `0755` into "493").
/// YAML 1.1 booleans (`yes`, `on`, `True`) become "true"/"false" as in KUDO, so a
/// boolean default written `yes` passes Go's `ParseBool`.
pub(crate) fn default_text(node: &Node) -> Result<String, kudo_yaml::YamlError> {
    match &node.value {
        NodeValue::Scalar(s) => Ok(match s.resolve() {
            kudo_yaml::Resolved::Bool(b) => b.to_string(),
            _ => s.text.clone(),
        }),
        _ => Ok(kudo_yaml::to_yaml(&node.to_json()?)),
    }
}

/// Why `name` cannot be an operator's name, `None` when it can. The name is the
/// Operator object's `metadata.name` (an RFC 1123 subdomain, as for every custom
/// resource) and the value of the `kudo.dev/operator` label on every object the
/// operator creates (a label value: at most 63 characters). KUDO 0.19 checked neither
/// and left it to the API server's refusal of the Operator object.
pub(crate) fn operator_name_problem(name: &str) -> Option<&'static str> {
    let part_ok = |p: &str| {
        p.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if name.len() > 63 {
        Some("at most 63 characters (it is a label value)")
    } else if !name.split('.').all(part_ok) {
        Some(
            "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (an RFC 1123 subdomain)",
        )
    } else {
        None
    }
}

/// A valid name close to `name`, for the message: lowercased, other characters as '-'.
fn suggest_name(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '.' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    let mut out = String::new();
    for part in mapped
        .split('.')
        .map(|p| p.trim_matches('-'))
        .filter(|p| !p.is_empty())
    {
        let room = 63usize.saturating_sub(out.len() + usize::from(!out.is_empty()));
        let part = part[..part.len().min(room)].trim_end_matches('-');
        if part.is_empty() {
            break;
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(part);
    }
    if out.is_empty() {
        "my-operator".to_string()
    } else {
        out
    }
}
