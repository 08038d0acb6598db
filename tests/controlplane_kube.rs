//! The local control plane driven by kube-rs, as the agent drives a real cluster: typed and dynamic
//! objects, discovery, server-side apply, status, watches, pagination, finalizers and garbage collection.

mod common;

use common::{eventually, local_cluster, widget_crd};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::discovery::Discovery;
use kube::runtime::watcher;
use serde_json::{Value, json};
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

fn widgets(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    )
}

async fn install_widgets(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})).unwrap()
}

async fn namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
}

fn status_code(err: &kube::Error) -> u16 {
    match err {
        kube::Error::Api(s) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn typed_secrets_round_trip_with_optimistic_concurrency() {
    let c = local_cluster(false);
    let api: Api<Secret> = Api::namespaced(c.client.clone(), "default");
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "db"}, "stringData": {"password": "p"}}),
    )
    .unwrap();
    let created = api.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(created.data.as_ref().unwrap()["password"].0, b"p");
    assert!(created.string_data.is_none(), "stringData folds into data");
    assert!(api.get_opt("missing").await.unwrap().is_none());
    let err = api.create(&PostParams::default(), &s).await.unwrap_err();
    assert_eq!(status_code(&err), 409);

    let mut fresh = api.get("db").await.unwrap();
    fresh.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
    let replaced = api
        .replace("db", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    // A write based on the old resourceVersion is a conflict.
    let err = api
        .replace("db", &PostParams::default(), &created)
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 409);

    api.delete("db", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("db").await.unwrap().is_none());
}

