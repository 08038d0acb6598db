//! The real Azure SDK (`azure_identity`) against the simulator's loopback HTTPS endpoints: a token
//! for every identity type the build supports, the failures Azure gives (wrong secret, unknown
//! identity, bad certificate signature), a client that does not trust the agent's CA, and the
//! process's credential cache (shared identity, rotated secret, errors not cached, single flight).

use aro_gitops::azure::AzureEnvironment;
use aro_gitops::azure::credential::{CredentialCache, CredentialError, CredentialRequest};
use aro_gitops::azure::secret::SecretMaterial;
use aro_gitops::azuresim::https::directory::{SimIdentity, StaticDirectory};
use aro_gitops::azuresim::https::tokens::TOKEN_PREFIX;
use aro_gitops::azuresim::https::{SimHttps, SimHttpsConfig};
use aro_gitops::identity::{AzureIdentity, IdentityType};
use serde_json::json;
use std::sync::Arc;

const TENANT: &str = "00000000-0000-0000-0000-00000000aaaa";
const SCOPE: &str = "https://vault.public.azure-sim.invalid/.default";
const SECRET: &str = "planted-client-secret-value-1";
const ROTATED: &str = "planted-client-secret-value-2";
const WRONG: &str = "planted-wrong-secret-value";
const MSI_RESOURCE: &str = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/msi";
const KEY_A: &str = include_str!("../fixtures/azure/test-only-rsa-key.pem");
const KEY_B: &str = include_str!("../fixtures/azure/test-only-other-rsa-key.pem");

fn identity(name: &str, kind: &str, client: &str, extra: serde_json::Value) -> AzureIdentity {
    let mut spec =
        json!({"type": kind, "tenantID": TENANT, "clientID": client, "allowedNamespaces": {}});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    AzureIdentity::parse(&json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": name, "namespace": "identities"},
        "spec": spec,
    }))
    .unwrap()
}

fn sp(secret: &str) -> SimIdentity {
    SimIdentity {
        identity: identity(
            "sp",
            "ServicePrincipal",
            "client-sp",
            json!({"clientSecret": {"name": "sp-secret"}}),
        ),
        secret: Some(SecretMaterial::new(secret)),
    }
}

fn msi() -> SimIdentity {
    SimIdentity {
        identity: identity(
            "msi",
            "UserAssignedMSI",
            "client-msi",
            json!({"resourceID": MSI_RESOURCE}),
        ),
        secret: None,
    }
}

fn workload() -> SimIdentity {
    SimIdentity {
        identity: identity("wi", "WorkloadIdentity", "client-wi", json!({})),
        secret: None,
    }
}

