//! Plans against live state: the embedded control plane in `STATE/control-plane`, after a real
//! `aro-gitops run --once` applied the fleet (a plain folder). Live objects carry what the server and
//! the reconcilers add (uid, resourceVersion, managedFields, ownerReferences, status); none of it
//! may show in a plan.

use super::*;
use aro_gitops::controlplane::{Config, ControlPlane};
use std::time::{Duration, Instant};

/// How long to wait for the control plane's store to be free again.
const STORE_DEADLINE: Duration = Duration::from_secs(10);

fn store_config(f: &Fleet) -> Config {
    let mut config = Config::new(f.state.join("control-plane"));
    config.preload_crds = false;
    config
}

/// Opens the store of `f`'s control plane, polling until nothing else holds it.
fn open_store(f: &Fleet) -> ControlPlane {
    let deadline = Instant::now() + STORE_DEADLINE;
    loop {
        match ControlPlane::open(store_config(f)) {
            Ok(cp) => return cp,
            Err(e) => assert!(
                Instant::now() < deadline,
                "the control plane store was not released within {STORE_DEADLINE:?}: {e}"
            ),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Server-side applies `obj` (a ConfigMap) under the field manager `kubectl`, as
/// `kubectl apply --server-side` would, then releases the store.
pub fn apply_as_kubectl(f: &Fleet, obj: &Value) {
    let ns = obj["metadata"]["namespace"].as_str().expect("namespace");
    let name = obj["metadata"]["name"].as_str().expect("name");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let cp = open_store(f);
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cp.client(), ns);
        api.patch(
            name,
            &kube::api::PatchParams::apply("kubectl"),
            &kube::api::Patch::Apply(obj),
        )
        .await
        .expect("apply as kubectl");
        drop(api);
        drop(cp);
    });
    // Dropping the runtime ends the client's workers; then the store must open (and close) again.
    drop(rt);
    drop(open_store(f));
}

/// The ConfigMap both in git and created live beforehand by someone else.
pub fn contacts() -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "fleet-contacts", "namespace": "aro-dev"},
        "data": {"owner": "platform-team", "pager": "platform-oncall"}
    })
}

pub const CONTACTS_YAML: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: fleet-contacts
data:
  owner: platform-team
  pager: platform-oncall
";

#[test]
fn a_plan_right_after_a_run_shows_nothing() {
    let f = Fleet::plain();
    f.run_binary_once();

    let text = f.plan(&[]);
    text.expect_code(0);
    assert!(
        text.stdout
            .contains("No changes in 2 clusters: clusters/dev, clusters/prod"),
        "{}",
        text.all()
    );
    assert!(
        text.stdout
            .trim_end()
            .ends_with("No changes. Live state matches the desired state."),
        "{}",
        text.all()
    );

    let out = f.plan(&["-o", "json"]);
    out.expect_code(0);
    let plan = out.json();
    assert_eq!(plan["against"], "live");
    assert!(plan.get("base").is_none(), "{plan:#}");
    assert!(plan.get("errors").is_none(), "{plan:#}");
    for unit in [DEV, PROD] {
        let c = cluster(&plan, unit);
        assert!(changes(c).is_empty(), "{c:#}");
        for field in ["blockedDeletions", "adopted", "policyEffects", "errors"] {
            assert!(entries(c, field).is_empty(), "{field}: {c:#}");
        }
        for what in ["create", "update", "delete", "blocked", "adopted"] {
            assert_eq!(count(c, what), 0, "{what}: {c:#}");
        }
        // Every object of the cluster, the embedded Azure resources and the ASO credential Secret
        // included, compares equal.
        assert_eq!(count(c, "unchanged"), 49, "{c:#}");
    }
}

#[test]
fn an_object_created_by_someone_else_is_adopted() {
    let f = Fleet::plain();
    f.run_binary_once();
    apply_as_kubectl(&f, &contacts());
    f.write("clusters/dev/contacts.yaml", CONTACTS_YAML);
    f.add_resource(DEV, "contacts.yaml");

    // Git says what is live: adopted, and nothing to write but the unit's ownership mark.
    let out = f.plan(&["-o", "json"]);
    out.expect_code(2);
    let plan = out.json();
    let dev = cluster(&plan, DEV);
    assert_eq!(
        names_in(dev, "adopted"),
        vec!["ConfigMap/fleet-contacts".to_string()]
    );
    assert_eq!(count(dev, "adopted"), 1);
    assert_eq!(entries(dev, "adopted")[0]["object"]["namespace"], "aro-dev");
    let reason = entries(dev, "adopted")[0]["reason"].as_str().unwrap();
    assert!(reason.contains("not created by aro-gitops"), "{reason}");
    assert_eq!(
        changes(dev),
        pairs(&[("update", "ConfigMap/fleet-contacts")])
    );
    let diff = change(dev, "ConfigMap/fleet-contacts")["diff"]
        .as_str()
        .unwrap();
    let added: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .collect();
    let fleet = format!("+    aro-gitops.dev/fleet: {}", f.scope().name);
    assert_eq!(
        added,
        vec![
            "+  annotations:",
            "+    aro-gitops.dev/unit: clusters/dev",
            fleet.as_str(),
            "+  labels:",
            "+    aro-gitops.dev/unit-digest: a9efdf540a9eafb4",
        ],
        "{diff}"
    );
    assert_eq!(count(dev, "unchanged"), 49, "{dev:#}");
    let prod = cluster(&plan, PROD);
    assert!(
        entries(prod, "adopted").is_empty() && changes(prod).is_empty(),
        "{prod:#}"
    );
    let md = f.plan(&["-o", "markdown"]).stdout;
    assert!(md.contains("**Adopted**"), "{md}");
    assert!(md.contains("`ConfigMap/aro-dev/fleet-contacts`"), "{md}");
    assert!(md.lines().next().unwrap().contains("1 adopted"), "{md}");

    // Git differs from what is live: adopted, and the field git sets is updated.
    f.replace(
        "clusters/dev/contacts.yaml",
        "owner: platform-team",
        "owner: sre-team",
    );
    let out = f.plan(&["-o", "json"]);
    out.expect_code(2);
    let plan = out.json();
    let dev = cluster(&plan, DEV);
    assert_eq!(
        names_in(dev, "adopted"),
        vec!["ConfigMap/fleet-contacts".to_string()]
    );
    assert_eq!(
        changes(dev),
        pairs(&[("update", "ConfigMap/fleet-contacts")])
    );
    let diff = change(dev, "ConfigMap/fleet-contacts")["diff"]
        .as_str()
        .unwrap();
    assert!(
        diff.contains("\n-  owner: platform-team\n+  owner: sre-team\n"),
        "{diff}"
    );
    assert!(
        diff.starts_with("--- live/ConfigMap/aro-dev/fleet-contacts"),
        "{diff}"
    );
    // Server-set fields and the other manager's metadata never show.
    for hidden in [
        "uid",
        "resourceVersion",
        "managedFields",
        "creationTimestamp",
    ] {
        assert!(!diff.contains(hidden), "{hidden} in\n{diff}");
    }
}

