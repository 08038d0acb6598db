//! Snapshot tests of the three renderings, the JSON schema, exit codes and the comment size limit.
//!
//! Expected outputs live in `snapshots/`; run with `UPDATE_SNAPSHOTS=1` to rewrite them after a
//! deliberate change, then read the diff.

use super::*;
use serde_json::Value;
use std::path::PathBuf;

#[path = "preview_limit_tests.rs"]
mod limit;
#[path = "preview_rollout_tests.rs"]
mod rollout;

const BASE_COMMIT: &str = "3f9c2d7e1a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9";
const HEAD_COMMIT: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
const ALLOW: &str = "deletes the Azure resource; allow with --allow-deletion or the annotation \
                     aro-gitops.dev/allow-deletion=true";

fn preview(against: Against, clusters: Vec<ClusterPreview>) -> Preview {
    let (base, against_description) = match against {
        Against::Live => (
            None,
            "the management cluster of kubeconfig context aro-mgmt",
        ),
        Against::Base => (
            Some(Revision {
                reference: "main".into(),
                commit: BASE_COMMIT.into(),
            }),
            "the render of main at 3f9c2d7e1a4b (no cluster reachable)",
        ),
    };
    Preview {
        format_version: FORMAT_VERSION,
        repo: "https://github.com/contoso/aro-fleet.git".into(),
        base,
        head: Revision {
            reference: "refs/pull/42/head".into(),
            commit: HEAD_COMMIT.into(),
        },
        against,
        against_description: against_description.into(),
        notices: vec![],
        clusters,
        errors: Vec::new(),
        rollout: None,
    }
}

fn cluster(name: &str, counts: Counts) -> ClusterPreview {
    ClusterPreview {
        unit: format!("clusters/{name}"),
        cluster: Some(format!("aro-{name}/{name}")),
        counts,
        changes: Vec::new(),
        blocked_deletions: Vec::new(),
        adopted: Vec::new(),
        policy_effects: Vec::new(),
        pending_values: Vec::new(),
        errors: Vec::new(),
    }
}

fn counts(create: usize, update: usize, delete: usize, unchanged: usize) -> Counts {
    Counts {
        create,
        update,
        delete,
        unchanged,
        ..Counts::default()
    }
}

fn object(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    }
}

fn control_plane(c: &str) -> ObjectRef {
    object(
        "controlplane.cluster.x-k8s.io/v1beta2",
        "AROControlPlane",
        &format!("aro-{c}"),
        c,
    )
}

fn machine_pool(c: &str, pool: &str) -> ObjectRef {
    let name = format!("{c}-{pool}");
    object(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROMachinePool",
        &format!("aro-{c}"),
        &name,
    )
}

fn node_pool(c: &str, pool: &str) -> ObjectRef {
    let (api, ns) = (
        "redhatopenshift.azure.com/v1api20240610preview",
        format!("aro-{c}"),
    );
    object(
        api,
        "HcpOpenShiftClustersNodePool",
        &ns,
        &format!("aro-{c}-{pool}"),
    )
}

fn resource_group(c: &str) -> ObjectRef {
    let ns = format!("aro-{c}");
    object(
        "resources.azure.com/v1api20200601",
        "ResourceGroup",
        &ns,
        &format!("aro-{c}-rg"),
    )
}

fn secret(c: &str, name: &str) -> ObjectRef {
    object("v1", "Secret", &format!("aro-{c}"), name)
}

/// A change whose diff goes from `old` (on the `side` it was compared with) to `new`, as the plan
/// writes it.
fn change(o: ObjectRef, action: ChangeAction, side: &str, old: &str, new: &str) -> Change {
    let diff = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{side}/{o}"), &format!("desired/{o}"))
        .to_string();
    let secret = o.kind == "Secret";
    Change {
        object: o,
        action,
        diff,
        secret,
        detach: false,
    }
}

fn meta(o: &ObjectRef) -> String {
    format!(
        "apiVersion: {}\nkind: {}\nmetadata:\n  name: {}\n  namespace: {}\n",
        o.api_version,
        o.kind,
        o.name,
        o.namespace.as_deref().unwrap_or_default()
    )
}

fn resource_group_yaml(c: &str) -> String {
    let o = resource_group(c);
    format!(
        "{}spec:\n  azureName: {}\n  location: westeurope\n",
        meta(&o),
        o.name
    )
}

