//! What each commit status says, decided from the run's outcomes with no IO: a unit's state and
//! description ([`unit_state`]), the fleet's ([`fleet_state`]), and which statuses are new
//! ([`Tracker`]: only a change of what a context says on a commit is posted).

use super::{Contexts, Host};
use crate::object::ObjectKey;
use crate::report::{self, Phase, UnitOutcome};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The longest description GitHub takes; GitLab's is longer, the same limit keeps both short.
pub const DESCRIPTION_MAX: usize = 140;

/// What a pending status says.
pub const RECONCILING: &str = "reconciling";

/// The context of the fleet's status, and the prefix of each unit's (`aro-gitops/<unit>`).
pub const CONTEXT: &str = "aro-gitops";

/// Where a context stands on a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Passes are running (or queued) on the commit.
    Pending,
    /// Converged.
    Success,
    /// Failed, refused, or not converged when the run ended.
    Failure,
    /// Cut short (the agent stopped): nothing is known of it.
    Error,
}

impl State {
    /// The state as `host`'s API spells it.
    pub fn as_str(self, host: Host) -> &'static str {
        match (host, self) {
            (Host::GitHub, State::Pending) => "pending",
            (Host::GitHub, State::Success) => "success",
            (Host::GitHub, State::Failure) => "failure",
            (Host::GitHub, State::Error) => "error",
            (Host::GitLab, State::Pending) => "running",
            (Host::GitLab, State::Success) => "success",
            (Host::GitLab, State::Failure) => "failed",
            (Host::GitLab, State::Error) => "canceled",
        }
    }

    /// Whether the state is an end: a drift pass over a settled unit does not turn it pending.
    fn is_final(self) -> bool {
        self != State::Pending
    }
}

/// One status to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub sha: String,
    pub context: String,
    pub state: State,
    /// One line, redacted, at most [`DESCRIPTION_MAX`] characters.
    pub description: String,
    pub target_url: Option<String>,
}

/// `text` on one line, redacted, at most [`DESCRIPTION_MAX`] characters (cut with `…`).
pub fn description(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = crate::redact::scrub(&line).into_owned();
    if line.chars().count() <= DESCRIPTION_MAX {
        return line;
    }
    let mut cut: String = line.chars().take(DESCRIPTION_MAX - 1).collect();
    cut.push('…');
    cut
}

/// The first thing a person has to fix in a failed unit: its first error, else its first failed
/// object, else the failed step of its chain.
fn first_error(r: &report::ClusterReport) -> String {
    if let Some(e) = r.errors.first() {
        let mut text = String::new();
        if let Some(file) = &e.file {
            text.push_str(file);
            if let Some(line) = e.line {
                text.push_str(&format!(":{line}"));
            }
            text.push_str(": ");
        }
        if let Some(object) = &e.object {
            text.push_str(&format!("{object}: "));
        }
        text.push_str(&e.message);
        return text;
    }
    let failed = r
        .objects
        .iter()
        .find(|o| o.action == report::Action::Failed);
    if let Some(o) = failed {
        let name = match &o.namespace {
            Some(ns) => format!("{}/{ns}/{}", o.kind, o.name),
            None => format!("{}/{}", o.kind, o.name),
        };
        let why = o
            .message
            .as_deref()
            .or(o.reason.as_deref())
            .unwrap_or("failed");
        return format!("{name}: {why}");
    }
    format!("chain {}", r.chain.short())
}

/// What a unit's outcome says on its commit; `last`: nothing follows it (the end of a `--once`
/// run), so a unit still on its way did not converge in time.
pub fn unit_state(outcome: &UnitOutcome, last: bool) -> (State, String) {
    let r = report::build(outcome);
    let chain = || match &r.cluster {
        Some(_) => format!(" (chain {})", r.chain.short()),
        None => String::new(),
    };
    let why = || r.pass.clone().unwrap_or_default();
    let (state, text) = match r.phase {
        Phase::Converged => (State::Success, format!("converged{}", chain())),
        Phase::Failed => (State::Failure, format!("failed: {}", first_error(&r))),
        Phase::Interrupted => (State::Error, why()),
        Phase::NotStarted if last => (State::Failure, why()),
        Phase::Progressing | Phase::Blocked if last => (
            State::Failure,
            format!("did not converge before the run ended{}", chain()),
        ),
        // One description while on the way: each step of the chain would be a post, and hosts
        // limit them (GitHub: 5,000 requests an hour).
        Phase::NotStarted | Phase::Progressing | Phase::Blocked => {
            (State::Pending, RECONCILING.to_string())
        }
    };
    (state, description(&text))
}