/// A self-signed certificate for `key_pem`, in PEM.
fn certificate(key_pem: &str) -> String {
    let key = rcgen::KeyPair::from_pem(key_pem).unwrap();
    rcgen::CertificateParams::new(vec!["client-cert".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem()
}

/// The certificate identity; the tenant knows `cert_pem` (the certificate only).
fn cert_identity(cert_pem: &str) -> SimIdentity {
    SimIdentity {
        identity: identity(
            "cert",
            "ServicePrincipalCertificate",
            "client-cert",
            json!({"clientSecret": {"name": "cert-secret"}}),
        ),
        secret: Some(SecretMaterial::new(cert_pem)),
    }
}

struct Sim {
    server: SimHttps,
    directory: StaticDirectory,
    cache: CredentialCache,
    cert_pem: String,
    token_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn sim() -> Sim {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("federated-token");
    // A service-account token is a JWT; the simulated Entra ID checks its shape only.
    std::fs::write(
        &token_file,
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2ln",
    )
    .unwrap();
    let cert_pem = certificate(KEY_A);
    let directory = StaticDirectory::new(vec![
        sp(SECRET),
        cert_identity(&cert_pem),
        msi(),
        workload(),
    ]);
    let server = SimHttps::start(Arc::new(directory.clone()), SimHttpsConfig::default())
        .await
        .unwrap();
    let cache = CredentialCache::new(server.transport().unwrap());
    Sim {
        server,
        directory,
        cache,
        cert_pem,
        token_file,
        _dir: dir,
    }
}

impl Sim {
    fn request(&self, id: &SimIdentity, secret: Option<&str>) -> CredentialRequest {
        let mut r = CredentialRequest::from_identity(
            &id.identity,
            secret.map(SecretMaterial::new),
            self.server.endpoints(AzureEnvironment::AzurePublicCloud),
        );
        r.federated_token_file = Some(self.token_file.clone());
        r
    }

    fn tokens(&self) -> u64 {
        self.server.counts().token_requests()
    }
}

#[tokio::test]
async fn client_secret_gets_a_simulated_token_the_services_accept() {
    let s = sim().await;
    let token = s
        .cache
        .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
        .await
        .unwrap();
    assert!(token.token.secret().starts_with(TOKEN_PREFIX));
    assert!(token.expires_on > azure_core::time::OffsetDateTime::now_utc());
    let claims = s
        .server
        .services()
        .tokens
        .validate(token.token.secret())
        .unwrap();
    assert_eq!(claims.client_id, "client-sp");
    assert_eq!(claims.resource, "https://vault.public.azure-sim.invalid");
    assert_eq!(s.tokens(), 1);
}

#[tokio::test]
async fn a_wrong_client_secret_fails_as_azure_does_and_names_no_secret() {
    let s = sim().await;
    let err = s
        .cache
        .token(&s.request(&sp(SECRET), Some(WRONG)), SCOPE)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CredentialError::Token { .. }), "{err:?}");
    assert!(text.contains("AADSTS7000215"), "{text}");
    assert!(text.contains("identities/sp"), "{text}");
    for shown in [text, format!("{err:?}")] {
        assert!(!shown.contains(WRONG) && !shown.contains(SECRET), "{shown}");
    }
}

#[tokio::test]
async fn a_client_certificate_signs_an_assertion_the_tenant_verifies() {
    let s = sim().await;
    let id = cert_identity(&s.cert_pem);
    let with_key = format!("{}{KEY_A}", s.cert_pem);
    let token = s
        .cache
        .token(&s.request(&id, Some(&with_key)), SCOPE)
        .await
        .unwrap();
    assert!(token.token.secret().starts_with(TOKEN_PREFIX));

    // The same certificate with another key: the signature does not verify.
    let other_key = format!("{}{KEY_B}", s.cert_pem);
    let err = s
        .cache
        .token(&s.request(&id, Some(&other_key)), SCOPE)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("AADSTS700027"), "{err}");
    assert!(!err.to_string().contains("PRIVATE KEY"), "{err}");
}

#[tokio::test]
async fn a_user_assigned_managed_identity_by_client_or_resource_id() {
    let s = sim().await;
    let token = s
        .cache
        .token(&s.request(&msi(), None), SCOPE)
        .await
        .unwrap();
    assert!(token.token.secret().starts_with(TOKEN_PREFIX));

    let mut by_resource = msi();
    by_resource.identity.client_id = String::new();
    s.cache
        .token(&s.request(&by_resource, None), SCOPE)
        .await
        .unwrap();

    let mut unknown = msi();
    unknown.identity.client_id = "client-nobody".into();
    let err = s
        .cache
        .token(&s.request(&unknown, None), SCOPE)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has not been assigned"), "{err}");
    assert_eq!(s.tokens(), 3);
}

#[tokio::test]
async fn a_workload_identity_presents_its_federated_token() {
    let s = sim().await;
    let token = s
        .cache
        .token(&s.request(&workload(), None), SCOPE)
        .await
        .unwrap();
    assert!(token.token.secret().starts_with(TOKEN_PREFIX));
}

