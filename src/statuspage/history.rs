//! A cluster's history: the commits of the status branch that changed its report, read with git2
//! from the agent's local mirror (never the network), cached by the branch tip.

use crate::source::ReportTarget;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The most entries a cluster page shows.
pub const MAX_ENTRIES: usize = 50;
/// The most commits looked at for one cluster (a fleet's status branch has many commits).
const MAX_WALK: usize = 2_000;

/// One commit that changed a cluster's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    pub commit: String,
    /// Commit time (Unix seconds).
    pub time: i64,
    pub summary: String,
    /// What the report said then.
    pub phase: Option<String>,
    pub revision: Option<String>,
    pub step: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("the history of {report} on the status branch {branch} could not be read: {message}")]
pub struct HistoryError {
    pub report: String,
    pub branch: String,
    pub message: String,
}

/// Reads histories from the mirror at `mirror`.
#[derive(Debug)]
pub struct History {
    pub(super) mirror: PathBuf,
    pub(super) target: ReportTarget,
    /// The tip the cache holds histories of, and those histories by report path.
    cache: Mutex<(String, Histories)>,
}

/// Histories by report path.
type Histories = HashMap<PathBuf, Arc<Vec<HistoryEntry>>>;

impl History {
    /// Histories of the reports of `target`, from the bare repository at `mirror`.
    pub fn new(mirror: PathBuf, target: ReportTarget) -> History {
        History {
            mirror,
            target,
            cache: Mutex::default(),
        }
    }

    /// The status branch's remote-tracking ref in the mirror.
    pub(super) fn remote_ref(&self) -> String {
        format!("refs/remotes/origin/{}", self.target.branch())
    }

    /// Reading the whole status branch failed with `e`.
    pub(super) fn failed(&self, e: git2::Error) -> HistoryError {
        HistoryError {
            report: crate::report::REPORTS_DIR.to_string(),
            branch: self.target.branch().to_string(),
            message: e.message().to_string(),
        }
    }

    /// The commits (newest first) that changed `report` (report-relative, e.g.
    /// `reports/aro-dev/dev.yaml`), from `tip` (else the branch's remote-tracking ref).
    /// Blocking: call from a blocking task.
    pub fn of(
        &self,
        tip: Option<&str>,
        report: &Path,
    ) -> Result<Arc<Vec<HistoryEntry>>, HistoryError> {
        let branch = self.target.branch();
        let failed = |e: git2::Error| HistoryError {
            report: report.display().to_string(),
            branch: branch.to_string(),
            message: e.message().to_string(),
        };
        let repo = git2::Repository::open_bare(&self.mirror).map_err(failed)?;
        let tip = match tip.map(git2::Oid::from_str) {
            Some(oid) => oid.map_err(failed)?,
            None => match repo.refname_to_id(&self.remote_ref()) {
                Ok(oid) => oid,
                // Nothing published yet.
                Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Arc::default()),
                Err(e) => return Err(failed(e)),
            },
        };
        let key = tip.to_string();
        {
            let cache = self.cache.lock().expect("history cache lock");
            if cache.0 == key
                && let Some(found) = cache.1.get(report)
            {
                return Ok(found.clone());
            }
        }
        let path = self.target.repo_path(report);
        let entries = Arc::new(walk(&repo, tip, &path).map_err(failed)?);
        let mut cache = self.cache.lock().expect("history cache lock");
        if cache.0 != key {
            *cache = (key, HashMap::new());
        }
        cache.1.insert(report.to_path_buf(), entries.clone());
        Ok(entries)
    }
}

fn walk(
    repo: &git2::Repository,
    tip: git2::Oid,
    path: &Path,
) -> Result<Vec<HistoryEntry>, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
    walk.simplify_first_parent()?;
    walk.push(tip)?;
    let blob_at = |commit: &git2::Commit<'_>| -> Option<git2::Oid> {
        commit.tree().ok()?.get_path(path).ok().map(|e| e.id())
    };
    let mut out = Vec::new();
    for oid in walk.take(MAX_WALK) {
        let commit = repo.find_commit(oid?)?;
        let Some(blob) = blob_at(&commit) else {
            continue;
        };
        let before = commit.parent(0).ok().and_then(|p| blob_at(&p));
        if before == Some(blob) {
            continue;
        }
        let report: Option<Value> = repo
            .find_blob(blob)
            .ok()
            .and_then(|b| crate::yaml::from_str(std::str::from_utf8(b.content()).ok()?).ok());
        let field = |name: &str| {
            report
                .as_ref()
                .and_then(|r| r.get(name)?.as_str().map(str::to_string))
        };
        let step = report.as_ref().and_then(|r| {
            let chain = r.get("chain")?;
            Some(format!(
                "{}/{}",
                chain.get("step")?.as_u64()?,
                chain.get("total")?.as_u64()?
            ))
        });
        out.push(HistoryEntry {
            commit: oid_text(commit.id()),
            time: commit.time().seconds(),
            summary: commit
                .summary_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default(),
            phase: field("phase"),
            revision: field("revision"),
            step,
        });
        if out.len() == MAX_ENTRIES {
            break;
        }
    }
    Ok(out)
}

fn oid_text(oid: git2::Oid) -> String {
    oid.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &git2::Repository, files: &[(&str, &str)], message: &str) -> git2::Oid {
        let parent = repo
            .refname_to_id("refs/remotes/origin/aro-gitops/status")
            .ok()
            .map(|o| repo.find_commit(o).unwrap());
        let mut index = git2::Index::new().unwrap();
        if let Some(p) = &parent {
            index.read_tree(&p.tree().unwrap()).unwrap();
        }
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            let entry = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: text.len() as u32,
                id: blob,
                flags: path.len() as u16,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index.add(&entry).unwrap();
        }
        let tree = repo.find_tree(index.write_tree_to(repo).unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parents: Vec<_> = parent.iter().collect();
        let oid = repo
            .commit(None, &sig, &sig, message, &tree, &parents)
            .unwrap();
        repo.reference("refs/remotes/origin/aro-gitops/status", oid, true, "")
            .unwrap();
        oid
    }

    #[test]
    fn lists_the_commits_that_changed_a_report_newest_first_cached_by_tip() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        let history = History::new(dir.path().to_path_buf(), ReportTarget::default());
        let report = Path::new("reports/aro-dev/dev.yaml");
        assert!(
            history.of(None, report).unwrap().is_empty(),
            "no branch yet"
        );
        let blocked = "phase: Blocked\nrevision: abc\nchain:\n  step: 2\n  total: 10\n";
        commit(&repo, &[("reports/aro-dev/dev.yaml", blocked)], "first");
        commit(
            &repo,
            &[("reports/aro-prod/prod.yaml", "phase: Failed\n")],
            "other",
        );
        let done = "phase: Converged\nrevision: abc\nchain:\n  step: 10\n  total: 10\n";
        let tip = commit(&repo, &[("reports/aro-dev/dev.yaml", done)], "second");
        let entries = history.of(None, report).unwrap();
        let seen: Vec<_> = entries
            .iter()
            .map(|e| (e.summary.as_str(), e.phase.as_deref(), e.step.as_deref()))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("second", Some("Converged"), Some("10/10")),
                ("first", Some("Blocked"), Some("2/10"))
            ]
        );
        let again = history.of(Some(&tip.to_string()), report).unwrap();
        assert!(Arc::ptr_eq(&entries, &again), "cached by the tip");
    }
}
