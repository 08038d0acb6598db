//! `aro-gitops-fleetgen`: writes a synthetic fleet of N ARO HCP clusters shaped like `examples-repo/`, for
//! benchmarking the renderer. Deterministic: the same `--clusters` and `--seed` give the same bytes.
//!
//! Default layout (real kustomize features):
//! - `base/`: the shared AzureClusterIdentity and AutoNodePolicy;
//! - `cluster-template/`: one cluster's objects under placeholder names (`cluster`, `aro-cluster-*`), with
//!   `labels` and `commonAnnotations`;
//! - `components/{dev,staging,prod}/`: kustomize Components: an `environment` label, a JSON 6902 patch
//!   of the control plane (channel group, API visibility) and strategic-merge patches of the node pools and replicas;
//! - `clusters/<name>/`: one overlay per cluster: `namespace`, the three bases, its environment's
//!   component, a `labels` entry, a `configMapGenerator`, a strategic-merge patch (annotations) and JSON
//!   6902 patches that rename every object and set the cluster's Azure names, subscription, region
//!   and network.
//!
//! With `--plain`, every cluster folder instead holds its objects written out and a kustomization using
//! only `resources` and `namespace` (what render v0 takes), like `examples-repo/` itself.
//!
//! Each cluster's subscription and identity are its AROControlPlane's (`subscriptionID`,
//! `identityRef`; CAPZ's AROCluster has neither): by default the `aro-identity` of the cluster's
//! namespace, with platform-managed etcd encryption.
//!
//! With `--identities N`, the clusters' AROControlPlanes name N shared ServicePrincipal identities
//! round-robin (unit `clusters/_identities`); their fake Secrets go to `secrets/`, outside every
//! unit and git (see `identities`). `--kms` (with `--identities`) leaves every cluster's etcd
//! encryption key to the agent: KMS names the cluster's own Vault and no key version.
//!
//! `--pull-secret` gives each cluster one Secret, SOPS-encrypted with `--sops-recipient` (see
//! `pull_secret`): the decryption benchmark's fleet.

mod identities;
mod objects;
mod pull_secret;

use anyhow::{Context, bail};
use clap::Parser;
use objects::{PROFILES, Profile, Spec};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Debug, Parser)]
#[command(
    name = "aro-gitops-fleetgen",
    about = "Write a synthetic, deterministic fleet of ARO HCP cluster overlays for render benchmarks"
)]
struct Args {
    /// Number of clusters.
    #[arg(long, default_value_t = 1000)]
    clusters: usize,
    /// Output folder (created; must be empty or absent).
    #[arg(long)]
    out: PathBuf,
    /// Seed of the generator: subscriptions, regions, environments and teams derive from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Only `resources` and `namespace` in the kustomizations (objects written out per cluster).
    #[arg(long)]
    plain: bool,
    /// N shared ServicePrincipal identities (unit `clusters/_identities`, namespace
    /// `aro-identities`), used round-robin by the clusters' AROControlPlanes, each allowing exactly
    /// its clusters' namespaces; their Secrets (fake values) go to `secrets/`, outside every unit
    /// and git: apply them to the control plane before `run`. 0: each cluster's own workload
    /// identity.
    #[arg(long, default_value_t = 0)]
    identities: usize,
    /// Customer-managed etcd encryption whose key the agent makes, on every cluster: each
    /// cluster's HcpOpenShiftCluster names the Key Vault its AROCluster declares (one vault per
    /// cluster, in its resource group) and no key version; the agent gets or creates the key
    /// through the cluster's identity. Needs `--identities`. Without it, platform-managed
    /// encryption.
    #[arg(long)]
    kms: bool,
    /// Each cluster carries one Secret (`pull-secret.yaml`, a fake value of its own), in plain
    /// text; see `--sops-recipient`.
    #[arg(long)]
    pull_secret: bool,
    /// With `--pull-secret`: the Secret is SOPS-encrypted for this age recipient (`age1...`).
    #[arg(long, requires = "pull_secret", value_name = "RECIPIENT")]
    sops_recipient: Option<String>,
}

/// The placeholder profile of `cluster-template/` (no environment's values, so every component patches).
const TEMPLATE_PROFILE: Profile = Profile {
    env: "template",
    label: "template",
    channel: "stable",
    visibility: "Public",
    workers_vm: "Standard_D4s_v3",
    workers_min: 1,
    workers_max: 2,
    infra_vm: "Standard_D4s_v3",
    infra_replicas: 1,
    zone: None,
};

