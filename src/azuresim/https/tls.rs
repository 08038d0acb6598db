//! The agent's own certificate authority, made in memory at start-up, and the leaf certificate of
//! the simulator's listener (every simulated host name, see `azure::endpoints`).
//! Nothing is written to disk: a new run has a new CA, and only this process trusts it.

use crate::azure::endpoints::sim_certificate_names;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// Why the CA or the listener's certificate could not be made.
#[derive(Debug, thiserror::Error)]
#[error("making the Azure simulator's certificates: {0}")]
pub struct CertError(String);

impl From<rcgen::Error> for CertError {
    fn from(e: rcgen::Error) -> Self {
        CertError(e.to_string())
    }
}

impl From<rustls::Error> for CertError {
    fn from(e: rustls::Error) -> Self {
        CertError(e.to_string())
    }
}

/// The CA (its certificate only: the key signs the leaf and is dropped) and the listener's leaf.
pub struct SimCertificates {
    /// The CA certificate the simulated transport trusts.
    pub ca_der: CertificateDer<'static>,
    /// The CA in PEM, for a client outside this process that should trust it.
    pub ca_pem: String,
    leaf: CertificateDer<'static>,
    leaf_key: PrivatePkcs8KeyDer<'static>,
}

impl std::fmt::Debug for SimCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCertificates")
            .field("leaf_key", &"[redacted]")
            .finish_non_exhaustive()
    }
}

impl SimCertificates {
    /// A fresh CA and a leaf for every simulated host name, signed by it.
    pub fn generate() -> Result<SimCertificates, CertError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            "aro-gitops Azure simulator CA (in memory, this process only)",
        );
        ca_params.distinguished_name = dn;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf_key = KeyPair::generate()?;
        let mut leaf_params = CertificateParams::new(sim_certificate_names())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "aro-gitops Azure simulator");
        leaf_params.distinguished_name = dn;
        leaf_params.is_ca = IsCa::ExplicitNoCa;
        leaf_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = leaf_params.signed_by(&leaf_key, &issuer)?;
        Ok(SimCertificates {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
            leaf: leaf.der().clone(),
            leaf_key: PrivatePkcs8KeyDer::from(leaf_key.serialize_der()),
        })
    }

    /// The listener's TLS configuration (ring, HTTP/1.1).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, CertError> {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![self.leaf.clone()],
            PrivateKeyDer::Pkcs8(self.leaf_key.clone_key()),
        )?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_signs_a_leaf_the_server_can_use() {
        let certs = SimCertificates::generate().unwrap();
        assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        certs.server_config().unwrap();
        assert!(!format!("{certs:?}").contains("PRIVATE"));
    }

    #[test]
    fn each_start_makes_a_new_ca() {
        let a = SimCertificates::generate().unwrap();
        let b = SimCertificates::generate().unwrap();
        assert_ne!(a.ca_der, b.ca_der);
    }
}
