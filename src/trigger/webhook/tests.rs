//! The receiver's router end to end, in process: status codes, the signal and the counters.

use super::*;
use crate::apply::RequestCounter;
use tower::ServiceExt;

const SECRET: &str = "webhook-test-secret";
const REPO: &str = "https://github.com/Azure/aro-fleet.git";

fn receiver(secret: Option<&str>) -> Receiver {
    Receiver {
        secret: secret.and_then(Secret::new),
        repo: REPO.into(),
        reference: GitRef::Branch("main".into()),
    }
}

struct Served {
    router: axum::Router,
    signal: FetchSignal,
    metrics: Arc<Metrics>,
}

fn served(secret: Option<&str>) -> Served {
    let signal = FetchSignal::default();
    let metrics = Arc::new(Metrics::new(RequestCounter::default(), None));
    Served {
        router: router(receiver(secret), signal.clone(), metrics.clone()),
        signal,
        metrics,
    }
}

impl Served {
    async fn post(&self, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, String) {
        let mut request = http::Request::post(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(axum::body::Body::from(body)).unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        use http_body_util::BodyExt;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    async fn github(&self, event: &str, signature: &str, body: Vec<u8>) -> (u16, String) {
        let headers = [
            ("x-github-event", event),
            ("x-hub-signature-256", signature),
        ];
        self.post("/hooks/github", &headers, body).await
    }

    fn count(&self, provider: &str, result: &str) -> u64 {
        let series = format!(
            r#"aro_gitops_webhook_requests_total{{provider="{provider}",result="{result}"}} "#
        );
        let text = self.metrics.encode();
        let line = text.lines().find(|l| l.starts_with(&series)).unwrap();
        line[series.len()..].parse().unwrap()
    }
}

fn github_push(reference: &str, clone_url: &str) -> Vec<u8> {
    serde_json::json!({
        "ref": reference,
        "repository": {"clone_url": clone_url, "ssh_url": "git@github.com:Azure/aro-fleet.git"}
    })
    .to_string()
    .into_bytes()
}

fn sign(body: &[u8]) -> String {
    github_signature(SECRET.as_bytes(), body)
}

#[tokio::test]
async fn a_signed_push_to_the_followed_branch_requests_one_fetch() {
    let s = served(Some(SECRET));
    let body = github_push("refs/heads/main", "https://github.com/azure/ARO-fleet");
    let (status, text) = s.github("push", &sign(&body), body.clone()).await;
    assert_eq!(
        (status, text.as_str()),
        (202, "accepted: a fetch is requested\n")
    );
    let (status, _) = s.github("push", &sign(&body), body).await;
    assert_eq!(status, 202);
    assert!(s.signal.take(), "a fetch is requested");
    assert!(!s.signal.take(), "two pushes, one pending fetch");
    assert_eq!(s.count("github", "accepted"), 2);
}

#[tokio::test]
async fn bad_missing_and_sha1_signatures_are_401_and_fetch_nothing() {
    let s = served(Some(SECRET));
    let body = github_push("refs/heads/main", REPO);
    let wrong = github_signature(b"another secret", &body);
    let sha1 = format!("sha1={}", &sign(&body)["sha256=".len()..][..40]);
    for signature in [wrong.as_str(), sha1.as_str(), ""] {
        let (status, text) = s.github("push", signature, body.clone()).await;
        assert_eq!(status, 401, "{signature}: {text}");
        assert!(!text.contains(SECRET), "{text}");
    }
    let (status, _) = s
        .post("/hooks/github", &[("x-github-event", "push")], body)
        .await;
    assert_eq!(status, 401);
    assert!(!s.signal.take());
    assert_eq!(s.count("github", "unauthorized"), 4);
}

#[tokio::test]
async fn without_a_secret_every_webhook_is_refused() {
    let s = served(None);
    let body = github_push("refs/heads/main", REPO);
    let (status, text) = s.github("push", &sign(&body), body).await;
    assert_eq!(status, 401);
    assert!(text.contains("no webhook secret"), "{text}");
    let headers = [("x-gitlab-token", SECRET), ("x-gitlab-event", "Push Hook")];
    let (status, _) = s.post("/hooks/gitlab", &headers, b"{}".to_vec()).await;
    assert_eq!(status, 401);
    assert!(!s.signal.take());
    assert_eq!(s.count("gitlab", "unauthorized"), 1);
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_413() {
    let s = served(Some(SECRET));
    let big = vec![b' '; MAX_BODY + 1];
    let (status, _) = s.github("push", &sign(&big), big).await;
    assert_eq!(status, 413);
    // Exactly the limit is read (and then is not JSON).
    let mut limit = github_push("refs/heads/main", REPO);
    limit.resize(MAX_BODY, b' ');
    let (status, text) = s.github("push", &sign(&limit), limit).await;
    assert_eq!(status, 202, "{text}");
    // A declared length over the limit is refused before the body is read.
    let length = (MAX_BODY + 1).to_string();
    let headers = [
        ("x-github-event", "push"),
        ("content-length", length.as_str()),
    ];
    let (status, _) = s.post("/hooks/github", &headers, vec![]).await;
    assert_eq!(status, 413);
    assert_eq!(s.count("github", "too_large"), 2);
}

#[tokio::test]
async fn malformed_payloads_after_a_valid_signature_are_400() {
    let s = served(Some(SECRET));
    for body in [&b"{not json"[..], b"[]", br#"{"repository":{}}"#] {
        let (status, text) = s.github("push", &sign(body), body.to_vec()).await;
        assert_eq!(status, 400, "{text}");
    }
    assert_eq!(s.count("github", "malformed"), 3);
    assert!(!s.signal.take());
}

#[tokio::test]
async fn pings_other_repositories_branches_and_events_are_acknowledged_and_ignored() {
    let s = served(Some(SECRET));
    let ping = br#"{"zen":"Keep it logically awesome."}"#.to_vec();
    let (status, text) = s.github("ping", &sign(&ping), ping).await;
    assert_eq!((status, text.as_str()), (200, "pong\n"));
    let other_repo = github_push("refs/heads/main", "https://github.com/Azure/other.git");
    let other_repo = serde_json::to_vec(&{
        let mut v: serde_json::Value = serde_json::from_slice(&other_repo).unwrap();
        v["repository"]["ssh_url"] = "git@github.com:Azure/other.git".into();
        v
    })
    .unwrap();
    let (status, text) = s.github("push", &sign(&other_repo), other_repo).await;
    assert_eq!(status, 202);
    assert!(text.contains("another repository"), "{text}");
    let other_branch = github_push("refs/heads/feature", REPO);
    let (status, text) = s.github("push", &sign(&other_branch), other_branch).await;
    assert_eq!(status, 202);
    assert!(text.contains("does not follow"), "{text}");
    let issue = br#"{"action":"opened"}"#.to_vec();
    let (status, _) = s.github("issues", &sign(&issue), issue).await;
    assert_eq!(status, 202);
    assert!(!s.signal.take());
    assert_eq!(s.count("github", "ignored"), 4);
}

#[tokio::test]
async fn gitlab_tokens_are_checked_and_pushes_matched() {
    let s = served(Some(SECRET));
    let body = serde_json::json!({
        "object_kind": "push",
        "ref": "refs/heads/main",
        "project": {"git_http_url": "https://github.com/Azure/aro-fleet.git"}
    })
    .to_string()
    .into_bytes();
    let event = ("x-gitlab-event", "Push Hook");
    let bad = [("x-gitlab-token", "nope"), event];
    let (status, _) = s.post("/hooks/gitlab", &bad, body.clone()).await;
    assert_eq!(status, 401);
    assert!(!s.signal.take());
    let good = [("x-gitlab-token", SECRET), event];
    let (status, _) = s.post("/hooks/gitlab", &good, body).await;
    assert_eq!(status, 202);
    assert!(s.signal.take());
    assert_eq!(
        (
            s.count("gitlab", "unauthorized"),
            s.count("gitlab", "accepted")
        ),
        (1, 1)
    );
}
