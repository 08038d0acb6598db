//! The example fleet converges on the real server to the objects and conditions it converges to
//! on the embedded default, and a rerun sends no write (Events included).

use super::common::snapshot;
use super::*;

#[test]
fn the_example_fleet_converges_as_on_the_embedded_default_and_a_rerun_writes_nothing() {
    let Some(real) = RealExamples::start() else {
        return;
    };
    // The same fleet on the embedded default, beside (its own copy and state).
    let (embedded, _) = Fleet::git();
    let (first, ()) = std::thread::scope(|s| {
        let on_embedded = s.spawn(|| {
            let run = ["run", "--once", "--sim-delay", "0s", "--timeout", "60s"];
            let out = embedded.aro_gitops(&[&run[..], &EXAMPLES_FLEET].concat());
            assert_eq!(out.code, 0, "the embedded run:\n{}", out.all());
        });
        let first = real.converge(&[]);
        (first, on_embedded.join().expect("the embedded run"))
    });
    for unit in [DEV, PROD] {
        assert_phase(&first, unit, "Converged");
        assert!(
            first
                .stdout
                .lines()
                .any(|l| l.starts_with(unit) && l.ends_with("10/10 complete")),
            "{unit} went the whole chain:\n{}",
            first.all()
        );
    }
    let (_, writes) = first.requests();
    assert!(writes > 0, "{}", first.all());

    let on_embedded = embedded.with_client(async |c| snapshot::take(c).await);
    let on_real = block_on(async { snapshot::take(real.cluster.admin_client().await).await });
    let differences = snapshot::differences(
        "the embedded control plane",
        &on_embedded,
        "the real server",
        &on_real,
    );
    assert!(
        differences.is_empty(),
        "the fleet converged differently ({} differences):\n{}",
        differences.len(),
        differences.join("\n")
    );
    // The simulator let the deploy base's ServiceAccount read its inventory (deploy/base itself
    // grants nothing about the simulator).
    let can = real.kubectl(&[
        "auth",
        "can-i",
        "get",
        "simulatedazureresources.azuresim.aro-gitops.dev",
        "-n",
        "aro-gitops-azure-simulator",
        "--as",
        "system:serviceaccount:aro-gitops-system:aro-gitops",
    ]);
    assert_eq!(can.trim(), "yes");
    // What was compared is the fleet: both clusters' ARO objects, ready, with their conditions.
    for key in [
        "AROControlPlane aro-dev/dev",
        "AROCluster aro-prod/prod",
        "AROMachinePool aro-dev/dev-workers",
        "HcpOpenShiftCluster aro-prod/aro-prod",
    ] {
        let s = on_real
            .get(key)
            .unwrap_or_else(|| panic!("{key} on the real server"));
        assert!(s.applied.is_some(), "{key} is the agent's: {s:?}");
        let conditions = s.conditions["conditions"].as_array();
        let ready = if s.kind.starts_with("ARO") {
            // CAPZ's ARO kinds say it in status.ready; ASO's kinds in a Ready condition.
            s.conditions["ready"] == true
        } else {
            conditions.is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        };
        assert!(ready, "{key} is ready: {s:?}");
        assert!(
            conditions.is_some_and(|cs| !cs.is_empty()),
            "{key} has conditions: {s:?}"
        );
    }

    // The units have settled: a rerun writes nothing, Events included.
    let second = real.converge(&[]);
    let (reads, writes) = second.requests();
    assert!(reads > 0, "{}", second.all());
    assert_eq!(writes, 0, "a rerun writes nothing:\n{}", second.all());
    assert!(
        second
            .stdout
            .contains("reports unchanged: nothing committed"),
        "{}",
        second.all()
    );
}
