//! `run --commit-status github|gitlab`, through the binary on the embedded default with a real git
//! repository, against a loopback server that plays the host's API: each request is checked
//! against the documented API (method, path, headers, JSON fields) and recorded; the server
//! answers as each test scripts it (rate limits, server errors).

mod common;

use common::fleet::{DEV, Fleet, Output, PROD, aro_gitops_command};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

const TOKEN: &str = "ghp_commitStatusToken0123456789abcdef";

/// One request the server took.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    /// Lower-case names.
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    fn field(&self, name: &str) -> &str {
        self.body[name].as_str().unwrap_or_default()
    }
}

/// How the server answers the request numbered `n` (from 0): status and extra headers.
type Script = Box<dyn Fn(usize) -> (u16, Vec<(&'static str, &'static str)>) + Send + Sync>;

/// A loopback HTTP/1.1 server: one request per connection, each recorded.
struct Api {
    addr: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Api {
    fn start(script: Script) -> Api {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or_default().to_string();
                let path = parts.next().unwrap_or_default().to_string();
                let mut headers = vec![];
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).expect("a header line");
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    let (n, v) = h.split_once(':').expect("name: value");
                    headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
                let len: usize = (headers.iter())
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().expect("a length"));
                let mut body = vec![0; len];
                reader.read_exact(&mut body).expect("the body");
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let n = {
                    let mut seen = record.lock().unwrap();
                    seen.push(Seen {
                        method,
                        path,
                        headers,
                        body,
                    });
                    seen.len() - 1
                };
                let (code, extra) = script(n);
                let mut head = format!(
                    "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n"
                );
                for (n, v) in extra {
                    head += &format!("{n}: {v}\r\n");
                }
                let _ = stream.write_all(format!("{head}\r\n{{}}").as_bytes());
            }
        });
        Api { addr, seen }
    }

    fn always(code: u16) -> Api {
        Api::start(Box::new(move |_| (code, vec![])))
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The states and descriptions posted on `context`, in order.
fn said_on(seen: &[Seen], context_field: &str, context: &str) -> Vec<(String, String)> {
    (seen.iter())
        .filter(|s| s.field(context_field) == context)
        .map(|s| {
            (
                s.field("state").to_string(),
                s.field("description").to_string(),
            )
        })
        .collect()
}

/// Every request is GitHub's "create a commit status" on `sha`, as documented.
fn check_github(seen: &[Seen], sha: &str) {
    assert!(!seen.is_empty(), "no status was posted");
    for s in seen {
        assert_eq!(s.method, "POST");
        assert_eq!(s.path, format!("/repos/acme/fleet/statuses/{sha}"));
        assert_eq!(
            s.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(s.header("accept"), Some("application/vnd.github+json"));
        assert_eq!(s.header("x-github-api-version"), Some("2022-11-28"));
        assert!(
            s.header("user-agent")
                .is_some_and(|a| a.starts_with("aro-gitops/"))
        );
        assert_eq!(s.header("content-type"), Some("application/json"));
        let fields: BTreeSet<&str> = s
            .body
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        let allowed: BTreeSet<&str> = ["state", "target_url", "description", "context"].into();
        assert!(fields.is_subset(&allowed), "{fields:?}");
        assert!(
            ["pending", "success", "failure", "error"].contains(&s.field("state")),
            "{s:?}"
        );
        assert!(s.field("description").chars().count() <= 140, "{s:?}");
        assert!(!s.field("context").is_empty());
    }
}

fn token_file(fleet: &Fleet) -> String {
    let path = fleet.dir().join("token");
    std::fs::write(&path, format!("{TOKEN}\n")).expect("write the token");
    path.to_string_lossy().into_owned()
}

/// `run --once` with `args`, logs at debug (the token must not show even there).
fn run(fleet: &Fleet, args: &[&str], env: &[(&str, &str)]) -> Output {
    let (repo, state) = (fleet.url.to_str().unwrap(), fleet.state.to_str().unwrap());
    let mut all = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "60s"];
    all.extend(args);
    all.extend(["--repo", repo, "--state", state]);
    let mut c = aro_gitops_command();
    c.args(&all)
        .env("ARO_GITOPS_LOG", "info,aro_gitops=debug")
        .env_remove("ARO_GITOPS_COMMIT_STATUS_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("aro-gitops runs");
    let out = Output {
        args: all.iter().map(|a| a.to_string()).collect(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN),
        "the token shows:\n{}",
        out.all()
    );
    out
}

/// `run` posting to GitHub through `api` for `acme/fleet`, the token read from the file `token`,
/// with `more` flags.
fn run_github(fleet: &Fleet, api: &Api, token: &str, more: &[&str]) -> Output {
    let url = api.url();
    let mut args = vec![
        "--commit-status",
        "github",
        "--commit-status-api",
        &url,
        "--commit-status-repo",
        "acme/fleet",
        "--commit-status-token-file",
        token,
    ];
    args.extend(more);
    run(fleet, &args, &[])
}

#[test]
fn github_gets_pending_then_success_per_unit_linked_to_the_status_page() {
    let (fleet, sha) = Fleet::git();
    let api = Api::always(201);
    let token = token_file(&fleet);
    let out = run_github(
        &fleet,
        &api,
        &token,
        &["--status-page-url", "https://status.example/"],
    );
    out.expect_code(0);
    let seen = api.seen();
    check_github(&seen, &sha);
    for unit in [DEV, PROD] {
        let said = said_on(&seen, "context", &format!("aro-gitops/{unit}"));
        assert_eq!(
            said.first().map(|s| s.0.as_str()),
            Some("pending"),
            "{unit}: {said:?}"
        );
        assert_eq!(
            said.last().map(|s| s.0.as_str()),
            Some("success"),
            "{unit}: {said:?}"
        );
        assert!(
            said.windows(2).all(|w| w[0] != w[1]),
            "nothing said twice: {said:?}"
        );
    }
    let success = (seen.iter())
        .find(|s| s.field("state") == "success")
        .expect("a success");
    assert!(
        success
            .field("target_url")
            .starts_with("https://status.example/clusters/"),
        "a unit links to its cluster's page: {success:?}"
    );
}

#[test]
fn a_broken_unit_fails_with_its_error_and_rate_limits_and_server_errors_are_retried() {
    let (fleet, _) = Fleet::git();
    fleet.add_resource(PROD, "missing.yaml");
    let sha = fleet.commit("prod names a file that does not exist");
    // The first request is rate limited, the second meets a server error: both are retried.
    let api = Api::start(Box::new(|n| match n {
        0 => (429, vec![("retry-after", "1")]),
        1 => (500, vec![]),
        _ => (201, vec![]),
    }));
    let token = token_file(&fleet);
    let out = run_github(&fleet, &api, &token, &[]);
    out.expect_code(1);
    let seen = api.seen();
    check_github(&seen, &sha);
    assert_eq!(
        (seen[0].body.clone(), seen[1].body.clone()),
        (seen[2].body.clone(), seen[2].body.clone()),
        "the first status is sent again until it is taken"
    );
    let prod = said_on(&seen, "context", &format!("aro-gitops/{PROD}"));
    let (state, description) = prod.last().expect("prod's status");
    assert_eq!(state, "failure", "{prod:?}");
    assert!(description.contains("missing.yaml"), "{description}");
    let dev = said_on(&seen, "context", &format!("aro-gitops/{DEV}"));
    assert_eq!(dev.last().map(|s| s.0.as_str()), Some("success"), "{dev:?}");
    assert!(
        seen.iter().all(|s| s.body.get("target_url").is_none()),
        "no page, no link"
    );
}

#[test]
fn gitlab_gets_one_fleet_status_with_its_private_token_from_the_environment() {
    let (fleet, sha) = Fleet::git();
    let api = Api::always(201);
    let out = run(
        &fleet,
        &[
            "--commit-status",
            "gitlab",
            "--commit-status-api",
            &format!("{}/api/v4", api.url()),
            "--commit-status-repo",
            "platform/aro/fleet",
            "--commit-status-context",
            "fleet",
        ],
        &[("ARO_GITOPS_COMMIT_STATUS_TOKEN", TOKEN)],
    );
    out.expect_code(0);
    let seen = api.seen();
    assert!(!seen.is_empty());
    for s in &seen {
        assert_eq!(s.method, "POST");
        assert_eq!(
            s.path,
            format!("/api/v4/projects/platform%2Faro%2Ffleet/statuses/{sha}")
        );
        assert_eq!(s.header("private-token"), Some(TOKEN));
        assert_eq!(s.header("authorization"), None);
        let fields: BTreeSet<&str> = s
            .body
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            fields.is_subset(&["state", "name", "target_url", "description"].into()),
            "{fields:?}"
        );
        assert!(
            ["pending", "running", "success", "failed", "canceled"].contains(&s.field("state"))
        );
    }
    let said = said_on(&seen, "name", "aro-gitops");
    assert_eq!(said.len(), seen.len(), "one context: {said:?}");
    assert_eq!(
        said.first().map(|s| s.0.as_str()),
        Some("running"),
        "{said:?}"
    );
    assert_eq!(
        said.last().cloned(),
        Some(("success".to_string(), "2 units converged".to_string()))
    );
    // GitLab refuses a transition from a state to itself: no state is posted twice in a row.
    assert!(said.windows(2).all(|w| w[0].0 != w[1].0), "{said:?}");
}

#[test]
fn a_host_that_always_fails_changes_nothing_of_the_run() {
    let (fleet, _) = Fleet::git();
    let api = Api::always(503);
    let token = token_file(&fleet);
    let out = run_github(&fleet, &api, &token, &[]);
    out.expect_code(0);
    assert!(out.stdout.contains("reports committed"), "{}", out.all());
    assert!(api.seen().len() > 1, "retried");
    // Given up after its retries, or left in the queue when the run ended (waited for 10 s at
    // most): either is said.
    assert!(
        out.stderr.contains("commit status not posted: giving up")
            || out
                .stderr
                .contains("commit statuses still queued at exit were not posted"),
        "{}",
        out.all()
    );
}

#[test]
fn a_missing_token_or_repository_is_said_at_start() {
    let (fleet, _) = Fleet::git();
    let out = run(&fleet, &["--commit-status", "github"], &[]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("ARO_GITOPS_COMMIT_STATUS_TOKEN"),
        "{}",
        out.all()
    );
    let out = run(
        &fleet,
        &["--commit-status", "github"],
        &[("ARO_GITOPS_COMMIT_STATUS_TOKEN", TOKEN)],
    );
    out.expect_code(1);
    assert!(out.stderr.contains("--commit-status-repo"), "{}", out.all());
}

#[test]
fn a_refused_revision_fails_on_its_commit() {
    let fleet = Fleet::with_remote();
    let (_, public, _) = common::git::ssh_key(fleet.dir(), "alice", "ed25519");
    let trusted = fleet.dir().join("trusted-keys");
    std::fs::write(&trusted, format!("alice@example.com {public}\n")).expect("the trust file");
    let head = common::git::git(&fleet.repo, &["rev-parse", "HEAD"]);
    let api = Api::always(201);
    let token = token_file(&fleet);
    let out = run(
        &fleet,
        &[
            "--verify-signatures=all",
            "--trusted-keys",
            trusted.to_str().unwrap(),
            "--commit-status",
            "github",
            "--commit-status-api",
            &api.url(),
            "--commit-status-repo",
            "acme/fleet",
            "--commit-status-token-file",
            &token,
        ],
        &[],
    );
    assert_ne!(out.code, 0, "{}", out.all());
    let seen = api.seen();
    check_github(&seen, &head);
    let said = said_on(&seen, "context", "aro-gitops");
    let (state, description) = said.last().expect("the refusal's status");
    assert_eq!(state, "failure");
    assert!(
        description.starts_with("refused: signature check: ") && description.contains("not signed"),
        "{description}"
    );
}

#[test]
fn a_revision_that_fails_before_its_units_are_known_fails_on_its_commit() {
    let (fleet, _) = Fleet::git();
    fleet.write("aro-gitops.yaml", "fleet: 42\n");
    let sha = fleet.commit("a fleet name that is not a name");
    let api = Api::always(201);
    let token = token_file(&fleet);
    let out = run_github(&fleet, &api, &token, &[]);
    assert_ne!(out.code, 0, "{}", out.all());
    let seen = api.seen();
    check_github(&seen, &sha);
    let said = said_on(&seen, "context", "aro-gitops");
    let (state, description) = said.last().expect("the failure's status");
    assert_eq!(state, "failure");
    assert!(
        description.starts_with("failed: ") && description.contains("aro-gitops.yaml"),
        "{description}"
    );
}
