//! After the first run, on the real server: `plan` and `drift` read its live state, a
//! `kubectl edit` made as cluster admin is reported with its field manager and put back by
//! `--self-heal`; an object that leaves git is pruned; a cluster that leaves git is deleted only
//! with `--allow-deletion`, in reverse order, with the real namespace controller and garbage
//! collector doing their part.

use super::common::real_cluster::CONTROLLER_WAIT;
use super::common::{eventually, snapshot};
use super::*;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams, WatchEvent, WatchParams};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const RG: &str = "aro-dev-rg";

fn location(real: &RealExamples) -> String {
    real.kubectl(&[
        "get",
        "resourcegroups.resources.azure.com",
        RG,
        "-n",
        "aro-dev",
        "-o",
        "jsonpath={.spec.location}",
    ])
}

/// `kubectl edit` of the dev resource group as cluster admin, its editor changing the location
/// in spec to `to`.
fn kubectl_edit_location(real: &RealExamples, from: &str, to: &str) {
    let editor = real.scratch().join("editor.sh");
    std::fs::write(
        &editor,
        format!("#!/bin/sh\nsed -i '0,/^  location: {from}$/s//  location: {to}/' \"$1\"\n"),
    )
    .expect("write the editor script");
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&editor)
        .status()
        .expect("chmod");
    assert!(status.success());
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(real.cluster.admin_kubeconfig())
        .args([
            "edit",
            "resourcegroups.resources.azure.com",
            RG,
            "-n",
            "aro-dev",
        ])
        .env("KUBE_EDITOR", &editor)
        .output()
        .expect("kubectl edit runs");
    assert!(out.status.success(), "kubectl edit: {out:?}");
}

#[test]
fn plan_and_drift_read_the_real_server_and_self_heal_undoes_a_kubectl_edit() {
    let Some(real) = RealExamples::start() else {
        return;
    };
    // Before the first run, the plan creates everything and deletes nothing.
    let plan = real.plan(&[]);
    assert_eq!(plan.code, 2, "{}", plan.all());
    assert!(
        plan.stdout
            .contains("Cluster clusters/dev (aro-dev/dev): 49 to create, 0 to update, 0 to delete"),
        "{}",
        plan.all()
    );
    real.converge(&[]);
    let plan = real.plan(&[]);
    assert_eq!(plan.code, 0, "no changes after the run:\n{}", plan.all());
    let drift = real.drift(&[]);
    assert_eq!(drift.code, 0, "no drift after the run:\n{}", drift.all());

    // Someone edits the resource group's location as cluster admin.
    let applied = location(&real);
    assert!(!applied.is_empty() && applied != "westus2", "{applied}");
    kubectl_edit_location(&real, &applied, "westus2");
    assert_eq!(location(&real), "westus2");

    let drift = real.drift(&[]);
    assert_eq!(drift.code, 2, "{}", drift.all());
    let expected = format!(
        "spec.location: applied \"{applied}\" → live \"westus2\" (changed by kubectl-edit)"
    );
    assert!(
        drift.stdout.contains(&expected),
        "{expected}\n{}",
        drift.all()
    );
    assert!(
        drift
            .stdout
            .contains(&format!("ResourceGroup/aro-dev/{RG}")),
        "{}",
        drift.all()
    );
    let plan = real.plan(&[]);
    assert_eq!(plan.code, 2, "{}", plan.all());
    assert!(
        plan.stdout.contains(&format!(
            "~ ResourceGroup/aro-dev/{RG} will be updated in place"
        )),
        "{}",
        plan.all()
    );

    // A run without --self-heal reports the drift (in the cluster's report) and leaves it.
    let out = real.converge(&[]);
    let report = common::git::show(
        &real.fleet.repo,
        "aro-gitops/status",
        "reports/aro-dev/dev.md",
    )
    .expect("the dev report");
    assert!(
        report.contains("spec.location (changed by kubectl-edit)"),
        "{report}\n{}",
        out.all()
    );
    assert_eq!(location(&real), "westus2");

    // --self-heal puts git's value back.
    let out = real.converge(&["--self-heal"]);
    let (_, writes) = out.requests();
    assert!(writes >= 1, "{}", out.all());
    assert_eq!(location(&real), applied);
    let drift = real.drift(&[]);
    assert_eq!(drift.code, 0, "{}", drift.all());
}