const LOCATIONS: [&str; 8] = [
    "eastus",
    "eastus2",
    "westus3",
    "westeurope",
    "northeurope",
    "uksouth",
    "australiaeast",
    "japaneast",
];

/// SplitMix64: a tiny deterministic generator (no dependency, same sequence everywhere).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn hex(&mut self, digits: usize) -> String {
        let mut s = String::with_capacity(digits);
        while s.len() < digits {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(digits);
        s
    }

    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )
    }
}

fn specs(n: usize, seed: u64, identities: usize, kms: bool) -> Vec<Spec> {
    let mut rng = Rng(seed);
    (1..=n)
        .map(|i| {
            // 20% dev, 30% staging, 50% prod.
            let profile = match rng.below(10) {
                0..=1 => PROFILES[0],
                2..=4 => PROFILES[1],
                _ => PROFILES[2],
            };
            Spec {
                name: format!("c{i:05}"),
                profile,
                subscription: rng.uuid(),
                location: LOCATIONS[rng.below(LOCATIONS.len() as u64) as usize],
                cidr: (((i >> 8) & 0xff) as u8, (i & 0xff) as u8),
                team: {
                    // Once a key version: still drawn, so that a seed gives the fleet it gave.
                    rng.hex(32);
                    format!("team-{:02}", rng.below(40))
                },
                identity: (identities > 0).then(|| identities::name((i - 1) % identities)),
                agent_key: kms && identities > 0,
            }
        })
        .collect()
}

fn template_spec(profile: Profile) -> Spec {
    Spec {
        name: "cluster".into(),
        profile,
        subscription: "00000000-0000-4000-a000-000000000000".into(),
        location: "eastus",
        cidr: (0, 0),
        team: String::new(),
        identity: None,
        agent_key: false,
    }
}

pub(crate) struct Writer {
    root: PathBuf,
    files: usize,
    bytes: usize,
}

impl Writer {
    pub(crate) fn text(&mut self, rel: &str, text: &str) -> anyhow::Result<()> {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        self.files += 1;
        self.bytes += text.len();
        Ok(())
    }

    pub(crate) fn yaml(&mut self, rel: &str, docs: &[Value]) -> anyhow::Result<()> {
        self.text(rel, &aro_gitops::yaml::to_multi_string(docs))
    }
}