#[tokio::test]
async fn user_assigned_identity_credential_is_a_clear_per_cluster_error() {
    let s = sim().await;
    let mut id = msi();
    id.identity.kind = IdentityType::UserAssignedIdentityCredential;
    let err = s
        .cache
        .token(&s.request(&id, None), SCOPE)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not supported in this build"),
        "{err}"
    );
    assert_eq!(s.tokens(), 0);
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_agents_ca_fails() {
    let s = sim().await;
    // Another run's CA: same names, same listener, but not this run's certificate authority.
    let other = SimHttps::start(
        Arc::new(StaticDirectory::default()),
        SimHttpsConfig::default(),
    )
    .await
    .unwrap();
    let wrong =
        aro_gitops::azure::HyperTransport::simulated(other.ca_der(), s.server.addr()).unwrap();
    let cache = CredentialCache::new(wrong);
    let err = cache
        .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
        .await
        .unwrap_err();
    let text = err.to_string().to_lowercase();
    assert!(
        text.contains("certificate") || text.contains("tls"),
        "{text}"
    );
    assert!(text.contains("invalid peer certificate"), "{text}");
    assert_eq!(
        s.tokens(),
        0,
        "the handshake fails before any token request"
    );
}

#[tokio::test]
async fn clusters_sharing_an_identity_share_one_token_request() {
    let s = sim().await;
    for _cluster in 0..5 {
        s.cache
            .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
            .await
            .unwrap();
    }
    assert_eq!(s.tokens(), 1);
    assert_eq!(s.cache.len(), 1);
}

#[tokio::test]
async fn a_rotated_secret_makes_exactly_one_new_request_and_drops_the_old_credential() {
    let s = sim().await;
    s.cache
        .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
        .await
        .unwrap();
    s.directory.set(vec![sp(ROTATED)]);
    for _cluster in 0..3 {
        s.cache
            .token(&s.request(&sp(ROTATED), Some(ROTATED)), SCOPE)
            .await
            .unwrap();
    }
    assert_eq!(s.tokens(), 2);
    assert_eq!(s.cache.len(), 1, "the old credential is dropped");
}

#[tokio::test]
async fn errors_are_not_cached() {
    let s = sim().await;
    let wrong = s.request(&sp(SECRET), Some(WRONG));
    s.cache.token(&wrong, SCOPE).await.unwrap_err();
    s.cache.token(&wrong, SCOPE).await.unwrap_err();
    assert_eq!(s.tokens(), 2, "each attempt asks again");
    for _ in 0..2 {
        s.cache
            .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
            .await
            .unwrap();
    }
    assert_eq!(s.tokens(), 3);
}

#[tokio::test]
async fn concurrent_callers_share_one_token_request() {
    let s = Arc::new(sim().await);
    let calls = (0..16).map(|_| {
        let s = s.clone();
        tokio::spawn(async move {
            s.cache
                .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
                .await
                .map(|t| t.token.secret().to_string())
        })
    });
    let tokens: Vec<String> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|r| r.unwrap().unwrap())
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(s.tokens(), 1);
}

#[tokio::test]
async fn the_authority_follows_the_cloud() {
    let s = sim().await;
    let mut china = s.request(&sp(SECRET), Some(SECRET));
    china.endpoints = s.server.endpoints(AzureEnvironment::AzureChinaCloud);
    s.cache
        .token(&china, "https://vault.china.azure-sim.invalid/.default")
        .await
        .unwrap();
    s.cache
        .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
        .await
        .unwrap();
    assert_eq!(s.tokens(), 2, "one credential per authority host");
    assert_eq!(s.cache.len(), 2);
}

