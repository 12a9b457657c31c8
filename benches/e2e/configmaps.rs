//! The big-instance scenario: one instance of a generated package whose deploy plan
//! renders N ConfigMaps, written as a KUDO author would (one template per object up to
//! 5,000 objects, a `range` over a thousand per template above, one Apply task listing them all, a deploy plan of one phase and one step). The same
//! objects are also written as plain manifests, for `kubectl` to apply side by side.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::scenarios::{HEADER, Scenario, operator};

/// The instance's name: the ConfigMaps are `bulk-cm-00001` and on.
const INSTANCE: &str = "bulk";
/// GREETING's default, which the plain manifests spell out.
const GREETING: &str = "hello";

/// The same objects as plain YAML, one file each, for `kubectl apply -f <dir>`.
pub struct Manifests {
    pub dir: PathBuf,
    pub count: usize,
}

/// Writes the package and the plain manifests of `count` ConfigMaps under `root`, and
/// returns the scenario installing the package.
pub fn scenario(root: &Path, count: usize) -> Scenario {
    let package = root.join(format!("configmaps{count}-package"));
    write_package(&package, count);
    let plain = root.join(format!("configmaps{count}-manifests"));
    write_manifests(&plain, count);
    let config = |parameters: &str| {
        format!(
            "{HEADER}provider \"kudo\" {{}}\n{}resource \"kudo_instance\" {INSTANCE:?} {{\n  name      = {INSTANCE:?}\n  namespace = var.namespace\n  operator  = kudo_operator.configmaps.id\n{parameters}}}\n",
            operator("configmaps", &package),
        )
    };
    Scenario {
        name: format!("1 instance, {count} ConfigMaps"),
        config: config(""),
        parallelism: None,
        instances: 1,
        manifests: Some(Manifests { dir: plain, count }),
        // Every ConfigMap writes GREETING, so a new value updates all of them.
        update: Some(config(&format!(
            "  parameters = {{ GREETING = \"{GREETING}, again\" }}\n"
        ))),
    }
}

/// `cm-00001` and on, wide enough that the files sort in order for any `count`.
fn object_names(count: usize) -> impl Iterator<Item = String> {
    let width = name_width(count);
    (1..=count).map(move |i| format!("cm-{i:0width$}"))
}

fn name_width(count: usize) -> usize {
    count.to_string().len().max(5)
}

/// One ConfigMap; `instance` and `greeting` are template expressions in the package and
/// their values in the plain manifests, so both say the same.
/// Neither names a namespace: KUDO puts the objects in the instance's, `kubectl -n` in its.
fn configmap(instance: &str, object: &str, greeting: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {instance}-{object}\ndata:\n  object: \"{object}\"\n  greeting: \"{greeting}\"\n  purpose: \"benchmark: one of many objects of one instance\"\n"
    )
}

/// Up to this many objects, one template each, as most authors write them. Above, the
/// package (which one OperatorVersion object must hold, under about 1.5 MiB) would be
/// too large: a template per thousand objects renders them with `range`, as an author
/// of a big package would.
const ONE_FILE_EACH_UP_TO: usize = 5000;
const OBJECTS_PER_RANGE: usize = 1000;

fn write_package(dir: &Path, count: usize) {
    let templates = dir.join("templates");
    std::fs::create_dir_all(&templates).expect("package folder");
    let mut resources = String::new();
    if count <= ONE_FILE_EACH_UP_TO {
        for object in object_names(count) {
            std::fs::write(
                templates.join(format!("{object}.yaml")),
                configmap("{{ .Name }}", &object, "{{ .Params.GREETING }}"),
            )
            .expect("template");
            writeln!(resources, "        - {object}.yaml").expect("string");
        }
    } else {
        let width = name_width(count);
        for first in (1..=count).step_by(OBJECTS_PER_RANGE) {
            let n = OBJECTS_PER_RANGE.min(count + 1 - first);
            let object = format!("cm-{{{{ printf \"%0{width}d\" (add $n {first}) }}}}");
            let body = configmap("{{ $.Name }}", &object, "{{ $.Params.GREETING }}");
            let file = format!("range-{first:0width$}.yaml");
            std::fs::write(
                templates.join(&file),
                format!("{{{{- range $n := until {n} }}}}\n---\n{body}{{{{- end }}}}\n"),
            )
            .expect("template");
            writeln!(resources, "        - {file}").expect("string");
        }
    }
    let operator = format!(
        r#"apiVersion: kudo.dev/v1beta1
name: "configmaps{count}"
operatorVersion: "0.1.0"
kudoVersion: 0.10.0
kubernetesVersion: 1.16.0
appVersion: "1.0.0"
maintainers:
  - name: terraform-provider-kudo benchmark
    email: bench@example.invalid
tasks:
  - name: configmaps
    kind: Apply
    spec:
      resources:
{resources}plans:
  deploy:
    strategy: serial
    phases:
      - name: deploy
        strategy: serial
        steps:
          - name: configmaps
            tasks:
              - configmaps
"#
    );
    std::fs::write(dir.join("operator.yaml"), operator).expect("operator.yaml");
    std::fs::write(
        dir.join("params.yaml"),
        format!(
            "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GREETING\n    description: \"Written into every ConfigMap\"\n    default: \"{GREETING}\"\n"
        ),
    )
    .expect("params.yaml");
}

/// The plain manifests' objects as JSON, for the direct server-side apply beside the
/// Terraform runs (see [`crate::direct`]): the same names and data as the files.
pub fn objects(count: usize) -> Vec<serde_json::Value> {
    object_names(count)
        .map(|object| {
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("{INSTANCE}-{object}")},
                "data": {
                    "object": object,
                    "greeting": GREETING,
                    "purpose": "benchmark: one of many objects of one instance",
                },
            })
        })
        .collect()
}

fn write_manifests(dir: &Path, count: usize) {
    std::fs::create_dir_all(dir).expect("manifest folder");
    for object in object_names(count) {
        std::fs::write(
            dir.join(format!("{object}.yaml")),
            configmap(INSTANCE, &object, GREETING),
        )
        .expect("manifest");
    }
}