fn control_plane_yaml(c: &str) -> String {
    format!(
        "{}spec:\n  subscriptionID: 8f1c2a34-5b6d-4e7f-9a0b-1c2d3e4f5a60\n  azureEnvironment: \
         AzurePublicCloud\n  resources:\n  - apiVersion: redhatopenshift.azure.com/v1api20240610preview\n    \
         kind: HcpOpenShiftCluster\n    metadata:\n      name: aro-{c}\n    spec:\n      azureName: aro-{c}\n      \
         owner:\n        name: aro-{c}-rg\n      location: westeurope\n      properties:\n        version:\n          \
         id: '4.20'\n          channelGroup: stable\n        network:\n          networkType: OVNKubernetes\n          \
         machineCidr: 10.20.0.0/16\n        platform:\n          managedResourceGroup: aro-{c}-managed-rg\n          \
         outboundType: LoadBalancer\n",
        meta(&control_plane(c))
    )
}

fn machine_pool_yaml(c: &str, pool: &str, vm_size: &str) -> String {
    format!(
        "{}spec:\n  resources:\n  - apiVersion: redhatopenshift.azure.com/v1api20240610preview\n    \
         kind: HcpOpenShiftClustersNodePool\n    metadata:\n      name: aro-{c}-{pool}\n    spec:\n      \
         azureName: {c}-{pool}\n      owner:\n        name: aro-{c}\n      properties:\n        version:\n          \
         id: '4.20'\n          channelGroup: stable\n        platform:\n          vmSize: {vm_size}\n          \
         osDisk:\n            sizeGiB: 128\n            diskStorageAccountType: Premium_LRS\n        \
         autoRepair: true\n        autoScaling:\n          min: 1\n          max: 2\n",
        meta(&machine_pool(c, pool))
    )
}

fn node_pool_yaml(c: &str, pool: &str) -> String {
    format!(
        "{}spec:\n  azureName: {c}-{pool}\n  owner:\n    name: aro-{c}\n  properties:\n    platform:\n      \
         vmSize: Standard_D4s_v3\n    replicas: 1\n",
        meta(&node_pool(c, pool))
    )
}

fn secret_yaml(c: &str, name: &str, values: &[(&str, &str)]) -> String {
    let mut s = format!("{}type: Opaque\ndata:\n", meta(&secret(c, name)));
    for (k, v) in values {
        s.push_str(&format!("  {k}: {v}\n"));
    }
    s
}

fn update_vm_size(c: &str) -> Change {
    let (old, new) = (
        machine_pool_yaml(c, "workers", "Standard_D4s_v3"),
        machine_pool_yaml(c, "workers", "Standard_D8s_v3"),
    );
    change(
        machine_pool(c, "workers"),
        ChangeAction::Update,
        "live",
        &old,
        &new,
    )
}

fn creates(c: &str, side: &str) -> Vec<Change> {
    use ChangeAction::Create;
    let entra = [("clientSecret", "(value hidden, added)")];
    vec![
        change(resource_group(c), Create, side, "", &resource_group_yaml(c)),
        change(
            secret(c, &format!("{c}-entra-client")),
            Create,
            side,
            "",
            &secret_yaml(c, &format!("{c}-entra-client"), &entra),
        ),
        change(control_plane(c), Create, side, "", &control_plane_yaml(c)),
        change(
            machine_pool(c, "workers"),
            Create,
            side,
            "",
            &machine_pool_yaml(c, "workers", "Standard_D4s_v3"),
        ),
        change(
            machine_pool(c, "infra"),
            Create,
            side,
            "",
            &machine_pool_yaml(c, "infra", "Standard_D4s_v3"),
        ),
    ]
}

fn blocked_infra(c: &str) -> BlockedDeletion {
    BlockedDeletion {
        object: machine_pool(c, "infra"),
        reason: ALLOW.into(),
    }
}

fn delete_infra(c: &str) -> Change {
    let old = machine_pool_yaml(c, "infra", "Standard_D4s_v3");
    change(
        machine_pool(c, "infra"),
        ChangeAction::Delete,
        "live",
        &old,
        "",
    )
}

