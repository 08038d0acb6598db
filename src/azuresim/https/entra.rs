//! The simulated Entra ID: the v2.0 token endpoint (`POST /{tenant}/oauth2/v2.0/token`) and the
//! managed-identity endpoint of a VM's instance metadata service (IMDS), answering as Azure does.
//!
//! - client-credential grant with `client_secret`: checked against the `clientSecret` of a
//!   ServicePrincipal identity of that tenant and client ID; a wrong secret fails with HTTP 401
//!   `invalid_client`, AADSTS7000215, as Azure does;
//! - client-credential grant with `client_assertion`: for a certificate identity the JWT must be
//!   signed by the key of the identity's certificate (AADSTS700027 otherwise); for a workload
//!   identity it is the federated (service-account) token, which must be a JWT;
//! - IMDS: a `UserAssignedMSI` identity by `client_id` or `msi_res_id`.
//!
//! Tokens are opaque and say they are simulated ([`super::tokens`]); neither tokens nor secrets
//! are ever logged. Every request to either endpoint counts as a token request.

use super::directory::SimIdentity;
use super::{SimResponse, SimServices, json_response};
use crate::azure::assertion::{self, AssertionRejection};
use crate::azure::cloud::AzureEnvironment;
use crate::azure::endpoints::Endpoints;
use crate::identity::IdentityType;
use serde_json::json;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// An Entra ID error response: `error`, `error_description` starting `AADSTS<code>:`,
/// `error_codes`, trace and correlation ids, timestamp.
fn entra_error(status: u16, error: &str, code: u32, description: &str) -> SimResponse {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%SZ").to_string();
    let trace = uuid::Uuid::new_v4();
    let correlation = uuid::Uuid::new_v4();
    json_response(
        status,
        &json!({
            "error": error,
            "error_description": format!(
                "AADSTS{code}: {description} (simulated Entra ID) Trace ID: {trace} Correlation ID: {correlation} Timestamp: {now}"
            ),
            "error_codes": [code],
            "timestamp": now,
            "trace_id": trace.to_string(),
            "correlation_id": correlation.to_string(),
        }),
    )
}

/// Why a token request is refused, before it becomes a response.
pub(super) struct Refusal {
    status: u16,
    error: &'static str,
    code: u32,
    description: String,
}

impl Refusal {
    fn new(status: u16, error: &'static str, code: u32, description: impl Into<String>) -> Refusal {
        Refusal {
            status,
            error,
            code,
            description: description.into(),
        }
    }

    fn respond(self) -> SimResponse {
        entra_error(self.status, self.error, self.code, &self.description)
    }
}

/// The refusal of a request without `parameter`.
fn missing(parameter: &str) -> Refusal {
    Refusal::new(
        400,
        "invalid_request",
        900144,
        format!("The request body must contain the following parameter: '{parameter}'."),
    )
}

/// Parses an `application/x-www-form-urlencoded` body or query.
pub(super) fn form(bytes: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

/// The value of `key` in a request's parameters, when given and not empty.
fn given<'a>(params: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    params
        .get(key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The tenant of a token endpoint path, `/{tenant}/oauth2/v2.0/token`.
fn tenant_of(path: &str) -> Option<&str> {
    path.strip_prefix('/')
        .and_then(|p| p.strip_suffix("/oauth2/v2.0/token"))
        .filter(|t| !t.is_empty() && !t.contains('/'))
}

/// The client ID and scope of a client-credential grant, or the refusal of a request that is not
/// one: a parameter missing, another grant type, a scope without `/.default`.
fn client_credentials(params: &HashMap<String, String>) -> Result<(&str, &str), Refusal> {
    let Some(grant) = given(params, "grant_type") else {
        return Err(missing("grant_type"));
    };
    if grant != "client_credentials" {
        return Err(Refusal::new(
            400,
            "unsupported_grant_type",
            70003,
            format!("The app requested an unsupported grant type '{grant}'."),
        ));
    }
    let Some(client_id) = given(params, "client_id") else {
        return Err(missing("client_id"));
    };
    let Some(scope) = given(params, "scope") else {
        return Err(missing("scope"));
    };
    if !scope.split_whitespace().all(|s| s.ends_with("/.default")) {
        return Err(Refusal::new(
            400,
            "invalid_scope",
            1002012,
            format!(
                "The provided value for scope {scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI)."
            ),
        ));
    }
    Ok((client_id, scope))
}

/// The identities of `tenant` registered as the application `client_id`, or why there are none.
fn applications<'a>(
    identities: &'a [SimIdentity],
    tenant: &str,
    client_id: &str,
) -> Result<Vec<&'a SimIdentity>, Refusal> {
    let of_tenant: Vec<&SimIdentity> = identities
        .iter()
        .filter(|i| i.identity.tenant_id.eq_ignore_ascii_case(tenant))
        .collect();
    if of_tenant.is_empty() {
        return Err(Refusal::new(
            400,
            "invalid_tenant",
            90002,
            format!("Tenant '{tenant}' not found."),
        ));
    }
    let apps: Vec<&SimIdentity> = of_tenant
        .into_iter()
        .filter(|i| i.identity.client_id.eq_ignore_ascii_case(client_id))
        .collect();
    if apps.is_empty() {
        return Err(Refusal::new(
            400,
            "unauthorized_client",
            700016,
            format!(
                "Application with identifier '{client_id}' was not found in the directory '{tenant}'."
            ),
        ));
    }
    Ok(apps)
}