/// What the fleet's context says, from each unit's state and description.
pub fn fleet_state(units: &BTreeMap<String, (State, String)>) -> (State, String) {
    let total = units.len();
    let count = |s: State| units.values().filter(|(st, _)| *st == s).count();
    let first = |s: State| units.iter().find(|(_, (st, _))| *st == s);
    let plural = |n: usize| if n == 1 { "unit" } else { "units" };
    let text = if let Some((unit, (_, why))) = first(State::Failure) {
        let n = count(State::Failure);
        (
            State::Failure,
            format!("{n} of {total} failed; {unit}: {why}"),
        )
    } else if let Some((unit, (_, why))) = first(State::Error) {
        let n = count(State::Error);
        (
            State::Error,
            format!("{n} of {total} cut short; {unit}: {why}"),
        )
    } else if count(State::Pending) > 0 {
        // Not how many converged yet: that would be a post per unit.
        (
            State::Pending,
            format!("{RECONCILING} {total} {}", plural(total)),
        )
    } else {
        (
            State::Success,
            format!("{total} {} converged", plural(total)),
        )
    };
    (text.0, description(&text.1))
}

/// The status page's path of a unit: its cluster's page, else the fleet's.
fn page_path(cluster: Option<&ObjectKey>) -> String {
    match cluster {
        Some(c) => format!(
            "/clusters/{}/{}",
            c.namespace.as_deref().unwrap_or("default"),
            c.name
        ),
        None => "/".to_string(),
    }
}

/// The context of `unit`'s status.
pub fn unit_context(unit: &str) -> String {
    format!("{CONTEXT}/{unit}")
}

/// Where each context stands and what was posted: the statuses each event makes new.
#[derive(Debug)]
pub struct Tracker {
    host: Host,
    contexts: Contexts,
    /// The status page's public address, without a trailing `/`.
    page: Option<String>,
    /// The commit the units' states are of.
    sha: Option<String>,
    /// Each unit's state, description and status page path, on `sha`.
    units: BTreeMap<String, (State, String, String)>,
    /// What each (commit, context) last said: the same is not posted again.
    posted: HashMap<(String, String), (State, String, Option<String>)>,
}

impl Tracker {
    pub fn new(host: Host, contexts: Contexts, page: Option<&str>) -> Tracker {
        Tracker {
            host,
            contexts,
            page: page.map(|p| p.trim_end_matches('/').to_string()),
            sha: None,
            units: BTreeMap::new(),
            posted: HashMap::new(),
        }
    }

    fn target(&self, path: &str) -> Option<String> {
        self.page.as_ref().map(|p| format!("{p}{path}"))
    }

    /// `status` unless its context already says the same on its commit (GitLab: the same state,
    /// since it refuses a transition from a state to itself).
    fn new_status(&mut self, status: Status) -> Option<Status> {
        let key = (status.sha.clone(), status.context.clone());
        let said = (
            status.state,
            status.description.clone(),
            status.target_url.clone(),
        );
        let same = match (self.posted.get(&key), self.host) {
            (Some(before), Host::GitHub) => *before == said,
            (Some(before), Host::GitLab) => before.0 == said.0,
            (None, _) => false,
        };
        if same {
            return None;
        }
        self.posted.insert(key, said);
        Some(status)
    }

