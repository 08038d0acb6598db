//! See `tests/safety.rs`.
use super::*;

/// A Secret whose values are written with `stringData` (the server folds them into `data`).
const SECRET: &str = "apiVersion: v1
kind: Secret
metadata:
  name: app-credentials
type: Opaque
stringData:
  password: s3cr3t-Value-42
  username: admin-user
";

/// The values that must never be printed, and their base64 spelling as the server stores them.
const SECRET_VALUES: [&str; 4] = [
    "s3cr3t-Value-42",
    "admin-user",
    "czNjcjN0LVZhbHVlLTQy",
    "YWRtaW4tdXNlcg==",
];

const STATUS_BRANCH: &str = "aro-gitops/status";

/// `run --once` with more arguments; it must converge.
fn run_once(fleet: &Fleet, more: &[&str]) -> Output {
    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "300s"];
    args.extend_from_slice(more);
    let out = fleet.aro_gitops(&args);
    assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());
    out
}

/// The `(reads, writes)` of the run's "requests to the cluster: N reads, M writes" line.
fn requests(out: &Output) -> (u64, u64) {
    let line = out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .find_map(|l| l.strip_prefix("requests to the cluster: "))
        .unwrap_or_else(|| panic!("no request count:\n{}", out.all()));
    let n: Vec<u64> = line
        .split(", ")
        .map(|p| {
            p.split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("a count in {line:?}"))
        })
        .collect();
    (n[0], n[1])
}

/// Every file of the status branch, as `(path, text)`.
fn status_files(fleet: &Fleet) -> Vec<(String, String)> {
    git::git(
        &fleet.repo,
        &["ls-tree", "-r", "--name-only", STATUS_BRANCH],
    )
    .lines()
    .map(|p| {
        let text = git::show(&fleet.repo, STATUS_BRANCH, p).expect("a file of the branch");
        (p.to_string(), text)
    })
    .collect()
}

fn assert_no_secret_value(what: &str, text: &str) {
    for v in SECRET_VALUES {
        assert!(!text.contains(v), "{what} shows a secret value:\n{text}");
    }
}

