//! Reads of Azure Resource Manager: whether a resource exists, which `reconcile-policy-if-exists`
//! asks before a create against a real cluster.
//!
//! One `GET {resource manager}{ARM id}?api-version={V}` through the `azure_core` pipeline: a
//! bearer-token policy with the identity's credential (scope `{resource manager}/.default`), the
//! process's transport, and the SDK's retry driven by [`ARM_READS`] (a 429's `Retry-After`
//! honoured up to its cap). What the answer means is [`classify`] (pure):
//!
//! | status                         | meaning                                                   |
//! |--------------------------------|-----------------------------------------------------------|
//! | 200                            | exists                                                     |
//! | 404 `ResourceNotFound`, `ResourceGroupNotFound`, `ParentResourceNotFound`, `NotFound` (or no code) | does not exist |
//! | 403                            | error: the identity lacks read permission on the id       |
//! | 429 after the retries          | error: throttled                                           |
//! | anything else (`SubscriptionNotFound` included) | error with ARM's code and message          |
//!
//! Errors name the ARM id and the identity, never a token; ARM's message is scrubbed.

use super::endpoints::Endpoints;
use crate::retry::{Backoff, RetryPlan};
use azure_core::credentials::TokenCredential;
use azure_core::http::policies::Policy;
use azure_core::http::policies::auth::BearerTokenAuthorizationPolicy;
use azure_core::http::{
    ClientOptions, Context, Method, Pipeline, PipelineSendOptions, Request, RetryOptions, Url,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// ARM reads: a throttled read waits for the server's `Retry-After` (at most 30s), three times at
/// most, a minute in all; the unit's pass holds its worker meanwhile.
pub const ARM_READS: RetryPlan = RetryPlan {
    backoff: Backoff {
        base: Duration::from_millis(500),
        max: Duration::from_secs(8),
        jitter: 0.5,
    },
    max_retry_after: Duration::from_secs(30),
    max_retries: 3,
    max_elapsed: Duration::from_secs(60),
};

/// The 404 codes that mean "this resource is not there" (anything else on a 404, such as
/// `SubscriptionNotFound`, is an error: a create would fail too).
const ABSENT_CODES: [&str; 4] = [
    "ResourceNotFound",
    "ResourceGroupNotFound",
    "ParentResourceNotFound",
    "NotFound",
];

/// Why whether a resource exists could not be learnt. Never carries a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArmError {
    #[error(
        "Azure Resource Manager refused to read {arm_id} for {identity} (403 {code}): give the identity read access (e.g. the Reader role) on it; {message}"
    )]
    Forbidden {
        arm_id: String,
        identity: String,
        code: String,
        message: String,
    },
    #[error(
        "Azure Resource Manager kept throttling the read of {arm_id} (429 Too Many Requests after {retries} retries); it is asked again on the next pass"
    )]
    Throttled { arm_id: String, retries: u32 },
    #[error("Azure Resource Manager answered {status} {code} reading {arm_id}: {message}")]
    Status {
        arm_id: String,
        status: u16,
        code: String,
        message: String,
    },
    #[error("{kind} has no ARM api-version in its apiVersion {api_version:?}")]
    NoApiVersion { kind: String, api_version: String },
    #[error("reading {arm_id} from Azure Resource Manager failed: {message}")]
    Request { arm_id: String, message: String },
}

