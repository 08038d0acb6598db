//! Differential checks against kustomize itself: the same trees rendered here and by `kubectl kustomize`
//! (kustomize v5.5, skipped when kubectl is not on PATH). kustomize's own test cases are run by
//! `tests/render_conformance.rs`. Documents are compared as values, in order.

use super::tests::tree;
use super::*;
use serde_json::Value;
use std::process::Command;

fn kubectl_on_path() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("kubectl").is_file()))
}

/// What `kubectl kustomize dir` prints, parsed; `Err` with its message when it fails.
fn kubectl_kustomize(dir: &Path) -> Result<Vec<Value>, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(crate::yaml::from_multi_str(&String::from_utf8(out.stdout).unwrap()).unwrap())
}

fn values(objects: Vec<SourcedObject>) -> Vec<Value> {
    objects.into_iter().map(|o| o.object).collect()
}

/// Same documents in the same order (key order within a mapping does not matter); shows both as YAML if not.
fn assert_same(ours: &[Value], expected: &[Value], what: &str) {
    assert!(
        ours == expected,
        "{what}: render differs from kustomize\n--- render:\n{}\n--- kustomize:\n{}",
        crate::yaml::to_multi_string(ours),
        crate::yaml::to_multi_string(expected)
    );
}

fn cms(names: &[(&str, Option<&str>)]) -> String {
    names
        .iter()
        .map(|(name, ns)| {
            let ns = ns.map(|n| format!(", namespace: {n}")).unwrap_or_default();
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{ns}}}\ndata: {{k: v}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Trees using only `resources` and `namespace`, each built at the folder named like it.
fn trees() -> Vec<(&'static str, Vec<(String, String)>)> {
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    let mixed = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: zdep}\nspec: {replicas: 2}\n---\n\
        apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, labels: {a: b}}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: cr, namespace: foo}\n---\n\
        apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: vw}\n\
        webhooks:\n- name: a\n  clientConfig: {service: {name: s, namespace: old}}\n---\n\
        apiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  ports: [{port: 80}]\n---\n\
        apiVersion: batch/v1\nkind: Job\nmetadata: {name: job}\n---\n\
        apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\n---\n\
        apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {list: [1, two, {x: null}], flag: true}\n";
    let special = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb, namespace: old}\n\
        subjects:\n- {kind: ServiceAccount, name: default, namespace: x}\n- {kind: ServiceAccount, name: sa1, namespace: old}\n\
        - {kind: Group, name: default}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: crb}\n\
        subjects: [{kind: ServiceAccount, name: default}, {kind: ServiceAccount, name: other}]\n---\n\
        apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.local}\nspec: {group: local, version: v1}\n---\n\
        apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.remote}\n\
        spec: {group: remote, version: v1, service: {name: s, namespace: old}}\n---\n\
        apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: foos.x.io}\n\
        spec: {group: x.io, conversion: {strategy: Webhook, webhook: {clientConfig: {service: {name: s, namespace: old}}}}}\n---\n\
        apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bars.x.io}\n\
        spec: {group: x.io, conversion: {strategy: Webhook, webhook: {clientConfig: {service: {name: s}}}}}\n---\n\
        apiVersion: example.com/v1\nkind: Namespace\nmetadata: {name: xns}\n---\n\
        apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: vap}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1alpha1\nkind: ClusterRole\nmetadata: {name: alpha}\n---\n\
        apiVersion: storage.k8s.io/v1beta1\nkind: StorageClass\nmetadata: {name: sc}\n---\n\
        apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata: {name: psp}\n---\n\
        apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n";
    let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s2}, stringData: {a: b}}\n\
        - apiVersion: v1\n  kind: SecretList\n  items: [{apiVersion: v1, kind: Secret, metadata: {name: s1}, type: Opaque}]\n---\n\
        # commented out\n---\n---\napiVersion: example.com/v1\nkind: ThingList\nmetadata: {name: kept}\nrules: []\n";
    let refs_base = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ctrl, namespace: system}\n---\n\
        apiVersion: v1\nkind: Service\nmetadata: {name: webhook-service, namespace: system}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb, namespace: system}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects:\n\
        - {kind: ServiceAccount, name: ctrl, namespace: system}\n- {kind: User, name: ctrl}\n\
        - {kind: ServiceAccount, name: ctrl, namespace: elsewhere}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: crb}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cr}\n\
        subjects: [{kind: ServiceAccount, name: ctrl, namespace: system}, {kind: ServiceAccount, name: plain}]\n---\n\
        apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: vw}\nwebhooks:\n\
        - {name: a, clientConfig: {service: {name: webhook-service, namespace: system, path: /validate}}}\n\
        - {name: b, clientConfig: {service: {name: webhook-service}}}\n- {name: c, clientConfig: {url: 'https://x'}}\n---\n\
        apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.x.io}\n\
        spec: {group: x.io, version: v1, service: {name: webhook-service, namespace: system}}\n";
    let refs_other = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: plain, namespace: p}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb-other, namespace: q}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\n\
        subjects: [{kind: ServiceAccount, name: ctrl}, {kind: ServiceAccount, name: ctrl, namespace: sys}]\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb-blind, namespace: q}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects: [{kind: ServiceAccount, name: ctrl}]\n";
    vec![
        (
            "references",
            vec![
                s(
                    "references/kustomization.yaml",
                    "resources: [../base, ../other]\n",
                ),
                s(
                    "base/kustomization.yaml",
                    "namespace: sys\nresources: [r.yaml]\n",
                ),
                s("base/r.yaml", refs_base),
                s("other/kustomization.yaml", "resources: [r.yaml]\n"),
                s("other/r.yaml", refs_other),
            ],
        ),
        (
            "flat",
            vec![
                s(
                    "flat/kustomization.yaml",
                    "namespace: team\nresources: [z.yaml, a.yaml]\n",
                ),
                s("flat/z.yaml", mixed),
                s("flat/a.yaml", &cms(&[("b", Some("x")), ("a", None)])),
            ],
        ),
        (
            "special",
            vec![
                s(
                    "special/kustomization.yaml",
                    "namespace: team\nresources: [r.yaml]\n",
                ),
                s("special/r.yaml", special),
            ],
        ),
        (
            "no-namespace",
            vec![
                s(
                    "no-namespace/kustomization.yaml",
                    "resources: [r.yaml, l.yaml]\n",
                ),
                s("no-namespace/r.yaml", special),
                s("no-namespace/l.yaml", list),
            ],
        ),
        (
            "overlay",
            vec![
                s(
                    "base/kustomization.yaml",
                    "namespace: inner\nresources: [cm.yaml, ../shared]\n",
                ),
                s(
                    "base/cm.yaml",
                    &cms(&[("c", None), ("a-b", Some("q")), ("a", Some("a-b"))]),
                ),
                s("shared/Kustomization", "resources: [l.yaml]\n"),
                s("shared/l.yaml", list),
                s(
                    "overlay/kustomization.yml",
                    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: outer\nresources:\n- ../base\n- more.yaml\n",
                ),
                s(
                    "overlay/more.yaml",
                    &format!(
                        "---\n{}---\n",
                        cms(&[("m", Some("x")), ("nn", Some("outer"))])
                    ),
                ),
            ],
        ),
        (
            "overlay-no-ns",
            vec![
                s("base/kustomization.yaml", "resources: [cm.yaml]\n"),
                s(
                    "base/cm.yaml",
                    &cms(&[("c", None), ("d", Some("q")), ("d", Some("default-not"))]),
                ),
                s(
                    "overlay-no-ns/kustomization.yaml",
                    "resources: [../base, m.yaml]\n",
                ),
                s("overlay-no-ns/m.yaml", &cms(&[("m", Some("default"))])),
            ],
        ),
    ]
}

