//! Test fixtures for the source stage: real repositories driven by the `git` CLI (as a developer would
//! push), and a `git daemon` on loopback for a network remote.
//!
//! The `git` CLI is run by the integration tests' helpers (`tests/common/git.rs`), compiled in here
//! as [`git`](mod@git): one way to run git in every test, and no test code in the library itself.

#[allow(dead_code)] // the integration tests use the rest (SSH keys, signed commits, copies)
#[path = "../../tests/common/git.rs"]
pub mod git;

pub use git::{git, show};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
