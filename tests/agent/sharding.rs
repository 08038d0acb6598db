//! Sharding: two and three `aro-gitops run --shard-index i --shard-count n` processes against one
//! served control plane (`control-plane serve --simulate-azure`), on one git remote. Each shard
//! reconciles and reports only the units its path hashes to (FNV-1a 64, so the owners below are
//! fixed), every unit converges, the status branch ends with every unit's report (the shards'
//! commits never overwrite each other), and a unit that left git is pruned by its own shard only.

use super::*;
use common::kubectl::Server;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};

/// How long one round of shards may take to settle (a debug build on a shared machine).
const ROUND_DEADLINE: Duration = Duration::from_secs(240);

/// The units of a four-cluster `aro-gitops-fleetgen` fleet owned by each of two shards.
pub(super) const OF_TWO: [&[&str]; 2] = [
    &["clusters/c00002", "clusters/c00004"],
    &["clusters/c00001", "clusters/c00003"],
];

/// The units of a six-cluster fleet owned by each of three shards.
const OF_THREE: [&[&str]; 3] = [
    &["clusters/c00002", "clusters/c00004"],
    &["clusters/c00003", "clusters/c00005"],
    &["clusters/c00001", "clusters/c00006"],
];

/// Two small units (a Namespace and a ConfigMap) whose paths hash to shard 1 and 0 of two.
const APPS: [(&str, u32); 2] = [("clusters/apps-a", 1), ("clusters/apps-b", 0)];

/// A generated fleet in a git work tree, pushed to a bare remote the shards follow and report to.
pub(super) struct ShardedFleet {
    dir: tempfile::TempDir,
    pub(super) repo: PathBuf,
    remote: PathBuf,
}

impl ShardedFleet {
    /// A fleet of `clusters` generated clusters, or with none (and one file), an empty one to
    /// add units to.
    pub(super) fn new(clusters: usize) -> ShardedFleet {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        if clusters == 0 {
            std::fs::create_dir_all(&repo).expect("repo folder");
            std::fs::write(repo.join("README.md"), "a fleet\n").expect("a file");
        } else {
            common::fleet::fleetgen(&repo, &["--clusters", &clusters.to_string()]);
        }
        git::init_and_commit(&repo, "the fleet");
        let remote = dir.path().join("remote.git");
        git::git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
        git::git(&remote, &["symbolic-ref", "HEAD", "refs/heads/main"]);
        let url = remote.to_str().expect("UTF-8 path");
        git::git(&repo, &["remote", "add", "origin", url]);
        git::git(&repo, &["push", "-q", "origin", "main"]);
        ShardedFleet { dir, repo, remote }
    }

    /// Commits the work tree and pushes it; returns the commit.
    pub(super) fn push(&self, message: &str) -> String {
        let commit = git::commit_all(&self.repo, message);
        git::git(&self.repo, &["push", "-q", "origin", "main"]);
        commit
    }

    /// Adds a unit holding a Namespace and a ConfigMap.
    fn add_app(&self, unit: &str) {
        let name = unit.trim_start_matches("clusters/");
        let dir = self.repo.join(unit);
        std::fs::create_dir_all(&dir).expect("unit folder");
        std::fs::write(
            dir.join("kustomization.yaml"),
            format!("namespace: {name}\nresources:\n  - objects.yaml\n"),
        )
        .expect("kustomization");
        std::fs::write(
            dir.join("objects.yaml"),
            format!(
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n"
            ),
        )
        .expect("objects");
    }

    /// Runs shards `0..count` at once (`run --once`), each with its own state directory, until
    /// all have exited.
    pub(super) fn round(
        &self,
        server: &Server,
        round: usize,
        count: u32,
        extra: &[&str],
    ) -> Vec<ShardRun> {
        let children = (0..count)
            .map(|i| self.spawn(server, round, (i, count), extra))
            .collect();
        wait_all(children)
    }

    /// Runs shard `index` of `count` alone (`run --once`) until it exits.
    pub(super) fn one(
        &self,
        server: &Server,
        round: usize,
        shard: (u32, u32),
        extra: &[&str],
    ) -> ShardRun {
        let child = self.spawn(server, round, shard, extra);
        wait_all(vec![child]).pop().expect("one run")
    }