/// Trees kustomize refuses; render must refuse them too.
fn failing_trees() -> Vec<Vec<(String, String)>> {
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    vec![
        vec![
            s("kustomization.yaml", "resources: [a.yaml, b.yaml]\n"),
            s("a.yaml", &cms(&[("x", None)])),
            s("b.yaml", &cms(&[("x", Some("default"))])),
        ],
        vec![
            s("kustomization.yaml", "resources: [sub]\n"),
            s("sub/a.yaml", &cms(&[("x", None)])),
        ],
        vec![s("kustomization.yaml", "resources: [nope.yaml]\n")],
        vec![
            s("kustomization.yaml", "resources: []\n"),
            s("kustomization.yml", "resources: []\n"),
        ],
        vec![
            s("kustomization.yaml", "resources: [a]\n"),
            s("a/kustomization.yaml", "resources: [..]\n"),
        ],
        vec![
            s("kustomization.yaml", "namespace: t\nresources: [a.yaml]\n"),
            s("a.yaml", &cms(&[("x", Some("p")), ("x", Some("q"))])),
        ],
        vec![
            s("kustomization.yaml", "resources: [a.yaml]\n"),
            s(
                "a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {}}\n",
            ),
        ],
        vec![
            s("kustomization.yaml", "resources: [a.yaml]\nfoo: bar\n"),
            s("a.yaml", &cms(&[("x", None)])),
        ],
        vec![
            s("kustomization.yaml", "resources: [a, b, crb.yaml]\n"),
            s(
                "a/kustomization.yaml",
                "namespace: a\nresources: [sa.yaml]\n",
            ),
            s(
                "b/kustomization.yaml",
                "namespace: b\nresources: [sa.yaml]\n",
            ),
            s(
                "a/sa.yaml",
                "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n",
            ),
            s(
                "b/sa.yaml",
                "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n",
            ),
            s(
                "crb.yaml",
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: c}\nsubjects: [{kind: ServiceAccount, name: sa}]\n",
            ),
        ],
    ]
}