#[test]
fn case_10_secret_with_string_data_is_not_drifted_and_self_heal_writes_nothing() {
    let (fleet, _) = Fleet::git();
    fleet.write(&format!("{DEV}/secret.yaml"), SECRET);
    fleet.add_resource(DEV, "secret.yaml");
    fleet.commit("a secret written with stringData");
    let first = run_once(&fleet, &["--log", "debug"]);
    assert_no_secret_value("the first run", &first.all());

    // Nothing changed: no drift, in the run without self-heal ...
    let again = run_once(&fleet, &["--log", "debug"]);
    assert_no_secret_value("the second run", &again.all());
    assert!(
        !again.all().to_lowercase().contains("drift: live differs"),
        "an unchanged Secret shows as drifted:\n{}",
        again.all()
    );
    assert_eq!(requests(&again).1, 0, "{}", again.all());
    // ... and with it, which writes nothing.
    let healed = run_once(&fleet, &["--self-heal", "--log", "debug"]);
    assert_no_secret_value("the self-healing run", &healed.all());
    assert_eq!(
        requests(&healed).1,
        0,
        "self-heal wrote to an unchanged cluster:\n{}",
        healed.all()
    );
    assert!(
        !healed.all().to_lowercase().contains("drifted=true"),
        "{}",
        healed.all()
    );

    // The report on the status branch shows no drift and no value.
    let files = status_files(&fleet);
    let report = files
        .iter()
        .find(|(p, _)| p == "reports/aro-dev/dev.md")
        .unwrap_or_else(|| panic!("no report of dev in {:?}", files.iter().map(|f| &f.0)));
    assert!(
        report.1.contains("Secret/aro-dev/app-credentials") || report.1.contains("app-credentials"),
        "the report lists the Secret:\n{}",
        report.1
    );
    for (path, text) in &files {
        assert!(
            !text.to_lowercase().contains("drifted"),
            "{path} shows drift:\n{text}"
        );
        assert_no_secret_value(path, text);
    }

    // `aro-gitops drift` and `plan` agree: nothing drifted, nothing to change for the Secret.
    let drift = fleet.aro_gitops(&["drift"]);
    assert_eq!(drift.code, 0, "drift found something:\n{}", drift.all());
    assert_no_secret_value("drift", &drift.all());
    let plan = fleet.plan(&["-o", "json"]);
    assert_no_secret_value("plan", &plan.all());
    let preview = plan.json();
    let secret_changes: Vec<&serde_json::Value> = preview["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .flat_map(|c| c["changes"].as_array().into_iter().flatten())
        .filter(|c| c.to_string().contains("app-credentials"))
        .collect();
    assert!(
        secret_changes.is_empty(),
        "plan changes an unchanged Secret: {secret_changes:?}"
    );
}

// ---- case 9: empty renders, and plan and run agreeing on deletions ----

use aro_gitops::apply::inventory;
use aro_gitops::apply::{Cluster, RequestCounter};
use aro_gitops::object::ObjectKey;
use std::collections::BTreeSet;

/// The words of an empty render's failure.
const EMPTY_RENDER: &str = "refusing to prune: the unit rendered no objects";

/// A kustomization that renders nothing.
const EMPTY_KUSTOMIZATION: &str = "apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: []
";

fn shown(key: &ObjectKey) -> String {
    match &key.namespace {
        Some(ns) => format!("{}/{ns}/{}", key.kind, key.name),
        None => format!("{}/{}", key.kind, key.name),
    }
}

/// What `unit`'s inventory holds.
fn inventory_keys(fleet: &Fleet, unit: &str) -> Vec<ObjectKey> {
    let unit = unit.to_string();
    let scope = fleet.scope();
    fleet.with_client(async move |c| {
        let cluster = Cluster::new(c, RequestCounter::default());
        let (all, broken, _) =
            (inventory::read_all(&cluster, &scope, |_| true).await).expect("inventories");
        assert!(broken.is_empty(), "{broken:?}");
        all.get(&unit)
            .map(|i| i.entries.values().map(|e| e.key()).collect())
            .unwrap_or_default()
    })
}

/// Which of `keys` are live, as `Kind/namespace/name`.
fn live(fleet: &Fleet, keys: &[ObjectKey]) -> BTreeSet<String> {
    let keys = keys.to_vec();
    fleet.with_client(async move |c| {
        let cluster = Cluster::new(c, RequestCounter::default());
        let mut out = BTreeSet::new();
        for k in &keys {
            if cluster.get(k).await.expect("get").is_some() {
                out.insert(shown(k));
            }
        }
        out
    })
}

/// The deletions a JSON plan lists for `unit`, as `Kind/namespace/name`.
fn planned_deletions(preview: &serde_json::Value, unit: &str) -> BTreeSet<String> {
    let cluster = preview["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .find(|c| c["unit"] == unit)
        .unwrap_or_else(|| panic!("no {unit} in the plan: {preview:#}"));
    cluster["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["action"] == "delete")
        .map(|c| {
            let o = &c["object"];
            match o["namespace"].as_str() {
                Some(ns) => format!(
                    "{}/{ns}/{}",
                    o["kind"].as_str().unwrap(),
                    o["name"].as_str().unwrap()
                ),
                None => format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["name"].as_str().unwrap()
                ),
            }
        })
        .collect()
}

/// `run --once` without provisioning delay (it may fail).
fn run(fleet: &Fleet, more: &[&str]) -> Output {
    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "300s"];
    args.extend_from_slice(more);
    fleet.aro_gitops(&args)
}

/// The fleet converged, then `clusters/dev` emptied (committed); returns what dev's inventory
/// held, and the commits before and after.
fn converged_then_dev_emptied() -> (Fleet, Vec<ObjectKey>, String, String) {
    let (fleet, base) = Fleet::git();
    fleet.run_binary_once();
    let recorded = inventory_keys(&fleet, DEV);
    assert!(recorded.len() >= 28, "{recorded:?}");
    fleet.write(&format!("{DEV}/kustomization.yaml"), EMPTY_KUSTOMIZATION);
    let head = fleet.commit("dev renders nothing");
    (fleet, recorded, base, head)
}

#[test]
fn case_09_empty_render_fails_in_plan_and_run_and_deletes_nothing() {
    let (fleet, recorded, base, head) = converged_then_dev_emptied();
    let all: BTreeSet<String> = recorded.iter().map(shown).collect();

    // A pull request's preview (against the base revision) says so too.
    let preview = fleet.plan_revs(&base, &head, &["--allow-deletion"]);
    assert_eq!(preview.code, 1, "{}", preview.all());
    assert!(preview.all().contains(EMPTY_RENDER), "{}", preview.all());

    let plan = fleet.plan(&["--allow-deletion"]);
    assert_eq!(plan.code, 1, "{}", plan.all());
    assert!(plan.all().contains(EMPTY_RENDER), "{}", plan.all());
    let preview = fleet.plan(&["--allow-deletion", "-o", "json"]).json();
    assert!(planned_deletions(&preview, DEV).is_empty(), "{preview:#}");

    let out = run(&fleet, &["--allow-deletion"]);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(out.all().contains(EMPTY_RENDER), "{}", out.all());
    assert_eq!(live(&fleet, &recorded), all, "the run deleted objects");
    assert_eq!(inventory_keys(&fleet, DEV).len(), recorded.len());
    // The report says so too.
    let reports = git::git(
        &fleet.repo,
        &["grep", "-l", EMPTY_RENDER, STATUS_BRANCH, "--", "reports"],
    );
    assert!(!reports.is_empty(), "no report shows the refusal");
}

#[test]
fn case_09_empty_render_with_consent_plan_deletions_equal_run_deletions() {
    let (fleet, recorded, _, _) = converged_then_dev_emptied();
    let all: BTreeSet<String> = recorded.iter().map(shown).collect();

    // The flag, or the unit's own consent on its inventory: the same plan.
    let (code, by_flag) = {
        let out = fleet.plan(&["--allow-deletion", "--allow-empty-render", "-o", "json"]);
        (out.code, out.json())
    };
    assert_eq!(code, 2, "{by_flag:#}");
    let planned = planned_deletions(&by_flag, DEV);
    assert_eq!(planned, all, "the plan deletes what dev has");
    let name = fleet.inventory_name(DEV);
    fleet.with_client(async move |c| {
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            c,
            aro_gitops::marks::AGENT_NAMESPACE,
            &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
        );
        let patch = serde_json::json!({"metadata": {"annotations": {
            "aro-gitops.dev/allow-empty-render": "true"}}});
        api.patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("annotate the inventory");
    });
    let by_annotation = fleet.plan(&["--allow-deletion", "-o", "json"]).json();
    assert_eq!(planned_deletions(&by_annotation, DEV), planned);

    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let deleted: BTreeSet<String> = all.difference(&live(&fleet, &recorded)).cloned().collect();
    assert_eq!(deleted, planned, "run deleted what plan said");
    assert!(!out.all().contains(EMPTY_RENDER), "{}", out.all());
    // prod is untouched.
    let prod = inventory_keys(&fleet, PROD);
    assert_eq!(live(&fleet, &prod).len(), prod.len());
}