const EXTRA: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: \"1\"\n";

/// The deletions of the watched objects, in the order the server made them: kind/name → the
/// resourceVersion of its DELETED event (etcd's revisions order every write of the cluster).
#[derive(Default, Clone)]
struct Deletions(Arc<Mutex<BTreeMap<String, u64>>>);

impl Deletions {
    /// Watches `kinds` (apiVersion, kind) in `namespace` from now on, on a thread of its own,
    /// until the process ends.
    fn watch(real: &RealExamples, namespace: &str, kinds: &[(&str, &str)]) -> Deletions {
        let deletions = Deletions::default();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let kubeconfig = real.cluster.admin_kubeconfig();
        let kinds: Vec<(String, String)> = kinds
            .iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect();
        let (out, namespace) = (deletions.clone(), namespace.to_string());
        std::thread::spawn(move || {
            block_on(async move {
                let client = common::real_cluster::client_for(&kubeconfig).await;
                let mut streams = Vec::new();
                for (api_version, kind) in kinds {
                    let ar = common::fleet::api_resource(&api_version, &kind);
                    let api: Api<DynamicObject> =
                        Api::namespaced_with(client.clone(), &namespace, &ar);
                    let rv = api
                        .list(&ListParams::default())
                        .await
                        .expect("list")
                        .metadata
                        .resource_version
                        .expect("a list resourceVersion");
                    let stream = api
                        .watch(&WatchParams::default().timeout(290), &rv)
                        .await
                        .expect("watch")
                        .boxed();
                    streams.push(stream.map(move |e| (kind.clone(), e)));
                }
                ready_tx.send(()).expect("the test waits");
                let mut all = futures::stream::select_all(streams);
                while let Some((kind, event)) = all.next().await {
                    if let Ok(WatchEvent::Deleted(o)) = event {
                        let rv = o.metadata.resource_version.as_deref().unwrap_or("0");
                        out.0.lock().expect("lock").insert(
                            format!("{kind}/{}", o.metadata.name.unwrap_or_default()),
                            rv.parse().expect("a numeric resourceVersion"),
                        );
                    }
                }
            })
        });
        ready
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the watches start");
        deletions
    }

    fn get(&self) -> BTreeMap<String, u64> {
        self.0.lock().expect("lock").clone()
    }
}

const HCP: &str = "redhatopenshift.azure.com/v1api20240610preview";
const WATCHED: [(&str, &str); 7] = [
    (HCP, "HcpOpenShiftClustersNodePool"),
    (HCP, "HcpOpenShiftClustersExternalAuth"),
    (HCP, "HcpOpenShiftCluster"),
    ("network.azure.com/v1api20201101", "VirtualNetworksSubnet"),
    ("network.azure.com/v1api20201101", "VirtualNetwork"),
    ("resources.azure.com/v1api20200601", "ResourceGroup"),
    ("infrastructure.cluster.x-k8s.io/v1beta2", "AROCluster"),
];

