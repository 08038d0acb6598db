//! Errors of the local control plane: API errors answered as Kubernetes `Status` bodies, and the
//! errors of starting or running the server.

use crate::machinery::field::FieldError;
use serde_json::{Value, json};

/// The `reason` of a Kubernetes `Status` (metav1.StatusReason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    NotFound,
    AlreadyExists,
    Conflict,
    Invalid,
    BadRequest,
    MethodNotAllowed,
    UnsupportedMediaType,
    RequestEntityTooLarge,
    Expired,
    Gone,
    Forbidden,
    NotAcceptable,
    Timeout,
    TooManyRequests,
    InternalError,
    /// No reason at all (upstream's `StatusReasonUnknown`): the `reason` field is left out.
    Unknown,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::BadRequest => "BadRequest",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::Expired => "Expired",
            Reason::Gone => "Gone",
            Reason::Forbidden => "Forbidden",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::Timeout => "Timeout",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::InternalError => "InternalError",
            Reason::Unknown => "",
        }
    }
}

/// An error answered to an API client: HTTP code, reason and a message that names the object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: Reason,
    pub message: String,
    /// `details` of the Status; `Some` of empty details is answered as `details: {}`.
    pub details: Option<Box<StatusDetails>>,
    /// Answered as kube-apiserver answers a path no API serves: `text/plain`, the message as the
    /// body, no `Status`.
    pub plain: bool,
}

/// `details` of a Status; empty fields are left out, as kube-apiserver leaves them out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusDetails {
    pub name: String,
    pub group: String,
    /// The resource (plural) for most errors, the Kind for 422 Invalid and precondition conflicts.
    pub kind: String,
    /// `(reason, message, field)` of each cause, e.g. each field of an apply conflict.
    pub causes: Vec<(String, String, String)>,
}

