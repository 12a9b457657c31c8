//! Kubernetes `Status` failures (`metav1.Status`) as a Rust error.

use serde_json::{Value, json};

/// A failed API call, rendered as a `Status` object with `reason` and `code`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (throttling faults).
    pub retry_after: Option<u64>,
    /// Answered as the real server answers a path no API group serves: the text
    /// `404 page not found`, not a `Status` ([`ApiError::page_not_found`]).
    pub plain_text: bool,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
            plain_text: false,
        }
    }

    /// A resource path of a group the server does not serve at all (a CRD's group
    /// before the CRD is served, or after it is deleted): the real API server (1.36,
    /// checked) answers it with the text `404 page not found` and no `Status`.
    pub fn page_not_found() -> Self {
        ApiError {
            plain_text: true,
            ..ApiError::new(404, "NotFound", "404 page not found")
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    fn named(
        code: u16,
        reason: &'static str,
        qualified: &str,
        name: &str,
        message: String,
    ) -> Self {
        let (kind, group) = match qualified.split_once('.') {
            Some((k, g)) => (k, g),
            None => (qualified, ""),
        };
        let mut details = json!({"name": name, "kind": kind});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        ApiError::new(code, reason, message).with_details(details)
    }

    /// `qualified` is `plural[.group]`, as Kubernetes names the resource.
    pub fn not_found(qualified: &str, name: &str) -> Self {
        Self::named(
            404,
            "NotFound",
            qualified,
            name,
            format!("{qualified} \"{name}\" not found"),
        )
    }

    pub fn already_exists(qualified: &str, name: &str) -> Self {
        Self::named(
            409,
            "AlreadyExists",
            qualified,
            name,
            format!("{qualified} \"{name}\" already exists"),
        )
    }

    pub fn conflict(qualified: &str, name: &str, why: &str) -> Self {
        Self::named(
            409,
            "Conflict",
            qualified,
            name,
            format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"),
        )
    }

    /// `qualified_kind` is `Kind[.group]`, as validation messages name the kind
    /// (`Deployment.apps "web" is invalid: ...`).
    pub fn invalid(qualified_kind: &str, name: &str, field: &str, why: &str) -> Self {
        let (kind, group) = qualified_kind
            .split_once('.')
            .unwrap_or((qualified_kind, ""));
        let mut details = json!({
            "name": name, "kind": kind,
            "causes": [{"reason": "FieldValueInvalid", "message": why, "field": field}]
        });
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {field}: {why}"),
        )
        .with_details(details)
    }

    /// Every field error of one object, as the API server reports a failed validation:
    /// one cause each, and the message listing them all (`[a: x, b: y]` when there are
    /// several). The cause's reason follows the message's wording.
    pub fn invalid_all(qualified_kind: &str, name: &str, errors: &[(String, String)]) -> Self {
        if let [(field, why)] = errors {
            let mut one = Self::invalid(qualified_kind, name, field, why);
            if let Some(details) = one.details.as_mut() {
                details["causes"][0]["reason"] = json!(cause_reason(why));
            }
            return one;
        }
        let (kind, group) = qualified_kind
            .split_once('.')
            .unwrap_or((qualified_kind, ""));
        let causes: Vec<Value> = errors
            .iter()
            .map(
                |(field, why)| json!({"reason": cause_reason(why), "message": why, "field": field}),
            )
            .collect();
        let mut details = json!({"name": name, "kind": kind, "causes": causes});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        let listed: Vec<String> = errors.iter().map(|(f, w)| format!("{f}: {w}")).collect();
        ApiError::new(
            422,
            "Invalid",
            format!(
                "{qualified_kind} \"{name}\" is invalid: [{}]",
                listed.join(", ")
            ),
        )
        .with_details(details)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type:?})"
            ),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    pub fn unauthorized() -> Self {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(403, "Forbidden", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    /// The `Status` object Kubernetes returns for this failure.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

/// `metav1.CauseType` of a field error, from how its message starts (field.ErrorType's
/// wording).
fn cause_reason(why: &str) -> &'static str {
    if why.starts_with("Required value") {
        "FieldValueRequired"
    } else if why.starts_with("Unsupported value") {
        "FieldValueNotSupported"
    } else if why.starts_with("Forbidden") {
        "FieldValueForbidden"
    } else if why.starts_with("Duplicate value") {
        "FieldValueDuplicate"
    } else if why.starts_with("Too long") {
        "FieldValueTooLong"
    } else {
        "FieldValueInvalid"
    }
}
