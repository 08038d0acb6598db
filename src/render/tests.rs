//! Renders of small repositories built in temporary folders, one rule at a time.

use super::*;
use crate::object::Origin;
use serde_json::json;
use tempfile::TempDir;

/// A repository with `files` (path, content); folders are created as needed.
pub(super) fn tree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n")
}

fn ids(objects: &[SourcedObject]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            crate::object::ObjectKey::from_object(&o.object)
                .unwrap()
                .to_string()
        })
        .collect()
}

fn origins(objects: &[SourcedObject]) -> Vec<String> {
    objects.iter().map(|o| o.origin.to_string()).collect()
}

fn err(root: &TempDir, dir: &str) -> String {
    render(root.path(), Path::new(dir)).unwrap_err().to_string()
}

#[test]
fn renders_one_file_with_origins() {
    let t = tree(&[("apps/a.yaml", &format!("{}---\n{}", cm("a"), cm("b")))]);
    let out = render(t.path(), Path::new("apps/a.yaml")).unwrap();
    assert_eq!(ids(&out), ["ConfigMap/a", "ConfigMap/b"]);
    assert_eq!(
        out[1].origin,
        Origin {
            file: "apps/a.yaml".into(),
            document: 1
        }
    );
    // An absolute `dir` inside the root works the same.
    assert_eq!(
        render(t.path(), &t.path().join("apps/a.yaml")).unwrap(),
        out
    );
}

#[test]
fn plain_folder_takes_yaml_files_and_subfolders_in_lexical_order() {
    let t = tree(&[
        ("apps/b.yaml", &cm("b")),
        ("apps/a.yml", &cm("a")),
        ("apps/notes.txt", "not yaml"),
        ("apps/.hidden.yaml", "not: an object"),
        ("apps/.git/config.yaml", "not: an object"),
        ("apps/sub/c.yaml", &cm("c")),
        ("apps/sub/deeper/d.yaml", &cm("d")),
        (
            "apps/kust/kustomization.yaml",
            "namespace: team\nresources: [e.yaml]\n",
        ),
        ("apps/kust/e.yaml", &cm("e")),
        ("apps/kust/ignored.yaml", &cm("not-listed")),
    ]);
    let out = render(t.path(), Path::new("apps")).unwrap();
    // Same type: ordered by namespace|name, those without a namespace last (kustomize's order).
    assert_eq!(
        ids(&out),
        [
            "ConfigMap/team/e",
            "ConfigMap/a",
            "ConfigMap/b",
            "ConfigMap/c",
            "ConfigMap/d"
        ]
    );
    assert_eq!(
        origins(&out),
        [
            "apps/kust/e.yaml",
            "apps/a.yml",
            "apps/b.yaml",
            "apps/sub/c.yaml",
            "apps/sub/deeper/d.yaml"
        ]
    );
}

#[test]
fn kustomization_resources_files_and_folders_with_namespace() {
    let t = tree(&[
        (
            "base/kustomization.yaml",
            "resources:\n- deploy.yaml\n- cm.yaml\n",
        ),
        (
            "base/deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: x}\n",
        ),
        ("base/cm.yaml", &cm("conf")),
        (
            "overlay/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: prod\nresources:\n- ../base\n- ns.yaml\n",
        ),
        (
            "overlay/ns.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: anything}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n",
        ),
    ]);
    let out = render(t.path(), Path::new("overlay")).unwrap();
    assert_eq!(
        ids(&out),
        [
            "Namespace/prod",
            "ClusterRole/reader",
            "ConfigMap/prod/conf",
            "Deployment/prod/web"
        ]
    );
    assert_eq!(
        origins(&out),
        [
            "overlay/ns.yaml",
            "overlay/ns.yaml (document 2)",
            "base/cm.yaml",
            "base/deploy.yaml"
        ]
    );
    // `dir` naming the kustomization file renders its folder.
    assert_eq!(
        render(t.path(), Path::new("overlay/kustomization.yaml")).unwrap(),
        out
    );
    // The inner namespace applies first, the outer one overrides it.
    let t = tree(&[
        ("a/kustomization.yaml", "namespace: outer\nresources: [b]\n"),
        (
            "a/b/kustomization.yaml",
            "namespace: inner\nresources: [c.yaml]\n",
        ),
        ("a/b/c.yaml", &cm("c")),
    ]);
    assert_eq!(
        ids(&render(t.path(), Path::new("a")).unwrap()),
        ["ConfigMap/outer/c"]
    );
    assert_eq!(
        ids(&render(t.path(), Path::new("a/b")).unwrap()),
        ["ConfigMap/inner/c"]
    );
}