fn kustomization(fields: Value) -> Value {
    let mut k = json!({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"});
    if let (Value::Object(k), Value::Object(fields)) = (&mut k, fields) {
        k.extend(fields);
    }
    k
}

const TEMPLATE_FILES: [(&str, std::ops::Range<usize>); 4] = [
    ("cluster.yaml", 0..1),
    ("arocluster.yaml", 1..2),
    ("arocontrolplane.yaml", 2..3),
    ("machinepools.yaml", 3..7),
];

/// The objects of `cluster_objects` that the overlays patch by JSON 6902, with their file names.
const PATCHED: [(&str, usize); 7] = [
    ("cluster", 0),
    ("arocluster", 1),
    ("arocontrolplane", 2),
    ("machinepool-workers", 3),
    ("aromachinepool-workers", 4),
    ("machinepool-infra", 5),
    ("aromachinepool-infra", 6),
];

fn write_shared(w: &mut Writer) -> anyhow::Result<()> {
    let template = objects::cluster_objects(&template_spec(TEMPLATE_PROFILE));
    w.yaml(
        "base/kustomization.yaml",
        &[kustomization(
            json!({"resources": ["identity.yaml", "autonodepolicy.yaml"]}),
        )],
    )?;
    w.yaml(
        "base/identity.yaml",
        &[objects::identity(&["aro-cluster".into()])],
    )?;
    w.yaml("base/autonodepolicy.yaml", &[objects::auto_node_policy()])?;
    w.yaml(
        "cluster-template/kustomization.yaml",
        &[kustomization(json!({
            "resources": TEMPLATE_FILES.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
            "labels": [{"pairs": {"app.kubernetes.io/part-of": "aro-fleet"}}],
            "commonAnnotations": {"fleet.example.com/generated-by": "aro-gitops-fleetgen"}
        }))],
    )?;
    for (file, range) in TEMPLATE_FILES {
        w.yaml(&format!("cluster-template/{file}"), &template[range])?;
    }
    for profile in PROFILES {
        let env = objects::cluster_objects(&template_spec(profile));
        let dir = format!("components/{}", profile.env);
        let ops = objects::json6902_ops(&template[2], &env[2]);
        let smp = |kind: &str, name: &str, spec: Value| json!({"apiVersion": env_api(kind), "kind": kind, "metadata": {"name": name}, "spec": spec});
        w.yaml(
            &format!("{dir}/workers.yaml"),
            &[smp(
                "AROMachinePool",
                "cluster-workers",
                json!({"resources": env[4]["spec"]["resources"]}),
            )],
        )?;
        w.yaml(
            &format!("{dir}/infra.yaml"),
            &[smp(
                "AROMachinePool",
                "cluster-infra",
                json!({"resources": env[6]["spec"]["resources"]}),
            )],
        )?;
        w.yaml(
            &format!("{dir}/infra-replicas.yaml"),
            &[smp(
                "MachinePool",
                "cluster-infra",
                json!({"replicas": profile.infra_replicas}),
            )],
        )?;
        w.yaml(
            &format!("{dir}/kustomization.yaml"),
            &[json!({
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
                "labels": [{"pairs": {"environment": profile.label}}],
                "patches": [
                    {"target": {"group": "controlplane.cluster.x-k8s.io", "kind": "AROControlPlane"},
                     "patch": aro_gitops::yaml::to_string(&Value::Array(ops))},
                    {"path": "workers.yaml"},
                    {"path": "infra.yaml"},
                    {"path": "infra-replicas.yaml"}
                ]
            })],
        )?;
    }
    Ok(())
}

fn env_api(kind: &str) -> &'static str {
    match kind {
        "AROMachinePool" | "AROCluster" => "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROControlPlane" => "controlplane.cluster.x-k8s.io/v1beta2",
        _ => "cluster.x-k8s.io/v1beta2",
    }
}

fn settings_literals(s: &Spec) -> Vec<String> {
    vec![
        format!("clusterName={}", s.name),
        format!("environment={}", s.profile.label),
        format!("location={}", s.location),
        format!("subscriptionID={}", s.subscription),
        format!("team={}", s.team),
    ]
}

fn write_overlay(w: &mut Writer, s: &Spec, extra: &[&str]) -> anyhow::Result<()> {
    let dir = format!("clusters/{}", s.name);
    let mut resources = vec!["../../base", "../../cluster-template", "namespace.yaml"];
    resources.extend_from_slice(extra);
    let ns = format!("aro-{}", s.name);
    let from = objects::cluster_objects(&template_spec(s.profile));
    let to = objects::cluster_objects(s);
    w.yaml(
        &format!("{dir}/namespace.yaml"),
        &[objects::namespace(&ns, &s.profile)],
    )?;
    w.yaml(
        &format!("{dir}/patches/annotations.yaml"),
        &[json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "cluster", "annotations": {
                "fleet.example.com/owner-team": s.team, "fleet.example.com/location": s.location}}
        })],
    )?;
    let mut patches = vec![json!({"path": "patches/annotations.yaml"})];
    for (file, i) in PATCHED {
        let ops = objects::json6902_ops(&from[i], &to[i]);
        w.yaml(&format!("{dir}/patches/{file}.yaml"), &[Value::Array(ops)])?;
        let kind = from[i]["kind"].as_str().unwrap_or_default();
        let name = from[i]["metadata"]["name"].as_str().unwrap_or_default();
        patches.push(
            json!({"target": {"kind": kind, "name": name}, "path": format!("patches/{file}.yaml")}),
        );
    }
    patches.push(json!({
        "target": {"group": "infrastructure.cluster.x-k8s.io", "kind": "AzureClusterIdentity"},
        "patch": aro_gitops::yaml::to_string(&json!([
            {"op": "replace", "path": "/spec/allowedNamespaces/list", "value": [ns]}]))
    }));
    w.yaml(
        &format!("{dir}/kustomization.yaml"),
        &[kustomization(json!({
            "namespace": ns,
            "resources": resources,
            "components": [format!("../../components/{}", s.profile.env)],
            "labels": [{"pairs": {"fleet.example.com/cluster": s.name}}],
            "configMapGenerator": [{"name": "cluster-settings", "literals": settings_literals(s)}],
            "patches": patches
        }))],
    )
}

