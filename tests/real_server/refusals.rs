//! What the agent refuses holds on the real server: two units declaring one object fail both,
//! with nothing of either written, and an object live and owned by one unit does not move to
//! another without consent; an AzureClusterIdentity whose allowedNamespaces leaves a cluster's
//! namespace out fails that cluster, with nothing of it in Azure, while the other converges.

use super::*;

fn config_map(namespace: &str, color: &str, adopt_from: Option<&str>) -> String {
    let annotations = adopt_from
        .map(|u| format!("\n  annotations:\n    aro-gitops.dev/adopt-from: {u}"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {namespace}{annotations}\ndata:\n  color: {color}\n"
    )
}

/// The unit that declares ConfigMap team/settings, per its live mark.
fn owner(real: &RealExamples) -> String {
    real.kubectl(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "team",
        "-o",
        "jsonpath={.metadata.annotations.aro-gitops\\.dev/unit}",
    ])
}

#[test]
fn two_units_declaring_one_object_fail_both_and_an_owned_object_moves_only_with_consent() {
    // Plain Kubernetes objects: nothing plays Azure here.
    let Some(real) = RealExamples::start_with(false) else {
        return;
    };
    let f = &real.fleet;
    f.remove(DEV);
    f.remove(PROD);
    f.write(
        "clusters/a/kustomization.yaml",
        "resources:\n  - namespace.yaml\n  - settings.yaml\n",
    );
    f.write(
        "clusters/a/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n",
    );
    f.write(
        "clusters/a/settings.yaml",
        &config_map("team", "blue", None),
    );
    f.write(
        "clusters/b/kustomization.yaml",
        "resources:\n  - settings.yaml\n",
    );
    f.write("clusters/b/settings.yaml", &config_map("team", "red", None));
    f.commit("two units declare team/settings");

    // Both fail, naming both; nothing of either is written.
    let plan = real.plan(&[]);
    assert_eq!(plan.code, 1, "{}", plan.all());
    assert!(
        plan.stdout.contains("is declared by two units"),
        "{}",
        plan.all()
    );
    let out = real.run(&[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert_phase(&out, "clusters/a", "Failed");
    assert_phase(&out, "clusters/b", "Failed");
    assert!(
        out.all().contains(
            "ConfigMap/team/settings is declared by two units: clusters/a (clusters/a/settings.yaml) and clusters/b (clusters/b/settings.yaml)"
        ),
        "{}",
        out.all()
    );
    assert_eq!(out.requests().1, 0, "nothing written:\n{}", out.all());
    assert!(!real.exists(&["namespace", "team"]));

    // b lets go: a converges and owns it.
    f.remove("clusters/b");
    f.commit("git rm -r clusters/b");
    let out = real.converge(&[]);
    assert_phase(&out, "clusters/a", "Converged");
    assert_eq!(owner(&real), "clusters/a");

    // It moves to c without consent: c fails, a's prune leaves it (c declares it).
    f.write(
        "clusters/a/kustomization.yaml",
        "resources:\n  - namespace.yaml\n",
    );
    f.remove("clusters/a/settings.yaml");
    f.write(
        "clusters/c/kustomization.yaml",
        "resources:\n  - settings.yaml\n",
    );
    f.write(
        "clusters/c/settings.yaml",
        &config_map("team", "green", None),
    );
    f.commit("move team/settings to c without consent");
    let out = real.run(&["--allow-deletion"]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert_phase(&out, "clusters/c", "Failed");
    assert!(
        out.all().contains("is live and owned by unit clusters/a"),
        "{}",
        out.all()
    );
    assert_eq!(owner(&real), "clusters/a");
    let color = real.kubectl(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.color}",
    ]);
    assert_eq!(color, "blue");

    // With consent it moves.
    f.write(
        "clusters/c/settings.yaml",
        &config_map("team", "green", Some("clusters/a")),
    );
    f.commit("move with consent");
    let out = real.converge(&["--allow-deletion"]);
    assert_phase(&out, "clusters/c", "Converged");
    assert_eq!(owner(&real), "clusters/c");
}

#[test]
fn an_identity_refusing_a_namespace_fails_that_cluster_only() {
    let Some(real) = RealExamples::start() else {
        return;
    };
    real.fleet.add_patches(
        DEV,
        "  - target: {kind: AzureClusterIdentity, name: aro-identity}\n    patch: |-\n      - op: replace\n        path: /spec/allowedNamespaces/list\n        value: [aro-prod]\n",
    );
    real.fleet.commit("aro-identity allows aro-prod only");
    let out = real.run(&[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert_phase(&out, PROD, "Converged");
    assert_phase(&out, DEV, "Failed");
    assert!(
        out.all()
            .contains("AzureClusterIdentity aro-dev/aro-identity does not allow namespace aro-dev"),
        "{}",
        out.all()
    );
    // The ARO objects of dev say why (written through their status subresource).
    for resource in [
        "arocontrolplanes.controlplane.cluster.x-k8s.io",
        "aroclusters.infrastructure.cluster.x-k8s.io",
    ] {
        let reason = real.kubectl(&[
            "get",
            resource,
            "dev",
            "-n",
            "aro-dev",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}",
        ]);
        assert_eq!(reason, "NamespaceNotAllowedByIdentity", "{resource}");
    }
    // Nothing of dev stands for Azure; prod has its credential and its resources.
    for resource in [
        "resourcegroups.resources.azure.com",
        "virtualnetworks.network.azure.com",
        "vaults.keyvault.azure.com",
        "userassignedidentities.managedidentity.azure.com",
        "hcpopenshiftclusters.redhatopenshift.azure.com",
    ] {
        let dev = real.kubectl(&["get", resource, "-n", "aro-dev", "-o", "name"]);
        assert_eq!(dev.trim(), "", "{resource} in aro-dev");
        let prod = real.kubectl(&["get", resource, "-n", "aro-prod", "-o", "name"]);
        assert!(!prod.trim().is_empty(), "{resource} in aro-prod");
    }
    assert!(!real.exists(&["secret", "dev-aso-secret", "-n", "aro-dev"]));
    assert!(real.exists(&["secret", "prod-aso-secret", "-n", "aro-prod"]));
}
