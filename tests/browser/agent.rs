//! `aro-gitops run --status-bind-address 127.0.0.1:0` (long-running, `--interval 1h`: the local
//! repository's watcher picks up commits) on a copy of `examples-repo/`, and where it serves.

use super::common::running::Running;
use std::path::Path;
use std::time::Duration;

/// The agent's line saying where the status page is: `{PREFIX}ADDR{SUFFIX}`.
const PREFIX: &str = "status page: serving on http://";
const SUFFIX: &str = "/";

pub struct Agent(Running);

impl Agent {
    /// The agent on the git work tree `repo` (watched: a commit there is fetched at once), its
    /// state in `state`; its standard error joins its output (the warnings, why it ended).
    pub fn start(repo: &Path, state: &Path) -> Agent {
        let extra = ["--status-bind-address", "127.0.0.1:0"];
        Agent(Running::start(repo, state, &extra, true))
    }

    /// The status page's base URL (`http://ADDR`), once the agent says it serves it (within
    /// `wait`); the output seen so far when it does not.
    pub fn status_url(&self, wait: Duration) -> String {
        format!("http://{}", self.0.served_address(PREFIX, SUFFIX, wait))
    }
}
