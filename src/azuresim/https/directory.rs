//! Where the simulated Entra ID looks up the identities it knows: the AzureClusterIdentity objects
//! of the local control plane and their Secrets (what a real tenant holds as app registrations,
//! their client secrets and certificates, and its managed identities).

use crate::azure::secret::SecretMaterial;
use crate::identity::{
    AzureIdentity, CLIENT_SECRET_KEY, IDENTITY_GROUP, IDENTITY_KIND, IDENTITY_VERSION,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use std::sync::{Arc, RwLock};

/// An identity as the simulated tenant knows it, with its credential material when it has one
/// (the Secret's `clientSecret`: a client secret, or a certificate's PEM).
#[derive(Debug, Clone)]
pub struct SimIdentity {
    pub identity: AzureIdentity,
    pub secret: Option<SecretMaterial>,
}

/// The directory could not be read (the local control plane did not answer).
#[derive(Debug, Clone, thiserror::Error)]
#[error("reading the simulated tenant's identities: {0}")]
pub struct DirectoryError(pub String);

/// The identities the simulated Entra ID knows.
#[async_trait::async_trait]
pub trait IdentityDirectory: Send + Sync + 'static {
    async fn identities(&self) -> Result<Vec<SimIdentity>, DirectoryError>;
}

/// The local control plane's AzureClusterIdentity objects and their Secrets.
#[derive(Clone)]
pub struct ControlPlaneDirectory {
    client: kube::Client,
}

impl ControlPlaneDirectory {
    pub fn new(client: kube::Client) -> ControlPlaneDirectory {
        ControlPlaneDirectory { client }
    }
}

fn identity_resource() -> ApiResource {
    ApiResource {
        group: IDENTITY_GROUP.into(),
        version: IDENTITY_VERSION.into(),
        api_version: format!("{IDENTITY_GROUP}/{IDENTITY_VERSION}"),
        kind: IDENTITY_KIND.into(),
        plural: "azureclusteridentities".into(),
    }
}

#[async_trait::async_trait]
impl IdentityDirectory for ControlPlaneDirectory {
    async fn identities(&self) -> Result<Vec<SimIdentity>, DirectoryError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &identity_resource());
        let list = match api.list(&ListParams::default()).await {
            Ok(l) => l,
            // No such type served: a tenant without identities.
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Vec::new()),
            Err(e) => return Err(DirectoryError(e.to_string())),
        };
        let mut out = Vec::new();
        for obj in list.items {
            let Ok(value) = serde_json::to_value(&obj) else {
                continue;
            };
            // An identity that does not parse is unknown to the tenant.
            let Ok(identity) = AzureIdentity::parse(&value) else {
                continue;
            };
            let secret = match &identity.secret_ref {
                Some(r) => {
                    let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &r.namespace);
                    let found = secrets
                        .get_opt(&r.name)
                        .await
                        .map_err(|e| DirectoryError(e.to_string()))?;
                    found
                        .and_then(|s| serde_json::to_value(s).ok())
                        .and_then(|v| SecretMaterial::from_secret_object(&v, CLIENT_SECRET_KEY))
                }
                None => None,
            };
            out.push(SimIdentity { identity, secret });
        }
        Ok(out)
    }
}

/// A fixed set of identities, replaceable at run time (tests; a rotated secret).
#[derive(Clone, Default)]
pub struct StaticDirectory {
    identities: Arc<RwLock<Vec<SimIdentity>>>,
}

impl StaticDirectory {
    pub fn new(identities: Vec<SimIdentity>) -> StaticDirectory {
        StaticDirectory {
            identities: Arc::new(RwLock::new(identities)),
        }
    }

    /// Replaces the identities the tenant knows.
    pub fn set(&self, identities: Vec<SimIdentity>) {
        *self.identities.write().unwrap_or_else(|e| e.into_inner()) = identities;
    }
}

#[async_trait::async_trait]
impl IdentityDirectory for StaticDirectory {
    async fn identities(&self) -> Result<Vec<SimIdentity>, DirectoryError> {
        Ok(self
            .identities
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone())
    }
}
