//! Records the events [`super::decide`] plans through kube-rs's [`Recorder`], in the background:
//! a pass never waits for the API server to take its events, and an event that cannot be
//! recorded is logged and dropped (events are advice; they never stop a unit).
//!
//! Reporting controller `aro-gitops`; instance: `POD_NAME` when set (the downward API), else the
//! host name.

use super::rollout::PauseSaid;
use super::{Planned, Said, decide, regarding};
use crate::object::ObjectKey;
use crate::report::UnitOutcome;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Recorder, Reporter};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The reporting controller of every event.
pub const CONTROLLER: &str = "aro-gitops";

enum Message {
    Record(Box<(Planned, ObjectReference)>),
    /// Answered once everything sent before is recorded.
    Flush(oneshot::Sender<()>),
}

/// The agent's events: what was last said about each unit, and the task that records them.
pub struct Events {
    said: Mutex<HashMap<String, Said>>,
    /// The objects each unit's events were last recorded on (a paused rollout's go there too).
    about: Mutex<HashMap<String, Vec<ObjectReference>>>,
    /// The paused rollout last said.
    pause_said: Mutex<Option<PauseSaid>>,
    tx: mpsc::UnboundedSender<Message>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Who records: `aro-gitops` on this pod (or host).
pub fn reporter() -> Reporter {
    let mut reporter = Reporter::from(CONTROLLER);
    if let Some(pod) = std::env::var("POD_NAME")
        .ok()
        .filter(|p| !p.trim().is_empty())
    {
        reporter.instance = Some(pod);
    }
    reporter
}

impl Events {
    /// Records through `client`, in the background (within a Tokio runtime).
    pub fn start(client: kube::Client) -> Events {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(record(client, reporter(), rx));
        Events {
            said: Mutex::new(HashMap::new()),
            about: Mutex::new(HashMap::new()),
            pause_said: Mutex::new(None),
            tx,
            task,
        }
    }

    /// After a pass of `outcome`'s unit: records the event [`decide`] plans, if any, on the
    /// unit's AROCluster and AROControlPlane ([`regarding`]; `known`: the objects the unit owns
    /// live, asked for only when an event is due). `uid` finds a live object's uid, when known;
    /// `namespace` is where an object without one lives.
    pub fn pass_ended(
        &self,
        outcome: &UnitOutcome,
        known: impl FnOnce() -> Vec<ObjectKey>,
        namespace: &str,
        uid: impl Fn(&ObjectKey) -> Option<String>,
    ) {
        let planned = {
            let mut said = self.said.lock().expect("events lock");
            let (now, planned) = decide(said.get(&outcome.unit), outcome);
            said.insert(outcome.unit.clone(), now);
            planned
        };
        let Some(planned) = planned else {
            return;
        };
        let mut about = regarding(outcome, &[]);
        if about.is_empty() {
            about = regarding(outcome, &known());
        }
        let references: Vec<ObjectReference> = (about.into_iter())
            .map(|key| ObjectReference {
                api_version: Some(crate::object::join_api_version(&key.group, &key.version)),
                kind: Some(key.kind.to_string()),
                name: Some(key.name.clone()),
                namespace: Some(key.namespace.as_deref().unwrap_or(namespace).to_string()),
                uid: uid(&key),
                ..Default::default()
            })
            .collect();
        self.send(&planned, &references);
        if !references.is_empty() {
            let mut about = self.about.lock().expect("events lock");
            about.insert(outcome.unit.clone(), references);
        }
    }

    fn send(&self, planned: &Planned, references: &[ObjectReference]) {
        for reference in references {
            let message = Box::new((planned.clone(), reference.clone()));
            let _ = self.tx.send(Message::Record(message));
        }
    }

    /// The rollout of the newest revision stands as `view` says: when it newly paused, records
    /// `RolloutPaused` on each failing unit's ARO objects (those its events were last recorded
    /// on; a unit whose objects are not known yet gets none, its report says why).
    pub fn rollout(&self, view: Option<&crate::rollout::RolloutView>) {
        let revision = view.map(|v| v.revision.as_str()).unwrap_or_default();
        let paused = view.and_then(|v| v.paused.as_ref());
        let planned = {
            let mut said = self.pause_said.lock().expect("events lock");
            let (now, planned) = super::rollout::decide(said.as_ref(), revision, paused);
            *said = now;
            planned
        };
        let about = self.about.lock().expect("events lock");
        for (unit, planned) in planned {
            match about.get(&unit) {
                Some(references) => self.send(&planned, references),
                None => {
                    tracing::debug!(%unit, "a paused unit has no ARO object known to put the RolloutPaused event on")
                }
            }
        }
    }

    /// Forgets a unit that left git.
    pub fn forget(&self, unit: &str) {
        self.said.lock().expect("events lock").remove(unit);
        self.about.lock().expect("events lock").remove(unit);
    }

