use super::*;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use serde_json::{Value, json};

const HOST: &str = "dev-kv.vault.azure.net";

fn request(method: &str, path: &str, token: Option<&str>, body: Value) -> Request<Bytes> {
    let mut b = Request::builder()
        .method(method)
        .uri(format!("{path}?api-version=2025-07-01"))
        .header("host", HOST);
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    b.body(body).unwrap()
}

fn body(r: &Response<Bytes>) -> Value {
    serde_json::from_slice(r.body()).unwrap()
}

fn sim() -> KeyVaults {
    KeyVaults::default()
}

/// Tokens `token-<client id>` are valid.
fn check(t: &str) -> Option<Caller> {
    t.strip_prefix("token-").map(|c| Caller {
        tenant: "t".into(),
        client_id: c.into(),
    })
}

trait Handle {
    fn handle(&self, req: &Request<Bytes>) -> Response<Bytes>;
}

impl Handle for KeyVaults {
    fn handle(&self, req: &Request<Bytes>) -> Response<Bytes> {
        self.answer(req, "https://login.microsoftonline.com/", &check)
    }
}

fn create(kv: &KeyVaults, name: &str) -> Response<Bytes> {
    kv.handle(&request(
        "POST",
        &format!("/keys/{name}/create"),
        Some("token-app"),
        json!({"kty": "RSA", "key_size": 2048}),
    ))
}

#[test]
fn a_request_without_a_token_gets_the_bearer_challenge() {
    let kv = sim();
    let r = kv.handle(&request("GET", "/keys/k/", None, Value::Null));
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap();
    assert_eq!(
        challenge,
        "Bearer authorization=\"https://login.microsoftonline.com/common\", resource=\"https://vault.azure.net\""
    );
    // A token the token endpoint did not issue is challenged too.
    let r = kv.handle(&request("GET", "/keys/k/", Some("forged"), Value::Null));
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(kv.challenges(), 2, "challenges count apart");
}