/// The previews every rendering is checked against, by snapshot name.
fn fixtures() -> Vec<(&'static str, Preview)> {
    let mut out = Vec::new();

    let mut staging = cluster("staging", counts(5, 0, 0, 0));
    staging.changes = creates("staging", "live");
    out.push(("create_cluster", preview(Against::Live, vec![staging])));

    let mut dev = cluster("dev", counts(0, 1, 0, 11));
    dev.changes = vec![update_vm_size("dev")];
    out.push(("node_pool_vm_size", preview(Against::Live, vec![dev])));

    let mut dev = cluster(
        "dev",
        Counts {
            blocked: 1,
            ..counts(0, 0, 0, 11)
        },
    );
    dev.blocked_deletions = vec![blocked_infra("dev")];
    out.push(("removal_blocked", preview(Against::Live, vec![dev])));

    let mut dev = cluster("dev", counts(0, 0, 1, 11));
    dev.changes = vec![delete_infra("dev")];
    out.push(("removal_with_consent", preview(Against::Live, vec![dev])));

    let mut prod = cluster(
        "prod",
        Counts {
            adopted: 1,
            ..counts(0, 1, 0, 11)
        },
    );
    let rg = resource_group_yaml("prod");
    let tagged = format!("{rg}  tags:\n    owner: platform-team\n");
    prod.changes = vec![change(
        resource_group("prod"),
        ChangeAction::Update,
        "live",
        &rg,
        &tagged,
    )];
    prod.adopted = vec![Adoption {
        object: resource_group("prod"),
        reason: "live and not created by aro-gitops".into(),
    }];
    out.push(("adopted", preview(Against::Live, vec![prod])));

    let mut dev = cluster("dev", counts(0, 0, 1, 11));
    let mut detached = change(
        node_pool("dev", "infra"),
        ChangeAction::Delete,
        "live",
        &node_pool_yaml("dev", "infra"),
        "",
    );
    detached.detach = true;
    dev.changes = vec![detached];
    dev.policy_effects = vec![PolicyEffect {
        object: node_pool("dev", "infra"),
        policy: "detach-on-delete".into(),
        effect: "deleted from Kubernetes only: the Azure node pool is kept and no longer managed"
            .into(),
    }];
    out.push(("detach_on_delete", preview(Against::Live, vec![dev])));

    let mut broken = cluster("broken", Counts::default());
    broken.errors = vec![
        Problem {
            file: Some("clusters/broken/cluster-params.yaml".into()),
            object: Some(control_plane("broken")),
            message: "spec.resources[0].spec.properties.version.id: \"4.99\" is not a supported \
                      version (4.19, 4.20)"
                .into(),
            ..Default::default()
        },
        Problem {
            file: Some("base/cluster/machinepools.yaml".into()),
            object: Some(machine_pool("broken", "workers")),
            message:
                "spec.resources[0].spec.properties.autoScaling: min (3) is greater than max (2)"
                    .into(),
            ..Default::default()
        },
    ];
    let dev = cluster("dev", counts(0, 0, 0, 12));
    out.push((
        "validation_errors",
        preview(Against::Base, vec![broken, dev]),
    ));

    let clusters = vec![
        cluster("dev", counts(0, 0, 0, 12)),
        cluster("prod", counts(0, 0, 0, 12)),
    ];
    out.push(("no_change", preview(Against::Live, clusters)));

    let mut dev = cluster("dev", counts(0, 1, 0, 11));
    let name = "dev-entra-client";
    let old = secret_yaml(
        "dev",
        name,
        &[
            ("clientSecret", "(value hidden, before change)"),
            ("tenantID", "(value hidden, unchanged)"),
        ],
    );
    let new = secret_yaml(
        "dev",
        name,
        &[
            ("clientSecret", "(value hidden, changed)"),
            ("tenantID", "(value hidden, unchanged)"),
        ],
    );
    dev.changes = vec![change(
        secret("dev", name),
        ChangeAction::Update,
        "live",
        &old,
        &new,
    )];
    out.push(("secret_change", preview(Against::Live, vec![dev])));

    out.push(("pull_request", pull_request()));
    out.push(("escaping", escaping()));
    out
}

/// A pull request touching several clusters, compared with the base revision.
fn pull_request() -> Preview {
    let mut dev = cluster(
        "dev",
        Counts {
            blocked: 1,
            ..counts(0, 1, 0, 11)
        },
    );
    let mut vm = update_vm_size("dev");
    vm.diff = vm.diff.replace("live/", "base/");
    dev.changes = vec![vm];
    dev.blocked_deletions = vec![blocked_infra("dev")];
    let mut staging = cluster("staging", counts(3, 0, 1, 2));
    staging.changes = creates("staging", "base").into_iter().skip(2).collect();
    let old = node_pool_yaml("staging", "spot");
    staging.changes.push(change(
        node_pool("staging", "spot"),
        ChangeAction::Delete,
        "base",
        &old,
        "",
    ));
    let prod = cluster("prod", counts(0, 0, 0, 12));
    preview(Against::Base, vec![dev, staging, prod])
}

/// User data that Markdown, HTML or a terminal would otherwise interpret.
fn escaping() -> Preview {
    let mut odd = cluster("<odd>&co", Counts::default());
    odd.cluster = Some("aro-odd/a|b".into());
    let o = object("v1", "ConfigMap", "aro-odd", "notes`1`|x");
    odd.errors = vec![Problem {
        file: Some("clusters/odd/`weird`|name.yaml".into()),
        object: Some(o.clone()),
        message: "<script>alert(1)</script> & *not bold* | $x$ [link](http://x) _u_ \\ #1\nsecond \
                  line \x1b[31mred\x1b[0m"
            .into(),
        ..Default::default()
    }];
    let mut fences = cluster("fences", counts(0, 1, 0, 0));
    let (old, new) = (
        "data:\n  readme: \"```\"\n",
        "data:\n  readme: \"````yaml\"\n",
    );
    fences.changes = vec![change(o, ChangeAction::Update, "live", old, new)];
    let mut p = preview(Against::Live, vec![odd, fences]);
    p.against_description = "context `mgmt` <admin> & co".into();
    p.errors = vec![Problem {
        file: None,
        object: None,
        message: "units.yaml: </details> is not a unit".into(),
        ..Default::default()
    }];
    p
}

