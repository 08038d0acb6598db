//! The status page as users meet it beyond a converging leader: a standby replica
//! (`--leader-elect`) shows the fleet as the leader reports it on the status branch, saying whose
//! report it is and from which commit; a unit broken on its first revision (no cluster known) has
//! a page of its own, naming its error and what it renders.

use super::leader::{CONVERGE_DEADLINE, Replica, fleet_converged, holder, simulated_server};
use super::resync::{Running, http_get};
use super::*;
use common::kubectl::poll_until;

/// How long a page may take to show what is wanted (a debug build, a shared machine).
const DEADLINE: Duration = Duration::from_secs(180);

const STATUS_PAGE: &str = "status page: serving on http://";

/// Polls `path` on `addr` until `done` holds of its body.
fn page_where(addr: &str, path: &str, done: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok((_, body)) = http_get(addr, path) {
            if done(&body) {
                return body;
            }
            last = body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} not as wanted within {DEADLINE:?}:\n{last}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_standby_shows_the_fleet_as_the_leader_reports_it() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    let extra = ["--status-bind-address", "127.0.0.1:0"];
    let mut a = Replica::start(&f, "a", &server, &extra);
    let mut b = Replica::start(&f, "b", &server, &extra);
    let first = poll_until(Duration::from_secs(30), "a Lease holder", || {
        holder(&server)
    });
    let (leader, standby) = if first == a.identity {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    poll_until(CONVERGE_DEADLINE, "the fleet converged", || {
        fleet_converged(&f).then_some(())
    });
    let addr = standby.after(STATUS_PAGE, Duration::from_secs(10));
    let addr = addr.trim_end_matches('/');

    // The standby's index: both units with the leader's phases, under a banner that names the
    // leader and the status branch's commit.
    let index = page_where(addr, "/", |body| {
        body.matches("data-phase=\"Converged\"").count() == 2
    });
    assert!(index.contains("data-cluster=\"aro-dev/dev\""), "{index}");
    assert!(index.contains("data-cluster=\"aro-prod/prod\""), "{index}");
    assert!(
        index.contains(&format!(
            "this is the leader <b class=\"holder\">{}</b>'s report",
            leader.identity
        )),
        "{index}"
    );
    let commits = f.status_commits();
    let shown = index
        .split("data-leader-commit=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the leader's commit on the page");
    assert!(
        commits.iter().any(|c| c == shown),
        "{shown} is a commit of the status branch: {commits:?}"
    );

    // The snapshot says the same, and the cluster page shows the leader's report and history.
    let (_, json) = http_get(addr, "/api/status").expect("the snapshot");
    let json: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["leader"]["holder"], leader.identity.as_str(), "{json}");
    let phases: Vec<(&str, &str)> = json["units"]
        .as_array()
        .expect("units")
        .iter()
        .map(|u| (u["unit"].as_str().unwrap(), u["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(phases, vec![(DEV, "Converged"), (PROD, "Converged")]);
    let page = page_where(addr, "/clusters/aro-dev/dev", |body| {
        body.contains("<table class=\"history\">")
    });
    assert!(page.contains("ExternalAuth ready"), "{page}");

    // The standby applied nothing meanwhile.
    standby.drain();
    assert!(
        !standby.seen.iter().any(|l| l.contains("applied object=")),
        "the standby applied something:\n{}",
        standby.seen.join("\n")
    );
}

#[test]
fn a_unit_broken_on_its_first_revision_has_a_page_naming_its_error_and_its_objects() {
    let f = Fleet::plain();
    // dev's overlay drops the HcpOpenShiftCluster from its control plane: a schema violation, so
    // dev fails before any of its objects (its Cluster included) is known to the agent.
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: remove\n  path: /spec/resources/0",
    );
    let secret = "s3cr3t-unit-page-value";
    f.write(
        "clusters/dev/token.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  token: {secret}\n"
        ),
    );
    f.add_resource(DEV, "token.yaml");
    let agent = Running::start_with(
        &f,
        &["--status-bind-address", "127.0.0.1:0", "--interval", "1s"],
    );
    let addr = agent.served_address(STATUS_PAGE, "/", DEADLINE);

    // The index links the unit (no cluster known) to its own page.
    let index = page_where(&addr, "/", |body| {
        body.contains("href=\"/units/clusters/dev\"")
            && body.contains("data-cluster=\"aro-prod/prod\" data-phase=\"Converged\"")
    });
    assert!(
        index.contains("data-unit=\"clusters/dev\" data-phase=\"Failed\""),
        "{index}"
    );

    // Its page: the error with its file and object, and what the unit renders.
    let page = page_where(&addr, "/units/clusters/dev", |body| {
        body.contains("<h3>Rendered objects</h3>")
    });
    assert!(
        page.contains("No cluster of this unit is known yet"),
        "{page}"
    );
    assert!(page.contains("<h3>Errors</h3>"), "{page}");
    assert!(
        page.contains("base/cluster/arocontrolplane.yaml"),
        "the file: {page}"
    );
    assert!(page.contains("AROControlPlane/aro-dev/dev"), "{page}");
    assert!(page.contains("/spec/resources"), "the field: {page}");
    for row in [
        "<td>aro-dev/dev</td>",
        ">Secret</td>",
        "clusters/dev/token.yaml",
    ] {
        assert!(
            page.contains(row),
            "{row} among the rendered objects: {page}"
        );
    }
    assert!(!page.contains(secret), "no secret value: {page}");
    let (_, json) = http_get(&addr, "/api/status").expect("the snapshot");
    assert!(!json.contains(secret), "{json}");
    let (head, _) = http_get(&addr, "/units/clusters/nope").expect("a 404");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}
