//! The Key Vault keys wire protocol, one request at a time (see the module header): the bearer
//! challenge, the faults of the vault's plan, its access check, then the keys operations the
//! agent uses (get, create, versions, list).

use super::{Fault, KeyVaults, KeyVersion, TokenCheck, Vault};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;

use crate::azuresim::https::{KeyVaultHandler, SimResponse, SimServices, VaultRequest};
use http_body_util::Full;

/// The operations of the keys API the simulator serves.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Get {
        name: &'a str,
        version: Option<&'a str>,
    },
    Create {
        name: &'a str,
    },
    Versions {
        name: &'a str,
    },
    List,
}

impl Route<'_> {
    /// The key permission the operation needs (access policies' names).
    fn permission(&self) -> &'static str {
        match self {
            Route::Get { .. } => "get",
            Route::Create { .. } => "create",
            Route::Versions { .. } | Route::List => "list",
        }
    }
}

fn route<'a>(method: &Method, path: &'a str) -> Option<Route<'a>> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (&Method::GET, ["keys"]) => Some(Route::List),
        (&Method::GET, ["keys", name]) => Some(Route::Get {
            name,
            version: None,
        }),
        (&Method::GET, ["keys", name, "versions"]) => Some(Route::Versions { name }),
        (&Method::GET, ["keys", name, version]) => Some(Route::Get {
            name,
            version: Some(version),
        }),
        (&Method::POST, ["keys", name, "create"]) => Some(Route::Create { name }),
        _ => None,
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response<Bytes> {
    let mut r = Response::new(Bytes::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

fn error(status: StatusCode, code: &str, message: &str) -> Response<Bytes> {
    json_response(
        status,
        &json!({"error": {"code": code, "message": message}}),
    )
}

/// The request's host name, without its port.
fn host_of(req: &Request<Bytes>) -> String {
    let raw = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().host().map(str::to_string))
        .unwrap_or_default();
    let host = match raw.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => raw.as_str(),
    };
    host.to_ascii_lowercase()
}

fn query_param<'a>(req: &'a Request<Bytes>, name: &str) -> Option<&'a str> {
    req.uri()
        .query()?
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn bearer(req: &Request<Bytes>) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

/// A modulus of `bits` that looks like one: random, top bit set, odd. Not a real RSA key: the
/// simulator never encrypts with it.
fn fake_modulus(bits: usize) -> Vec<u8> {
    use ring::rand::SecureRandom;
    let mut n = vec![0u8; bits / 8];
    // Falls back to a fixed pattern if the system generator fails (it does not on Linux).
    if ring::rand::SystemRandom::new().fill(&mut n).is_err() {
        n.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i as u8).wrapping_mul(31));
    }
    n[0] |= 0x80;
    if let Some(last) = n.last_mut() {
        *last |= 1;
    }
    n
}

fn key_id(host: &str, name: &str, version: &str) -> String {
    format!("https://{host}/keys/{name}/{version}")
}

fn attributes(k: &KeyVersion) -> Value {
    json!({"enabled": true, "created": k.created, "updated": k.created, "exportable": false,
        "recoveryLevel": "Recoverable+Purgeable", "recoverableDays": 90})
}

fn bundle(host: &str, name: &str, k: &KeyVersion) -> Value {
    json!({
        "key": {"kid": key_id(host, name, &k.version), "kty": k.kty, "key_ops": k.ops,
            "n": URL_SAFE_NO_PAD.encode(&k.n), "e": URL_SAFE_NO_PAD.encode([1u8, 0, 1])},
        "attributes": attributes(k),
    })
}

fn not_found(vault: &str, name: &str) -> Response<Bytes> {
    error(
        StatusCode::NOT_FOUND,
        "KeyNotFound",
        &format!("Key '{name}' was not found in Key Vault '{vault}' (simulator)."),
    )
}

impl KeyVaults {
    /// The 401 a request without a usable token gets: the bearer challenge naming the tenant's
    /// authority and the vaults' resource (`https://<host minus the vault label>`).
    fn challenge(&self, authority: &str, suffix: &str, message: &str) -> Response<Bytes> {
        self.challenges.fetch_add(1, Ordering::Relaxed);
        let mut r = error(StatusCode::UNAUTHORIZED, "Unauthorized", message);
        let value = format!(
            "Bearer authorization=\"{}/common\", resource=\"https://{suffix}\"",
            authority.trim_end_matches('/')
        );
        if let Ok(v) = HeaderValue::from_str(&value) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }

    /// Answers one request to a vault host (`<vault>.<dns suffix>`): `authority` is the Entra ID
    /// authority host the challenge names, `check` says whose a bearer token is.
    pub fn answer(
        &self,
        req: &Request<Bytes>,
        authority: &str,
        check: TokenCheck<'_>,
    ) -> Response<Bytes> {
        let host = host_of(req);
        let Some((vault, suffix)) = host
            .split_once('.')
            .filter(|(v, s)| !v.is_empty() && s.contains('.'))
        else {
            return error(
                StatusCode::BAD_REQUEST,
                "BadParameter",
                &format!("'{host}' is not a Key Vault host name (simulator)"),
            );
        };
        let Some(token) = bearer(req) else {
            return self.challenge(authority, suffix, "Request is missing a Bearer token.");
        };
        let Some(caller) = check(token) else {
            return self.challenge(
                authority,
                suffix,
                "The bearer token is not one the simulated Entra ID issued for Key Vault, or it expired.",
            );
        };
        if query_param(req, "api-version").is_none_or(str::is_empty) {
            return error(
                StatusCode::BAD_REQUEST,
                "BadParameter",
                "The 'api-version' query parameter is missing.",
            );
        }
        let Some(route) = route(req.method(), req.uri().path()) else {
            return error(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!(
                    "{} {} is not served by the simulated Key Vault",
                    req.method(),
                    req.uri().path()
                ),
            );
        };
        let mut state = self.state.lock().expect("key vault state");
        let v = state.vaults.entry(vault.to_string()).or_default();
        if let Some(fault) = v.plan.faults.pop_front() {
            return fault_response(&fault, vault);
        }
        if !v.plan.allows(&caller.client_id, route.permission()) {
            return error(
                StatusCode::FORBIDDEN,
                "Forbidden",
                &format!(
                    "The application '{}' does not have keys {} permission on Key Vault '{vault}' (simulator).",
                    caller.client_id,
                    route.permission()
                ),
            );
        }
        serve(v, &host, vault, route, req.body())
    }
}

