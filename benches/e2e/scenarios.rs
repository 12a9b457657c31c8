//! The configurations measured: what a user applies, as Terraform text.

use std::path::Path;

use crate::configmaps::Manifests;

/// One configuration and how to apply it.
pub struct Scenario {
    pub name: String,
    pub config: String,
    /// `-parallelism` for the apply (Terraform's default, 10, when `None`).
    pub parallelism: Option<usize>,
    /// Instances the configuration makes, dependencies included.
    pub instances: usize,
    /// The objects it makes as plain manifests, when `kubectl` is timed beside it.
    pub manifests: Option<Manifests>,
    /// A configuration whose apply changes every object the scenario made (a parameter
    /// every template uses): measured as a changing plan and an update apply.
    pub update: Option<String>,
}

pub const HEADER: &str = r#"terraform {
  required_providers {
    kudo = { source = "kudo/kudo" }
  }
}
variable "namespace" { type = string }
"#;

pub fn operator(resource: &str, package: &Path) -> String {
    format!(
        "resource \"kudo_operator\" {resource:?} {{\n  package   = {:?}\n  namespace = var.namespace\n}}\n",
        package.display().to_string()
    )
}

/// (a) zookeeper with its defaults (three nodes).
pub fn zookeeper(fixtures: &Path) -> Scenario {
    let config = format!(
        "{HEADER}provider \"kudo\" {{}}\n{}resource \"kudo_instance\" \"zk\" {{\n  name      = \"zk\"\n  namespace = var.namespace\n  operator  = kudo_operator.zk.id\n}}\n",
        operator("zk", &fixtures.join("zookeeper")),
    );
    Scenario {
        name: "zookeeper".into(),
        config,
        parallelism: None,
        instances: 1,
        manifests: None,
        update: None,
    }
}

/// (b) kafka (its deploy plan runs the TLS Pipe task); the zookeeper it names need not run.
pub fn kafka(fixtures: &Path) -> Scenario {
    let config = format!(
        "{HEADER}provider \"kudo\" {{}}\n{}resource \"kudo_instance\" \"kafka\" {{\n  name      = \"kafka\"\n  namespace = var.namespace\n  operator  = kudo_operator.kafka.id\n  parameters = {{\n    ZOOKEEPER_URI = \"zk-zookeeper-0.zk-hs:2181\"\n  }}\n}}\n",
        operator("kafka", &fixtures.join("kafka")),
    );
    Scenario {
        name: "kafka".into(),
        config,
        parallelism: None,
        instances: 1,
        manifests: None,
        update: None,
    }
}

/// (c) Two instances of KEP-29's `aa`, whose KudoOperator tasks install `bb` and `cc`,
/// and `bb` in turn `ee` and `gg`: three levels, ten instances.
pub fn dependency_tree(repo: &Path) -> Scenario {
    let mut config = format!(
        "{HEADER}provider \"kudo\" {{\n  repository {{\n    name = \"kep29\"\n    url  = {:?}\n  }}\n}}\n{}",
        repo.display().to_string(),
        operator("aa", &repo.join("aa")),
    );
    for i in 1..=2 {
        config.push_str(&format!(
            "resource \"kudo_instance\" \"aa{i}\" {{\n  name      = \"aa{i}\"\n  namespace = var.namespace\n  operator  = kudo_operator.aa.id\n}}\n"
        ));
    }
    Scenario {
        name: "3-level dependency graph (10 instances)".into(),
        config,
        parallelism: None,
        instances: 10,
        manifests: None,
        update: None,
    }
}

/// (d) `count` instances of the quickstart's web application, one operator.
pub fn web_apps(webapp: &Path, count: usize, parallelism: Option<usize>) -> Scenario {
    let config = format!(
        "{HEADER}provider \"kudo\" {{}}\n{}resource \"kudo_instance\" \"web\" {{\n  count     = {count}\n  name      = \"web-${{count.index}}\"\n  namespace = var.namespace\n  operator  = kudo_operator.web.id\n}}\n",
        operator("web", webapp),
    );
    Scenario {
        name: match count {
            1 => "1 web app".to_string(),
            n => format!("{n} web apps"),
        },
        config,
        parallelism,
        instances: count,
        manifests: None,
        update: None,
    }
}

/// `count` of Terraform's built-in `terraform_data`: no provider process at all, so what
/// remains is Terraform's own cost per command and per resource.
pub fn terraform_data(count: usize, parallelism: Option<usize>) -> Scenario {
    Scenario {
        name: format!("{count} terraform_data"),
        config: format!(
            "variable \"namespace\" {{ type = string }}\nresource \"terraform_data\" \"r\" {{\n  count = {count}\n  input = \"${{var.namespace}}-${{count.index}}\"\n}}\n"
        ),
        parallelism,
        instances: count,
        manifests: None,
        update: None,
    }
}

/// `config` with `setting` (one line of HCL) added to its `provider "kudo"` block;
/// unchanged when it has none.
pub fn with_provider_setting(config: &str, setting: &str) -> String {
    config.replace(
        "provider \"kudo\" {",
        &format!("provider \"kudo\" {{\n  {setting}\n"),
    )
}
