//! The status page as a browser session sees it: what the tests read of it (rows, phases,
//! descriptions, the live generation), polled with a deadline, and its screenshot.

use fantoccini::{Client, Locator};
use std::path::Path;
use std::time::{Duration, Instant};

/// The CSS selector of a cluster's row (`NAMESPACE/NAME`).
pub fn row(cluster: &str) -> String {
    format!("[data-cluster=\"{cluster}\"]")
}

pub struct Page {
    client: Client,
}

impl Page {
    /// `client` on the index of the status page served at `base` (`http://ADDR`).
    pub async fn open(client: Client, base: &str) -> Page {
        let page = Page { client };
        page.open_index(base).await;
        page
    }

    pub async fn open_index(&self, base: &str) {
        self.client
            .goto(&format!("{base}/"))
            .await
            .expect("the browser loads the index");
    }

    pub async fn close(self) {
        self.client.close().await.expect("the session ends");
    }

    /// The attribute `name` of the first element matching `css`, now.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.client.find(Locator::Css(css)).await.ok()?;
        element.attr(name).await.ok().flatten()
    }

    /// The attribute `name` of the first element matching `css` once `ok` accepts it.
    pub async fn wait_attr(
        &self,
        css: &str,
        name: &str,
        wait: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> String {
        let mut last = None;
        let deadline = Instant::now() + wait;
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(Some(value)) = element.attr(name).await
            {
                if ok(&value) {
                    return value;
                }
                last = Some(value);
            }
            self.check_deadline(deadline, &format!("{css} {name}={last:?}"))
                .await;
        }
    }

    /// The text of the first element matching `css` once `ok` accepts it.
    pub async fn wait_text(&self, css: &str, wait: Duration, ok: impl Fn(&str) -> bool) -> String {
        let mut last = None;
        let deadline = Instant::now() + wait;
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
            {
                if ok(&text) {
                    return text;
                }
                last = Some(text);
            }
            self.check_deadline(deadline, &format!("the text of {css} (last {last:?})"))
                .await;
        }
    }

    /// Fails with the page's source once `deadline` passed; waits a moment otherwise.
    async fn check_deadline(&self, deadline: Instant, what: &str) {
        if Instant::now() >= deadline {
            let source = self.client.source().await.unwrap_or_default();
            panic!("timed out waiting for {what}; the page:\n{source}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// The body's `data-generation` (the live updates applied).
    pub async fn generation(&self) -> u64 {
        let body = self
            .client
            .find(Locator::Css("body"))
            .await
            .expect("a body");
        let value = body.attr("data-generation").await.expect("an attribute");
        let value = value.expect("the body has data-generation");
        value
            .parse()
            .unwrap_or_else(|_| panic!("data-generation={value:?}"))
    }

    /// Marks the loaded document: [`Page::document_marked`] says whether it is still the same one.
    pub async fn mark_document(&self) {
        self.client
            .execute("window.__arogitopsMark = 'kept'; return null;", vec![])
            .await
            .expect("a script runs");
    }

    pub async fn document_marked(&self) -> bool {
        let kept = self
            .client
            .execute("return window.__arogitopsMark === 'kept';", vec![])
            .await
            .expect("a script runs");
        kept.as_bool() == Some(true)
    }

    /// No injected markup ran or became elements: no flag set, the title untouched, no script or
    /// image inside any description.
    pub async fn assert_not_injected(&self) {
        let seen = self
            .client
            .execute(
                "return [typeof window.__pwned, String(window.__pwned), document.title];",
                vec![],
            )
            .await
            .expect("a script runs");
        assert_eq!(seen[0], "undefined", "an injected script ran: {seen}");
        assert_ne!(seen[2], "pwned", "an injected script set the title: {seen}");
        let elements = self
            .client
            .find_all(Locator::Css(".description script, .description img"))
            .await
            .expect("a query");
        assert!(elements.is_empty(), "a description became markup");
    }

    /// Follows the link to `cluster`'s page from its row on the index, waits for that page
    /// (`/clusters/NAMESPACE/NAME`, however its segments are encoded), and checks it names the
    /// cluster.
    pub async fn follow_cluster_link(&self, cluster: &str, wait: Duration) {
        let path = format!("/clusters/{cluster}");
        let link = format!("{} a[href^=\"/clusters/\"]", row(cluster));
        let link = self
            .client
            .find(Locator::Css(&link))
            .await
            .unwrap_or_else(|e| panic!("no link {link} on the index: {e}"));
        link.click().await.expect("the link clicks");
        let deadline = Instant::now() + wait;
        loop {
            let url = self.client.current_url().await.expect("a URL");
            let decoded = percent_encoding::percent_decode_str(url.path()).decode_utf8_lossy();
            if decoded == path {
                break;
            }
            self.check_deadline(deadline, &format!("{path} (at {url})"))
                .await;
        }
        self.wait_text("body", wait, |t| t.contains(cluster)).await;
    }

    /// Saves the page as `status-page.png` in the target dir, and as `docs/status-page.png`
    /// (the README's) when `bless_env` is `1`.
    pub async fn screenshot(&self, bless_env: &str) {
        // The body, not the window: as tall as the page's content.
        let body = self
            .client
            .find(Locator::Css("body"))
            .await
            .expect("a body");
        let png = body.screenshot().await.expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is a PNG");
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
        std::fs::write(&target, &png).expect("write the screenshot");
        eprintln!("screenshot: {}", target.display());
        if std::env::var(bless_env).as_deref() == Ok("1") {
            let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/status-page.png");
            std::fs::write(&docs, &png).expect("write docs/status-page.png");
            eprintln!("screenshot: {}", docs.display());
        }
    }
}
