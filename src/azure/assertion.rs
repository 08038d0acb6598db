//! Certificate credentials without OpenSSL: the client assertion (a JWT signed with the
//! certificate's RSA key, RFC 7523 as Entra ID takes it) made with ring, handed to
//! `azure_identity::ClientAssertionCredential`. The crate's own `ClientCertificateCredential` needs
//! its `openssl` feature, which would bring a second TLS/crypto stack into the binary.
//!
//! The JWT: header `{"alg":"PS256","typ":"JWT","x5t#S256":<SHA-256 of the certificate>}`, claims
//! `aud` (the token endpoint), `iss` = `sub` = the client ID, `jti`, `nbf`, `iat`, `exp` (10
//! minutes). [`verify`] is the other side, used by the simulated Entra ID.

use super::secret::SecretMaterial;
use azure_core::error::{Error, ErrorKind};
use azure_core::http::ClientMethodOptions;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PSS_SHA256, RsaKeyPair};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// How long an assertion is valid.
const ASSERTION_LIFETIME_SECS: u64 = 600;

/// A certificate's PEM that cannot be used. Never carries the PEM.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    #[error("the certificate material holds no CERTIFICATE block")]
    NoCertificate,
    #[error("the certificate material holds no private key")]
    NoKey,
    #[error("the certificate's private key is not an RSA key (Entra ID takes RSA certificates)")]
    NotRsa,
}

/// A certificate and its RSA key, parsed from PEM (the Secret's `clientSecret`).
pub struct CertificateKey {
    cert: CertificateDer<'static>,
    key: RsaKeyPair,
}

impl std::fmt::Debug for CertificateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertificateKey([redacted])")
    }
}

/// The first certificate in `pem`.
pub fn first_certificate(pem: &[u8]) -> Result<CertificateDer<'static>, CertificateError> {
    CertificateDer::pem_slice_iter(pem)
        .find_map(Result::ok)
        .ok_or(CertificateError::NoCertificate)
}

impl CertificateKey {
    pub fn from_pem(material: &SecretMaterial) -> Result<CertificateKey, CertificateError> {
        let pem = material.expose();
        let cert = first_certificate(pem)?;
        let key = PrivateKeyDer::from_pem_slice(pem).map_err(|_| CertificateError::NoKey)?;
        let key = match &key {
            PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
            PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
            _ => return Err(CertificateError::NotRsa),
        }
        .map_err(|_| CertificateError::NotRsa)?;
        Ok(CertificateKey { cert, key })
    }

    /// A signed assertion for `client_id` at `token_endpoint`.
    pub fn assertion(&self, client_id: &str, token_endpoint: &str) -> Result<String, String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let thumbprint = ring::digest::digest(&ring::digest::SHA256, self.cert.as_ref());
        let header = json!({"alg": "PS256", "typ": "JWT", "x5t#S256": B64.encode(thumbprint)});
        let claims = json!({
            "aud": token_endpoint,
            "iss": client_id,
            "sub": client_id,
            "jti": uuid::Uuid::new_v4().to_string(),
            "nbf": now,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME_SECS,
        });
        let signing_input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let mut signature = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PSS_SHA256,
                &SystemRandom::new(),
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| "signing the client assertion failed".to_string())?;
        Ok(format!("{signing_input}.{}", B64.encode(signature)))
    }
}

/// The [`azure_identity::ClientAssertion`] of a certificate identity.
#[derive(Debug, Clone)]
pub struct CertificateAssertion {
    pub key: Arc<CertificateKey>,
    pub client_id: String,
    pub token_endpoint: String,
}

#[async_trait::async_trait]
impl azure_identity::ClientAssertion for CertificateAssertion {
    async fn secret(&self, _: Option<ClientMethodOptions<'_>>) -> azure_core::Result<String> {
        self.key
            .assertion(&self.client_id, &self.token_endpoint)
            .map_err(|m| Error::with_message(ErrorKind::Credential, m))
    }
}

/// A JWT split into its parts (no signature check).
#[derive(Debug, Clone)]
pub struct Jwt {
    pub header: Value,
    pub claims: Value,
    signing_input: String,
    signature: Vec<u8>,
}

/// Parses a compact JWT; `None` when it is not one.
pub fn parse_jwt(token: &str) -> Option<Jwt> {
    let mut parts = token.split('.');
    let (h, c, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let header = serde_json::from_slice(&B64.decode(h).ok()?).ok()?;
    let claims = serde_json::from_slice(&B64.decode(c).ok()?).ok()?;
    Some(Jwt {
        header,
        claims,
        signing_input: format!("{h}.{c}"),
        signature: B64.decode(s).ok()?,
    })
}

/// Why an assertion was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssertionRejection {
    Malformed,
    BadSignature,
    WrongClaims(&'static str),
    Expired,
}

/// Checks `jwt` as Entra ID checks a certificate assertion: signed (PS256 or RS256) by the key of
/// `cert_der`, for `client_id` (`iss`, `sub`), at `token_endpoint` (`aud`), not expired.
pub fn verify(
    jwt: &Jwt,
    cert_der: &CertificateDer<'_>,
    client_id: &str,
    token_endpoint: &str,
) -> Result<(), AssertionRejection> {
    let alg = match jwt.header.get("alg").and_then(Value::as_str) {
        Some("PS256") => webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
        Some("RS256") => webpki::ring::RSA_PKCS1_2048_8192_SHA256,
        _ => return Err(AssertionRejection::Malformed),
    };
    let cert =
        webpki::EndEntityCert::try_from(cert_der).map_err(|_| AssertionRejection::Malformed)?;
    cert.verify_signature(alg, jwt.signing_input.as_bytes(), &jwt.signature)
        .map_err(|_| AssertionRejection::BadSignature)?;
    let claim = |n: &str| jwt.claims.get(n).and_then(Value::as_str);
    if claim("iss") != Some(client_id) || claim("sub") != Some(client_id) {
        return Err(AssertionRejection::WrongClaims("iss/sub"));
    }
    let aud = claim("aud").unwrap_or_default();
    if aud.trim_end_matches('/') != token_endpoint.trim_end_matches('/') {
        return Err(AssertionRejection::WrongClaims("aud"));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    match jwt.claims.get("exp").and_then(Value::as_u64) {
        Some(exp) if exp > now => Ok(()),
        _ => Err(AssertionRejection::Expired),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwt_parts_parse_and_junk_does_not() {
        let t = format!(
            "{}.{}.{}",
            B64.encode(r#"{"alg":"none"}"#),
            B64.encode(r#"{"sub":"x"}"#),
            B64.encode("sig")
        );
        let jwt = parse_jwt(&t).unwrap();
        assert_eq!(jwt.claims["sub"], "x");
        assert!(parse_jwt("a.b").is_none());
        assert!(parse_jwt("not a jwt").is_none());
        assert!(parse_jwt(&format!("{t}.extra")).is_none());
    }

    #[test]
    fn pem_without_a_certificate_is_refused_without_echoing_it() {
        let m = SecretMaterial::new("this-is-not-pem-secret-value");
        let err = CertificateKey::from_pem(&m).unwrap_err();
        assert_eq!(err, CertificateError::NoCertificate);
        assert!(!err.to_string().contains("secret-value"));
    }
}
