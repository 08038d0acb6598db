//! `plan` on the checkouts CI makes of a pull request: a bare "origin" holding the fleet on `main`,
//! a pull request's head (`refs/pull/1/head`) and GitHub's merge commit (`refs/pull/1/merge`), then
//! (a) a shallow clone (`git clone --depth 1` and a depth-1 fetch of the merge ref, as
//! `actions/checkout` does by default) and (b) a full clone, each detached at the merge commit. The
//! GitHub Actions example's own Plan step runs on them, and `plan --base HEAD~1 --head HEAD`.

use super::common::fleet::Fleet;
use super::common::fleet::aro_gitops_in;
use super::common::git::{copy_dir, git, try_git};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The origin and the pull request's commits.
struct PullRequest {
    _dir: tempfile::TempDir,
    root: PathBuf,
    origin: PathBuf,
    base: String,
    head: String,
    merge: String,
}

/// A bare origin where `main` moved on after the pull request branched (so the merge commit is a
/// real merge), the pull request adding a ConfigMap to clusters/dev.
fn pull_request() -> PullRequest {
    let (fleet, _) = Fleet::git();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical tempdir");
    let work = root.join("work");
    copy_dir(&fleet.repo, &work);
    copy_dir(&fleet.repo.join(".git"), &work.join(".git"));
    git(&work, &["checkout", "-q", "-b", "feature"]);
    let probe = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pr-probe\ndata:\n  a: \"1\"\n";
    std::fs::write(work.join("clusters/dev/pr-probe.yaml"), probe).unwrap();
    let kustomization = work.join("clusters/dev/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).unwrap();
    std::fs::write(
        &kustomization,
        text.replacen("resources:\n", "resources:\n  - pr-probe.yaml\n", 1),
    )
    .unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "pull request"]);
    let head = git(&work, &["rev-parse", "HEAD"]);
    git(&work, &["checkout", "-q", "main"]);
    std::fs::write(work.join("NOTES.md"), "main moved on\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "main moves on"]);
    let base = git(&work, &["rev-parse", "HEAD"]);
    git(
        &work,
        &[
            "merge",
            "-q",
            "--no-ff",
            "feature",
            "-m",
            "Merge pull request 1",
        ],
    );
    let merge = git(&work, &["rev-parse", "HEAD"]);
    git(&work, &["reset", "-q", "--hard", &base]);
    git(&root, &["clone", "-q", "--bare", "work", "origin.git"]);
    let origin = root.join("origin.git");
    git(&origin, &["update-ref", "refs/pull/1/head", &head]);
    git(&origin, &["update-ref", "refs/pull/1/merge", &merge]);
    git(&origin, &["branch", "-D", "feature"]);
    PullRequest {
        _dir: dir,
        root,
        origin,
        base,
        head,
        merge,
    }
}

impl PullRequest {
    fn url(&self) -> String {
        format!("file://{}", self.origin.display())
    }

    /// What `actions/checkout` does on a pull request with `fetch-depth: 1` (its default).
    fn shallow_checkout(&self) -> PathBuf {
        git(
            &self.root,
            &["clone", "-q", "--depth", "1", &self.url(), "shallow"],
        );
        let dir = self.root.join("shallow");
        let merge_ref = "+refs/pull/1/merge:refs/remotes/pull/1/merge";
        git(
            &dir,
            &[
                "fetch",
                "-q",
                "--no-tags",
                "--depth",
                "1",
                "origin",
                merge_ref,
            ],
        );
        git(
            &dir,
            &["checkout", "-q", "--detach", "refs/remotes/pull/1/merge"],
        );
        assert_eq!(git(&dir, &["rev-parse", "--is-shallow-repository"]), "true");
        assert!(
            try_git(&dir, &["cat-file", "-e", &self.head]).is_none(),
            "the pull request's head is not in the clone"
        );
        dir
    }

    /// `fetch-depth: 0`: every commit, still detached at the merge commit.
    fn full_checkout(&self) -> PathBuf {
        git(&self.root, &["clone", "-q", &self.url(), "full"]);
        let dir = self.root.join("full");
        git(
            &dir,
            &[
                "fetch",
                "-q",
                "origin",
                "+refs/pull/1/merge:refs/remotes/pull/1/merge",
            ],
        );
        git(&dir, &["checkout", "-q", "--detach", &self.merge]);
        dir
    }
}

/// The workflow's Plan step and the job's environment, read from the example.
fn plan_step() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/github-actions/aro-gitops-plan.yml");
    let text = std::fs::read_to_string(path).expect("the example workflow");
    let workflow = aro_gitops::yaml::from_str(&text).expect("the workflow is YAML");
    let steps = workflow["jobs"]["plan"]["steps"].as_array().expect("steps");
    assert!(
        !steps
            .iter()
            .any(|s| s["run"].as_str().is_some_and(|r| r.contains("git branch"))),
        "no step names the commits any more"
    );
    let plan = steps
        .iter()
        .find(|s| s["id"] == "plan")
        .expect("a step with id plan");
    plan["run"]
        .as_str()
        .expect("the step runs a script")
        .to_string()
}

