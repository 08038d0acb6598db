//! A rollout through the binary (`--agent`): an `aro-gitops-fleetgen` fleet of N clusters with
//! four waves in its `aro-gitops.yaml` (a canary by path glob, then the development, staging and
//! production clusters by the Cluster's `environment` label, `maxUnavailable: 25%`), converged
//! against `control-plane serve --simulate-azure --sim-delay 0s` in its own process, then a change
//! to every cluster through the shared template (an annotation on the Cluster, a tag on the
//! HcpOpenShiftCluster, which Azure updates), rolled out by one `run --once`.
//!
//! The agent's own work is its process's CPU time; the server's CPU time is the control plane and
//! the simulated Azure (what the agent waits for when it waits for health). The wall time of each
//! wave is from the agent's rollout lines, timed as they come.

use super::common::{self, ARO_GITOPS, TIME};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const WAVES: &str = "rollout:
  waves:
    - name: canary
      units: [\"clusters/c0000*\"]
    - name: dev
      selector: {matchLabels: {environment: development}}
    - name: staging
      selector: {matchLabels: {environment: staging}}
    - name: prod
      selector: {matchLabels: {environment: production}}
  maxUnavailable: 25%
";

/// What one rollout through the binary cost.
pub struct AgentRollout {
    pub clusters: usize,
    /// The first run, from empty (not the rollout).
    pub populate: Duration,
    pub wall: Duration,
    pub agent_cpu: Option<Duration>,
    pub agent_rss_mb: Option<f64>,
    pub server_cpu: Option<Duration>,
    /// Each wave's name and how long from its first "rolling" line to the next wave's (or the
    /// end).
    pub waves: Vec<(String, Duration)>,
}

/// Generates the fleet in `dir`, converges it, changes every cluster and measures the rollout.
pub fn through_the_binary(n: usize, dir: &Path) -> Result<AgentRollout, String> {
    let repo = dir.join("repo");
    common::generate_fleet(n, &repo);
    std::fs::write(repo.join("aro-gitops.yaml"), WAVES).map_err(|e| e.to_string())?;
    common::git(&repo, &["add", "-A"]);
    common::git(&repo, &["commit", "-qm", "four waves"]);
    let server = common::serve_simulated(&dir.join("served"))
        .ok_or("`control-plane serve --simulate-azure` did not start")?;
    let kubeconfig = server.kubeconfig.to_str().unwrap().to_string();
    let state = dir.join("agent-state");
    let run = [
        "--log",
        "warn",
        "run",
        "--once",
        "--timeout",
        "60m",
        "--kubeconfig",
        &kubeconfig,
        "--repo",
        repo.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ];
    eprintln!("rollout bench: {n} clusters from empty...");
    let first = common::run_measured(ARO_GITOPS, &run, false);
    if first.code != Some(0) {
        return Err(format!(
            "the first run failed:\n{}",
            common::log_tail(&first.stderr, 20)
        ));
    }

    let template = repo.join("cluster-template/cluster.yaml");
    let text = std::fs::read_to_string(&template).map_err(|e| e.to_string())?;
    let text = text.replacen(
        "metadata:\n  name: cluster\n",
        "metadata:\n  name: cluster\n  annotations:\n    example.com/rollout: \"one\"\n",
        1,
    );
    std::fs::write(&template, text).map_err(|e| e.to_string())?;
    // And a tag on every cluster's HcpOpenShiftCluster: an update in Azure.
    let control_plane = repo.join("cluster-template/arocontrolplane.yaml");
    let text = std::fs::read_to_string(&control_plane).map_err(|e| e.to_string())?;
    if !text.contains("\n      location: eastus\n") {
        return Err("the template's HcpOpenShiftCluster has no location line to tag after".into());
    }
    let text = text.replacen(
        "\n      location: eastus\n",
        "\n      location: eastus\n      tags:\n        rollout: one\n",
        1,
    );
    std::fs::write(&control_plane, text).map_err(|e| e.to_string())?;
    common::git(&repo, &["commit", "-qam", "a change to every cluster"]);

    eprintln!("rollout bench: the rollout of {n} clusters in 4 waves...");
    let report = dir.join("time-v.txt");
    let server_before = common::cpu_of(server.child.id());
    let started = Instant::now();
    let (mut child, lines) = common::spawn_lines(
        Command::new(TIME)
            .args(["-v", "-o"])
            .arg(&report)
            .arg(ARO_GITOPS)
            .args(run),
    );
    let mut waves: Vec<(String, Instant)> = Vec::new();
    let mut said = Vec::new();
    for line in lines {
        if let Some(name) = wave_rolling(&line)
            && waves.last().is_none_or(|(w, _)| *w != name)
        {
            waves.push((name, Instant::now()));
        }
        said.push(line);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let wall = started.elapsed();
    let server_cpu = common::cpu_of(server.child.id())
        .zip(server_before)
        .map(|(after, before)| after.saturating_sub(before));
    if !status.success() {
        return Err(format!("the rollout run failed:\n{}", said.join("\n")));
    }
    if !said.iter().any(|l| l.ends_with("every wave done")) {
        return Err(format!("the rollout did not end:\n{}", said.join("\n")));
    }
    let (agent_rss_mb, agent_cpu) =
        common::time_report(&std::fs::read_to_string(&report).unwrap_or_default());
    let end = started + wall;
    let waves = (waves.iter().enumerate())
        .map(|(i, (name, at))| {
            let next = waves.get(i + 1).map_or(end, |(_, t)| *t);
            (name.clone(), next - *at)
        })
        .collect();
    Ok(AgentRollout {
        clusters: n,
        populate: first.wall,
        wall,
        agent_cpu,
        agent_rss_mb,
        server_cpu,
        waves,
    })
}

/// The wave a rollout line says is rolling: `rollout of abc1234: wave 2 of 4 (dev) rolling, …`.
fn wave_rolling(line: &str) -> Option<String> {
    let rest = line.strip_prefix("rollout of ")?;
    let (_, rest) = rest.split_once(") rolling")?.0.rsplit_once('(')?;
    Some(rest.to_string())
}

pub fn print(r: &AgentRollout) {
    let secs =
        |d: Option<Duration>| d.map_or("n/a".into(), |d| format!("{:.1} s", d.as_secs_f64()));
    println!(
        "| clusters | from empty | rollout, wall | agent CPU (its own work) | server CPU (control plane and simulated Azure) | agent peak RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {:.1} s | {:.1} s | {} | {} | {} |",
        r.clusters,
        r.populate.as_secs_f64(),
        r.wall.as_secs_f64(),
        secs(r.agent_cpu),
        secs(r.server_cpu),
        common::mb(r.agent_rss_mb)
    );
    println!();
    println!("| wave | wall, from its first rolling line to the next wave's |");
    println!("|---|---:|");
    for (name, took) in &r.waves {
        println!("| {name} | {:.1} s |", took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rolling_lines_name_their_wave() {
        assert_eq!(
            super::wave_rolling("rollout of abc1234: wave 2 of 4 (dev) rolling, 7 clusters"),
            Some("dev".into())
        );
        assert_eq!(
            super::wave_rolling("rollout of abc1234: wave 2 of 4 (dev) soaking until x"),
            None
        );
    }
}
