//! What the status page shows: a snapshot of every unit's last outcome, fed by the agent where
//! outcomes are produced (after each pass, and at the end of each converge), read by the page
//! without locking the agent out (a copy-on-write [`Snapshot`] behind an `Arc`), and a generation
//! counter that moves whenever the snapshot changes (the live updates follow it).

use super::history::History;
use super::published::Published;
use super::rendered::RenderedObject;
use crate::report::{self, Action, ClusterReport, UnitOutcome};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// The annotation shown under a cluster's name on the index.
pub const DESCRIPTION: &str = "aro-gitops.io/description";

/// One unit as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitView {
    pub unit: String,
    /// `namespace/name` of its CAPI Cluster, when known.
    pub cluster: Option<String>,
    /// The report's phase (`Converged`, `Progressing`, `Blocked`, `Failed`).
    pub phase: &'static str,
    /// The cluster's [`DESCRIPTION`] annotation, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The annotations of the cluster's CAPI Cluster, as rendered from git.
    pub annotations: BTreeMap<String, String>,
    /// How many of its objects drifted from what was applied.
    pub drifted: usize,
    /// When the agent first reported the unit's current revision (Unix seconds).
    pub applied_at: i64,
    /// The unit's report (as committed to the status branch: errors redacted).
    pub report: ClusterReport,
    /// What the unit renders, when its preparation failed (see [`super::rendered`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rendered: Vec<RenderedObject>,
}

/// Where a standby's snapshot comes from: the reports the leader committed to the status branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderReport {
    /// The status branch's commit the reports were read at; `None`: the leader has published
    /// nothing yet.
    pub commit: Option<String>,
    /// That commit's time (Unix seconds).
    pub time: Option<i64>,
    /// The Lease's holder identity (the leader), when known.
    pub holder: Option<String>,
}

impl UnitView {
    /// The view of `outcome`, with the annotations of its cluster.
    pub fn of(outcome: &UnitOutcome, annotations: BTreeMap<String, String>, now: i64) -> UnitView {
        UnitView::of_report(report::build(outcome), annotations, now)
    }

    /// The view of a unit's `report` (the agent's own, or one read from the status branch), first
    /// reported at `at`.
    pub fn of_report(
        report: ClusterReport,
        annotations: BTreeMap<String, String>,
        at: i64,
    ) -> UnitView {
        UnitView {
            unit: report.unit.clone(),
            cluster: report
                .cluster
                .as_ref()
                .map(|c| format!("{}/{}", c.namespace, c.name)),
            phase: report.phase.as_str(),
            description: annotations.get(DESCRIPTION).cloned(),
            annotations,
            drifted: report
                .objects
                .iter()
                .filter(|o| o.action == Action::Drifted)
                .count(),
            applied_at: at,
            report,
            rendered: vec![],
        }
    }

    /// Whether the unit failed (listed first).
    pub fn failed(&self) -> bool {
        self.phase == report::Phase::Failed.as_str()
    }

    /// The same content as `other` (not counting when it was seen).
    fn same_as(&self, other: &UnitView) -> bool {
        self.report == other.report
            && self.annotations == other.annotations
            && self.rendered == other.rendered
    }
}

/// Every unit the agent last reported, by unit path.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Moves whenever the content changes.
    pub generation: u64,
    pub units: BTreeMap<String, Arc<UnitView>>,
    /// The last commit of reports the agent published (the status branch's tip), when known.
    pub status_commit: Option<String>,
    /// Set while the units are the leader's report, read from the status branch (a standby).
    pub leader: Option<LeaderReport>,
    /// The newest revision's rollout, when one is in progress (or paused).
    pub rollout: Option<Arc<crate::rollout::RolloutView>>,
    /// The annotations of each unit's cluster in the current revision.
    annotations: Arc<BTreeMap<String, BTreeMap<String, String>>>,
    /// What each unit whose preparation failed renders.
    rendered: Arc<BTreeMap<String, Vec<RenderedObject>>>,
    /// [`Snapshot::to_json`], made once per generation (a large fleet's takes a while).
    json: std::sync::OnceLock<Arc<str>>,
}