/// Runs the workflow's Plan step in `workspace` as GitHub would; returns the step's outputs and
/// the plan it wrote.
fn run_plan_step(pr: &PullRequest, workspace: &Path, name: &str) -> (String, String) {
    let script = plan_step();
    let temp = pr.root.join(format!("runner-temp-{name}"));
    std::fs::create_dir_all(&temp).unwrap();
    let (output, summary) = (temp.join("output"), temp.join("summary"));
    let bin = Path::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .args(["-eo", "pipefail", "-c", &script])
        .current_dir(workspace)
        .env("PATH", path)
        .env("GITHUB_WORKSPACE", workspace)
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("BASE_SHA", &pr.base)
        .env("HEAD_SHA", &pr.head)
        .env("KUBECONFIG_CONTENT", "")
        .env("ARO_GITOPS_LOG", "warn")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "the Plan step failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let outputs = std::fs::read_to_string(&output).unwrap_or_default();
    let summary = std::fs::read_to_string(&summary).unwrap_or_default();
    (outputs, summary)
}

/// The plan of `--base/--head` on `workspace`, JSON; with its exit code and stderr.
fn plan_json(workspace: &Path, state: &Path, base: &str, head: &str) -> (i32, Value, String) {
    let state = state.to_str().unwrap();
    let out = aro_gitops_in(
        workspace,
        &[
            "plan", "--repo", ".", "--state", state, "--base", base, "--head", head, "-o", "json",
        ],
    );
    let json = if out.code == 1 {
        Value::Null
    } else {
        out.json()
    };
    (out.code, json, out.all())
}

fn assert_the_probe_is_created(code: i32, plan: &Value, all: &str) {
    assert_eq!(code, 2, "{all}");
    let dev = super::cluster(plan, super::DEV);
    assert_eq!(
        super::changes(dev),
        super::pairs(&[("create", "ConfigMap/pr-probe")]),
        "{all}"
    );
    assert_eq!(
        super::changes(super::cluster(plan, super::PROD)),
        vec![],
        "{all}"
    );
}

#[test]
fn the_github_actions_example_plans_a_shallow_pull_request_checkout() {
    let pr = pull_request();
    let workspace = pr.shallow_checkout();
    let (outputs, summary) = run_plan_step(&pr, &workspace, "shallow");
    assert!(outputs.contains("exit-code=2"), "{outputs}\n{summary}");
    assert!(summary.contains("pr-probe"), "{summary}");
    assert!(!summary.contains("aro-gitops plan failed"), "{summary}");

    let state = pr.root.join("state-shallow");
    let (code, plan, all) = plan_json(&workspace, &state, "HEAD~1", "HEAD");
    assert_the_probe_is_created(code, &plan, &all);
    assert_eq!(plan["head"]["commit"], pr.merge.as_str(), "{all}");
    assert_eq!(plan["base"]["commit"], pr.base.as_str(), "{all}");
    // The merge ref by name, and the second parent (the pull request's head) by ancestry.
    let (code, plan, all) = plan_json(&workspace, &state, "refs/pull/1/merge^1", "HEAD^2");
    assert_the_probe_is_created(code, &plan, &all);
    assert_eq!(plan["head"]["commit"], pr.head.as_str(), "{all}");
    assert_eq!(
        git(&workspace, &["status", "--porcelain"]),
        "",
        "the checkout stays clean"
    );

    // An unknown revision: said plainly, exit 1.
    let out = aro_gitops_in(
        &workspace,
        &[
            "plan",
            "--repo",
            ".",
            "--state",
            state.to_str().unwrap(),
            "--base",
            "no-such-thing~1",
            "--head",
            "HEAD",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stderr.contains(r#"unknown revision "no-such-thing~1""#)
            && out
                .stderr
                .contains(r#"no branch, tag, ref or commit is called "no-such-thing""#),
        "{}",
        out.all()
    );
    // A commit the origin does not have either: what to run is said.
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let out = aro_gitops_in(
        &workspace,
        &[
            "plan",
            "--repo",
            ".",
            "--state",
            state.to_str().unwrap(),
            "--base",
            missing,
            "--head",
            "HEAD",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stderr
            .contains(&format!("fetch --depth=1 origin {missing}")),
        "{}",
        out.all()
    );
}

#[test]
fn the_github_actions_example_plans_a_full_detached_checkout() {
    let pr = pull_request();
    let workspace = pr.full_checkout();
    let (outputs, summary) = run_plan_step(&pr, &workspace, "full");
    assert!(outputs.contains("exit-code=2"), "{outputs}\n{summary}");
    assert!(summary.contains("pr-probe"), "{summary}");

    let state = pr.root.join("state-full");
    let (code, plan, all) = plan_json(&workspace, &state, "HEAD~1", "HEAD");
    assert_the_probe_is_created(code, &plan, &all);
    let short = &pr.head[..9];
    let (code, plan, all) = plan_json(&workspace, &state, "origin/main", short);
    assert_the_probe_is_created(code, &plan, &all);
    assert_eq!(plan["head"]["commit"], pr.head.as_str(), "{all}");
}
