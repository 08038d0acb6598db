//! Git in tests: the `git` CLI run as a developer would (no user or system config, a fixed
//! identity, `main` as the first branch), and folder copies to edit a repository in a tempdir.
//!
//! This is the one way tests run git: the integration tests have it as `common::git`, and the
//! library's unit tests compile this same file as `source::testutil::git` (it uses nothing but
//! `std`, so it builds in both places).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `git` in `dir`, as every helper here runs it: no user or system config, a fixed identity,
/// `main` as the first branch. For what the helpers below do not cover (raw bytes, an exit
/// status only).
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "init.defaultBranch=main"])
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com");
    cmd
}

/// Runs `git args` in `dir`; panics with git's stderr on failure. Returns stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_with(dir, &[], &[], args)
}

/// [`git`] with `config` (`-c` pairs) and `env` added (a signing key, a `GNUPGHOME`).
pub fn git_with(dir: &Path, config: &[String], env: &[(&str, &Path)], args: &[&str]) -> String {
    let mut cmd = command(dir);
    for c in config {
        cmd.args(["-c", c]);
    }
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("git output is UTF-8")
        .trim()
        .to_string()
}

/// Runs `git args` in `dir`; its stdout as it is, or `None` when git fails (a missing revision,
/// path or object).
pub fn try_git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = command(dir).args(args).output().expect("git runs");
    output
        .status
        .success()
        .then(|| String::from_utf8(output.stdout).expect("git output is UTF-8"))
}

/// The file `path` at `rev` in the repository at `repo`; `None` when the file (or rev) does not
/// exist.
pub fn show(repo: &Path, rev: &str, path: &str) -> Option<String> {
    try_git(repo, &["show", &format!("{rev}:{path}")])
}

/// The commits reachable from `rev` in `repo`, newest first; empty when `rev` does not exist.
pub fn commits(repo: &Path, rev: &str) -> Vec<String> {
    try_git(repo, &["rev-list", rev, "--"])
        .map(|out| out.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Copies the folder `from` to `to` (created), recursively; `.git` folders are skipped.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's folder");
    for entry in std::fs::read_dir(from).expect("read the folder to copy") {
        let entry = entry.expect("folder entry");
        let target = to.join(entry.file_name());
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            if entry.file_name() != ".git" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// Makes `dir` a git repository on `main` with everything in it committed; returns the commit.
pub fn init_and_commit(dir: &Path, message: &str) -> String {
    git(dir, &["init", "-q"]);
    commit_all(dir, message)
}

/// Commits every change in the work tree at `dir`; returns the commit.
pub fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A new SSH key of `kind` (`ed25519`, `ecdsa`, `rsa`) made by `ssh-keygen` in `dir`: its
/// private key file, its public line and its SHA256 fingerprint.
pub fn ssh_key(dir: &Path, name: &str, kind: &str) -> (PathBuf, String, String) {
    let path = dir.join(name);
    let mut args = vec!["-q", "-t", kind, "-N", "", "-C", name, "-f"];
    args.push(path.to_str().expect("UTF-8 path"));
    if kind == "rsa" {
        args.extend(["-b", "2048"]);
    }
    let status = Command::new("ssh-keygen")
        .args(&args)
        .status()
        .expect("ssh-keygen runs");
    assert!(status.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).expect("the public key");
    let listed = Command::new("ssh-keygen")
        .args(["-lf", path.with_extension("pub").to_str().expect("UTF-8")])
        .output()
        .expect("ssh-keygen -l runs");
    let fingerprint = String::from_utf8_lossy(&listed.stdout)
        .split_whitespace()
        .nth(1)
        .expect("a fingerprint")
        .to_string();
    (path, public.trim().to_string(), fingerprint)
}

/// Commits every change in the work tree at `dir` (or an empty commit), signed with the SSH
/// private key `key`; returns the commit.
pub fn commit_all_ssh_signed(dir: &Path, key: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    let config = [
        "gpg.format=ssh".to_string(),
        format!("user.signingkey={}", key.display()),
    ];
    git_with(
        dir,
        &config,
        &[],
        &["commit", "-q", "--allow-empty", "-S", "-m", message],
    );
    git(dir, &["rev-parse", "HEAD"])
}
