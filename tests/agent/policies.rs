//! Reconcile policies and adoption (policies.md §1): `skip` is never written, an Azure resource
//! that already exists is adopted under `reconcile-policy-if-exists`, the decision is recorded
//! before the create (a crash in between cannot turn a created resource into an adopted one),
//! and both annotations on one object are refused before anything is applied.

use super::pruning::{resource_group, rg_arm_id, rg_key};
use super::*;
use aro_gitops::azuresim::inventory as azure;

const ADOPTION: &str = "aro-gitops.dev/adoption";
const POLICY: &str = "serviceoperator.azure.com/reconcile-policy";
const IF_EXISTS: &str = "serviceoperator.azure.com/reconcile-policy-if-exists";

fn annotation(obj: &Value, key: &str) -> Option<String> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

async fn get(f: &Fleet, k: &ObjectKey) -> Option<Value> {
    let k = k.clone();
    f.inspect(|c| async move { c.get(&k).await.expect("get") })
        .await
}

/// Records `arm_id` in the simulated Azure, as if the resource had been made outside aro-gitops.
async fn exists_in_azure(f: &Fleet, arm_id: &str) {
    let id = arm_id.to_string();
    f.inspect(|c| async move {
        azure::ensure(
            c.client(),
            &id,
            "Microsoft.Resources/resourceGroups",
            "test",
        )
        .await
        .expect("record a simulated Azure resource")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_is_read_and_reported_never_written() {
    let f = Fleet::plain();
    f.write(
        &format!("{DEV}/skipped.yaml"),
        &resource_group("skipped-rg", &format!("{POLICY}: skip")),
    );
    f.add_resource(DEV, "skipped.yaml");
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(
        with_action(o, &ObjectAction::Skipped),
        vec![rg_key("skipped-rg").to_string()],
        "{}",
        describe(o)
    );
    assert_eq!(report::phase(o), Phase::Converged, "{}", describe(o));
    assert!(
        get(&f, &rg_key("skipped-rg")).await.is_none(),
        "never created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_exists_adopts_an_existing_azure_resource_and_creates_a_missing_one() {
    let f = Fleet::plain();
    f.run().await; // installs the kinds, the simulator's record kind among them
    for name in ["existing-rg", "new-rg"] {
        f.write(
            &format!("{DEV}/{name}.yaml"),
            &resource_group(name, &format!("{IF_EXISTS}: skip")),
        );
        f.add_resource(DEV, &format!("{name}.yaml"));
    }
    exists_in_azure(&f, &rg_arm_id("existing-rg")).await;

    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Converged, "{}", describe(o));
    let existing = get(&f, &rg_key("existing-rg")).await.expect("created");
    assert_eq!(annotation(&existing, ADOPTION).as_deref(), Some("adopted"));
    assert_eq!(annotation(&existing, POLICY).as_deref(), Some("skip"));
    assert_eq!(annotation(&existing, IF_EXISTS), None);
    // Under skip the simulator only reads the existing resource: Ready.
    assert!(condition_true(&existing, "Ready"), "{existing:#}");

    let new = get(&f, &rg_key("new-rg")).await.expect("created");
    assert_eq!(annotation(&new, ADOPTION).as_deref(), Some("created"));
    assert_eq!(annotation(&new, POLICY), None, "created ones are managed");

    // Later runs keep the decisions: the adopted one is skip (never written again).
    let again = f.run().await;
    let o = outcome(&again, DEV);
    assert!(
        with_action(o, &ObjectAction::Skipped).contains(&rg_key("existing-rg").to_string()),
        "{}",
        describe(o)
    );
    assert_eq!(again.writes, 0, "{}", describe(o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_the_decision_and_the_create_does_not_turn_created_into_adopted() {
    let f = Fleet::plain();
    f.write(
        &format!("{DEV}/crash.yaml"),
        &resource_group("crash-rg", &format!("{IF_EXISTS}: skip")),
    );
    f.add_resource(DEV, "crash.yaml");
    // The binary records "created" (the resource does not exist yet) and dies before the create.
    f.wait_store_free().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--repo"])
        .arg(&f.url)
        .arg("--state")
        .arg(&f.state)
        .args(["--once", "--sim-delay", "0s", "--timeout", "60s"])
        .env("ARO_GITOPS_LOG", "warn")
        .env(agent::FAILPOINT_ENV, "exit-after-adoption-record")
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(137), "{out:?}");
    assert!(
        get(&f, &rg_key("crash-rg")).await.is_none(),
        "the create was not sent"
    );
    // Meanwhile the Azure resource appeared (the create that was in flight, say).
    exists_in_azure(&f, &rg_arm_id("crash-rg")).await;

    let s = f.run().await;
    assert_eq!(report::phase(outcome(&s, DEV)), Phase::Converged);
    let rg = get(&f, &rg_key("crash-rg"))
        .await
        .expect("created after the restart");
    assert_eq!(annotation(&rg, ADOPTION).as_deref(), Some("created"));
    assert_eq!(
        annotation(&rg, POLICY),
        None,
        "managed, not the if-exists policy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_policy_annotations_on_one_object_stop_the_unit_before_anything_is_applied() {
    let f = Fleet::plain();
    f.write(
        &format!("{DEV}/both.yaml"),
        &resource_group("both-rg", &format!("{POLICY}: manage, {IF_EXISTS}: skip")),
    );
    f.add_resource(DEV, "both.yaml");
    f.wait_store_free().await;
    let s = agent::run(f.config()).await.expect("runs");
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed);
    let message = o
        .errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(message.contains("cannot both be set"), "{message}");
    assert!(message.contains("both-rg"), "{message}");
    assert!(o.objects.is_empty(), "nothing applied: {}", describe(o));
    assert_converged(outcome(&s, PROD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_already_live_is_adopted_and_reported_so() {
    let f = Fleet::plain();
    f.run().await;
    // Someone created the ConfigMap before it was added to git.
    let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "handmade", "namespace": "aro-dev"}, "data": {"a": "1"}});
    let k = key("v1", "ConfigMap", "aro-dev", "handmade");
    let (k2, cm2) = (k.clone(), cm.clone());
    f.inspect(|c| async move { c.apply(&k2, &cm2, "kubectl").await.expect("create by hand") })
        .await;
    f.write(
        &format!("{DEV}/handmade.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: handmade\ndata:\n  a: \"1\"\n",
    );
    f.add_resource(DEV, "handmade.yaml");
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(
        with_action(o, &ObjectAction::Adopted),
        vec![k.to_string()],
        "{}",
        describe(o)
    );
    let yaml = f.report("reports/aro-dev/dev.yaml").expect("report");
    assert!(yaml.contains("action: adopted"), "{yaml}");
    // Adopted once: afterwards it is the agent's like any other.
    let again = f.run().await;
    assert!(with_action(outcome(&again, DEV), &ObjectAction::Adopted).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_policy_value_is_a_validation_error_naming_the_object() {
    let f = Fleet::plain();
    f.write(
        &format!("{DEV}/odd.yaml"),
        &resource_group("odd-rg", &format!("{POLICY}: sometimes")),
    );
    f.add_resource(DEV, "odd.yaml");
    f.wait_store_free().await;
    let s = agent::run(f.config()).await.expect("runs");
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed);
    let message = o
        .errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        message.contains("\"sometimes\" is not a reconcile policy"),
        "{message}"
    );
    assert!(message.contains("odd-rg"), "{message}");
    assert!(o.objects.is_empty());
}
