//! The push triggers of a long-running `aro-gitops run --interval 1h`: a signed webhook fetches at
//! once (GitHub and GitLab), bad or foreign requests fetch nothing and are counted, a flood
//! coalesces, an unreachable remote shows as a stale fetch, and a commit in a local `--repo` is
//! picked up through the file watcher.

use super::resync::{Running, http_get};
use super::*;
use aro_gitops::agent::{CycleLine, CycleTrigger};
use aro_gitops::trigger::webhook::github_signature;

/// How long the agent may take to start serving, and then to converge the fleet (a debug build, a
/// shared machine).
const DEADLINE: Duration = Duration::from_secs(180);
pub(super) const SECRET: &str = "a-webhook-secret-for-tests";
/// The change the tests push: the dev workers' VM size (two objects updated).
const VM_FROM: &str = "value: Standard_D4s_v3";
const VM_TO: &str = "value: Standard_D16s_v3";
const DEV_POOL: &str = "components/dev/kustomization.yaml";

/// A git fleet the agent reaches by a `file://` URL (not a local path: that would be watched, and
/// these tests are about the webhook alone), an agent following it with the webhook on, and the
/// addresses it serves.
struct Hooked {
    f: Fleet,
    agent: Running,
    webhook: String,
    metrics: String,
}

impl Hooked {
    fn start() -> Hooked {
        let mut f = Fleet::with_remote();
        f.url = PathBuf::from(format!("file://{}", f.url.display()));
        let secret = f.dir().join("webhook-secret");
        std::fs::write(&secret, format!("{SECRET}\n")).expect("write the secret file");
        let agent = Running::start_with(
            &f,
            &[
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--webhook-bind-address",
                "127.0.0.1:0",
                "--webhook-secret-file",
                secret.to_str().expect("UTF-8 path"),
            ],
        );
        let metrics = agent.served_address("metrics: serving on http://", "/metrics", DEADLINE);
        let webhook = agent.served_address("webhook: serving on http://", "", DEADLINE);
        let (_, initial) = agent.next_cycle();
        assert_eq!(initial.trigger, CycleTrigger::Initial, "{initial}");
        Hooked {
            f,
            agent,
            webhook,
            metrics,
        }
    }

    /// The value of the sample `series` in `/metrics`.
    fn sample(&self, series: &str) -> u64 {
        let (_, body) = http_get(&self.metrics, "/metrics").expect("the metrics endpoint answers");
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{body}"))
    }

