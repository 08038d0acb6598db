//! `--pull-secret`: each cluster carries one Secret (a fake image pull secret, its own value),
//! in plain text, or with `--sops-recipient` encrypted with SOPS for that age recipient (only its
//! `data`/`stringData`: metadata stays readable for kustomize). For the decryption benchmark:
//! the same fleet with and without encryption. Encryption is random (data key, IVs): with
//! `--sops-recipient` the bytes differ between runs.

use crate::Writer;
use crate::objects::Spec;
use serde_json::{Value, json};

/// The file each cluster's folder gets, listed in its kustomization's resources.
pub const FILE: &str = "pull-secret.yaml";

/// The Secret of `s`, in plain text.
fn secret(s: &Spec) -> Value {
    let auth = format!("fleetgen:{}-{}", s.name, s.subscription);
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pull-secret"},
        "type": "Opaque",
        "stringData": {
            "registry": "registry.example.invalid",
            "auth": auth,
        }
    })
}

/// Writes `clusters/<name>/pull-secret.yaml` for `s`.
pub fn write(w: &mut Writer, s: &Spec, recipient: Option<&str>) -> anyhow::Result<()> {
    let plain = secret(s);
    let doc = match recipient {
        None => plain,
        Some(r) => aro_gitops::secrets::encrypt(
            &plain,
            &[r.to_string()],
            &aro_gitops::secrets::EncryptionRules {
                encrypted_regex: Some("^(data|stringData)$".into()),
                ..Default::default()
            },
        )
        .map_err(|e| anyhow::anyhow!("encrypting the pull secret of {}: {e}", s.name))?,
    };
    w.yaml(&format!("clusters/{}/{FILE}", s.name), &[doc])
}
