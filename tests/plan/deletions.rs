//! Deletions in pull-request previews (head compared with the base revision): deletion safety
//! blocks what would destroy Azure resources unless allowed, and `detach-on-delete` objects go
//! without consent while their Azure resources stay.

use super::base::{POLICY, extra_rg};
use super::*;

/// Overlay patches that remove the dev cluster's infra node pool: the Cluster API MachinePool and
/// its AROMachinePool (which embeds the HcpOpenShiftClustersNodePool).
const REMOVE_INFRA_POOL: &str = r#"  - patch: |-
      $patch: delete
      apiVersion: cluster.x-k8s.io/v1beta2
      kind: MachinePool
      metadata:
        name: dev-infra
  - patch: |-
      $patch: delete
      apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
      kind: AROMachinePool
      metadata:
        name: dev-infra
"#;

#[test]
fn removing_a_node_pool_needs_consent_for_its_azure_objects() {
    let (f, base) = Fleet::git();
    f.add_patches(DEV, REMOVE_INFRA_POOL);
    let head = f.commit("remove the dev infra pool");

    // Without consent: the Kubernetes-only MachinePool goes, the ARO object and the node pool it
    // embeds (both delete Azure resources) are blocked, and the reason says how to allow them.
    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    let dev = cluster(&plan, DEV);
    assert_eq!(changes(dev), pairs(&[("delete", "MachinePool/dev-infra")]));
    assert_eq!(
        names_in(dev, "blockedDeletions"),
        vec![
            "AROMachinePool/dev-infra".to_string(),
            "HcpOpenShiftClustersNodePool/aro-dev-infra".to_string()
        ]
    );
    for b in entries(dev, "blockedDeletions") {
        let reason = b["reason"].as_str().unwrap();
        assert!(reason.contains("--allow-deletion"), "{reason}");
        assert!(reason.contains("aro-gitops.dev/allow-deletion"), "{reason}");
    }
    assert_eq!(count(dev, "blocked"), 2);
    assert_eq!(count(dev, "delete"), 1);
    assert!(changes(cluster(&plan, PROD)).is_empty());
    let md = f.plan_revs(&base, &head, &["-o", "markdown"]).stdout;
    assert!(md.contains("**Deletions blocked**"), "{md}");
    assert!(
        md.lines().next().unwrap().contains("2 deletions blocked"),
        "{md}"
    );

    // With --allow-deletion: all three are deleted, nothing is blocked.
    let (code, plan) = f.plan_json(&base, &head, &["--allow-deletion"]);
    assert_eq!(code, 2, "{plan:#}");
    let dev = cluster(&plan, DEV);
    let all_three = pairs(&[
        ("delete", "MachinePool/dev-infra"),
        ("delete", "AROMachinePool/dev-infra"),
        ("delete", "HcpOpenShiftClustersNodePool/aro-dev-infra"),
    ]);
    assert_eq!(changes(dev), all_three);
    assert!(entries(dev, "blockedDeletions").is_empty(), "{dev:#}");
    assert_eq!(count(dev, "blocked"), 0);
    assert!(
        entries(dev, "changes")
            .iter()
            .all(|c| c.get("detach").is_none())
    );

    // The same consent as the unit annotation on the CAPI Cluster in git.
    f.replace(
        &format!("{DEV}/kustomization.yaml"),
        "patches:\n",
        "patches:\n  - target: {kind: Cluster, name: dev}\n    patch: |-\n      - op: add\n        path: /metadata/annotations\n        value: {aro-gitops.dev/allow-deletion: \"true\"}\n",
    );
    let consented = f.commit("allow the dev cluster's deletions");
    let (code, plan) = f.plan_json(&base, &consented, &[]);
    assert_eq!(code, 2, "{plan:#}");
    let dev = cluster(&plan, DEV);
    let mut expected = all_three.clone();
    expected.extend(pairs(&[("update", "Cluster/dev")]));
    expected.sort();
    assert_eq!(changes(dev), expected);
    assert!(entries(dev, "blockedDeletions").is_empty(), "{dev:#}");
}

