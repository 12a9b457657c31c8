//! Which container of a pod is in trouble, and how, from the pod's status as the kubelet
//! reports it: the words a failed pod is explained with (`pod failed: init container
//! "init" exited with code 1 (Error)`) instead of the pod's own, usually empty, reason.

use serde_json::Value;

/// A container that failed or cannot start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trouble {
    pub container: String,
    pub init: bool,
    /// `exited with code 1 (Error)`, `is waiting: ImagePullBackOff: ...`.
    pub what: String,
    /// It ran (a log may say why it failed); false for one that never started.
    pub ran: bool,
}

impl std::fmt::Display for Trouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.init {
            "init container"
        } else {
            "container"
        };
        write!(f, "{kind} {:?} {}", self.container, self.what)
    }
}

/// Reasons a container waits for ever without a change to the pod or the cluster.
const STUCK: &[&str] = &[
    "CrashLoopBackOff",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// The first container in trouble: init containers in order (they run one by one, and
/// the first that fails stops the rest), then the others.
pub(crate) fn trouble(pod: &Value) -> Option<Trouble> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .flat_map(|list| {
            let init = *list == "initContainerStatuses";
            pod.pointer(&format!("/status/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |s| (init, s))
        })
        .find_map(|(init, s)| of_status(init, s))
}

fn of_status(init: bool, status: &Value) -> Option<Trouble> {
    let container = status.get("name").and_then(Value::as_str)?.to_string();
    let make = |what: String, ran: bool| {
        Some(Trouble {
            container: container.clone(),
            init,
            what,
            ran,
        })
    };
    if let Some(t) = status.pointer("/state/terminated")
        && let Some(exit) = exited(t)
    {
        return make(exit, true);
    }
    let waiting = status.pointer("/state/waiting")?;
    let reason = waiting.get("reason").and_then(Value::as_str)?;
    if !STUCK.contains(&reason) {
        return None;
    }
    let message = waiting
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty());
    match status.pointer("/lastState/terminated").and_then(exited) {
        // Restarted after failing: the last run is what to explain.
        Some(exit) => make(
            format!("{exit}, and is restarted again and again ({reason})"),
            true,
        ),
        None => make(
            match message {
                Some(m) => format!("is waiting: {reason}: {m}"),
                None => format!("is waiting: {reason}"),
            },
            false,
        ),
    }
}

/// `exited with code 1 (Error): message` for a non-zero exit, `None` for a clean one.
fn exited(terminated: &Value) -> Option<String> {
    let code = terminated.get("exitCode").and_then(Value::as_i64)?;
    if code == 0 {
        return None;
    }
    let mut text = format!("exited with code {code}");
    if let Some(r) = terminated
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        text.push_str(&format!(" ({r})"));
    }
    if let Some(m) = terminated
        .get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        text.push_str(&format!(": {m}"));
    }
    Some(text)
}

/// The last lines of a log, each on its own indented line, for an error message.
pub(crate) fn log_tail(log: &str) -> String {
    const WIDTH: usize = 300;
    log.lines()
        .map(|l| {
            let l = l.trim_end();
            match l.char_indices().nth(WIDTH) {
                Some((cut, _)) => format!("    {}…", &l[..cut]),
                None => format!("    {l}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_failed_init_container_is_named_with_its_exit() {
        let pod = json!({"status": {"phase": "Failed",
            "initContainerStatuses": [
                {"name": "first", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "init", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}],
            "containerStatuses": [{"name": "kudo-pipe-files", "state": {"waiting": {"reason": "PodInitializing"}}}]}});
        let t = trouble(&pod).expect("a container in trouble");
        assert_eq!(
            t.to_string(),
            "init container \"init\" exited with code 1 (Error)"
        );
        assert!(t.ran);
    }

    #[test]
    fn images_that_cannot_be_pulled_and_crash_loops_are_named() {
        let pull = json!({"status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "init", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"nope\""}}}]}});
        let t = trouble(&pull).expect("a container in trouble");
        assert_eq!(
            t.to_string(),
            "init container \"init\" is waiting: ImagePullBackOff: Back-off pulling image \"nope\""
        );
        assert!(!t.ran);
        let looping = json!({"status": {"phase": "Running", "containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "message": "boom"}}}]}});
        assert_eq!(
            trouble(&looping).map(|t| t.to_string()).as_deref(),
            Some(
                "container \"app\" exited with code 2 (Error): boom, and is restarted again and again (CrashLoopBackOff)"
            )
        );
        let fine = json!({"status": {"phase": "Pending", "containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(trouble(&fine), None);
    }

    #[test]
    fn log_lines_are_indented_and_cut() {
        let long = "x".repeat(400);
        let tail = log_tail(&format!("one\ntwo  \n{long}\n"));
        let lines: Vec<&str> = tail.lines().collect();
        assert_eq!(lines[0], "    one");
        assert_eq!(lines[1], "    two");
        assert!(
            lines[2].ends_with('…') && lines[2].len() < 320,
            "{}",
            lines[2]
        );
    }
}
