//! The status page in a real browser: Debian's headless `chromium` through `chromedriver`
//! (WebDriver, with fantoccini). The test skips when the browser is not installed, unless
//! `ARO_GITOPS_REQUIRE_BROWSER=1` (CI) requires it.

mod common;

#[path = "browser/agent.rs"]
mod agent;
#[path = "browser/chrome.rs"]
mod chrome;

use fantoccini::Locator;
use std::time::Duration;

/// Harness check against a trivial page (while the real page is being built).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harness_trivial_page() {
    let Some(driver) = chrome::driver_or_skip("harness_trivial_page") else {
        return;
    };
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(|| async {
            axum::response::Html(
                "<html><body data-generation=\"1\"><p class=phase>Converged</p>\
                 <noscript><p id=nojs>no js</p></noscript>\
                 <script>document.body.dataset.generation='2'</script></body></html>",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let url = format!("http://{addr}/");

    let js = driver.session(true).await;
    js.goto(&url).await.unwrap();
    let body = js.find(Locator::Css("body")).await.unwrap();
    assert_eq!(
        body.attr("data-generation").await.unwrap().as_deref(),
        Some("2")
    );
    let png = js.screenshot().await.unwrap();
    std::fs::write(format!("{}/trivial.png", env!("CARGO_TARGET_TMPDIR")), png).unwrap();
    js.close().await.unwrap();

    let nojs = driver.session(false).await;
    nojs.goto(&url).await.unwrap();
    let body = nojs.find(Locator::Css("body")).await.unwrap();
    assert_eq!(
        body.attr("data-generation").await.unwrap().as_deref(),
        Some("1")
    );
    let p = nojs.find(Locator::Css("#nojs")).await.unwrap();
    assert_eq!(p.text().await.unwrap(), "no js");
    nojs.close().await.unwrap();
    let _ = Duration::ZERO;
}
