//! The agent's [`AccessSource`]: an AROControlPlane's `identityRef` read from the cluster (the
//! AzureClusterIdentity, its namespace rule, its Secret), its credential from the process's
//! credential cache, its cloud's endpoints and client options (real, or the simulator's: see
//! [`AzureAccess`]).

use super::{AccessSource, VaultAccess};
use crate::apply::Cluster;
use crate::azure::AzureEnvironment;
use crate::azure::access::AzureAccess;
use crate::azure::credential::CredentialRequest;
use crate::azure::secret::SecretMaterial;
use crate::identity::{
    AzureIdentity, CLIENT_SECRET_KEY, IdentityError, NOT_ALLOWED_MESSAGE, identity_key,
    identity_ref_of, namespace_labels,
};
use crate::object::{ObjectKey, str_at};
use futures::future::BoxFuture;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Identities from the cluster, credentials from the cache.
pub struct ClusterAccess {
    cluster: Cluster,
    azure: Arc<AzureAccess>,
}

impl ClusterAccess {
    pub fn new(cluster: Cluster, azure: Arc<AzureAccess>) -> ClusterAccess {
        ClusterAccess { cluster, azure }
    }

    async fn get(&self, key: &ObjectKey) -> Result<Option<Value>, String> {
        self.cluster
            .get(key)
            .await
            .map_err(|e| format!("reading {key}: {e}"))
    }

    async fn resolve(&self, acp: &Value) -> Result<VaultAccess, String> {
        let namespace = str_at(acp, "/metadata/namespace").unwrap_or("");
        let referrer = format!(
            "AROControlPlane {namespace}/{}",
            str_at(acp, "/metadata/name").unwrap_or("")
        );
        let (id_ns, id_name) =
            identity_ref_of(acp).ok_or_else(|| format!("{referrer}: no spec.identityRef"))?;
        let environment = AzureEnvironment::parse(str_at(acp, "/spec/azureEnvironment"))
            .map_err(|e| format!("{referrer}: {e}"))?;
        let object = self
            .get(&identity_key(&id_ns, &id_name))
            .await?
            .ok_or_else(|| {
                IdentityError::Missing {
                    referrer: referrer.clone(),
                    namespace: id_ns.clone(),
                    name: id_name.clone(),
                }
                .to_string()
            })?;
        let identity = AzureIdentity::parse(&object).map_err(|e| e.to_string())?;
        let ns_key = ObjectKey {
            group: Default::default(),
            version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            name: namespace.to_string(),
        };
        let labels = self
            .get(&ns_key)
            .await?
            .map(|n| namespace_labels(&n))
            .unwrap_or_default();
        if !identity.allows(namespace, &labels) {
            return Err(format!(
                "{referrer}: AzureClusterIdentity {id_ns}/{id_name}: {NOT_ALLOWED_MESSAGE}"
            ));
        }
        let secret = match identity.required_secret().map_err(|e| e.to_string())? {
            Some(r) => {
                let found = self.get(&r.key()).await?;
                identity
                    .check_secret(found.as_ref())
                    .map_err(|e| e.to_string())?;
                found
                    .as_ref()
                    .and_then(|s| SecretMaterial::from_secret_object(s, CLIENT_SECRET_KEY))
            }
            None => None,
        };
        let endpoints = self.azure.endpoints(environment);
        let mut request = CredentialRequest::from_identity(&identity, secret, endpoints.clone());
        request.federated_token_file = self.azure.federated_token_file().map(Path::to_path_buf);
        let credential = self
            .azure
            .credentials()
            .credential(&request)
            .map_err(|e| e.to_string())?;
        Ok(VaultAccess {
            credential,
            options: self.azure.client_options(&endpoints),
            endpoints,
            identity: format!(
                "AzureClusterIdentity {id_ns}/{id_name} (client ID {})",
                identity.client_id
            ),
        })
    }
}

impl AccessSource for ClusterAccess {
    fn access<'a>(&'a self, acp: &'a Value) -> BoxFuture<'a, Result<VaultAccess, String>> {
        Box::pin(self.resolve(acp))
    }
}
