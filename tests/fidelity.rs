//! Fidelity (issue 26, first part): the local control plane (`aro-gitops control-plane serve`)
//! measured against kube-apiserver v1.37.2, request by request.
//!
//! Every sequence of `tests/fidelity/corpus/` runs three times: twice on kube-apiserver (in two
//! namespaces) and once on the local control plane; each step's status, Content-Type, `Warning`
//! headers and body are compared after normalisation (see `fidelity/normalise.rs`). The test asserts that
//! - the harness is sound: kube-apiserver's two runs are identical for every sequence;
//! - `tests/fidelity/known-differences.yaml` is exactly the set of sequences where the local
//!   control plane differs (a new difference fails, and so does a fixed one still listed).
//!
//! It prints one line per sequence and the figure `fidelity: N of M sequences identical, K of L
//! steps`, and writes the full report to `$CARGO_TARGET_TMPDIR/fidelity-report.txt`.
//! See docs/fidelity.md.

mod common;
#[path = "fidelity/compare.rs"]
mod compare;
#[path = "fidelity/harness.rs"]
mod harness;
#[path = "fidelity/normalise.rs"]
mod normalise;
#[path = "fidelity/request.rs"]
mod request;

use common::kubectl::Server;
use common::real_cluster::{RealCluster, client_for};
use futures::StreamExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// A sequence slower than this is marked in the output.
const SLOW_SECONDS: f64 = 3.0;
/// How many sequences run at once.
const PARALLEL: usize = 6;

/// One sequence's normalised answers: kube-apiserver's two runs, local's run, and the seconds the
/// three took together.
type Runs = (Vec<Value>, Vec<Value>, Vec<Value>, f64);

fn fidelity_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fidelity")
}

/// Compacts etcd's history up to now, as kube-apiserver does every five minutes, so that a
/// resourceVersion from before the first sequence (a continue token at version 1, an exact list
/// at version 2) is expired on kube-apiserver as on a cluster that has run for a while. Done once,
/// before any sequence: every version a sequence reads afterwards is newer.
async fn compact_history(cluster: &RealCluster, kube: &kube::Client) {
    let ports = std::fs::read_to_string(cluster.dir().join("ports.env")).expect("ports.env");
    let port = ports
        .lines()
        .find_map(|l| l.strip_prefix("ETCD_PORT="))
        .expect("ETCD_PORT in ports.env");
    let now = request::send(
        kube,
        request::Outgoing {
            method: "GET",
            uri: "/api/v1/namespaces?limit=1",
            ..request::Outgoing::default()
        },
    )
    .await;
    let revision = now.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list's resourceVersion")
        .to_string();
    let body = serde_json::json!({"revision": revision, "physical": true}).to_string();
    let addr = format!("127.0.0.1:{port}");
    let (status, answer) = tokio::task::spawn_blocking(move || {
        common::http::post(&addr, "/v3/kv/compaction", &[], body.as_bytes())
    })
    .await
    .expect("the compaction request");
    assert_eq!(status, 200, "compact etcd at {revision}: {answer}");
}

/// The local control plane's equivalent of [`compact_history`]: its store compacts its history
/// (on kube-apiserver's five-minute schedule, and now when its admin asks, as here).
async fn compact_local_history(local: &kube::Client) {
    let answer = request::send(
        local,
        request::Outgoing {
            method: "POST",
            uri: "/debug/compact",
            ..request::Outgoing::default()
        },
    )
    .await;
    assert_eq!(
        answer.status, 200,
        "compact the local store: {:?}",
        answer.body
    );
}