#[test]
fn detach_on_delete_removals_keep_the_azure_resource_without_consent() {
    let (f, first) = Fleet::git();
    // A standalone resource group, and an identity embedded in the AROCluster, both detached.
    f.write(
        "clusters/dev/extra-rg.yaml",
        &extra_rg(&format!("    {POLICY}: detach-on-delete")),
    );
    f.add_resource(DEV, "extra-rg.yaml");
    f.add_patches(
        DEV,
        &format!(
            r#"  - target: {{kind: AROCluster, name: dev}}
    patch: |-
      - op: add
        path: /spec/resources/-
        value:
          apiVersion: managedidentity.azure.com/v1api20230131
          kind: UserAssignedIdentity
          metadata:
            name: aro-dev-audit
            annotations:
              {POLICY}: detach-on-delete
          spec:
            azureName: aro-dev-audit
            owner:
              name: aro-dev-rg
            location: eastus
"#
        ),
    );
    let base = f.commit("an extra resource group and identity, detached on delete");
    f.remove("clusters/dev/extra-rg.yaml");
    f.checkout(&first, DEV);
    let head = f.commit("remove them");

    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    let dev = cluster(&plan, DEV);
    assert_eq!(
        changes(dev),
        pairs(&[
            ("delete", "ResourceGroup/aro-dev-extra-rg"),
            ("delete", "UserAssignedIdentity/aro-dev-audit"),
            // The identity leaves the AROCluster's list.
            ("update", "AROCluster/dev"),
        ])
    );
    assert!(entries(dev, "blockedDeletions").is_empty(), "{dev:#}");
    assert_eq!(count(dev, "blocked"), 0);
    for object in [
        "ResourceGroup/aro-dev-extra-rg",
        "UserAssignedIdentity/aro-dev-audit",
    ] {
        assert_eq!(change(dev, object)["detach"], true, "{object}: {dev:#}");
        let effect = entries(dev, "policyEffects")
            .iter()
            .find(|e| name(&e["object"]) == object)
            .unwrap_or_else(|| panic!("no policy effect for {object}: {dev:#}"));
        assert_eq!(effect["policy"], "detach-on-delete");
        assert!(
            effect["effect"]
                .as_str()
                .unwrap()
                .contains("Azure resource is kept"),
            "{effect}"
        );
    }
    assert!(change(dev, "AROCluster/dev").get("detach").is_none());
    let text = f.plan_revs(&base, &head, &[]).stdout;
    assert!(
        text.contains("ResourceGroup/aro-dev/aro-dev-extra-rg will be deleted from Kubernetes; its Azure resource is kept"),
        "{text}"
    );
}

#[test]
fn removing_a_cluster_trips_the_share_guard() {
    let (f, base) = Fleet::git();
    f.remove(DEV);
    let head = f.commit("remove the dev cluster");

    // Every object of the cluster would go (100% > 50%): all blocked, Kubernetes-only ones too.
    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 0, "blocked deletions change nothing: {plan:#}");
    let dev = cluster(&plan, DEV);
    assert_eq!(dev["cluster"], "aro-dev/dev");
    assert!(changes(dev).is_empty(), "{dev:#}");
    let blocked = entries(dev, "blockedDeletions");
    assert_eq!(blocked.len(), 49, "{dev:#}");
    assert_eq!(count(dev, "blocked"), 49);
    assert!(names_in(dev, "blockedDeletions").contains(&"Namespace/aro-dev".to_string()));
    // Azure-backed objects keep their own reason; the share guard blocks the others.
    for b in blocked {
        let reason = b["reason"].as_str().unwrap();
        assert!(reason.contains("--allow-deletion"), "{reason}");
        let share = reason.contains("49 of the cluster's 49 objects (100%), more than the 50%");
        let azure = reason.contains("deletes the Azure resource");
        assert!(share != azure, "{reason}");
        let kubernetes_only = [
            "Namespace",
            "Cluster",
            "MachinePool",
            "AzureClusterIdentity",
            "Secret",
        ]
        .contains(&b["object"]["kind"].as_str().unwrap());
        if kubernetes_only {
            assert!(share, "{b}");
        }
    }
    assert!(changes(cluster(&plan, PROD)).is_empty());

    // Allowed: all 29 are deleted.
    let (code, plan) = f.plan_json(&base, &head, &["--allow-deletion"]);
    assert_eq!(code, 2, "{plan:#}");
    let dev = cluster(&plan, DEV);
    assert_eq!(count(dev, "delete"), 49, "{dev:#}");
    assert!(entries(dev, "blockedDeletions").is_empty(), "{dev:#}");
    assert!(changes(dev).iter().all(|(action, _)| action == "delete"));
}

/// `changes` are "in the order they would be applied"; pruning deletes dependents before what they
/// depend on (src/agent/pass/prune.rs reverses the dependency order), so the Namespace goes last.
#[test]
fn planned_deletions_are_listed_dependents_first() {
    let (f, base) = Fleet::git();
    f.remove(DEV);
    let head = f.commit("remove the dev cluster");
    let (_, plan) = f.plan_json(&base, &head, &["--allow-deletion"]);
    let dev = cluster(&plan, DEV);
    let order: Vec<String> = entries(dev, "changes")
        .iter()
        .map(|c| name(&c["object"]))
        .collect();
    assert_eq!(order.len(), 49, "{order:?}");
    assert_eq!(
        order.last().map(String::as_str),
        Some("Namespace/aro-dev"),
        "{order:?}"
    );
}