#[test]
fn each_kustomization_file_name_is_recognised_and_two_are_refused() {
    for name in kustomization::KUSTOMIZATION_FILE_NAMES {
        let t = tree(&[
            (&format!("k/{name}") as &str, "resources: [a.yaml]\n"),
            ("k/a.yaml", &cm("a")),
        ]);
        assert_eq!(
            ids(&render(t.path(), Path::new("k")).unwrap()),
            ["ConfigMap/a"],
            "{name}"
        );
    }
    let t = tree(&[
        ("k/kustomization.yaml", "resources: []\n"),
        ("k/Kustomization", "resources: []\n"),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k: found multiple kustomization files: kustomization.yaml, Kustomization"
    );
}

#[test]
fn a_plain_folder_in_resources_is_an_error() {
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [sub]\n"),
        ("k/sub/a.yaml", &cm("a")),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/kustomization.yaml: resource `sub`: must build at directory: k/sub has no kustomization file \
         (kustomization.yaml, kustomization.yml or Kustomization)"
    );
}

#[test]
fn remote_bases_are_refused() {
    for entry in [
        "https://github.com/org/repo//deploy?ref=v1",
        "github.com/org/repo/deploy",
        "git@github.com:org/repo.git",
        "git::https://example.com/repo",
        "ssh://git@example.com/repo",
    ] {
        let t = tree(&[(
            "k/kustomization.yaml",
            &format!("resources: ['{entry}']\n") as &str,
        )]);
        let e = render(t.path(), Path::new("k")).unwrap_err();
        assert!(
            matches!(e, RenderError::RemoteResource { .. }),
            "{entry}: {e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "k/kustomization.yaml: resource `{entry}`: remote bases are not supported: the agent never fetches during a render"
            )
        );
    }
}

#[test]
fn the_load_restrictor_refuses_anything_outside_the_root() {
    let outer = tree(&[
        ("outside.yaml", &cm("out")),
        (
            "repo/k/kustomization.yaml",
            "resources: [../../outside.yaml]\n",
        ),
    ]);
    let root = outer.path().join("repo");
    let e = render(&root, Path::new("k")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "k/kustomization.yaml: `../../outside.yaml` resolves outside the repository; renders may only read files inside it"
    );
    assert_eq!(e.file(), Path::new("k/kustomization.yaml"));
    // The path asked for itself.
    let e = render(&root, Path::new("../outside.yaml")).unwrap_err();
    assert!(matches!(e, RenderError::OutsideRoot { .. }), "{e}");
    // A file above the kustomization's folder is refused even inside the repository, as kustomize refuses
    // it; a folder there (a base) is fine.
    std::fs::write(
        root.join("k/kustomization.yaml"),
        "resources: [../in.yaml]\n",
    )
    .unwrap();
    std::fs::write(root.join("in.yaml"), cm("in")).unwrap();
    assert_eq!(
        err_in(&root, "k"),
        "k/kustomization.yaml: `../in.yaml` is not in or below the kustomization folder k: a kustomization may only read files in its own folder (bases and components may be elsewhere)"
    );
    std::fs::write(root.join("k/kustomization.yaml"), "resources: [../base]\n").unwrap();
    std::fs::create_dir(root.join("base")).unwrap();
    std::fs::write(
        root.join("base/kustomization.yaml"),
        "resources: [in.yaml]\n",
    )
    .unwrap();
    std::fs::write(root.join("base/in.yaml"), cm("in")).unwrap();
    assert_eq!(
        ids(&render(&root, Path::new("k")).unwrap()),
        ["ConfigMap/in"]
    );
}

fn err_in(root: &Path, dir: &str) -> String {
    render(root, Path::new(dir)).unwrap_err().to_string()
}

