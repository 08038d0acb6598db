//! Pull-request previews: `aro-gitops plan --base <sha> --head <sha>` without a cluster, so head is
//! compared with the base revision's render. Each test makes the base and head commits it needs on
//! top of the examples.

use super::*;

/// The dev cluster's worker VM size, set by the dev environment component.
const DEV_COMPONENT: &str = "components/dev/kustomization.yaml";
const DEV_WORKERS_SIZE: &str = "value: Standard_D4s_v3";

/// A standalone Azure resource group of the dev cluster; `{annotations}` is replaced.
pub fn extra_rg(annotations: &str) -> String {
    format!(
        "apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: aro-dev-extra-rg
  annotations:
{annotations}
spec:
  azureName: aro-dev-extra-rg
  location: eastus
"
    )
}

pub const POLICY: &str = "serviceoperator.azure.com/reconcile-policy";
pub const POLICY_IF_EXISTS: &str = "serviceoperator.azure.com/reconcile-policy-if-exists";

/// Changes the dev workers' VM size in the work tree.
pub fn resize_dev_workers(f: &Fleet) {
    f.replace(DEV_COMPONENT, DEV_WORKERS_SIZE, "value: Standard_D16s_v3");
}

/// Adds a ResourceGroup to dev declaring both reconcile-policy annotations (a validation error).
pub fn add_invalid_rg(f: &Fleet) {
    f.write(
        "clusters/dev/extra-rg.yaml",
        &extra_rg(&format!(
            "    {POLICY}: manage\n    {POLICY_IF_EXISTS}: skip"
        )),
    );
    f.add_resource(DEV, "extra-rg.yaml");
}

#[test]
fn creating_a_cluster_lists_its_objects_as_creates() {
    let (f, first) = Fleet::git();
    f.remove(DEV);
    let base = f.commit("the fleet before dev");
    f.checkout(&first, DEV);
    let head = f.commit("add the dev cluster");

    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    assert_eq!(plan["against"], "base");
    assert_eq!(plan["base"]["commit"], base.as_str());
    assert_eq!(plan["head"]["commit"], head.as_str());
    let dev = cluster(&plan, DEV);
    assert_eq!(dev["cluster"], "aro-dev/dev");
    let created = count(dev, "create");
    assert!(created > 0, "{dev:#}");
    for what in ["update", "delete", "unchanged", "blocked", "adopted"] {
        assert_eq!(count(dev, what), 0, "{what}: {dev:#}");
    }
    let listed = changes(dev);
    assert_eq!(listed.len() as u64, created);
    assert!(
        listed.iter().all(|(action, _)| action == "create"),
        "{listed:?}"
    );
    // The CAPI objects, the ARO objects and the Azure resources they embed, each on its own.
    for object in [
        "Namespace/aro-dev",
        "Cluster/dev",
        "AROCluster/dev",
        "AROControlPlane/dev",
        "AROMachinePool/dev-workers",
        "MachinePool/dev-infra",
        "ResourceGroup/aro-dev-rg",
        "HcpOpenShiftCluster/aro-dev",
        "HcpOpenShiftClustersNodePool/aro-dev-workers",
    ] {
        assert!(
            listed.contains(&("create".to_string(), object.to_string())),
            "{object} is not created: {listed:?}"
        );
    }
    let ns = change(dev, "Namespace/aro-dev");
    assert!(
        ns["diff"].as_str().unwrap().contains("+  name: aro-dev"),
        "{ns:#}"
    );
    let prod = cluster(&plan, PROD);
    assert!(changes(prod).is_empty(), "{prod:#}");
    assert_eq!(count(prod, "create") + count(prod, "update"), 0);

    // The pull-request comment: the summary first, a collapsible section for the cluster that
    // changes, a diff fence per change, balanced.
    let md = f.plan_revs(&base, &head, &["-o", "markdown"]);
    md.expect_code(2);
    let md = md.stdout;
    let first_line = md.lines().next().unwrap_or_default();
    assert!(
        first_line.starts_with("**aro-gitops plan**: 1 cluster changes ("),
        "{first_line}"
    );
    assert!(
        first_line.contains(&format!("{created} to create")),
        "{first_line}"
    );
    assert_eq!(md.matches("<details").count(), 1, "{md}");
    assert_eq!(md.matches("</details>").count(), 1, "{md}");
    assert!(md.contains("<summary><code>clusters/dev</code>"), "{md}");
    // A diff per create, but for those the comment's size limit leaves out (it says how many).
    let omitted: u64 = md
        .split_once("Output cut at 65,000 characters: ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert_eq!(
        md.matches("```diff\n").count() as u64 + omitted,
        created,
        "{md}"
    );
    let fences = md.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "unbalanced fences:\n{md}");
    assert!(
        md.contains("`clusters/prod`"),
        "prod is named unchanged:\n{md}"
    );
}

