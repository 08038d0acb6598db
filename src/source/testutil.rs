//! Test fixtures for the source stage: real repositories driven by the `git` CLI (as a developer would
//! push), and a `git daemon` on loopback for a network remote.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `git args` in `dir` with no user or system config and a fixed identity; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// The content of `path` at `rev` in the repository at `repo`, if it exists.
pub fn read_at(repo: &Path, rev: &str, path: &str) -> Option<String> {
    let repo = git2::Repository::open(repo).unwrap();
    let blob = repo
        .revparse_single(&format!("{rev}:{path}"))
        .ok()?
        .peel_to_blob()
        .ok()?;
    Some(String::from_utf8(blob.content().to_vec()).unwrap())
}

/// A bare remote `remote.git` and a developer's clone `work` of it, under one directory.
pub struct Upstream {
    pub bare: PathBuf,
    pub work: PathBuf,
}

impl Upstream {
    pub fn new(root: &Path) -> Upstream {
        git(root, &["init", "-q", "--bare", "remote.git"]);
        git(root, &["clone", "-q", "remote.git", "work"]);
        Upstream {
            bare: root.join("remote.git"),
            work: root.join("work"),
        }
    }

    pub fn url(&self) -> String {
        self.bare.to_str().unwrap().to_string()
    }

    /// Writes `files` in the clone, commits and pushes the current branch; returns the commit id.
    pub fn commit(&self, files: &[(&str, &str)], message: &str) -> String {
        for (path, content) in files {
            let path = self.work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-qm", message]);
        git(&self.work, &["push", "-q", "origin", "HEAD"]);
        git(&self.work, &["rev-parse", "HEAD"])
    }
}

/// A port nothing listens on.
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `git daemon` serving (and accepting pushes to) every repository under a directory; killed on drop.
pub struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    pub fn start(base: &Path) -> GitDaemon {
        let port = closed_port();
        // Run git-daemon itself: `git daemon` would leave it running as a grandchild when killed.
        let child =
            Command::new(Path::new(&git(Path::new("/"), &["--exec-path"])).join("git-daemon"))
                .args([
                    "--reuseaddr",
                    "--export-all",
                    "--enable=receive-pack",
                    "--listen=127.0.0.1",
                ])
                .arg(format!("--port={port}"))
                .arg(format!("--base-path={}", base.display()))
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("git daemon starts");
        let daemon = GitDaemon { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "git daemon did not listen on port {port}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        daemon
    }

    /// The `git://` URL of `repo` (relative to the base path).
    pub fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
