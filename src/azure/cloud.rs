//! Which Azure cloud a cluster lives in (`AROControlPlane.spec.azureEnvironment`), and the endpoints
//! that follow from it: the Entra ID authority host and the Key Vault DNS suffix.

use std::fmt;

/// An Azure cloud, as `AROControlPlane.spec.azureEnvironment` names it. Absent means public.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum AzureEnvironment {
    #[default]
    AzurePublicCloud,
    AzureChinaCloud,
    AzureUSGovernmentCloud,
}

/// `spec.azureEnvironment` holds a name no cloud has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "spec.azureEnvironment {0:?} is not a known Azure cloud (use AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud)"
)]
pub struct UnknownEnvironment(pub String);

impl AzureEnvironment {
    /// Every cloud, in a stable order.
    pub const ALL: [AzureEnvironment; 3] = [
        AzureEnvironment::AzurePublicCloud,
        AzureEnvironment::AzureChinaCloud,
        AzureEnvironment::AzureUSGovernmentCloud,
    ];

    /// Parses `spec.azureEnvironment`: `None` or an empty string is the public cloud; the names are
    /// matched without regard to case, as CAPZ does.
    pub fn parse(value: Option<&str>) -> Result<AzureEnvironment, UnknownEnvironment> {
        let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(AzureEnvironment::AzurePublicCloud);
        };
        AzureEnvironment::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(v))
            .ok_or_else(|| UnknownEnvironment(v.to_string()))
    }

    /// The name as the spec writes it.
    pub fn name(self) -> &'static str {
        match self {
            AzureEnvironment::AzurePublicCloud => "AzurePublicCloud",
            AzureEnvironment::AzureChinaCloud => "AzureChinaCloud",
            AzureEnvironment::AzureUSGovernmentCloud => "AzureUSGovernmentCloud",
        }
    }

    /// The Entra ID authority host (scheme and host, no trailing slash).
    pub fn authority_host(self) -> &'static str {
        match self {
            AzureEnvironment::AzurePublicCloud => "https://login.microsoftonline.com",
            AzureEnvironment::AzureChinaCloud => "https://login.chinacloudapi.cn",
            AzureEnvironment::AzureUSGovernmentCloud => "https://login.microsoftonline.us",
        }
    }

    /// The Azure Resource Manager endpoint (scheme and host, no trailing slash); it is also the
    /// resource tokens for it are asked for (`<endpoint>/.default`).
    pub fn resource_manager(self) -> &'static str {
        match self {
            AzureEnvironment::AzurePublicCloud => "https://management.azure.com",
            AzureEnvironment::AzureChinaCloud => "https://management.chinacloudapi.cn",
            AzureEnvironment::AzureUSGovernmentCloud => "https://management.usgovcloudapi.net",
        }
    }

    /// The DNS suffix of Key Vault data-plane hosts: a vault `v` is `https://v.<suffix>/`.
    pub fn key_vault_suffix(self) -> &'static str {
        match self {
            AzureEnvironment::AzurePublicCloud => "vault.azure.net",
            AzureEnvironment::AzureChinaCloud => "vault.azure.cn",
            AzureEnvironment::AzureUSGovernmentCloud => "vault.usgovcloudapi.net",
        }
    }
}

impl fmt::Display for AzureEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_or_empty_is_public() {
        assert_eq!(
            AzureEnvironment::parse(None),
            Ok(AzureEnvironment::AzurePublicCloud)
        );
        assert_eq!(
            AzureEnvironment::parse(Some(" ")),
            Ok(AzureEnvironment::AzurePublicCloud)
        );
    }

    #[test]
    fn names_parse_without_case() {
        for e in AzureEnvironment::ALL {
            assert_eq!(AzureEnvironment::parse(Some(e.name())), Ok(e));
            assert_eq!(
                AzureEnvironment::parse(Some(&e.name().to_lowercase())),
                Ok(e)
            );
        }
    }

    #[test]
    fn unknown_name_is_an_error_naming_it() {
        let err = AzureEnvironment::parse(Some("AzureGermanCloud")).unwrap_err();
        assert!(err.to_string().contains("\"AzureGermanCloud\""), "{err}");
    }

    #[test]
    fn each_cloud_has_its_own_endpoints() {
        assert_eq!(
            AzureEnvironment::AzureChinaCloud.authority_host(),
            "https://login.chinacloudapi.cn"
        );
        assert_eq!(
            AzureEnvironment::AzureUSGovernmentCloud.key_vault_suffix(),
            "vault.usgovcloudapi.net"
        );
        assert_eq!(
            AzureEnvironment::default().key_vault_suffix(),
            "vault.azure.net"
        );
        assert_eq!(
            AzureEnvironment::AzureChinaCloud.resource_manager(),
            "https://management.chinacloudapi.cn"
        );
    }
}
