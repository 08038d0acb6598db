//! Tests of [`super`]: the record's annotations, resumes, and the Lease written only on a change.

use super::*;

const REV: &str = "0123456789abcdef0123456789abcdef01234567";

fn paused() -> Paused {
    Paused {
        wave: "dev".into(),
        failing: vec![
            ("clusters/dev-1".into(), vec!["quota exceeded".into()]),
            ("clusters/dev-2".into(), vec![]),
        ],
    }
}

fn annotations(record: &Record) -> BTreeMap<String, String> {
    (record.to_annotations().into_iter())
        .filter_map(|(k, v)| Some((k, v?)))
        .collect()
}

#[test]
fn lease_names_are_per_fleet_and_valid() {
    assert_eq!(lease_name(""), "aro-gitops-rollout");
    let a = lease_name("/tmp/x/Repo.git");
    assert!(a.starts_with("aro-gitops-rollout-tmp-x-repo-git-"), "{a}");
    assert_ne!(
        a,
        lease_name("/tmp/x/repo.git"),
        "a digest of the exact name"
    );
    let long = lease_name(&"https://example.com/".repeat(30));
    assert!(long.len() <= 70, "{long}");
    for n in [a, long, lease_name("///")] {
        assert!(
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert!(!n.ends_with('-'), "{n}");
    }
}

#[test]
fn the_record_round_trips_through_annotations() {
    let record = Record {
        paused: Some((REV.into(), paused())),
        resume: Some(Resume {
            revision: REV.into(),
            forgiven: ["clusters/dev-1".to_string()].into(),
        }),
        ..Default::default()
    };
    let a = annotations(&record);
    assert_eq!(Record::from_annotations("l", &a).unwrap(), record);
    assert_eq!(
        Record::from_annotations("l", &BTreeMap::new()).unwrap(),
        Record::default()
    );
    let bad = BTreeMap::from([(PAUSED_ANNOTATION.to_string(), "{".to_string())]);
    let e = Record::from_annotations("l", &bad).unwrap_err().to_string();
    assert!(
        e.contains("Lease aro-gitops-system/l: annotation aro-gitops.dev/rollout-paused"),
        "{e}"
    );
}

#[test]
fn resume_forgives_the_failing_units_of_the_recorded_pause() {
    let record = Record {
        paused: Some((REV.into(), paused())),
        resume: None,
        ..Default::default()
    };
    let r = record.resume("0123456").unwrap();
    assert_eq!(r.revision, REV, "the full id is recorded");
    assert_eq!(
        r.forgiven,
        ["clusters/dev-1", "clusters/dev-2"]
            .map(String::from)
            .into()
    );
    assert_eq!(record.resume(REV).unwrap(), r);
    assert_eq!(record.resume(&REV.to_uppercase()[..10]).unwrap(), r);
}

#[test]
fn a_second_pause_of_the_same_revision_adds_to_what_was_forgiven() {
    let mut record = Record {
        paused: Some((REV.into(), paused())),
        resume: Some(Resume {
            revision: REV.into(),
            forgiven: ["clusters/canary".to_string()].into(),
        }),
        ..Default::default()
    };
    assert_eq!(record.resume(REV).unwrap().forgiven.len(), 3);
    record.resume.as_mut().unwrap().revision = "ffffffffff".into();
    assert_eq!(
        record.resume(REV).unwrap().forgiven.len(),
        2,
        "another revision's"
    );
}

#[test]
fn resume_refuses_what_is_not_paused() {
    let none = Record::default();
    let e = none.resume("0123456").unwrap_err().to_string();
    assert_eq!(
        e,
        "no rollout of 0123456 is paused: the fleet's record holds no paused rollout"
    );
    let record = Record {
        paused: Some((REV.into(), paused())),
        resume: None,
        ..Default::default()
    };
    let e = record.resume("abcdef0").unwrap_err().to_string();
    assert!(e.contains("the paused rollout is that of 0123456"), "{e}");
    for short in ["012345", "", "main", "0123456z"] {
        assert!(
            matches!(record.resume(short), Err(RecordError::BadRevision(_))),
            "{short:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_written_only_when_the_record_changes() {
    use crate::controlplane::{Config, ControlPlane};
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().join("cp"));
    config.preload_crds = false;
    let cp = ControlPlane::open(config).unwrap();
    let client = cp.client();
    let version = async || {
        let lease = api(&client).get(&lease_name("fleet")).await.unwrap();
        lease.metadata.resource_version.unwrap()
    };
    assert_eq!(read(&client, "fleet").await.unwrap(), Record::default());
    let e = record_resume(&client, "fleet", REV).await.unwrap_err();
    assert!(matches!(e, RecordError::NotPaused { .. }), "{e}");
    // The namespace is created with the Lease.
    record_paused(&client, "fleet", &paused(), REV)
        .await
        .unwrap();
    let first = version().await;
    record_paused(&client, "fleet", &paused(), REV)
        .await
        .unwrap();
    assert_eq!(version().await, first, "the same pause writes nothing");
    let resume = record_resume(&client, "fleet", &REV[..7]).await.unwrap();
    let second = version().await;
    assert_ne!(second, first);
    assert_eq!(record_resume(&client, "fleet", REV).await.unwrap(), resume);
    assert_eq!(version().await, second, "the same resume writes nothing");
    let record = read(&client, "fleet").await.unwrap();
    assert_eq!(record.resume.as_ref(), Some(&resume));
    assert_eq!(record.paused, Some((REV.to_string(), paused())));
    // A shard's standing: written once, beside the pause and the resume.
    let standing = Standing {
        revision: REV.into(),
        units: BTreeMap::from([("clusters/dev-1".into(), crate::rollout::State::Progressing)]),
    };
    record_standing(&client, "fleet", (1, 2), &standing)
        .await
        .unwrap();
    let third = version().await;
    assert_ne!(third, second);
    record_standing(&client, "fleet", (1, 2), &standing)
        .await
        .unwrap();
    assert_eq!(version().await, third, "the same standing writes nothing");
    let record = read(&client, "fleet").await.unwrap();
    assert_eq!(record.standings[&(1, 2)], standing);
    assert_eq!(record.resume, Some(resume));
    // Another fleet's Lease is another record.
    assert_eq!(read(&client, "other").await.unwrap(), Record::default());
    let lease = api(&client).get(&lease_name("fleet")).await.unwrap();
    let annotations = lease.metadata.annotations.unwrap();
    assert_eq!(annotations[crate::marks::FLEET_ANNOTATION], "fleet");
}
