//! Fuzzes the renderer through its kustomization file: each input is written as the `kustomization.yaml`
//! of a small fixed tree (resources, patches, generator inputs, a base and a component to point at) and
//! rendered with `aro_gitops::render::render`.
//!
//! Besides "never panics, never hangs", a successful render must be deterministic (a second render gives
//! the same objects) and must survive the printer: `yaml::to_multi_string` read back by
//! `yaml::from_multi_str` gives the same values (what `aro-gitops render` prints is what was rendered).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FILES: &[(&str, &str)] = &[
    (
        "deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  \
         replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    \
         spec:\n      containers:\n      - name: app\n        image: nginx:1.25\n        envFrom:\n        - configMapRef: {name: cfg}\n      \
         volumes:\n      - name: v\n        secret: {secretName: sec}\n",
    ),
    (
        "service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n",
    ),
    (
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: ns\ndata:\n  k: v\n",
    ),
    (
        "smp.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  template:\n    spec:\n      \
         containers:\n      - name: app\n        image: nginx:1.27\n",
    ),
    (
        "ops.yaml",
        "- op: add\n  path: /metadata/labels/x\n  value: y\n- op: replace\n  path: /spec/replicas\n  value: 2\n",
    ),
    ("app.properties", "a=1\nb=two\n"),
    ("settings.env", "# comment\nX=1\nY=\n"),
    (
        "base/kustomization.yaml",
        "resources: [r.yaml]\nnamePrefix: base-\n",
    ),
    (
        "base/r.yaml",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n",
    ),
    (
        "component/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {env: x}\n",
    ),
];

fn tree() -> &'static PathBuf {
    static TREE: OnceLock<PathBuf> = OnceLock::new();
    TREE.get_or_init(|| {
        // Kept for the whole process (libFuzzer exits without running destructors).
        let dir = tempfile::tempdir().expect("tempdir").keep();
        for (rel, text) in FILES {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let root = tree();
    std::fs::write(root.join("kustomization.yaml"), data).unwrap();
    let Ok(objects) = aro_gitops::render::render(root, Path::new(".")) else {
        return;
    };
    let values: Vec<serde_json::Value> = objects.into_iter().map(|o| o.object).collect();
    let again: Vec<serde_json::Value> = aro_gitops::render::render(root, Path::new("."))
        .expect("a second render of the same tree fails")
        .into_iter()
        .map(|o| o.object)
        .collect();
    assert_eq!(values, again, "render is not deterministic");
    let printed = aro_gitops::yaml::to_multi_string(&values);
    let read_back =
        aro_gitops::yaml::from_multi_str(&printed).expect("printed YAML does not parse");
    assert_eq!(
        values, read_back,
        "printed YAML reads back differently:\n{printed}"
    );
});
