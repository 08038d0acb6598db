//! The real-server harness itself: `scripts/real-cluster up` starts kube-apiserver v1.37,
//! kube-controller-manager and etcd on loopback; the RBAC authorizer holds a ServiceAccount to its
//! grants; the controllers a management cluster relies on run (namespace deletion, garbage
//! collection); the reference CRDs install; a component restarts on its ports and data; `down`
//! leaves no process behind.

mod common;

use common::eventually;
use common::real_cluster::{CONTROLLER_WAIT, RealCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::path::Path;
use std::process::Command;

#[tokio::test]
async fn the_real_cluster_runs_the_controllers_and_authorizers_a_management_cluster_has() {
    let Some(cluster) = RealCluster::start() else {
        return;
    };
    let client = cluster.admin_client().await;
    let version = client.apiserver_version().await.expect("/version");
    assert_eq!(version.git_version, "v1.37.2", "{version:?}");

    // A ServiceAccount is held to what RBAC grants it: nothing yet.
    cluster.kubectl(&["create", "namespace", "harness"]);
    cluster.kubectl(&["-n", "harness", "create", "serviceaccount", "nobody"]);
    let kc = cluster.service_account_kubeconfig("harness", "nobody");
    let nobody = common::real_cluster::client_for(&kc).await;
    let err = Api::<Namespace>::all(nobody)
        .list(&Default::default())
        .await
        .expect_err("a ServiceAccount without grants cannot list namespaces");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message.contains("system:serviceaccount:harness:nobody")),
        "{err:?}"
    );

    // The garbage collector deletes a dependent whose owner is gone.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "harness");
    let owner = cms
        .create(&PostParams::default(), &cm("owner", None))
        .await
        .expect("create the owner");
    let uid = owner.metadata.uid.clone().expect("a uid");
    cms.create(&PostParams::default(), &cm("dependent", Some(&uid)))
        .await
        .expect("create the dependent");
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("delete the owner");
    eventually(CONTROLLER_WAIT, "the dependent to be collected", || {
        let cms = cms.clone();
        async move {
            cms.get_opt("dependent")
                .await
                .expect("get")
                .is_none()
                .then_some(())
        }
    })
    .await;

    // The namespace controller empties and removes a deleted namespace.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("harness", &DeleteParams::default())
        .await
        .expect("delete the namespace");
    eventually(CONTROLLER_WAIT, "the namespace to be removed", || {
        let namespaces = namespaces.clone();
        async move {
            namespaces
                .get_opt("harness")
                .await
                .expect("get")
                .is_none()
                .then_some(())
        }
    })
    .await;

    // The CRDs a management cluster has install and are served.
    cluster.install_crds();
    let served = cluster.kubectl(&["api-resources", "-o", "name"]);
    for name in [
        "arocontrolplanes.controlplane.cluster.x-k8s.io",
        "hcpopenshiftclustersnodepools.redhatopenshift.azure.com",
        "clusters.cluster.x-k8s.io",
    ] {
        assert!(served.lines().any(|l| l == name), "{name} is not served");
    }

    // etcd restarts on its port and data: what was stored is still there.
    cluster.restart("etcd");
    let list = Api::<Namespace>::all(client.clone())
        .list(&Default::default())
        .await
        .expect("list after the restart");
    assert!(
        list.items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("kube-system"))
    );

    // `down` leaves no process behind.
    let dir = cluster.dir().to_path_buf();
    let pids = pids(&dir);
    assert_eq!(pids.len(), 3, "three pid files in {}", dir.display());
    drop(cluster);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "process {pid} is still running after down"
        );
    }
}

fn cm(name: &str, owner: Option<&str>) -> ConfigMap {
    let mut value = json!({"metadata": {"name": name}, "data": {"k": "v"}});
    if let Some(uid) = owner {
        value["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]);
    }
    serde_json::from_value(value).expect("a ConfigMap")
}

fn pids(dir: &Path) -> Vec<u32> {
    ["etcd", "kube-apiserver", "kube-controller-manager"]
        .iter()
        .filter_map(|c| std::fs::read_to_string(dir.join(format!("{c}.pid"))).ok())
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

#[test]
fn the_script_says_what_to_do_when_the_binaries_are_missing() {
    let script = common::real_cluster::repo_root().join("scripts/real-cluster");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(script)
        .args(["up", dir.path().join("c").to_str().expect("utf-8")])
        .env(
            "ARO_GITOPS_REAL_CLUSTER_CACHE",
            dir.path().join("empty-cache"),
        )
        .env("ARO_GITOPS_REAL_CLUSTER_NO_BUILD", "1")
        .output()
        .expect("the script runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("are not built") && err.contains("scripts/real-cluster build"),
        "{err}"
    );
}
