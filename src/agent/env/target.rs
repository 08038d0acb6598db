//! Which cluster holds the agent's live state: the one the pod runs in (`--in-cluster`, the
//! service account kube mounts), the one a kubeconfig names (`--kubeconfig`), or, when neither is
//! given, the embedded local control plane. The choice and the line saying which are pure; the
//! connection uses kube's own config loading.

use crate::agent::AgentError;
use crate::apply::{ApplyError, Cluster, RequestCounter};
use std::path::{Path, PathBuf};

/// Where live state is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveTarget {
    /// The cluster the process runs in, through its service account.
    InCluster,
    /// The cluster (current context) of this kubeconfig file.
    Kubeconfig(PathBuf),
    /// The embedded local control plane in the state directory, Azure simulated.
    Embedded,
}

/// Where a pod's service account is mounted (what kube's in-cluster config reads).
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The environment variables kube's in-cluster config reads the API server's address from.
const SERVICE_ENV: [&str; 2] = ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"];

impl LiveTarget {
    /// `--in-cluster`, else `--kubeconfig`, else the embedded control plane. Both at once is
    /// refused (the command line already refuses it; a library caller could still ask).
    pub fn select(kubeconfig: Option<&Path>, in_cluster: bool) -> Result<LiveTarget, AgentError> {
        match (kubeconfig, in_cluster) {
            (Some(path), true) => Err(ApplyError::Connect(format!(
                "--in-cluster and --kubeconfig {} were both given: choose one",
                path.display()
            ))
            .into()),
            (None, true) => Ok(LiveTarget::InCluster),
            (Some(path), false) => Ok(LiveTarget::Kubeconfig(path.to_path_buf())),
            (None, false) => Ok(LiveTarget::Embedded),
        }
    }

    /// A real cluster (not the embedded control plane).
    pub fn is_cluster(&self) -> bool {
        !matches!(self, LiveTarget::Embedded)
    }
}

/// What the in-cluster config needs and this process lacks (empty inside a pod with a service
/// account): each missing variable and file, in the user's words. `var` and `exists` read the
/// environment and the file system (parameters so the decision is testable).
pub fn missing_in_cluster(
    var: impl Fn(&str) -> Option<String>,
    exists: impl Fn(&Path) -> bool,
) -> Vec<String> {
    let mut missing: Vec<String> = SERVICE_ENV
        .iter()
        .filter(|name| var(name).is_none_or(|v| v.trim().is_empty()))
        .map(|name| format!("the environment variable {name} is not set"))
        .collect();
    for file in ["token", "ca.crt", "namespace"] {
        let path = Path::new(SERVICE_ACCOUNT_DIR).join(file);
        if !exists(&path) {
            missing.push(format!("{} does not exist", path.display()));
        }
    }
    missing
}

/// The error for `--in-cluster` outside a pod: everything missing, and what to do instead.
fn not_in_cluster(missing: &[String]) -> ApplyError {
    ApplyError::Connect(format!(
        "--in-cluster: this process does not run in a Kubernetes pod with a service account: {}; \
         outside a cluster use --kubeconfig, or neither flag for the embedded local control plane",
        missing.join(", ")
    ))
}

/// The first line a command logs: which live state it works on.
pub fn describe_in_cluster() -> String {
    "live state: in-cluster config (service account)".to_string()
}

/// As [`describe_in_cluster`], for a kubeconfig.
pub fn describe_kubeconfig(path: &Path, context: Option<&str>, server: &str) -> String {
    format!(
        "live state: kubeconfig {} (context {}, server {server})",
        path.display(),
        context.unwrap_or("(none)")
    )
}

/// As [`describe_in_cluster`], for the embedded control plane in `dir`.
pub fn describe_embedded(dir: &Path) -> String {
    format!(
        "live state: embedded local control plane in {} (Azure simulated)",
        dir.display()
    )
}

