//! Health policies: which rules say an applied object is "done".
//!
//! [`HealthPolicy::Kudo`] is KUDO 0.19's behaviour ([`health`]): a handful of kinds wait
//! for their rollout, everything else is done as soon as it exists. [`HealthPolicy::Ready`]
//! is opt-in and stricter: user CEL rules per group/kind first, then kstatus-style rules
//! (the ones sigs.k8s.io/cli-utils and Helm 4 use) for DaemonSets, ReplicaSets, claims and
//! anything that reports conditions. Both are pure functions over the object as the
//! server returns it, so every rule is unit-testable without a cluster.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::health::{Health, health};

/// How the run decides that an applied object is healthy.
#[derive(Debug, Clone, Default)]
pub enum HealthPolicy {
    /// KUDO 0.19's rules, exactly [`health`].
    #[default]
    Kudo,
    /// User CEL rules, then KUDO's and kstatus-style rules (see [`judge`]).
    Ready(ReadyRules),
}

/// A rule that did not compile; the provider shows it as a configuration diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ready rule for {} {kind:?}: {expression:?} is not a valid CEL expression: {message}", group_text(.group))]
pub struct RuleError {
    /// API group of the rule, "" for the core group.
    pub group: String,
    pub kind: String,
    pub expression: String,
    /// What the CEL parser said.
    pub message: String,
}

fn group_text(group: &str) -> String {
    if group.is_empty() {
        "core group kind".to_string()
    } else {
        format!("group {group:?} kind")
    }
}

/// One compiled rule.
#[derive(Clone)]
struct Rule {
    expression: String,
    // Arc: `cel::Program` is not Clone, and policies are cloned by whoever builds them.
    program: Arc<cel::Program>,
    /// The `self.a.b` paths the expression reads, reported when it is false.
    paths: Vec<Vec<String>>,
}

impl fmt::Debug for Rule {
    // The program's AST is noise in logs; the source says everything.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("expression", &self.expression)
            .finish()
    }
}

/// User readiness rules: per (API group, kind) a CEL expression over the object bound as
/// `self`, e.g. `self.status.phase == 'Running'`.
#[derive(Debug, Clone, Default)]
pub struct ReadyRules {
    rules: BTreeMap<(String, String), Rule>,
}

impl ReadyRules {
    /// Compiles `(group, kind, expression)` rules, group "" being the core group. A later
    /// rule for the same group and kind replaces an earlier one, so callers pass general
    /// (provider-level) rules first and specific (resource-level) ones after.
    pub fn new(
        rules: impl IntoIterator<Item = (String, String, String)>,
    ) -> Result<ReadyRules, RuleError> {
        let mut compiled = BTreeMap::new();
        for (group, kind, expression) in rules {
            let program = match cel::Program::compile(&expression) {
                Ok(p) => p,
                Err(e) => {
                    return Err(RuleError {
                        group,
                        kind,
                        message: e.to_string(),
                        expression,
                    });
                }
            };
            let paths = self_paths(&expression);
            compiled.insert(
                (group, kind),
                Rule {
                    expression,
                    program: Arc::new(program),
                    paths,
                },
            );
        }
        Ok(ReadyRules { rules: compiled })
    }

    /// The expression for `group`/`kind`, if there is a rule (for tests: the run only
    /// judges by the rules).
    #[cfg(test)]
    pub fn expression(&self, group: &str, kind: &str) -> Option<&str> {
        self.rules
            .get(&(group.to_string(), kind.to_string()))
            .map(|r| r.expression.as_str())
    }
}

/// Health settings as one level sets them: the provider block, or an instance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthSettings {
    /// `Some(true)` for the ready rules, `Some(false)` for KUDO's; None when this level
    /// leaves it to the outer one.
    pub ready: Option<bool>,
    /// `(group, kind, expression)` rules in order, each checked by [`HealthSettings::rule`].
    pub rules: Vec<(String, String, String)>,
}