    /// Starts shard `index` of `count` (`run --once`) with its own state directory.
    fn spawn(
        &self,
        server: &Server,
        round: usize,
        (i, count): (u32, u32),
        extra: &[&str],
    ) -> Spawned {
        let kubeconfig = server.kubeconfig.to_str().expect("UTF-8 path");
        let logs = self.dir.path().join(format!("round-{round}-shard-{i}"));
        let file = |ext: &str| std::fs::File::create(logs.with_extension(ext)).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
            .args(["run", "--once", "--timeout", "180s", "--repo"])
            .arg(&self.remote)
            .arg("--state")
            .arg(self.dir.path().join(format!("state-{i}")))
            .args(["--kubeconfig", kubeconfig])
            .args(["--shard-index", &i.to_string()])
            .args(["--shard-count", &count.to_string()])
            .args(extra)
            .env("ARO_GITOPS_LOG", "warn,aro_gitops::agent::controller=debug")
            .env("NO_COLOR", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null())
            .stdout(file("out"))
            .stderr(file("err"))
            .spawn()
            .expect("the agent starts");
        Spawned {
            child,
            logs,
            index: i,
            count,
        }
    }

    /// Every report on the status branch: the unit it is about → the YAML report.
    pub(super) fn reports(&self) -> BTreeMap<String, String> {
        let names = git::git(
            &self.remote,
            &["ls-tree", "-r", "--name-only", STATUS_BRANCH],
        );
        names
            .lines()
            .filter(|p| p.ends_with(".yaml"))
            .map(|p| {
                let yaml = git::show(&self.remote, STATUS_BRANCH, p).expect("a report");
                let unit = yaml
                    .lines()
                    .find_map(|l| l.strip_prefix("unit: "))
                    .unwrap_or_else(|| panic!("{p} names its unit:\n{yaml}"))
                    .to_string();
                (unit, yaml)
            })
            .collect()
    }

    /// The status branch's commits, newest first: subject and the report files it changed.
    fn status_commits(&self) -> Vec<(String, BTreeSet<String>)> {
        let log = git::git(
            &self.remote,
            &["log", "--format=@%s", "--name-only", STATUS_BRANCH],
        );
        let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
        for line in log.lines().filter(|l| !l.is_empty()) {
            match line.strip_prefix('@') {
                Some(subject) => out.push((subject.to_string(), BTreeSet::new())),
                None => {
                    let (_, paths) = out.last_mut().expect("a commit first");
                    paths.insert(line.to_string());
                }
            }
        }
        out
    }
}

/// A shard's process, started.
struct Spawned {
    child: Child,
    logs: PathBuf,
    index: u32,
    count: u32,
}

