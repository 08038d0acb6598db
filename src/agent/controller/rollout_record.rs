//! The rollout's record on the cluster: one coordination.k8s.io/v1 Lease per fleet in
//! [`AGENT_NAMESPACE`], holding in its annotations the paused rollout (its revision, the wave it
//! stopped in, the failing units and their errors) and the resume `aro-gitops rollout resume`
//! recorded. It outlives the process (kill -9, a leader handover, another shard): the controller
//! reads it back before it decides.
//!
//! Writes go through create, or replace with the Lease's resourceVersion: a concurrent writer
//! gets a conflict and the write is tried again on what it wrote, never overwriting it blindly.
//! The errors recorded are those of the reports, already redacted.
//!
//! Each shard's standing in the rollout is recorded there too (see [`super::rollout_standing`]).

use super::rollout_standing::{self as standing, Standing};
use crate::marks::AGENT_NAMESPACE;
use crate::rollout::{Paused, Resume};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The annotation holding the paused rollout (JSON).
pub const PAUSED_ANNOTATION: &str = "aro-gitops.dev/rollout-paused";
/// The annotation holding the resume (JSON).
pub const RESUME_ANNOTATION: &str = "aro-gitops.dev/rollout-resume";
/// How many times a write is tried again after a conflict.
const CONFLICT_RETRIES: usize = 5;

/// What the Lease records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The paused rollout: its revision, and where and why it stopped.
    pub paused: Option<(String, Paused)>,
    pub resume: Option<Resume>,
    /// Each shard's standing, by shard (index, count).
    pub standings: BTreeMap<(u32, u32), Standing>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("Lease {AGENT_NAMESPACE}/{name}: {source}")]
    Api {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("Lease {AGENT_NAMESPACE}/{name}: annotation {annotation} does not decode: {why}")]
    Decode {
        name: String,
        annotation: &'static str,
        why: String,
    },
    #[error(
        "Lease {AGENT_NAMESPACE}/{name}: another writer changed it {CONFLICT_RETRIES} times in a row; try again"
    )]
    Conflict { name: String },
    #[error("--revision {0:?}: give the commit id, or a prefix of it of at least 7 characters")]
    BadRevision(String),
    #[error("no rollout of {revision} is paused: {why}")]
    NotPaused { revision: String, why: String },
}

/// The Lease's name for the fleet `fleet`: `aro-gitops-rollout` for the unnamed fleet, else a
/// readable slug of the name and a digest of it (a fleet is often named by a URL).
pub fn lease_name(fleet: &str) -> String {
    if fleet.is_empty() {
        return "aro-gitops-rollout".to_string();
    }
    let slug = crate::object::name_slug(fleet, 40);
    let slug = slug.trim_end_matches('-');
    let digest = &crate::object::sha256_hex(fleet.as_bytes())[..10];
    if slug.is_empty() {
        format!("aro-gitops-rollout-{digest}")
    } else {
        format!("aro-gitops-rollout-{slug}-{digest}")
    }
}

/// The paused rollout as the annotation holds it.
#[derive(Debug, Serialize, Deserialize)]
struct PausedJson {
    revision: String,
    wave: String,
    failing: Vec<FailingJson>,
}

#[derive(Debug, Serialize, Deserialize)]
struct FailingJson {
    unit: String,
    errors: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ResumeJson {
    revision: String,
    forgiven: BTreeSet<String>,
}

impl Record {
    /// The record in the annotations of a Lease named `name`.
    pub fn from_annotations(
        name: &str,
        annotations: &BTreeMap<String, String>,
    ) -> Result<Record, RecordError> {
        let decode = |annotation: &'static str, e: serde_json::Error| RecordError::Decode {
            name: name.to_string(),
            annotation,
            why: e.to_string(),
        };
        let paused = match annotations.get(PAUSED_ANNOTATION) {
            None => None,
            Some(text) => {
                let p: PausedJson =
                    serde_json::from_str(text).map_err(|e| decode(PAUSED_ANNOTATION, e))?;
                let failing = (p.failing.into_iter())
                    .map(|f| (f.unit, f.errors))
                    .collect();
                Some((
                    p.revision,
                    Paused {
                        wave: p.wave,
                        failing,
                    },
                ))
            }
        };
        let resume = match annotations.get(RESUME_ANNOTATION) {
            None => None,
            Some(text) => {
                let r: ResumeJson =
                    serde_json::from_str(text).map_err(|e| decode(RESUME_ANNOTATION, e))?;
                Some(Resume {
                    revision: r.revision,
                    forgiven: r.forgiven,
                })
            }
        };
        let mut standings = BTreeMap::new();
        for (key, text) in annotations {
            let Some(shard) = standing::shard_of(key) else {
                continue;
            };
            let s = Standing::decode(text).map_err(|e| RecordError::Decode {
                name: name.to_string(),
                annotation: standing::STANDING_PREFIX,
                why: format!("{key}: {e}"),
            })?;
            standings.insert(shard, s);
        }
        Ok(Record {
            paused,
            resume,
            standings,
        })
    }