#[test]
fn case_09_a_removed_node_pool_plan_deletions_equal_run_deletions() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    let recorded = inventory_keys(&fleet, DEV);
    let before: BTreeSet<String> = recorded.iter().map(shown).collect();
    fleet.add_patches(
        DEV,
        "  - patch: |-\n      $patch: delete\n      apiVersion: cluster.x-k8s.io/v1beta2\n      kind: MachinePool\n      metadata:\n        name: dev-infra\n  - patch: |-\n      $patch: delete\n      apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\n      kind: AROMachinePool\n      metadata:\n        name: dev-infra\n",
    );
    fleet.commit("dev without its infra pool");

    let (code, preview) = {
        let out = fleet.plan(&["--allow-deletion", "-o", "json"]);
        (out.code, out.json())
    };
    assert_eq!(code, 2, "{preview:#}");
    let planned = planned_deletions(&preview, DEV);
    assert!(
        planned.contains("AROMachinePool/aro-dev/dev-infra")
            && planned.contains("MachinePool/aro-dev/dev-infra"),
        "{planned:?}"
    );

    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let deleted: BTreeSet<String> = before
        .difference(&live(&fleet, &recorded))
        .cloned()
        .collect();
    assert_eq!(deleted, planned, "run deleted what plan said");
}