/// Connects to a real cluster (`InCluster` or `Kubeconfig`) with kube's standard config loading,
/// logging which first. `None` for `Embedded`, which the caller opens itself.
pub async fn connect(target: &LiveTarget) -> Result<Option<Cluster>, ApplyError> {
    let config = match target {
        LiveTarget::Embedded => return Ok(None),
        LiveTarget::InCluster => {
            tracing::info!("{}", describe_in_cluster());
            let missing = missing_in_cluster(|v| std::env::var(v).ok(), Path::exists);
            if !missing.is_empty() {
                return Err(not_in_cluster(&missing));
            }
            kube::Config::incluster()
                .map_err(|e| ApplyError::Connect(format!("--in-cluster: {e}")))?
        }
        LiveTarget::Kubeconfig(path) => {
            let fail = |e: &dyn std::fmt::Display| {
                ApplyError::Connect(format!("--kubeconfig {}: {e}", path.display()))
            };
            let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| fail(&e))?;
            let context = kc.current_context.clone();
            let user = crate::agent::env::client_cert::current_user(&kc);
            let config = kube::Config::from_custom_kubeconfig(
                kc,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(|e| fail(&e))?;
            tracing::info!(
                "{}",
                describe_kubeconfig(path, context.as_deref(), &config.cluster_url.to_string())
            );
            if let Some(source) = crate::agent::env::client_cert::CertSource::of(&config.auth_info)
                && let Some(pem) = source.read()
            {
                crate::agent::env::client_cert::check(path, user.as_deref(), &source, &pem)
                    .map_err(ApplyError::Connect)?;
            }
            config
        }
    };
    let counter = RequestCounter::default();
    let client = crate::apply::client::from_config(config, &counter)
        .map_err(|e| ApplyError::Connect(e.to_string()))?;
    Ok(Some(Cluster::new(client, counter)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_control_plane_is_chosen_only_when_neither_flag_is_given() {
        let k = Path::new("/tmp/kubeconfig");
        assert_eq!(
            LiveTarget::select(None, false).unwrap(),
            LiveTarget::Embedded
        );
        assert_eq!(
            LiveTarget::select(None, true).unwrap(),
            LiveTarget::InCluster
        );
        assert_eq!(
            LiveTarget::select(Some(k), false).unwrap(),
            LiveTarget::Kubeconfig(k.to_path_buf())
        );
        let both = LiveTarget::select(Some(k), true).unwrap_err().to_string();
        assert!(both.contains("--in-cluster and --kubeconfig"), "{both}");
        assert!(!LiveTarget::Embedded.is_cluster());
        assert!(LiveTarget::InCluster.is_cluster());
    }

    #[test]
    fn outside_a_pod_every_missing_piece_is_named() {
        let missing = missing_in_cluster(|_| None, |_| false);
        assert_eq!(missing.len(), 5, "{missing:?}");
        let text = not_in_cluster(&missing).to_string();
        for needle in [
            "KUBERNETES_SERVICE_HOST is not set",
            "KUBERNETES_SERVICE_PORT is not set",
            "/var/run/secrets/kubernetes.io/serviceaccount/token does not exist",
            "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt does not exist",
            "--kubeconfig",
        ] {
            assert!(text.contains(needle), "{needle}: {text}");
        }
    }

    #[test]
    fn inside_a_pod_nothing_is_missing() {
        let env = |v: &str| match v {
            "KUBERNETES_SERVICE_HOST" => Some("10.0.0.1".to_string()),
            "KUBERNETES_SERVICE_PORT" => Some("443".to_string()),
            _ => None,
        };
        assert!(missing_in_cluster(env, |_| true).is_empty());
        // A pod without a mounted service account token (automountServiceAccountToken: false).
        let missing = missing_in_cluster(env, |p| !p.ends_with("token"));
        assert_eq!(
            missing,
            vec!["/var/run/secrets/kubernetes.io/serviceaccount/token does not exist"]
        );
    }

    #[test]
    fn the_line_says_which_live_state() {
        assert_eq!(
            describe_kubeconfig(
                Path::new("/k/config"),
                Some("admin@mgmt"),
                "https://api.mgmt:6443/"
            ),
            "live state: kubeconfig /k/config (context admin@mgmt, server https://api.mgmt:6443/)"
        );
        assert_eq!(
            describe_embedded(Path::new(".aro-gitops/control-plane")),
            "live state: embedded local control plane in .aro-gitops/control-plane (Azure simulated)"
        );
        assert_eq!(
            describe_in_cluster(),
            "live state: in-cluster config (service account)"
        );
    }
}