fn write_plain(w: &mut Writer, specs: &[Spec], extra: &[&str]) -> anyhow::Result<()> {
    w.yaml(
        "base/kustomization.yaml",
        &[kustomization(json!({"resources": ["autonodepolicy.yaml"]}))],
    )?;
    w.yaml("base/autonodepolicy.yaml", &[objects::auto_node_policy()])?;
    for s in specs {
        let dir = format!("clusters/{}", s.name);
        let ns = format!("aro-{}", s.name);
        let objs = objects::cluster_objects(s);
        let settings: serde_json::Map<String, Value> = settings_literals(s)
            .iter()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        w.yaml(
            &format!("{dir}/namespace.yaml"),
            &[objects::namespace(&ns, &s.profile)],
        )?;
        w.yaml(
            &format!("{dir}/identity.yaml"),
            &[objects::identity(std::slice::from_ref(&ns))],
        )?;
        w.yaml(
            &format!("{dir}/settings.yaml"),
            &[json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cluster-settings"}, "data": settings})],
        )?;
        let mut resources = vec![
            "../../base".to_string(),
            "namespace.yaml".into(),
            "identity.yaml".into(),
            "settings.yaml".into(),
        ];
        resources.extend(extra.iter().map(|f| f.to_string()));
        for (file, range) in TEMPLATE_FILES {
            w.yaml(&format!("{dir}/{file}"), &objs[range])?;
            resources.push(file.to_string());
        }
        w.yaml(
            &format!("{dir}/kustomization.yaml"),
            &[kustomization(
                json!({"namespace": ns, "resources": resources}),
            )],
        )?;
    }
    Ok(())
}

fn readme(args: &Args) -> String {
    format!(
        "# Synthetic ARO HCP fleet\n\nWritten by `aro-gitops-fleetgen --clusters {} --seed {}{}{}`: one overlay per \
         cluster under `clusters/`, each a unit the agent renders on its own. Regenerate instead of editing.\n",
        args.clusters,
        args.seed,
        if args.plain { " --plain" } else { "" },
        if args.identities > 0 {
            format!(" --identities {}", args.identities)
        } else {
            String::new()
        } + if args.kms { " --kms" } else { "" }
            + if args.pull_secret {
                " --pull-secret"
            } else {
                ""
            }
            + if args.sops_recipient.is_some() {
                " --sops-recipient ..."
            } else {
                ""
            }
    ) + &if args.identities > 0 {
        identities::readme_note(args.identities)
    } else {
        String::new()
    }
}

fn run(args: &Args) -> anyhow::Result<Writer> {
    if args.out.exists()
        && std::fs::read_dir(&args.out)
            .with_context(|| format!("reading {}", args.out.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{}: exists and is not empty; give a new or empty folder",
            args.out.display()
        );
    }
    let mut w = Writer {
        root: args.out.clone(),
        files: 0,
        bytes: 0,
    };
    if args.kms && args.identities == 0 {
        bail!(
            "--kms needs --identities N: the agent reaches each cluster's Key Vault through its identity"
        );
    }
    let specs = specs(args.clusters, args.seed, args.identities, args.kms);
    w.text("README.md", &readme(args))?;
    if args.identities > 0 {
        identities::write(&mut w, &specs, args.identities)?;
    }
    let extra: &[&str] = if args.pull_secret {
        for s in &specs {
            pull_secret::write(&mut w, s, args.sops_recipient.as_deref())?;
        }
        &[pull_secret::FILE]
    } else {
        &[]
    };
    if args.plain {
        write_plain(&mut w, &specs, extra)?;
    } else {
        write_shared(&mut w)?;
        for s in &specs {
            write_overlay(&mut w, s, extra)?;
        }
    }
    Ok(w)
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(w) => {
            println!(
                "{}: {} clusters, {} files, {:.1} MB",
                Path::new(&w.root).display(),
                args.clusters,
                w.files,
                w.bytes as f64 / 1e6
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_deterministic_and_distinct() {
        let a = specs(50, 7, 0, false);
        assert_eq!(a, specs(50, 7, 0, false));
        assert_ne!(a, specs(50, 8, 0, false));
        let mut names: Vec<_> = a.iter().map(|s| (&s.name, s.cidr)).collect();
        names.dedup();
        assert_eq!(names.len(), 50);
        assert!(a.iter().any(|s| s.profile.env == "dev"));
        assert!(a.iter().any(|s| s.profile.env == "prod"));
    }

    #[test]
    fn json6902_ops_turn_the_template_into_the_cluster() {
        let s = &specs(1, 1, 0, false)[0];
        let from = objects::cluster_objects(&template_spec(s.profile));
        let to = objects::cluster_objects(s);
        for (a, b) in from.iter().zip(&to) {
            let mut patched = a.clone();
            let ops = Value::Array(objects::json6902_ops(a, b));
            aro_gitops::machinery::patch::json_patch(&mut patched, &ops).unwrap();
            assert_eq!(&patched, b);
        }
    }
}