/// Waits for every shard's process to exit (killed past [`ROUND_DEADLINE`]).
fn wait_all(mut children: Vec<Spawned>) -> Vec<ShardRun> {
    let deadline = Instant::now() + ROUND_DEADLINE;
    let mut runs = Vec::new();
    for s in children.iter_mut() {
        let code = loop {
            if let Some(status) = s.child.try_wait().expect("wait") {
                break status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = s.child.kill();
                let _ = s.child.wait();
                break -1;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let read = |ext: &str| std::fs::read_to_string(s.logs.with_extension(ext)).unwrap();
        runs.push(ShardRun {
            index: s.index,
            count: s.count,
            code,
            stdout: read("out"),
            stderr: read("err"),
        });
    }
    runs
}

/// What one shard's process did.
pub(super) struct ShardRun {
    index: u32,
    count: u32,
    pub(super) code: i32,
    pub(super) stdout: String,
    stderr: String,
}

impl ShardRun {
    pub(super) fn all(&self) -> String {
        format!(
            "shard {} of {} (exit {}):\n{}\n--- stderr ---\n{}",
            self.index, self.count, self.code, self.stdout, self.stderr
        )
    }

    /// The summary table's rows: unit → phase.
    pub(super) fn summary(&self) -> BTreeMap<String, String> {
        let mut lines = self.stdout.lines().skip_while(|l| !l.starts_with("UNIT "));
        let header = lines
            .next()
            .unwrap_or_else(|| panic!("no summary:\n{}", self.all()));
        let at = header.find("PHASE").expect("a PHASE column");
        lines
            .take_while(|l| l.starts_with("clusters/"))
            .map(|l| {
                let unit = l.split_whitespace().next().expect("a unit").to_string();
                let phase = l[at..].split_whitespace().next().expect("a phase");
                (unit, phase.to_string())
            })
            .collect()
    }

    /// The units a pass ran for (the controller's debug lines).
    fn passed(&self) -> BTreeSet<String> {
        self.stderr
            .lines()
            .filter(|l| l.contains("pass done"))
            .filter_map(|l| l.split(" unit=").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .collect()
    }

    /// The shard's line: `shard i of n: k of m units`.
    fn assert_line(&self, mine: usize, all: usize) {
        let line = format!(
            "shard {} of {}: {mine} of {all} units",
            self.index, self.count
        );
        assert!(
            self.stdout.lines().any(|l| l == line),
            "no line {line:?}:\n{}",
            self.all()
        );
    }
}

fn set(units: &[&str]) -> BTreeSet<String> {
    units.iter().map(|u| u.to_string()).collect()
}

/// Each shard exited 0 having run passes for its own units only, all of them converged, and
/// reported nothing else.
fn assert_shards_converged(runs: &[ShardRun], owners: &[BTreeSet<String>], fleet: usize) {
    for run in runs {
        let mine = &owners[run.index as usize];
        assert_eq!(run.code, 0, "{}", run.all());
        run.assert_line(mine.len(), fleet);
        let summary = run.summary();
        assert_eq!(
            summary.keys().cloned().collect::<BTreeSet<_>>(),
            *mine,
            "{}",
            run.all()
        );
        assert!(
            summary.values().all(|p| p == "Converged"),
            "{summary:?}\n{}",
            run.all()
        );
        assert_eq!(run.passed(), *mine, "passes of other units:\n{}", run.all());
    }
}

/// The status branch holds one converged report per unit of `owners`, none with a deletion, and
/// every commit on it changed the reports of one shard's units only.
fn assert_reports(fleet: &ShardedFleet, owners: &[BTreeSet<String>], runs: &[ShardRun]) {
    let all: BTreeSet<String> = owners.iter().flatten().cloned().collect();
    let reports = fleet.reports();
    assert_eq!(
        reports.keys().cloned().collect::<BTreeSet<_>>(),
        all,
        "one report per unit"
    );
    for (unit, yaml) in &reports {
        assert!(yaml.contains("\nphase: Converged\n"), "{unit}:\n{yaml}");
        assert!(
            !yaml.contains("action: deleted") && !yaml.contains("action: deleting"),
            "{unit}:\n{yaml}"
        );
    }
    let count = owners.len();
    let log = fleet.status_commits();
    for i in 0..count {
        let tag = format!("(shard {i} of {count})");
        assert!(
            log.iter().any(|(s, _)| s.ends_with(&tag)),
            "no commit of shard {i}: {log:?}\n{}",
            runs.iter().map(ShardRun::all).collect::<String>()
        );
    }
    for (subject, paths) in &log {
        let i = (0..count)
            .find(|i| subject.ends_with(&format!("(shard {i} of {count})")))
            .unwrap_or_else(|| panic!("a commit of no shard: {subject}"));
        for path in paths {
            // The report's Markdown twin names the same unit as its YAML.
            let yaml_path = path.replace(".md", ".yaml");
            let yaml = git::show(&fleet.remote, STATUS_BRANCH, &yaml_path).expect("report");
            let unit = yaml
                .lines()
                .find_map(|l| l.strip_prefix("unit: "))
                .expect("unit");
            assert!(
                owners[i].contains(unit),
                "shard {i}'s commit {subject:?} wrote the report of {unit}"
            );
        }
    }
}

#[test]
fn two_shards_split_the_fleet_report_everything_and_prune_only_their_own() {
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "50ms"]);
    let fleet = ShardedFleet::new(4);
    for (unit, _) in APPS {
        fleet.add_app(unit);
    }
    fleet.push("two small apps");
    let mut owners: Vec<BTreeSet<String>> = OF_TWO.iter().map(|u| set(u)).collect();
    for (unit, shard) in APPS {
        owners[shard as usize].insert(unit.to_string());
    }

    let runs = fleet.round(&server, 1, 2, &[]);
    assert_shards_converged(&runs, &owners, 6);
    assert_reports(&fleet, &owners, &runs);
    let k = server.kubectl();
    let live = k
        .get_json(&["configmaps", "-A"])
        .expect("listed")
        .to_string();
    for (unit, _) in APPS {
        let ns = unit.trim_start_matches("clusters/");
        assert!(live.contains(&format!("\"namespace\":\"{ns}\"")), "{live}");
    }

    // Both apps leave git: each is pruned by the shard its path hashes to, and only by it; the
    // other units are left as they are.
    for (unit, _) in APPS {
        std::fs::remove_dir_all(fleet.repo.join(unit)).expect("remove the unit");
    }
    fleet.push("the apps leave");
    let runs = fleet.round(&server, 2, 2, &["--allow-deletion"]);
    for run in &runs {
        assert_eq!(run.code, 0, "{}", run.all());
        run.assert_line(2, 4);
        let (gone, _) = APPS
            .iter()
            .find(|(_, s)| *s == run.index)
            .expect("one app per shard");
        let summary = run.summary();
        let mut expected = set(OF_TWO[run.index as usize]);
        expected.insert(gone.to_string());
        assert_eq!(
            summary.keys().cloned().collect::<BTreeSet<_>>(),
            expected,
            "{}",
            run.all()
        );
        assert!(
            summary.values().all(|p| p == "Converged"),
            "{summary:?}\n{}",
            run.all()
        );
    }
    for (unit, _) in APPS {
        let ns = unit.trim_start_matches("clusters/");
        poll_until_gone(&k, ns);
        let yaml = fleet.reports().remove(unit).expect("the removal's report");
        assert!(
            yaml.contains("action: deleted"),
            "{unit}:\n{yaml}\n{:?}\n{}",
            fleet.status_commits(),
            runs.iter().map(ShardRun::all).collect::<String>()
        );
    }
    let reports = fleet.reports();
    for unit in OF_TWO.iter().flat_map(|u| u.iter()) {
        assert!(
            reports[*unit].contains("\nphase: Converged\n"),
            "{unit}:\n{}",
            reports[*unit]
        );
    }
}

/// Waits until the app's ConfigMap is gone.
fn poll_until_gone(k: &common::kubectl::Kubectl, ns: &str) {
    common::kubectl::poll_until(Duration::from_secs(30), "the app pruned", || {
        let json = k.get_json(&["configmaps", "-n", ns])?;
        let names: Vec<&str> = json["items"]
            .as_array()?
            .iter()
            .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        (!names.contains(&"settings")).then_some(())
    });
}

#[test]
fn three_shards_split_the_fleet_and_report_everything() {
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "50ms"]);
    let fleet = ShardedFleet::new(6);
    let owners: Vec<BTreeSet<String>> = OF_THREE.iter().map(|u| set(u)).collect();
    let runs = fleet.round(&server, 1, 3, &[]);
    assert_shards_converged(&runs, &owners, 6);
    assert_reports(&fleet, &owners, &runs);
    // Every cluster is live, none being deleted.
    let clusters = server
        .kubectl()
        .get_json(&["hcpopenshiftclusters.redhatopenshift.azure.com", "-A"])
        .expect("listed");
    let items = clusters["items"].as_array().expect("items");
    assert_eq!(items.len(), 6, "{clusters}");
    assert!(
        items
            .iter()
            .all(|o| o.pointer("/metadata/deletionTimestamp").is_none()),
        "{clusters}"
    );
}

