//! A unit is validated whole before its first write: what kube-apiserver would refuse of any of
//! its objects fails the unit with nothing of it applied, the other units go on; the local control
//! plane refuses malformed built-in objects as kube-apiserver does. See `tests/safety.rs`.
#[allow(unused_imports)]
use super::*;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::json;
use std::time::{Duration, Instant};

/// `run --once` on the embedded control plane, without provisioning delay.
fn run(fleet: &Fleet, timeout: &str) -> Output {
    fleet.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", timeout])
}

/// Adds `file` with `content` to `clusters/dev` (a resource of the unit).
fn add_to_dev(fleet: &Fleet, file: &str, content: &str) {
    fleet.write(&format!("{DEV}/{file}"), content);
    fleet.add_resource(DEV, file);
}

/// `namespace/name` of every live `api_version` `kind` (the kind must be served).
fn all_live(fleet: &Fleet, api_version: &str, kind: &str) -> Vec<String> {
    let resource = common::fleet::api_resource(api_version, kind);
    fleet.with_client(async move |client| {
        let api: Api<DynamicObject> = Api::all_with(client, &resource);
        api.list(&Default::default())
            .await
            .expect("a list of a served kind")
            .items
            .into_iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o.metadata.namespace.unwrap_or_default(),
                    o.metadata.name.unwrap_or_default()
                )
            })
            .collect()
    })
}

/// Nothing of `clusters/dev` is live: neither its Namespace nor its CAPI Cluster, nor its
/// inventory's objects; `clusters/prod` converged.
fn assert_dev_untouched_prod_converged(fleet: &Fleet, out: &Output) {
    assert!(
        fleet.get("v1", "Namespace", None, "aro-dev").is_none(),
        "Namespace/aro-dev was applied:\n{}",
        out.all()
    );
    assert_eq!(
        all_live(fleet, "cluster.x-k8s.io/v1beta2", "Cluster"),
        ["aro-prod/prod"],
        "dev's Cluster was applied:\n{}",
        out.all()
    );
    let dev_config: Vec<String> = all_live(fleet, "v1", "ConfigMap")
        .into_iter()
        .filter(|n| n.starts_with("aro-dev/"))
        .collect();
    assert!(
        dev_config.is_empty(),
        "applied: {dev_config:?}\n{}",
        out.all()
    );
    assert!(
        fleet.get("v1", "Namespace", None, "aro-prod").is_some(),
        "prod did not go on:\n{}",
        out.all()
    );
    assert!(
        out.all().contains("clusters/prod: Converged"),
        "prod did not converge:\n{}",
        out.all()
    );
}

/// Every report of `clusters/dev` on the status branch, concatenated.
fn dev_reports(fleet: &Fleet) -> String {
    const STATUS_BRANCH: &str = "aro-gitops/status";
    let files = git::git(
        &fleet.repo,
        &["ls-tree", "-r", "--name-only", STATUS_BRANCH],
    );
    files
        .lines()
        .filter(|f| f.contains("dev") && !f.contains("prod"))
        .filter_map(|f| git::show(&fleet.repo, STATUS_BRANCH, f))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The run failed for `clusters/dev`, naming `file` and `object` and saying `what`, on one line
/// of its output or in one error of its report on the status branch (object, file, message). A
/// message about a Secret may be withheld whole by the report, never shown with its value.
fn assert_dev_failed(fleet: &Fleet, out: &Output, file: &str, object: &str, what: &str) {
    assert_ne!(out.code, 0, "{}", out.all());
    let all = format!(
        "{}\n--- reports of clusters/dev\n{}",
        out.all(),
        dev_reports(fleet)
    );
    assert!(all.contains("clusters/dev: Failed"), "{all}");
    let lines: Vec<&str> = all.lines().collect();
    let says = |text: &str| {
        text.contains(what) || (object.starts_with("Secret/") && text.contains("withheld"))
    };
    let found = (0..lines.len()).any(|i| {
        let block = lines[i..(i + 3).min(lines.len())].join(" ");
        lines[i].contains(object) && block.contains(file) && says(&block)
    });
    assert!(
        found,
        "no error names {object} in {file} with {what:?}:\n{all}"
    );
    assert!(!all.contains("hunter2"), "a secret value is shown:\n{all}");
    assert!(!all.contains("Status {"), "a raw Status dump:\n{all}");
}

const BAD_SECRET: &str = "apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password:
    nested: hunter2
";

const BAD_CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color:
    nested: blue
";

#[test]
fn case_05_malformed_builtin_objects_are_refused_by_the_agent_and_the_control_plane() {
    for (file, content, object, field) in [
        (
            "secret.yaml",
            BAD_SECRET,
            "Secret/aro-dev/db",
            "stringData[password]",
        ),
        (
            "settings.yaml",
            BAD_CONFIG_MAP,
            "ConfigMap/aro-dev/settings",
            "data[color]",
        ),
    ] {
        let (fleet, _) = Fleet::git();
        add_to_dev(&fleet, file, content);
        fleet.commit("a malformed built-in object");
        let out = run(&fleet, "300s");
        assert_dev_failed(&fleet, &out, &format!("{DEV}/{file}"), object, field);
        assert_dev_untouched_prod_converged(&fleet, &out);
    }

    // Straight to the control plane: refused before anything is stored, naming the Go field (or
    // where base64 stops) as kube-apiserver's decoder does, never a value. (kube-apiserver answers
    // these applies 500 with the value quoted; the control plane answers its decoder's 400.)
    let (fleet, _) = Fleet::git();
    let refusals = fleet.with_client(async |client| {
        let mut refusals = Vec::new();
        for (kind, plural, body) in [
            (
                "Secret",
                "secrets",
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                "stringData": {"password": {"nested": "hunter2"}}}),
            ),
            (
                "ConfigMap",
                "configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                "data": {"color": {"nested": "blue"}}}),
            ),
            (
                "Secret",
                "secrets",
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "raw"},
                "data": {"password": "hunter2!"}}),
            ),
            (
                "ConfigMap",
                "configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "labelled", "labels": {"version": 1}}}),
            ),
        ] {
            let resource = ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: kind.into(),
                plural: plural.into(),
            };
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), "default", &resource);
            let name = body["metadata"]["name"].as_str().unwrap().to_string();
            let applied = api
                .patch(
                    &name,
                    &PatchParams::apply("test").force(),
                    &Patch::Apply(&body),
                )
                .await;
            let stored = api.get_opt(&name).await.expect("a read");
            refusals.push((kind, applied.map(|_| ()), stored.is_some()));
        }
        refusals
    });
    for ((kind, applied, stored), field) in refusals.into_iter().zip([
        "Go struct field Secret.stringData",
        "Go struct field ConfigMap.data",
        "illegal base64 data at input byte 7",
        "Go struct field ObjectMeta.metadata.labels",
    ]) {
        let Err(kube::Error::Api(status)) = applied else {
            panic!("{kind} with malformed {field} was accepted: {applied:?}");
        };
        assert_eq!(
            (status.code, status.reason.as_str()),
            (400, "BadRequest"),
            "{status:?}"
        );
        assert!(status.message.contains(field), "{kind}: {}", status.message);
        assert!(!status.message.contains("hunter2"), "{}", status.message);
        assert!(!stored, "{kind} was stored");
    }
}

