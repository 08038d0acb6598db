//! Fleet rollouts through the binary: a 20-cluster `aro-gitops-fleetgen` fleet (6 development, 7
//! staging, 7 production clusters) with `rollout:` in its `aro-gitops.yaml`, three waves by the
//! Cluster's `environment` label, on the embedded control plane with the Azure simulator.
//!
//! `waves`: a shared change rolls out wave by wave; a failure in the first wave pauses it and the
//! other waves keep their revision with no write; a fixing commit rolls the fleet forward; a deny
//! window holds production; an agent killed (-9) while the first wave soaks resumes where the
//! rollout was, without applying the first wave again. One test, one fleet: converging 20 clusters
//! from empty is the costly part, so the scenarios follow one another.

mod common;

use common::fleet::{Fleet, Output};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one `run --once` of the fleet may take (a debug build on a loaded machine).
const RUN_TIMEOUT: &str = "600s";

/// The waves: development, then staging, then production clusters.
const WAVES: &str = "rollout:
  waves:
    - name: dev
      selector: {matchLabels: {environment: development}}
    - name: staging
      selector: {matchLabels: {environment: staging}}
    - name: prod
      selector: {matchLabels: {environment: production}}
";

/// The units of each environment in a 20-cluster fleetgen fleet (seed 1).
fn units_of(fleet: &Fleet) -> BTreeMap<&'static str, Vec<String>> {
    let mut by_env: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for i in 1..=20 {
        let unit = format!("clusters/c{i:05}");
        let text = fleet.read(&format!("{unit}/kustomization.yaml"));
        let env = ["dev", "staging", "prod"]
            .into_iter()
            .find(|e| text.contains(&format!("components/{e}\n")))
            .expect("an environment component");
        by_env.entry(env).or_default().push(unit);
    }
    by_env
}

fn run_once(fleet: &Fleet) -> Output {
    fleet.aro_gitops(&[
        "run",
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        RUN_TIMEOUT,
    ])
}

/// The report of `unit` on the status branch, parsed.
fn report(fleet: &Fleet, unit: &str) -> Value {
    let name = unit.trim_start_matches("clusters/");
    let text = fleet
        .report(&format!("reports/aro-{name}/{name}.yaml"))
        .unwrap_or_else(|| panic!("a report of {unit}"));
    aro_gitops::yaml::from_str(&text).expect("a YAML report")
}