#[cfg(unix)]
#[test]
fn symlinks_are_resolved_before_the_load_restrictor() {
    let outer = tree(&[
        ("outside/x.yaml", &cm("out")),
        ("repo/real/y.yaml", &cm("in")),
    ]);
    let root = outer.path().join("repo");
    std::os::unix::fs::symlink(outer.path().join("outside/x.yaml"), root.join("link.yaml"))
        .unwrap();
    std::os::unix::fs::symlink(outer.path().join("outside"), root.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("inside")).unwrap();
    std::fs::write(root.join("kustomization.yaml"), "resources: [link.yaml]\n").unwrap();
    assert!(matches!(
        render(&root, Path::new(".")).unwrap_err(),
        RenderError::OutsideRoot { .. }
    ));
    assert!(matches!(
        render(&root, Path::new("linkdir")).unwrap_err(),
        RenderError::OutsideRoot { .. }
    ));
    // A link inside the repository is followed, and the origin names the real file.
    std::fs::write(
        root.join("kustomization.yaml"),
        "resources: [inside/y.yaml]\n",
    )
    .unwrap();
    let out = render(&root, Path::new(".")).unwrap();
    assert_eq!(origins(&out), ["real/y.yaml"]);
    // A plain folder holding a link to outside is refused too.
    std::fs::remove_file(root.join("kustomization.yaml")).unwrap();
    assert!(matches!(
        render(&root, Path::new(".")).unwrap_err(),
        RenderError::OutsideRoot { .. }
    ));
}

#[test]
fn missing_files_name_themselves_and_the_kustomization() {
    let t = tree(&[
        (
            "k/kustomization.yaml",
            "resources: [a.yaml, ../nope/b.yaml]\n",
        ),
        ("k/a.yaml", &cm("a")),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/kustomization.yaml: resource `../nope/b.yaml`: nope/b.yaml does not exist"
    );
    assert_eq!(err(&t, "nothing/here"), "nothing/here: not found");
}

#[test]
fn cycles_are_detected() {
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [sub]\n"),
        ("k/sub/kustomization.yaml", "resources: [..]\n"),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/sub/kustomization.yaml: resource `..`: cycle detected: k contains k/sub, which is already being rendered"
    );
    let t = tree(&[("k/kustomization.yaml", "resources: [.]\n")]);
    assert!(matches!(
        render(t.path(), Path::new("k")).unwrap_err(),
        RenderError::Cycle { .. }
    ));
}

#[test]
fn unsupported_fields_name_the_field_and_the_file() {
    let t = tree(&[
        (
            "k/kustomization.yaml",
            "resources: [a.yaml]\nhelmCharts: [{name: x}]\n",
        ),
        ("k/a.yaml", &cm("a")),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/kustomization.yaml: kustomization field `helmCharts` is not supported"
    );
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [a]\n"),
        ("k/a/Kustomization", "validators: [v.yaml]\n"),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/a/Kustomization: kustomization field `validators` is not supported"
    );
}

#[test]
fn yaml_errors_name_the_file_and_line() {
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [a.yaml]\n"),
        (
            "k/a.yaml",
            &format!("{}---\nmetadata: {{name: [\n", cm("a")),
        ),
    ]);
    let e = render(t.path(), Path::new("k")).unwrap_err();
    let RenderError::Yaml { file, line, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((file.as_path(), *line), (Path::new("k/a.yaml"), Some(6)));
    let t = tree(&[("k/kustomization.yaml", "resources: [a.yaml\n")]);
    assert!(
        err(&t, "k").starts_with("k/kustomization.yaml: invalid YAML at line"),
        "{}",
        err(&t, "k")
    );
}

#[test]
fn duplicates_name_both_origins() {
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [a.yaml, sub]\n"),
        ("k/a.yaml", &cm("x")),
        ("k/sub/kustomization.yaml", "resources: [b.yaml]\n"),
        ("k/sub/b.yaml", &format!("{}---\n{}", cm("w"), cm("x"))),
    ]);
    assert_eq!(
        err(&t, "k"),
        "ConfigMap/x: may not add resource with an already registered id: defined in k/a.yaml and again in k/sub/b.yaml (document 2)"
    );
    // The same file listed twice is a duplicate too (as in kustomize).
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [a.yaml, a.yaml]\n"),
        ("k/a.yaml", &cm("x")),
    ]);
    assert!(matches!(
        render(t.path(), Path::new("k")).unwrap_err(),
        RenderError::Duplicate { .. }
    ));
    // In a plain folder.
    let t = tree(&[("p/a.yaml", &cm("x")), ("p/b/c.yaml", &cm("x"))]);
    assert_eq!(
        err(&t, "p"),
        "ConfigMap/x: may not add resource with an already registered id: defined in p/a.yaml and again in p/b/c.yaml"
    );
}

