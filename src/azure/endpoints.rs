//! Where the Azure SDK clients send their requests: Entra ID (the authority host), Key Vault,
//! Resource Manager and the managed-identity endpoint, for a real cloud or for the simulator.
//!
//! The simulator's names sit under [`SIM_DOMAIN`] (`.invalid` is reserved: no real host can have
//! such a name), one subdomain per cloud so the cloud a request was meant for still shows:
//! `login.<cloud>.azure-sim.invalid` is Entra ID, `<vault>.vault.<cloud>.azure-sim.invalid` a
//! vault, `management.<cloud>.azure-sim.invalid` Resource Manager. The Key Vault SDK checks that the resource of a bearer challenge is a parent domain of
//! the vault's host; the simulator challenges with `https://vault.<cloud>.azure-sim.invalid`, so
//! that check passes untouched. The transport sends every such name to the simulator's loopback
//! listener ([`super::transport`]), the only difference from production besides the trusted roots.

use super::cloud::AzureEnvironment;

/// The parent domain of every simulated Azure host name.
pub const SIM_DOMAIN: &str = "azure-sim.invalid";

/// The address Azure's instance metadata service (managed identities on a VM) listens on; the
/// SDK has it built in (plain HTTP).
pub const IMDS_HOST: &str = "169.254.169.254";

/// The endpoints of one cloud: real, or the simulator's stand-in for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoints {
    pub environment: AzureEnvironment,
    /// `https://host[:port]`, no trailing slash.
    pub authority_host: String,
    /// The Key Vault DNS suffix (`vault.azure.net`).
    pub key_vault_suffix: String,
    /// The port every host listens on, when not 443 (the simulator's listener).
    pub port: Option<u16>,
}

impl Endpoints {
    /// The real endpoints of `environment`.
    pub fn real(environment: AzureEnvironment) -> Endpoints {
        Endpoints {
            environment,
            authority_host: environment.authority_host().to_string(),
            key_vault_suffix: environment.key_vault_suffix().to_string(),
            port: None,
        }
    }

    /// The simulator's endpoints standing in for `environment`, on its listener's `port`.
    pub fn simulated(environment: AzureEnvironment, port: u16) -> Endpoints {
        let domain = sim_cloud_domain(environment);
        Endpoints {
            environment,
            authority_host: format!("https://login.{domain}:{port}"),
            key_vault_suffix: format!("vault.{domain}"),
            port: Some(port),
        }
    }

    /// The data-plane URL of vault `name`: `https://<name>.<suffix>[:port]/`.
    pub fn vault_url(&self, name: &str) -> String {
        match self.port {
            Some(p) => format!("https://{name}.{}:{p}/", self.key_vault_suffix),
            None => format!("https://{name}.{}/", self.key_vault_suffix),
        }
    }

    /// The resource a vault's bearer challenge names (the scope's base).
    pub fn key_vault_resource(&self) -> String {
        format!("https://{}", self.key_vault_suffix)
    }

    /// The Resource Manager resource tokens are asked for (the scope's base, no port).
    pub fn resource_manager_resource(&self) -> String {
        match self.port {
            Some(_) => format!("https://management.{}", sim_cloud_domain(self.environment)),
            None => self.environment.resource_manager().to_string(),
        }
    }

    /// The Resource Manager endpoint requests go to (`https://host[:port]`, no trailing slash).
    pub fn resource_manager_url(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.resource_manager_resource()),
            None => self.resource_manager_resource(),
        }
    }
}

/// The simulated domain standing in for `environment`: `<cloud>.azure-sim.invalid`.
pub fn sim_cloud_domain(environment: AzureEnvironment) -> String {
    let cloud = match environment {
        AzureEnvironment::AzurePublicCloud => "public",
        AzureEnvironment::AzureChinaCloud => "china",
        AzureEnvironment::AzureUSGovernmentCloud => "usgov",
    };
    format!("{cloud}.{SIM_DOMAIN}")
}

/// What a simulated host name serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimHost {
    /// Entra ID of a cloud.
    Login(AzureEnvironment),
    /// A vault of a cloud, by name.
    Vault(AzureEnvironment, String),
    /// Resource Manager of a cloud.
    ResourceManager(AzureEnvironment),
}

