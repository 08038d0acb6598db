//! `aro-gitops rollout resume --revision SHA`, through the binary on the embedded control plane
//! with a real git repository: the paused rollout is recorded on the fleet's Lease (written here
//! through the library, as the agent writes it), the command records the resume there, and the
//! record reads back; a revision that is not the paused one is refused with exit 1.

mod common;

use aro_gitops::agent::rollout_record::{self, lease_name};
use aro_gitops::rollout::Paused;
use common::fleet::{DEV, Fleet, PROD};
use k8s_openapi::api::coordination::v1::Lease;
use std::collections::BTreeSet;

fn paused() -> Paused {
    Paused {
        wave: "dev".into(),
        failing: vec![
            (
                DEV.into(),
                vec!["AROCluster/aro-dev/dev: quota exceeded".into()],
            ),
            (PROD.into(), vec![]),
        ],
    }
}

/// Records the pause of `revision` on the Lease of `fleet`.
fn pause(f: &Fleet, fleet: &str, revision: &str) {
    let p = paused();
    f.with_client(async |client| {
        rollout_record::record_paused(&client, fleet, &p, revision)
            .await
            .expect("the pause is recorded");
    });
}

#[test]
fn resume_records_the_forgiven_units_on_the_fleets_lease() {
    let (f, first) = Fleet::git();
    let fleet = f.scope().name;
    pause(&f, &fleet, &first);

    let out = f.aro_gitops(&["rollout", "resume", "--revision", &first[..7]]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.trim(),
        format!(
            "rollout of {} resumed: 2 failing units forgiven ({DEV}, {PROD})",
            &first[..7]
        ),
        "{}",
        out.all()
    );

    let (record, lease) = f.with_client(async |client| {
        let record = rollout_record::read(&client, &fleet).await.expect("read");
        let api: kube::Api<Lease> = kube::Api::namespaced(client, "aro-gitops-system");
        (
            record,
            api.get(&lease_name(&fleet)).await.expect("the Lease"),
        )
    });
    let resume = record.resume.expect("a resume recorded");
    assert_eq!(resume.revision, first, "the full commit id");
    let want: BTreeSet<String> = [DEV, PROD].map(String::from).into();
    assert_eq!(resume.forgiven, want);
    assert_eq!(
        record.paused,
        Some((first.clone(), paused())),
        "the pause stays"
    );
    let annotations = lease.metadata.annotations.unwrap_or_default();
    assert!(
        annotations.contains_key(rollout_record::RESUME_ANNOTATION),
        "{annotations:?}"
    );

    // Resuming again changes nothing and says the same.
    let again = f.aro_gitops(&["rollout", "resume", "--revision", &first]);
    again.expect_code(0);
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn resume_refuses_a_revision_that_is_not_paused() {
    let (f, first) = Fleet::git();
    let fleet = f.scope().name;

    // Nothing paused yet.
    let out = f.aro_gitops(&["rollout", "resume", "--revision", &first[..7]]);
    out.expect_code(1);
    assert!(
        out.stderr.contains(&format!(
            "no rollout of {} is paused: the fleet's record holds no paused rollout",
            &first[..7]
        )),
        "{}",
        out.all()
    );

    // Another revision is paused.
    pause(&f, &fleet, &first);
    let out = f.aro_gitops(&["rollout", "resume", "--revision", "abcdef0"]);
    out.expect_code(1);
    assert!(
        out.stderr
            .contains(&format!("the paused rollout is that of {}", &first[..7])),
        "{}",
        out.all()
    );

    // Too short to name a commit.
    let out = f.aro_gitops(&["rollout", "resume", "--revision", &first[..5]]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("at least 7 characters"),
        "{}",
        out.all()
    );

    let record = f.with_client(async |client| rollout_record::read(&client, &fleet).await);
    assert_eq!(record.expect("read").resume, None, "nothing recorded");
}

#[test]
fn the_fleet_flag_names_the_lease() {
    let (f, first) = Fleet::git();
    pause(&f, "team-a", &first);
    // The repository's own fleet has nothing paused.
    f.aro_gitops(&["rollout", "resume", "--revision", &first])
        .expect_code(1);
    let out = f.aro_gitops(&[
        "rollout",
        "resume",
        "--revision",
        &first,
        "--fleet",
        "team-a",
    ]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("2 failing units forgiven"),
        "{}",
        out.all()
    );
}
