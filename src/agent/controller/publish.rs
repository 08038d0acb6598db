//! What a cycle ends with: the reports committed back to git, and the run's summary.

use crate::agent::controller::context::{LiveContext, SourceContext};
use crate::agent::controller::shard::Shard;
use crate::agent::{AgentError, RunSummary};
use crate::packed::PLAIN;
use crate::report::{self, UnitOutcome};
use crate::source::Identity;
use crate::source::ReportTarget;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What this process last published: each report file's bytes (as committed, or as found on the
/// branch; packed, see [`crate::packed`]), and the digest of the outcome each unit's files were
/// built from ([`report_digest`]), so a publish builds only the reports of outcomes that changed
/// since.
#[derive(Debug, Default)]
pub(in crate::agent) struct Published {
    files: BTreeMap<PathBuf, Box<[u8]>>,
    outcomes: BTreeMap<String, ReportDigest>,
}

/// What an outcome's report is built from, digested (SHA-256): equal digests, equal reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct ReportDigest([u8; 32]);

impl SourceContext {
    /// Commits to `target`, in one commit, the report files of `reported` whose content changed
    /// since the last publish (`published`); nothing when none did. Only the outcomes that differ
    /// from those last published are built. `outcomes`: every outcome of the converge (its
    /// revision names the commit, and a stale one waits for the remote).
    pub(in crate::agent) async fn publish(
        &self,
        target: &ReportTarget,
        shard: Shard,
        outcomes: &[UnitOutcome],
        reported: Vec<&UnitOutcome>,
        published: &mut Published,
    ) -> Result<Option<String>, AgentError> {
        let started = std::time::Instant::now();
        let to_build = changed_outcomes(&reported, &published.outcomes);
        // What was published before: this process's last reports, else those an earlier run left
        // on the branch. A pass over the same revision keeps what applying it did (see
        // [`carry_from_report`]), so a rerun with nothing changed commits nothing.
        if published.files.is_empty() && !to_build.is_empty() {
            let target = target.clone();
            let paths: Vec<PathBuf> = to_build
                .iter()
                .map(|o| report::outcome_paths(o).1)
                .collect();
            match self.blocking(move |s| s.published(&target, &paths)).await? {
                Ok(found) => published.files = packed(found).collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "the reports published earlier could not be read");
                }
            }
        }
        let files = build_reports(&to_build, &published.files);
        let changed = changed_files(files, &published.files);
        let built: Vec<(String, ReportDigest)> = to_build
            .iter()
            .map(|o| (o.unit.clone(), report_digest(o)))
            .collect();
        tracing::debug!(
            units = reported.len(),
            built = built.len(),
            files_changed = changed.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "reports built"
        );
        if changed.is_empty() {
            published.outcomes.extend(built);
            return Ok(None);
        }
        let target = target.clone();
        let short: String = outcomes
            .first()
            .map(|o| o.revision.chars().take(12).collect())
            .unwrap_or_default();
        let message = if shard.is_partial() {
            format!("aro-gitops: status of {short} ({shard})")
        } else {
            format!("aro-gitops: status of {short}")
        };
        let to_publish = changed.clone();
        let commit = match self
            .blocking(move |s| s.publish(&target, &to_publish, &message, &Identity::default()))
            .await?
        {
            Ok(commit) => commit,
            // The remote is unreachable (that is why the revision is stale): the reports wait
            // for it to come back (`published` is left as it was, so they are tried again).
            Err(e) if outcomes.iter().any(|o| o.stale_source.is_some()) => {
                tracing::warn!(error = %e, "the source is unreachable: reports not published");
                return Ok(None);
            }
            Err(e) => return Err(AgentError::Publish(Box::new(e))),
        };
        let files_changed = changed.len();
        published.files.extend(packed(changed));
        published.outcomes.extend(built);
        tracing::debug!(
            files_changed,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "reports published"
        );
        if let Some(c) = &commit {
            tracing::info!(commit = %c, "reports committed");
        }
        Ok(commit)
    }
}

