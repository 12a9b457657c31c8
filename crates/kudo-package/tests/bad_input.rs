//! Broken operator.yaml / params.yaml, table-driven: each row is a package that must be
//! refused (by loading or by `verify`) with a message naming the file and the line or
//! field. docs/testing.md ("Bad input, counted") counts the rows; `cargo test -p
//! kudo-package --test integration bad_input -- --nocapture` prints the count.

use kudo_package::{Files, Origin, Package, Severity};

/// A valid operator.yaml the rows start from (one Apply task of `cm.yaml`).
const OPERATOR: &str = "name: demo
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
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

const TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n";

/// operator.yaml with `from` replaced by `to` (which must occur).
fn op(from: &str, to: &str) -> String {
    assert!(OPERATOR.contains(from), "row edits missing text {from:?}");
    OPERATOR.replacen(from, to, 1)
}

/// A params.yaml holding the given parameter list items.
fn params(items: &str) -> String {
    format!("apiVersion: kudo.dev/v1beta1\nparameters:\n{items}")
}

struct Row {
    name: &'static str,
    operator: String,
    params: Option<String>,
    /// Every one must occur in the message; the first names the file (and line or
    /// field).
    expect: &'static [&'static str],
}

fn row(name: &'static str, operator: String, expect: &'static [&'static str]) -> Row {
    Row {
        name,
        operator,
        params: None,
        expect,
    }
}

fn prow(name: &'static str, params_yaml: String, expect: &'static [&'static str]) -> Row {
    Row {
        name,
        operator: OPERATOR.to_string(),
        params: Some(params_yaml),
        expect,
    }
}

fn rows() -> Vec<Row> {
    vec![
        // ---- operator.yaml: YAML and top level
        row(
            "op-tab-indent",
            "name: demo\n\toperatorVersion: 1\n".into(),
            &["pkg/operator.yaml:1:", "found a tab"],
        ),
        row(
            "op-unclosed-flow",
            op("[cm.yaml]", "[cm.yaml"),
            &["pkg/operator.yaml:8:"],
        ),
        row(
            "op-unclosed-quote",
            op("name: demo", "name: \"demo"),
            &["pkg/operator.yaml:"],
        ),
        row("op-list-root", "- a\n- b\n".into(), &["pkg/operator.yaml"]),
        row(
            "op-scalar-root",
            "just text\n".into(),
            &["pkg/operator.yaml"],
        ),
        row("op-empty", String::new(), &["pkg/operator.yaml"]),
        row(
            "op-two-documents",
            format!("{OPERATOR}---\nname: other\n"),
            &["pkg/operator.yaml:18:", "one YAML document"],
        ),
        row(
            "op-undefined-alias",
            op("name: demo", "name: *nothing"),
            &["pkg/operator.yaml:1:"],
        ),
        row(
            "op-name-missing",
            op("name: demo\n", ""),
            &["pkg/operator.yaml", "name"],
        ),
        row(
            "op-name-invalid",
            op("name: demo", "name: Bad_Operator!"),
            &[
                "pkg/operator.yaml:1:",
                "\"Bad_Operator!\" is not a valid operator name",
                "RFC 1123 subdomain",
                "\"bad-operator\"",
            ],
        ),
        row(
            "op-name-too-long",
            op("name: demo", &format!("name: {}", "a".repeat(64))),
            &["pkg/operator.yaml:1:", "at most 63 characters"],
        ),
        row(
            "op-name-list",
            op("name: demo", "name: [a]"),
            &["pkg/operator.yaml:1:", "name"],
        ),
        row(
            "op-name-map",
            op("name: demo", "name: {a: b}"),
            &["pkg/operator.yaml:1:", "name"],
        ),
        row(
            "op-version-missing",
            op("operatorVersion: 0.1.0\n", ""),
            &["pkg/operator.yaml", "operatorVersion"],
        ),
        row(
            "op-version-not-semver",
            op("0.1.0", "one"),
            &["pkg/operator.yaml:2:", "operatorVersion"],
        ),
        row(
            "op-version-list",
            op("0.1.0", "[1]"),
            &["pkg/operator.yaml:2:", "operatorVersion"],
        ),
        row(
            "op-duplicate-key",
            op(
                "operatorVersion: 0.1.0\n",
                "operatorVersion: 0.1.0\nname: other\n",
            ),
            &[
                "pkg/operator.yaml:3:",
                "key \"name\" is written twice",
                "first on line 1",
            ],
        ),
        row(
            "op-duplicate-key-in-task",
            op(
                "      resources: [cm.yaml]\n",
                "      resources: [cm.yaml]\n      resources: [x.yaml]\n",
            ),
            &["pkg/operator.yaml:8:", "\"resources\"", "first on line 7"],
        ),
        row(
            "op-api-version",
            format!("apiVersion: kudo.dev/v1\n{OPERATOR}"),
            &["pkg/operator.yaml:1:", "apiVersion"],
        ),
        row(
            "op-kubernetes-version",
            format!("kubernetesVersion: [1]\n{OPERATOR}"),
            &["pkg/operator.yaml:1:", "kubernetesVersion"],
        ),
        row(
            "op-maintainers-map",
            format!("maintainers: {{a: b}}\n{OPERATOR}"),
            &["pkg/operator.yaml:1:", "maintainers"],
        ),
        row(
            "op-url-list",
            format!("url: [a]\n{OPERATOR}"),
            &["pkg/operator.yaml:1:", "url"],
        ),
        // ---- operator.yaml: tasks
        row(
            "op-tasks-map",
            op(
                "tasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\n",
                "tasks: {a: 1}\n",
            ),
            &["pkg/operator.yaml:3:", "tasks"],
        ),
        row(
            "op-task-scalar",
            op(
                "  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\n",
                "  - app\n",
            ),
            &["pkg/operator.yaml:4:", "tasks[0]"],
        ),
        row(
            "op-task-no-name",
            op("  - name: app\n    kind", "  - kind"),
            &["pkg/operator.yaml:4:", "tasks[0].name"],
        ),
        row(
            "op-task-no-kind",
            op("    kind: Apply\n", ""),
            &["pkg/operator.yaml:4:", "tasks[0] (app).kind"],
        ),
        row(
            "op-task-unknown-kind",
            op("kind: Apply", "kind: Applied"),
            &["pkg/operator.yaml:5:", "tasks[0] (app).kind"],
        ),
        row(
            "op-task-kind-list",
            op("kind: Apply", "kind: [Apply]"),
            &["pkg/operator.yaml:5:", "tasks[0] (app).kind"],
        ),
        row(
            "op-task-no-spec",
            op("    spec:\n      resources: [cm.yaml]\n", ""),
            &["operator.yaml", "task \"app\"", "spec.resources"],
        ),
        row(
            "op-task-resources-map",
            op("resources: [cm.yaml]", "resources: {a: b}"),
            &["pkg/operator.yaml:7:", "tasks[0] (app).spec.resources"],
        ),
        row(
            "op-task-resource-map",
            op("resources: [cm.yaml]", "resources: [{a: b}]"),
            &["pkg/operator.yaml:7:", "tasks[0] (app).spec.resources[0]"],
        ),
        row(
            "op-task-missing-template",
            op("[cm.yaml]", "[nope.yaml]"),
            &["operator.yaml", "nope.yaml"],
        ),
        row(
            "op-task-duplicate",
            op(
                "plans:",
                "  - name: app\n    kind: Dummy\n    spec: {}\nplans:",
            ),
            &["operator.yaml", "task \"app\""],
        ),
        row(
            "op-toggle-no-parameter",
            op(
                "kind: Apply\n    spec:\n      resources: [cm.yaml]",
                "kind: Toggle\n    spec:\n      resources: [cm.yaml]",
            ),
            &["operator.yaml", "tasks[0]"],
        ),
        row(
            "op-pipe-no-pod",
            op(
                "kind: Apply\n    spec:\n      resources: [cm.yaml]",
                "kind: Pipe\n    spec:\n      pipe: []",
            ),
            &["pkg/operator.yaml:4:", "tasks[0] (app).spec.pod"],
        ),
        row(
            "op-kudooperator-no-package",
            op(
                "kind: Apply\n    spec:\n      resources: [cm.yaml]",
                "kind: KudoOperator\n    spec: {}",
            ),
            &["pkg/operator.yaml:4:", "tasks[0] (app).spec.package"],
        ),
        // ---- operator.yaml: plans
        row(
            "op-plans-list",
            op("plans:\n  deploy:", "plans: []\nnot:\n  deploy:"),
            &["pkg/operator.yaml:8:", "plans"],
        ),
        row(
            "op-no-deploy-plan",
            op("  deploy:", "  install:"),
            &["operator.yaml", "deploy"],
        ),
        row(
            "op-plan-strategy",
            op(
                "    strategy: serial\n    phases",
                "    strategy: random\n    phases",
            ),
            &["pkg/operator.yaml:10:", "plans.deploy.strategy"],
        ),
        row(
            "op-phase-strategy",
            op(
                "        strategy: serial\n        steps",
                "        strategy: sometimes\n        steps",
            ),
            &["pkg/operator.yaml:13:", "strategy"],
        ),
        row(
            "op-phases-map",
            op(
                "    phases:\n      - name: main",
                "    phases: {main: 1}\n    x:\n      - name: main",
            ),
            &["pkg/operator.yaml:11:", "plans.deploy.phases"],
        ),
        row(
            "op-phase-no-name",
            op(
                "      - name: main\n        strategy: serial\n",
                "      - strategy: serial\n",
            ),
            &["operator.yaml", "plan \"deploy\"", "phase without a name"],
        ),
        row(
            "op-steps-scalar",
            op(
                "        steps:\n          - name: app\n            tasks: [app]\n",
                "        steps: many\n",
            ),
            &["pkg/operator.yaml:14:", "steps"],
        ),
        row(
            "op-step-no-name",
            op(
                "          - name: app\n            tasks",
                "          - tasks",
            ),
            &["operator.yaml", "phase \"main\"", "step without a name"],
        ),
        row(
            "op-step-tasks-scalar",
            op("tasks: [app]", "tasks: app"),
            &["pkg/operator.yaml:16:", "tasks"],
        ),
        row(
            "op-step-unknown-task",
            op("tasks: [app]", "tasks: [ghost]"),
            &["operator.yaml", "ghost"],
        ),
        // ---- params.yaml
        prow(
            "params-tab",
            "parameters:\n\t- name: A\n".into(),
            &["pkg/params.yaml:2:"],
        ),
        prow(
            "params-unclosed-flow",
            "parameters: [\n".into(),
            &["pkg/params.yaml:"],
        ),
        prow(
            "params-two-documents",
            "parameters: []\n---\nparameters: []\n".into(),
            &["pkg/params.yaml:3:"],
        ),
        prow(
            "params-duplicate-key",
            params("  - name: A\n    default: x\n    default: y\n"),
            &[
                "pkg/params.yaml:5:",
                "key \"default\" is written twice",
                "first on line 4",
            ],
        ),
        prow(
            "params-api-version",
            "apiVersion: v9\nparameters: []\n".into(),
            &["pkg/params.yaml:1:", "apiVersion"],
        ),
        prow(
            "params-list-root",
            "- name: A\n".into(),
            &["pkg/params.yaml"],
        ),
        prow(
            "params-parameters-map",
            "parameters: {A: 1}\n".into(),
            &["pkg/params.yaml:1:", "parameters"],
        ),
        prow(
            "param-scalar",
            params("  - A\n"),
            &["pkg/params.yaml:3:", "parameters[0]"],
        ),
        prow(
            "param-no-name",
            params("  - default: \"1\"\n"),
            &["pkg/params.yaml:3:", "parameters[0].name"],
        ),
        prow(
            "param-name-list",
            params("  - name: [A]\n"),
            &["pkg/params.yaml:3:", "parameters[0].name"],
        ),
        prow(
            "param-duplicate",
            params("  - name: A\n  - name: A\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-unknown-type",
            params("  - name: A\n    type: float\n"),
            &["pkg/params.yaml:4:", "type"],
        ),
        prow(
            "param-type-list",
            params("  - name: A\n    type: [string]\n"),
            &["pkg/params.yaml:4:", "type"],
        ),
        prow(
            "param-required-text",
            params("  - name: A\n    required: sure\n"),
            &["pkg/params.yaml:4:", "required"],
        ),
        prow(
            "param-immutable-text",
            params("  - name: A\n    default: x\n    immutable: maybe\n"),
            &["pkg/params.yaml:5:", "immutable"],
        ),
        prow(
            "param-advanced-text",
            params("  - name: A\n    default: x\n    advanced: perhaps\n"),
            &["pkg/params.yaml:5:", "advanced"],
        ),
        prow(
            "param-integer-default",
            params("  - name: A\n    type: integer\n    default: ten\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-boolean-default",
            params("  - name: A\n    type: boolean\n    default: sometimes\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-number-default",
            params("  - name: A\n    type: number\n    default: lots\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-array-default",
            params("  - name: A\n    type: array\n    default: {a: 1}\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-map-default",
            params("  - name: A\n    type: map\n    default: [1]\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-enum-scalar",
            params("  - name: A\n    default: x\n    enum: x\n"),
            &["pkg/params.yaml:5:", "enum"],
        ),
        prow(
            "param-enum-default-outside",
            params("  - name: A\n    default: z\n    enum: [x, y]\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-trigger-unknown-plan",
            params("  - name: A\n    default: x\n    trigger: upgrade\n"),
            &["params.yaml", "\"A\"", "upgrade"],
        ),
        prow(
            "param-trigger-list",
            params("  - name: A\n    default: x\n    trigger: [deploy]\n"),
            &["pkg/params.yaml:5:", "trigger"],
        ),
        prow(
            "param-group-undefined",
            params("  - name: A\n    default: x\n    group: g\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "param-description-map",
            params("  - name: A\n    description: {a: b}\n"),
            &["pkg/params.yaml:4:", "description"],
        ),
        prow(
            "param-immutable-no-default",
            params("  - name: A\n    required: false\n    immutable: true\n"),
            &["params.yaml", "\"A\""],
        ),
        prow(
            "groups-scalar",
            format!("groups: none\n{}", params("  - name: A\n")),
            &["pkg/params.yaml:1:", "groups"],
        ),
    ]
}

fn failure(row: &Row) -> Option<String> {
    let mut files = Files::new();
    files.insert("operator.yaml".into(), row.operator.clone().into_bytes());
    if let Some(p) = &row.params {
        files.insert("params.yaml".into(), p.clone().into_bytes());
    }
    files.insert("templates/cm.yaml".into(), TEMPLATE.as_bytes().to_vec());
    match Package::from_files(&files, "pkg/", Origin::Memory) {
        Err(e) => Some(e.to_string()),
        Ok(pkg) => {
            let errors: Vec<String> = kudo_package::verify(&pkg)
                .into_iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| f.to_string())
                .collect();
            (!errors.is_empty()).then(|| errors.join("\n"))
        }
    }
}

#[test]
fn every_broken_package_names_file_and_line_or_field() {
    let rows = rows();
    let mut problems = Vec::new();
    for row in &rows {
        match failure(row) {
            None => problems.push(format!("{}: accepted", row.name)),
            Some(message) => {
                let missing: Vec<&str> = row
                    .expect
                    .iter()
                    .copied()
                    .filter(|e| !message.contains(e))
                    .collect();
                if !missing.is_empty() {
                    problems.push(format!("{}: lacks {missing:?} in: {message}", row.name));
                }
            }
        }
    }
    println!("bad_input: {} broken packages", rows.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