impl Snapshot {
    /// The unit whose cluster is `namespace/name`.
    pub fn cluster(&self, namespace: &str, name: &str) -> Option<&Arc<UnitView>> {
        let wanted = format!("{namespace}/{name}");
        self.units
            .values()
            .find(|u| u.cluster.as_deref() == Some(wanted.as_str()))
    }

    /// The unit at path `unit`.
    pub fn unit(&self, unit: &str) -> Option<&Arc<UnitView>> {
        self.units.get(unit)
    }

    /// The snapshot as JSON (`/api/status`), redacted.
    pub fn to_json(&self) -> Arc<str> {
        self.json.get_or_init(|| self.json_text().into()).clone()
    }

    fn json_text(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Json<'a> {
            generation: u64,
            status_commit: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            leader: Option<&'a LeaderReport>,
            #[serde(skip_serializing_if = "Option::is_none")]
            rollout: Option<Value>,
            units: Vec<&'a UnitView>,
        }
        let json = Json {
            generation: self.generation,
            status_commit: self.status_commit.as_deref(),
            leader: self.leader.as_ref(),
            rollout: self.rollout.as_deref().map(super::rollout::json),
            units: self.units.values().map(|u| &**u).collect(),
        };
        // Plain data with string keys always serialises.
        let text = serde_json::to_string(&json).expect("the snapshot serialises");
        crate::redact::scrub(&text).into_owned()
    }

    fn upsert(&mut self, outcome: &UnitOutcome, now: i64) -> bool {
        let annotations = self
            .annotations
            .get(&outcome.unit)
            .cloned()
            .unwrap_or_default();
        let mut next = UnitView::of(outcome, annotations, now);
        next.rendered = self
            .rendered
            .get(&outcome.unit)
            .cloned()
            .unwrap_or_default();
        // A unit that failed before its cluster was known is still shown as that cluster.
        if let Some(before) = self.units.get(&outcome.unit)
            && next.cluster.is_none()
        {
            next.cluster = before.cluster.clone();
        }
        match self.units.get(&outcome.unit) {
            Some(before) if before.same_as(&next) => false,
            Some(before) => {
                if before.report.revision == next.report.revision {
                    next.applied_at = before.applied_at;
                }
                self.units.insert(outcome.unit.clone(), Arc::new(next));
                true
            }
            None => {
                self.units.insert(outcome.unit.clone(), Arc::new(next));
                true
            }
        }
    }
}

/// The annotations of a rendered CAPI Cluster (`metadata.annotations`, string values only).
pub fn annotations_of(cluster: &Value) -> BTreeMap<String, String> {
    cluster
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// The status page's feed: the agent writes, the page reads. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Feed {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    snapshot: RwLock<Arc<Snapshot>>,
    generation: tokio::sync::watch::Sender<u64>,
    history: Option<History>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed::new(None)
    }
}

impl Feed {
    /// A feed whose cluster pages read their history with `history`, when given.
    pub fn new(history: Option<History>) -> Feed {
        Feed {
            inner: Arc::new(Inner {
                snapshot: RwLock::default(),
                generation: tokio::sync::watch::Sender::new(0),
                history,
            }),
        }
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snapshot.read().expect("status lock").clone()
    }

    /// Follows the generation.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    /// Where cluster pages read their history from.
    pub fn history(&self) -> Option<&History> {
        self.inner.history.as_ref()
    }

    /// The annotations of each unit's cluster in the revision being reconciled. A unit left out
    /// (it could not be prepared: no cluster is known) keeps those it had.
    pub fn annotate(&self, mut annotations: BTreeMap<String, BTreeMap<String, String>>) {
        self.change(|s| {
            for (unit, before) in s.annotations.iter() {
                annotations
                    .entry(unit.clone())
                    .or_insert_with(|| before.clone());
            }
            if *s.annotations == annotations {
                return false;
            }
            s.annotations = Arc::new(annotations);
            for (unit, view) in s.units.iter_mut() {
                let wanted = s.annotations.get(unit).cloned().unwrap_or_default();
                if view.annotations != wanted {
                    let v = Arc::make_mut(view);
                    v.description = wanted.get(DESCRIPTION).cloned();
                    v.annotations = wanted;
                }
            }
            // Kept even when no unit is shown yet: the units' first outcomes take them.
            true
        });
    }