/// The agent's wiring: the simulated tenant is the local control plane's AzureClusterIdentity
/// objects and their Secrets; a secret rotated there is what the tenant checks next.
#[tokio::test]
async fn the_tenant_is_the_control_planes_identities_and_secrets() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};

    let dir = tempfile::tempdir().unwrap();
    let cp = aro_gitops::controlplane::ControlPlane::open(aro_gitops::controlplane::Config::new(
        dir.path(),
    ))
    .unwrap();
    let client = cp.client();
    let apply = PatchParams::apply("sdk-test");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret = |value: &str| {
        serde_json::from_value::<Secret>(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sp-secret", "namespace": "default"},
            "stringData": {"clientSecret": value},
        }))
        .unwrap()
    };
    secrets
        .patch("sp-secret", &apply, &Patch::Apply(secret(SECRET)))
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "AzureClusterIdentity",
        ),
        "azureclusteridentities",
    );
    let identities: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let object = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": "sp", "namespace": "default"},
        "spec": {"type": "ServicePrincipal", "tenantID": TENANT, "clientID": "client-sp",
                 "clientSecret": {"name": "sp-secret", "namespace": "default"},
                 "allowedNamespaces": {}},
    });
    identities
        .patch(
            "sp",
            &apply,
            &Patch::Apply(serde_json::from_value::<DynamicObject>(object.clone()).unwrap()),
        )
        .await
        .unwrap();
    let identity = AzureIdentity::parse(&object).unwrap();

    let (server, access) = aro_gitops::agent::simulate_azure_endpoints(client.clone())
        .await
        .unwrap();
    let request = |value: &str| {
        CredentialRequest::from_identity(
            &identity,
            Some(SecretMaterial::new(value)),
            access.endpoints(AzureEnvironment::AzurePublicCloud),
        )
    };
    let token = access
        .credentials()
        .token(&request(SECRET), SCOPE)
        .await
        .unwrap();
    assert!(token.token.secret().starts_with(TOKEN_PREFIX));
    let err = access
        .credentials()
        .token(&request(WRONG), SCOPE)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("AADSTS7000215"), "{err}");

    // Rotated in the control plane: the new secret works, with one new token request.
    secrets
        .patch("sp-secret", &apply, &Patch::Apply(secret(ROTATED)))
        .await
        .unwrap();
    let before = server.counts().token_requests();
    for _cluster in 0..3 {
        access
            .credentials()
            .token(&request(ROTATED), SCOPE)
            .await
            .unwrap();
    }
    assert_eq!(server.counts().token_requests(), before + 1);
    drop(server);
    drop(cp);
}

/// A stand-in vault for the host-name plan: a bearer challenge naming the cloud's vault resource,
/// then KeyNotFound to an authorized request (the Key Vault API itself is another module's).
struct ChallengeThenNotFound;

#[async_trait::async_trait]
impl aro_gitops::azuresim::https::KeyVaultHandler for ChallengeThenNotFound {
    async fn handle(
        &self,
        services: &aro_gitops::azuresim::https::SimServices,
        request: aro_gitops::azuresim::https::VaultRequest,
    ) -> aro_gitops::azuresim::https::SimResponse {
        services.counts.count_key_vault();
        let endpoints = services.endpoints(request.environment);
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        match services.tokens.validate_bearer(bearer) {
            Ok(claims) if claims.resource == endpoints.key_vault_resource() => {
                aro_gitops::azuresim::https::json_response(
                    404,
                    &json!({"error": {"code": "KeyNotFound", "message": "no such key (simulated)"}}),
                )
            }
            _ => {
                let mut r = aro_gitops::azuresim::https::json_response(401, &json!({}));
                let challenge = format!(
                    "Bearer authorization=\"{}/{TENANT}\", resource=\"{}\"",
                    endpoints.authority_host,
                    endpoints.key_vault_resource()
                );
                r.headers_mut()
                    .insert("www-authenticate", challenge.parse().unwrap());
                r
            }
        }
    }
}

#[tokio::test]
async fn the_key_vault_sdk_accepts_the_simulated_challenge_without_switching_its_check_off() {
    use azure_security_keyvault_keys::{KeyClient, KeyClientOptions};
    let s = sim().await;
    s.server
        .set_key_vault_handler(Arc::new(ChallengeThenNotFound));
    let endpoints = s.server.endpoints(AzureEnvironment::AzurePublicCloud);
    let credential = s
        .cache
        .credential(&s.request(&sp(SECRET), Some(SECRET)))
        .unwrap();
    let client = KeyClient::new(
        &endpoints.vault_url("kv1"),
        credential,
        Some(KeyClientOptions {
            client_options: s.cache.client_options(&endpoints),
            ..Default::default()
        }),
    )
    .unwrap();
    let err = client.get_key("etcd-key", None).await.unwrap_err();
    assert_eq!(
        err.http_status(),
        Some(azure_core::http::StatusCode::NotFound),
        "{err}"
    );
    assert_eq!(
        s.server.counts().key_vault_requests(),
        2,
        "challenge, then the call"
    );
    assert_eq!(s.tokens(), 1);
}

