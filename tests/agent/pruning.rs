//! Pruning and deletion safety: what leaves git is deleted only from the unit's inventory, only
//! when the render and the source can be trusted, Azure-backed objects only with consent,
//! `detach-on-delete` keeps the (simulated) Azure resource, and a share guard stops large deletes.

use super::*;
use aro_gitops::apply::inventory;
use aro_gitops::azuresim::inventory as azure;

const CONFIG_MAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\ndata:\n  a: \"1\"\n";

fn config_map(name: &str) -> String {
    CONFIG_MAP.replace("NAME", name)
}

pub fn resource_group(name: &str, annotations: &str) -> String {
    format!(
        "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: {name}\n  annotations: {{{annotations}}}\nspec:\n  location: eastus\n"
    )
}

fn cm_key(name: &str) -> ObjectKey {
    key("v1", "ConfigMap", "aro-dev", name)
}

pub fn rg_key(name: &str) -> ObjectKey {
    key(
        "resources.azure.com/v1api20200601",
        "ResourceGroup",
        "aro-dev",
        name,
    )
}

/// Whether `key` is live.
async fn exists(f: &Fleet, k: &ObjectKey) -> bool {
    let k = k.clone();
    f.inspect(|c| async move { c.get(&k).await.expect("get").is_some() })
        .await
}

/// The ARM id the simulator records for a standalone resource group of the dev cluster.
pub fn rg_arm_id(name: &str) -> String {
    format!(
        "/subscriptions/{}/resourceGroups/{name}",
        aro_gitops::arm::SUBSCRIPTION_ID
    )
}

async fn in_simulated_azure(f: &Fleet, arm_id: &str) -> bool {
    let id = arm_id.to_string();
    f.inspect(|c| async move { azure::exists(c.client(), &id).await.expect("read") })
        .await
}

/// The kinds/names the unit's inventory holds.
async fn inventory_names(f: &Fleet, unit: &str) -> Vec<String> {
    let unit = unit.to_string();
    let scope = f.scope();
    f.inspect(|c| async move {
        let (all, broken, _) =
            (inventory::read_all(&c, &scope, |_| true).await).expect("inventories");
        assert!(broken.is_empty());
        all.get(&unit)
            .map(|i| {
                i.entries
                    .keys()
                    .map(|e| format!("{}/{}", e.kind, e.name))
                    .collect()
            })
            .unwrap_or_default()
    })
    .await
}