/// `known-differences.yaml`: sequence name to a one-line reason.
fn known_differences() -> BTreeMap<String, String> {
    let file = fidelity_dir().join("known-differences.yaml");
    let text = std::fs::read_to_string(&file).expect("read known-differences.yaml");
    let value = aro_gitops::yaml::from_str(&text).expect("known-differences.yaml is YAML");
    match value {
        Value::Null => BTreeMap::new(),
        v => serde_json::from_value(v).expect("known-differences.yaml maps names to reasons"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_control_plane_answers_as_kube_apiserver_does() {
    let started = Instant::now();
    let corpus = harness::load_corpus(&fidelity_dir().join("corpus"));
    let known = known_differences();
    for name in known.keys() {
        assert!(
            corpus.iter().any(|s| &s.name == name),
            "known-differences.yaml names {name}, which is not in the corpus"
        );
    }
    let Some(cluster) = RealCluster::start() else {
        return;
    };
    let local = Server::start();
    let kube = client_for(&cluster.admin_kubeconfig()).await;
    let ours = client_for(&local.kubeconfig).await;
    for file in common::real_cluster::yaml_files(&fidelity_dir().join("crds")) {
        let text = std::fs::read_to_string(&file).expect("read a CRD");
        let crd = aro_gitops::yaml::from_str(&text).expect("the CRD is YAML");
        harness::install_crd(&kube, &crd).await;
        harness::install_crd(&ours, &crd).await;
    }

    compact_history(&cluster, &kube).await;
    compact_local_history(&ours).await;

    let mut report = String::new();
    let (mut same_seqs, mut same_steps, mut all_steps) = (0, 0, 0);
    let mut unsound = Vec::new();
    let mut differing = BTreeMap::new();
    // Sequences run a few at a time, and each one's three runs at once: every run has its own
    // namespace, and no sequence reads what another writes (cluster-scoped names carry the
    // run's namespace).
    let runs: Vec<Runs> = futures::stream::iter(&corpus)
        .map(|seq| async {
            let began = Instant::now();
            let (a, b, l) = tokio::join!(
                harness::run_sequence(&kube, seq, "a", true),
                harness::run_sequence(&kube, seq, "b", true),
                harness::run_sequence(&ours, seq, "l", false),
            );
            (a, b, l, began.elapsed().as_secs_f64())
        })
        .buffered(PARALLEL)
        .collect()
        .await;
    for (seq, (a, b, l, secs)) in corpus.iter().zip(runs) {
        if let (_, Some(d)) = compare::compare(&a, &b) {
            let line = format!(
                "{}: kube-apiserver differs from itself at step {}:\n    {}",
                seq.name,
                d.step,
                d.lines.join("\n    ")
            );
            writeln!(
                report,
                "UNSOUND {line}\n  first run:\n{}\n  second run:\n{}",
                serde_json::to_string_pretty(&a).unwrap(),
                serde_json::to_string_pretty(&b).unwrap()
            )
            .unwrap();
            unsound.push(line);
        }
        let (same, first) = compare::compare(&a, &l);
        same_steps += same;
        all_steps += seq.steps.len();
        let line = match &first {
            None => {
                same_seqs += 1;
                format!("{}: identical", seq.name)
            }
            Some(d) => {
                let step = &seq.steps[d.step - 1];
                let steps: Vec<String> = d.steps.iter().map(|s| s.to_string()).collect();
                format!(
                    "{}: differs at step {} of {} (differing: {}) ({} {}):\n    {}",
                    seq.name,
                    d.step,
                    seq.steps.len(),
                    steps.join(","),
                    step.method,
                    step.path,
                    d.lines.join("\n    ")
                )
            }
        };
        // A sequence that takes long waited for a watch event or a status that did not come.
        let line = if secs > SLOW_SECONDS {
            format!("{line}\n    (slow: {secs:.1} s)")
        } else {
            line
        };
        println!("{line}");
        writeln!(report, "{line}\n  ({})", seq.about).unwrap();
        if let Some(d) = first {
            for &i in d.steps.iter().skip(1) {
                let lines = compare::step_diff(&a[i - 1], &l[i - 1]);
                writeln!(report, "  step {i}:\n    {}", lines.join("\n    ")).unwrap();
            }
            differing.insert(seq.name.clone(), d);
            // The full answers of both servers, for the report file only.
            writeln!(
                report,
                "  kube-apiserver:\n{}\n  local:\n{}",
                serde_json::to_string_pretty(&a).unwrap(),
                serde_json::to_string_pretty(&l).unwrap()
            )
            .unwrap();
        }
    }
    let figure = format!(
        "fidelity: {same_seqs} of {} sequences identical, {same_steps} of {all_steps} steps ({:.1} s)",
        corpus.len(),
        started.elapsed().as_secs_f64()
    );
    println!("{figure}");
    writeln!(report, "{figure}").unwrap();
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fidelity-report.txt");
    std::fs::write(&out, &report).expect("write the report");
    println!("report: {}", out.display());

    assert!(
        unsound.is_empty(),
        "normalisation is unsound; kube-apiserver's two runs differ:\n{}",
        unsound.join("\n")
    );
    let new: Vec<&String> = differing
        .keys()
        .filter(|n| !known.contains_key(*n))
        .collect();
    let fixed: Vec<&String> = known
        .keys()
        .filter(|n| !differing.contains_key(*n))
        .collect();
    assert!(
        new.is_empty() && fixed.is_empty(),
        "known-differences.yaml is out of date: differing but not listed: {new:?}; listed but now identical: {fixed:?}"
    );
}
