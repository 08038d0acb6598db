//! A broken definition fails its unit alone: the other unit converges, and the error names the
//! object and the file (and the line, for YAML that does not parse).

use super::*;
use aro_gitops::report::UnitError;

/// Runs the fleet after `edit` (to `clusters/dev`): prod converges, dev fails. Returns dev's
/// outcome, after checking its report on the status branch carries the same errors.
async fn dev_fails_alone(f: &Fleet) -> UnitOutcome {
    let summary = f.run().await;
    assert!(summary.failed());
    assert_converged(outcome(&summary, PROD));
    let dev = outcome(&summary, DEV).clone();
    assert_eq!(report::phase(&dev), Phase::Failed, "{}", describe(&dev));
    assert!(!dev.errors.is_empty(), "{}", describe(&dev));

    let (_, yaml) = report::outcome_paths(&dev);
    let yaml = yaml.to_string_lossy().into_owned();
    let text = f
        .report(&yaml)
        .unwrap_or_else(|| panic!("dev's report {yaml} on the status branch"));
    let r = aro_gitops::yaml::from_str(&text).expect("the report is YAML");
    assert_eq!(r["unit"], DEV);
    assert_eq!(r["phase"], "Failed", "{text}");
    let messages: Vec<&str> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    for e in &dev.errors {
        assert!(messages.contains(&e.text().as_str()), "{text}");
    }
    assert!(
        f.report("reports/aro-prod/prod.yaml")
            .is_some_and(|p| p.contains("phase: Converged")),
        "prod reported as converged"
    );
    dev
}

/// The one error whose message contains `needle`.
fn error_with<'a>(dev: &'a UnitOutcome, needle: &str) -> &'a UnitError {
    let found: Vec<&UnitError> = dev
        .errors
        .iter()
        .filter(|e| e.to_string().contains(needle))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one error with {needle:?}: {}",
        describe(dev)
    );
    found[0]
}

fn assert_names(e: &UnitError, file: &str, object: Option<&str>) {
    // The error as every sink shows it: `file:line:column: Kind/namespace/name: message`.
    let shown = e.to_string();
    assert!(shown.contains(file), "{file} in {shown:?}");
    assert_eq!(e.file.as_deref(), Some(Path::new(file)), "{e:?}");
    if let Some(object) = object {
        assert!(shown.contains(object), "{object} in {shown:?}");
        assert_eq!(
            e.object.as_ref().map(ToString::to_string).as_deref(),
            Some(object),
            "{e:?}"
        );
    }
    assert!(
        !shown.contains("/checkout/"),
        "repository-relative paths only: {shown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_cycle_fails_its_unit_naming_both_members() {
    let f = Fleet::plain();
    f.write(
        "clusters/dev/cycle.yaml",
        "# Each needs the other first.\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: left\nspec:\n  peerRef:\n    kind: ConfigMap\n    name: right\n\
         ---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: right\nspec:\n  peerRef:\n    kind: ConfigMap\n    name: left\n",
    );
    f.add_resource(DEV, "cycle.yaml");
    let dev = dev_fails_alone(&f).await;
    assert_eq!(dev.errors.len(), 1, "{}", describe(&dev));
    let e = error_with(&dev, "dependency cycle");
    for member in ["ConfigMap/aro-dev/left", "ConfigMap/aro-dev/right"] {
        assert!(e.to_string().contains(member), "{member} in {e}");
    }
    assert_eq!(
        e.file.as_deref(),
        Some(Path::new("clusters/dev/cycle.yaml"))
    );
    // Nothing of dev was applied.
    let namespace = ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: "Namespace".into(),
        namespace: None,
        name: "aro-dev".into(),
    };
    let dev_ns = f
        .inspect(|cluster| async move { cluster.get(&namespace).await.expect("get") })
        .await;
    assert!(dev_ns.is_none(), "{dev_ns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_yaml_fails_its_unit_naming_the_file_and_line() {
    let f = Fleet::plain();
    f.write(
        "clusters/dev/broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  a: b\n c: d\n",
    );
    f.add_resource(DEV, "broken.yaml");
    let dev = dev_fails_alone(&f).await;
    let e = error_with(&dev, "clusters/dev/broken.yaml");
    assert_names(e, "clusters/dev/broken.yaml", None);
    assert_eq!(e.line, Some(7), "{e:?}");
    assert!(dev.objects.is_empty(), "{}", describe(&dev));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kind_fails_its_unit_naming_the_object_and_file() {
    let f = Fleet::plain();
    f.write(
        "clusters/dev/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: gadget\nspec:\n  size: 3\n",
    );
    f.add_resource(DEV, "widget.yaml");
    let dev = dev_fails_alone(&f).await;
    let e = error_with(&dev, "Widget/aro-dev/gadget");
    assert_names(e, "clusters/dev/widget.yaml", Some("Widget/aro-dev/gadget"));
    let widget = dev
        .objects
        .iter()
        .find(|o| o.key.kind == "Widget")
        .expect("the widget's outcome");
    assert_eq!(widget.action, ObjectAction::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_object_fails_its_unit_naming_both_origins() {
    let f = Fleet::plain();
    let cluster = std::fs::read_to_string(f.repo.join("base/cluster/cluster.yaml")).unwrap();
    f.write("clusters/dev/cluster-again.yaml", &cluster);
    f.add_resource(DEV, "cluster-again.yaml");
    let dev = dev_fails_alone(&f).await;
    // Caught while rendering, before the kustomization's namespace and parameters apply: the object
    // is named as written.
    // The copy is listed first, so the second definition met is the base's.
    let e = error_with(&dev, "clusters/dev/cluster-again.yaml");
    assert_names(e, "base/cluster/cluster.yaml", None);
    assert!(e.to_string().contains("Cluster/example"), "{e}");
    assert!(
        e.to_string().contains("clusters/dev/cluster-again.yaml"),
        "the first definition is named too: {e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_embedded_resource_fails_its_unit_naming_both_owners() {
    let f = Fleet::plain();
    // The infra pool's embedded node pool takes the workers pool's name, in dev's overlay only.
    f.add_patch(
        DEV,
        "AROMachinePool",
        "dev-infra",
        "- op: replace\n  path: /spec/resources/0/metadata/name\n  value: aro-dev-workers",
    );
    let dev = dev_fails_alone(&f).await;
    let pool = "HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers";
    let e = error_with(&dev, pool);
    assert_names(e, "base/cluster/machinepools.yaml", Some(pool));
    for owner in [
        "AROMachinePool/aro-dev/dev-workers",
        "AROMachinePool/aro-dev/dev-infra",
    ] {
        assert!(e.to_string().contains(owner), "{owner} in {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_violation_fails_its_unit_naming_the_object_and_file() {
    let f = Fleet::plain();
    // dev's overlay drops the HcpOpenShiftCluster (the first embedded resource) from its control plane.
    let file = "base/cluster/arocontrolplane.yaml";
    let base =
        aro_gitops::yaml::from_str(&std::fs::read_to_string(f.repo.join(file)).unwrap()).unwrap();
    assert_eq!(base["spec"]["resources"][0]["kind"], "HcpOpenShiftCluster");
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: remove\n  path: /spec/resources/0",
    );
    let dev = dev_fails_alone(&f).await;
    let e = error_with(&dev, "AROControlPlane/aro-dev/dev");
    assert_names(e, file, Some("AROControlPlane/aro-dev/dev"));
    assert!(
        e.message.contains("/spec/resources"),
        "the field is named: {e}"
    );
}