/// The outcomes of `reported` whose reports may differ from those last published (`last`, the
/// digests by unit): only theirs are built again. A unit a commit left as it was keeps its outcome
/// but moves to the new revision; its report names the commit whose rendering is applied, so it
/// is not built again.
fn changed_outcomes<'a>(
    reported: &[&'a UnitOutcome],
    last: &BTreeMap<String, ReportDigest>,
) -> Vec<&'a UnitOutcome> {
    (reported.iter().copied())
        .filter(|o| last.get(&o.unit) != Some(&report_digest(o)))
        .collect()
}

/// The digest of every field an outcome's report is built from, the revision as the report names
/// it ([`UnitOutcome::reported_revision`]): what a publish keeps of an outcome to tell whether the
/// next one makes the same report, instead of a copy of it. The fields are written in their
/// `Debug` form (every derived field, in order; no map there iterates in a random order) straight
/// into the hash.
fn report_digest(o: &UnitOutcome) -> ReportDigest {
    use std::fmt::Write;
    // Destructured whole, so a field added to the outcome is not left out of the digest.
    let UnitOutcome {
        unit,
        cluster,
        revision: _,
        rendered_at: _,
        stale_source,
        azure,
        objects,
        errors,
        standing,
        held,
    } = o;
    struct Hashing(ring::digest::Context);
    impl Write for Hashing {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Hashing(ring::digest::Context::new(&ring::digest::SHA256));
    write!(
        h,
        "{:?}",
        (
            o.reported_revision(),
            unit,
            cluster,
            stale_source,
            azure,
            objects,
            errors,
            standing,
            held
        )
    )
    .expect("hashing cannot fail");
    let mut out = [0u8; 32];
    out.copy_from_slice(h.0.finish().as_ref());
    ReportDigest(out)
}

/// The report files (Markdown and YAML) of `outcomes`, given what was published before
/// (`earlier`): a unit no pass reached keeps its earlier files, and a pass over the revision an
/// earlier report names keeps what applying it did.
fn build_reports(
    outcomes: &[&UnitOutcome],
    earlier: &BTreeMap<PathBuf, Box<[u8]>>,
) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for &o in outcomes {
        let (md, yaml) = report::outcome_paths(o);
        if keeps_earlier_report(o, earlier.contains_key(&yaml)) {
            // Still true of what was done: left as published.
            continue;
        }
        let carried;
        let o = match earlier.get(&yaml) {
            Some(before) => {
                let mut next = o.clone();
                carry_from_report(&PLAIN.unpack(before), &mut next);
                carried = next;
                &carried
            }
            None => o,
        };
        let r = report::build(o);
        files.insert(md, report::to_markdown(&r).into_bytes());
        files.insert(yaml, report::to_yaml(&r).into_bytes());
    }
    files
}

/// The files of `files` whose bytes differ from those published (`earlier`).
fn changed_files(
    files: BTreeMap<PathBuf, Vec<u8>>,
    earlier: &BTreeMap<PathBuf, Box<[u8]>>,
) -> BTreeMap<PathBuf, Vec<u8>> {
    files
        .into_iter()
        .filter(|(p, b)| earlier.get(p).is_none_or(|e| PLAIN.unpack(e) != *b))
        .collect()
}

/// `files`, packed.
fn packed(files: BTreeMap<PathBuf, Vec<u8>>) -> impl Iterator<Item = (PathBuf, Box<[u8]>)> {
    files.into_iter().map(|(p, b)| (p, PLAIN.pack(&b)))
}

impl LiveContext {
    pub(in crate::agent) fn summary(
        &self,
        outcomes: Vec<UnitOutcome>,
        report_commit: Option<String>,
    ) -> RunSummary {
        let counter = self.env.cluster.counter();
        let timed_out = outcomes
            .iter()
            .filter(|o| {
                !matches!(
                    report::phase(o),
                    report::Phase::Converged | report::Phase::Failed
                )
            })
            .map(|o| o.unit.clone())
            .collect();
        RunSummary {
            outcomes,
            reads: counter.reads(),
            writes: counter.writes(),
            report_commit,
            timed_out,
            report_error: None,
            azure_requests: self.env.azure_requests(),
            shut_down: false,
            faults: self
                .env
                .control_plane
                .as_ref()
                .and_then(|cp| cp.faults_injected()),
        }
    }

