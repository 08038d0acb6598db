//! Drift: a managed field changed with the real `kubectl edit` is reported by `aro-gitops drift`
//! with the field manager that changed it, reported (not corrected) by a run, and corrected by a
//! run with `--self-heal`.

use super::common::kubectl::Server;
use super::*;

const RG: &str = "aro-dev-rg";

fn rg() -> ObjectKey {
    key(
        "resources.azure.com/v1api20200601",
        "ResourceGroup",
        "aro-dev",
        RG,
    )
}

async fn location(f: &Fleet) -> String {
    let live = f.inspect(|c| async move { live(&c, &rg()).await }).await;
    live.pointer("/spec/location")
        .and_then(Value::as_str)
        .expect("a location")
        .to_string()
}

async fn drift(f: &Fleet) -> agent::DriftReport {
    f.wait_store_free().await;
    agent::drift(
        &f.url.to_string_lossy(),
        GitRef::RemoteHead,
        &Default::default(),
        &f.state,
        &agent::LiveTarget::Embedded,
        false,
    )
    .await
    .expect("drift runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubectl_edit_is_reported_with_its_manager_and_healed_on_request() {
    let f = Fleet::plain();
    f.run().await;
    let applied = location(&f).await;
    assert_eq!(drift(&f).await.exit_code(), 0, "no drift right after a run");

    // Someone edits the resource group's location with the real kubectl edit.
    f.wait_store_free().await;
    {
        // The "editor": changes the first `  location:` line (spec's; status has one too).
        let editor = f.dir().join("editor.sh");
        std::fs::write(
            &editor,
            format!(
                "#!/bin/sh\nsed -i '0,/^  location: {applied}$/s//  location: westus2/' \"$1\"\n"
            ),
        )
        .expect("write the editor script");
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&editor)
            .status()
            .expect("chmod");
        let mut server = Server::start_with_state(&f.state.join("control-plane"));
        let out = server
            .kubectl()
            .command(&[
                "edit",
                "resourcegroups.resources.azure.com",
                RG,
                "-n",
                "aro-dev",
            ])
            .env("KUBE_EDITOR", &editor)
            .output()
            .expect("kubectl edit runs");
        assert!(out.status.success(), "{out:?}");
        server.kill9();
    }
    assert_eq!(location(&f).await, "westus2");

    let report = drift(&f).await;
    assert_eq!(report.exit_code(), 2, "{}", report.text());
    let dev = report
        .units
        .iter()
        .find(|u| u.unit == DEV)
        .expect("the dev unit");
    assert_eq!(dev.objects.len(), 1, "{}", report.text());
    let object = &dev.objects[0];
    assert_eq!(object.object, rg().to_string());
    let field = object
        .fields
        .iter()
        .find(|x| x.path == "spec.location")
        .unwrap_or_else(|| panic!("spec.location drifted: {}", report.text()));
    assert_eq!(field.applied, Some(Value::String(applied.clone())));
    assert_eq!(field.live, Some(Value::String("westus2".into())));
    assert_eq!(field.managers, vec!["kubectl-edit".to_string()]);
    assert!(
        report.text().contains("changed by kubectl-edit"),
        "{}",
        report.text()
    );
    let prod = report.units.iter().find(|u| u.unit == PROD).expect("prod");
    assert!(prod.objects.is_empty());

    // A run without --self-heal reports the drift and leaves it.
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(
        with_action(o, &ObjectAction::Drifted),
        vec![rg().to_string()],
        "{}",
        describe(o)
    );
    let message = o
        .objects
        .iter()
        .find(|x| x.action == ObjectAction::Drifted)
        .and_then(|x| x.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("spec.location (changed by kubectl-edit)"),
        "{message}"
    );
    assert_eq!(location(&f).await, "westus2");
    let md = f.report("reports/aro-dev/dev.md").expect("the dev report");
    assert!(md.contains("drifted"), "{md}");

    // --self-heal puts git's value back.
    let mut config = f.config();
    config.self_heal = true;
    f.wait_store_free().await;
    let healed = agent::run(config).await.expect("runs");
    let o = outcome(&healed, DEV);
    assert_eq!(
        with_action(o, &ObjectAction::Updated),
        vec![rg().to_string()],
        "{}",
        describe(o)
    );
    assert_eq!(location(&f).await, applied);
    assert_eq!(drift(&f).await.exit_code(), 0);
}
