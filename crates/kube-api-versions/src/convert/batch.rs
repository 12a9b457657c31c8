//! `batch/v1beta1` and `batch/v2alpha1` CronJob -> `batch/v1` (v2alpha1 also ->
//! `batch/v1beta1`, for clusters before 1.21).

use serde_json::{Map, Value};

use super::{ConvertError, Cx};

/// The fields are the same. v2alpha1 did not default the job history limits (it kept
/// every finished Job); later versions keep 3 successful and 1 failed. Writing an
/// "unlimited" number would keep the old behaviour but pile up Jobs nobody asked to
/// keep, so the change is only reported.
pub(super) fn cron_job(cx: &mut Cx, root: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if cx.from != "batch/v2alpha1" {
        return Ok(());
    }
    let Some(spec) = cx.object(root, "spec", "spec")? else {
        return Ok(());
    };
    for (key, default) in [
        ("successfulJobsHistoryLimit", 3),
        ("failedJobsHistoryLimit", 1),
    ] {
        if spec.get(key).is_none_or(Value::is_null) {
            let note = format!(
                "spec.{key} is not set: batch/v2alpha1 kept every finished Job, {} keeps {default}",
                cx.to
            );
            cx.note(note);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    fn backup_cron_job(api_version: &str) -> serde_json::Value {
        json!({
            "apiVersion": api_version,
            "kind": "CronJob",
            "metadata": {"name": "cassandra-backup", "namespace": "cass"},
            "spec": {
                "schedule": "0 3 * * *",
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "backup", "image": "cassandra-tools:3.11", "args": ["backup"]}]
                }}}}
            }
        })
    }

    // CronJob batch/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.24/#cronjob-v1beta1-batch;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#cronjob-v1-batch
    #[test]
    fn v1beta1_cron_job_moves_to_v1_unchanged() {
        let cj = backup_cron_job("batch/v1beta1");
        let out = convert(&cj, "batch/v1").unwrap();
        let mut expected = cj.clone();
        expected["apiVersion"] = json!("batch/v1");
        assert_eq!(out.object, expected);
        assert!(out.notes.is_empty());
    }

    // CronJob batch/v2alpha1 (no history-limit defaults): kubernetes.io/docs/reference/generated/kubernetes-api/v1.20/#cronjobspec-v2alpha1-batch;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#cronjobspec-v1-batch
    #[test]
    fn v2alpha1_cron_job_notes_the_history_limits() {
        let cj = backup_cron_job("batch/v2alpha1");
        let out = convert(&cj, "batch/v1").unwrap();
        assert_eq!(out.object["apiVersion"], "batch/v1");
        assert_eq!(out.notes.len(), 2, "{:?}", out.notes);
        assert_eq!(
            convert(&cj, "batch/v1beta1").unwrap().object["apiVersion"],
            "batch/v1beta1"
        );
    }
}
