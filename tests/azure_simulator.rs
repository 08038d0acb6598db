//! The Azure simulator on any API server, as separate processes: `aro-gitops crds` installs every
//! CRD with `kubectl apply --server-side`, `aro-gitops azure-simulator --kubeconfig` plays ASO and
//! the ARO service there, and `aro-gitops run --kubeconfig --use-azure-simulator` finds it and
//! sends its Azure requests (Entra ID, Key Vault) to it. Without the flag no simulator endpoint
//! is contacted. SIGTERM stops the simulator and it exits 0.
//!
//! The API server is `control-plane serve --no-preload-crds` here; [`converges_with_the_simulator`]
//! takes any kubeconfig, so the same checks run on a real kube-apiserver.

mod common;

use common::fleet::{Fleet, Output};
use common::kubectl::{Kubectl, Server};
use common::simulator::Simulator;
use serde_json::Value;
use std::path::Path;

const SIM_CRD: &str = "simulatedazureresources.azuresim.aro-gitops.dev";
const UNITS: [&str; 2] = ["clusters/dev", "clusters/prod"];

/// `aro-gitops crds | kubectl apply --server-side -f -`, then every CRD is established.
fn install_crds(kubectl: &Kubectl) {
    let crds = common::fleet::aro_gitops_in(Path::new("."), &["crds"]);
    assert_eq!(crds.code, 0, "{}", crds.all());
    assert!(crds.stdout.contains(SIM_CRD), "{}", crds.stdout);
    let applied = kubectl.run_stdin(&["apply", "--server-side", "-f", "-"], &crds.stdout);
    assert_eq!(
        applied.code, 0,
        "kubectl apply --server-side:\n{}{}",
        applied.stdout, applied.stderr
    );
    let names = crds
        .stdout
        .matches("kind: CustomResourceDefinition")
        .count();
    assert!(names >= 18, "{names} CRDs");
    kubectl.ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        &format!("crd/{SIM_CRD}"),
    ]);
}

/// "requests to the cluster: N reads, M writes" of a run's stdout.
fn writes(out: &Output) -> u64 {
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("requests to the cluster: "))
        .unwrap_or_else(|| panic!("no request counts:\n{}", out.all()));
    let writes = line.split_once(", ").expect("reads, writes").1;
    writes
        .trim_end_matches(" writes")
        .parse()
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The report of `unit` on the fleet's status branch.
fn report(fleet: &Fleet, unit: &str) -> String {
    let name = unit.rsplit('/').next().expect("a name");
    fleet
        .report(&format!("reports/aro-{name}/{name}.yaml"))
        .unwrap_or_default()
}

fn run(fleet: &Fleet, kubeconfig: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--once",
        "--kubeconfig",
        kubeconfig.to_str().expect("UTF-8"),
    ];
    args.extend_from_slice(extra);
    fleet.aro_gitops(&args)
}

/// The simulator's summary of the Azure requests it served, from its last line.
fn served(out: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("azure simulator: stopped; azure: "))
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let numbers: Vec<u64> = line
        .split(' ')
        .filter_map(|w| w.trim_end_matches(',').parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

/// On the API server of `kubeconfig` (the CRDs installed, nothing else there): the example fleet
/// converges with the simulator, a rerun writes nothing, and without the flag the simulator is
/// never contacted.
fn converges_with_the_simulator(kubectl: &Kubectl) {
    let kubeconfig = kubectl.kubeconfig.clone();
    let fleet = Fleet::plain();

    // The flag and no simulator: an error saying how to start one.
    let none = run(&fleet, &kubeconfig, &["--use-azure-simulator"]);
    assert_ne!(none.code, 0, "{}", none.all());
    assert!(
        none.stderr
            .contains("no Azure simulator runs against this API server")
            && none
                .stderr
                .contains("aro-gitops azure-simulator --kubeconfig"),
        "{}",
        none.all()
    );

    // Without the flag, a simulator running there is never contacted: Azure is real (and out
    // of reach here), the reports say so.
    let (sim, _) = Simulator::start(&kubeconfig);
    let real = run(&fleet, &kubeconfig, &["--timeout", "20s"]);
    let out = sim.terminate();
    assert_eq!(served(&out), (0, 0), "{out}\n{}", real.all());
    assert!(
        report(&fleet, UNITS[0]).contains("azure: real"),
        "{}",
        real.all()
    );

    // With it: both clusters converge, prod's key made through the simulator's Key Vault.
    let (sim, addr) = Simulator::start(&kubeconfig);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let first = run(
        &fleet,
        &kubeconfig,
        &["--use-azure-simulator", "--timeout", "120s"],
    );
    assert_eq!(first.code, 0, "the run did not converge:\n{}", first.all());
    for unit in UNITS {
        let row = first
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{unit} ")))
            .unwrap_or_else(|| panic!("{unit} in the summary:\n{}", first.all()));
        assert!(row.contains(" Converged "), "{row}\n{}", first.all());
        let yaml = report(&fleet, unit);
        assert!(yaml.contains("azure: simulated"), "{yaml}");
    }
    let hcps = kubectl
        .get_json(&[
            "hcpopenshiftclusters.redhatopenshift.azure.com",
            "-n",
            "aro-prod",
        ])
        .expect("listed");
    let version = hcps["items"][0]
        .pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("prod's key version is injected: {hcps}"));
    assert_eq!(version.len(), 32, "{version}");
    // The simulator wrote ASO's status there, and recorded the resources in its inventory.
    let groups = kubectl
        .get_json(&["resourcegroups.resources.azure.com", "-n", "aro-dev"])
        .expect("listed");
    assert_eq!(
        groups["items"][0].pointer("/status/conditions/0/status"),
        Some(&Value::from("True")),
        "{groups}"
    );
    let records = kubectl
        .get_json(&[SIM_CRD, "-n", "aro-gitops-azure-simulator"])
        .expect("listed");
    assert!(!records["items"].as_array().expect("items").is_empty());

    // A rerun: nothing written.
    let second = run(
        &fleet,
        &kubeconfig,
        &["--use-azure-simulator", "--timeout", "120s"],
    );
    assert_eq!(second.code, 0, "{}", second.all());
    assert_eq!(writes(&second), 0, "{}", second.all());

    let out = sim.terminate();
    let (token, key_vault) = served(&out);
    assert!(token >= 1 && key_vault >= 2, "{out}");
    // Withdrawn: agents no longer find it.
    let gone = run(&fleet, &kubeconfig, &["--use-azure-simulator"]);
    assert_ne!(gone.code, 0, "{}", gone.all());
    assert!(
        gone.stderr.contains("no Azure simulator runs"),
        "{}",
        gone.all()
    );
}

#[test]
fn the_simulator_on_a_served_control_plane_converges_the_example_fleet() {
    let server = Server::start_with_args(&["--no-preload-crds"]);
    let kubectl = server.kubectl();
    // Its own CRD missing: it refuses to start, naming it.
    let (code, out) = Simulator::spawn(&server.kubeconfig).wait_exit();
    assert_ne!(code, Some(0), "{out}");
    assert!(
        out.contains(SIM_CRD) && out.contains("aro-gitops crds"),
        "{out}"
    );
    install_crds(&kubectl);
    converges_with_the_simulator(&kubectl);
}

#[test]
fn with_the_embedded_control_plane_the_flag_changes_nothing() {
    let fleet = Fleet::plain();
    let out = fleet.aro_gitops(&[
        "run",
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "120s",
        "--use-azure-simulator",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.contains("(simulated)"),
        "the embedded simulator served the Azure requests:\n{}",
        out.all()
    );
}
