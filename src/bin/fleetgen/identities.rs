//! `--identities N`: N ServicePrincipal AzureClusterIdentities shared round-robin by the clusters.
//!
//! - `clusters/_identities/`: a unit of its own rendering the Namespace [`NAMESPACE`] and the
//!   identities `aro-identity-01`..; each allows exactly the namespaces of the clusters that use
//!   it (`allowedNamespaces.list`) and names its Secret (`clientSecret`, in [`NAMESPACE`]).
//! - `secrets/identity-secrets.yaml`: the Namespace and the identities' Secrets (key
//!   `clientSecret`), with fake values that say so. Real identity Secrets never live in git, so
//!   this folder is in no kustomization and the fleet's `.gitignore` keeps it out of the
//!   repository: a benchmark applies it to the control plane before `run` (`kubectl apply
//!   --server-side -f secrets/` against `control-plane serve`, or `Cluster::apply` in-process).

use crate::Writer;
use crate::objects::{Spec, TENANT};
use serde_json::{Value, json};

/// The namespace of the shared identities and their Secrets.
pub const NAMESPACE: &str = "aro-identities";

/// The name of identity `i` (from 0).
pub fn name(i: usize) -> String {
    format!("aro-identity-{:02}", i + 1)
}

fn secret_name(i: usize) -> String {
    format!("{}-secret", name(i))
}

/// A client ID per identity (deterministic, clearly synthetic).
fn client_id(i: usize) -> String {
    format!("00000000-0000-4000-a000-{:012}", i + 1)
}

/// The fake client secret of identity `i`: says what it is wherever it shows.
pub fn fake_secret(i: usize) -> String {
    format!(
        "FAKE-fleetgen-client-secret-{:02}-not-a-real-credential",
        i + 1
    )
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "aro-fleet"}}})
}

/// Identity `i`, allowed in `namespaces`.
pub fn identity(i: usize, namespaces: &[String]) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": name(i), "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "aro-fleet"}},
        "spec": {
            "type": "ServicePrincipal",
            "clientID": client_id(i),
            "tenantID": TENANT,
            "clientSecret": {"name": secret_name(i), "namespace": NAMESPACE},
            "allowedNamespaces": {"list": namespaces}
        }
    })
}

fn secret(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": secret_name(i), "namespace": NAMESPACE,
            "annotations": {"fleet.example.com/note": "fake credential written by aro-gitops-fleetgen for benchmarks"}},
        "stringData": {"clientSecret": fake_secret(i)}
    })
}

/// Writes the identities' unit, their Secrets and the `.gitignore` that keeps the Secrets out.
pub fn write(w: &mut Writer, specs: &[Spec], n: usize) -> anyhow::Result<()> {
    let ids: Vec<Value> = (0..n)
        .map(|i| {
            let namespaces: Vec<String> = specs
                .iter()
                .filter(|s| s.identity.as_deref() == Some(name(i).as_str()))
                .map(|s| format!("aro-{}", s.name))
                .collect();
            identity(i, &namespaces)
        })
        .collect();
    w.yaml(
        "clusters/_identities/kustomization.yaml",
        &[crate::kustomization(
            json!({"resources": ["namespace.yaml", "identities.yaml"]}),
        )],
    )?;
    w.yaml("clusters/_identities/namespace.yaml", &[namespace()])?;
    w.yaml("clusters/_identities/identities.yaml", &ids)?;
    let secrets: Vec<Value> = std::iter::once(namespace())
        .chain((0..n).map(secret))
        .collect();
    w.yaml("secrets/identity-secrets.yaml", &secrets)?;
    w.text(
        ".gitignore",
        "# The identities' Secrets never go to git.\nsecrets/\n",
    )
}