/// The ownership check stays fleet-wide: two units of different shards declaring one object
/// fail on both shards, and nothing of either is applied.
#[test]
fn a_conflict_between_units_of_two_shards_fails_both() {
    let server = Server::start();
    let fleet = ShardedFleet::new(0);
    for (unit, _) in APPS {
        let dir = fleet.repo.join(unit);
        std::fs::create_dir_all(&dir).expect("unit folder");
        std::fs::write(
            dir.join("kustomization.yaml"),
            "namespace: shared\nresources:\n  - settings.yaml\n",
        )
        .expect("kustomization");
        std::fs::write(
            dir.join("settings.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  by: {unit}\n"),
        )
        .expect("objects");
    }
    fleet.push("two units, one object");
    let runs = fleet.round(&server, 1, 2, &[]);
    for run in &runs {
        assert_ne!(run.code, 0, "the shard's unit failed:\n{}", run.all());
        run.assert_line(1, 2);
        let (mine, _) = APPS.iter().find(|(_, s)| *s == run.index).expect("an app");
        let summary = run.summary();
        assert_eq!(
            summary.into_iter().collect::<Vec<_>>(),
            vec![(mine.to_string(), "Failed".to_string())],
            "{}",
            run.all()
        );
        assert!(run.passed().is_empty(), "no pass ran:\n{}", run.all());
    }
    for (unit, yaml) in fleet.reports() {
        assert!(yaml.contains("\nphase: Failed\n"), "{unit}:\n{yaml}");
        assert!(
            yaml.contains("ConfigMap"),
            "{unit} names the object:\n{yaml}"
        );
    }
    let k = server.kubectl();
    let json = k.get_json(&["configmaps", "-n", "shared"]).expect("listed");
    assert_eq!(json["items"].as_array().map(Vec::len), Some(0), "{json}");
}

#[test]
fn a_shard_index_out_of_range_is_refused() {
    let fleet = common::fleet::Fleet::plain();
    let out = fleet.aro_gitops(&["run", "--once", "--shard-index", "2", "--shard-count", "2"]);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(
        out.all().contains(
            "--shard-index 2 is out of range for --shard-count 2: shards are numbered 0 to 1"
        ),
        "{}",
        out.all()
    );
}
