//! Rollout decision benchmark (issue 29): the agent's own work in a fleet rollout, apart from the
//! time the clusters take to converge. A rollout of N clusters in 4 waves (by a label of the
//! Cluster, as `aro-gitops.yaml` declares them, with a deny window over one wave and
//! `maxUnavailable: 25%`) is walked step by step: each step is one `rollout::decide` over every
//! unit, as the controller takes it before and after each converge; between steps the admitted
//! units converge (no time passes for them here: that is the waiting for health the agent does not
//! spend). Run with `cargo bench --bench rollout` (`-- --clusters N`, default 1,000 and 2,000);
//! results go to stdout as Markdown.
//!
//! `cargo bench --bench rollout -- --agent [--clusters N]` (default 1,000) measures a rollout
//! through the binary instead, against a served control plane (see `rollout/agent.rs`).

#[path = "rollout/agent.rs"]
mod agent;
#[path = "common/mod.rs"]
mod common;

use aro_gitops::rollout::{self, Rollout, State, UnitChange, UnitInput, Verdict};
use chrono::Utc;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const SETTINGS: &str = r#"{
  "waves": [
    {"name": "canary", "selector": {"matchLabels": {"ring": "0"}}},
    {"name": "dev", "selector": {"matchLabels": {"ring": "1"}}},
    {"name": "staging", "selector": {"matchLabels": {"ring": "2"}}},
    {"name": "prod", "units": ["clusters/c*"]}
  ],
  "maxUnavailable": "25%",
  "windows": [
    {"kind": "allow", "schedule": "0 0 * * *", "duration": "24h", "timeZone": "Europe/Berlin",
     "units": ["clusters/c**"]}
  ]
}"#;

struct Walk {
    steps: usize,
    decide: Duration,
    slowest: Duration,
}

fn walk(n: usize, settings: &Rollout) -> Walk {
    let mut units: Vec<UnitInput> = (0..n)
        .map(|i| UnitInput {
            unit: format!("clusters/c{i:05}"),
            labels: BTreeMap::from([("ring".to_string(), (i % 4).to_string())]),
            on: Some("0000000000000000000000000000000000000000".into()),
            change: UnitChange::Shared,
            newest: None,
            apply_now: None,
        })
        .collect();
    let revision = "1111111111111111111111111111111111111111";
    let (mut steps, mut total, mut slowest) = (0, Duration::ZERO, Duration::ZERO);
    loop {
        let started = Instant::now();
        let d = rollout::decide(revision, Some(settings), &units, None, Utc::now());
        let took = started.elapsed();
        steps += 1;
        total += took;
        slowest = slowest.max(took);
        let mut admitted = 0;
        for u in &mut units {
            if matches!(d.verdicts.get(&u.unit), Some(Verdict::Take)) && u.newest.is_none() {
                // Admitted: the converge brings it to the revision.
                u.newest = Some(State::Converged {
                    since: Utc::now() - chrono::Duration::hours(1),
                });
                admitted += 1;
            }
        }
        if admitted == 0 {
            assert!(
                units.iter().all(|u| u.newest.is_some()),
                "the rollout ended with units left: {:?}",
                d.view
            );
            return Walk {
                steps,
                decide: total,
                slowest,
            };
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let clusters = (args.iter().position(|a| a == "--clusters"))
        .map(|i| args[i + 1].parse::<usize>().expect("--clusters N"));
    if args.iter().any(|a| a == "--agent") {
        let dir = tempfile::tempdir().expect("a temporary directory");
        match agent::through_the_binary(clusters.unwrap_or(1000), dir.path()) {
            Ok(r) => agent::print(&r),
            Err(e) => {
                eprintln!("rollout bench: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let sizes: Vec<usize> = clusters.map_or(vec![1000, 2000], |n| vec![n]);
    let value: serde_json::Value = serde_json::from_str(SETTINGS).expect("settings JSON");
    let settings = Rollout::parse(Some(&value))
        .expect("settings")
        .expect("a rollout");
    println!(
        "| clusters | decisions (steps) | agent's decision time, whole rollout | slowest decision |"
    );
    println!("|---:|---:|---:|---:|");
    for n in sizes {
        let w = walk(n, &settings);
        println!(
            "| {n} | {} | {:.1} ms | {:.2} ms |",
            w.steps,
            w.decide.as_secs_f64() * 1000.0,
            w.slowest.as_secs_f64() * 1000.0
        );
    }
}