/// The token for `scope`'s resource, issued to `client_id` of `tenant`.
fn issue(services: &SimServices, tenant: &str, client_id: &str, scope: &str) -> SimResponse {
    let resource = scope
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_end_matches("/.default");
    let (token, _) = services.tokens.issue(tenant, client_id, resource);
    let lifetime = services.tokens.lifetime().as_secs();
    tracing::debug!(
        tenant,
        client_id,
        resource,
        "simulated Entra ID issued a token"
    );
    json_response(
        200,
        &json!({
            "token_type": "Bearer",
            "expires_in": lifetime,
            "ext_expires_in": lifetime,
            "access_token": token,
        }),
    )
}

/// `POST /{tenant}/oauth2/v2.0/token` on the login host of `environment`.
pub(super) async fn token(
    services: &SimServices,
    environment: AzureEnvironment,
    path: &str,
    body: &[u8],
) -> SimResponse {
    services.counts.count_token();
    let Some(tenant) = tenant_of(path) else {
        return json_response(404, &json!({"error": "not_found"}));
    };
    let params = form(body);
    let (client_id, scope) = match client_credentials(&params) {
        Ok(asked) => asked,
        Err(refusal) => return refusal.respond(),
    };
    let identities = match services.directory.identities().await {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "simulated Entra ID could not read the identities");
            return entra_error(
                503,
                "temporarily_unavailable",
                90033,
                "A transient error has occurred. Please try again.",
            );
        }
    };
    let apps = match applications(&identities, tenant, client_id) {
        Ok(apps) => apps,
        Err(refusal) => return refusal.respond(),
    };
    let endpoint = format!(
        "{}/{tenant}/oauth2/v2.0/token",
        Endpoints::simulated(environment, services.port).authority_host
    );
    let verdict = if let Some(secret) = given(&params, "client_secret") {
        check_secret(&apps, client_id, secret.as_bytes())
    } else if let Some(assertion) = given(&params, "client_assertion") {
        if given(&params, "client_assertion_type") != Some(CLIENT_ASSERTION_TYPE) {
            return missing("client_assertion_type").respond();
        }
        check_assertion(&apps, client_id, assertion, &endpoint)
    } else {
        Err(Refusal::new(
            401,
            "invalid_client",
            7000218,
            "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
        ))
    };
    if let Err(refusal) = verdict {
        tracing::info!(
            tenant,
            client_id,
            status = refusal.status,
            code = refusal.code,
            "simulated Entra ID refused a token request"
        );
        return refusal.respond();
    }
    issue(services, tenant, client_id, scope)
}

fn check_secret(apps: &[&SimIdentity], client_id: &str, sent: &[u8]) -> Result<(), Refusal> {
    let ok = apps.iter().any(|i| {
        i.identity.kind == IdentityType::ServicePrincipal
            && i.secret.as_ref().is_some_and(|s| s.constant_time_eq(sent))
    });
    if ok {
        return Ok(());
    }
    Err(Refusal::new(
        401,
        "invalid_client",
        7000215,
        format!(
            "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '{client_id}'."
        ),
    ))
}