impl HealthSettings {
    /// The choices of the `health` setting, the default first.
    pub const VALUES: [&'static str; 2] = ["kudo", "ready"];

    /// A `health` choice: whether it asks for the ready rules; None for another text.
    pub fn parse_mode(text: &str) -> Option<bool> {
        match text {
            "kudo" => Some(false),
            "ready" => Some(true),
            _ => None,
        }
    }

    /// A rule as written, trimmed and compiled once so that a mistake is reported
    /// where it was written rather than when an object is judged.
    pub fn rule(
        group: &str,
        kind: &str,
        expression: &str,
    ) -> Result<(String, String, String), RuleError> {
        let rule = (
            group.trim().to_string(),
            kind.trim().to_string(),
            expression.to_string(),
        );
        ReadyRules::new([rule.clone()])?;
        Ok(rule)
    }

    fn ready_over(&self, outer: &HealthSettings) -> bool {
        self.ready.or(outer.ready).unwrap_or(false)
    }

    /// These settings over `outer`'s (an instance's over the provider's): the inner
    /// `health` when set, the outer rules followed by the inner ones (a later rule for
    /// the same kind replaces an earlier one).
    pub fn over(&self, outer: &HealthSettings) -> HealthSettings {
        HealthSettings {
            ready: self.ready.or(outer.ready),
            rules: outer.rules.iter().chain(&self.rules).cloned().collect(),
        }
    }

    /// The policy these settings ask for, as the run judges by it: the caller hands the
    /// settings ([`HealthSettings::over`] the outer ones), the rules are compiled here.
    pub(crate) fn policy(&self) -> HealthPolicy {
        if !self.ready.unwrap_or(false) {
            return HealthPolicy::Kudo;
        }
        // Every rule compiled when it was read (`rule`).
        match ReadyRules::new(self.rules.iter().cloned()) {
            Ok(rules) => HealthPolicy::Ready(rules),
            Err(e) => {
                tracing::warn!(error = %e, "health rule no longer compiles; using the built-in ready rules");
                HealthPolicy::Ready(ReadyRules::default())
            }
        }
    }

    /// Whether these settings' rules go unused: KUDO's rules are in effect, and they
    /// take no rules.
    pub fn rules_unused(&self, outer: &HealthSettings) -> bool {
        !self.ready_over(outer) && !self.rules.is_empty()
    }
}

/// Judges `obj` under `policy`.
///
/// `Kudo` is [`health`]. `Ready`:
/// 1. a user rule for the object's group/kind decides alone: true is healthy; false, a
///    non-bool result or an evaluation error (a field that is not there yet) is
///    progressing, with the rule and the values it read in the message;
/// 2. otherwise KUDO's rule for the kinds it knows (rollouts, jobs, pods, ...);
/// 3. then for every object: a controller that has not observed the latest generation
///    is progressing;
/// 4. DaemonSets, ReplicaSets and PersistentVolumeClaims by their status counters/phase
///    (note a claim of a `WaitForFirstConsumer` class only binds once a pod uses it);
/// 5. any other kind with `status.conditions`: `Stalled` or `Reconciling` true is
///    progressing, then `Ready` must be true, or else `Available` must be true.
///
/// Nothing under `Ready` is fatal beyond what KUDO's own rules make fatal: a stalled
/// object may still recover, and the run's timeout bounds the wait.
pub fn judge(obj: &Value, policy: &HealthPolicy) -> Health {
    match policy {
        HealthPolicy::Kudo => health(obj),
        HealthPolicy::Ready(rules) => ready(obj, rules),
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

fn group_kind(obj: &Value) -> (&str, &str) {
    let api_version = text(obj, "/apiVersion").unwrap_or_default();
    let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
    (group, text(obj, "/kind").unwrap_or_default())
}

/// The kinds [`health`] has a rule for; their verdict is final after the generation check
/// (e.g. a Succeeded pod is done although its Ready condition is False).
fn kudo_knows(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", "Deployment")
            | ("apps", "StatefulSet")
            | ("batch", "Job")
            | ("", "Pod")
            | ("", "Namespace")
            | ("", "Service")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("kudo.dev", "Instance")
    )
}

fn ready(obj: &Value, rules: &ReadyRules) -> Health {
    let (group, kind) = group_kind(obj);
    if let Some(rule) = rules.rules.get(&(group.to_string(), kind.to_string())) {
        return evaluate(obj, rule);
    }
    let kudo = health(obj);
    if kudo != Health::Healthy {
        return kudo;
    }
    if let Some(observed) = int(obj, "/status/observedGeneration") {
        let generation = int(obj, "/metadata/generation").unwrap_or(0);
        if observed < generation {
            return Health::Progressing(format!(
                "waiting for the controller to observe generation {generation} (observed {observed})"
            ));
        }
    }
    if kudo_knows(group, kind) {
        return Health::Healthy;
    }
    match (group, kind) {
        ("apps", "DaemonSet") => daemonset(obj),
        ("apps", "ReplicaSet") => replicaset(obj),
        ("", "PersistentVolumeClaim") => claim(obj),
        _ => conditions(obj),
    }
}

fn daemonset(obj: &Value) -> Health {
    // Before the controller's first status there is nothing to count against.
    if int(obj, "/status/observedGeneration").is_none() {
        return Health::Progressing("waiting for the daemonset controller to report".into());
    }
    let Some(desired) = int(obj, "/status/desiredNumberScheduled") else {
        return Health::Progressing("daemonset has no desiredNumberScheduled yet".into());
    };
    let counters = [
        ("currentNumberScheduled", "scheduled"),
        ("updatedNumberScheduled", "updated"),
        ("numberAvailable", "available"),
        ("numberReady", "ready"),
    ];
    for (field, what) in counters {
        let n = int(obj, &format!("/status/{field}")).unwrap_or(0);
        if n < desired {
            let subject = if what == "scheduled" {
                "pods"
            } else {
                "scheduled pods"
            };
            return Health::Progressing(format!("{n} of {desired} {subject} are {what}"));
        }
    }
    Health::Healthy
}

fn replicaset(obj: &Value) -> Health {
    let want = int(obj, "/spec/replicas").unwrap_or(1);
    let available = int(obj, "/status/availableReplicas").unwrap_or(0);
    if available < want {
        Health::Progressing(format!("{available} of {want} replicas are available"))
    } else {
        Health::Healthy
    }
}

fn claim(obj: &Value) -> Health {
    match text(obj, "/status/phase") {
        Some("Bound") => Health::Healthy,
        Some(phase) => Health::Progressing(format!("persistent volume claim is {phase}")),
        None => Health::Progressing("persistent volume claim has no phase yet".into()),
    }
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn status_of(c: &Value) -> &str {
    c.get("status").and_then(Value::as_str).unwrap_or("Unknown")
}

/// ` (reason: message)`, or as much of it as the condition has.
fn explain(c: &Value) -> String {
    let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
    let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
    match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!(" ({reason}: {message})"),
        (false, true) => format!(" ({reason})"),
        (true, false) => format!(" ({message})"),
        (true, true) => String::new(),
    }
}

fn conditions(obj: &Value) -> Health {
    if let Some(c) = condition(obj, "Stalled")
        && status_of(c) == "True"
    {
        return Health::Progressing(format!("stalled{}", explain(c)));
    }
    if let Some(c) = condition(obj, "Reconciling")
        && status_of(c) == "True"
    {
        return Health::Progressing(format!("reconciling{}", explain(c)));
    }
    for kind in ["Ready", "Available"] {
        if let Some(c) = condition(obj, kind) {
            let status = status_of(c);
            return if status == "True" {
                Health::Healthy
            } else {
                Health::Progressing(format!("condition {kind} is {status}{}", explain(c)))
            };
        }
    }
    Health::Healthy
}

fn evaluate(obj: &Value, rule: &Rule) -> Health {
    let mut context = cel::Context::default();
    if let Err(e) = context.add_variable("self", Cel(obj)) {
        return Health::Progressing(format!(
            "rule {:?} could not read the object: {e}",
            rule.expression
        ));
    }
    match rule.program.execute(&context) {
        Ok(cel::Value::Bool(true)) => Health::Healthy,
        Ok(cel::Value::Bool(false)) => Health::Progressing(format!(
            "rule {:?} is false{}",
            rule.expression,
            values_read(obj, &rule.paths)
        )),
        Ok(other) => Health::Progressing(format!(
            "rule {:?} must return a bool, it returned {other:?}",
            rule.expression
        )),
        // Usually a field the controller has not written yet: wait, and say which.
        Err(e) => Health::Progressing(format!(
            "rule {:?} could not be evaluated: {e}{}",
            rule.expression,
            values_read(obj, &rule.paths)
        )),
    }
}

/// `obj` for the CEL interpreter. serde_json hands out non-negative integers as u64,
/// which the interpreter makes CEL `uint`s, and `self.status.readyReplicas + 1` (a uint
/// plus an int) then fails; Kubernetes' CEL types JSON integers as `int`, so this does
/// too, keeping `uint` only for values above i64's range.
struct Cel<'a>(&'a Value);

impl serde::Serialize for Cel<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    s.serialize_i64(i)
                } else if let Some(u) = n.as_u64() {
                    s.serialize_u64(u)
                } else {
                    s.serialize_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Cel(item))?;
                }
                seq.end()
            }
            Value::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, &Cel(v))?;
                }
                map.end()
            }
            other => other.serialize(s),
        }
    }
}