#[test]
fn a_namespace_that_merges_two_objects_is_a_conflict() {
    let t = tree(&[
        (
            "k/kustomization.yaml",
            "namespace: team\nresources: [a.yaml]\n",
        ),
        (
            "k/a.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
        ),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/kustomization.yaml: `namespace` produces an id conflict: Namespace/team would come from both k/a.yaml and k/a.yaml (document 2)"
    );
}

#[test]
fn secret_values_never_appear_in_errors() {
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\ndata: {token: aHVudGVyMg==}\n";
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [a.yaml, b.yaml]\n"),
        ("k/a.yaml", secret),
        ("k/b.yaml", secret),
    ]);
    let e = err(&t, "k");
    assert!(
        e.contains("Secret/s") && !e.contains("hunter2") && !e.contains("aHVudGVyMg"),
        "{e}"
    );
}

#[test]
fn render_error_file_is_repository_relative() {
    let t = tree(&[
        ("k/kustomization.yaml", "resources: [a.yaml]\n"),
        ("k/a.yaml", "apiVersion: v1\nmetadata: {name: thing}\n"),
    ]);
    let e = render(t.path(), Path::new("k")).unwrap_err();
    assert_eq!(e.file(), Path::new("k/a.yaml"));
    assert_eq!(
        e.to_string(),
        "k/a.yaml: document 1 (line 1): missing kind (object named thing)"
    );
}

#[test]
fn list_items_keep_the_origin_of_their_list() {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    ]});
    let t = tree(&[(
        "l.yaml",
        &format!("{}---\n{}", cm("z"), crate::yaml::to_string(&list)),
    )]);
    let out = render(t.path(), Path::new("l.yaml")).unwrap();
    assert_eq!(ids(&out), ["ConfigMap/a", "ConfigMap/b", "ConfigMap/z"]);
    assert_eq!(
        origins(&out),
        ["l.yaml (document 2)", "l.yaml (document 2)", "l.yaml"]
    );
}

#[test]
fn patch_errors_name_the_patch_or_the_kustomization() {
    let t = tree(&[
        (
            "k/kustomization.yaml",
            "resources: [a.yaml]\npatches:\n- path: p.yaml\n",
        ),
        ("k/a.yaml", &cm("a")),
        (
            "k/p.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {x: [1\n",
        ),
    ]);
    let e = render(t.path(), Path::new("k")).unwrap_err();
    assert_eq!(e.file(), Path::new("k/p.yaml"));
    assert!(
        e.to_string()
            .starts_with("k/p.yaml: invalid YAML at line 5"),
        "{e}"
    );

    let t = tree(&[
        (
            "k/kustomization.yaml",
            "resources: [a.yaml]\npatchesStrategicMerge:\n- |-\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: nope}\n",
        ),
        ("k/a.yaml", &cm("a")),
    ]);
    assert_eq!(
        err(&t, "k"),
        "k/kustomization.yaml: patchesStrategicMerge entry 1: no unique target for patch ConfigMap/nope: \
         no object ConfigMap/nope (v1)"
    );
}

#[test]
fn prefixes_follow_references_and_generated_names_get_hashes() {
    let t = tree(&[
        (
            "k/kustomization.yaml",
            "namePrefix: p-\nresources: [d.yaml]\nconfigMapGenerator:\n- name: conf\n  literals: [a=b]\n",
        ),
        (
            "k/d.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      \
             volumes: [{name: v, configMap: {name: conf}}]\n      containers: [{name: c, image: x}]\n",
        ),
    ]);
    let out = render(t.path(), Path::new("k")).unwrap();
    assert_eq!(
        ids(&out),
        ["ConfigMap/p-conf-4h2mbtbbt6", "Deployment/p-web"]
    );
    assert_eq!(
        out[1].object["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
        "p-conf-4h2mbtbbt6"
    );
    assert_eq!(out[0].origin.file, Path::new("k/kustomization.yaml"));
}