#[test]
fn a_large_plan_as_markdown_stays_under_the_comment_limit() {
    let f = Fleet::plain();
    f.run_binary_once();
    // 300 new ConfigMaps with a kilobyte each: the whole comment would be well over 300 KB.
    let filler = "x".repeat(1_000);
    let docs: Vec<String> = (0..300)
        .map(|i| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-{i:03}\ndata:\n  blob: {filler}\n")
        })
        .collect();
    f.write("clusters/dev/settings.yaml", &docs.join("---\n"));
    f.add_resource(DEV, "settings.yaml");
    resize_prod_workers(&f);

    let out = f.plan(&["-o", "markdown"]);
    out.expect_code(2);
    let md = &out.stdout;
    assert!(
        md.chars().count() <= 65_000,
        "{} characters",
        md.chars().count()
    );
    assert!(
        md.len() > 30_000,
        "the comment uses its room: {} bytes",
        md.len()
    );
    let first_line = md.lines().next().unwrap_or_default();
    assert!(
        first_line
            .starts_with("**aro-gitops plan**: 2 clusters change (300 to create, 2 to update"),
        "{first_line}"
    );
    assert_eq!(
        md.matches("<details").count(),
        md.matches("</details>").count(),
        "unbalanced sections"
    );
    let fences = md.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "unbalanced fences");
    // What was left out is said, and the small change in prod keeps its diff.
    let note = md.lines().last().unwrap_or_default();
    assert!(
        note.starts_with("> Output cut at 65,000 characters: ") && note.contains("diffs omitted"),
        "no closing note: {note}"
    );
    assert!(
        md.contains("+          vmSize: Standard_E8s_v3"),
        "prod's diff was dropped"
    );
}

/// Changes the prod workers' VM size in the work tree.
fn resize_prod_workers(f: &Fleet) {
    f.replace(
        "components/prod/kustomization.yaml",
        "value: Standard_D8s_v3\n      - op: add\n        path: /spec/resources/0/spec/properties/platform/availabilityZone\n        value: \"1\"",
        "value: Standard_E8s_v3\n      - op: add\n        path: /spec/resources/0/spec/properties/platform/availabilityZone\n        value: \"1\"",
    );
}

#[test]
fn a_plan_reads_live_state_with_one_list_per_kind_and_no_object_gets() {
    let f = Fleet::plain();
    f.run_binary_once();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let run = runtime
        .block_on(aro_gitops::agent::plan(aro_gitops::agent::PlanRequest {
            repo: f.repo.display().to_string(),
            head: "HEAD".parse().expect("HEAD is a reference"),
            base: None,
            state_dir: f.state.clone(),
            kubeconfig: None,
            in_cluster: false,
            safety: aro_gitops::agent::Safety::default(),
            use_azure_simulator: false,
            fleet: Default::default(),
            verify_signatures: None,
        }))
        .expect("the plan runs");
    assert_eq!(run.preview.exit_code(), 0);
    let gets: Vec<(&String, &u64)> = run
        .requests
        .iter()
        .filter(|(path, _)| path.starts_with("GET "))
        .collect();
    // Every LIST is across namespaces, once per kind (further pages would count apart); a path
    // naming a namespace would be a per-object GET or a per-namespace LIST.
    for (path, n) in &gets {
        assert!(!path.contains("/namespaces/"), "{path} in {gets:#?}");
        if !path.ends_with("(continued)") {
            assert_eq!(**n, 1, "{path} sent {n} times: {gets:#?}");
        }
    }
    for kind in [
        "configmaps",
        "aroclusters",
        "hcpopenshiftclusters",
        "resourcegroups",
    ] {
        assert!(
            gets.iter().any(|(p, _)| p.ends_with(&format!("/{kind}"))),
            "no LIST of {kind}: {gets:#?}"
        );
    }
    let writes: Vec<_> = run
        .requests
        .keys()
        .filter(|p| !p.starts_with("GET "))
        .collect();
    assert!(writes.is_empty(), "a plan wrote: {writes:?}");
}