    /// The record as annotations (both keys always present: an absent part is removed).
    pub fn to_annotations(&self) -> BTreeMap<String, Option<String>> {
        let paused = self.paused.as_ref().map(|(revision, p)| {
            let json = PausedJson {
                revision: revision.clone(),
                wave: p.wave.clone(),
                failing: (p.failing.iter())
                    .map(|(unit, errors)| FailingJson {
                        unit: unit.clone(),
                        errors: errors.clone(),
                    })
                    .collect(),
            };
            serde_json::to_string(&json).expect("plain data serialises")
        });
        let resume = self.resume.as_ref().map(|r| {
            let json = ResumeJson {
                revision: r.revision.clone(),
                forgiven: r.forgiven.clone(),
            };
            serde_json::to_string(&json).expect("plain data serialises")
        });
        let mut annotations = BTreeMap::from([
            (PAUSED_ANNOTATION.to_string(), paused),
            (RESUME_ANNOTATION.to_string(), resume),
        ]);
        for ((index, count), s) in &self.standings {
            annotations.insert(standing::key(*index, *count), Some(s.encode()));
        }
        annotations
    }

    /// The resume of the paused rollout `revision` (the commit id or a prefix of at least 7
    /// characters): it forgives the failing units of the recorded pause (and those a resume of the
    /// same revision forgave before). Refused when no rollout of that revision is paused.
    pub fn resume(&self, revision: &str) -> Result<Resume, RecordError> {
        let wanted = revision.trim();
        if wanted.len() < 7 || !wanted.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(RecordError::BadRevision(revision.to_string()));
        }
        let not_paused = |why: String| RecordError::NotPaused {
            revision: wanted.to_string(),
            why,
        };
        let Some((recorded, paused)) = &self.paused else {
            return Err(not_paused(
                "the fleet's record holds no paused rollout".into(),
            ));
        };
        if !crate::rollout::names_revision(&wanted.to_ascii_lowercase(), recorded) {
            return Err(not_paused(format!(
                "the paused rollout is that of {} (resume that one, or push a newer commit, which starts a new rollout)",
                sha7(recorded)
            )));
        }
        let mut forgiven: BTreeSet<String> =
            paused.failing.iter().map(|(u, _)| u.clone()).collect();
        if let Some(before) = self.resume.as_ref().filter(|r| &r.revision == recorded) {
            forgiven.extend(before.forgiven.iter().cloned());
        }
        Ok(Resume {
            revision: recorded.clone(),
            forgiven,
        })
    }
}

pub use crate::rollout::short as sha7;

fn api(client: &kube::Client) -> Api<Lease> {
    Api::namespaced(client.clone(), AGENT_NAMESPACE)
}

/// The fleet's record (empty when its Lease does not exist).
pub async fn read(client: &kube::Client, fleet: &str) -> Result<Record, RecordError> {
    let name = lease_name(fleet);
    let lease = (api(client).get_opt(&name).await).map_err(|source| RecordError::Api {
        name: name.clone(),
        source,
    })?;
    match lease.and_then(|l| l.metadata.annotations) {
        Some(a) => Record::from_annotations(&name, &a),
        None => Ok(Record::default()),
    }
}

/// Records that the rollout of `revision` paused as `paused` says; writes only when the Lease
/// records something else.
pub async fn record_paused(
    client: &kube::Client,
    fleet: &str,
    paused: &Paused,
    revision: &str,
) -> Result<(), RecordError> {
    let wanted = Some((revision.to_string(), paused.clone()));
    update(client, fleet, |r| {
        if r.paused == wanted {
            return false;
        }
        r.paused = wanted.clone();
        true
    })
    .await
    .map(|_| ())
}