/// Which simulated service `host` (no port) names, if any.
pub fn parse_sim_host(host: &str) -> Option<SimHost> {
    let host = host.to_ascii_lowercase();
    AzureEnvironment::ALL.into_iter().find_map(|env| {
        let rest = host.strip_suffix(&format!(".{}", sim_cloud_domain(env)))?;
        if rest == "login" {
            return Some(SimHost::Login(env));
        }
        if rest == "management" {
            return Some(SimHost::ResourceManager(env));
        }
        let vault = rest.strip_suffix(".vault")?;
        (!vault.is_empty() && !vault.contains('.')).then(|| SimHost::Vault(env, vault.to_string()))
    })
}

/// Whether `host` (no port) is one the simulator serves (the loopback override sends it there).
pub fn is_sim_host(host: &str) -> bool {
    host == IMDS_HOST
        || host
            .to_ascii_lowercase()
            .ends_with(&format!(".{SIM_DOMAIN}"))
}

/// The names the simulator's certificate carries: every cloud's login and Resource Manager hosts
/// and vault wildcard.
pub fn sim_certificate_names() -> Vec<String> {
    AzureEnvironment::ALL
        .into_iter()
        .flat_map(|env| {
            let d = sim_cloud_domain(env);
            [
                format!("login.{d}"),
                format!("*.vault.{d}"),
                format!("management.{d}"),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_endpoints_follow_the_cloud() {
        let e = Endpoints::real(AzureEnvironment::AzureChinaCloud);
        assert_eq!(e.authority_host, "https://login.chinacloudapi.cn");
        assert_eq!(e.vault_url("kv1"), "https://kv1.vault.azure.cn/");
        assert_eq!(
            e.resource_manager_url(),
            "https://management.chinacloudapi.cn"
        );
    }

    #[test]
    fn simulated_names_route_back_to_their_service() {
        let e = Endpoints::simulated(AzureEnvironment::AzurePublicCloud, 4443);
        assert_eq!(
            e.authority_host,
            "https://login.public.azure-sim.invalid:4443"
        );
        assert_eq!(
            e.vault_url("kv1"),
            "https://kv1.vault.public.azure-sim.invalid:4443/"
        );
        assert_eq!(
            parse_sim_host("login.public.azure-sim.invalid"),
            Some(SimHost::Login(AzureEnvironment::AzurePublicCloud))
        );
        assert_eq!(
            parse_sim_host("KV1.vault.usgov.azure-sim.invalid"),
            Some(SimHost::Vault(
                AzureEnvironment::AzureUSGovernmentCloud,
                "kv1".into()
            ))
        );
        assert_eq!(parse_sim_host("a.b.vault.public.azure-sim.invalid"), None);
        assert_eq!(
            e.resource_manager_url(),
            "https://management.public.azure-sim.invalid:4443"
        );
        assert_eq!(
            e.resource_manager_resource(),
            "https://management.public.azure-sim.invalid"
        );
        assert_eq!(
            parse_sim_host("management.china.azure-sim.invalid"),
            Some(SimHost::ResourceManager(AzureEnvironment::AzureChinaCloud))
        );
        assert_eq!(parse_sim_host("login.microsoftonline.com"), None);
    }

    #[test]
    fn the_challenge_resource_is_a_parent_of_every_vault_host() {
        let e = Endpoints::simulated(AzureEnvironment::AzureChinaCloud, 1);
        let resource_host = e.key_vault_resource().replace("https://", "");
        assert!("kv.vault.china.azure-sim.invalid".ends_with(&format!(".{resource_host}")));
    }

    #[test]
    fn only_simulated_names_and_imds_go_to_the_simulator() {
        assert!(is_sim_host("login.public.azure-sim.invalid"));
        assert!(is_sim_host(IMDS_HOST));
        assert!(!is_sim_host("login.microsoftonline.com"));
        assert!(!is_sim_host("azure-sim.invalid.example.com"));
    }

    #[test]
    fn the_certificate_covers_every_cloud() {
        let names = sim_certificate_names();
        assert_eq!(names.len(), 9);
        assert!(names.contains(&"management.usgov.azure-sim.invalid".to_string()));
        assert!(names.contains(&"*.vault.public.azure-sim.invalid".to_string()));
    }
}