/// Each unit's Cluster as it is live: its resourceVersion and annotations.
fn live_clusters(fleet: &Fleet, units: &[String]) -> BTreeMap<String, (String, Value)> {
    units
        .iter()
        .map(|u| {
            let name = u.trim_start_matches("clusters/");
            let ns = format!("aro-{name}");
            let c = fleet
                .get("cluster.x-k8s.io/v1beta2", "Cluster", Some(&ns), name)
                .unwrap_or_else(|| panic!("the Cluster of {u}"));
            let rv = c["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string();
            (u.clone(), (rv, c["metadata"]["annotations"].clone()))
        })
        .collect()
}

/// Adds an annotation to every cluster through the shared template: a change to all 20 units.
fn shared_change(fleet: &Fleet, value: &str) {
    let rel = "cluster-template/cluster.yaml";
    let text = fleet.read(rel);
    let text = match text.find("  annotations:\n    example.com/rollout:") {
        Some(_) => {
            let start = text.find("example.com/rollout: ").unwrap();
            let end = start + text[start..].find('\n').unwrap();
            format!(
                "{}example.com/rollout: \"{value}\"{}",
                &text[..start],
                &text[end..]
            )
        }
        None => text.replacen(
            "metadata:\n  name: cluster\n",
            &format!(
                "metadata:\n  name: cluster\n  annotations:\n    example.com/rollout: \"{value}\"\n"
            ),
            1,
        ),
    };
    fleet.write(rel, &text);
}

/// The lines of `out` that say where a rollout stands, in order.
fn rollout_lines(out: &Output) -> Vec<String> {
    out.stdout
        .lines()
        .filter(|l| l.starts_with("rollout of "))
        .map(str::to_string)
        .collect()
}

fn annotation(live: &(String, Value)) -> Option<&str> {
    live.1.get("example.com/rollout").and_then(Value::as_str)
}

#[test]
fn waves() {
    let fleet = Fleet::generated(&["--clusters", "20"]);
    fleet.write("aro-gitops.yaml", WAVES);
    fleet.commit("rollout in three waves");
    let envs = units_of(&fleet);
    assert_eq!(envs["dev"].len(), 6, "{envs:?}");
    let all: Vec<String> = envs.values().flatten().cloned().collect();
    let rest: Vec<String> = [&envs["staging"], &envs["prod"]]
        .into_iter()
        .flatten()
        .cloned()
        .collect();

    // From empty: every cluster is new (its own change), none waits for a wave.
    let out = run_once(&fleet);
    assert_eq!(out.code, 0, "the first run converges:\n{}", out.all());

    // A shared change that the development component breaks: wave 1 fails, the rollout pauses,
    // and staging and production keep their revision with no write.
    let before = live_clusters(&fleet, &rest);
    shared_change(&fleet, "one");
    fleet.replace(
        "components/dev/kustomization.yaml",
        "value: candidate",
        "value: nightly-bogus",
    );
    let broken = fleet.commit("a shared change, broken for development");
    let out = run_once(&fleet);
    assert_eq!(
        out.code,
        1,
        "a paused rollout fails the run:\n{}",
        out.all()
    );
    let lines = rollout_lines(&out);
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "rollout of {} paused at wave dev: 6 failing",
            &broken[..7]
        ))),
        "{lines:?}\n{}",
        out.all()
    );
    assert!(
        !lines.iter().any(|l| l.contains("(staging) rolling")),
        "{lines:?}"
    );
    let after = live_clusters(&fleet, &rest);
    assert_eq!(before, after, "no write to the waves after the pause");
    for unit in &rest {
        let r = report(&fleet, unit);
        assert_ne!(
            r["revision"],
            broken.as_str(),
            "{unit} stays on its revision"
        );
        assert_eq!(r["held"]["newest"], broken.as_str(), "{unit}: {r}");
        assert!(
            r["held"]["why"].as_str().unwrap().contains("paused"),
            "{unit}: {r}"
        );
    }

    // The fix is a new commit: a new rollout, wave by wave, to every cluster.
    fleet.replace(
        "components/dev/kustomization.yaml",
        "value: nightly-bogus",
        "value: candidate",
    );
    let fixed = fleet.commit("fix the development component");
    let out = run_once(&fleet);
    assert_eq!(out.code, 0, "the fix converges:\n{}", out.all());
    let lines = rollout_lines(&out);
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} in {lines:?}"))
    };
    let (dev, staging, prod) = (
        at("wave 1 of 3 (dev) rolling"),
        at("wave 2 of 3 (staging) rolling"),
        at("wave 3 of 3 (prod) rolling"),
    );
    assert!(dev < staging && staging < prod, "{lines:?}");
    assert!(
        lines.last().unwrap().ends_with("every wave done"),
        "{lines:?}"
    );
    let live = live_clusters(&fleet, &all);
    for unit in &all {
        assert_eq!(annotation(&live[unit]), Some("one"), "{unit}");
        let r = report(&fleet, unit);
        assert_eq!(r["revision"], fixed.as_str(), "{unit}");
        assert!(r.get("held").is_none(), "{unit}: {r}");
    }

    // A deny window in force all day holds production; the other waves take the change.
    fleet.write(
        "aro-gitops.yaml",
        &format!(
            "{WAVES}  windows:
    - kind: deny
      schedule: \"0 0 * * *\"
      duration: 24h
      timeZone: UTC
      selector: {{matchLabels: {{environment: production}}}}
"
        ),
    );
    shared_change(&fleet, "two");
    let windowed = fleet.commit("a change while production is frozen");
    let before = live_clusters(&fleet, &envs["prod"]);
    let out = run_once(&fleet);
    assert_eq!(
        out.code,
        0,
        "waiting for a window is no failure:\n{}",
        out.all()
    );
    assert_eq!(
        live_clusters(&fleet, &envs["prod"]),
        before,
        "production untouched"
    );
    for unit in &envs["prod"] {
        let r = report(&fleet, unit);
        assert_eq!(r["revision"], fixed.as_str(), "{unit}");
        let why = r["held"]["why"].as_str().unwrap_or_default();
        assert!(
            why.contains("waiting for the maintenance window"),
            "{unit}: {r}"
        );
    }
    let live = live_clusters(&fleet, &envs["staging"]);
    for unit in &envs["staging"] {
        assert_eq!(annotation(&live[unit]), Some("two"), "{unit}");
        assert_eq!(
            report(&fleet, unit)["revision"],
            windowed.as_str(),
            "{unit}"
        );
    }

    // An agent killed (-9) while the first wave soaks: the next agent finds the first wave on the
    // new revision (its inventories say so) and neither applies it again nor starts over.
    fleet.write("aro-gitops.yaml", &format!("{WAVES}  soak: 1h\n"));
    shared_change(&fleet, "three");
    let change = fleet.commit("a shared change, an hour of soak");
    let logs = fleet.dir().join("agent.out");
    let mut agent = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--sim-delay", "0s", "--interval", "1h", "--repo"])
        .arg(&fleet.url)
        .arg("--state")
        .arg(&fleet.state)
        .env("NO_COLOR", "1")
        .env("ARO_GITOPS_LOG", "warn")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&logs).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("the agent starts");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let said = std::fs::read_to_string(&logs).unwrap_or_default();
        if said.contains("(dev) soaking until") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first wave did not converge:\n{said}"
        );
        assert!(
            agent.try_wait().unwrap().is_none(),
            "the agent exited:\n{said}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    agent.kill().expect("kill -9");
    agent.wait().unwrap();
    let soak_end = |text: &str| {
        let at = text.rfind("(dev) soaking until ")?;
        Some(text[at..].chars().take(43).collect::<String>())
    };
    let soaking = soak_end(&std::fs::read_to_string(&logs).unwrap()).expect("a soak end");

    let dev_before = live_clusters(&fleet, &envs["dev"]);
    for (unit, live) in &dev_before {
        assert_eq!(annotation(live), Some("three"), "{unit} took the change");
    }
    let prod_before = live_clusters(&fleet, &envs["prod"]);
    // The next agent: wave 1 is on the revision and soaks on; nothing else moves.
    let out = run_once(&fleet);
    assert_eq!(out.code, 0, "{}", out.all());
    let lines = rollout_lines(&out);
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "rollout of {}: wave 1 of 3 (dev) soaking",
            &change[..7]
        ))),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("rolling")), "{lines:?}");
    // The soak goes on from when wave 1 converged (the agent's standing on the rollout's
    // Lease), not from the restart.
    assert_eq!(soak_end(&out.stdout), Some(soaking), "{lines:?}");
    assert_eq!(
        live_clusters(&fleet, &envs["dev"]),
        dev_before,
        "wave 1 is not applied again"
    );
    assert_eq!(live_clusters(&fleet, &envs["prod"]), prod_before);
    // The waves held on "two" were rendered again at that revision (a new process), from a
    // checkout removed once they were.
    let kept = fleet.state.join("source/rollout/checkout");
    assert!(
        kept.is_dir(),
        "the revision the held waves are on was checked out"
    );
    let left: Vec<_> = std::fs::read_dir(&kept)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "kept checkouts left: {left:?}");
    for unit in &envs["staging"] {
        assert_eq!(
            annotation(&live_clusters(&fleet, std::slice::from_ref(unit))[unit]),
            Some("two")
        );
        let r = report(&fleet, unit);
        assert!(
            r["held"]["why"].as_str().unwrap().contains("wave dev"),
            "{unit}: {r}"
        );
    }
}
