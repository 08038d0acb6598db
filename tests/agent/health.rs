//! A long-running `aro-gitops run --health-probe-bind-address 127.0.0.1:0`: it says where it
//! serves, `/readyz` turns 200 once its watch caches have synced, and `/healthz` answers 200.

use super::resync::Running;
use super::*;
use std::io::{Read, Write};
use std::sync::mpsc::RecvTimeoutError;

/// How long the agent may take to start serving, and then to sync its caches (a debug build, a
/// shared machine).
const DEADLINE: Duration = Duration::from_secs(180);

/// The address in the line `health: serving on http://ADDR`, within [`DEADLINE`].
fn health_address(agent: &Running) -> String {
    let deadline = Instant::now() + DEADLINE;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match agent.lines.recv_timeout(left) {
            Ok(line) => {
                if let Some(addr) = line.strip_prefix("health: serving on http://") {
                    return addr.to_string();
                }
                seen.push(line);
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!("no health line; output:\n{}", seen.join("\n"))
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the agent ended; output:\n{}", seen.join("\n"))
            }
        }
    }
}

/// One GET of `path`: the status line and the body.
fn get(addr: &str, path: &str) -> std::io::Result<(String, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.lines().next().unwrap_or_default().to_string();
    Ok((status, body.to_string()))
}

#[test]
fn readyz_turns_ready_once_the_caches_synced_and_healthz_answers() {
    let f = Fixture::plain();
    let agent = Running::start_with(&f, &["--health-probe-bind-address", "127.0.0.1:0"]);
    let addr = health_address(&agent);

    let deadline = Instant::now() + DEADLINE;
    let mut answers = Vec::new();
    let body = loop {
        let (status, body) = get(&addr, "/readyz").expect("the probe endpoint answers");
        if status.starts_with("HTTP/1.1 200") {
            break body;
        }
        assert!(status.starts_with("HTTP/1.1 503"), "{status}: {body}");
        assert!(body.starts_with("not ready: "), "{body}");
        if answers.last() != Some(&body) {
            answers.push(body);
        }
        assert!(
            Instant::now() < deadline,
            "not ready within {DEADLINE:?}; answers:\n{}",
            answers.join("")
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(body, "ok\n");
    let (status, body) = get(&addr, "/healthz").expect("the probe endpoint answers");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(body, "ok\n");
}