impl ApiError {
    pub fn new(code: u16, reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            plain: false,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(Box::new(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            causes: Vec::new(),
        }));
        self
    }

    /// With `details: {}`, as kube-apiserver answers its generic errors (405, a PATCH's 415, an
    /// unknown resource's 404).
    pub fn with_empty_details(mut self) -> Self {
        self.details = Some(Box::default());
        self
    }

    /// `secrets "x" not found`, as the API server words it.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            404,
            Reason::NotFound,
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            409,
            Reason::AlreadyExists,
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// A stale `resourceVersion` (optimistic concurrency).
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            Reason::Conflict,
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// A DELETE precondition (`uid` or `resourceVersion`) the object does not meet; kube-apiserver
    /// names the Kind here, not the resource.
    pub fn precondition_failed(
        group: &str,
        kind: &str,
        name: &str,
        field: Precondition,
        wanted: &str,
        actual: &str,
    ) -> Self {
        let why = match field {
            Precondition::Uid => format!(
                "the UID in the precondition ({wanted}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
            ),
            Precondition::ResourceVersion => format!(
                "the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
            ),
        };
        ApiError::conflict(group, kind, name, &why)
    }

    /// A server-side-apply conflict between field managers: kube-apiserver's details carry the
    /// causes only.
    pub fn apply_conflict(message: String, causes: Vec<(String, String, String)>) -> Self {
        let mut e = ApiError::new(409, Reason::Conflict, message);
        e.details = Some(Box::new(StatusDetails {
            causes,
            ..StatusDetails::default()
        }));
        e
    }

    /// 422: `Kind.group "name" is invalid: <what>`.
    pub fn invalid(kind: &str, group: &str, name: &str, what: &str) -> Self {
        ApiError::new(
            422,
            Reason::Invalid,
            format!("{} \"{name}\" is invalid: {what}", qualified(group, kind)),
        )
    }

    /// 422 for field errors, as kube-apiserver's `NewInvalid`: the message lists the errors
    /// (bracketed when more than one) and `details.causes` carries each as (reason, message, field).
    pub fn invalid_fields(
        kind: &str,
        group: &str,
        name: &str,
        causes: Vec<(String, String, String)>,
    ) -> Self {
        let each: Vec<String> = causes
            .iter()
            .map(|(_, message, field)| format!("{field}: {message}"))
            .collect();
        let what = crate::machinery::field::aggregate(&each);
        let mut e = ApiError::invalid(kind, group, name, &what).with_details(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d.causes = causes;
        }
        e
    }

    /// 422 for [`FieldError`]s of an object of `kind`.
    pub fn invalid_object(kind: &str, group: &str, name: &str, errors: &[FieldError]) -> Self {
        ApiError::invalid_fields(kind, group, name, causes_of(errors))
    }

    /// 422 for a request's options (`CreateOptions`, `PatchOptions`, ...), as kube-apiserver
    /// refuses a bad `dryRun`, `fieldManager` or `fieldValidation`.
    pub fn invalid_options(options: &str, errors: &[FieldError]) -> Self {
        ApiError::invalid_fields(options, "meta.k8s.io", "", causes_of(errors))
    }

    /// 422 without a named object: kube-apiserver's generic answer to a patch it cannot apply.
    pub fn unprocessable() -> Self {
        ApiError::new(
            422,
            Reason::Invalid,
            "the server rejected our request due to an error in our request",
        )
        .with_empty_details()
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, Reason::BadRequest, message)
    }

    /// A method the path does not serve.
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            Reason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )
        .with_empty_details()
    }

    /// A POST or PUT body in a format kube-apiserver does not decode; `custom` resources are
    /// served without protobuf.
    pub fn unsupported_media_type(custom: bool) -> Self {
        let types = if custom {
            "application/json, application/yaml"
        } else {
            "application/json, application/yaml, application/vnd.kubernetes.protobuf"
        };
        ApiError::new(
            415,
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {types}"
            ),
        )
    }

    /// A PATCH whose content type is no patch type.
    pub fn unsupported_patch_type() -> Self {
        ApiError::new(
            415,
            Reason::UnsupportedMediaType,
            "415: Unsupported Media Type",
        )
        .with_empty_details()
    }

    /// A request body over the server's limit, in kube-apiserver's words.
    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: limit is {limit}"),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new(410, Reason::Expired, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(403, Reason::Forbidden, message)
    }

    /// `namespaces "default" is forbidden: <why>`, as the API server words a refused request.
    pub fn forbidden_object(group: &str, resource: &str, name: &str, why: &str) -> Self {
        ApiError::forbidden(format!(
            "{} \"{name}\" is forbidden: {why}",
            qualified(group, resource)
        ))
        .with_details(group, resource, name)
    }

    /// A resource (or subresource) the served group and version do not have.
    pub fn unknown_path() -> Self {
        ApiError::new(
            404,
            Reason::NotFound,
            "the server could not find the requested resource",
        )
        .with_empty_details()
    }

    /// A path no API serves (an unknown group or version, or no API path at all): answered as
    /// plain text.
    pub fn page_not_found() -> Self {
        let mut e = ApiError::new(404, Reason::NotFound, "404 page not found");
        e.plain = true;
        e
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, Reason::InternalError, message)
    }

    /// The `Status` body for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code,
        });
        if self.reason == Reason::Unknown {
            status.as_object_mut().map(|m| m.remove("reason"));
        }
        if let Some(d) = &self.details {
            let mut details = serde_json::Map::new();
            for (k, v) in [("name", &d.name), ("group", &d.group), ("kind", &d.kind)] {
                if !v.is_empty() {
                    details.insert(k.into(), json!(v));
                }
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|(reason, message, field)| json!({"reason": reason, "message": message, "field": field}))
                    .collect();
                details.insert("causes".into(), json!(causes));
            }
            status["details"] = Value::Object(details);
        }
        status
    }
}

/// A patch that cannot be applied: kube-apiserver answers a malformed document 400 with its
/// reason, and anything found while applying 422 without naming the object.
impl From<crate::machinery::patch::PatchError> for ApiError {
    fn from(e: crate::machinery::patch::PatchError) -> Self {
        match e {
            crate::machinery::patch::PatchError::Malformed(why) => ApiError::bad_request(why),
            _ => ApiError::unprocessable(),
        }
    }
}

/// Which DELETE precondition failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    Uid,
    ResourceVersion,
}

