//! Identities and Key Vault keys benchmark (issue 13, "How it is measured"): 200 clusters sharing 3
//! ServicePrincipal identities, each with customer-managed etcd encryption whose key the agent
//! makes (`aro-gitops-fleetgen --identities 3 --kms`), on the embedded control plane with the Azure
//! simulator (`run --once --sim-delay 0s`). Run with `cargo bench --bench identity` (options after
//! `--`: `--clusters N`, `--identities N`, `--workdir DIR` to keep the fleet and state, `--timeout D`).
//!
//! The identities' Secrets are not in git (fleetgen writes them to `secrets/`): they are applied
//! to the embedded store as a user would, serving it with `aro-gitops control-plane serve --state
//! <state>/control-plane` and `kubectl apply --server-side -f secrets/` against its kubeconfig,
//! then stopping the server (the store has one owner at a time).
//!
//! Three runs, each its own process under `/usr/bin/time -v` (wall time, peak RSS), the figures
//! read from the run's summary line `azure: N token requests, M key vault requests (simulated)`:
//! 1. first run: exactly one token request per identity (one token lifetime: the run is far
//!    shorter than the simulator's token lifetime), Key Vault requests ≤ 2 per cluster;
//! 2. no-op rerun: no Key Vault request (the versions are read back from the live clusters);
//! 3. one identity's Secret rotated live (in the control plane, as above), then a rerun: exactly 1
//!    new token request.
//!
//! Every figure is asserted: the bench panics, naming what was not met, after printing the table.

mod common;

use common::{
    ARO_GITOPS, azure_requests, generate_fleet_with, load_average, log_tail, mb, ms, run_measured,
};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Options {
    clusters: usize,
    identities: usize,
    workdir: Option<PathBuf>,
    timeout: String,
}

fn options() -> Options {
    let mut o = Options {
        clusters: 200,
        identities: 3,
        workdir: None,
        timeout: "20m".into(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--clusters" => o.clusters = it.next().and_then(|v| v.parse().ok()).unwrap_or(200),
            "--identities" => o.identities = it.next().and_then(|v| v.parse().ok()).unwrap_or(3),
            "--workdir" => o.workdir = it.next().map(PathBuf::from),
            "--timeout" => o.timeout = it.next().cloned().unwrap_or(o.timeout),
            _ => {} // `--bench` and the like from cargo
        }
    }
    o
}