#[test]
fn get_create_get_and_versions() {
    let kv = sim();
    let r = kv.handle(&request("GET", "/keys/k/", Some("token-app"), Value::Null));
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(body(&r)["error"]["code"], "KeyNotFound");

    let r = create(&kv, "k");
    assert_eq!(r.status(), StatusCode::OK);
    let created = body(&r);
    let kid = created["key"]["kid"].as_str().unwrap().to_string();
    let version = kid.rsplit('/').next().unwrap().to_string();
    assert!(
        kid.starts_with("https://dev-kv.vault.azure.net/keys/k/"),
        "{kid}"
    );
    assert_eq!(version.len(), 32);
    assert!(version.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(created["key"]["kty"], "RSA");
    assert_eq!(created["key"]["e"], "AQAB");
    let n = URL_SAFE_NO_PAD_DECODE(created["key"]["n"].as_str().unwrap());
    assert_eq!(n.len(), 256, "2048 bits");
    assert!(n[0] & 0x80 != 0);

    for path in ["/keys/k", "/keys/k/", &format!("/keys/k/{version}")] {
        let r = kv.handle(&request("GET", path, Some("token-app"), Value::Null));
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(body(&r)["key"]["kid"], kid.as_str(), "{path}");
    }
    let r = kv.handle(&request(
        "GET",
        "/keys/k/versions",
        Some("token-app"),
        Value::Null,
    ));
    assert_eq!(body(&r)["value"][0]["kid"], kid.as_str());
    assert_eq!(kv.versions("dev-kv", "k"), vec![version]);
    let r = kv.handle(&request(
        "GET",
        "/keys/k/0000",
        Some("token-app"),
        Value::Null,
    ));
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[allow(non_snake_case)]
fn URL_SAFE_NO_PAD_DECODE(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

#[test]
fn only_rsa_keys_of_the_usual_sizes_are_created() {
    let kv = sim();
    for body in [
        json!({"kty": "EC", "crv": "P-256"}),
        json!({"kty": "RSA", "key_size": 1024}),
    ] {
        let r = kv.handle(&request("POST", "/keys/k/create", Some("token-app"), body));
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    }
    assert!(kv.versions("dev-kv", "k").is_empty());
}

#[test]
fn faults_are_answered_in_order_then_the_request_is_served() {
    let kv = sim();
    kv.plan("dev-kv", |p| {
        p.faults = VaultPlan::parse_faults("429:3, 503").unwrap();
    });
    let r = create(&kv, "k");
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()["retry-after"], "3");
    let r = create(&kv, "k");
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(create(&kv, "k").status(), StatusCode::OK);
    // Other vaults are not affected.
    kv.plan("dev-kv", |p| p.faults.push_back(Fault::Status(500)));
    let mut other = request("GET", "/keys/k", Some("token-app"), Value::Null);
    other
        .headers_mut()
        .insert("host", "other.vault.azure.net".parse().unwrap());
    assert_eq!(kv.handle(&other).status(), StatusCode::NOT_FOUND);
}

#[test]
fn fault_annotations_parse() {
    assert_eq!(
        VaultPlan::parse_faults("429:2,500, 503 ,429"),
        Some(VecDeque::from([
            Fault::Throttle {
                retry_after_secs: 2
            },
            Fault::Status(500),
            Fault::Status(503),
            Fault::Throttle {
                retry_after_secs: 1
            },
        ]))
    );
    assert_eq!(VaultPlan::parse_faults(""), Some(VecDeque::new()));
    assert_eq!(VaultPlan::parse_faults("404"), None);
    assert_eq!(VaultPlan::parse_faults("429:x"), None);
}

#[test]
fn a_denied_caller_gets_403_naming_its_client_id_only() {
    let kv = sim();
    kv.plan("dev-kv", |p| {
        p.denied.insert("app".into());
    });
    let r = create(&kv, "k");
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let text = String::from_utf8(r.body().to_vec()).unwrap();
    assert!(text.contains("'app'") && text.contains("dev-kv"), "{text}");
    assert!(!text.contains("token-app"), "no token in the answer");
}

#[test]
fn a_vault_with_access_policies_allows_only_whom_they_name() {
    let vault = json!({"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault",
    "metadata": {"name": "dev-kv", "namespace": "ns",
        "annotations": {FAULTS_ANNOTATION: "503"}},
    "spec": {"azureName": "dev-kv", "properties": {"accessPolicies": [
        {"tenantId": "t", "objectId": "reader", "permissions": {"keys": ["Get"]}},
        {"tenantId": "t", "applicationId": "app", "objectId": "o", "permissions": {"keys": ["get", "create"]}},
    ]}}});
    let kv = sim();
    kv.configure_vault(&vault);
    assert_eq!(create(&kv, "k").status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(create(&kv, "k").status(), StatusCode::OK);
    // The same annotation again does not replay the fault.
    kv.configure_vault(&vault);
    let reader = |method: &str, path: &str| {
        kv.handle(&request(
            method,
            path,
            Some("token-reader"),
            json!({"kty": "RSA"}),
        ))
        .status()
    };
    assert_eq!(reader("GET", "/keys/k"), StatusCode::OK);
    assert_eq!(reader("POST", "/keys/k/create"), StatusCode::FORBIDDEN);
    let stranger = kv.handle(&request("GET", "/keys/k", Some("token-x"), Value::Null));
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    // With RBAC authorization the access policies do not apply.
    let mut rbac = vault.clone();
    rbac["spec"]["properties"]["enableRbacAuthorization"] = json!(true);
    kv.configure_vault(&rbac);
    let stranger = kv.handle(&request("GET", "/keys/k", Some("token-x"), Value::Null));
    assert_eq!(stranger.status(), StatusCode::OK);
}

#[test]
fn requests_need_an_api_version_and_a_vault_host() {
    let kv = sim();
    let r = kv.handle(
        &Request::builder()
            .uri("/keys/k")
            .header("host", HOST)
            .header("authorization", "Bearer token-app")
            .body(Bytes::new())
            .unwrap(),
    );
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = kv.handle(
        &Request::builder()
            .uri("/keys/k?api-version=1")
            .header("host", "localhost:8443")
            .body(Bytes::new())
            .unwrap(),
    );
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = kv.handle(&request(
        "DELETE",
        "/keys/k",
        Some("token-app"),
        Value::Null,
    ));
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}
