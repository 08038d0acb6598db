//! Pull-request previews (`plan --base B --head H`, no cluster) of the bench's fleet, issue 12:
//! one cluster changed (head renders that unit only) and a shared base changed (a file under
//! `base/` that every cluster reads: every unit renders on both sides). Each case runs twice: with
//! a fresh state directory (`cold`: a CI job without a cache clones the repository) and again on
//! the state the first run left (`warm`: the mirrors and checkouts are there).
//!
//! Targets (issue 12): one change ≤ 5 s and ≤ 300 MB peak RSS; a shared base change ≤ 15 s.

use super::{Measured, TARGET_RSS_MB, TARGET_TIME, git, head_commit, mb, ms, run_measured, yes};
use aro_gitops::plan::preview::Preview;
use std::path::Path;
use std::time::Duration;

const TARGET_SHARED: Duration = Duration::from_secs(15);

/// One base/head plan, measured.
pub struct Case {
    pub label: &'static str,
    pub cold: Measured,
    pub warm: Measured,
    /// From the warm run's JSON preview: clusters with changes, clusters in all.
    pub changed: Option<(usize, usize)>,
    /// From the warm run's log: units rendered at base and at head.
    pub rendered: Option<String>,
}

fn plan(repo: &Path, state: &Path, base: &str, head: &str, time_v: bool) -> Measured {
    run_measured(
        &[
            "--log",
            "info",
            "plan",
            "--repo",
            repo.to_str().unwrap(),
            "--state",
            state.to_str().unwrap(),
            "--base",
            base,
            "--head",
            head,
            "-o",
            "json",
        ],
        time_v,
    )
}

fn case(
    label: &'static str,
    repo: &Path,
    state: &Path,
    (base, head): (&str, &str),
    time_v: bool,
) -> Case {
    let _ = std::fs::remove_dir_all(state);
    eprintln!("plan bench: --base/--head, {label} (cold, then warm)...");
    let cold = plan(repo, state, base, head, time_v);
    let warm = plan(repo, state, base, head, time_v);
    let changed = serde_json::from_str::<Preview>(&warm.stdout).ok().map(|p| {
        (
            p.clusters.iter().filter(|c| c.has_changes()).count(),
            p.clusters.len(),
        )
    });
    let rendered = warm
        .stderr
        .lines()
        .find(|l| l.contains("units rendered") && l.contains("base="))
        .and_then(|l| l.find("base=").map(|i| l[i..].to_string()));
    Case {
        label,
        cold,
        warm,
        changed,
        rendered,
    }
}

/// Edits a file of the fleet's shared `base/` (every cluster's AutoNodePolicy default volume
/// size), and commits.
fn change_shared_base(repo: &Path) {
    let file = repo.join("base/autonodepolicy.yaml");
    let text = std::fs::read_to_string(&file).expect("base/autonodepolicy.yaml");
    assert!(
        text.contains("volumeSize: 128Gi"),
        "the fleet's base changed"
    );
    std::fs::write(
        &file,
        text.replace("volumeSize: 128Gi", "volumeSize: 256Gi"),
    )
    .expect("base written");
    git(repo, &["commit", "-qam", "base: bigger node volumes"]);
}

/// Both cases: `before` → `one` (one cluster's commit), then `one` → a commit on top of it that
/// changes the shared base. `dir` holds the plans' state directories.
pub fn run(repo: &Path, dir: &Path, (before, one): (&str, &str), time_v: bool) -> Vec<Case> {
    let one_case = case(
        "one cluster changed",
        repo,
        &dir.join("state-base-head-one"),
        (before, one),
        time_v,
    );
    change_shared_base(repo);
    let shared = head_commit(repo);
    let shared_case = case(
        "shared base changed",
        repo,
        &dir.join("state-base-head-shared"),
        (one, &shared),
        time_v,
    );
    vec![one_case, shared_case]
}

/// The cases as Markdown rows and target lines.
pub fn report(cases: &[Case]) {
    println!("\n### `plan --base/--head` (no cluster)\n");
    println!(
        "| case | cold (fresh state) | warm (state kept) | clusters changed | units rendered |"
    );
    println!("|---|---|---|---|---|");
    let cell = |m: &Measured| {
        format!(
            "{} wall, {} CPU, peak RSS {}, exit {:?}",
            ms(m.wall),
            m.cpu.map_or("n/a".into(), ms),
            mb(m.peak_rss_mb),
            m.code
        )
    };
    for c in cases {
        println!(
            "| {} | {} | {} | {} | {} |",
            c.label,
            cell(&c.cold),
            cell(&c.warm),
            c.changed
                .map_or("no preview".into(), |(n, of)| format!("{n} of {of}")),
            c.rendered.as_deref().unwrap_or("n/a")
        );
    }
    println!();
    for c in cases {
        let time = if c.label.starts_with("one") {
            TARGET_TIME
        } else {
            TARGET_SHARED
        };
        for (side, m) in [("cold", &c.cold), ("warm", &c.warm)] {
            let rss = if c.label.starts_with("one") {
                format!(
                    ", ≤ {TARGET_RSS_MB:.0} MB {} ({})",
                    yes(m.peak_rss_mb.is_some_and(|r| r <= TARGET_RSS_MB)),
                    mb(m.peak_rss_mb)
                )
            } else {
                String::new()
            };
            println!(
                "- `--base/--head`, {} ({side}): ≤ {} s {} ({}){rss}",
                c.label,
                time.as_secs(),
                yes(m.wall <= time),
                ms(m.wall)
            );
        }
    }
}