fn check_assertion(
    apps: &[&SimIdentity],
    client_id: &str,
    assertion: &str,
    endpoint: &str,
) -> Result<(), Refusal> {
    let Some(jwt) = assertion::parse_jwt(assertion) else {
        return Err(Refusal::new(
            400,
            "invalid_request",
            50027,
            "JWT token is invalid or malformed.",
        ));
    };
    // A workload identity presents its federated (service-account) token.
    if apps
        .iter()
        .any(|i| i.identity.kind == IdentityType::WorkloadIdentity)
    {
        return Ok(());
    }
    let mut rejection = None;
    for app in apps.iter().filter(|i| {
        matches!(
            i.identity.kind,
            IdentityType::ServicePrincipalCertificate
                | IdentityType::UserAssignedIdentityCredential
        )
    }) {
        let Some(cert) = certificate_of(app) else {
            continue;
        };
        match assertion::verify(&jwt, &cert, client_id, endpoint) {
            Ok(()) => return Ok(()),
            Err(r) => rejection = Some(r),
        }
    }
    Err(match rejection {
        Some(AssertionRejection::Expired) => Refusal::new(
            400,
            "invalid_client",
            700024,
            "Client assertion is not within its valid time range.",
        ),
        Some(AssertionRejection::WrongClaims(_)) => Refusal::new(
            400,
            "invalid_client",
            700021,
            "Client assertion application identifier doesn't match 'client_id' parameter or the audience is not the token endpoint.",
        ),
        Some(AssertionRejection::Malformed) => Refusal::new(
            400,
            "invalid_request",
            50027,
            "JWT token is invalid or malformed.",
        ),
        _ => Refusal::new(
            401,
            "invalid_client",
            700027,
            "Client assertion failed signature validation.",
        ),
    })
}

/// The certificate of a certificate identity: from its Secret's PEM, or its `certPath` file.
fn certificate_of(app: &SimIdentity) -> Option<rustls_pki_types::CertificateDer<'static>> {
    if let Some(secret) = &app.secret {
        return assertion::first_certificate(secret.expose()).ok();
    }
    let path = app.identity.cert_path.as_ref()?;
    let pem = std::fs::read(path).ok()?;
    assertion::first_certificate(&pem).ok()
}

/// `GET /metadata/identity/oauth2/token` of the instance metadata service (plain HTTP).
pub(super) async fn imds(
    services: &SimServices,
    query: &str,
    metadata_header: bool,
) -> SimResponse {
    services.counts.count_token();
    let imds_error = |status: u16, error: &str, description: &str| {
        json_response(
            status,
            &json!({"error": error, "error_description": description}),
        )
    };
    if !metadata_header {
        return imds_error(
            400,
            "invalid_request",
            "Required metadata header not specified",
        );
    }
    let params = form(query.as_bytes());
    let get = |k: &str| given(&params, k);
    let Some(resource) = get("resource") else {
        return imds_error(
            400,
            "invalid_request",
            "Required query variable 'resource' is missing",
        );
    };
    let (client_id, resource_id) = (get("client_id"), get("msi_res_id"));
    if client_id.is_none() && resource_id.is_none() {
        return imds_error(
            400,
            "invalid_request",
            "Identity not found (the simulated VM has no system-assigned identity)",
        );
    }
    let identities = match services.directory.identities().await {
        Ok(i) => i,
        Err(_) => return imds_error(500, "unknown", "Failed to retrieve token"),
    };
    let found = identities.iter().find(|i| {
        i.identity.kind == IdentityType::UserAssignedMSI
            && (client_id.is_some_and(|c| i.identity.client_id.eq_ignore_ascii_case(c))
                || resource_id.is_some_and(|r| {
                    i.identity
                        .resource_id
                        .as_deref()
                        .is_some_and(|own| own.eq_ignore_ascii_case(r))
                }))
    });
    let Some(found) = found else {
        tracing::info!(
            client_id,
            resource_id,
            "simulated IMDS: no such user-assigned identity"
        );
        return imds_error(400, "invalid_request", "Identity not found");
    };
    let id = &found.identity;
    let (token, claims) = services
        .tokens
        .issue(&id.tenant_id, &id.client_id, resource);
    let expires_on = claims
        .expires_at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let lifetime = services.tokens.lifetime().as_secs();
    json_response(
        200,
        &json!({
            "access_token": token,
            "client_id": id.client_id,
            "expires_in": lifetime.to_string(),
            "expires_on": expires_on.to_string(),
            "ext_expires_in": lifetime.to_string(),
            "not_before": now.to_string(),
            "resource": resource,
            "token_type": "Bearer",
        }),
    )
}