    fn fetches(&self) -> u64 {
        self.sample(r#"aro_gitops_source_fetches_total{result="success"}"#)
    }

    fn requests(&self, provider: &str, result: &str) -> u64 {
        self.sample(&format!(
            r#"aro_gitops_webhook_requests_total{{provider="{provider}",result="{result}"}}"#
        ))
    }

    /// A GitHub push payload of `reference` for the repository at `url`.
    fn github_push(&self, reference: &str, url: &str) -> Vec<u8> {
        serde_json::json!({
            "ref": reference,
            "repository": {"clone_url": url, "html_url": url, "default_branch": "main"}
        })
        .to_string()
        .into_bytes()
    }

    fn our_push(&self) -> Vec<u8> {
        self.github_push("refs/heads/main", &self.f.url.to_string_lossy())
    }

    fn github(&self, signature: &str, body: &[u8]) -> (u16, String) {
        let headers = [
            ("X-GitHub-Event", "push"),
            ("X-Hub-Signature-256", signature),
        ];
        post(&self.webhook, "/hooks/github", &headers, body)
    }

    /// The next cycle line: a source cycle (a fetch) numbered `number`.
    fn fetch_cycle(&self, number: u64) -> CycleLine {
        let (_, cycle) = self.agent.next_cycle();
        assert_eq!(
            (cycle.number, cycle.trigger),
            (number, CycleTrigger::Source),
            "{cycle}"
        );
        cycle
    }
}

pub(super) fn sign(body: &[u8]) -> String {
    github_signature(SECRET.as_bytes(), body)
}

pub(super) use common::http::post;

#[test]
fn a_signed_github_push_applies_the_change_and_bad_requests_fetch_nothing() {
    let h = Hooked::start();
    assert_eq!(h.fetches(), 1, "the initial fetch");
    let ours = h.our_push();

    // Refused, too large, malformed, or not ours: nothing is fetched.
    let wrong = github_signature(b"not the secret", &ours);
    assert_eq!(h.github(&wrong, &ours).0, 401);
    let sha1 = format!("sha1={}", &sign(&ours)["sha256=".len()..][..40]);
    assert_eq!(h.github(&sha1, &ours).0, 401);
    let big = vec![b' '; 2 << 20];
    let big_signature = sign(&big);
    let headers = [
        ("X-GitHub-Event", "push"),
        ("X-Hub-Signature-256", big_signature.as_str()),
        ("Expect", "100-continue"),
    ];
    assert_eq!(post(&h.webhook, "/hooks/github", &headers, &big).0, 413);
    assert_eq!(h.github(&sign(b"{not json"), b"{not json").0, 400);
    let branch = h.github_push("refs/heads/feature", &h.f.url.to_string_lossy());
    let (status, text) = h.github(&sign(&branch), &branch);
    assert_eq!(status, 202, "{text}");
    assert!(text.contains("ignored"), "{text}");
    let elsewhere = h.github_push("refs/heads/main", "https://github.com/Azure/elsewhere.git");
    let (status, text) = h.github(&sign(&elsewhere), &elsewhere);
    assert_eq!(
        (status, text.contains("another repository")),
        (202, true),
        "{text}"
    );
    for (result, n) in [
        ("unauthorized", 2),
        ("too_large", 1),
        ("malformed", 1),
        ("ignored", 2),
        ("accepted", 0),
    ] {
        assert_eq!(h.requests("github", result), n, "{result}");
    }

    // A commit, then its signed push: the next cycle fetches it and applies it. No cycle ran
    // before it (the interval is an hour): the requests above fetched nothing.
    h.f.replace(DEV_POOL, VM_FROM, VM_TO);
    let (status, text) = h.github(&sign(&ours), &ours);
    assert_eq!(
        (status, text.as_str()),
        (202, "accepted: a fetch is requested\n")
    );
    let cycle = h.fetch_cycle(1);
    // The workers pool and its node pool, and their status.
    assert!(cycle.writes >= 2, "{cycle}");
    assert_eq!(h.fetches(), 2);
    assert_eq!(h.requests("github", "accepted"), 1);

    // The remote gone: a push fetches, finds it unreachable, keeps the last good revision and says
    // so in the counters; back, the next push fetches again.
    let stale = r#"aro_gitops_source_fetches_total{result="stale"}"#;
    let remote = h.f.dir().join("remote.git");
    let away = h.f.dir().join("remote-away.git");
    std::fs::rename(&remote, &away).expect("move the remote away");
    assert_eq!(h.github(&sign(&ours), &ours).0, 202);
    let cycle = h.fetch_cycle(2);
    assert_eq!(cycle.writes, 0, "nothing new to apply: {cycle}");
    assert_eq!((h.sample(stale), h.fetches()), (1, 2));
    std::fs::rename(&away, &remote).expect("bring the remote back");
    assert_eq!(h.github(&sign(&ours), &ours).0, 202);
    h.fetch_cycle(3);
    assert_eq!((h.sample(stale), h.fetches()), (1, 3));
}

#[test]
fn gitlab_tokens_are_checked_and_a_flood_coalesces() {
    let h = Hooked::start();
    let gitlab = |token: &str| {
        let body = serde_json::json!({
            "object_kind": "push",
            "ref": "refs/heads/main",
            "project": {"git_http_url": h.f.url.to_string_lossy(), "default_branch": "main"}
        })
        .to_string();
        let headers = [("X-Gitlab-Event", "Push Hook"), ("X-Gitlab-Token", token)];
        post(&h.webhook, "/hooks/gitlab", &headers, body.as_bytes()).0
    };
    assert_eq!(gitlab("not the secret"), 401);
    assert_eq!(gitlab(""), 401);
    assert_eq!(h.requests("gitlab", "unauthorized"), 2);
    assert_eq!(h.fetches(), 1);
    assert_eq!(gitlab(SECRET), 202);
    h.fetch_cycle(1);
    assert_eq!(h.fetches(), 2);

    // A flood of signed deliveries of one push (naming its commit, as GitHub does) from many
    // connections at once.
    const THREADS: usize = 25;
    const EACH: usize = 20;
    let head = common::git::git(&h.f.repo, &["rev-parse", "HEAD"]);
    let body = serde_json::json!({
        "ref": "refs/heads/main",
        "after": head.trim(),
        "repository": {"clone_url": h.f.url.to_string_lossy(), "default_branch": "main"}
    })
    .to_string()
    .into_bytes();
    let signature = sign(&body);
    let headers = [
        ("X-GitHub-Event", "push"),
        ("X-Hub-Signature-256", signature.as_str()),
    ];
    let (addr, headers, body) = (&h.webhook, &headers, &body);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(move || {
                for _ in 0..EACH {
                    assert_eq!(post(addr, "/hooks/github", headers, body).0, 202);
                }
            });
        }
    });
    let flood = started.elapsed();
    assert_eq!(h.requests("github", "accepted"), (THREADS * EACH) as u64);
    // The first fetch comes and brings that commit: the deliveries that came meanwhile are
    // served by it, so the flood makes one fetch.
    let deadline = Instant::now() + DEADLINE;
    while h.fetches() < 3 {
        assert!(Instant::now() < deadline, "no fetch after the flood");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Long enough for any further fetch to have started (TRIGGER_SPACING is 0.5 s).
    std::thread::sleep(Duration::from_secs(2));
    let grown = h.fetches() - 2;
    assert_eq!(
        grown,
        1,
        "{grown} fetches for {} requests in {flood:?}",
        THREADS * EACH
    );
    // Still healthy: a push after the flood is fetched and applied.
    h.f.replace(DEV_POOL, VM_FROM, VM_TO);
    let fetched = h.fetches();
    assert_eq!(gitlab(SECRET), 202);
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (_, cycle) = h.agent.next_cycle();
        if cycle.writes > 0 {
            assert!(cycle.writes >= 2, "{cycle}");
            break;
        }
        assert!(Instant::now() < deadline, "the change was not applied");
    }
    assert!(h.fetches() > fetched);
}