    /// The summary of a run a shutdown ended.
    pub(in crate::agent) fn stopped(
        &self,
        outcomes: Vec<UnitOutcome>,
        commit: Option<String>,
    ) -> RunSummary {
        let mut summary = self.summary(outcomes, commit);
        summary.shut_down = true;
        // Units left unsettled by a shutdown are reported as such, not as timed out.
        summary.timed_out.clear();
        summary
    }
}

/// A unit no pass reached keeps the report published before (what was done stands, the run only
/// did not look again); without one, its report says it was not started.
fn keeps_earlier_report(o: &UnitOutcome, published_before: bool) -> bool {
    published_before && report::phase(o) == report::Phase::NotStarted
}

/// A pass reports what it did to each object; the report of a revision says what applying it did.
/// So when `before` (a report published earlier, YAML) is of the same revision, an object this
/// pass found unchanged keeps the action reported then (created, updated, adopted), and a deletion
/// reported then stays reported (as [`crate::agent::controller::carry::carry_actions`] does between the passes of one
/// process).
fn carry_from_report(before: &[u8], next: &mut UnitOutcome) {
    use crate::object::ObjectKey;
    use crate::report::{ObjectAction, ObjectOutcome};
    use serde_json::{Value, json};
    let Some(before) = std::str::from_utf8(before)
        .ok()
        .and_then(|text| crate::yaml::from_str(text).ok())
    else {
        return;
    };
    if before.get("revision").and_then(Value::as_str) != Some(next.reported_revision()) {
        return;
    }
    let text = |o: &Value, field: &str| o.get(field).and_then(Value::as_str).map(str::to_string);
    let earlier: Vec<(ObjectKey, String, &Value)> = before
        .get("objects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let mut metadata = json!({ "name": o.get("name")? });
            if let Some(ns) = o.get("namespace") {
                metadata["namespace"] = ns.clone();
            }
            let key = ObjectKey::from_object(&json!({
                "apiVersion": o.get("apiVersion")?,
                "kind": o.get("kind")?,
                "metadata": metadata,
            }))
            .ok()?;
            Some((key, text(o, "action")?, o))
        })
        .collect();
    for o in &mut next.objects {
        if o.action != ObjectAction::Unchanged {
            continue;
        }
        let action = earlier
            .iter()
            .find(|(key, _, _)| *key == o.key)
            .map(|(_, action, _)| action.as_str());
        o.action = match action {
            Some("created") => ObjectAction::Created,
            Some("updated") => ObjectAction::Updated,
            Some("adopted") => ObjectAction::Adopted,
            _ => continue,
        };
    }
    for (key, action, o) in &earlier {
        if action == "deleted" && !next.objects.iter().any(|n| n.key == *key) {
            next.objects.push(ObjectOutcome {
                key: key.clone(),
                action: ObjectAction::Deleted,
                ready: o.get("ready").and_then(Value::as_bool).unwrap_or(false),
                reason: text(o, "reason"),
                message: text(o, "message"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectKey;
    use crate::report::{AzureMode, ObjectAction, ObjectOutcome};

    fn outcome(revision: &str, actions: &[(&str, ObjectAction)]) -> UnitOutcome {
        UnitOutcome {
            rendered_at: None,
            held: None,
            unit: "clusters/dev".into(),
            cluster: None,
            revision: revision.into(),
            stale_source: None,
            azure: AzureMode::Simulated,
            objects: actions
                .iter()
                .map(|(n, a)| ObjectOutcome {
                    key: ObjectKey {
                        group: Default::default(),
                        version: "v1".into(),
                        kind: "ConfigMap".into(),
                        namespace: Some("ns".into()),
                        name: n.to_string(),
                    },
                    action: a.clone(),
                    ready: true,
                    reason: None,
                    message: None,
                })
                .collect(),
            errors: vec![],
            standing: crate::report::Standing::unknown(None),
        }
    }

    fn actions(o: &UnitOutcome) -> Vec<(String, ObjectAction)> {
        o.objects
            .iter()
            .map(|o| (o.key.name.clone(), o.action.clone()))
            .collect()
    }

    #[test]
    fn a_rerun_of_the_same_revision_reports_what_applying_it_did() {
        let first = outcome(
            "r1",
            &[
                ("a", ObjectAction::Created),
                ("b", ObjectAction::Updated),
                ("c", ObjectAction::Unchanged),
                ("gone", ObjectAction::Deleted),
            ],
        );
        let published = report::to_yaml(&report::build(&first));
        let rerun = [
            ("a", ObjectAction::Unchanged),
            ("b", ObjectAction::Unchanged),
            ("c", ObjectAction::Failed),
        ];
        let mut same = outcome("r1", &rerun);
        carry_from_report(published.as_bytes(), &mut same);
        let expected = [
            ("a", ObjectAction::Created),
            ("b", ObjectAction::Updated),
            ("c", ObjectAction::Failed),
            ("gone", ObjectAction::Deleted),
        ];
        assert_eq!(actions(&same), actions(&outcome("r1", &expected)));

        // Another revision: what this pass did.
        let mut next = outcome("r2", &rerun);
        carry_from_report(published.as_bytes(), &mut next);
        assert_eq!(actions(&next), actions(&outcome("r2", &rerun)));
    }

    #[test]
    fn a_unit_no_pass_reached_keeps_the_report_published_before_else_says_not_started() {
        let mut o = outcome("r1", &[]);
        o.standing = crate::report::Standing::not_started("not started: deadline".into());
        assert!(keeps_earlier_report(&o, true));
        assert!(!keeps_earlier_report(&o, false));
        let ran = outcome("r1", &[("a", ObjectAction::Created)]);
        assert!(!keeps_earlier_report(&ran, true));
    }

    #[test]
    fn only_outcomes_that_changed_since_the_last_publish_are_built() {
        let a = outcome("r1", &[("a", ObjectAction::Created)]);
        let mut b = outcome("r1", &[("b", ObjectAction::Created)]);
        b.unit = "clusters/prod".into();
        let last: BTreeMap<String, ReportDigest> = [
            (a.unit.clone(), report_digest(&a)),
            (b.unit.clone(), report_digest(&b)),
        ]
        .into();
        assert!(changed_outcomes(&[&a, &b], &last).is_empty());
        // Any field the report shows counts: an error more, or a held unit.
        let mut failed = a.clone();
        failed.errors.push(crate::report::UnitError::default());
        let mut held = a.clone();
        held.held = Some(crate::report::Held {
            newest: "r2".into(),
            why: "waiting for wave dev".into(),
        });
        assert_eq!(changed_outcomes(&[&failed, &held, &b], &last).len(), 2);

        // A kept unit on the next commit: its report names the commit it was rendered at, the
        // same as before, so it is not built again.
        let mut kept = a.clone();
        kept.rendered_at = Some("r1".into());
        kept.revision = "r2".into();
        assert!(changed_outcomes(&[&kept, &b], &last).is_empty());
        // Built anyway, it would find the same bytes: nothing to commit.
        let earlier: BTreeMap<_, _> = packed(build_reports(&[&a], &BTreeMap::new())).collect();
        let files = build_reports(&[&kept], &earlier);
        assert_eq!(files.len(), 2, "its Markdown and YAML");
        assert!(
            changed_files(files, &earlier).is_empty(),
            "nothing to commit"
        );

        // A unit passed over on r2: only its two files change.
        let next = outcome("r2", &[("a", ObjectAction::Unchanged)]);
        let files = build_reports(&changed_outcomes(&[&next, &b], &last), &earlier);
        let changed = changed_files(files, &earlier);
        let names: Vec<_> = changed.keys().cloned().collect();
        let (md, yaml) = report::outcome_paths(&next);
        assert_eq!(names, vec![md, yaml]);
    }

    #[test]
    fn a_kept_unit_passed_over_again_keeps_what_applying_its_commit_did() {
        let first = outcome("r1", &[("a", ObjectAction::Created)]);
        let published = report::to_yaml(&report::build(&first));
        let mut again = outcome("r2", &[("a", ObjectAction::Unchanged)]);
        again.rendered_at = Some("r1".into());
        carry_from_report(published.as_bytes(), &mut again);
        assert_eq!(actions(&again), actions(&first));
    }
}
