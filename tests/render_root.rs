//! `aro-gitops render`'s root, through the binary. A plain folder outside any repository renders as
//! `kustomize build` does: bases and components may live anywhere, while each kustomization's own
//! files (resources that are files, patches, generator inputs) stay in or below its folder. `--root`
//! sets the containment root explicitly, and inside a repository (a git work tree, or a fleet folder
//! holding `clusters/`) nothing outside it is read, as the agent renders.

mod common;

use common::fleet::{Fleet, Output, aro_gitops_in};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n";

/// Writes `files` (path, content) under `dir`, creating folders.
fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(path, text).expect("write a file");
    }
}

/// A plain folder (no git, no `clusters/`): a base and a component beside a team's overlay.
fn plain_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        aro_gitops::unit::enclosing_repository(dir.path()).expect("tempdir exists"),
        None,
        "the scratch folder must be outside any repository"
    );
    write(
        dir.path(),
        &[
            ("shared/base/cm.yaml", CM),
            ("shared/base/kustomization.yaml", "resources: [cm.yaml]\n"),
            (
                "shared/env/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n\
                 labels:\n- pairs: {env: dev}\n",
            ),
            (
                "team/overlay/kustomization.yaml",
                "namePrefix: team-\nresources: [../../shared/base]\n\
                 components: [../../shared/env]\nbuildMetadata: [originAnnotations]\n",
            ),
            ("team/patch.yaml", CM),
        ],
    );
    dir
}