    /// What is posted for the units' states now: each changed unit's, or the fleet's.
    fn statuses(&mut self, changed: &[String]) -> Vec<Status> {
        let Some(sha) = self.sha.clone() else {
            return vec![];
        };
        let candidates: Vec<Status> = match self.contexts {
            Contexts::Unit => (changed.iter())
                .filter_map(|u| self.units.get(u).map(|s| (u, s)))
                .map(|(u, (state, text, path))| Status {
                    sha: sha.clone(),
                    context: unit_context(u),
                    state: *state,
                    description: text.clone(),
                    target_url: self.target(path),
                })
                .collect(),
            Contexts::Fleet => {
                let states = (self.units.iter())
                    .map(|(u, (s, t, _))| (u.clone(), (*s, t.clone())))
                    .collect();
                let (state, description) = fleet_state(&states);
                vec![Status {
                    sha,
                    context: CONTEXT.to_string(),
                    state,
                    description,
                    target_url: self.target("/"),
                }]
            }
        };
        candidates
            .into_iter()
            .filter_map(|s| self.new_status(s))
            .collect()
    }

    /// Passes over `units` of commit `sha` begin: a unit with no state on it yet is pending.
    /// A unit that settled on it keeps its state (a drift check passes over it again).
    /// `units`: each unit with its CAPI Cluster, when known (its status links to its page).
    pub fn begin(
        &mut self,
        sha: &str,
        units: impl IntoIterator<Item = (String, Option<ObjectKey>)>,
    ) -> Vec<Status> {
        if self.sha.as_deref() != Some(sha) {
            self.sha = Some(sha.to_string());
            self.units.clear();
            // Earlier commits' statuses are not looked at again (a refusal's stays).
            let keep = |k: &(String, String), v: &mut (State, String, Option<String>)| {
                k.0 == sha || v.0 == State::Failure
            };
            self.posted.retain(keep);
        }
        let units: Vec<(String, Option<ObjectKey>)> = units.into_iter().collect();
        let present: BTreeSet<&String> = units.iter().map(|(u, _)| u).collect();
        self.units.retain(|u, _| present.contains(u));
        let mut changed = vec![];
        for (u, cluster) in units {
            if !self.units.contains_key(&u) {
                let path = page_path(cluster.as_ref());
                self.units
                    .insert(u.clone(), (State::Pending, RECONCILING.into(), path));
                changed.push(u);
            }
        }
        self.statuses(&changed)
    }

    /// A unit's pass ended with `outcome` (`last`: see [`unit_state`]).
    pub fn unit(&mut self, outcome: &UnitOutcome, last: bool) -> Vec<Status> {
        if self.sha.is_none() {
            self.sha = Some(outcome.revision.clone());
        }
        let (state, text) = unit_state(outcome, last);
        let previous = self.units.get(&outcome.unit);
        // A settled unit passed over again stays settled until its pass says otherwise.
        if previous.is_some_and(|(s, _, _)| s.is_final())
            && state == State::Pending
            && report::phase(outcome) == Phase::NotStarted
        {
            return vec![];
        }
        let path = page_path(outcome.cluster.as_ref());
        let next = (state, text, path);
        if previous == Some(&next) {
            return vec![];
        }
        self.units.insert(outcome.unit.clone(), next);
        self.statuses(std::slice::from_ref(&outcome.unit))
    }

    /// Commit `sha` was refused (`why`): nothing of it is applied. Said on the fleet's context,
    /// in either mode (the refused commit has no units of its own).
    pub fn refused(&mut self, sha: &str, why: &str) -> Option<Status> {
        self.revision_failed(sha, &format!("refused: {why}"))
    }

    /// Commit `sha` failed before its units were known (`what`: why, e.g. `aro-gitops.yaml`
    /// does not parse): nothing of it is applied. Said on the fleet's context, in either mode.
    pub fn revision_failed(&mut self, sha: &str, what: &str) -> Option<Status> {
        let status = Status {
            sha: sha.to_string(),
            context: CONTEXT.to_string(),
            state: State::Failure,
            description: description(what),
            target_url: self.target("/"),
        };
        self.new_status(status)
    }

    /// `status` was not queued: it may be posted again.
    pub fn forget(&mut self, status: &Status) {
        self.posted
            .remove(&(status.sha.clone(), status.context.clone()));
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
