use super::*;

fn parse_ok(text: &str) -> Kustomization {
    Kustomization::clone(&parse(Path::new("k/kustomization.yaml"), text).unwrap())
}

fn parse_err(text: &str) -> String {
    parse(Path::new("k/kustomization.yaml"), text)
        .unwrap_err()
        .to_string()
}

#[test]
fn reads_resources_and_namespace() {
    let k = parse_ok(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: x}\n\
         namespace: team\nresources: [a.yaml, ../base, sub/]\nbases: [old]\n",
    );
    assert_eq!(k.resources, vec!["a.yaml", "../base", "sub/", "old"]);
    assert_eq!(k.namespace.as_deref(), Some("team"));
    assert_eq!(
        parse_ok("resources: []\nnamespace: ''\n"),
        Kustomization::default()
    );
    assert_eq!(parse_ok("resources:\n"), Kustomization::default());
}

#[test]
fn reads_transformer_fields() {
    let k = parse_ok(
        "nameprefix: p-\nnameSuffix: -s\ncommonLabels: {b: '2', a: '1'}\ncommonAnnotations: {n: ~}\n\
         imageTags: [{name: nginx, newTag: 1.8}]\n\
         replicas: [{name: d, count: 3}]\n\
         labels: [{pairs: {x: 'y'}, includeTemplates: true, fields: [{path: spec/x, kind: K}]}]\n\
         patches:\n- path: p.yaml\n  target: {kind: Deployment, labelSelector: 'a=b'}\n  options: {allowNameChange: true}\n\
         patchesJson6902: [{target: {kind: X, name: yy}, patch: '[]'}]\n\
         vars: [{name: V, objref: {kind: Service, name: s, apiVersion: v1}}]\n\
         sortOptions: {order: fifo}\n",
    );
    assert_eq!(k.name_prefix, "p-");
    assert_eq!(k.name_suffix, "-s");
    assert_eq!(
        k.common_labels,
        vec![("a".into(), "1".into()), ("b".into(), "2".into())]
    );
    assert_eq!(k.common_annotations, vec![("n".into(), String::new())]);
    assert_eq!(k.images[0].new_tag, "1.8");
    assert_eq!(k.replicas, vec![("d".to_string(), 3)]);
    assert!(k.labels[0].include_templates && !k.labels[0].include_selectors);
    assert_eq!(k.labels[0].fields[0].gvk.kind, "K");
    assert_eq!(k.patches[0].path.as_deref(), Some("p.yaml"));
    assert_eq!(k.patches[0].target.as_ref().unwrap().label_selector, "a=b");
    assert!(k.patches[0].allow_name_change);
    assert_eq!(k.patches_json6902[0].target.as_ref().unwrap().name, "yy");
    assert_eq!(k.vars[0].field_path, "metadata.name");
    assert_eq!(k.vars[0].api_version, "v1");
    assert_eq!(k.sort, Some(SortOrder::Fifo));
    // `patches` listing paths is the old patchesStrategicMerge.
    let k = parse_ok("patches: [a.yaml, b.yaml]\n");
    assert_eq!(k.patches_strategic_merge, vec!["a.yaml", "b.yaml"]);
    assert!(k.patches.is_empty());
}

#[test]
fn unsupported_and_unknown_fields_are_named() {
    assert_eq!(
        parse_err("resources: [a.yaml]\nhelmCharts:\n- name: x\n"),
        "k/kustomization.yaml: kustomization field `helmCharts` is not supported"
    );
    assert!(parse_err("validators: [v.yaml]\n").contains("`validators` is not supported"));
    assert_eq!(
        parse_err("resources: []\nfoo: bar\n"),
        "k/kustomization.yaml: unknown kustomization field `foo`"
    );
    // Empty values change nothing, in kustomize or here.
    assert_eq!(
        parse_ok("helmCharts: []\nnamePrefix: ''\nimages: null\ncommonLabels: {}\n"),
        Kustomization::default()
    );
}