/// ARM's error body: `{"error": {"code", "message"}}`; the code and message (scrubbed), or empty.
pub fn error_of(body: &[u8]) -> (String, String) {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let field = |f: &str| {
        v.pointer(&format!("/error/{f}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    (
        field("code").to_string(),
        crate::redact::scrub(field("message")).into_owned(),
    )
}

/// What ARM's answer to a GET of `arm_id` means (see the module's table). `retries` is how often
/// the pipeline retried it; `identity` names who asked.
pub fn classify(
    arm_id: &str,
    identity: &str,
    status: u16,
    body: &[u8],
    retries: u32,
) -> Result<bool, ArmError> {
    let (code, message) = error_of(body);
    match status {
        200..=299 => Ok(true),
        404 if code.is_empty() || ABSENT_CODES.contains(&code.as_str()) => Ok(false),
        403 => Err(ArmError::Forbidden {
            arm_id: arm_id.to_string(),
            identity: identity.to_string(),
            code: if code.is_empty() {
                "AuthorizationFailed".into()
            } else {
                code
            },
            message,
        }),
        429 => Err(ArmError::Throttled {
            arm_id: arm_id.to_string(),
            retries,
        }),
        _ => Err(ArmError::Status {
            arm_id: arm_id.to_string(),
            status,
            code,
            message,
        }),
    }
}

/// The URL of a GET of `arm_id` at `api_version` on `endpoint` (`https://host[:port]`).
pub fn resource_url(endpoint: &str, arm_id: &str, api_version: &str) -> Result<Url, String> {
    let mut url = Url::parse(&format!(
        "{}/{}",
        endpoint.trim_end_matches('/'),
        arm_id.trim_start_matches('/')
    ))
    .map_err(|e| format!("{arm_id} makes no URL: {e}"))?;
    url.query_pairs_mut()
        .append_pair("api-version", api_version);
    Ok(url)
}

/// Counts the tries of a request (the pipeline's retries run the per-try policies again).
#[derive(Debug, Default)]
struct TryCounter(std::sync::atomic::AtomicU32);

#[async_trait::async_trait]
impl Policy for TryCounter {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> azure_core::http::policies::PolicyResult {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        next[0].send(ctx, request, &next[1..]).await
    }
}

/// A reader of one cloud's Resource Manager with one identity's credential.
pub struct ResourceManager {
    endpoint: String,
    credential: Arc<dyn TokenCredential>,
    options: ClientOptions,
    scope: String,
    retry: RetryPlan,
    /// Who reads, as messages name it (never a secret).
    identity: String,
}

impl ResourceManager {
    /// The Resource Manager of `endpoints`' cloud, read with `credential` (`identity` names it in
    /// errors) over the client `options` of the process (its transport).
    pub fn new(
        endpoints: &Endpoints,
        credential: Arc<dyn TokenCredential>,
        options: ClientOptions,
        identity: String,
    ) -> ResourceManager {
        ResourceManager {
            endpoint: endpoints.resource_manager_url(),
            scope: format!("{}/.default", endpoints.resource_manager_resource()),
            credential,
            options,
            retry: ARM_READS,
            identity,
        }
    }

    /// Retries with `plan` instead of [`ARM_READS`].
    pub fn with_retry(mut self, plan: RetryPlan) -> ResourceManager {
        self.retry = plan;
        self
    }

    /// Whether `arm_id` exists, read at `api_version` (e.g. `2020-06-01`).
    pub async fn exists(&self, arm_id: &str, api_version: &str) -> Result<bool, ArmError> {
        let failed = |message: String| ArmError::Request {
            arm_id: arm_id.to_string(),
            message: crate::redact::scrub(&message).into_owned(),
        };
        let url = resource_url(&self.endpoint, arm_id, api_version).map_err(failed)?;
        let tries = Arc::new(TryCounter::default());
        let auth = BearerTokenAuthorizationPolicy::new(self.credential.clone(), [&self.scope]);
        let options = ClientOptions {
            retry: RetryOptions::custom(Arc::new(super::retry_policy::PlanPolicy::new(self.retry))),
            ..self.options.clone()
        };
        let per_try: Vec<Arc<dyn Policy>> = vec![tries.clone(), Arc::new(auth)];
        let pipeline = Pipeline::new(
            Some("aro-gitops"),
            Some(env!("CARGO_PKG_VERSION")),
            options,
            Vec::new(),
            per_try,
            None,
        );
        let mut request = Request::new(url, Method::Get);
        request.insert_header("accept", "application/json");
        let send = PipelineSendOptions {
            skip_checks: true,
            ..Default::default()
        };
        let response = pipeline
            .send(&Context::new(), &mut request, Some(send))
            .await
            .map_err(|e| failed(super::credential::error_chain(&e)))?;
        let retries = tries
            .0
            .load(std::sync::atomic::Ordering::Relaxed)
            .saturating_sub(1);
        let status = u16::from(response.status());
        let found = classify(arm_id, &self.identity, status, response.body(), retries);
        tracing::debug!(arm_id, status, retries, "Azure Resource Manager read");
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "/subscriptions/s/resourceGroups/rg";

    fn body(code: &str, message: &str) -> Vec<u8> {
        serde_json::json!({"error": {"code": code, "message": message}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn found_and_absent_are_answers() {
        assert_eq!(classify(ID, "me", 200, b"{}", 0), Ok(true));
        assert_eq!(
            classify(ID, "me", 404, &body("ResourceGroupNotFound", "no"), 0),
            Ok(false)
        );
        assert_eq!(
            classify(ID, "me", 404, &body("ResourceNotFound", "no"), 0),
            Ok(false)
        );
        assert_eq!(classify(ID, "me", 404, b"", 0), Ok(false));
    }

    #[test]
    fn a_missing_subscription_is_an_error_not_an_absence() {
        let e = classify(ID, "me", 404, &body("SubscriptionNotFound", "gone"), 0).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("404 SubscriptionNotFound") && text.contains("gone"),
            "{text}"
        );
    }

    #[test]
    fn forbidden_names_the_identity_and_the_missing_permission() {
        let e = classify(
            ID,
            "AzureClusterIdentity ns/id (client ID c1)",
            403,
            &body("AuthorizationFailed", "does not have authorization"),
            0,
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("AzureClusterIdentity ns/id"), "{text}");
        assert!(text.contains("read access") && text.contains(ID), "{text}");
        assert!(text.contains("AuthorizationFailed"), "{text}");
    }

    #[test]
    fn throttling_and_other_statuses_are_errors_with_arm_code() {
        assert_eq!(
            classify(ID, "me", 429, b"", 3),
            Err(ArmError::Throttled {
                arm_id: ID.into(),
                retries: 3
            })
        );
        let e = classify(ID, "me", 400, &body("InvalidApiVersionParameter", "bad"), 0);
        assert!(
            matches!(e, Err(ArmError::Status { status: 400, ref code, .. }) if code == "InvalidApiVersionParameter")
        );
    }

    #[test]
    fn the_url_carries_the_id_and_the_api_version() {
        let url = resource_url("https://management.azure.com/", ID, "2020-06-01").unwrap();
        assert_eq!(
            url.as_str(),
            "https://management.azure.com/subscriptions/s/resourceGroups/rg?api-version=2020-06-01"
        );
    }
}