    /// The outcome of one unit's pass.
    pub fn unit(&self, outcome: &UnitOutcome) {
        let now = now();
        self.change(|s| s.leader.take().is_some() | s.upsert(outcome, now));
    }

    /// Every unit's outcome at the end of a converge: units not among them are gone.
    pub fn units(&self, outcomes: &[UnitOutcome]) {
        let now = now();
        self.change(|s| {
            let mut changed = s.leader.take().is_some();
            for o in outcomes {
                changed |= s.upsert(o, now);
            }
            let before = s.units.len();
            s.units
                .retain(|unit, _| outcomes.iter().any(|o| &o.unit == unit));
            changed || s.units.len() != before
        });
    }

    /// What the units whose preparation failed render (`None`: the unit prepared, or is gone); the
    /// units left out keep what they had.
    pub fn rendered(&self, changes: BTreeMap<String, Option<Vec<RenderedObject>>>) {
        self.change(|s| {
            let mut rendered = (*s.rendered).clone();
            for (unit, objects) in changes {
                match objects {
                    Some(o) if !o.is_empty() => rendered.insert(unit, o),
                    _ => rendered.remove(&unit),
                };
            }
            if *s.rendered == rendered {
                return false;
            }
            for (unit, view) in s.units.iter_mut() {
                let wanted = rendered.get(unit).cloned().unwrap_or_default();
                if view.rendered != wanted {
                    Arc::make_mut(view).rendered = wanted;
                }
            }
            s.rendered = Arc::new(rendered);
            true
        });
    }

    /// A standby shows the fleet as the leader reports it: every unit of `published` (the status
    /// branch at the leader's last commit; `None`: nothing published yet), led by `holder`. The
    /// agent's own next outcomes (once it leads) take over.
    pub fn leader(&self, published: Option<Published>, holder: Option<String>) {
        self.change(|s| {
            let leader = LeaderReport {
                commit: published.as_ref().map(|p| p.commit.clone()),
                time: published.as_ref().map(|p| p.time),
                holder,
            };
            if s.leader.as_ref() == Some(&leader) {
                return false;
            }
            s.units = match published {
                Some(p) => leader_views(p, &s.annotations, &s.rendered),
                None => BTreeMap::new(),
            };
            s.status_commit = leader.commit.clone();
            s.leader = Some(leader);
            true
        });
    }

    /// The newest revision's rollout (`None`: none).
    pub fn rollout(&self, view: Option<&crate::rollout::RolloutView>) {
        self.change(|s| {
            if s.rollout.as_deref() == view {
                return false;
            }
            s.rollout = view.cloned().map(Arc::new);
            true
        });
    }

    /// The reports were committed as `commit` (the status branch's new tip).
    pub fn published(&self, commit: &str) {
        self.change(|s| {
            if s.status_commit.as_deref() == Some(commit) {
                return false;
            }
            s.status_commit = Some(commit.to_string());
            true
        });
    }

    /// Applies `f` to a copy of the snapshot; when it says something changed, the copy becomes
    /// the snapshot with the next generation.
    fn change(&self, f: impl FnOnce(&mut Snapshot) -> bool) {
        let mut current = self.inner.snapshot.write().expect("status lock");
        let mut next = Snapshot {
            json: Default::default(),
            ..(**current).clone()
        };
        if !f(&mut next) {
            return;
        }
        next.generation += 1;
        let generation = next.generation;
        *current = Arc::new(next);
        drop(current);
        self.inner.generation.send_replace(generation);
    }
}