/// Longest JSON value printed in a message; conditions lists can be long.
const VALUE_LIMIT: usize = 200;

/// ` (self.a.b = <json>, ...)` for the paths a rule reads.
fn values_read(obj: &Value, paths: &[Vec<String>]) -> String {
    if paths.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = paths
        .iter()
        .map(|path| {
            let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
            let value = match obj.pointer(&pointer) {
                Some(v) => {
                    let mut s = v.to_string();
                    if s.len() > VALUE_LIMIT {
                        let cut = (0..=VALUE_LIMIT)
                            .rev()
                            .find(|i| s.is_char_boundary(*i))
                            .unwrap_or(0);
                        s.truncate(cut);
                        s.push('…');
                    }
                    s
                }
                None => "<absent>".to_string(),
            };
            format!("self.{} = {value}", path.join("."))
        })
        .collect();
    format!(" ({})", shown.join(", "))
}

/// The `self.a.b.c` field paths in a CEL expression, in order of first appearance.
/// A scan of the text rather than the AST: string literals are skipped, and a trailing
/// segment followed by `(` is a method (`.exists(...)`), not a field.
fn self_paths(expression: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = expression.chars().collect();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            // Skip the literal, honouring backslash escapes.
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        let starts_word = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == '.');
        if starts_word && chars[i..].starts_with(&['s', 'e', 'l', 'f']) {
            let mut j = i + 4;
            if j < chars.len() && is_ident(chars[j]) {
                // `selfish`: another identifier.
                i = j;
                continue;
            }
            let mut path = Vec::new();
            while j + 1 < chars.len()
                && chars[j] == '.'
                && (chars[j + 1].is_ascii_alphabetic() || chars[j + 1] == '_')
            {
                let start = j + 1;
                let mut end = start;
                while end < chars.len() && is_ident(chars[end]) {
                    end += 1;
                }
                path.push(chars[start..end].iter().collect::<String>());
                j = end;
            }
            let call = chars[j..].iter().find(|c| !c.is_whitespace()) == Some(&'(');
            if call {
                path.pop();
            }
            if !path.is_empty() && !paths.contains(&path) {
                paths.push(path);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ready_policy(rules: &[(&str, &str, &str)]) -> HealthPolicy {
        let rules = rules
            .iter()
            .map(|(g, k, e)| (g.to_string(), k.to_string(), e.to_string()));
        match ReadyRules::new(rules) {
            Ok(r) => HealthPolicy::Ready(r),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn an_instance_health_wins_and_its_rules_come_last() {
        let rule = |kind: &str, e: &str| {
            HealthSettings::rule(" apps ", kind, e).unwrap_or_else(|e| panic!("{e}"))
        };
        let provider = HealthSettings {
            ready: Some(true),
            rules: vec![rule("DaemonSet", "false")],
        };
        let instance = HealthSettings {
            ready: None,
            rules: vec![rule("DaemonSet", "true")],
        };
        match instance.over(&provider).policy() {
            HealthPolicy::Ready(rules) => {
                assert_eq!(rules.expression("apps", "DaemonSet"), Some("true"))
            }
            HealthPolicy::Kudo => panic!("the provider's `ready` applies"),
        }
        assert!(!instance.rules_unused(&provider));
        let kudo = HealthSettings {
            ready: HealthSettings::parse_mode("kudo"),
            ..instance
        };
        assert!(matches!(kudo.over(&provider).policy(), HealthPolicy::Kudo));
        assert!(kudo.rules_unused(&provider));
        assert_eq!(HealthSettings::parse_mode("fast"), None);
        let bad = HealthSettings::rule("", "Pod", "self.status.phase ==").expect_err("not CEL");
        assert_eq!(bad.kind, "Pod");
    }

    fn plain() -> HealthPolicy {
        HealthPolicy::Ready(ReadyRules::default())
    }

    fn progressing(h: Health) -> String {
        match h {
            Health::Progressing(m) => m,
            other => panic!("expected Progressing, got {other:?}"),
        }
    }

    #[test]
    fn policy_is_sync_and_send() {
        // Runs hold `&HealthPolicy` across awaits in Send futures.
        fn assert<T: Send + Sync>() {}
        assert::<HealthPolicy>();
    }

    #[test]
    fn kudo_policy_is_health_exactly() {
        let objects = [
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "status": {}}),
            json!({"apiVersion": "example.com/v1", "kind": "Thing",
                   "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending"}}),
        ];
        assert!(matches!(HealthPolicy::default(), HealthPolicy::Kudo));
        for o in &objects {
            assert_eq!(judge(o, &HealthPolicy::Kudo), health(o));
        }
    }

    fn pod(phase: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": phase}})
    }

    #[test]
    fn cel_rule_true_and_false() {
        let p = ready_policy(&[("", "Pod", "self.status.phase == 'Succeeded'")]);
        assert_eq!(judge(&pod("Succeeded"), &p), Health::Healthy);
        let m = progressing(judge(&pod("Pending"), &p));
        assert_eq!(
            m,
            r#"rule "self.status.phase == 'Succeeded'" is false (self.status.phase = "Pending")"#
        );
        // The rule wins over KUDO's pod rule: a Running pod without Ready is fine here.
        let p = ready_policy(&[("", "Pod", "self.status.phase == 'Running'")]);
        assert_eq!(judge(&pod("Running"), &p), Health::Healthy);
        // ...and KUDO's Fatal for a failed pod does not apply either.
        assert!(matches!(judge(&pod("Failed"), &p), Health::Progressing(_)));
    }

    #[test]
    fn cel_rule_conditions_macro() {
        let p = ready_policy(&[(
            "example.com",
            "Database",
            "self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        )]);
        let db = |status: &str| {
            json!({"apiVersion": "example.com/v1", "kind": "Database",
                   "status": {"conditions": [{"type": "Ready", "status": status}]}})
        };
        assert_eq!(judge(&db("True"), &p), Health::Healthy);
        let m = progressing(judge(&db("False"), &p));
        assert!(m.contains("is false"), "{m}");
        assert!(
            m.contains(r#"self.status.conditions = [{"status":"False","type":"Ready"}]"#),
            "{m}"
        );
        // Same kind in another group: no rule, so the generic conditions rule applies.
        let other = json!({"apiVersion": "other.io/v1", "kind": "Database",
                           "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        assert!(progressing(judge(&other, &p)).contains("condition Ready is False"));
    }

    #[test]
    fn cel_rule_evaluation_error_waits() {
        let p = ready_policy(&[("", "Pod", "self.status.phase == 'Running'")]);
        let m = progressing(judge(&json!({"apiVersion": "v1", "kind": "Pod"}), &p));
        assert!(m.contains("could not be evaluated"), "{m}");
        assert!(m.contains("self.status.phase = <absent>"), "{m}");
    }

    #[test]
    fn cel_integers_are_ints() {
        let obj = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"min": 2},
                         "status": {"numberReady": 3, "ratio": 1.5}});
        let p = ready_policy(&[(
            "apps",
            "DaemonSet",
            "self.status.numberReady + 1 == 4 && self.status.numberReady > self.spec.min && self.status.ratio > 1",
        )]);
        assert_eq!(judge(&obj, &p), Health::Healthy);
    }

    #[test]
    fn cel_rule_must_return_bool() {
        let p = ready_policy(&[("", "Pod", "self.status.phase")]);
        let m = progressing(judge(&pod("Running"), &p));
        assert!(m.contains("must return a bool"), "{m}");
    }

    #[test]
    fn syntax_error_names_the_rule() {
        let e = match ReadyRules::new([(
            "apps".to_string(),
            "DaemonSet".to_string(),
            "self.status.numberReady ==".to_string(),
        )]) {
            Err(e) => e,
            Ok(r) => panic!("compiled: {r:?}"),
        };
        assert_eq!(e.group, "apps");
        assert_eq!(e.kind, "DaemonSet");
        let text = e.to_string();
        assert!(text.contains(r#"group "apps" kind "DaemonSet""#), "{text}");
        assert!(text.contains("self.status.numberReady =="), "{text}");
        assert!(!e.message.is_empty());
        let core = ReadyRules::new([("".into(), "Pod".into(), "(".into())]);
        assert!(matches!(core, Err(e) if e.to_string().contains("core group kind \"Pod\"")));
    }

    #[test]
    fn later_rule_replaces_earlier() {
        let r = ReadyRules::new([
            ("".into(), "Pod".into(), "false".into()),
            ("".into(), "Pod".into(), "true".into()),
        ]);
        let Ok(r) = r else { panic!("did not compile") };
        assert_eq!(r.expression("", "Pod"), Some("true"));
        assert_eq!(
            judge(&pod("Pending"), &HealthPolicy::Ready(r)),
            Health::Healthy
        );
    }

    #[test]
    fn paths_read_by_an_expression() {
        let p = self_paths(
            "self.status.phase == 'self.not.this' && has(self.spec.x) && self.status.conditions.exists(c, c.self_x == 1) && selfish.y",
        );
        let want: Vec<Vec<String>> = vec![
            vec!["status".into(), "phase".into()],
            vec!["spec".into(), "x".into()],
            vec!["status".into(), "conditions".into()],
        ];
        assert_eq!(p, want);
        assert!(self_paths("self == null").is_empty());
    }

    #[test]
    fn known_kinds_use_kudo_rules_then_generation() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": 1},
                       "spec": {"replicas": 2},
                       "status": {"observedGeneration": 1, "updatedReplicas": 1, "replicas": 2}});
        assert!(progressing(judge(&d, &plain())).contains("1 of 2 new"));
        let failed = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Failed"}});
        assert!(matches!(judge(&failed, &plain()), Health::Fatal(_)));
        // A finished pod is done although its Ready condition is False.
        let done = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Succeeded",
                          "conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted"}]}});
        assert_eq!(judge(&done, &plain()), Health::Healthy);
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generation": 3},
                         "status": {"phase": "Succeeded", "observedGeneration": 2}});
        assert_eq!(
            progressing(judge(&pod, &plain())),
            "waiting for the controller to observe generation 3 (observed 2)"
        );
    }

    #[test]
    fn observed_generation_for_any_kind() {
        let thing = |observed: i64| {
            json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"generation": 4},
                   "status": {"observedGeneration": observed}})
        };
        assert!(progressing(judge(&thing(3), &plain())).contains("generation 4 (observed 3)"));
        assert_eq!(judge(&thing(4), &plain()), Health::Healthy);
    }

    fn ds(status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 2},
               "status": status})
    }

    #[test]
    fn daemonset_rollout() {
        assert!(matches!(
            judge(&ds(json!({})), &plain()),
            Health::Progressing(_)
        ));
        let behind = ds(json!({"observedGeneration": 1, "desiredNumberScheduled": 4}));
        assert!(progressing(judge(&behind, &plain())).contains("observe generation 2"));
        let s = ds(json!({"observedGeneration": 2, "desiredNumberScheduled": 4,
                          "currentNumberScheduled": 4, "updatedNumberScheduled": 3,
                          "numberAvailable": 3, "numberReady": 3}));
        assert_eq!(
            progressing(judge(&s, &plain())),
            "3 of 4 scheduled pods are updated"
        );
        let s = ds(json!({"observedGeneration": 2, "desiredNumberScheduled": 4,
                          "currentNumberScheduled": 4, "updatedNumberScheduled": 4,
                          "numberAvailable": 2, "numberReady": 4}));
        assert_eq!(
            progressing(judge(&s, &plain())),
            "2 of 4 scheduled pods are available"
        );
        let s = ds(json!({"observedGeneration": 2, "desiredNumberScheduled": 4,
                          "currentNumberScheduled": 4, "updatedNumberScheduled": 4,
                          "numberAvailable": 4, "numberReady": 4}));
        assert_eq!(judge(&s, &plain()), Health::Healthy);
        // KUDO's policy keeps calling any DaemonSet healthy.
        assert_eq!(judge(&ds(json!({})), &HealthPolicy::Kudo), Health::Healthy);
    }

    #[test]
    fn replicaset_and_claim() {
        let rs = |want: i64, available: i64| {
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"replicas": want},
                   "status": {"availableReplicas": available}})
        };
        assert_eq!(
            progressing(judge(&rs(3, 1), &plain())),
            "1 of 3 replicas are available"
        );
        assert_eq!(judge(&rs(3, 3), &plain()), Health::Healthy);
        let pvc = |status: Value| json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": status});
        assert!(
            progressing(judge(&pvc(json!({"phase": "Pending"})), &plain())).contains("Pending")
        );
        assert!(matches!(
            judge(&pvc(json!({})), &plain()),
            Health::Progressing(_)
        ));
        assert_eq!(
            judge(&pvc(json!({"phase": "Bound"})), &plain()),
            Health::Healthy
        );
    }

    fn with_conditions(conditions: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Thing",
               "status": {"conditions": conditions}})
    }

    #[test]
    fn ready_and_available_conditions() {
        let c = with_conditions(json!([{"type": "Ready", "status": "False",
                                        "reason": "Waiting", "message": "db not up"}]));
        assert_eq!(
            progressing(judge(&c, &plain())),
            "condition Ready is False (Waiting: db not up)"
        );
        let c = with_conditions(json!([{"type": "Ready", "status": "Unknown"}]));
        assert_eq!(
            progressing(judge(&c, &plain())),
            "condition Ready is Unknown"
        );
        let c = with_conditions(json!([{"type": "Ready", "status": "True"},
                                       {"type": "Available", "status": "False"}]));
        assert_eq!(judge(&c, &plain()), Health::Healthy);
        let c = with_conditions(
            json!([{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]),
        );
        assert!(progressing(judge(&c, &plain())).contains("Available is False"));
        let c = with_conditions(json!([{"type": "Available", "status": "True"}]));
        assert_eq!(judge(&c, &plain()), Health::Healthy);
        // Conditions of other types only: nothing to wait for.
        let c = with_conditions(json!([{"type": "Synced", "status": "False"}]));
        assert_eq!(judge(&c, &plain()), Health::Healthy);
        let none = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(judge(&none, &plain()), Health::Healthy);
    }

    #[test]
    fn reconciling_and_stalled() {
        let c = with_conditions(json!([{"type": "Ready", "status": "True"},
                                       {"type": "Reconciling", "status": "True", "reason": "Progressing"}]));
        assert_eq!(
            progressing(judge(&c, &plain())),
            "reconciling (Progressing)"
        );
        let c = with_conditions(json!([{"type": "Ready", "status": "False"},
                                       {"type": "Stalled", "status": "True", "reason": "BadSpec",
                                        "message": "replicas must be positive"}]));
        assert_eq!(
            progressing(judge(&c, &plain())),
            "stalled (BadSpec: replicas must be positive)"
        );
        let c = with_conditions(json!([{"type": "Ready", "status": "True"},
                                       {"type": "Stalled", "status": "False"},
                                       {"type": "Reconciling", "status": "False"}]));
        assert_eq!(judge(&c, &plain()), Health::Healthy);
    }
}