#[tokio::test]
async fn discovery_follows_crds_as_they_come_and_go() {
    let c = local_cluster(false);
    let d = Discovery::new(c.client.clone()).run().await.unwrap();
    assert!(!d.has_group("example.com"));
    assert!(d.has_group("apiextensions.k8s.io"));
    install_widgets(&c.client).await;
    let d = Discovery::new(c.client.clone()).run().await.unwrap();
    let group = d.get("example.com").expect("group discovered");
    assert_eq!(group.preferred_version(), Some("v1"));
    let (ar, caps) = group.recommended_kind("Widget").unwrap();
    assert_eq!(ar.plural, "widgets");
    assert!(matches!(caps.scope, kube::discovery::Scope::Namespaced));
    assert!(
        caps.subresources
            .iter()
            .any(|(r, _)| r.plural.ends_with("status") || r.plural == "widgets/status")
    );

    widgets(&c.client, "default")
        .create(&PostParams::default(), &widget("w1", json!({"size": 1})))
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually(T, "CRD gone", || async {
        crds.get_opt("widgets.example.com")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let d = Discovery::new(c.client.clone()).run().await.unwrap();
    assert!(
        !d.has_group("example.com"),
        "deleting the CRD removes the kind"
    );
}

#[tokio::test]
async fn preloaded_crds_serve_every_agent_kind() {
    let c = local_cluster(true);
    let d = Discovery::new(c.client.clone()).run().await.unwrap();
    for (group, kind) in [
        ("cluster.x-k8s.io", "Cluster"),
        ("cluster.x-k8s.io", "MachinePool"),
        ("infrastructure.cluster.x-k8s.io", "AROCluster"),
        ("infrastructure.cluster.x-k8s.io", "AROMachinePool"),
        ("infrastructure.cluster.x-k8s.io", "AzureClusterIdentity"),
        ("controlplane.cluster.x-k8s.io", "AROControlPlane"),
        ("karpenter.hypershift.openshift.io", "AutoNodePolicy"),
        ("resources.azure.com", "ResourceGroup"),
        ("network.azure.com", "VirtualNetwork"),
        ("network.azure.com", "VirtualNetworksSubnet"),
        ("network.azure.com", "NetworkSecurityGroup"),
        ("keyvault.azure.com", "Vault"),
        ("managedidentity.azure.com", "UserAssignedIdentity"),
        ("authorization.azure.com", "RoleAssignment"),
        ("redhatopenshift.azure.com", "HcpOpenShiftCluster"),
        ("redhatopenshift.azure.com", "HcpOpenShiftClustersNodePool"),
        (
            "redhatopenshift.azure.com",
            "HcpOpenShiftClustersExternalAuth",
        ),
    ] {
        let g = d
            .get(group)
            .unwrap_or_else(|| panic!("group {group} served"));
        let (_, caps) = g
            .resources_by_stability()
            .into_iter()
            .find(|(ar, _)| ar.kind == kind)
            .unwrap_or_else(|| panic!("{kind} served"));
        assert!(
            !caps.subresources.is_empty(),
            "{kind} has a status subresource"
        );
    }
}

#[test]
fn reopening_the_same_state_writes_nothing_and_keeps_resource_versions() {
    let dir = tempfile::tempdir().unwrap();
    let config = aro_gitops::controlplane::Config::new(dir.path());
    let rv = aro_gitops::controlplane::ControlPlane::open(config.clone())
        .unwrap()
        .resource_version();
    assert!(rv > 17, "namespaces and CRDs were written");
    let again = aro_gitops::controlplane::ControlPlane::open(config).unwrap();
    assert_eq!(
        again.resource_version(),
        rv,
        "reopening rewrites nothing it preloaded"
    );
}

#[tokio::test]
async fn dynamic_objects_status_and_generation() {
    let c = local_cluster(false);
    install_widgets(&c.client).await;
    let api = widgets(&c.client, "default");
    let w = api
        .create(&PostParams::default(), &widget("w1", json!({"size": 1})))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));

    // A status write changes status only, and does not bump generation.
    let patched = api
        .patch_status("w1", &PatchParams::default(), &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {"size": 99}})))
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(1));
    assert_eq!(patched.data["spec"]["size"], 1, "status writes ignore spec");
    assert_eq!(patched.data["status"]["conditions"][0]["status"], "True");

    // A spec write bumps generation and ignores status.
    let patched = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}, "status": {"conditions": []}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(
        patched.data["status"]["conditions"][0]["type"], "Ready",
        "main-resource writes ignore status"
    );

    // A metadata-only write does not bump generation.
    let patched = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));

    // Served in every version, stored once.
    let gvk = GroupVersionKind::gvk("example.com", "v1alpha1", "Widget");
    let old: Api<DynamicObject> = Api::namespaced_with(
        c.client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let w = old.get("w1").await.unwrap();
    assert_eq!(w.types.unwrap().api_version, "example.com/v1alpha1");
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let c = local_cluster(false);
    install_widgets(&c.client).await;
    let api = widgets(&c.client, "default");
    let rv = c.cp.resource_version();
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let w = api
        .create(&pp, &widget("dry", json!({"size": 1})))
        .await
        .unwrap();
    assert_eq!(w.metadata.name.as_deref(), Some("dry"));
    assert!(api.get_opt("dry").await.unwrap().is_none());
    let ssa = PatchParams::apply("tester").dry_run();
    api.patch(
        "dry2",
        &ssa,
        &Patch::Apply(widget("dry2", json!({"size": 2}))),
    )
    .await
    .unwrap();
    assert!(api.get_opt("dry2").await.unwrap().is_none());
    api.create(&PostParams::default(), &widget("real", json!({"size": 1})))
        .await
        .unwrap();
    let dp = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    api.delete("real", &dp).await.unwrap();
    assert!(api.get_opt("real").await.unwrap().is_some());
    assert_eq!(
        c.cp.resource_version(),
        rv + 1,
        "only the real create was written"
    );
}