fn fault_response(fault: &Fault, vault: &str) -> Response<Bytes> {
    match fault {
        Fault::Throttle { retry_after_secs } => {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "Throttled",
                &format!("Too many requests to Key Vault '{vault}' (simulated throttling)."),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            r
        }
        Fault::Status(code) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let code = if status == StatusCode::SERVICE_UNAVAILABLE {
                "ServiceUnavailable"
            } else {
                "InternalServerError"
            };
            error(
                status,
                code,
                &format!("Key Vault '{vault}' failed the request (simulated fault)."),
            )
        }
    }
}

fn serve(v: &mut Vault, host: &str, vault: &str, route: Route, body: &Bytes) -> Response<Bytes> {
    match route {
        Route::Get { name, version } => {
            let found = v.keys.get(name).and_then(|l| match version {
                None => l.last(),
                Some(ver) => l.iter().find(|k| k.version == ver),
            });
            match found {
                Some(k) => json_response(StatusCode::OK, &bundle(host, name, k)),
                None => not_found(vault, name),
            }
        }
        Route::Versions { name } => match v.keys.get(name) {
            Some(l) => {
                let value: Vec<Value> = l
                    .iter()
                    .map(|k| json!({"kid": key_id(host, name, &k.version), "attributes": attributes(k)}))
                    .collect();
                json_response(StatusCode::OK, &json!({"value": value, "nextLink": null}))
            }
            None => not_found(vault, name),
        },
        Route::List => {
            let value: Vec<Value> = v
                .keys
                .iter()
                .filter_map(|(name, l)| {
                    let k = l.last()?;
                    Some(json!({"kid": format!("https://{host}/keys/{name}"), "attributes": attributes(k)}))
                })
                .collect();
            json_response(StatusCode::OK, &json!({"value": value, "nextLink": null}))
        }
        Route::Create { name } => match create(body) {
            Ok((kty, bits, ops)) => {
                let k = KeyVersion {
                    version: uuid::Uuid::new_v4().simple().to_string(),
                    kty,
                    n: fake_modulus(bits),
                    ops,
                    created: chrono::Utc::now().timestamp(),
                };
                let out = bundle(host, name, &k);
                v.keys.entry(name.to_string()).or_default().push(k);
                json_response(StatusCode::OK, &out)
            }
            Err(message) => error(StatusCode::BAD_REQUEST, "BadParameter", &message),
        },
    }
}

/// The key type, size and operations a create body asks for; RSA keys only.
fn create(body: &Bytes) -> Result<(String, usize, Vec<String>), String> {
    let params: Value =
        serde_json::from_slice(body).map_err(|e| format!("the request body is not JSON: {e}"))?;
    let kty = params["kty"].as_str().unwrap_or("");
    if !matches!(kty, "RSA" | "RSA-HSM") {
        return Err(format!(
            "kty '{kty}': the simulated Key Vault creates RSA keys only"
        ));
    }
    let bits = params["key_size"].as_u64().unwrap_or(2048) as usize;
    if !matches!(bits, 2048 | 3072 | 4096) {
        return Err(format!(
            "key_size {bits} is not supported for RSA keys (2048, 3072 or 4096)"
        ));
    }
    let ops = match params["key_ops"].as_array() {
        Some(l) => l
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        None => [
            "encrypt",
            "decrypt",
            "sign",
            "verify",
            "wrapKey",
            "unwrapKey",
        ]
        .map(str::to_string)
        .to_vec(),
    };
    Ok((kty.to_string(), bits, ops))
}

/// The simulator's HTTPS listener hands every `<vault>.vault.<cloud>.azure-sim.invalid` request
/// here. A token counts when the simulated Entra ID issued it for this cloud's vaults.
#[async_trait::async_trait]
impl KeyVaultHandler for KeyVaults {
    async fn handle(&self, services: &SimServices, request: VaultRequest) -> SimResponse {
        let endpoints = services.endpoints(request.environment);
        let resource = endpoints.key_vault_resource();
        let check = |token: &str| {
            let claims = services.tokens.validate(token).ok()?;
            (claims.resource == resource).then_some(super::Caller {
                tenant: claims.tenant_id,
                client_id: claims.client_id,
            })
        };
        let mut req = Request::new(request.body);
        *req.method_mut() = request.method;
        *req.uri_mut() = request.uri;
        *req.headers_mut() = request.headers;
        let host = format!("{}.{}", request.vault, endpoints.key_vault_suffix);
        if let Ok(h) = HeaderValue::from_str(&host) {
            req.headers_mut().insert(header::HOST, h);
        }
        let answer = self.answer(&req, &endpoints.authority_host, &check);
        if answer.status() != StatusCode::UNAUTHORIZED {
            services.counts.count_key_vault();
        }
        let (parts, body) = answer.into_parts();
        let mut r = http::Response::new(Full::new(body));
        *r.status_mut() = parts.status;
        *r.headers_mut() = parts.headers;
        r
    }
}
