//! The status page in a real browser: Debian's headless `chromium` through `chromedriver`
//! (WebDriver, with fantoccini), against `aro-gitops run --status-bind-address` on a copy of
//! `examples-repo/` (the embedded control plane and the Azure simulator).
//!
//! One agent and one driver for the whole story (a browser takes seconds to start): the index shows
//! both clusters and their phases, a failed unit first with its error, a cluster page opens from its link, a commit shows up live
//! without a reload, a `<script>` and an `<img onerror>` in a cluster's description never run
//! (through the live update, a fresh load, and with JavaScript off), and the page works with
//! JavaScript off. The screenshot goes to the target dir (and to `docs/status-page.png`, which the
//! README shows, with `ARO_GITOPS_BLESS_SCREENSHOT=1`).
//!
//! The test skips, saying why, when the browser is not installed, unless
//! `ARO_GITOPS_REQUIRE_BROWSER=1` (CI) requires it.

mod common;

#[path = "browser/agent.rs"]
mod agent;
#[path = "browser/chrome.rs"]
mod chrome;
#[path = "browser/page.rs"]
mod page;

use common::fleet::Fleet;
use page::{Page, row};
use std::time::Duration;

/// How long the agent may take to serve, converge the fleet and pick up a commit (a debug build on
/// a shared machine; it takes seconds).
const DEADLINE: Duration = Duration::from_secs(90);
const DEV: &str = "aro-dev/dev";
const PROD: &str = "aro-prod/prod";
/// A unit that fails validation, and what its error says.
const STAGING: &str = "clusters/staging";
const STAGING_ERROR: &str = "min 6 is above max 4";
const DEV_DESCRIPTION: &str = "Development: small pools, one zone";
const PROD_DESCRIPTION: &str = "Production: three zones, customer-managed etcd key";
/// What an attacker with write access to one overlay would put in its description: it must show as
/// text and never run.
const INJECTED: &str = r#"<script>window.__pwned = "script"; document.title = "pwned"</script><img src="x" onerror="window.__pwned = 'img'; document.title = 'pwned'">"#;
/// Where the README's screenshot is kept (written with this set to `1`).
const BLESS_ENV: &str = "ARO_GITOPS_BLESS_SCREENSHOT";

/// A strategic merge patch setting the Cluster's `aro-gitops.io/description` (a YAML list entry of
/// the overlay's `patches:`).
fn description_patch(cluster: &str, description: &str) -> String {
    let quoted = description.replace('\'', "''");
    format!(
        "  - patch: |-\n      apiVersion: cluster.x-k8s.io/v1beta2\n      kind: Cluster\n      \
         metadata:\n        name: {cluster}\n        annotations:\n          \
         aro-gitops.io/description: '{quoted}'\n"
    )
}