#[tokio::test]
async fn server_side_apply_tracks_managers_conflicts_and_removals() {
    let c = local_cluster(false);
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let cm = |data: Value| -> ConfigMap {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})).unwrap()
    };
    api.patch(
        "cfg",
        &PatchParams::apply("alpha"),
        &Patch::Apply(cm(json!({"a": "1", "b": "2"}))),
    )
    .await
    .unwrap();
    // Another manager setting a field alpha owns to a different value conflicts...
    let err = api
        .patch(
            "cfg",
            &PatchParams::apply("beta"),
            &Patch::Apply(cm(json!({"a": "9"}))),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 409);
    assert!(
        err.to_string().contains("alpha"),
        "conflict names the other manager: {err}"
    );
    // ...the same value is shared ownership...
    api.patch(
        "cfg",
        &PatchParams::apply("beta"),
        &Patch::Apply(cm(json!({"b": "2"}))),
    )
    .await
    .unwrap();
    // ...and force takes it over.
    let forced = api
        .patch(
            "cfg",
            &PatchParams::apply("beta").force(),
            &Patch::Apply(cm(json!({"a": "9", "b": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, vec!["alpha", "beta"]);
    // alpha stops applying b: b stays because beta owns it too; alpha applies nothing of a anymore.
    let after = api
        .patch(
            "cfg",
            &PatchParams::apply("alpha"),
            &Patch::Apply(cm(json!({"c": "3"}))),
        )
        .await
        .unwrap();
    let data = after.data.unwrap();
    assert_eq!(
        (
            data.get("a").map(String::as_str),
            data.get("b").map(String::as_str),
            data.get("c").map(String::as_str)
        ),
        (Some("9"), Some("2"), Some("3"))
    );
    // beta stops applying b: nobody owns it any more, so it is removed.
    let after = api
        .patch(
            "cfg",
            &PatchParams::apply("beta"),
            &Patch::Apply(cm(json!({"a": "9"}))),
        )
        .await
        .unwrap();
    assert!(!after.data.unwrap().contains_key("b"));
    // Re-applying the same configuration changes nothing, not even the resourceVersion.
    let again = api
        .patch(
            "cfg",
            &PatchParams::apply("beta"),
            &Patch::Apply(cm(json!({"a": "9"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        after.metadata.resource_version
    );
}

#[tokio::test]
async fn list_pages_and_selectors() {
    let c = local_cluster(false);
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    for i in 0..25 {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("cm-{i:02}"), "labels": {"parity": if i % 2 == 0 { "even" } else { "odd" }}}})).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(10);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
    }
    assert_eq!((pages, names.len()), (3, 25));
    assert_eq!(names[0], "cm-00");
    let count = |lp: ListParams| {
        let api = api.clone();
        async move { api.list(&lp).await.unwrap().items.len() }
    };
    assert_eq!(count(ListParams::default().labels("parity=even")).await, 13);
    assert_eq!(
        count(ListParams::default().labels("parity notin (even)")).await,
        12
    );
    assert_eq!(
        count(ListParams::default().fields("metadata.name=cm-07")).await,
        1
    );
    let all: Api<ConfigMap> = Api::all(c.client.clone());
    let listed = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 25);
    assert!(listed.metadata.resource_version.is_some());
}

#[tokio::test]
async fn watcher_sees_creates_updates_and_deletes() {
    let c = local_cluster(false);
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let seed: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "before"}})).unwrap();
    api.create(&PostParams::default(), &seed).await.unwrap();
    let mut events = watcher(api.clone(), watcher::Config::default().any_semantic()).boxed();
    let mut seen = Vec::new();
    // Initial listing.
    while let Some(ev) = tokio::time::timeout(T, events.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        match ev {
            watcher::Event::InitApply(cm) => {
                seen.push(format!("init:{}", cm.metadata.name.unwrap()))
            }
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(seen, vec!["init:before"]);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "live"}, "data": {"k": "v"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    api.patch(
        "live",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .unwrap();
    api.delete("live", &DeleteParams::default()).await.unwrap();
    let mut live = Vec::new();
    while live.len() < 3 {
        match tokio::time::timeout(T, events.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            watcher::Event::Apply(cm) => live.push(format!(
                "apply:{}",
                cm.data
                    .unwrap_or_default()
                    .get("k")
                    .cloned()
                    .unwrap_or_default()
            )),
            watcher::Event::Delete(cm) => {
                live.push(format!("delete:{}", cm.metadata.name.unwrap()))
            }
            _ => {}
        }
    }
    assert_eq!(live, vec!["apply:v", "apply:w", "delete:live"]);
}

#[tokio::test]
async fn watch_from_a_compacted_resource_version_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = aro_gitops::controlplane::Config::new(dir.path());
    config.preload_crds = false;
    config.event_log_capacity = 5;
    let cp = aro_gitops::controlplane::ControlPlane::open(config).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
    for i in 0..10 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("c{i}")}})).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), "1")
        .await
        .unwrap()
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
        Some(Err(kube::Error::Api(e))) => assert_eq!(e.code, 410),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    // A recent resourceVersion replays what came after it.
    let rv = (cp.resource_version() - 2).to_string();
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let mut names = Vec::new();
    while names.len() < 2 {
        if let Some(Ok(WatchEvent::Added(cm))) = stream.next().await {
            names.push(cm.metadata.name.unwrap());
        }
    }
    assert_eq!(names, vec!["c8", "c9"]);
}