#[test]
fn kind_and_api_version_are_checked() {
    let k = parse_ok("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n");
    assert_eq!(k.kind, Kind::Component);
    assert!(
        parse_err("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Component\n")
            .contains("the apiVersion of a Component is kustomize.config.k8s.io/v1alpha1")
    );
    assert!(parse_err("kind: Foo\n").contains("kind is `Foo`"));
    assert!(
        parse_err("apiVersion: kustomize.config.k8s.io/v2\n")
            .contains("apiVersion is `kustomize.config.k8s.io/v2`")
    );
    assert_eq!(parse_ok("kind: Kustomization\n"), Kustomization::default());
}

#[test]
fn malformed_files_and_fields() {
    assert_eq!(
        parse_err(""),
        "k/kustomization.yaml: kustomization is empty"
    );
    assert_eq!(
        parse_err("# only a comment\n"),
        "k/kustomization.yaml: kustomization is empty"
    );
    assert!(parse_err("- a\n").contains("kustomization is a list, not a mapping"));
    assert!(parse_err("resources: a.yaml\n").contains("`resources` is a string, not a list"));
    assert!(
        parse_err("resources: [a.yaml, {x: 1}]\n")
            .contains("`resources` entry 2: is a mapping, not a string")
    );
    assert!(parse_err("resources: ['']\n").contains("`resources` entry 1: is empty"));
    assert!(parse_err("namespace: [a]\n").contains("`namespace` is a list, not a string"));
    assert!(parse_err("commonLabels: {a: 1}\n").contains("value of `a` is a number"));
    // YAML 1.1, as kustomize reads kustomization files.
    assert!(parse_err("commonLabels: {a: yes}\n").contains("value of `a` is a boolean"));
    assert_eq!(
        parse_ok("commonLabels: {a: 'yes'}\n").common_labels,
        vec![("a".into(), "yes".into())]
    );
    assert!(parse_err("patches: [{path: a, bogus: 1}]\n").contains("unknown field `bogus`"));
    assert!(parse_err("sortOptions: {order: random}\n").contains("unknown order `random`"));
    let err = parse(Path::new("k/kustomization.yaml"), "resources: [a\n").unwrap_err();
    assert!(
        matches!(err, RenderError::Yaml { line: Some(1), .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string().matches("line").count(), 1, "{err}");
}

#[test]
fn finds_the_file_and_refuses_two() {
    let dir = tempfile::tempdir().unwrap();
    let loader = crate::render::inputs::Loader::new(dir.path().to_path_buf());
    let find = |d: &Path, shown: &Path| find(&loader, d, shown);
    assert_eq!(find(dir.path(), Path::new("x")).unwrap(), None);
    std::fs::write(dir.path().join("Kustomization"), "").unwrap();
    assert_eq!(
        find(dir.path(), Path::new("x")).unwrap(),
        Some(dir.path().join("Kustomization"))
    );
    std::fs::write(dir.path().join("kustomization.yml"), "").unwrap();
    let err = find(dir.path(), Path::new("x")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "x: found multiple kustomization files: kustomization.yml, Kustomization"
    );
    // Every candidate name is noted, present or not.
    assert_eq!(loader.into_inputs().files.len(), 3);
}

#[test]
fn reads_openapi() {
    let k = parse_ok("openapi: {path: s.json, other: x}\n");
    assert_eq!(k.openapi_path.as_deref(), Some("s.json"));
    assert_eq!(k.openapi_version, None);
    let k = parse_ok("openapi:\n  version: v1.21.2\n");
    assert_eq!(k.openapi_version.as_deref(), Some("v1.21.2"));
    assert!(parse_err("openapi: [a]\n").contains("`openapi` is a list, not a mapping"));
    assert!(parse_err("openapi: {path: [a]}\n").contains("`openapi`: `path` is"));
}

#[test]
fn a_duplicate_key_is_refused_naming_the_file_line_and_key() {
    // kustomize v5.5 keeps the last value silently; the renderer refuses the ambiguity.
    let e = parse_err("resources: [a.yaml]\nnamePrefix: a-\nnamePrefix: b-\n");
    assert!(
        e.contains("k/kustomization.yaml") && e.contains("line 3") && e.contains("`namePrefix`"),
        "{e}"
    );
    let e = parse_err("images:\n- name: nginx\n  newTag: '1'\n  newTag: '2'\n");
    assert!(e.contains("line 4") && e.contains("`newTag`"), "{e}");
}