#[test]
fn changing_a_node_pool_vm_size_updates_that_pool_only() {
    let (f, base) = Fleet::git();
    resize_dev_workers(&f);
    let head = f.commit("bigger dev workers");

    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    let dev = cluster(&plan, DEV);
    // The AROMachinePool changes, and so does the node pool it embeds (its own object).
    assert_eq!(
        changes(dev),
        pairs(&[
            ("update", "AROMachinePool/dev-workers"),
            ("update", "HcpOpenShiftClustersNodePool/aro-dev-workers"),
        ])
    );
    assert_eq!(count(dev, "update"), 2);
    assert_eq!(count(dev, "create") + count(dev, "delete"), 0);
    for object in [
        "AROMachinePool/dev-workers",
        "HcpOpenShiftClustersNodePool/aro-dev-workers",
    ] {
        let diff = change(dev, object)["diff"].as_str().unwrap();
        let removed: Vec<&str> = diff
            .lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("---"))
            .collect();
        let added: Vec<&str> = diff
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .collect();
        assert_eq!(removed.len(), 1, "{diff}");
        assert_eq!(added.len(), 1, "{diff}");
        assert!(
            removed[0].trim_start_matches('-').trim() == "vmSize: Standard_D4s_v3",
            "{diff}"
        );
        assert!(
            added[0].trim_start_matches('+').trim() == "vmSize: Standard_D16s_v3",
            "{diff}"
        );
        assert!(
            diff.starts_with(&format!(
                "--- base/{}",
                change(dev, object)["object"]["kind"].as_str().unwrap()
            )),
            "{diff}"
        );
    }
    let prod = cluster(&plan, PROD);
    assert!(changes(prod).is_empty(), "{prod:#}");
    assert_eq!(count(prod, "unchanged"), count(dev, "unchanged") + 2);

    // The terminal rendering, whole, with the commit ids replaced.
    let text = f.plan_revs(&base, &head, &[]);
    text.expect_code(2);
    let text = normalize(&text.stdout, &[(&base, "base"), (&head, "head")])
        .replace(&f.repo.display().to_string(), "<repo>");
    assert_eq!(text, VM_SIZE_TEXT, "got:\n{text}");
}

const VM_SIZE_TEXT: &str = "aro-gitops plan of <repo>
Head commit:<head> (<head:short>), base commit:<base> (<base:short>)
Compared with the base revision: the base revision commit:<base> (<base:short>)

Cluster clusters/dev (aro-dev/dev): 0 to create, 2 to update, 0 to delete, 47 unchanged

  ~ AROMachinePool/aro-dev/dev-workers will be updated in place
      --- base/AROMachinePool/aro-dev/dev-workers
      +++ desired/AROMachinePool/aro-dev/dev-workers
      @@ -21,7 +21,7 @@
                 id: \"4.20\"
                 channelGroup: stable
               platform:
      -          vmSize: Standard_D4s_v3
      +          vmSize: Standard_D16s_v3
                 subnetReference:
                   group: network.azure.com
                   kind: VirtualNetworksSubnet

  ~ HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers will be updated in place
      --- base/HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers
      +++ desired/HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers
      @@ -15,7 +15,7 @@
             id: \"4.20\"
             channelGroup: stable
           platform:
      -      vmSize: Standard_D4s_v3
      +      vmSize: Standard_D16s_v3
             subnetReference:
               group: network.azure.com
               kind: VirtualNetworksSubnet

No changes in 1 cluster: clusters/prod

Plan: 0 to create, 2 to update, 0 to delete.
";