/// What the fleet's README says about the identities.
pub fn readme_note(n: usize) -> String {
    format!(
        "\n{n} shared ServicePrincipal identities in namespace `{NAMESPACE}` (unit `clusters/_identities`), \
         used round-robin by the clusters. Their Secrets are in `secrets/` (fake values; not in git, not in \
         any unit): apply them to the control plane before `aro-gitops run`, e.g. \
         `kubectl --kubeconfig <state>/kubeconfig apply --server-side -f secrets/`.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_shared_round_robin_and_allow_exactly_their_clusters() {
        let specs = crate::specs(5, 1, 2, false);
        let used: Vec<_> = specs.iter().map(|s| s.identity.clone().unwrap()).collect();
        assert_eq!(
            used,
            [
                "aro-identity-01",
                "aro-identity-02",
                "aro-identity-01",
                "aro-identity-02",
                "aro-identity-01"
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer {
            root: dir.path().to_path_buf(),
            files: 0,
            bytes: 0,
        };
        write(&mut w, &specs, 2).unwrap();
        let text = std::fs::read_to_string(dir.path().join("clusters/_identities/identities.yaml"))
            .unwrap();
        let docs = aro_gitops::yaml::from_multi_str(&text).unwrap();
        assert_eq!(
            docs[0]["spec"]["allowedNamespaces"]["list"],
            json!(["aro-c00001", "aro-c00003", "aro-c00005"])
        );
        assert_eq!(
            docs[1]["spec"]["allowedNamespaces"]["list"],
            json!(["aro-c00002", "aro-c00004"])
        );
        let parsed = aro_gitops::identity::AzureIdentity::parse(&docs[0]).unwrap();
        assert!(parsed.needs_secret());
        let secrets =
            std::fs::read_to_string(dir.path().join("secrets/identity-secrets.yaml")).unwrap();
        assert!(secrets.contains("FAKE-fleetgen-client-secret-01-not-a-real-credential"));
        let ignore = std::fs::read_to_string(dir.path().join(".gitignore")).unwrap();
        assert!(ignore.contains("secrets/"));
        // The clusters name their identity through the control plane.
        let objs = crate::objects::cluster_objects(&specs[1]);
        assert_eq!(objs[2]["spec"]["identityRef"]["name"], "aro-identity-02");
        assert_eq!(objs[2]["spec"]["identityRef"]["namespace"], NAMESPACE);
    }

    /// `--kms`: every cluster's key is the agent's (KMS on, no version, an `identityRef` on the
    /// control plane, its own Vault declared by its AROCluster), as `reconcile::aro::keyvault`
    /// reads it; without `--kms`, platform-managed encryption. The identity and the subscription
    /// are the control plane's alone: CAPZ's AROCluster has neither field.
    #[test]
    fn kms_clusters_leave_the_key_to_the_agent_in_their_own_declared_vault() {
        use aro_gitops::reconcile::aro::keyvault::{agent_managed, declared_vault, kms_target};
        let specs = crate::specs(3, 1, 2, true);
        let mut vaults = Vec::new();
        for s in &specs {
            let objs = crate::objects::cluster_objects(s);
            let (arocluster, acp) = (&objs[1], &objs[2]);
            let hcp = &acp["spec"]["resources"][0];
            assert!(agent_managed(acp, hcp), "{}", s.name);
            let kms = &hcp["spec"]["properties"]["etcd"]["dataEncryption"];
            assert_eq!(kms["keyManagementMode"], "CustomerManaged");
            assert!(kms["customerManaged"]["kms"]["activeKey"]["version"].is_null());
            let target = kms_target(hcp).unwrap();
            assert_eq!(target.key, "etcd-data-kms-encryption-key");
            assert!(declared_vault(arocluster, &target.vault).is_some());
            vaults.push(target.vault);
        }
        vaults.sort();
        vaults.dedup();
        assert_eq!(vaults.len(), 3, "one vault per cluster");
        // Shared identities without --kms: no customer-managed key at all.
        let plain = crate::objects::cluster_objects(&crate::specs(1, 1, 2, false)[0]);
        let hcp = &plain[2]["spec"]["resources"][0];
        assert!(!agent_managed(&plain[2], hcp));
        assert_eq!(
            hcp["spec"]["properties"]["etcd"],
            json!({"dataEncryption": {"keyManagementMode": "PlatformManaged"}})
        );
        // Without identities, each cluster's own `aro-identity`, named by the control plane only.
        let own = crate::objects::cluster_objects(&crate::specs(1, 1, 0, false)[0]);
        assert_eq!(
            own[2]["spec"]["identityRef"],
            json!({"kind": "AzureClusterIdentity", "name": "aro-identity"})
        );
        assert_eq!(
            own[2]["spec"]["resources"][0]["spec"]["properties"]["etcd"],
            json!({"dataEncryption": {"keyManagementMode": "PlatformManaged"}})
        );
        for objs in [&own, &plain] {
            assert_eq!(objs[1]["kind"], "AROCluster");
            let spec = objs[1]["spec"].as_object().unwrap();
            assert_eq!(spec.keys().collect::<Vec<_>>(), ["resources"]);
        }
    }
}
