//! A long-running agent on the real server with its push webhook and status page: a GitHub push
//! signed with the shared secret (`X-Hub-Signature-256`) makes it fetch at once (polling is an
//! hour) and apply the change; a wrong signature is refused and counted; the status page shows
//! the unit converged at the new revision.

use super::*;
use aro_gitops::trigger::webhook::github_signature;
use common::http;
use common::running::Process;
use serde_json::Value;

const SECRET: &str = "a-webhook-secret-for-the-real-server";

/// The value of the sample `series` on `/metrics` at `addr`.
fn sample(addr: &str, series: &str) -> Option<f64> {
    let (_, body) = http::get(addr, "/metrics").expect("/metrics answers");
    body.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// `/api/status` of the status page at `addr`, once `done` holds for it.
fn status_when(addr: &str, done: impl Fn(&Value) -> bool) -> Value {
    common::kubectl::poll_until(DEADLINE, "the status page as wanted", || {
        let (_, body) = http::get(addr, "/api/status").ok()?;
        let json: Value = serde_json::from_str(&body).expect("JSON");
        done(&json).then_some(json)
    })
}

fn unit(json: &Value) -> &Value {
    let units = json["units"].as_array().expect("units");
    assert_eq!(units.len(), 1, "{json}");
    &units[0]
}

#[test]
fn a_signed_github_push_fetches_and_applies_and_the_status_page_shows_it() {
    let Some(f) = RealFleet::start(&[APP]) else {
        return;
    };
    let secret = f.dir.path().join("webhook-secret");
    std::fs::write(&secret, format!("{SECRET}\n")).expect("the secret file");
    let state = f.state("a");
    let mut agent = Process::spawn(
        f.agent(&["run", "--interval", "1h"])
            .arg("--state")
            .arg(&state)
            .args(["--webhook-bind-address", "127.0.0.1:0"])
            .arg("--webhook-secret-file")
            .arg(&secret)
            .args(["--status-bind-address", "127.0.0.1:0"])
            .args(["--metrics-bind-address", "127.0.0.1:0"]),
    );
    let webhook = agent.after("webhook: serving on http://", DEADLINE);
    let status = agent
        .after("status page: serving on http://", DEADLINE)
        .trim_end_matches('/')
        .to_string();
    let metrics = agent
        .after("metrics: serving on http://", DEADLINE)
        .replace("/metrics", "");
    agent.wait_for("cycle 0 (initial)", DEADLINE);
    let first = git_head(&f);
    let json = status_when(&status, |j| unit(j)["phase"] == "Converged");
    assert_eq!(unit(&json)["unit"], "clusters/app", "{json}");
    assert_eq!(unit(&json)["report"]["revision"], first.as_str(), "{json}");
    let (head, index) = http::get(&status, "/").expect("the index");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(index.contains("data-unit=\"clusters/app\""), "{index}");
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("hello")
    );

    // A change, pushed; GitHub's delivery of it.
    f.set_greeting(APP, "pushed");
    let change = f.commit("a pushed change");
    let body = serde_json::json!({
        "ref": "refs/heads/main",
        "after": change,
        "repository": {"clone_url": f.url(), "html_url": f.url(), "default_branch": "main"}
    })
    .to_string();
    let post = |signature: &str| {
        let headers = [
            ("X-GitHub-Event", "push"),
            ("X-Hub-Signature-256", signature),
        ];
        http::post(&webhook, "/hooks/github", &headers, body.as_bytes())
    };

    // Signed with another secret: refused, counted.
    let wrong = github_signature(b"not the secret", body.as_bytes());
    assert_eq!(post(&wrong).0, 401);
    let unauthorized =
        r#"aro_gitops_webhook_requests_total{provider="github",result="unauthorized"}"#;
    assert_eq!(sample(&metrics, unauthorized), Some(1.0));

    // Signed: accepted, fetched at once, applied to the real server.
    let (code, answer) = post(&github_signature(SECRET.as_bytes(), body.as_bytes()));
    assert_eq!(
        (code, answer.as_str()),
        (202, "accepted: a fetch is requested\n")
    );
    let cycle = agent.wait_for("cycle 1 (source)", DEADLINE);
    assert!(!cycle.contains(" 0 writes"), "{cycle}");
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("pushed")
    );
    let json = status_when(&status, |j| {
        unit(j)["report"]["revision"] == change.as_str() && unit(j)["phase"] == "Converged"
    });
    assert!(json["generation"].as_u64().is_some_and(|g| g > 0), "{json}");
    let output = agent.output();
    assert!(
        !output.contains(SECRET),
        "the secret in the output:\n{output}"
    );
}

fn git_head(f: &RealFleet) -> String {
    common::git::git(&f.repo, &["rev-parse", "HEAD"])
}