fn causes_of(errors: &[FieldError]) -> Vec<(String, String, String)> {
    errors
        .iter()
        .map(|e| (e.kind.reason().to_string(), e.body(), e.field.clone()))
        .collect()
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Errors of starting or running the control plane (not answered to clients).
#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error("cannot open the state store at {path}: {source}")]
    OpenStore {
        path: std::path::PathBuf,
        source: Box<redb::Error>,
    },
    #[error("state store at {path}: {source}")]
    Store {
        path: std::path::PathBuf,
        source: Box<redb::Error>,
    },
    #[error("state store at {path} holds an object that cannot be read ({key}): {message}")]
    CorruptObject {
        path: std::path::PathBuf,
        key: String,
        message: String,
    },
    #[error("cannot create the state directory {path}: {source}")]
    StateDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the store's committer thread for {path}: {source}")]
    Committer {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("refusing to listen on non-loopback address {addr} without --allow-non-loopback")]
    NonLoopback { addr: String },
    #[error("cannot write the kubeconfig {path}: {source}")]
    Kubeconfig {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("preloaded CustomResourceDefinition {name} was rejected: {message}")]
    Preload { name: String, message: String },
    #[error("cannot build a client for the control plane: {0}")]
    Client(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bodies_read_like_the_api_server() {
        let e = ApiError::not_found("", "secrets", "db");
        assert_eq!(e.to_string(), "secrets \"db\" not found");
        let s = e.to_status();
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"], json!({"name": "db", "kind": "secrets"}));
        let e = ApiError::conflict(
            "infrastructure.cluster.x-k8s.io",
            "aroclusters",
            "dev",
            "the object has been modified",
        );
        assert!(e.message.starts_with(
            "Operation cannot be fulfilled on aroclusters.infrastructure.cluster.x-k8s.io \"dev\""
        ));
        assert_eq!(
            ApiError::invalid("Secret", "", "x", "metadata.name: bad").message,
            "Secret \"x\" is invalid: metadata.name: bad"
        );
    }

    #[test]
    fn an_invalid_object_names_its_kind_and_every_cause() {
        let errors = [
            FieldError::invalid_raw("spec.leaseDurationSeconds", -1, "must be greater than 0"),
            FieldError::required("spec.x", ""),
        ];
        let s = ApiError::invalid_object("Lease", "coordination.k8s.io", "l", &errors).to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(
            s["message"],
            "Lease.coordination.k8s.io \"l\" is invalid: [spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0, spec.x: Required value]"
        );
        assert_eq!(
            s["details"],
            json!({"name": "l", "group": "coordination.k8s.io", "kind": "Lease", "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be greater than 0", "field": "spec.leaseDurationSeconds"},
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"},
            ]})
        );
        // No name: details leave it out, the message quotes it empty.
        let s = ApiError::invalid_object(
            "ConfigMap",
            "",
            "",
            &[FieldError::required(
                "metadata.name",
                "name or generateName is required",
            )],
        )
        .to_status();
        assert_eq!(
            s["message"],
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        assert!(s["details"].get("name").is_none());
    }

    #[test]
    fn options_errors_name_the_options_kind() {
        let s = ApiError::invalid_options(
            "PatchOptions",
            &[FieldError::required(
                "fieldManager",
                "is required for apply patch",
            )],
        )
        .to_status();
        assert_eq!(
            s["message"],
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        assert_eq!(s["details"]["group"], "meta.k8s.io");
        assert_eq!(s["details"]["kind"], "PatchOptions");
    }

    #[test]
    fn generic_errors_carry_empty_details_and_conflicts_only_causes() {
        assert_eq!(
            ApiError::method_not_allowed().to_status()["details"],
            json!({})
        );
        assert_eq!(ApiError::unknown_path().to_status()["details"], json!({}));
        assert_eq!(ApiError::unprocessable().to_status()["details"], json!({}));
        assert!(
            ApiError::bad_request("x")
                .to_status()
                .get("details")
                .is_none()
        );
        let e = ApiError::apply_conflict(
            "Apply failed with 1 conflict: conflict with \"a\": .data.k".into(),
            vec![(
                "FieldManagerConflict".into(),
                "conflict with \"a\"".into(),
                ".data.k".into(),
            )],
        );
        assert_eq!(
            e.to_status()["details"],
            json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".data.k"}]})
        );
        assert!(ApiError::page_not_found().plain);
    }

    #[test]
    fn a_failed_precondition_names_the_kind() {
        let e = ApiError::precondition_failed(
            "",
            "ConfigMap",
            "a",
            Precondition::ResourceVersion,
            "1",
            "2",
        );
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on ConfigMap \"a\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (2). The object might have been modified"
        );
        assert_eq!(
            e.to_status()["details"],
            json!({"name": "a", "kind": "ConfigMap"})
        );
    }
}
