//! Azure through its SDK: `azure_identity` credentials, the Key Vault keys client and Resource
//! Manager reads, over one transport (hyper + rustls with ring, the TLS stack kube uses).
//!
//! Layout: [`cloud`] (which cloud: `AROControlPlane.spec.azureEnvironment`), [`endpoints`] (its
//! hosts, real or simulated), [`resource_manager`] (ARM reads), [`retry_policy`] (a
//! [`crate::retry::RetryPlan`] as the SDK's retry policy), [`transport`] (the SDK's HTTP
//! client), [`secret`] (secret material that never shows), [`assertion`] (certificate
//! credentials signed with ring), [`published`] (where a simulator running against the cluster
//! says its endpoints are). Against the simulator only the endpoints and the trusted roots differ.

pub mod access;
pub mod assertion;
pub mod cloud;
pub mod credential;
pub mod endpoints;
pub mod published;
pub mod resource_manager;
pub mod retry_policy;
pub mod secret;
pub mod transport;

pub use access::AzureAccess;
pub use cloud::AzureEnvironment;
pub use endpoints::Endpoints;
pub use transport::HyperTransport;