/// `kubectl kustomize dir`'s documents, or `None` when kubectl is not installed.
fn kubectl_kustomize(dir: &Path) -> Option<Result<Vec<Value>, String>> {
    let out = Command::new("kubectl").arg("kustomize").arg(dir).output();
    let Ok(out) = out else {
        eprintln!("kubectl is not on PATH: not comparing with kubectl kustomize");
        return None;
    };
    Some(if out.status.success() {
        Ok(
            aro_gitops::yaml::from_multi_str(&String::from_utf8_lossy(&out.stdout))
                .expect("kubectl's output parses"),
        )
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

fn documents(out: &Output) -> Vec<Value> {
    aro_gitops::yaml::from_multi_str(&out.stdout)
        .unwrap_or_else(|e| panic!("render's output does not parse ({e}):\n{}", out.all()))
}

#[test]
fn a_plain_folder_renders_with_bases_anywhere_as_kustomize_build() {
    let tree = plain_tree();
    let out = aro_gitops_in(tree.path(), &["render", "team/overlay"]);
    out.expect_code(0);
    let docs = documents(&out);
    assert_eq!(docs.len(), 1, "{}", out.all());
    assert_eq!(docs[0]["metadata"]["name"], "team-settings");
    assert_eq!(docs[0]["metadata"]["labels"]["env"], "dev");
    // The origin names the base's file as the overlay reaches it, as kustomize does.
    assert_eq!(
        docs[0]["metadata"]["annotations"]["config.kubernetes.io/origin"],
        "path: ../../shared/base/cm.yaml\n"
    );
    if let Some(theirs) = kubectl_kustomize(&tree.path().join("team/overlay")) {
        assert_eq!(
            Ok(docs.clone()),
            theirs,
            "render and kubectl kustomize differ"
        );
    }
    // The same from inside the overlay, and with a path to a file of it.
    let inside = aro_gitops_in(&tree.path().join("team/overlay"), &["render", "."]);
    inside.expect_code(0);
    assert_eq!(documents(&inside), docs);
    let file = aro_gitops_in(tree.path(), &["render", "team/overlay/kustomization.yaml"]);
    file.expect_code(0);
    assert_eq!(documents(&file), docs);

    // `--root` still sets the containment root: the base is outside it.
    let rooted = aro_gitops_in(
        tree.path(),
        &["render", "team/overlay", "--root", "team/overlay"],
    );
    rooted.expect_code(1);
    assert!(
        rooted
            .stderr
            .contains("kustomization.yaml: `../../shared/base` resolves outside the repository"),
        "{}",
        rooted.all()
    );
    // A root holding them both renders it.
    let wide = aro_gitops_in(tree.path(), &["render", "team/overlay", "--root", "."]);
    wide.expect_code(0);
    assert_eq!(documents(&wide)[0]["metadata"]["name"], "team-settings");
}

#[test]
fn a_kustomizations_own_files_stay_in_its_folder_as_kustomize_rules() {
    let tree = plain_tree();
    let overlay = tree.path().join("team/overlay");
    for (kustomization, entry) in [
        // A resource that is a file, above the kustomization's folder.
        (
            "resources: [../../shared/base/cm.yaml]\n",
            "../../shared/base/cm.yaml",
        ),
        // A patch beside the folder.
        (
            "resources: [../../shared/base]\npatches: [{path: ../patch.yaml}]\n",
            "../patch.yaml",
        ),
    ] {
        write(&overlay, &[("kustomization.yaml", kustomization)]);
        let out = aro_gitops_in(tree.path(), &["render", "team/overlay"]);
        out.expect_code(1);
        assert!(
            out.stderr.contains(&format!(
                "kustomization.yaml: `{entry}` is not in or below the kustomization folder ."
            )),
            "{}",
            out.all()
        );
        assert!(out.stdout.is_empty(), "{}", out.all());
        if let Some(theirs) = kubectl_kustomize(&overlay) {
            let theirs = theirs.expect_err("kustomize refuses it too");
            assert!(theirs.contains("is not in or below"), "{theirs}");
        }
    }
    // A generator input outside the folder.
    write(
        &overlay,
        &[(
            "kustomization.yaml",
            "configMapGenerator:\n- name: g\n  files: [../patch.yaml]\n",
        )],
    );
    let out = aro_gitops_in(tree.path(), &["render", "team/overlay"]);
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("is not in or below the kustomization folder"),
        "{}",
        out.all()
    );
    // A base that does not exist is named as written.
    write(
        &overlay,
        &[("kustomization.yaml", "resources: [../nope]\n")],
    );
    let out = aro_gitops_in(tree.path(), &["render", "team/overlay"]);
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("kustomization.yaml: resource `../nope`: ../nope does not exist"),
        "{}",
        out.all()
    );
}

#[test]
fn inside_a_repository_nothing_outside_it_is_read() {
    // A git work tree: a unit reaching a base beside the repository is refused.
    let (fleet, _) = Fleet::git();
    write(
        fleet.dir(),
        &[
            ("outside/cm.yaml", CM),
            ("outside/kustomization.yaml", "resources: [cm.yaml]\n"),
        ],
    );
    fleet.add_resource("clusters/dev", "../../../outside");
    let dev = fleet.repo.join("clusters/dev");
    let out = aro_gitops_in(fleet.dir(), &["render", dev.to_str().expect("UTF-8")]);
    out.expect_code(1);
    assert!(
        out.stderr.contains(
            "clusters/dev/kustomization.yaml: `../../../outside` resolves outside the repository"
        ),
        "{}",
        out.all()
    );
    // `validate` holds the same rule.
    let validate = aro_gitops_in(fleet.dir(), &["validate", dev.to_str().expect("UTF-8")]);
    assert_ne!(validate.code, 0, "{}", validate.all());
    assert!(
        validate.all().contains("resolves outside the repository"),
        "{}",
        validate.all()
    );

    // The same fleet as a plain folder (no git): the folder holding `clusters/` is the root.
    std::fs::remove_dir_all(fleet.repo.join(".git")).expect("remove .git");
    let out = aro_gitops_in(fleet.dir(), &["render", dev.to_str().expect("UTF-8")]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("resolves outside the repository"),
        "{}",
        out.all()
    );
    // And the unit without the outside base renders there.
    fleet.replace(
        "clusters/dev/kustomization.yaml",
        "  - ../../../outside\n",
        "",
    );
    let out = aro_gitops_in(fleet.dir(), &["render", dev.to_str().expect("UTF-8")]);
    out.expect_code(0);
    assert!(out.stdout.contains("kind: AROCluster"), "{}", out.all());
}