#[test]
fn case_06_no_partial_applies_what_the_server_refuses_fails_the_unit_before_any_write() {
    let big = "x".repeat(1_700_000);
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "bad-name.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\ndata:\n  a: b\n".into(),
            "ConfigMap/aro-dev/Not_A_Name",
            "metadata.name: Invalid value",
        ),
        (
            "widget.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {}\n".into(),
            "Widget/aro-dev/w",
            "serves no kind Widget",
        ),
        (
            "big.yaml",
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: {big}\n"),
            "ConfigMap/aro-dev/big",
            "Too long",
        ),
        (
            "raw.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: raw\ndata:\n  password: hunter2!\n".into(),
            "Secret/aro-dev/raw",
            "data[password]: Invalid value: not valid base64",
        ),
        // Only the server judges this one (a CRD named other than plural.group): the dry run.
        (
            "crd.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\n\
             spec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n\
             \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
                .into(),
            "CustomResourceDefinition/gadgets.example.com",
            "metadata.name: Invalid value",
        ),
    ];
    for (file, content, object, what) in cases {
        let (fleet, _) = Fleet::git();
        add_to_dev(&fleet, file, &content);
        fleet.commit(file);
        let out = run(&fleet, "300s");
        assert_dev_failed(&fleet, &out, &format!("{DEV}/{file}"), object, what);
        assert_dev_untouched_prod_converged(&fleet, &out);
    }
}

#[test]
fn case_08_unit_without_namespace_fails_fast_naming_the_objects() {
    let (fleet, _) = Fleet::git();
    fleet.replace(
        &format!("{DEV}/kustomization.yaml"),
        "\nnamespace: aro-dev\n",
        "\n",
    );
    fleet.commit("no namespace");
    let started = Instant::now();
    let out = run(&fleet, "300s");
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(30),
        "the run waited {took:?}:\n{}",
        out.all()
    );
    assert_dev_failed(
        &fleet,
        &out,
        "base/cluster",
        "Cluster/",
        "metadata.namespace: Required value",
    );
    assert_eq!(
        all_live(&fleet, "cluster.x-k8s.io/v1beta2", "Cluster"),
        ["aro-prod/prod"],
        "dev's Cluster was applied somewhere:\n{}",
        out.all()
    );
    assert!(
        out.all().contains("clusters/prod: Converged"),
        "{}",
        out.all()
    );
}

#[test]
fn case_06_no_partial_applies_a_refused_revision_of_a_converged_unit_changes_nothing() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    add_to_dev(
        &fleet,
        "fine.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\ndata:\n  a: b\n",
    );
    add_to_dev(
        &fleet,
        "widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    fleet.commit("a new object and one of a kind nobody serves");
    let out = run(&fleet, "300s");
    assert_dev_failed(
        &fleet,
        &out,
        &format!("{DEV}/widget.yaml"),
        "Widget/aro-dev/w",
        "serves no kind Widget",
    );
    assert!(
        fleet
            .get("v1", "ConfigMap", Some("aro-dev"), "fine")
            .is_none(),
        "part of the refused revision was applied:\n{}",
        out.all()
    );
    assert!(
        fleet
            .get(
                "cluster.x-k8s.io/v1beta2",
                "Cluster",
                Some("aro-dev"),
                "dev"
            )
            .is_some(),
        "the converged cluster was touched:\n{}",
        out.all()
    );
}