/// Compares `actual` with `snapshots/<name>`, or writes it when `UPDATE_SNAPSHOTS=1`.
fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/plan/preview/snapshots")
        .join(name);
    if std::env::var("UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_SNAPSHOTS=1 to write it",
            path.display()
        )
    });
    assert_eq!(
        actual,
        expected,
        "{} differs (UPDATE_SNAPSHOTS=1 rewrites it)",
        path.display()
    );
}

#[test]
fn renderings_match_snapshots() {
    for (name, p) in fixtures() {
        snapshot(&format!("{name}.md"), &markdown(&p));
        snapshot(&format!("{name}.txt"), &text(&p, false));
        snapshot(&format!("{name}.json"), &json(&p));
    }
    snapshot("pull_request.color.txt", &text(&pull_request(), true));
}

#[test]
fn exit_codes_follow_terraform_detailed_exitcode() {
    let codes: Vec<(&str, u8)> = fixtures()
        .iter()
        .map(|(n, p)| (*n, p.exit_code()))
        .collect();
    let expect = |name: &str| codes.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(expect("no_change"), 0);
    assert_eq!(
        expect("removal_blocked"),
        0,
        "a blocked deletion changes nothing"
    );
    for changed in [
        "create_cluster",
        "node_pool_vm_size",
        "removal_with_consent",
        "adopted",
        "detach_on_delete",
        "secret_change",
        "pull_request",
    ] {
        assert_eq!(expect(changed), 2, "{changed}");
    }
    assert_eq!(expect("validation_errors"), 1);
    assert_eq!(expect("escaping"), 1);
    let mut global = preview(Against::Live, vec![cluster("dev", counts(1, 0, 0, 0))]);
    global.errors.push(Problem {
        file: None,
        object: None,
        message: "cannot read units".into(),
        ..Default::default()
    });
    assert_eq!(global.exit_code(), 1, "errors win over changes");
}

fn plan_schema() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../../schemas/plan.schema.json")).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        schema["$id"],
        "https://aro-gitops.dev/schemas/plan.schema.json"
    );
    if let Err(e) = jsonschema::meta::validate(&schema) {
        panic!("plan.schema.json is not a valid schema: {e}");
    }
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn json_of_every_fixture_matches_the_schema() {
    let schema = plan_schema();
    let mut previews = fixtures();
    previews.push(("huge", limit::huge(30, 2_000)));
    for (name, p) in previews {
        let out = json(&p);
        assert!(out.ends_with("}\n"), "{name}");
        let instance: Value = serde_json::from_str(&out).unwrap();
        let errors: Vec<String> = schema
            .iter_errors(&instance)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn schema_rejects_what_the_model_cannot_say() {
    let schema = plan_schema();
    let good: Value = serde_json::from_str(&json(&pull_request())).unwrap();
    assert!(schema.is_valid(&good));
    let broken: [(&str, Value); 5] = [
        ("/clusters/0/changes/0/action", "replace".into()),
        ("/against", "cluster".into()),
        ("/clusters/0/counts/create", (-1).into()),
        ("/head/commit", "HEAD".into()),
        ("/clusters/0/colour", "red".into()),
    ];
    for (pointer, value) in broken {
        let mut bad = good.clone();
        let (parent, field) = pointer.rsplit_once('/').unwrap();
        bad.pointer_mut(parent).unwrap()[field] = value;
        assert!(!schema.is_valid(&bad), "{pointer} should be rejected");
    }
    let mut no_counts = good.clone();
    no_counts["clusters"][0]
        .as_object_mut()
        .unwrap()
        .remove("counts");
    assert!(!schema.is_valid(&no_counts));
}

#[test]
fn preview_round_trips_through_json() {
    for (name, p) in fixtures() {
        let back: Preview = serde_json::from_str(&json(&p)).unwrap();
        assert_eq!(back, p, "{name}");
    }
}

#[test]
fn text_has_escape_codes_only_with_color() {
    for (name, p) in fixtures() {
        assert!(!text(&p, false).contains('\x1b'), "{name}");
    }
    let colored = text(&pull_request(), true);
    for code in ["\x1b[32m+", "\x1b[31m-", "\x1b[36m@@"] {
        assert!(colored.contains(code), "{code:?} missing");
    }
    // User data cannot smuggle escapes into a coloured plan either.
    let colored = text(&escaping(), true);
    assert!(!colored.contains("\x1b[31mred"));
    assert!(colored.contains("\\u{1b}[31mred"));
}