    /// Waits (up to `wait`) until the events planned so far are recorded.
    pub async fn flush(&self, wait: Duration) {
        let (done, recorded) = oneshot::channel();
        if self.tx.send(Message::Flush(done)).is_ok()
            && tokio::time::timeout(wait, recorded).await.is_err()
        {
            tracing::warn!(
                ?wait,
                "not every Kubernetes Event was recorded before the end"
            );
        }
    }
}

/// Records each event in turn. The [`Recorder`] turns the same event about the same object
/// within a few minutes into a series (a count) rather than a new event; it keeps the first
/// note, so an event whose note differs from the last one of its reason about that object starts
/// afresh (a new recorder).
async fn record(
    client: kube::Client,
    reporter: Reporter,
    mut rx: mpsc::UnboundedReceiver<Message>,
) {
    let mut recorder = Recorder::new(client.clone(), reporter.clone());
    let mut notes: HashMap<(String, &'static str), String> = HashMap::new();
    while let Some(message) = rx.recv().await {
        let (planned, reference) = match message {
            Message::Record(b) => *b,
            Message::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        };
        let about = format!(
            "{}/{}/{}/{}",
            reference.api_version.as_deref().unwrap_or_default(),
            reference.kind.as_deref().unwrap_or_default(),
            reference.namespace.as_deref().unwrap_or_default(),
            reference.name.as_deref().unwrap_or_default()
        );
        let last = notes.insert((about.clone(), planned.reason), planned.note.clone());
        if last.is_some_and(|n| n != planned.note) {
            recorder = Recorder::new(client.clone(), reporter.clone());
        }
        let event = Event {
            type_: planned.type_,
            reason: planned.reason.into(),
            note: Some(planned.note),
            action: planned.action.into(),
            secondary: None,
        };
        if let Err(e) = recorder.publish(&event, &reference).await {
            tracing::warn!(object = %about, reason = planned.reason,
                error = %crate::redact::scrub(&crate::apply::api_message(&e)), "a Kubernetes Event was not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{converged_idle, failed, progressing};
    use super::*;
    use crate::controlplane::{Config, ControlPlane};
    use k8s_openapi::api::events::v1::Event as K8sEvent;

    /// An embedded control plane under `dir` with the namespace `aro-dev`.
    async fn control_plane_with_aro_dev(dir: &std::path::Path) -> ControlPlane {
        let mut config = Config::new(dir.join("cp"));
        config.preload_crds = false;
        let cp = ControlPlane::open(config).unwrap();
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(cp.client());
        let ns = serde_json::from_value(serde_json::json!({"metadata": {"name": "aro-dev"}}));
        namespaces
            .create(&Default::default(), &ns.unwrap())
            .await
            .unwrap();
        cp
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_reach_the_control_plane_and_a_repeat_becomes_a_series() {
        let dir = tempfile::tempdir().unwrap();
        let cp = control_plane_with_aro_dev(dir.path()).await;
        let events = Events::start(cp.client());
        for o in [
            progressing(),
            converged_idle(),
            converged_idle(),
            progressing(),
            converged_idle(),
            failed("spec.region: Required value"),
        ] {
            events.pass_ended(&o, Vec::new, "default", |_| Some("uid-1".into()));
        }
        events.flush(Duration::from_secs(20)).await;
        let api: kube::Api<K8sEvent> = kube::Api::namespaced(cp.client(), "aro-dev");
        let list = api.list(&Default::default()).await.unwrap().items;
        let mut seen: Vec<(String, String, String, i32)> = list
            .iter()
            .map(|e| {
                let about = e.regarding.as_ref().unwrap();
                assert_eq!(about.uid.as_deref(), Some("uid-1"));
                assert_eq!(e.reporting_controller.as_deref(), Some(CONTROLLER));
                (
                    about.kind.clone().unwrap(),
                    e.reason.clone().unwrap(),
                    e.type_.clone().unwrap(),
                    e.series.as_ref().map_or(1, |s| s.count),
                )
            })
            .collect();
        seen.sort();
        let want = |kind: &str| {
            [
                (kind.to_string(), "Converged".into(), "Normal".into(), 2),
                (kind.to_string(), "Progressing".into(), "Normal".into(), 2),
                (
                    kind.to_string(),
                    "ReconcileFailed".into(),
                    "Warning".into(),
                    1,
                ),
            ]
        };
        let mut expected: Vec<_> = want("AROCluster").into();
        expected.extend(want("AROControlPlane"));
        assert_eq!(seen, expected, "{list:#?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_paused_rollout_is_said_once_on_the_failing_units_objects() {
        use crate::rollout::{Paused, RolloutView};
        let dir = tempfile::tempdir().unwrap();
        let cp = control_plane_with_aro_dev(dir.path()).await;
        let events = Events::start(cp.client());
        events.pass_ended(&failed("quota exceeded"), Vec::new, "default", |_| None);
        let view = RolloutView {
            revision: "0123456789abcdef".into(),
            waves: vec![],
            current: Some(0),
            paused: Some(Paused {
                wave: "dev".into(),
                failing: vec![("clusters/dev".into(), vec!["quota exceeded".into()])],
            }),
            waiting_for_window: vec![],
        };
        events.rollout(Some(&view));
        events.rollout(Some(&view));
        events.flush(Duration::from_secs(20)).await;
        let api: kube::Api<K8sEvent> = kube::Api::namespaced(cp.client(), "aro-dev");
        let list = api.list(&Default::default()).await.unwrap().items;
        let mut paused: Vec<(String, String, String, i32)> = (list.iter())
            .filter(|e| e.reason.as_deref() == Some("RolloutPaused"))
            .map(|e| {
                (
                    e.regarding.as_ref().unwrap().kind.clone().unwrap(),
                    e.type_.clone().unwrap(),
                    e.note.clone().unwrap(),
                    e.series.as_ref().map_or(1, |s| s.count),
                )
            })
            .collect();
        paused.sort();
        let note = "rollout of 0123456 paused at wave dev: clusters/dev: quota exceeded";
        assert_eq!(
            paused,
            vec![
                ("AROCluster".into(), "Warning".into(), note.into(), 1),
                ("AROControlPlane".into(), "Warning".into(), note.into(), 1),
            ],
            "{list:#?}"
        );
    }
}
