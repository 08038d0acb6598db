//! Errors of the local control plane: API errors answered as Kubernetes `Status` bodies, and the
//! errors of starting or running the server.

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
    /// `details` of the Status: the object's name, group and resource (plural).
    pub details: Option<Box<StatusDetails>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatusDetails {
    pub name: String,
    pub group: String,
    pub resource: String,
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
        }
    }

    fn with_details(mut self, group: &str, resource: &str, name: &str) -> Self {
        self.details = Some(Box::new(StatusDetails {
            name: name.into(),
            group: group.into(),
            resource: resource.into(),
            causes: Vec::new(),
        }));
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

    /// A server-side-apply conflict between field managers.
    pub fn apply_conflict(
        group: &str,
        resource: &str,
        name: &str,
        message: String,
        causes: Vec<(String, String, String)>,
    ) -> Self {
        let mut e =
            ApiError::new(409, Reason::Conflict, message).with_details(group, resource, name);
        if let Some(d) = e.details.as_mut() {
            d.causes = causes;
        }
        e
    }

    /// 422: `Kind.group "name" is invalid: <what>`.
    pub fn invalid(kind: &str, group: &str, name: &str, what: &str) -> Self {
        let kind_group = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        ApiError::new(
            422,
            Reason::Invalid,
            format!("{kind_group} \"{name}\" is invalid: {what}"),
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
        let what = match each.as_slice() {
            [one] => one.clone(),
            _ => format!("[{}]", each.join(", ")),
        };
        let mut e = ApiError::invalid(kind, group, name, &what).with_details(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d.causes = causes;
        }
        e
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, Reason::BadRequest, message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, Reason::MethodNotAllowed, message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (POST/PUT of core kinds), application/apply-patch+yaml, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            Reason::RequestEntityTooLarge,
            format!("the request body is larger than the limit of {limit} bytes"),
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

    /// The path names no resource this server knows.
    pub fn unknown_path() -> Self {
        ApiError::new(
            404,
            Reason::NotFound,
            "the server could not find the requested resource",
        )
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
        if let Some(d) = &self.details {
            let mut details = json!({"name": d.name, "kind": d.resource});
            if !d.group.is_empty() {
                details["group"] = json!(d.group);
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|(reason, message, field)| json!({"reason": reason, "message": message, "field": field}))
                    .collect();
                details["causes"] = json!(causes);
            }
            status["details"] = details;
        }
        status
    }
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
        assert_eq!(s["details"]["kind"], "secrets");
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
}