/// The snapshot's objects in namespace `ns` (and the Namespace itself).
fn of_namespace(
    all: &BTreeMap<String, snapshot::Snap>,
    ns: &str,
) -> BTreeMap<String, snapshot::Snap> {
    all.iter()
        .filter(|(k, _)| k.contains(&format!(" {ns}/")) || *k == &format!("Namespace {ns}"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn prune_deletes_what_left_git_and_a_removed_cluster_goes_only_with_consent_in_reverse_order() {
    let Some(real) = RealExamples::start() else {
        return;
    };
    let f = &real.fleet;
    let kustomization = f.read("clusters/dev/kustomization.yaml");
    f.write("clusters/dev/extra.yaml", EXTRA);
    f.add_resource(DEV, "extra.yaml");
    f.commit("an extra ConfigMap");
    real.converge(&[]);
    assert!(real.exists(&["configmap", "extra", "-n", "aro-dev"]));

    // It leaves git: it is deleted.
    f.write("clusters/dev/kustomization.yaml", &kustomization);
    f.remove("clusters/dev/extra.yaml");
    f.commit("git rm extra.yaml");
    let out = real.converge(&[]);
    assert!(
        !real.exists(&["configmap", "extra", "-n", "aro-dev"]),
        "{}",
        out.all()
    );

    // The whole dev cluster leaves git: without consent, nothing of it goes, and the run says so.
    let take = || block_on(async { snapshot::take(real.cluster.admin_client().await).await });
    let before = take();
    let dev_before = of_namespace(&before, "aro-dev");
    assert!(dev_before.len() > 20, "{dev_before:#?}");
    f.remove(DEV);
    f.commit("git rm -r clusters/dev");
    let out = real.run(&[]);
    assert!(
        out.all().contains("deletion blocked") && out.all().contains("--allow-deletion"),
        "{}",
        out.all()
    );
    let after = take();
    assert_eq!(
        snapshot::differences("before", &before, "after", &after),
        Vec::<String>::new(),
        "nothing was deleted:\n{}",
        out.all()
    );
    let terminating = real.kubectl(&[
        "get",
        "namespace",
        "aro-dev",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert_eq!(terminating, "", "{}", out.all());

    // With consent the cluster goes: leaves first, the HcpOpenShiftCluster, then the
    // infrastructure; the namespace controller and the garbage collector do the rest.
    let deletions = Deletions::watch(&real, "aro-dev", &WATCHED);
    let out = real.converge(&["--allow-deletion"]);
    eventually_blocking("the namespace aro-dev to be removed", || {
        (!real.exists(&["namespace", "aro-dev"])).then_some(())
    });
    let after = take();
    assert_eq!(
        of_namespace(&after, "aro-dev"),
        BTreeMap::new(),
        "{}",
        out.all()
    );
    assert_eq!(
        of_namespace(&after, "aro-prod"),
        of_namespace(&before, "aro-prod"),
        "prod is untouched"
    );
    let gone = deletions.get();
    let at = |key: &str| -> u64 {
        *gone
            .get(key)
            .unwrap_or_else(|| panic!("{key} was deleted: {gone:#?}\n{}", out.all()))
    };
    let leaves = [
        at("HcpOpenShiftClustersNodePool/aro-dev-workers"),
        at("HcpOpenShiftClustersNodePool/aro-dev-infra"),
        at("HcpOpenShiftClustersExternalAuth/aro-dev-entra"),
    ];
    let hcp = at("HcpOpenShiftCluster/aro-dev");
    let (subnet, vnet, rg) = (
        at("VirtualNetworksSubnet/aro-dev-subnet"),
        at("VirtualNetwork/aro-dev-vnet"),
        at(&format!("ResourceGroup/{RG}")),
    );
    assert!(
        leaves.iter().all(|l| *l < hcp),
        "node pools and ExternalAuth before the HcpOpenShiftCluster: {gone:#?}"
    );
    assert!(
        hcp < subnet && subnet < vnet && vnet < rg,
        "the HcpOpenShiftCluster, then the subnet, its network, the group: {gone:#?}"
    );
    assert!(
        rg < at("AROCluster/dev"),
        "the AROCluster's finalizer is released once its infrastructure is gone: {gone:#?}"
    );
}

/// Polls `check` (blocking) until it returns `Some`, failing after [`CONTROLLER_WAIT`].
fn eventually_blocking<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    block_on(eventually(CONTROLLER_WAIT, what, || {
        let v = check();
        async move { v }
    }))
}
