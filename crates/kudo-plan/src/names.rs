//! Names the walk gives to things that are not in the templates: pipe pods and their
//! artifacts, dependency instances and their render seeds.

use crate::Location;

/// Longest Kubernetes object name (DNS-1123 subdomain).
const MAX_OBJECT_NAME: usize = 253;

/// KUDO's pipe name: `<instance>.<plan>.<phase>.<step>.<task>.<suffix>`, each part lower
/// case with every character outside `[a-z0-9]` removed (KUDO 0.19,
/// pkg/engine/task/task_pipe.go `name`). Cut to the longest object name, where KUDO's
/// would have been refused by the API server.
fn pipe_name(instance: &str, loc: &Location, task: &str, suffix: &str) -> String {
    let parts = [
        instance,
        loc.plan.as_str(),
        loc.phase.as_str(),
        loc.step.as_str(),
        task,
        suffix,
    ];
    let mut name = parts
        .iter()
        .map(|p| {
            p.to_lowercase()
                .chars()
                .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(".");
    name.truncate(MAX_OBJECT_NAME);
    name.trim_end_matches('.').to_string()
}

/// The Secret or ConfigMap of pipe file `key` (KUDO's `PipeArtifactName`), which
/// templates read as `.Pipes.<key>`.
pub fn pipe_artifact_name(instance: &str, loc: &Location, task: &str, key: &str) -> String {
    pipe_name(instance, loc, task, key)
}

/// The pod of a Pipe task (KUDO's `PipePodName`).
pub fn pipe_pod_name(instance: &str, loc: &Location, task: &str) -> String {
    pipe_name(instance, loc, task, "pipepod")
}

/// A dependency instance: the task's `instanceName` (surrounding blanks ignored), else
/// `<parent instance>-<child operator name>`. The rule lives in kudo-resolve, which
/// checks names while it resolves; this is the one entry point everyone else uses.
pub fn child_instance_name(parent: &str, instance_name: Option<&str>, operator: &str) -> String {
    kudo_resolve::naming::child_instance_name(parent, operator, instance_name)
}

/// The render seed of a dependency instance: derived from its parent's, so it stays as
/// stable and as secret as the parent's (`None` when the parent has none).
pub fn child_seed(parent_seed: Option<&str>, child_instance: &str) -> Option<String> {
    parent_seed.map(|s| format!("{s}/{child_instance}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc() -> Location {
        Location {
            plan: "deploy".into(),
            phase: "Main".into(),
            step: "gen_files".into(),
        }
    }

    #[test]
    fn pipe_names_follow_kudo() {
        assert_eq!(
            pipe_artifact_name("my-inst", &loc(), "genWWW", "indexHtml"),
            "myinst.deploy.main.genfiles.genwww.indexhtml"
        );
        assert_eq!(
            pipe_pod_name("cow", &loc(), "genwww"),
            "cow.deploy.main.genfiles.genwww.pipepod"
        );
        let long = "a".repeat(300);
        assert!(pipe_artifact_name(&long, &loc(), "t", "k").len() <= 253);
    }

    #[test]
    fn child_names_and_seeds() {
        assert_eq!(child_instance_name("p", None, "zk"), "p-zk");
        assert_eq!(child_instance_name("p", Some(" kafka "), "zk"), "kafka");
        assert_eq!(child_instance_name("p", Some(""), "zk"), "p-zk");
        assert_eq!(child_seed(Some("s"), "p-zk").as_deref(), Some("s/p-zk"));
        assert_eq!(child_seed(None, "p-zk"), None);
    }
}