#[tokio::test]
async fn the_event_log_is_bounded_by_bytes_too() {
    // Ten 2 KiB ConfigMaps against a 5 KiB budget: only the last couple of events stay, however
    // many the count would allow, so a fleet of large objects cannot fill memory with history.
    let dir = tempfile::tempdir().unwrap();
    let mut config = aro_gitops::controlplane::Config::new(dir.path());
    config.preload_crds = false;
    config.event_log_bytes = 5 * 1024;
    let cp = aro_gitops::controlplane::ControlPlane::open(config).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
    for i in 0..10 {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("c{i}")}, "data": {"blob": "x".repeat(2048)}}),
        )
        .unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let old = api
        .watch(&WatchParams::default().timeout(5), "1")
        .await
        .unwrap()
        .boxed()
        .next()
        .await;
    match old {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
        Some(Err(kube::Error::Api(e))) => assert_eq!(e.code, 410),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    let rv = (cp.resource_version() - 1).to_string();
    let mut recent = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    loop {
        if let Some(Ok(WatchEvent::Added(cm))) = recent.next().await {
            assert_eq!(cm.metadata.name.as_deref(), Some("c9"));
            break;
        }
    }
}

#[tokio::test]
async fn finalizers_hold_deletes_and_owners_cascade() {
    let c = local_cluster(false);
    install_widgets(&c.client).await;
    namespace(&c.client, "team").await;
    let api = widgets(&c.client, "team");
    let mut owner = widget("owner", json!({}));
    owner.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let owner = api.create(&PostParams::default(), &owner).await.unwrap();
    let uid = owner.metadata.uid.clone().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "team");
    for name in ["dep-1", "dep-2"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Widget", "name": "owner", "uid": uid, "controller": true}]}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    api.delete("owner", &DeleteParams::default()).await.unwrap();
    let held = api.get("owner").await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "finalizer holds the delete"
    );
    assert_eq!(
        cms.list(&ListParams::default()).await.unwrap().items.len(),
        2,
        "dependents stay while the owner exists"
    );
    api.patch(
        "owner",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("owner").await.unwrap().is_none());
    // The collector deletes the dependents after the owner, as kube-controller-manager does.
    eventually(T, "owner deletion cascades", || async {
        cms.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
            .then_some(())
    })
    .await;

    // Orphan propagation keeps dependents and drops the reference.
    let o2 = api
        .create(&PostParams::default(), &widget("o2", json!({})))
        .await
        .unwrap();
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "kept", "ownerReferences": [
        {"apiVersion": "example.com/v1", "kind": "Widget", "name": "o2", "uid": o2.metadata.uid.unwrap()}]}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    api.delete("o2", &DeleteParams::orphan()).await.unwrap();
    eventually(T, "the owner orphans its dependent, then goes", || async {
        api.get_opt("o2").await.unwrap().is_none().then_some(())
    })
    .await;
    let kept = cms.get("kept").await.unwrap();
    assert!(
        kept.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // Namespace deletion cascades and the namespace goes once empty.
    let nss: Api<Namespace> = Api::all(c.client.clone());
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    eventually(T, "namespace gone", || async {
        nss.get_opt("team").await.unwrap().is_none().then_some(())
    })
    .await;
    assert!(
        cms.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // Nothing can be created in a namespace that does not exist.
    let err = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 404);
}

#[tokio::test]
async fn socket_client_works_like_in_process() {
    let c = local_cluster(false);
    let server =
        c.cp.spawn("127.0.0.1:0".parse().unwrap(), false)
            .await
            .unwrap();
    let client = server.client().unwrap();
    let api: Api<Secret> = Api::namespaced(client, "default");
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "over-tcp"}, "data": {"k": "dg=="}}))
            .unwrap();
    api.create(&PostParams::default(), &s).await.unwrap();
    let via_memory: Api<Secret> = Api::namespaced(c.client.clone(), "default");
    assert!(via_memory.get_opt("over-tcp").await.unwrap().is_some());
    assert!(
        c.cp.spawn("0.0.0.0:0".parse().unwrap(), false)
            .await
            .is_err(),
        "non-loopback needs an explicit opt-in"
    );
}

