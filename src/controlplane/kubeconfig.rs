//! The kubeconfig a standalone control plane writes, so `kubectl --kubeconfig FILE` finds it.

use super::error::ControlPlaneError;
use std::path::Path;

/// The kubeconfig text for a server at `url` (plain HTTP on loopback; no credentials).
pub fn render(url: &str) -> String {
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "aro-gitops-local", "cluster": {"server": url}}],
        "users": [{"name": "aro-gitops-local", "user": {}}],
        "contexts": [{"name": "aro-gitops-local", "context": {"cluster": "aro-gitops-local", "user": "aro-gitops-local", "namespace": "default"}}],
        "current-context": "aro-gitops-local",
        "preferences": {},
    });
    crate::yaml::to_string(&doc)
}

/// Writes the kubeconfig for `url` to `path`.
pub fn write(path: &Path, url: &str) -> Result<(), ControlPlaneError> {
    std::fs::write(path, render(url)).map_err(|source| ControlPlaneError::Kubeconfig {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn kubeconfig_names_the_server() {
        let text = super::render("http://127.0.0.1:6443");
        let v = crate::yaml::from_str(&text).unwrap();
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:6443"
        );
        assert_eq!(v["current-context"], "aro-gitops-local");
    }
}
