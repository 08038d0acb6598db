//! Runs after the first: on the same state nothing is written and nothing committed; a change to
//! one cluster touches that cluster only.

use super::*;
use std::collections::BTreeMap;

/// Parses "requests to the cluster: N reads, M writes" from the binary's stdout.
fn request_counts(stdout: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("requests to the cluster: "))
        .unwrap_or_else(|| panic!("no request counts in:\n{stdout}"));
    let (reads, writes) = line.split_once(", ").expect("reads, writes");
    let number = |s: &str, unit: &str| -> u64 {
        s.strip_suffix(unit)
            .unwrap_or_else(|| panic!("{s:?} ends with {unit:?}"))
            .trim()
            .parse()
            .expect("a count")
    };
    (number(reads, " reads"), number(writes, " writes"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerunning_on_the_same_state_writes_nothing() {
    let f = Fleet::plain();
    let first = f.run().await;
    assert!(!first.failed());
    let first_commit = first.report_commit.clone().expect("first reports");

    // Second run: nothing to apply; the pass finds every object unchanged, but the report of
    // the same revision still says what applying it did ("created"), so nothing is committed.
    let second = f.run().await;
    assert_eq!(second.writes, 0, "no write to the cluster on a rerun");
    assert!(second.reads > 0);
    for unit in [DEV, PROD] {
        let o = outcome(&second, unit);
        assert_converged(o);
        assert!(
            o.objects
                .iter()
                .all(|ob| ob.action == ObjectAction::Unchanged),
            "{}",
            describe(o)
        );
    }
    assert_eq!(second.report_commit, None, "a rerun commits no report");
    let after_second = f.status_commits();
    assert_eq!(after_second, vec![first_commit]);
    let dev = f.report("reports/aro-dev/dev.yaml").expect("dev's report");
    assert!(
        dev.contains("action: created") && !dev.contains("action: unchanged"),
        "{dev}"
    );

    // Third run: the same.
    let third = f.run().await;
    assert_eq!(third.writes, 0);
    assert_eq!(third.report_commit, None, "no new report commit");
    assert_eq!(f.status_commits(), after_second);
    assert_eq!(third.outcomes, second.outcomes);

    // The binary, on the same state.
    f.wait_store_free().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .arg("run")
        .arg("--repo")
        .arg(&f.url)
        .arg("--state")
        .arg(&f.state)
        .args(["--once", "--sim-delay", "0s", "--timeout", "60s"])
        .env("ARO_GITOPS_LOG", "warn")
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (reads, writes) = request_counts(&stdout);
    assert!(reads > 0, "{stdout}");
    assert_eq!(writes, 0, "{stdout}");
    assert!(
        stdout.contains("reports unchanged: nothing committed"),
        "{stdout}"
    );
    // The simulated Azure endpoints ran beside the control plane, and the summary counts them.
    assert!(
        stdout.lines().any(|l| l.starts_with("azure: ")
            && l.contains(" token requests, ")
            && l.ends_with(" key vault requests (simulated)")),
        "{stdout}"
    );
    assert!(third.azure_requests.is_some());
    assert_eq!(f.status_commits(), after_second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_one_cluster_updates_only_that_cluster() {
    let f = Fleet::plain();
    let first = f.run().await;
    assert!(!first.failed());
    let prod_keys: Vec<ObjectKey> = outcome(&first, PROD)
        .objects
        .iter()
        .map(|o| o.key.clone())
        .collect();
    let versions = |keys: Vec<ObjectKey>| {
        f.inspect(|cluster| async move {
            let mut out = BTreeMap::new();
            for k in keys {
                let obj = live(&cluster, &k).await;
                out.insert(
                    k.to_string(),
                    obj["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
            out
        })
    };
    let prod_before = versions(prod_keys.clone()).await;

    f.replace(
        "components/dev/kustomization.yaml",
        "value: Standard_D4s_v3",
        "value: Standard_D16s_v3",
    );
    let second = f.run().await;
    assert!(!second.failed());
    let dev = outcome(&second, DEV);
    assert_converged(dev);
    let updated = with_action(dev, &ObjectAction::Updated);
    assert_eq!(
        updated,
        vec![
            "AROMachinePool/aro-dev/dev-workers",
            "HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers"
        ],
        "the workers pool and the node pool it embeds: {}",
        describe(dev)
    );
    let prod = outcome(&second, PROD);
    assert_converged(prod);
    assert!(
        prod.objects
            .iter()
            .all(|o| o.action == ObjectAction::Unchanged),
        "{}",
        describe(prod)
    );
    assert_ne!(dev.revision, outcome(&first, DEV).revision);

    let pool = key(
        HCP,
        "HcpOpenShiftClustersNodePool",
        "aro-dev",
        "aro-dev-workers",
    );
    let live_pool = f
        .inspect(|cluster| async move { live(&cluster, &pool).await })
        .await;
    assert_eq!(
        live_pool["spec"]["properties"]["platform"]["vmSize"],
        "Standard_D16s_v3"
    );
    assert!(condition_true(&live_pool, "Ready"), "{live_pool:#}");
    let prod_after = versions(prod_keys).await;
    assert_eq!(prod_before, prod_after, "no prod object was written");
}