/// The token endpoint's answers on the wire, for what the SDK never sends.
#[tokio::test]
async fn the_token_endpoint_answers_like_entra_id() {
    use azure_core::http::{HttpClient, Method, Request, Url};
    let s = sim().await;
    let transport = s.server.transport().unwrap();
    let authority = s
        .server
        .endpoints(AzureEnvironment::AzurePublicCloud)
        .authority_host;
    let post = |tenant: &str, body: &str| {
        let mut r = Request::new(
            Url::parse(&format!("{authority}/{tenant}/oauth2/v2.0/token")).unwrap(),
            Method::Post,
        );
        r.insert_header("content-type", "application/x-www-form-urlencoded");
        r.set_body(body.to_string());
        r
    };
    let cases = [
        (
            TENANT,
            "client_id=client-sp&scope=x%2F.default",
            400,
            900144,
        ),
        (
            TENANT,
            "grant_type=password&client_id=client-sp&scope=x%2F.default",
            400,
            70003,
        ),
        (
            TENANT,
            "grant_type=client_credentials&client_id=client-sp&scope=https%3A%2F%2Fx&client_secret=a",
            400,
            1002012,
        ),
        (
            "other-tenant",
            "grant_type=client_credentials&client_id=client-sp&scope=x%2F.default&client_secret=a",
            400,
            90002,
        ),
        (
            TENANT,
            "grant_type=client_credentials&client_id=nobody&scope=x%2F.default&client_secret=a",
            400,
            700016,
        ),
        (
            TENANT,
            "grant_type=client_credentials&client_id=client-sp&scope=x%2F.default",
            401,
            7000218,
        ),
    ];
    for (tenant, body, status, code) in cases {
        let response = transport
            .execute_request(&post(tenant, body))
            .await
            .unwrap();
        let status_seen = u16::from(response.status());
        let (_, _, body_stream) = response.deconstruct();
        let bytes = body_stream.collect().await.unwrap();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(status_seen, status, "{body}: {json}");
        assert_eq!(json["error_codes"][0], code, "{body}: {json}");
        assert!(
            json["error_description"]
                .as_str()
                .unwrap()
                .starts_with(&format!("AADSTS{code}: ")),
            "{json}"
        );
    }
    assert_eq!(s.tokens(), cases.len() as u64);
}

/// Everything logged at any level (ours and the SDK's) while tokens are got, refused and used.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test]
async fn no_secret_or_token_reaches_the_log_at_any_level() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .finish();
    // The process's global subscriber (no other test of this binary sets one): a scoped one
    // misses events when tests run in parallel, as tracing decides per call site process-wide
    // which are enabled. Other tests' lines land here too, and are searched as well.
    tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");

    let s = sim().await;
    let token = s
        .cache
        .token(&s.request(&sp(SECRET), Some(SECRET)), SCOPE)
        .await
        .unwrap();
    s.cache
        .token(&s.request(&sp(SECRET), Some(WRONG)), SCOPE)
        .await
        .unwrap_err();
    let with_key = format!("{}{KEY_A}", s.cert_pem);
    s.cache
        .token(
            &s.request(&cert_identity(&s.cert_pem), Some(&with_key)),
            SCOPE,
        )
        .await
        .unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    // The capture works: the token requests are in it.
    assert!(
        log.contains("oauth2/v2.0/token"),
        "the log was captured:\n{log}"
    );
    let key_line = KEY_A.lines().nth(1).unwrap();
    for planted in [SECRET, WRONG, token.token.secret(), key_line, TOKEN_PREFIX] {
        assert!(!log.contains(planted), "{planted:?} in the log:\n{log}");
    }
}
