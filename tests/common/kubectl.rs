//! Helpers for driving the standalone control plane (`aro-gitops control-plane serve`) from tests:
//! start it on a temporary state directory, run the real `kubectl` against it, and talk raw
//! HTTP/1.1 to it where a test needs exact requests (bad input, fast writers).

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a server gets to start and print its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One `aro-gitops control-plane serve` process; killed when dropped.
pub struct Server {
    child: Child,
    dir: Option<tempfile::TempDir>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub kubeconfig: PathBuf,
    /// The extra `control-plane serve` arguments, given again on a restart.
    args: Vec<String>,
}

impl Server {
    /// Starts a server on a fresh temporary state directory, on a free loopback port.
    pub fn start() -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        Server::start_on(dir, &state, "127.0.0.1:0")
    }

    /// Starts a server on an existing state directory (e.g. the embedded control plane an agent
    /// run left behind); logs and kubectl's cache go to a temporary directory.
    #[allow(dead_code)]
    pub fn start_with_state(state: &Path) -> Server {
        Server::start_on(tempfile::tempdir().expect("tempdir"), state, "127.0.0.1:0")
    }

    /// Starts a server on a fresh temporary state directory with extra `control-plane serve`
    /// arguments (e.g. `--request-body-timeout 2s`).
    #[allow(dead_code)]
    pub fn start_with_args(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        Server::start_with(dir, &state, "127.0.0.1:0", extra)
    }

    /// Starts a server whose state lives in `state`, listening on `listen`.
    fn start_on(dir: tempfile::TempDir, state: &Path, listen: &str) -> Server {
        Server::start_with::<&str>(dir, state, listen, &[])
    }

    fn start_with<S: AsRef<std::ffi::OsStr>>(
        dir: tempfile::TempDir,
        state: &Path,
        listen: &str,
        extra: &[S],
    ) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("server.log"))
            .expect("server log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
            .args(["control-plane", "serve", "--listen", listen, "--state"])
            .arg(state)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("the aro-gitops binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        // Keep reading stdout until the server exits, so its prints never hit a closed pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + START_TIMEOUT;
        let (mut url, mut kubeconfig) = (None, None);
        while url.is_none() || kubeconfig.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(u) = line.strip_prefix("aro-gitops local control plane serving at ")
                    {
                        url = Some(u.trim().to_string());
                    } else if let Some(k) = line.strip_prefix("kubeconfig: ") {
                        kubeconfig = Some(PathBuf::from(k.trim()));
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log =
                        std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
                    panic!(
                        "the control plane did not print its address and kubeconfig within {START_TIMEOUT:?}; its log:\n{log}"
                    );
                }
            }
        }
        let url = url.expect("url");
        let addr = url.trim_start_matches("http://").to_string();
        Server {
            child,
            dir: Some(dir),
            url,
            addr,
            kubeconfig: kubeconfig.expect("kubeconfig"),
            args: extra
                .iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// The temporary directory holding the state, the server log and kubectl's cache.
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("dir").path()
    }

    /// `kill -9` the server (SIGKILL: no shutdown code runs) and reap it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills this server (if still running) and starts a new one on the same state directory and
    /// the same address, so clients can reconnect.
    pub fn restart(mut self) -> Server {
        self.kill9();
        let dir = self.dir.take().expect("dir");
        let addr = self.addr.clone();
        let state = dir.path().join("state");
        let args = std::mem::take(&mut self.args);
        Server::start_with(dir, &state, &addr, &args)
    }

    /// Kills this server (SIGKILL); [`Stopped::start`] serves its state on its address again.
    pub fn stop(mut self) -> Stopped {
        self.kill9();
        Stopped {
            dir: self.dir.take().expect("dir"),
            addr: self.addr.clone(),
        }
    }

    /// A kubectl bound to this server's kubeconfig, with its own discovery cache (ports get reused
    /// across tests, and a cache from another server would miss this one's CRDs).
    pub fn kubectl(&self) -> Kubectl {
        Kubectl {
            kubeconfig: self.kubeconfig.clone(),
            cache_dir: self.dir().join("kube-cache"),
        }
    }

    /// One raw HTTP/1.1 request to this server.
    pub fn http(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> HttpResponse {
        http(&self.addr, method, path, content_type, body)
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir().join("server.log")).unwrap_or_default()
    }
}

/// A server [`Server::stop`] killed: its state directory and address.
pub struct Stopped {
    dir: tempfile::TempDir,
    addr: String,
}

