//! The simulated projected service-account token a workload identity reads in the embedded
//! default. A real deployment mounts the projected token (Kubernetes writes it, and sets
//! `AZURE_FEDERATED_TOKEN_FILE`); the embedded default has no kubelet, so when that variable is
//! not set the agent writes this stand-in under its state directory. It is a JWT in shape only
//! (the simulated Entra ID accepts any well-formed one for a workload identity), unsigned, and
//! says it is simulated in its header and claims.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use std::path::{Path, PathBuf};

/// The variable a workload identity's token file is named by (set by the workload identity
/// webhook in a real deployment).
pub const FEDERATED_TOKEN_ENV: &str = "AZURE_FEDERATED_TOKEN_FILE";

/// The file name of the simulated token under the state directory.
const FILE_NAME: &str = "simulated-federated-token";

/// The simulated token: `{"alg":"none","typ":"JWT","simulated":true}` and claims naming the
/// aro-gitops service account, with an empty signature.
pub fn simulated_token() -> String {
    let header = serde_json::json!({"alg": "none", "typ": "JWT", "simulated": true});
    let claims = serde_json::json!({
        "iss": "https://oidc.aro-gitops-sim.invalid",
        "sub": "system:serviceaccount:aro-gitops:aro-gitops",
        "aud": ["api://AzureADTokenExchange"],
        "note": "simulated projected service-account token (aro-gitops Azure simulator); not a real credential",
    });
    format!(
        "{}.{}.",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    )
}

/// The token file a workload identity reads: `AZURE_FEDERATED_TOKEN_FILE` when set (a projected
/// token, or a test's), else the simulated token written now to `state_dir`.
pub fn token_file(state_dir: &Path) -> std::io::Result<PathBuf> {
    if let Some(path) = std::env::var_os(FEDERATED_TOKEN_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let dir = state_dir.join("azure-simulator");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(FILE_NAME);
    std::fs::write(&path, simulated_token())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulated_token_is_a_well_formed_jwt_that_says_it_is_simulated() {
        let t = simulated_token();
        let jwt = crate::azure::assertion::parse_jwt(&t).expect("a JWT");
        assert_eq!(jwt.header["simulated"], true);
        assert!(jwt.claims["note"].as_str().unwrap().contains("simulated"));
    }
}