#[test]
fn matches_kubectl_kustomize_for_resources_and_namespace() {
    if !kubectl_on_path() {
        eprintln!("skipped: kubectl is not on PATH");
        return;
    }
    for (target, files) in trees() {
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let t = tree(&files);
        let expected = kubectl_kustomize(&t.path().join(target))
            .unwrap_or_else(|e| panic!("{target}: kubectl failed: {e}"));
        let ours =
            values(render(t.path(), Path::new(target)).unwrap_or_else(|e| panic!("{target}: {e}")));
        assert!(!expected.is_empty(), "{target}");
        assert_same(&ours, &expected, target);
    }
}

#[test]
fn refuses_what_kubectl_kustomize_refuses() {
    if !kubectl_on_path() {
        eprintln!("skipped: kubectl is not on PATH");
        return;
    }
    for files in failing_trees() {
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let t = tree(&files);
        let theirs = kubectl_kustomize(t.path()).expect_err("kubectl kustomize accepts it");
        let ours = render(t.path(), Path::new(".")).expect_err("render accepts it");
        eprintln!("kustomize: {}\nrender:    {ours}\n", theirs.trim());
    }
}

/// The example fleet shipped with the project (`examples-repo/`): every cluster folder renders as kustomize does.
#[test]
fn matches_kubectl_kustomize_on_the_example_repository() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo");
    if !kubectl_on_path() || !repo.join("clusters").is_dir() {
        eprintln!("skipped: kubectl or {} missing", repo.display());
        return;
    }
    let mut clusters: Vec<_> = std::fs::read_dir(repo.join("clusters"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("kustomization.yaml").is_file())
        .collect();
    clusters.sort();
    assert!(!clusters.is_empty());
    for cluster in clusters {
        let rel = cluster.strip_prefix(&repo).unwrap();
        let expected = kubectl_kustomize(&cluster).unwrap();
        let ours = values(render(&repo, rel).unwrap_or_else(|e| panic!("{e}")));
        assert_same(&ours, &expected, &rel.display().to_string());
    }
}

/// Scalars typed as kustomize (kyaml) types them: `y`/`n`/`yes`/`on` stay strings and `0777` is 511.
#[test]
fn yaml_scalars_are_typed_as_kustomize_types_them() {
    let t = tree(&[
        ("kustomization.yaml", "resources: [a.yaml]\n"),
        (
            "a.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {k: yes, o: on, n: 0777}\n",
        ),
    ]);
    let expected = kubectl_kustomize(t.path()).unwrap();
    assert_eq!(values(render(t.path(), Path::new(".")).unwrap()), expected);
}

/// The trees under `testdata/differential` (see its README): render's output is kustomize's, as stored and
/// (when kubectl is on PATH) as kubectl prints it now.
#[test]
fn matches_kustomize_on_the_stored_trees() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/render/testdata/differential");
    let mut cases: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("tree").is_dir())
        .collect();
    cases.sort();
    assert!(!cases.is_empty());
    let live = kubectl_on_path();
    for case in cases {
        let targets = std::fs::read_to_string(case.join("targets")).unwrap();
        for target in targets.lines().filter(|l| !l.trim().is_empty()) {
            let what = format!("{}: {target}", case.file_name().unwrap().to_string_lossy());
            let stored = std::fs::read_to_string(
                case.join("expected")
                    .join(format!("{}.yaml", target.replace('/', "_"))),
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            let expected = crate::yaml::from_multi_str(&stored).unwrap();
            let ours = values(
                render(&case.join("tree"), Path::new(target))
                    .unwrap_or_else(|e| panic!("{what}: {e}")),
            );
            assert_same(&ours, &expected, &what);
            if live {
                let now = kubectl_kustomize(&case.join("tree").join(target))
                    .unwrap_or_else(|e| panic!("{what}: kubectl failed: {e}"));
                assert_same(&now, &expected, &format!("{what} (stored output is stale)"));
            }
        }
    }
}