/// Regression: a server-side apply to /status kept the old managedFields, so a field the manager
/// stopped applying inside a condition (here `severity`) was never removed.
#[tokio::test]
async fn status_applies_own_their_fields_and_drop_what_they_stop_applying() {
    let c = local_cluster(false);
    install_widgets(&c.client).await;
    let api = widgets(&c.client, "default");
    api.create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    let pp = PatchParams::apply("controller").force();
    let status = |cond: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"conditions": [cond]}});
    let first = api
        .patch_status("w", &pp, &Patch::Apply(status(json!({"type": "Ready", "status": "False", "severity": "Info", "reason": "Reconciling"}))))
        .await
        .unwrap();
    let entry = first
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .find(|m| m.manager.as_deref() == Some("controller"))
        .unwrap();
    assert_eq!(entry.subresource.as_deref(), Some("status"));
    let second = api
        .patch_status(
            "w",
            &pp,
            &Patch::Apply(status(
                json!({"type": "Ready", "status": "True", "reason": "Succeeded"}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(
        second.data["status"]["conditions"],
        json!([{"type": "Ready", "status": "True", "reason": "Succeeded"}])
    );
    assert_eq!(second.metadata.generation, Some(1));
}

#[tokio::test]
async fn cluster_scoped_kind_without_status_subresource() {
    let c = local_cluster(false);
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "regions.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "regions", "kind": "Region"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = created
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .any(|c| c.type_ == "Established" && c.status == "True");
    assert!(established, "CRDs are Established at once");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Region");
    let api: Api<DynamicObject> = Api::all_with(
        c.client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "regions"),
    );
    let r: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Region", "metadata": {"name": "eastus"}, "status": {"phase": "set-on-create"}})).unwrap();
    let r = api.create(&PostParams::default(), &r).await.unwrap();
    assert!(r.metadata.namespace.is_none());
    assert_eq!(
        r.data["status"]["phase"], "set-on-create",
        "without a status subresource, status is an ordinary field"
    );
    let err = api
        .patch_status(
            "eastus",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 404, "no /status without the subresource");
}

#[tokio::test]
async fn strategic_merge_patch_merges_service_ports_by_key() {
    let c = local_cluster(false);
    let api: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(c.client.clone(), "default");
    let svc = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}})).unwrap();
    api.create(&PostParams::default(), &svc).await.unwrap();
    let patched = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}})),
        )
        .await
        .unwrap();
    let ports = patched.spec.unwrap().ports.unwrap();
    assert_eq!(
        ports.len(),
        2,
        "the port list is merged by its key, not replaced"
    );
    assert_eq!(
        ports.iter().find(|p| p.port == 80).unwrap().target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8080))
    );
    // Custom resources do not take strategic merge patches, as upstream.
    install_widgets(&c.client).await;
    widgets(&c.client, "default")
        .create(&PostParams::default(), &widget("w", json!({})))
        .await
        .unwrap();
    let err = widgets(&c.client, "default")
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 415);
}

#[tokio::test]
async fn watches_send_bookmarks_and_end_at_their_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = aro_gitops::controlplane::Config::new(dir.path());
    config.preload_crds = false;
    config.bookmark_interval = Duration::from_millis(100);
    let cp = aro_gitops::controlplane::ControlPlane::open(config).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
    let rv = cp.resource_version().to_string();
    let started = std::time::Instant::now();
    // As upstream, bookmarks stop 2 s before the timeout: a 3 s watch gets them for 1 s.
    let wp = WatchParams {
        bookmarks: true,
        ..WatchParams::default()
    }
    .timeout(3);
    let mut stream = api.watch(&wp, &rv).await.unwrap().boxed();
    let mut bookmarks = 0;
    while let Some(ev) = tokio::time::timeout(T, stream.next())
        .await
        .expect("the stream ends by itself")
    {
        if let Ok(WatchEvent::Bookmark(b)) = ev {
            assert_eq!(b.metadata.resource_version, rv);
            bookmarks += 1;
        }
    }
    assert!(
        bookmarks >= 2,
        "bookmarks arrive on the interval ({bookmarks})"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the watch closed at its timeout"
    );
}
