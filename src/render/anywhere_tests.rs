//! [`render_anywhere`]: `kustomize build` outside a repository. No containment root, so bases and
//! components may live anywhere; each kustomization's own files stay in or below its folder
//! (kustomize's `LoadRestrictionsRootOnly`). Paths are named from the folder built.

use super::tests::tree;
use super::*;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
const COMPONENT: &str =
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {c: d}\n";

fn err(path: &Path) -> String {
    render_anywhere(path).unwrap_err().to_string()
}

#[test]
fn bases_and_components_may_live_anywhere() {
    let t = tree(&[
        ("shared/base/cm.yaml", CM),
        ("shared/base/kustomization.yaml", "resources: [cm.yaml]\n"),
        ("shared/comp/kustomization.yaml", COMPONENT),
        (
            "team/overlay/kustomization.yaml",
            "resources: [../../shared/base]\ncomponents: [../../shared/comp]\n",
        ),
    ]);
    let overlay = t.path().join("team/overlay");
    let out = render_anywhere(&overlay).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].object["metadata"]["labels"]["c"], "d");
    // Origins are named as the overlay reaches them.
    assert_eq!(
        out[0].origin.file,
        Path::new("../../shared/base/cm.yaml"),
        "{:?}",
        out[0].origin
    );
    // With the overlay as the repository root, the same base is outside it.
    let e = render(&overlay, Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("resolves outside the repository"), "{e}");
}

#[test]
fn a_kustomizations_files_stay_in_its_own_folder() {
    let t = tree(&[
        ("base/cm.yaml", CM),
        ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
        ("patch.yaml", CM),
        ("value.txt", "v"),
    ]);
    let overlay = t.path().join("overlay");
    for (kustomization, entry) in [
        ("resources: [../base/cm.yaml]\n", "../base/cm.yaml"),
        (
            "resources: [../base]\npatches: [{path: ../patch.yaml}]\n",
            "../patch.yaml",
        ),
    ] {
        std::fs::create_dir_all(&overlay).unwrap();
        std::fs::write(overlay.join("kustomization.yaml"), kustomization).unwrap();
        assert_eq!(
            err(&overlay),
            format!(
                "kustomization.yaml: `{entry}` is not in or below the kustomization folder .: a kustomization may only read files in its own folder (bases and components may be elsewhere)"
            )
        );
    }
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "configMapGenerator: [{name: g, files: [../value.txt]}]\n",
    )
    .unwrap();
    let e = err(&overlay);
    assert!(
        e.contains("is not in or below the kustomization folder"),
        "{e}"
    );
    // A symlink leading out of the folder is refused the same way.
    std::os::unix::fs::symlink("../patch.yaml", overlay.join("link.yaml")).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../base]\npatches: [{path: link.yaml}]\n",
    )
    .unwrap();
    let e = err(&overlay);
    assert!(
        e.contains("is not in or below the kustomization folder"),
        "{e}"
    );
    // The base's own files are read from the base's folder.
    std::fs::write(overlay.join("kustomization.yaml"), "resources: [../base]\n").unwrap();
    assert_eq!(render_anywhere(&overlay).unwrap().len(), 1);
}

#[test]
fn missing_paths_are_named_from_the_folder_built() {
    let t = tree(&[("overlay/kustomization.yaml", "resources: [../nope]\n")]);
    assert_eq!(
        err(&t.path().join("overlay")),
        "kustomization.yaml: resource `../nope`: ../nope does not exist"
    );
    let e = render_anywhere(&t.path().join("absent")).unwrap_err();
    assert!(matches!(e, RenderError::NotFound { .. }), "{e}");
    // A file renders its documents, named from its folder.
    std::fs::write(t.path().join("cm.yaml"), CM).unwrap();
    let out = render_anywhere(&t.path().join("cm.yaml")).unwrap();
    assert_eq!(out[0].origin.file, Path::new("cm.yaml"));
}

#[test]
fn paths_normalize_lexically_keeping_leading_parents() {
    for (path, normal) in [
        ("a/./b/../c", "a/c"),
        ("../../shared/base", "../../shared/base"),
        ("a/../../b", "../b"),
        ("/x/../..", "/"),
        ("/x/y/../z", "/x/z"),
        ("./", ""),
    ] {
        assert_eq!(normalize(Path::new(path)), Path::new(normal), "{path}");
    }
    assert_eq!(
        relative_to(Path::new("../../shared/base/cm.yaml"), Path::new(".")),
        Path::new("../../shared/base/cm.yaml")
    );
    assert_eq!(
        relative_to(Path::new("/t/shared/cm.yaml"), Path::new("/t/team/overlay")),
        Path::new("../../shared/cm.yaml")
    );
}