/// The views of the reports of `published`, with the annotations and the rendered objects this
/// instance knows of each unit (from the revision it loaded).
fn leader_views(
    published: Published,
    annotations: &BTreeMap<String, BTreeMap<String, String>>,
    rendered: &BTreeMap<String, Vec<RenderedObject>>,
) -> BTreeMap<String, Arc<UnitView>> {
    published
        .reports
        .into_iter()
        .map(|report| {
            let unit = report.unit.clone();
            let annotations = annotations.get(&unit).cloned().unwrap_or_default();
            let mut view = UnitView::of_report(report, annotations, published.time);
            view.rendered = rendered.get(&unit).cloned().unwrap_or_default();
            (unit, Arc::new(view))
        })
        .collect()
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::object::ObjectKey;
    use crate::report::{AzureMode, Standing, UnitError};

    /// A unit's outcome for the tests: its CAPI Cluster `namespace/name`, with `errors`.
    pub(crate) fn outcome_in(
        unit: &str,
        namespace: &str,
        name: &str,
        errors: &[&str],
    ) -> UnitOutcome {
        let key = ObjectKey {
            group: "cluster.x-k8s.io".into(),
            version: "v1beta1".into(),
            kind: "Cluster".into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        };
        UnitOutcome {
            rendered_at: None,
            held: None,
            unit: unit.into(),
            standing: Standing::unknown(Some(&key)),
            cluster: Some(key),
            revision: "0123456789abcdef".into(),
            stale_source: None,
            azure: AzureMode::Simulated,
            objects: vec![],
            errors: errors
                .iter()
                .map(|e| UnitError::new(None, None, e.to_string()))
                .collect(),
        }
    }

    /// [`outcome_in`] for cluster `aro-{cluster}/{cluster}`.
    pub(crate) fn outcome(unit: &str, cluster: &str, errors: &[&str]) -> UnitOutcome {
        outcome_in(unit, &format!("aro-{cluster}"), cluster, errors)
    }

    #[test]
    fn the_generation_moves_only_when_something_changed() {
        let feed = Feed::default();
        let rx = feed.subscribe();
        feed.unit(&outcome("clusters/dev", "dev", &[]));
        assert_eq!(*rx.borrow(), 1);
        feed.unit(&outcome("clusters/dev", "dev", &[]));
        assert_eq!(feed.snapshot().generation, 1, "the same outcome again");
        feed.unit(&outcome("clusters/dev", "dev", &["broken"]));
        let s = feed.snapshot();
        assert_eq!((s.generation, s.units["clusters/dev"].phase), (2, "Failed"));
        feed.units(&[outcome("clusters/prod", "prod", &[])]);
        let mut broken = outcome("clusters/prod", "prod", &["bad YAML"]);
        broken.cluster = None;
        feed.unit(&broken);
        let s = feed.snapshot();
        let prod = &s.units["clusters/prod"];
        assert_eq!(
            (prod.phase, prod.cluster.as_deref()),
            ("Failed", Some("aro-prod/prod"))
        );
        feed.units(&[outcome("clusters/prod", "prod", &[])]);
        let s = feed.snapshot();
        assert_eq!(s.units.keys().collect::<Vec<_>>(), vec!["clusters/prod"]);
        assert_eq!(*rx.borrow(), 5);
        assert!(s.cluster("aro-prod", "prod").is_some());
    }

    #[test]
    fn annotations_reach_the_views_and_the_description() {
        let feed = Feed::default();
        let early = serde_json::json!({"metadata": {"annotations": {DESCRIPTION: "early"}}});
        let early = BTreeMap::from([("clusters/dev".to_string(), annotations_of(&early))]);
        feed.annotate(early);
        feed.unit(&outcome("clusters/dev", "dev", &[]));
        let s = feed.snapshot();
        assert_eq!(
            s.units["clusters/dev"].description.as_deref(),
            Some("early")
        );
        let cluster =
            serde_json::json!({"metadata": {"annotations": {DESCRIPTION: "<b>dev</b>", "n": 1}}});
        let annotations = annotations_of(&cluster);
        assert_eq!(annotations.len(), 1, "string values only");
        feed.annotate(BTreeMap::from([("clusters/dev".to_string(), annotations)]));
        let s = feed.snapshot();
        let dev = &s.units["clusters/dev"];
        assert_eq!(dev.description.as_deref(), Some("<b>dev</b>"));
        assert!(s.to_json().contains("\"description\":\"<b>dev</b>\""));
        assert_eq!(s.generation, 3);
    }
}
