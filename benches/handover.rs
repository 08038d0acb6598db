//! Leader handover benchmark (issue 14, "How it is measured"): two `aro-gitops run --leader-elect`
//! replicas on a generated fleet against `aro-gitops control-plane serve --simulate-azure`; the
//! leader is killed with SIGKILL (no release), a change to one cluster is committed, and the bench
//! times, from the kill:
//! - **takeover**: until the Lease names the standby (its first acquire/renewal), polled every
//!   20 ms: at most the lease duration plus a retry period;
//! - **first write**: until the new leader's first apply (its log line `applied object=...`, read
//!   as it comes, or the change itself when that is seen first);
//! - **change applied**: until the committed object exists.
//!
//! Then the killed replica is started again (the new standby) and the next round kills the new
//! leader. Run with `cargo bench --bench handover` (options after `--`: `--clusters N` (20),
//! `--rounds R` (5), `--fast` for lease 4 s / renew deadline 3 s / retry 500 ms instead of the
//! kubebuilder defaults 15 s / 10 s / 2 s, `--workdir DIR`).

mod common;

use common::{ARO_GITOPS, generate_fleet, git, load_average, ms};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const LEASE_PATH: &str =
    "/apis/coordination.k8s.io/v1/namespaces/aro-gitops-system/leases/aro-gitops";
const FAST: &[&str] = &[
    "--leader-election-lease-duration",
    "4s",
    "--leader-election-renew-deadline",
    "3s",
    "--leader-election-retry-period",
    "500ms",
];

struct Options {
    clusters: usize,
    rounds: usize,
    fast: bool,
    workdir: Option<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        clusters: 20,
        rounds: 5,
        fast: false,
        workdir: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--clusters" => o.clusters = args.next().and_then(|v| v.parse().ok()).expect("N"),
            "--rounds" => o.rounds = args.next().and_then(|v| v.parse().ok()).expect("R"),
            "--fast" => o.fast = true,
            "--workdir" => o.workdir = args.next().map(PathBuf::from),
            _ => {} // cargo bench passes --bench
        }
    }
    o
}

/// One replica: its process and its output lines.
struct Replica {
    child: Child,
    lines: Receiver<String>,
    identity: String,
}

impl Replica {
    fn start(repo: &Path, state: &Path, kubeconfig: &Path, fast: bool) -> Replica {
        let mut child = Command::new(ARO_GITOPS)
            .arg("run")
            .arg("--repo")
            .arg(repo)
            .arg("--state")
            .arg(state)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--leader-elect", "--interval", "1s"])
            .args(if fast { FAST } else { &[] })
            .env("ARO_GITOPS_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("aro-gitops starts");
        let (tx, lines) = channel();
        let out: Box<dyn Read + Send> = Box::new(child.stdout.take().expect("piped"));
        let err: Box<dyn Read + Send> = Box::new(child.stderr.take().expect("piped"));
        for stream in [out, err] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        let mut r = Replica {
            child,
            lines,
            identity: String::new(),
        };
        let line = r.wait_for("leader election: identity ", Duration::from_secs(60));
        let rest = &line[line.find("identity ").expect("found") + "identity ".len()..];
        r.identity = rest.split(',').next().expect("an identity").to_string();
        r
    }

    fn wait_for(&mut self, what: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(what) => return l,
                Ok(_) => {}
                Err(e) => panic!("no line with {what:?} within {wait:?}: {e}"),
            }
        }
    }

    /// Forgets the lines read so far.
    fn drain(&mut self) {
        while self.lines.try_recv().is_ok() {}
    }

    /// When a line holding `what` was first read, reading what has come so far (polled every
    /// 20 ms: that close).
    fn seen_at(&mut self, what: &str, at: &mut Option<Instant>) {
        while let Ok(l) = self.lines.try_recv() {
            if at.is_none() && l.contains(what) {
                *at = Some(Instant::now());
            }
        }
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `host:port` of the server a kubeconfig names.
fn server_addr(kubeconfig: &Path) -> String {
    let text = std::fs::read_to_string(kubeconfig).expect("the kubeconfig");
    // Written as JSON (see `controlplane::kubeconfig`); a YAML `server:` line otherwise.
    let url = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => v
            .pointer("/clusters/0/cluster/server")
            .and_then(|s| s.as_str())
            .expect("a server")
            .to_string(),
        Err(_) => text
            .lines()
            .find_map(|l| l.trim().strip_prefix("server:"))
            .expect("a server line")
            .trim()
            .trim_matches('"')
            .to_string(),
    };
    url.trim_start_matches("http://").to_string()
}

/// GET `path`: the status code and body.
fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    common::http(
        addr,
        "GET",
        path,
        &[("accept", "application/json".into())],
        b"",
    )
}

fn holder(addr: &str) -> Option<String> {
    let (code, body) = get(addr, LEASE_PATH)?;
    if code != 200 {
        return None;
    }
    // The body may be chunked: find the field rather than parse the whole.
    let at = body.find("\"holderIdentity\":\"")? + "\"holderIdentity\":\"".len();
    Some(body[at..].split('"').next()?.to_string())
}