#[test]
fn a_validation_error_names_the_file_and_the_object() {
    let (f, base) = Fleet::git();
    add_invalid_rg(&f);
    // prod: an unknown policy value on a resource embedded in its AROCluster.
    f.add_patches(
        PROD,
        &format!(
            "  - target: {{kind: AROCluster, name: prod}}\n    patch: |-\n      - op: add\n        path: /spec/resources/0/metadata/annotations\n        value: {{{POLICY}: keep}}\n"
        ),
    );
    let head = f.commit("invalid policies");

    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 1, "{plan:#}");
    let dev = cluster(&plan, DEV);
    assert!(
        changes(dev).is_empty(),
        "a cluster with errors is not planned: {dev:#}"
    );
    let errors = entries(dev, "errors");
    assert_eq!(errors.len(), 1, "{dev:#}");
    assert_eq!(errors[0]["file"], "clusters/dev/extra-rg.yaml");
    assert_eq!(name(&errors[0]["object"]), "ResourceGroup/aro-dev-extra-rg");
    assert_eq!(errors[0]["object"]["namespace"], "aro-dev");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains(POLICY) && message.contains(POLICY_IF_EXISTS),
        "{message}"
    );

    let prod = cluster(&plan, PROD);
    let errors = entries(prod, "errors");
    assert_eq!(errors.len(), 1, "{prod:#}");
    assert_eq!(
        errors[0]["file"], "base/cluster/arocluster.yaml",
        "{prod:#}"
    );
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains("\"keep\" is not a reconcile policy"),
        "{message}"
    );
    // The object is the AROCluster, and the message points into its list at the embedded entry.
    assert_eq!(name(&errors[0]["object"]), "AROCluster/prod", "{prod:#}");
    assert!(
        message.contains("/spec/resources/0 (ResourceGroup/aro-prod-rg)/metadata/annotations"),
        "{message}"
    );

    let text = f.plan_revs(&base, &head, &[]);
    text.expect_code(1);
    assert!(
        text.stdout.contains("clusters/dev/extra-rg.yaml"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("ResourceGroup/aro-dev/aro-dev-extra-rg"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("2 clusters were not planned because of errors: clusters/dev, clusters/prod"),
        "{}",
        text.stdout
    );
    let md = f.plan_revs(&base, &head, &["-o", "markdown"]);
    md.expect_code(1);
    assert!(
        md.stdout.contains(
            "| `clusters/dev/extra-rg.yaml:5:3` | `ResourceGroup/aro-dev/aro-dev-extra-rg` |"
        ),
        "{}",
        md.stdout
    );
}

/// The plan's error lines say the file and the object once: the message should not repeat them.
#[test]
fn a_validation_error_names_the_file_once() {
    let (f, base) = Fleet::git();
    add_invalid_rg(&f);
    let head = f.commit("both policies on one object");
    let text = f.plan_revs(&base, &head, &[]);
    text.expect_code(1);
    let line = text
        .stdout
        .lines()
        .find(|l| l.contains("cannot both be set"))
        .unwrap_or_else(|| panic!("no error line:\n{}", text.stdout));
    assert_eq!(
        line.matches("clusters/dev/extra-rg.yaml").count(),
        1,
        "{line}"
    );
    assert_eq!(
        line.matches("ResourceGroup/aro-dev/aro-dev-extra-rg")
            .count(),
        1,
        "{line}"
    );
}

#[test]
fn the_same_revision_has_no_changes() {
    let (f, first) = Fleet::git();
    let text = f.plan_revs(&first, &first, &[]);
    text.expect_code(0);
    assert!(
        text.stdout
            .contains("No changes in 2 clusters: clusters/dev, clusters/prod"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .trim_end()
            .ends_with("No changes. The head revision renders the same objects as the base."),
        "{}",
        text.stdout
    );
    let (code, plan) = f.plan_json(&first, &first, &[]);
    assert_eq!(code, 0);
    for unit in [DEV, PROD] {
        let c = cluster(&plan, unit);
        assert!(changes(c).is_empty(), "{c:#}");
        assert!(count(c, "unchanged") > 0, "{c:#}");
    }
    let md = f.plan_revs(&first, &first, &["-o", "markdown"]);
    md.expect_code(0);
    assert!(
        md.stdout.starts_with("**aro-gitops plan**: no changes"),
        "{}",
        md.stdout
    );
    assert!(!md.stdout.contains("<details"), "{}", md.stdout);
}
