//! Built-in plugin configurations under `transformers` and `generators`, and what `buildMetadata` records
//! of them.

use crate::render::render;
use crate::render::tests::tree;
use serde_json::Value;
use std::path::Path;

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n";

fn names(objects: &[crate::object::SourcedObject]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            o.object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn prefix_suffix_transformer_renames_at_its_field_specs() {
    let t = tree(&[
        ("app/dep.yaml", DEPLOYMENT),
        (
            "app/kustomization.yaml",
            "resources: [dep.yaml]\ntransformers:\n- ps.yaml\n",
        ),
        (
            "app/ps.yaml",
            "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: ps\nprefix: p-\n\
             suffix: -s\nfieldSpecs:\n- path: metadata/name\n",
        ),
    ]);
    let out = render(t.path(), Path::new("app")).unwrap();
    assert_eq!(names(&out), ["p-web-s"]);
}

#[test]
fn prefix_transformer_without_field_specs_is_refused() {
    let t = tree(&[
        ("app/dep.yaml", DEPLOYMENT),
        (
            "app/kustomization.yaml",
            "resources: [dep.yaml]\ntransformers:\n- |-\n  apiVersion: builtin\n  kind: PrefixTransformer\n  \
             metadata:\n    name: p\n  prefix: x-\n",
        ),
    ]);
    let e = render(t.path(), Path::new("app")).unwrap_err().to_string();
    assert!(
        e.contains("app/kustomization.yaml")
            && e.contains("PrefixTransformer p")
            && e.contains("fieldSpecs"),
        "{e}"
    );
}

#[test]
fn inline_configurations_run_before_files() {
    // The file's prefix comes after the inline patch, so the patch still finds `web`.
    let t = tree(&[
        ("app/dep.yaml", DEPLOYMENT),
        (
            "app/kustomization.yaml",
            "resources: [dep.yaml]\ntransformers:\n- prefix.yaml\n- |-\n  apiVersion: builtin\n  \
             kind: PatchTransformer\n  metadata:\n    name: patch\n  target:\n    name: web\n  \
             patch: '[{\"op\": \"add\", \"path\": \"/spec\", \"value\": {\"replicas\": 2}}]'\n",
        ),
        (
            "app/prefix.yaml",
            "apiVersion: builtin\nkind: PrefixTransformer\nmetadata:\n  name: p\nprefix: p-\n\
             fieldSpecs:\n- path: metadata/name\n",
        ),
    ]);
    let out = render(t.path(), Path::new("app")).unwrap();
    assert_eq!(names(&out), ["p-web"]);
    assert_eq!(out[0].object["spec"]["replicas"], 2);
}

#[test]
fn hash_transformer_hashes_generated_names_once_more() {
    let t = tree(&[(
        "app/kustomization.yaml",
        "configMapGenerator:\n- name: cm\n  literals: [a=1]\ntransformers:\n- |-\n  apiVersion: builtin\n  \
         kind: HashTransformer\n  metadata:\n    name: h\n",
    )]);
    let out = render(t.path(), Path::new("app")).unwrap();
    let name = &names(&out)[0];
    let parts: Vec<&str> = name.split('-').collect();
    assert_eq!(parts.len(), 3, "{name}");
    assert_eq!(parts[1], parts[2], "{name}");
}

#[test]
fn plugins_and_misplaced_configurations_are_refused_by_name() {
    let t = tree(&[
        ("app/dep.yaml", DEPLOYMENT),
        (
            "app/kustomization.yaml",
            "resources: [dep.yaml]\ntransformers:\n- sed.yaml\n",
        ),
        (
            "app/sed.yaml",
            "apiVersion: example.com/v1\nkind: Sed\nmetadata:\n  name: sed\n",
        ),
        (
            "gen/kustomization.yaml",
            "transformers:\n- |-\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata:\n    \
             name: cm\n  literals: [a=1]\n",
        ),
    ]);
    let e = render(t.path(), Path::new("app")).unwrap_err().to_string();
    assert!(e.contains("app/sed.yaml") && e.contains("plugin"), "{e}");
    let e = render(t.path(), Path::new("gen")).unwrap_err().to_string();
    assert!(e.contains("is a generator, not a transformer"), "{e}");
}

#[test]
fn transformer_annotations_list_every_transformer_in_order() {
    let t = tree(&[
        ("base/dep.yaml", DEPLOYMENT),
        (
            "base/kustomization.yaml",
            "resources: [dep.yaml]\nnamePrefix: b-\nlabels:\n- pairs: {a: b}\n",
        ),
        (
            "overlay/kustomization.yaml",
            "buildMetadata: [transformerAnnotations, managedByLabel]\nresources: [../base]\n\
             transformers:\n- |-\n  apiVersion: builtin\n  kind: AnnotationsTransformer\n  metadata:\n    \
             name: notes\n  annotations: {x: y1}\n  fieldSpecs:\n  - path: metadata/annotations\n    create: true\n",
        ),
    ]);
    let out = render(t.path(), Path::new("overlay")).unwrap();
    let meta = &out[0].object["metadata"];
    assert_eq!(
        meta["annotations"]["alpha.config.kubernetes.io/transformations"],
        "- configuredIn: ../base/kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n    \
         kind: PrefixTransformer\n\
         - configuredIn: ../base/kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n    \
         kind: LabelTransformer\n\
         - configuredIn: ../base/kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n    \
         kind: LabelTransformer\n\
         - configuredIn: kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n    \
         kind: AnnotationsTransformer\n    name: notes\n"
    );
    assert_eq!(
        meta["labels"]["app.kubernetes.io/managed-by"],
        "kustomize-(devel)"
    );
    assert_eq!(
        meta["annotations"].get("config.kubernetes.io/origin"),
        None::<&Value>
    );
}
