//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod fault_proxy;
pub mod fleet;
pub mod git;
pub mod http;
pub mod kubectl;
pub mod real_agent;
pub mod real_cluster;
pub mod real_examples;
pub mod running;
pub mod simulator;
pub mod snapshot;
pub mod sops;
pub mod write_log;

use aro_gitops::controlplane::{Config, ControlPlane};
use serde_json::{Value, json};
use std::future::Future;
use std::time::{Duration, Instant};

/// An in-process local control plane on a fresh state directory.
pub struct LocalCluster {
    pub dir: tempfile::TempDir,
    pub cp: ControlPlane,
    pub client: kube::Client,
}

pub fn local_cluster(preload_crds: bool) -> LocalCluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = Config::new(dir.path());
    config.preload_crds = preload_crds;
    let cp = ControlPlane::open(config).expect("control plane opens");
    let client = cp.client();
    LocalCluster { dir, cp, client }
}

/// Polls `check` until it returns `Some`, failing the test after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A small namespaced CRD `widgets.example.com` (v1, status subresource; v1alpha1 also served).
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "properties": {"conditions": {
                        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                        "x-kubernetes-preserve-unknown-fields": true}}}}},
                {"name": "v1alpha1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}