/// `--repo` a local directory, `--interval 1h`: a change there is applied within seconds, and the
/// cycle that applies it starts soon after the change.
fn local_change_is_applied(f: Fleet) {
    let agent = Running::start_with(&f, &[]);
    let (_, initial) = agent.next_cycle();
    assert_eq!(initial.trigger, CycleTrigger::Initial, "{initial}");
    let changed = Instant::now();
    f.replace(DEV_POOL, VM_FROM, VM_TO);
    let (_, cycle) = agent.next_cycle();
    let started = changed.elapsed().as_secs_f64() - cycle.seconds;
    assert_eq!(
        (cycle.number, cycle.trigger),
        (1, CycleTrigger::Source),
        "{cycle}"
    );
    assert!(cycle.writes >= 2, "{cycle}");
    assert!(
        started < 5.0,
        "the cycle started {started:.1} s after the change"
    );
}

#[test]
fn a_commit_in_a_local_work_tree_is_applied_through_the_watcher() {
    let mut f = Fleet::with_remote();
    // The work tree itself, not its remote; its reports go to its own status branch.
    f.url = f.repo.clone();
    local_change_is_applied(f);
}

#[test]
fn an_edit_in_a_plain_folder_is_applied_through_the_watcher() {
    local_change_is_applied(Fleet::plain());
}