fn poll<T>(wait: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "no {what} within {wait:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    let o = options();
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = o
        .workdir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let repo = work.join("fleet");
    generate_fleet(o.clusters, &repo);
    let server = common::Server::start(
        ARO_GITOPS,
        &work.join("control-plane"),
        &["--simulate-azure", "--sim-delay", "0s"],
        "aro-gitops local control plane serving at",
        Duration::from_secs(60),
    )
    .expect("the control plane serves");
    let addr = server_addr(&server.kubeconfig);
    let (lease, retry) = if o.fast {
        (Duration::from_secs(4), Duration::from_millis(500))
    } else {
        (Duration::from_secs(15), Duration::from_secs(2))
    };
    let state = |i: usize| work.join(format!("state-{i}"));
    let mut replicas = [
        Some(Replica::start(&repo, &state(0), &server.kubeconfig, o.fast)),
        Some(Replica::start(&repo, &state(1), &server.kubeconfig, o.fast)),
    ];
    let first = poll(Duration::from_secs(60), "Lease holder", || holder(&addr));
    let mut leader = replicas
        .iter()
        .position(|r| r.as_ref().is_some_and(|r| r.identity == first))
        .expect("a replica holds the Lease");
    let converge = Duration::from_secs(30 * 60);
    replicas[leader]
        .as_mut()
        .expect("running")
        .wait_for("cycle 0 (initial)", converge);
    let unit = "clusters/c00001";
    let mut rows = Vec::new();
    for round in 1..=o.rounds {
        let standby = 1 - leader;
        // The standby has loaded the revision and warmed its caches.
        let id = replicas[standby]
            .as_ref()
            .expect("running")
            .identity
            .clone();
        replicas[leader].as_mut().expect("running").kill9();
        let killed = Instant::now();
        let name = format!("handover-{round}");
        std::fs::write(
            repo.join(unit).join(format!("{name}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  round: \"{round}\"\n"),
        )
        .expect("write");
        let k = repo.join(unit).join("kustomization.yaml");
        let text = std::fs::read_to_string(&k).expect("kustomization");
        std::fs::write(
            &k,
            text.replacen("resources:\n", &format!("resources:\n- {name}.yaml\n"), 1),
        )
        .expect("write");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", &name]);
        // Lines before the kill are not the new leader's.
        let mut first_apply = None;
        replicas[standby].as_mut().expect("running").drain();
        let new = replicas[standby].as_mut().expect("running");
        poll(lease + retry * 5, "takeover", || {
            new.seen_at("applied object=", &mut first_apply);
            holder(&addr).filter(|h| *h == id)
        });
        let takeover = killed.elapsed();
        let path = format!("/api/v1/namespaces/aro-c00001/configmaps/{name}");
        poll(Duration::from_secs(600), "the change applied", || {
            new.seen_at("applied object=", &mut first_apply);
            get(&addr, &path).filter(|(c, _)| *c == 200)
        });
        let applied = killed.elapsed();
        // The log line of an apply can come after the object is seen: then the change was the
        // first write.
        let first = first_apply.map_or(applied, |t| (t - killed).min(applied));
        println!(
            "round {round}: takeover {} (Lease holder is the standby), first write {}, change applied {}",
            ms(takeover),
            ms(first),
            ms(applied)
        );
        rows.push((takeover, first, applied));
        // The killed replica comes back as the standby.
        replicas[leader] = Some(Replica::start(
            &repo,
            &state(leader),
            &server.kubeconfig,
            o.fast,
        ));
        replicas[leader]
            .as_mut()
            .expect("running")
            .wait_for("standing by: revision loaded, caches warm", converge);
        leader = standby;
    }
    let stat = |f: fn(&(Duration, Duration, Duration)) -> Duration| {
        let mut v: Vec<Duration> = rows.iter().map(f).collect();
        v.sort();
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (t50, tmax) = stat(|r| r.0);
    let (f50, fmax) = stat(|r| r.1);
    let (a50, amax) = stat(|r| r.2);
    println!();
    println!(
        "| clusters | lease / renew deadline / retry | rounds | takeover p50 (max) | first write p50 (max) | change applied p50 (max) |"
    );
    println!("|---:|---|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} ({}) | {} ({}) | {} ({}) |",
        o.clusters,
        if o.fast {
            "4 s / 3 s / 500 ms"
        } else {
            "15 s / 10 s / 2 s"
        },
        rows.len(),
        ms(t50),
        ms(tmax),
        ms(f50),
        ms(fmax),
        ms(a50),
        ms(amax)
    );
    if let Some(l) = load_average() {
        println!("load average at the end: {l:.1}");
    }
    assert!(
        tmax <= lease + retry * 2,
        "a takeover took {tmax:?}: more than the lease duration and two retry periods"
    );
}
