//! See `tests/safety.rs`.
use super::*;

/// A Secret whose values are written with `stringData` (the server folds them into `data`).
const SECRET: &str = "apiVersion: v1
kind: Secret
metadata:
  name: app-credentials
type: Opaque
stringData:
  password: s3cr3t-Value-42
  username: admin-user
";

/// The values that must never be printed, and their base64 spelling as the server stores them.
const SECRET_VALUES: [&str; 4] = [
    "s3cr3t-Value-42",
    "admin-user",
    "czNjcjN0LVZhbHVlLTQy",
    "YWRtaW4tdXNlcg==",
];

const STATUS_BRANCH: &str = "aro-gitops/status";

/// `run --once` with more arguments; it must converge.
fn run_once(fleet: &Fleet, more: &[&str]) -> Output {
    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "60s"];
    args.extend_from_slice(more);
    let out = fleet.aro_gitops(&args);
    assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());
    out
}

/// The `(reads, writes)` of the run's "requests to the cluster: N reads, M writes" line.
fn requests(out: &Output) -> (u64, u64) {
    let line = out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .find_map(|l| l.strip_prefix("requests to the cluster: "))
        .unwrap_or_else(|| panic!("no request count:\n{}", out.all()));
    let n: Vec<u64> = line
        .split(", ")
        .map(|p| {
            p.split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("a count in {line:?}"))
        })
        .collect();
    (n[0], n[1])
}

/// Every file of the status branch, as `(path, text)`.
fn status_files(fleet: &Fleet) -> Vec<(String, String)> {
    git::git(
        &fleet.repo,
        &["ls-tree", "-r", "--name-only", STATUS_BRANCH],
    )
    .lines()
    .map(|p| {
        let text = git::show(&fleet.repo, STATUS_BRANCH, p).expect("a file of the branch");
        (p.to_string(), text)
    })
    .collect()
}

fn assert_no_secret_value(what: &str, text: &str) {
    for v in SECRET_VALUES {
        assert!(!text.contains(v), "{what} shows a secret value:\n{text}");
    }
}

#[test]
fn case_10_secret_with_string_data_is_not_drifted_and_self_heal_writes_nothing() {
    let (fleet, _) = Fleet::git();
    fleet.write(&format!("{DEV}/secret.yaml"), SECRET);
    fleet.add_resource(DEV, "secret.yaml");
    fleet.commit("a secret written with stringData");
    let first = run_once(&fleet, &["--log", "debug"]);
    assert_no_secret_value("the first run", &first.all());

    // Nothing changed: no drift, in the run without self-heal ...
    let again = run_once(&fleet, &["--log", "debug"]);
    assert_no_secret_value("the second run", &again.all());
    assert!(
        !again.all().to_lowercase().contains("drift: live differs"),
        "an unchanged Secret shows as drifted:\n{}",
        again.all()
    );
    assert_eq!(requests(&again).1, 0, "{}", again.all());
    // ... and with it, which writes nothing.
    let healed = run_once(&fleet, &["--self-heal", "--log", "debug"]);
    assert_no_secret_value("the self-healing run", &healed.all());
    assert_eq!(
        requests(&healed).1,
        0,
        "self-heal wrote to an unchanged cluster:\n{}",
        healed.all()
    );
    assert!(
        !healed.all().to_lowercase().contains("drifted=true"),
        "{}",
        healed.all()
    );

    // The report on the status branch shows no drift and no value.
    let files = status_files(&fleet);
    let report = files
        .iter()
        .find(|(p, _)| p == "reports/aro-dev/dev.md")
        .unwrap_or_else(|| panic!("no report of dev in {:?}", files.iter().map(|f| &f.0)));
    assert!(
        report.1.contains("Secret/aro-dev/app-credentials") || report.1.contains("app-credentials"),
        "the report lists the Secret:\n{}",
        report.1
    );
    for (path, text) in &files {
        assert!(
            !text.to_lowercase().contains("drifted"),
            "{path} shows drift:\n{text}"
        );
        assert_no_secret_value(path, text);
    }

    // `aro-gitops drift` and `plan` agree: nothing drifted, nothing to change for the Secret.
    let drift = fleet.aro_gitops(&["drift"]);
    assert_eq!(drift.code, 0, "drift found something:\n{}", drift.all());
    assert_no_secret_value("drift", &drift.all());
    let plan = fleet.plan(&["-o", "json"]);
    assert_no_secret_value("plan", &plan.all());
    let preview = plan.json();
    let secret_changes: Vec<&serde_json::Value> = preview["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .flat_map(|c| c["changes"].as_array().into_iter().flatten())
        .filter(|c| c.to_string().contains("app-credentials"))
        .collect();
    assert!(
        secret_changes.is_empty(),
        "plan changes an unchanged Secret: {secret_changes:?}"
    );
}
