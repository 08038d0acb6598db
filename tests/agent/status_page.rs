//! A long-running `aro-gitops run --status-bind-address 127.0.0.1:0`: it says where the status
//! page is served; the index, the JSON snapshot and a cluster page show the fleet with the
//! Content-Security-Policy, an annotation holding `<script>` is escaped, and the server-sent
//! events announce a change made in git.

use super::resync::{Running, http_get};
use super::*;
use std::io::{BufRead, Write};

/// How long the agent may take to start serving, and then to converge the fleet (a debug build, a
/// shared machine).
const DEADLINE: Duration = Duration::from_secs(180);

const CSP: &str = "content-security-policy: default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:";

/// The description annotation of `clusters/dev`'s Cluster, set through a patch of the overlay.
fn describe_dev(f: &Fleet, description: &str) {
    f.add_patch(
        DEV,
        "Cluster",
        "dev",
        &format!(
            "- op: add\n  path: /metadata/annotations\n  value: {{\"aro-gitops.io/description\": {description:?}}}"
        ),
    );
}

/// Polls `path` until `done` says its body is the one wanted.
fn wait_for(addr: &str, path: &str, done: impl Fn(&str) -> bool) -> (String, String) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (head, body) = http_get(addr, path).expect("the status page answers");
        if done(&body) {
            return (head, body);
        }
        assert!(
            Instant::now() < deadline,
            "{path} not as wanted within {DEADLINE:?}:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `data:` of the next `event: update` on the SSE stream `lines`.
fn next_update(lines: &mut impl BufRead) -> u64 {
    let mut event = false;
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            lines.read_line(&mut line).expect("the stream reads") > 0,
            "the stream ended"
        );
        let l = line.trim_end();
        if l == "event: update" {
            event = true;
        } else if let Some(data) = l.strip_prefix("data: ").filter(|_| event) {
            return data.parse().expect("a generation");
        } else if l.is_empty() {
            event = false;
        }
    }
}

#[test]
fn the_status_page_shows_the_fleet_escapes_annotations_and_streams_changes() {
    let f = Fleet::plain();
    let hostile = "<script>document.title='pwned'</script> dev & co";
    describe_dev(&f, hostile);
    let agent = Running::start_with(
        &f,
        &["--status-bind-address", "127.0.0.1:0", "--interval", "1s"],
    );
    let addr = agent.served_address("status page: serving on http://", "/", DEADLINE);

    // The index: both clusters converge; the contract's attributes; the CSP; the annotation shown
    // as text.
    let (head, index) = wait_for(&addr, "/", |body| {
        body.matches("data-phase=\"Converged\"").count() == 2
    });
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains(CSP), "{head}");
    assert!(
        head.contains("content-type: text/html; charset=utf-8"),
        "{head}"
    );
    assert!(index.contains("data-cluster=\"aro-dev/dev\""), "{index}");
    assert!(index.contains("data-cluster=\"aro-prod/prod\""), "{index}");
    assert!(index.contains("data-unit=\"clusters/dev\""), "{index}");
    assert!(
        index.contains("<span class=\"phase\">Converged</span>"),
        "{index}"
    );
    assert!(
        index.contains("<div class=\"description\">&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt; dev &amp; co</div>"),
        "{index}"
    );
    assert_eq!(
        index.matches("<script").count(),
        1,
        "only the page's own: {index}"
    );
    assert!(index.contains("<body data-generation=\""), "{index}");
    assert!(index.contains("class=\"chain\""), "{index}");

    // The assets are the embedded ones.
    let (head, js) = http_get(&addr, "/assets/status.js").expect("the script");
    assert!(
        head.starts_with("HTTP/1.1 200") && js.contains("EventSource"),
        "{head}"
    );
    let (head, _) = http_get(&addr, "/assets/status.css").expect("the style");
    assert!(head.to_ascii_lowercase().contains("text/css"), "{head}");

    // The JSON snapshot: the same units and phases.
    let (head, json) = http_get(&addr, "/api/status").expect("the snapshot");
    assert!(
        head.to_ascii_lowercase().contains("application/json"),
        "{head}"
    );
    let json: Value = serde_json::from_str(&json).expect("JSON");
    let phases: Vec<(&str, &str)> = json["units"]
        .as_array()
        .expect("units")
        .iter()
        .map(|u| (u["unit"].as_str().unwrap(), u["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(phases, vec![(DEV, "Converged"), (PROD, "Converged")]);
    assert_eq!(json["units"][0]["description"], hostile);

    // The cluster page: its annotations escaped, its chain, its history on the status branch.
    let (head, page) = wait_for(&addr, "/clusters/aro-dev/dev", |body| {
        body.contains("<table class=\"history\">")
    });
    assert!(head.to_ascii_lowercase().contains(CSP), "{head}");
    assert!(
        page.contains("<td class=\"annotation\">&lt;script&gt;"),
        "{page}"
    );
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(page.contains("aro-gitops: status of"), "{page}");
    assert!(page.contains("ExternalAuth ready"), "{page}");
    let (head, _) = http_get(&addr, "/clusters/aro-dev/nope").expect("a 404");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");

    // Live updates: the stream says the current generation, then a newer one after a change in git.
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("a read timeout");
    write!(stream, "GET /events HTTP/1.1\r\nhost: {addr}\r\n\r\n").expect("request");
    let mut events = std::io::BufReader::new(stream);
    let first = next_update(&mut events);
    f.replace(
        &format!("{DEV}/kustomization.yaml"),
        "dev & co",
        "dev, renamed",
    );
    let next = next_update(&mut events);
    assert!(next > first, "{next} after {first}");
    wait_for(&addr, "/", |body| {
        body.contains("<div class=\"description\">&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt; dev, renamed</div>")
    });
}