/// Records shard `shard`'s standing (see [`super::rollout_standing`]), `wanted` in the form the
/// Lease keeps ([`Standing::as_recorded`]); writes only when the Lease records something else. A
/// standing too large for an annotation keeps its failures only.
pub async fn record_standing(
    client: &kube::Client,
    fleet: &str,
    shard: (u32, u32),
    wanted: &Standing,
) -> Result<(), RecordError> {
    let mut wanted = wanted.clone();
    if wanted.encode().len() > standing::MAX_STANDING_BYTES {
        tracing::warn!(
            units = wanted.units.len(),
            "the rollout standing is too large for the Lease: only its failures are recorded"
        );
        (wanted.units).retain(|_, s| matches!(s, crate::rollout::State::Failed { .. }));
    }
    update(client, fleet, |r| {
        if r.standings.get(&shard) == Some(&wanted) {
            return false;
        }
        r.standings.insert(shard, wanted.clone());
        true
    })
    .await
    .map(|_| ())
}

/// Records the resume of the paused rollout `revision` (see [`Record::resume`]) and returns it.
pub async fn record_resume(
    client: &kube::Client,
    fleet: &str,
    revision: &str,
) -> Result<Resume, RecordError> {
    let mut refused = None;
    let mut resumed = None;
    update(client, fleet, |r| match r.resume(revision) {
        Ok(resume) => {
            let changed = r.resume.as_ref() != Some(&resume);
            r.resume = Some(resume.clone());
            resumed = Some(resume);
            refused = None;
            changed
        }
        Err(e) => {
            refused = Some(e);
            false
        }
    })
    .await?;
    match (refused, resumed) {
        (Some(e), _) => Err(e),
        (None, Some(r)) => Ok(r),
        (None, None) => unreachable!("the change ran at least once"),
    }
}

/// Reads the fleet's record, lets `change` edit it (it says whether it changed anything), and
/// writes it back with the read resourceVersion (creating the Lease, and the namespace, when
/// missing). Tried again on a conflict.
async fn update(
    client: &kube::Client,
    fleet: &str,
    mut change: impl FnMut(&mut Record) -> bool,
) -> Result<Record, RecordError> {
    let name = lease_name(fleet);
    let failed = |source| RecordError::Api {
        name: name.clone(),
        source,
    };
    let api = api(client);
    for _ in 0..CONFLICT_RETRIES {
        let live = api.get_opt(&name).await.map_err(failed)?;
        let annotations = live
            .as_ref()
            .and_then(|l| l.metadata.annotations.clone())
            .unwrap_or_default();
        let mut record = Record::from_annotations(&name, &annotations)?;
        if !change(&mut record) {
            return Ok(record);
        }
        let mut annotations = annotations;
        for (key, value) in record.to_annotations() {
            match value {
                Some(v) => annotations.insert(key, v),
                None => annotations.remove(&key),
            };
        }
        let written = match live {
            Some(mut lease) => {
                lease.metadata.annotations = Some(annotations);
                api.replace(&name, &PostParams::default(), &lease).await
            }
            None => {
                let lease = new_lease(&name, fleet, annotations);
                match api.create(&PostParams::default(), &lease).await {
                    Err(e) if is_code(&e, 404) => {
                        create_namespace(client).await.map_err(failed)?;
                        api.create(&PostParams::default(), &lease).await
                    }
                    other => other,
                }
            }
        };
        match written {
            Ok(_) => {
                tracing::info!(lease = %name, "rollout record written");
                return Ok(record);
            }
            Err(e) if is_code(&e, 409) => continue,
            Err(e) => return Err(failed(e)),
        }
    }
    Err(RecordError::Conflict { name })
}

fn new_lease(name: &str, fleet: &str, annotations: BTreeMap<String, String>) -> Lease {
    let mut annotations = annotations;
    if !fleet.is_empty() {
        annotations.insert(
            crate::marks::FLEET_ANNOTATION.to_string(),
            fleet.to_string(),
        );
    }
    Lease {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(AGENT_NAMESPACE.to_string()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_string(),
                "aro-gitops".to_string(),
            )])),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(LeaseSpec::default()),
    }
}

async fn create_namespace(client: &kube::Client) -> Result<(), kube::Error> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(AGENT_NAMESPACE.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Err(e) if !is_code(&e, 409) => Err(e),
        _ => Ok(()),
    }
}

fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

#[cfg(test)]
#[path = "rollout_record_tests.rs"]
mod tests;