fn kustomization(f: &Fleet) -> String {
    std::fs::read_to_string(f.repo.join(DEV).join("kustomization.yaml")).expect("read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_that_leaves_git_is_deleted_and_forgotten() {
    let f = Fleet::plain();
    let original = kustomization(&f);
    f.write(&format!("{DEV}/extra.yaml"), &config_map("extra"));
    f.add_resource(DEV, "extra.yaml");
    let first = f.run().await;
    assert_converged(outcome(&first, DEV));
    assert!(exists(&f, &cm_key("extra")).await);
    assert!(
        inventory_names(&f, DEV)
            .await
            .contains(&"ConfigMap/extra".to_string())
    );

    f.write(&format!("{DEV}/kustomization.yaml"), &original);
    let second = f.run().await;
    let o = outcome(&second, DEV);
    assert_converged_but_deleted(o);
    assert_eq!(
        with_action(o, &ObjectAction::Deleted),
        vec![cm_key("extra").to_string()]
    );
    assert!(!exists(&f, &cm_key("extra")).await);
    assert!(
        !inventory_names(&f, DEV)
            .await
            .contains(&"ConfigMap/extra".to_string())
    );
    // The other cluster was not touched.
    assert!(with_action(outcome(&second, PROD), &ObjectAction::Deleted).is_empty());
}

/// Converged, apart from the objects that were deleted (they are not ready: they are gone).
fn assert_converged_but_deleted(o: &UnitOutcome) {
    assert_eq!(report::phase(o), Phase::Converged, "{}", describe(o));
    assert!(o.errors.is_empty(), "{}", describe(o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_deletions_wait_for_consent_and_detach_keeps_the_azure_resource() {
    let f = Fleet::plain();
    let original = kustomization(&f);
    f.write(
        &format!("{DEV}/managed.yaml"),
        &resource_group("managed-rg", ""),
    );
    f.write(
        &format!("{DEV}/detached.yaml"),
        &resource_group(
            "detached-rg",
            "serviceoperator.azure.com/reconcile-policy: detach-on-delete",
        ),
    );
    f.add_resource(DEV, "managed.yaml");
    f.add_resource(DEV, "detached.yaml");
    let first = f.run().await;
    assert_converged(outcome(&first, DEV));
    assert!(in_simulated_azure(&f, &rg_arm_id("managed-rg")).await);
    assert!(in_simulated_azure(&f, &rg_arm_id("detached-rg")).await);

    // Both leave git. The detached one goes at once (its Azure resource stays); the managed one
    // would delete its Azure resource: blocked until allowed.
    f.write(&format!("{DEV}/kustomization.yaml"), &original);
    let second = f.run().await;
    let o = outcome(&second, DEV);
    assert_eq!(report::phase(o), Phase::Converged, "{}", describe(o));
    assert_eq!(
        with_action(o, &ObjectAction::DeletionBlocked),
        vec![rg_key("managed-rg").to_string()],
        "{}",
        describe(o)
    );
    let blocked = o
        .objects
        .iter()
        .find(|x| x.action == ObjectAction::DeletionBlocked)
        .expect("blocked");
    let reason = blocked.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("--allow-deletion"), "{reason}");
    assert!(exists(&f, &rg_key("managed-rg")).await);
    assert!(!exists(&f, &rg_key("detached-rg")).await);
    assert!(
        in_simulated_azure(&f, &rg_arm_id("detached-rg")).await,
        "detach keeps Azure"
    );
    // The report says why.
    let md = f.report("reports/aro-dev/dev.md").expect("the dev report");
    assert!(md.contains("deletionBlocked"), "{md}");

    // With consent it goes, and so does its (simulated) Azure resource.
    let mut config = f.config();
    config.safety.allow_deletion = true;
    f.wait_store_free().await;
    let third = agent::run(config).await.expect("runs");
    let o = outcome(&third, DEV);
    assert_eq!(
        with_action(o, &ObjectAction::Deleted),
        vec![rg_key("managed-rg").to_string()],
        "{}",
        describe(o)
    );
    assert!(!exists(&f, &rg_key("managed-rg")).await);
    let gone = rg_arm_id("managed-rg");
    common::eventually(
        Duration::from_secs(10),
        "the simulator deletes the Azure resource",
        || {
            let f = &f;
            let gone = gone.clone();
            async move { (!in_simulated_azure(f, &gone).await).then_some(()) }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_empty_renders_delete_nothing() {
    let f = Fleet::plain();
    let original = kustomization(&f);
    f.write(&format!("{DEV}/extra.yaml"), &config_map("extra"));
    f.add_resource(DEV, "extra.yaml");
    f.run().await;
    let before = inventory_names(&f, DEV).await;

    // A render that fails: a resource that does not exist.
    f.write(
        &format!("{DEV}/kustomization.yaml"),
        &original.replace(
            "  - cluster-params.yaml",
            "  - cluster-params.yaml\n  - missing.yaml",
        ),
    );
    f.wait_store_free().await;
    let failed = agent::run(f.config()).await.expect("runs");
    assert_eq!(report::phase(outcome(&failed, DEV)), Phase::Failed);
    assert!(exists(&f, &cm_key("extra")).await);
    assert!(exists(&f, &rg_key("aro-dev-rg")).await);
    assert_eq!(inventory_names(&f, DEV).await, before);

    // A render that returns nothing.
    f.write(
        &format!("{DEV}/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
    );
    f.wait_store_free().await;
    let empty = agent::run(f.config()).await.expect("runs");
    let o = outcome(&empty, DEV);
    assert!(
        with_action(o, &ObjectAction::Deleting).is_empty(),
        "{}",
        describe(o)
    );
    assert!(
        with_action(o, &ObjectAction::Deleted).is_empty(),
        "{}",
        describe(o)
    );
    assert!(exists(&f, &cm_key("extra")).await);
    assert!(exists(&f, &rg_key("aro-dev-rg")).await);
    assert_eq!(inventory_names(&f, DEV).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_deleted_while_the_source_is_unreachable() {
    let f = Fleet::with_remote();
    f.write(&format!("{DEV}/extra.yaml"), &config_map("extra"));
    f.add_resource(DEV, "extra.yaml");
    f.run().await;
    // The remote goes away, then the state's copy of the source too (a new pod without its
    // volume): the agent has nothing it can trust and must not prune from the inventory.
    std::fs::rename(&f.url, f.dir().join("moved.git")).expect("move the remote");
    f.wait_store_free().await;
    let stale = agent::run(f.config())
        .await
        .expect("runs on the last good revision");
    let o = outcome(&stale, DEV);
    assert!(o.stale_source.is_some(), "{}", describe(o));
    assert!(with_action(o, &ObjectAction::Deleting).is_empty());
    std::fs::remove_dir_all(f.state.join("source")).expect("drop the source state");
    f.wait_store_free().await;
    assert!(
        agent::run(f.config()).await.is_err(),
        "no source at all is an error"
    );
    assert!(exists(&f, &cm_key("extra")).await);
    assert!(
        inventory_names(&f, DEV)
            .await
            .contains(&"ConfigMap/extra".to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_share_guard_holds_large_deletions_until_allowed() {
    let f = Fleet::plain();
    let original = kustomization(&f);
    for n in ["one", "two", "three", "four"] {
        f.write(&format!("{DEV}/{n}.yaml"), &config_map(n));
        f.add_resource(DEV, &format!("{n}.yaml"));
    }
    f.run().await;
    f.write(&format!("{DEV}/kustomization.yaml"), &original);
    // Four of the cluster's ~55 objects: over a 5% guard.
    let mut config = f.config();
    config.safety.max_delete_share = 0.05;
    f.wait_store_free().await;
    let held = agent::run(config.clone()).await.expect("runs");
    let o = outcome(&held, DEV);
    let blocked = with_action(o, &ObjectAction::DeletionBlocked);
    assert_eq!(blocked.len(), 4, "{}", describe(o));
    assert!(
        o.objects
            .iter()
            .filter(|x| x.action == ObjectAction::DeletionBlocked)
            .all(|x| x
                .reason
                .as_deref()
                .unwrap_or_default()
                .contains("more than the 5%")),
        "{}",
        describe(o)
    );
    assert!(exists(&f, &cm_key("one")).await);

    config.safety.allow_deletion = true;
    f.wait_store_free().await;
    let allowed = agent::run(config).await.expect("runs");
    assert_eq!(
        with_action(outcome(&allowed, DEV), &ObjectAction::Deleted).len(),
        4
    );
    assert!(!exists(&f, &cm_key("one")).await);
}