/// Applies `file` to the embedded store in `store` the way a user would: `control-plane serve`
/// on it, `kubectl apply --server-side`, then the server stopped (Ctrl-C) so `run` can open it.
fn apply_to_store(store: &Path, file: &Path) {
    let kubeconfig = store.with_file_name("serve-kubeconfig");
    let mut serve = Command::new(ARO_GITOPS)
        .args(["--log", "warn", "control-plane", "serve", "--state"])
        .arg(store)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("control-plane serve starts");
    // Its output is read to the end (a closed pipe would stop it), the kubeconfig line awaited.
    let stdout = serve.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("kubeconfig: ") {
                let _ = tx.send(());
            }
        }
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_secs(120)).is_ok(),
        "control-plane serve did not start"
    );
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["apply", "--server-side", "-f"])
        .arg(file)
        .output()
        .expect("kubectl runs");
    let stopped = Command::new("kill")
        .args(["-INT", &serve.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    let exit = serve.wait().expect("control-plane serve ends");
    let _ = reader.join();
    assert!(
        out.status.success(),
        "kubectl apply -f {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stopped && exit.success(),
        "control-plane serve did not stop cleanly: {exit}"
    );
}

/// One measured `run --once`, and its figures.
struct Figures {
    name: &'static str,
    wall: std::time::Duration,
    rss_mb: Option<f64>,
    tokens: Option<u64>,
    key_vault: Option<u64>,
    code: Option<i32>,
    load: Option<f64>,
}

fn run_once(name: &'static str, repo: &Path, state: &Path, timeout: &str) -> Figures {
    let load = load_average();
    let (repo, state) = (repo.to_string_lossy(), state.to_string_lossy());
    let m = run_measured(
        ARO_GITOPS,
        &[
            "--log",
            "warn",
            "run",
            "--repo",
            &repo,
            "--state",
            &state,
            "--once",
            "--sim-delay",
            "0s",
            "--timeout",
            timeout,
        ],
        true,
    );
    let requests = azure_requests(&m.stdout);
    if m.code != Some(0) || requests.is_none() {
        eprintln!(
            "{name}: exit {:?}\n{}\n{}",
            m.code,
            m.stdout
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .join("\n"),
            log_tail(&m.stderr, 30)
        );
    }
    Figures {
        name,
        wall: m.wall,
        rss_mb: m.peak_rss_mb,
        tokens: requests.map(|r| r.0),
        key_vault: requests.map(|r| r.1),
        code: m.code,
        load,
    }
}

/// The rotated Secret of the first identity (a new fake value, as fleetgen writes them).
fn rotated_secret(dir: &Path) -> PathBuf {
    let path = dir.join("rotated-identity-secret.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Secret\ntype: Opaque\nmetadata:\n  name: aro-identity-01-secret\n  \
         namespace: aro-identities\nstringData:\n  clientSecret: FAKE-fleetgen-client-secret-01-rotated-not-a-real-credential\n",
    )
    .expect("write the rotated Secret");
    path
}

fn main() {
    let o = options();
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let work = o
        .workdir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&work).expect("the work directory");
    let (repo, state) = (work.join("fleet"), work.join("state"));
    let (n, ids) = (o.clusters, o.identities);
    generate_fleet_with(n, &["--identities", &ids.to_string(), "--kms"], &repo);
    let store = state.join("control-plane");
    std::fs::create_dir_all(&state).expect("the state directory");
    apply_to_store(&store, &repo.join("secrets"));

    let first = run_once("first run", &repo, &state, &o.timeout);
    let noop = run_once("no-op rerun", &repo, &state, &o.timeout);
    apply_to_store(&store, &rotated_secret(&work));
    let rotated = run_once(
        "rerun after one identity's Secret rotated",
        &repo,
        &state,
        &o.timeout,
    );

    println!(
        "\n`aro-gitops-fleetgen --clusters {n} --identities {ids} --kms`, `run --once --sim-delay 0s` (embedded)\n"
    );
    println!(
        "| run | wall | peak RSS | token requests | Key Vault requests | exit | load avg (1 min) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let o_ = |v: Option<u64>| v.map_or("n/a".into(), |v| v.to_string());
    for f in [&first, &noop, &rotated] {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            f.name,
            ms(f.wall),
            mb(f.rss_mb),
            o_(f.tokens),
            o_(f.key_vault),
            f.code.map_or("n/a".into(), |c| c.to_string()),
            f.load.map_or("n/a".into(), |l| format!("{l:.2}")),
        );
    }

    let mut missed = Vec::new();
    let mut check = |ok: bool, what: String| {
        println!("- {} {what}", if ok { "met:" } else { "NOT MET:" });
        if !ok {
            missed.push(what);
        }
    };
    for f in [&first, &noop, &rotated] {
        check(
            f.code == Some(0),
            format!("{}: exit code 0 (every unit converged)", f.name),
        );
    }
    let ids = ids as u64;
    check(
        first.tokens == Some(ids),
        format!(
            "first run: exactly {ids} token requests (got {})",
            o_(first.tokens)
        ),
    );
    check(
        first.key_vault.is_some_and(|k| k <= 2 * n as u64),
        format!(
            "first run: Key Vault requests ≤ 2 per cluster, {} (got {})",
            2 * n,
            o_(first.key_vault)
        ),
    );
    check(
        noop.key_vault == Some(0),
        format!(
            "no-op rerun: 0 Key Vault requests (got {})",
            o_(noop.key_vault)
        ),
    );
    check(
        noop.tokens == Some(0),
        format!("no-op rerun: 0 token requests (got {})", o_(noop.tokens)),
    );
    check(
        rotated.tokens == Some(1),
        format!(
            "after rotating one identity's Secret: exactly 1 token request (got {})",
            o_(rotated.tokens)
        ),
    );
    assert!(
        missed.is_empty(),
        "identity benchmark: not met: {missed:#?}"
    );
}
