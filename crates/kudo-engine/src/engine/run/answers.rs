//! What the API server answered to a run's writes: the uid and fingerprint each object
//! has after the run, so that the state can record them without reading every object
//! back (a tree's objects would cost one request each).
//!
//! An answer stands for the object only when it is the run's one write of it: an
//! object written twice (two tasks, possibly concurrent) or deleted is read back, as
//! is everything the run did not write (objects of instances left alone, cluster-scoped
//! objects whose users annotation is written after them).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::cluster::ObjectRef;
use crate::engine::observe::applied_fields_fingerprint;

/// An object's uid and fingerprint as the server answered the run's write of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredWrite {
    pub uid: Option<String>,
    pub fingerprint: String,
}

impl AnsweredWrite {
    /// The uid and fingerprint of `live`, as answered or as read.
    pub(crate) fn of(live: &Value) -> AnsweredWrite {
        AnsweredWrite {
            uid: live
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            fingerprint: applied_fields_fingerprint(live).unwrap_or_default(),
        }
    }
}

/// Answers by [`qualified_label`]; `None` for an object whose last answer is not known
/// to be the newest (written more than once, or deleted).
pub type WriteAnswers = BTreeMap<String, Option<AnsweredWrite>>;

/// A run's answers as its writes come in, from concurrent tasks.
#[derive(Debug, Default)]
pub(super) struct AnswerLog(Mutex<WriteAnswers>);

impl AnswerLog {
    /// `live`, the server's answer to writing `r`.
    pub(super) fn written(&self, r: &ObjectRef, live: &Value) {
        self.note(r.qualified_label(), Some(AnsweredWrite::of(live)));
    }

    /// `r` was deleted: whatever was answered before no longer stands.
    pub(super) fn deleted(&self, r: &ObjectRef) {
        self.note(r.qualified_label(), None);
    }

    /// What a dependency instance's run was answered, taken into this run's.
    pub(super) fn merge(&self, below: WriteAnswers) {
        for (key, answer) in below {
            self.note(key, answer);
        }
    }

    /// The answers so far, for the run's outcome (the log is left empty).
    pub(super) fn take(&self) -> WriteAnswers {
        self.0
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }

    fn note(&self, key: String, answer: Option<AnsweredWrite>) {
        if let Ok(mut answers) = self.0.lock() {
            // A second write: which answer is the newer is not known here.
            let answer = match answers.contains_key(&key) {
                true => None,
                false => answer,
            };
            answers.insert(key, answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmap(name: &str, uid: &str) -> (ObjectRef, Value) {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": uid, "managedFields": [
                {"manager": crate::cluster::FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
                 "fieldsV1": {"f:data": {}}}]}});
        (ObjectRef::from_object(&obj).expect("a ref"), obj)
    }

    #[test]
    fn only_an_objects_one_write_stands_for_it() {
        let log = AnswerLog::default();
        let (once, once_live) = configmap("once", "u-1");
        let (twice, twice_live) = configmap("twice", "u-2");
        let (gone, gone_live) = configmap("gone", "u-3");
        log.written(&once, &once_live);
        log.written(&twice, &twice_live);
        log.merge(WriteAnswers::from([(
            twice.qualified_label(),
            Some(AnsweredWrite::of(&twice_live)),
        )]));
        log.written(&gone, &gone_live);
        log.deleted(&gone);
        let answers = log.take();
        let answered = answers[&once.qualified_label()].as_ref().expect("answered");
        assert_eq!(answered.uid.as_deref(), Some("u-1"));
        assert_eq!(
            Some(answered.fingerprint.clone()),
            applied_fields_fingerprint(&once_live)
        );
        assert_eq!(answers[&twice.qualified_label()], None);
        assert_eq!(answers[&gone.qualified_label()], None);
    }
}
