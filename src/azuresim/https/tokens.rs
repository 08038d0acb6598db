//! The access tokens the simulated Entra ID issues: opaque, clearly simulated, with an expiry, and
//! remembered so that the simulated services (Key Vault) can check a bearer token and learn whose
//! it is and for which resource. Tokens are never logged; only their holder and resource are.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// What every simulated token starts with, so that nobody mistakes one for a real token.
pub const TOKEN_PREFIX: &str = "simulated-entra-token.";

/// How long a simulated token lives unless configured otherwise (Entra's usual hour).
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// Whose a token is and what it is good for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClaims {
    pub tenant_id: String,
    pub client_id: String,
    /// The resource (the scope without `/.default`), e.g. `https://vault.public.azure-sim.invalid`.
    pub resource: String,
    pub expires_at: SystemTime,
}

/// Why a bearer token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("the access token is not one the simulated Entra ID issued")]
    Unknown,
    #[error("the access token has expired")]
    Expired,
}

/// The tokens issued so far (expired ones are dropped as new ones are issued).
#[derive(Debug)]
pub struct TokenStore {
    lifetime: Duration,
    issued: Mutex<HashMap<String, TokenClaims>>,
}

impl TokenStore {
    pub fn new(lifetime: Duration) -> TokenStore {
        TokenStore {
            lifetime,
            issued: Mutex::new(HashMap::new()),
        }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Issues a new token for `client_id` of `tenant_id` on `resource`; returns it and its claims.
    pub fn issue(&self, tenant_id: &str, client_id: &str, resource: &str) -> (String, TokenClaims) {
        let now = SystemTime::now();
        let token = format!("{TOKEN_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let claims = TokenClaims {
            tenant_id: tenant_id.to_string(),
            client_id: client_id.to_string(),
            resource: resource.trim_end_matches('/').to_string(),
            expires_at: now + self.lifetime,
        };
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        issued.retain(|_, c| c.expires_at > now);
        issued.insert(token.clone(), claims.clone());
        (token, claims)
    }

    /// Whose `token` is, if the simulated Entra ID issued it and it has not expired.
    pub fn validate(&self, token: &str) -> Result<TokenClaims, TokenRejection> {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let claims = issued.get(token).ok_or(TokenRejection::Unknown)?;
        if claims.expires_at <= SystemTime::now() {
            return Err(TokenRejection::Expired);
        }
        Ok(claims.clone())
    }

    /// Validates the token of an `Authorization: Bearer <token>` header value.
    pub fn validate_bearer(&self, header: Option<&str>) -> Result<TokenClaims, TokenRejection> {
        let token = header
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or(TokenRejection::Unknown)?;
        self.validate(token.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_validate_and_say_whose_they_are() {
        let store = TokenStore::new(DEFAULT_TOKEN_LIFETIME);
        let (token, claims) = store.issue("t1", "c1", "https://vault.x/");
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(claims.resource, "https://vault.x");
        assert_eq!(store.validate(&token), Ok(claims.clone()));
        assert_eq!(
            store.validate_bearer(Some(&format!("Bearer {token}"))),
            Ok(claims)
        );
        assert_eq!(store.validate("nope"), Err(TokenRejection::Unknown));
        assert_eq!(store.validate_bearer(None), Err(TokenRejection::Unknown));
    }

    #[test]
    fn expired_tokens_are_refused() {
        let store = TokenStore::new(Duration::ZERO);
        let (token, _) = store.issue("t1", "c1", "r");
        assert_eq!(store.validate(&token), Err(TokenRejection::Expired));
    }
}