/// `clusters/staging`: dev's overlay with its own name and namespace, and a node pool whose
/// autoscaling minimum is above its maximum (validation fails it before anything is applied).
fn add_failing_unit(fleet: &Fleet) {
    common::git::copy_dir(
        &fleet.repo.join("clusters/dev"),
        &fleet.repo.join("clusters/staging"),
    );
    let unit = "clusters/staging";
    fleet.replace(
        &format!("{unit}/kustomization.yaml"),
        "namespace: aro-dev\n",
        "namespace: aro-staging\n",
    );
    fleet.replace(
        &format!("{unit}/cluster-params.yaml"),
        "  name: dev\n",
        "  name: staging\n",
    );
    fleet.add_patches(
        unit,
        "  - target: {kind: AROMachinePool, name: staging-workers}\n    patch: |-\n      \
         - op: replace\n        path: /spec/resources/0/spec/properties/autoScaling\n        \
         value: {min: 6, max: 4}\n",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_the_fleet_live_escapes_descriptions_and_works_without_javascript() {
    let Some(driver) = chrome::driver_or_skip("the status page test") else {
        return;
    };
    let (fleet, _) = Fleet::git();
    add_failing_unit(&fleet);
    fleet.add_patches("clusters/dev", &description_patch("dev", DEV_DESCRIPTION));
    fleet.add_patches(
        "clusters/prod",
        &description_patch("prod", PROD_DESCRIPTION),
    );
    fleet.commit("the clusters' descriptions, and a unit that fails validation");
    let agent = agent::Agent::start(&fleet.repo, &fleet.state);
    let base = agent.status_url(DEADLINE);

    // The index: both clusters, their phases, their descriptions; both converge. The page's
    // script runs (it marks the document `live`).
    let page = Page::open(driver.session(true).await, &base).await;
    page.wait_attr("html", "class", DEADLINE, |c| {
        c.split(' ').any(|c| c == "live")
    })
    .await;
    for cluster in [DEV, PROD] {
        let phase = page
            .wait_attr(&row(cluster), "data-phase", DEADLINE, |p| p == "Converged")
            .await;
        let shown = page
            .wait_text(&format!("{} .phase", row(cluster)), DEADLINE, |_| true)
            .await;
        assert_eq!(
            shown, phase,
            "{cluster}: the phase shown and its data-phase"
        );
    }
    // Failed units first, with their error.
    let first = page
        .wait_attr("table.units tbody tr", "data-unit", DEADLINE, |u| {
            u == STAGING
        })
        .await;
    assert_eq!(first, STAGING);
    let failed = format!("[data-unit=\"{STAGING}\"]");
    page.wait_attr(&failed, "data-phase", DEADLINE, |p| p == "Failed")
        .await;
    page.wait_text(&failed, DEADLINE, |t| t.contains(STAGING_ERROR))
        .await;
    let dev_description = format!("{} .description", row(DEV));
    page.wait_text(&dev_description, DEADLINE, |t| t == DEV_DESCRIPTION)
        .await;
    page.screenshot(BLESS_ENV).await;

    // A cluster page, from its link on the index: its phase, its description, its history (the
    // reports on the status branch).
    page.follow_cluster_link(DEV, DEADLINE).await;
    page.wait_attr(&row(DEV), "data-phase", DEADLINE, |p| p == "Converged")
        .await;
    page.wait_text(&dev_description, DEADLINE, |t| t == DEV_DESCRIPTION)
        .await;
    page.wait_text("table.history tbody tr", DEADLINE, |t| {
        t.contains("Converged")
    })
    .await;
    page.open_index(&base).await;

    // A commit shows up live: the generation moves and the change is shown, without a reload.
    page.mark_document().await;
    let before = page.generation().await;
    fleet.replace(
        "clusters/prod/kustomization.yaml",
        PROD_DESCRIPTION,
        &INJECTED.replace('\'', "''"),
    );
    fleet.commit("prod: a description with markup");
    let desc = format!("{} .description", row(PROD));
    page.wait_text(&desc, DEADLINE, |t| t == INJECTED).await;
    assert!(
        page.generation().await > before,
        "the page's generation did not move"
    );
    assert!(
        page.document_marked().await,
        "the page was reloaded, not updated live"
    );
    page.assert_not_injected().await;

    // A fresh load with JavaScript on: the server's HTML escapes it too.
    page.open_index(&base).await;
    page.wait_text(&desc, DEADLINE, |t| t == INJECTED).await;
    page.assert_not_injected().await;
    page.close().await;

    // JavaScript off (the page's script does not run: no `live` mark): the server-rendered rows,
    // phases and descriptions.
    let static_page = Page::open(driver.session(false).await, &base).await;
    let class = static_page.attr("html", "class").await.unwrap_or_default();
    assert!(
        !class.split(' ').any(|c| c == "live"),
        "the page's script ran with JavaScript off"
    );
    for cluster in [DEV, PROD] {
        let phase = static_page
            .wait_attr(&row(cluster), "data-phase", DEADLINE, |_| true)
            .await;
        let shown = static_page
            .wait_text(&format!("{} .phase", row(cluster)), DEADLINE, |_| true)
            .await;
        assert_eq!(shown, phase, "{cluster} with JavaScript off");
    }
    static_page
        .wait_text(&desc, DEADLINE, |t| t == INJECTED)
        .await;
    static_page.close().await;
}
