//! The certificates of the simulated guest clusters' API (`guest`): a CA of the simulator's own
//! and, at each start, a leaf for `127.0.0.1` signed by it.
//!
//! Unlike the Azure endpoints' CA (`https::tls`, in memory, new each run), this CA is kept in
//! the control plane (Secret [`CA_SECRET`] in `aro-gitops-system`, marked simulated): the
//! kubeconfig Secrets carry its certificate, and a CA that changed every run would rewrite every
//! kubeconfig Secret on every start and fail the guests' reads until then. Its key never leaves
//! that Secret and this process's memory; the leaf's key lives in memory only.

use super::FIELD_MANAGER;
use super::secret::{SIMULATED_ANNOTATION, SIMULATED_NOTE};
use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use std::sync::Arc;

/// Where the guest API's CA is kept.
pub const CA_SECRET: &str = "azure-simulator-guest-ca";
const NAMESPACE: &str = "aro-gitops-system";
const CA_NAME: &str = "aro-gitops simulated guest clusters CA";

/// Why the guest API's certificates could not be had.
#[derive(Debug, thiserror::Error)]
#[error("the simulated guest API's certificates: {0}")]
pub struct GuestCertError(String);

impl From<rcgen::Error> for GuestCertError {
    fn from(e: rcgen::Error) -> Self {
        GuestCertError(e.to_string())
    }
}

impl From<rustls::Error> for GuestCertError {
    fn from(e: rustls::Error) -> Self {
        GuestCertError(e.to_string())
    }
}

/// The CA's parameters: the same at every start, so a leaf signed with the kept key chains to the
/// kept certificate.
fn ca_params() -> Result<CertificateParams, GuestCertError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_NAME);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    Ok(params)
}

/// The guest API's TLS: the server configuration and the CA certificate (PEM) clients trust.
pub struct GuestTls {
    pub server: Arc<rustls::ServerConfig>,
    pub ca_pem: String,
}

impl std::fmt::Debug for GuestTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestTls").finish_non_exhaustive()
    }
}

/// A new CA: (certificate PEM, key PEM).
pub fn new_ca() -> Result<(String, String), GuestCertError> {
    let key = KeyPair::generate()?;
    let cert = ca_params()?.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The TLS of the guest API from the CA (`ca_pem`, `ca_key_pem`): a new leaf for 127.0.0.1.
pub fn tls_from(ca_pem: &str, ca_key_pem: &str) -> Result<GuestTls, GuestCertError> {
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    let issuer = Issuer::new(ca_params()?, ca_key);
    let leaf_key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()])?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "aro-gitops simulated guest cluster API");
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = params.signed_by(&leaf_key, &issuer)?;
    let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from(leaf.der().to_vec())],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    )?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(GuestTls {
        server: Arc::new(server),
        ca_pem: ca_pem.to_string(),
    })
}

/// The guest API's TLS, from the CA kept in the control plane; a new CA (then kept) when there is
/// none or it cannot be used.
pub async fn load_or_create(client: &Client) -> Result<GuestTls, GuestCertError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let field = |s: &Secret, k: &str| {
        s.data
            .as_ref()?
            .get(k)
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
    };
    if let Ok(Some(s)) = secrets.get_opt(CA_SECRET).await
        && let (Some(cert), Some(key)) = (field(&s, "ca.crt"), field(&s, "ca.key"))
    {
        match tls_from(&cert, &key) {
            Ok(tls) => return Ok(tls),
            Err(error) => {
                tracing::warn!(%error, "the kept guest API CA cannot be used; making a new one")
            }
        }
    }
    let (cert, key) = new_ca()?;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let body = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": CA_SECRET, "namespace": NAMESPACE,
            "annotations": {SIMULATED_ANNOTATION: SIMULATED_NOTE}},
        "data": {"ca.crt": b64(&cert), "ca.key": b64(&key)}});
    if let Err(error) = secrets
        .patch(
            CA_SECRET,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
    {
        // Still served; the next start makes another CA (and rewrites the kubeconfigs).
        tracing::warn!(%error, "the guest API CA could not be kept");
    }
    tls_from(&cert, &key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_ca_signs_new_leaves_and_stays_the_same() {
        let (cert, key) = new_ca().unwrap();
        let a = tls_from(&cert, &key).unwrap();
        let b = tls_from(&cert, &key).unwrap();
        assert_eq!(a.ca_pem, b.ca_pem);
        assert!(a.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(!format!("{a:?}").contains("PRIVATE"));
        assert!(tls_from(&cert, "not a key").is_err());
    }
}