impl Stopped {
    /// Serves the state again on the same address (the CRDs and objects are back), so clients
    /// reconnect.
    pub fn start(self) -> Server {
        let state = self.dir.path().join("state");
        Server::start_on(self.dir, &state, &self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The outcome of one kubectl run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from_output(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// The real `kubectl`, pointed at one server.
#[derive(Clone)]
pub struct Kubectl {
    pub kubeconfig: PathBuf,
    pub cache_dir: PathBuf,
}

impl Kubectl {
    /// A `kubectl` command with this server's kubeconfig and cache; add arguments and spawn it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args);
        cmd.env_remove("KUBECONFIG").stdin(Stdio::null());
        cmd
    }

    /// Runs kubectl to completion.
    pub fn run(&self, args: &[&str]) -> Run {
        Run::from_output(self.command(args).output().expect("kubectl runs"))
    }

    /// Runs kubectl with `stdin` as its standard input (for `-f -`).
    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(stdin.as_bytes())
            .expect("write kubectl stdin");
        Run::from_output(child.wait_with_output().expect("kubectl finishes"))
    }

    /// Runs kubectl and fails the test unless it exits 0; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args);
        assert_eq!(
            r.code, 0,
            "kubectl {args:?} failed:\n{}{}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// `ok` with standard input.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        let r = self.run_stdin(args, stdin);
        assert_eq!(
            r.code, 0,
            "kubectl {args:?} failed:\n{}{}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// `kubectl get ARGS -o json`, parsed; `None` when the object is not found.
    pub fn get_json(&self, args: &[&str]) -> Option<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let r = self.run(&all);
        if r.code != 0 {
            assert!(
                r.stderr.contains("NotFound") || r.stderr.contains("not found"),
                "kubectl {all:?} failed:\n{}",
                r.stderr
            );
            return None;
        }
        Some(
            serde_json::from_str(&r.stdout)
                .unwrap_or_else(|e| panic!("kubectl {all:?} printed no JSON ({e}):\n{}", r.stdout)),
        )
    }
}

/// Polls `check` until it returns `Some`, failing the test after `timeout`.
pub fn poll_until<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads lines from a child's output in a thread, so a test can wait for one with a deadline.
pub struct LineReader {
    rx: mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl LineReader {
    pub fn new(out: impl Read + Send + 'static) -> LineReader {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        LineReader {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits for a line matching `pred`; fails the test (showing what was read) after `timeout`.
    pub fn wait_for(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "no line showing {what} within {timeout:?} ({e}); lines read:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
}

/// A raw HTTP response.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub body: String,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
}

impl HttpResponse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("response body is not JSON ({e}): {}", self.body))
    }

    /// Every value of header `name` (lower case), in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// [`http_request`], failing the test when the request cannot be made.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> HttpResponse {
    http_request(addr, method, path, content_type, body)
        .unwrap_or_else(|e| panic!("{method} {path}: request failed: {e}"))
}

/// Sends one HTTP/1.1 request (`Connection: close`) and reads the whole response. The body is
/// written from another thread while the response is read, so a server that answers before
/// reading all of a large body (413) is still heard.
pub fn http_request(
    addr: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\nUser-Agent: raw-test/1.0\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(ct) = content_type {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let mut writer = stream.try_clone()?;
    let body = body.to_vec();
    let write = std::thread::spawn(move || {
        // The server may stop reading (and close) early; a failed write is not an error here.
        let _ = writer.write_all(&body);
    });
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            // A reset after the response arrived (the server closed with body bytes unread).
            Err(e) if !raw.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e),
        }
    }
    let _ = write.join();
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> std::io::Result<HttpResponse> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of response head"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut rest = &raw[split + 4..];
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("no status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut out = Vec::new();
        loop {
            let eol = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or_else(|| bad("truncated chunk"))?;
            let size_text = String::from_utf8_lossy(&rest[..eol]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| bad("bad chunk size"))?;
            rest = &rest[eol + 2..];
            if size == 0 || rest.len() < size {
                out.extend_from_slice(&rest[..size.min(rest.len())]);
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).unwrap_or(&[]);
        }
        out
    } else {
        match header("content-length").and_then(|v| v.parse::<usize>().ok()) {
            Some(n) => rest[..n.min(rest.len())].to_vec(),
            None => rest.to_vec(),
        }
    };
    Ok(HttpResponse {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
        headers,
    })
}
