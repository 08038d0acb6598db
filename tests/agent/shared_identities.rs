//! The identity benchmark's invariants at small scale (issue 13, "How it is measured"): a fleet
//! from `aro-gitops-fleetgen --clusters 4 --identities 2 --kms` (every cluster's etcd key made by
//! the agent, in its own vault), the identities' Secrets applied to the control plane (they are
//! never in git), then `--once` runs: one token request per identity (not per cluster), Key Vault
//! requests ≤ 2 per cluster, none on a no-op rerun, and one identity's Secret rotated live costs
//! exactly 1 new token request. (`keyvault` has one cluster's key step in detail.)

use super::*;

const CLUSTERS: usize = 4;
const IDENTITIES: u64 = 2;

/// The generated fleet, committed (its `.gitignore` keeps `secrets/` out), as a fixture.
fn fleet() -> Fleet {
    let (clusters, identities) = (CLUSTERS.to_string(), IDENTITIES.to_string());
    Fleet::generated(&[
        "--clusters",
        &clusters,
        "--identities",
        &identities,
        "--kms",
    ])
}

/// Applies every object of the YAML file `path` to the control plane, as a person would.
async fn apply_file(f: &Fleet, path: &Path) {
    let text = std::fs::read_to_string(path).expect("read the YAML");
    let docs = aro_gitops::yaml::from_multi_str(&text).expect("YAML");
    f.inspect(|c| async move {
        for d in docs {
            let k = ObjectKey::from_object(&d).expect("an object");
            c.apply(&k, &d, "kubectl").await.expect("apply");
        }
    })
    .await;
}

fn requests(s: &RunSummary) -> (u64, u64) {
    let a = s.azure_requests.expect("Azure is simulated by the run");
    (a.token, a.key_vault)
}

fn assert_all_converged(s: &RunSummary) {
    assert_eq!(
        s.outcomes.len(),
        CLUSTERS + 1,
        "the clusters and the identities' unit"
    );
    for o in &s.outcomes {
        assert_converged(o);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_identities_cost_one_token_each_keys_once_and_a_rotation_one_more_token() {
    let f = fleet();
    apply_file(&f, &f.repo.join("secrets/identity-secrets.yaml")).await;

    let first = f.run().await;
    assert_all_converged(&first);
    let (tokens, key_vault) = requests(&first);
    assert_eq!(
        tokens, IDENTITIES,
        "one token per identity, not per cluster"
    );
    assert!(
        key_vault <= 2 * CLUSTERS as u64,
        "{key_vault} Key Vault requests"
    );
    let hcp = key(HCP, "HcpOpenShiftCluster", "aro-c00001", "aro-c00001");
    let version = f
        .inspect(|c| async move { live(&c, &hcp).await })
        .await
        .pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version")
        .and_then(Value::as_str)
        .map(str::to_string)
        .expect("the agent's key version is injected");

    let noop = f.run().await;
    assert_all_converged(&noop);
    assert_eq!(requests(&noop), (0, 0), "a no-op rerun asks Azure nothing");

    // One identity's Secret rotated live: its clusters' credential Secrets follow, after one
    // token request tried the new secret; the keys are not asked for again.
    let rotated = f.dir().join("rotated.yaml");
    std::fs::write(
        &rotated,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: aro-identity-01-secret\n  \
             namespace: aro-identities\ntype: Opaque\nstringData:\n  clientSecret: {ROTATED}\n"
        ),
    )
    .expect("write the rotated Secret");
    apply_file(&f, &rotated).await;
    let rotated = f.run().await;
    assert_all_converged(&rotated);
    assert_eq!(requests(&rotated), (1, 0), "exactly one new token request");
    let aso = key("v1", "Secret", "aro-c00001", "c00001-aso-secret");
    let (credential, hcp) = f
        .inspect(|c| async move {
            let hcp = key(HCP, "HcpOpenShiftCluster", "aro-c00001", "aro-c00001");
            (c.get(&aso).await.expect("get"), live(&c, &hcp).await)
        })
        .await;
    let credential = credential.expect("the cluster's ASO credential Secret");
    use base64::Engine;
    let secret = base64::engine::general_purpose::STANDARD
        .decode(
            credential["data"]["AZURE_CLIENT_SECRET"]
                .as_str()
                .expect("a secret"),
        )
        .expect("base64");
    assert_eq!(
        secret,
        ROTATED.as_bytes(),
        "the credential follows the rotation"
    );
    assert_eq!(
        hcp.pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version")
            .and_then(Value::as_str),
        Some(version.as_str()),
        "the key is untouched"
    );
}

const ROTATED: &str = "FAKE-rotated-client-secret-01-not-a-real-credential";
