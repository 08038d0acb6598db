//! Case 11: the local control plane keeps kube-apiserver's limits. Every test drives the
//! standalone server (`aro-gitops control-plane serve`) over a real socket: raw HTTP/1.1 where the
//! exact bytes matter (collection deletes, stalled and malformed bodies), the real kubectl where a
//! user would use it.

#[allow(unused_imports)]
use super::*;
use crate::common::kubectl::{Kubectl, Server, poll_until};
use aro_gitops::marks::{AGENT_NAMESPACE, INVENTORY_LABEL};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The namespaces no request may delete.
const PROTECTED: [&str; 4] = ["default", "kube-system", "kube-public", AGENT_NAMESPACE];

/// Upper bound for anything the server must answer "promptly".
const PROMPT: Duration = Duration::from_secs(10);

/// Deadline for kubectl-visible effects.
const T: Duration = Duration::from_secs(20);

/// What the server answered on a raw connection, and how long it took.
struct Answer {
    status: u16,
    body: Value,
    elapsed: Duration,
}

/// Sends `raw` on a fresh connection (and nothing more, the connection left open), then reads
/// until the server closes it. Fails the test when no complete answer arrives `within`. The bytes
/// are written from another thread, so a server answering before it read them all is heard.
fn exchange(addr: &str, raw: &[u8], within: Duration) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect to the control plane");
    let start = Instant::now();
    let mut writer = stream.try_clone().expect("clone the connection");
    let raw = raw.to_vec();
    // The server may close before reading everything (413): a failed write is no error here.
    let write = std::thread::spawn(move || writer.write_all(&raw).is_ok());
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let left = within.saturating_sub(start.elapsed());
        assert!(
            !left.is_zero(),
            "no answer within {within:?}; got so far: {}",
            String::from_utf8_lossy(&got)
        );
        stream.set_read_timeout(Some(left)).expect("read timeout");
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if !got.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "no answer within {within:?} ({e}); got so far: {}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    let elapsed = start.elapsed();
    let _ = write.join();
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("the connection closed without an answer: {text:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    let body = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("the answer is not a JSON Status ({e}): {text}"));
    Answer {
        status,
        body,
        elapsed,
    }
}

/// A request head for `exchange`; `extra` holds more header lines, each ending in `\r\n`.
fn head(method: &str, path: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: cp\r\nConnection: close\r\nAccept: application/json\r\nUser-Agent: safety-test/1.0\r\n{extra}\r\n"
    )
}

#[track_caller]
fn assert_status(a: &Answer, code: u16, reason: &str, message: &str) {
    assert_eq!(a.status, code, "{}", a.body);
    assert_eq!(a.body["kind"], "Status", "{}", a.body);
    assert_eq!(a.body["code"], code, "{}", a.body);
    assert_eq!(a.body["reason"], reason, "{}", a.body);
    let m = a.body["message"].as_str().unwrap_or("");
    assert!(
        m.contains(message),
        "the message should say {message:?}: {m}"
    );
}

fn namespaces(k: &Kubectl) -> Vec<String> {
    let list = k.get_json(&["namespaces"]).expect("namespaces list");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

fn config_maps(k: &Kubectl, namespace: &str) -> Vec<String> {
    let list = k
        .get_json(&["configmaps", "-n", namespace])
        .expect("configmaps list");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A server with the agent's namespace holding one inventory, and a team namespace.
fn server_with_agent_namespace() -> (Server, Kubectl) {
    let server = Server::start();
    let k = server.kubectl();
    k.ok_stdin(
        &["apply", "--server-side", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {AGENT_NAMESPACE}\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inventory-x\n  namespace: {AGENT_NAMESPACE}\n  labels:\n    {INVENTORY_LABEL}: \"true\"\ndata:\n  entries: \"\"\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  namespace: team-a\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scratch\n  namespace: team-a\n  labels:\n    scratch: \"yes\"\n"
        ),
    );
    (server, k)
}

#[test]
fn case_11_the_protected_list_names_the_agents_namespace() {
    let config = aro_gitops::controlplane::Config::new("/nonexistent");
    for ns in PROTECTED {
        assert!(
            config.protected_namespaces.iter().any(|p| p == ns),
            "{ns} must be protected by default: {:?}",
            config.protected_namespaces
        );
    }
}

#[test]
fn case_11_namespaces_cannot_be_deleted_as_a_collection() {
    let (server, k) = server_with_agent_namespace();
    let before = namespaces(&k);

    let a = exchange(
        &server.addr,
        head("DELETE", "/api/v1/namespaces", "").as_bytes(),
        PROMPT,
    );
    assert_status(
        &a,
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    );
    // A label selector or a dry run changes nothing: the route is not served.
    let a = exchange(
        &server.addr,
        head("DELETE", "/api/v1/namespaces?labelSelector=x%3Dy", "").as_bytes(),
        PROMPT,
    );
    assert_eq!(a.status, 405, "{}", a.body);
    // Nor across namespaces: the all-namespaces path of a namespaced kind only lists.
    let a = exchange(
        &server.addr,
        head("DELETE", "/api/v1/configmaps", "").as_bytes(),
        PROMPT,
    );
    assert_status(&a, 405, "MethodNotAllowed", "does not allow this method");
    // Nor through a subresource of one namespace.
    for ns in ["team-a", AGENT_NAMESPACE] {
        for sub in ["finalize", "status"] {
            let path = format!("/api/v1/namespaces/{ns}/{sub}");
            let a = exchange(&server.addr, head("DELETE", &path, "").as_bytes(), PROMPT);
            assert_status(&a, 405, "MethodNotAllowed", "does not allow this method");
        }
    }
    assert_eq!(namespaces(&k), before, "no namespace went");
    assert_eq!(config_maps(&k, AGENT_NAMESPACE), ["inventory-x"]);

    // Discovery says so too.
    let core: Value =
        serde_json::from_str(&k.ok(&["get", "--raw", "/api/v1"])).expect("discovery JSON");
    let verbs = |plural: &str| -> Vec<String> {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == plural)
            .map(|r| serde_json::from_value(r["verbs"].clone()).unwrap())
            .unwrap_or_default()
    };
    assert!(!verbs("namespaces").contains(&"deletecollection".into()));
    assert!(verbs("namespaces").contains(&"delete".into()));
    assert!(verbs("configmaps").contains(&"deletecollection".into()));

    // A collection delete in one namespace keeps working, selector and all.
    let a = exchange(
        &server.addr,
        head(
            "DELETE",
            "/api/v1/namespaces/team-a/configmaps?labelSelector=scratch%3Dyes",
            "",
        )
        .as_bytes(),
        PROMPT,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["kind"], "ConfigMapList");
    assert_eq!(config_maps(&k, "team-a"), ["keep"]);
    k.ok(&["delete", "configmaps", "--all", "-n", "team-a"]);
    assert!(config_maps(&k, "team-a").is_empty());
    assert_eq!(config_maps(&k, AGENT_NAMESPACE), ["inventory-x"]);
}

#[test]
fn case_11_system_namespaces_are_protected() {
    let (server, k) = server_with_agent_namespace();

    let r = k.run(&["delete", "namespace", "default"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "Error from server (Forbidden): namespaces \"default\" is forbidden: this namespace may not be deleted"
        ),
        "{}",
        r.stderr
    );
    for ns in PROTECTED {
        for query in ["", "?dryRun=All"] {
            let a = exchange(
                &server.addr,
                head("DELETE", &format!("/api/v1/namespaces/{ns}{query}"), "").as_bytes(),
                PROMPT,
            );
            assert_status(
                &a,
                403,
                "Forbidden",
                &format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted"),
            );
            assert_eq!(a.body["details"], json!({"name": ns, "kind": "namespaces"}));
        }
    }

    // `kubectl delete namespaces --all` deletes one by one: the others go, the protected stay.
    let r = k.run(&["delete", "namespaces", "--all", "--timeout=20s"]);
    assert_ne!(
        r.code, 0,
        "refusals make kubectl fail:\n{}{}",
        r.stdout, r.stderr
    );
    for ns in PROTECTED {
        assert!(
            r.stderr.contains(&format!(
                "namespaces \"{ns}\" is forbidden: this namespace may not be deleted"
            )),
            "{ns}: {}",
            r.stderr
        );
    }
    assert!(
        r.stdout.contains("namespace \"team-a\" deleted"),
        "{}",
        r.stdout
    );
    poll_until(T, "team-a to go", || {
        (!namespaces(&k).contains(&"team-a".to_string())).then_some(())
    });
    let left = namespaces(&k);
    for ns in PROTECTED {
        assert!(left.iter().any(|n| n == ns), "{ns} survived: {left:?}");
    }
    assert_eq!(config_maps(&k, AGENT_NAMESPACE), ["inventory-x"]);

    // Nor does the garbage collector take one: the agent's namespace, made a dependent of another
    // namespace, stays when that one is deleted.
    k.ok_stdin(
        &["apply", "--server-side", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: owner\n",
    );
    let owner = k.get_json(&["namespace", "owner"]).expect("owner");
    let patch = json!({"metadata": {"ownerReferences": [{
        "apiVersion": "v1", "kind": "Namespace", "name": "owner",
        "uid": owner["metadata"]["uid"],
    }]}});
    k.ok(&[
        "patch",
        "namespace",
        AGENT_NAMESPACE,
        "--type",
        "merge",
        "-p",
        &patch.to_string(),
    ]);
    k.ok(&["delete", "namespace", "owner", "--timeout=20s"]);
    poll_until(T, "owner to go", || {
        (!namespaces(&k).contains(&"owner".to_string())).then_some(())
    });
    let agent_ns = k.get_json(&["namespace", AGENT_NAMESPACE]);
    let agent_ns = agent_ns.expect("the agent's namespace survives its owner");
    assert!(
        agent_ns["metadata"].get("deletionTimestamp").is_none(),
        "{agent_ns}"
    );
    assert_eq!(config_maps(&k, AGENT_NAMESPACE), ["inventory-x"]);
}

#[test]
fn case_11_the_agents_inventories_survive_deleting_every_namespace() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    let server = Server::start_with_state(&fleet.state.join("control-plane"));
    let k = server.kubectl();
    let inventories = config_maps(&k, AGENT_NAMESPACE);
    assert!(
        inventories.iter().any(|n| n.starts_with("inventory-")),
        "the run wrote inventories: {inventories:?}"
    );

    let a = exchange(
        &server.addr,
        head("DELETE", "/api/v1/namespaces", "").as_bytes(),
        PROMPT,
    );
    assert_eq!(a.status, 405, "{}", a.body);
    let a = exchange(
        &server.addr,
        head(
            "DELETE",
            &format!("/api/v1/namespaces/{AGENT_NAMESPACE}"),
            "",
        )
        .as_bytes(),
        PROMPT,
    );
    assert_eq!(a.status, 403, "{}", a.body);
    let r = k.run(&["delete", "namespaces", "--all", "--timeout=30s"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        config_maps(&k, AGENT_NAMESPACE),
        inventories,
        "every inventory is still there"
    );
}

#[test]
fn case_11_stalled_body_times_out() {
    let server = Server::start_with_args(&["--request-body-timeout", "2s"]);
    let k = server.kubectl();
    let secrets = "/api/v1/namespaces/default/secrets";

    // Content-Length promises 200 bytes; 20 arrive, then nothing.
    let mut raw = head(
        "POST",
        secrets,
        "Content-Type: application/json\r\nContent-Length: 200\r\n",
    );
    raw.push_str(r#"{"apiVersion":"v1","#);
    let a = exchange(&server.addr, raw.as_bytes(), PROMPT);
    assert_status(
        &a,
        408,
        "Timeout",
        "the request body did not arrive within 2s",
    );
    assert!(
        a.elapsed >= Duration::from_millis(1900),
        "answered before the timeout: {:?}",
        a.elapsed
    );

    // Chunked: a plausible chunk size, part of the chunk, then nothing.
    let mut raw = head(
        "PUT",
        &format!("{secrets}/s"),
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
    );
    raw.push_str("400\r\n{\"apiVersion\":");
    let a = exchange(&server.addr, raw.as_bytes(), PROMPT);
    assert_status(&a, 408, "Timeout", "did not arrive");

    // Delete bodies (DeleteOptions) are bounded the same way.
    let raw = head(
        "DELETE",
        "/api/v1/namespaces/default",
        "Content-Type: application/json\r\nContent-Length: 50\r\n",
    );
    let a = exchange(&server.addr, raw.as_bytes(), PROMPT);
    assert_eq!(a.status, 408, "{}", a.body);

    // The server goes on serving, and nothing half-sent was stored.
    assert!(
        k.get_json(&["secrets", "-n", "default"]).unwrap()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    k.ok(&["create", "secret", "generic", "after", "--from-literal=a=b"]);
}

#[test]
fn case_11_malformed_chunked_body_gets_400() {
    // The default body timeout (60 s) is far beyond PROMPT: a 400 here is the decoding error's.
    let server = Server::start();
    let secrets = "/api/v1/namespaces/default/secrets";
    let chunked = "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n";
    for (size_line, what) in [
        ("fffffffffffffffffff\r\n", "invalid chunk size: overflow"),
        ("zz\r\n", "chunk size"),
        ("5;\n", "chunk"),
    ] {
        let raw = format!("{}{size_line}", head("POST", secrets, chunked));
        let a = exchange(&server.addr, raw.as_bytes(), PROMPT);
        assert_status(&a, 400, "BadRequest", what);
        assert!(
            a.body["message"]
                .as_str()
                .unwrap()
                .starts_with("the request body could not be read"),
            "{}",
            a.body
        );
    }

    // Too large is 413, declared or streamed, and also answered at once.
    let raw = head(
        "POST",
        secrets,
        &format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            4 << 20
        ),
    );
    let a = exchange(&server.addr, raw.as_bytes(), PROMPT);
    assert_status(
        &a,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is",
    );
    let mut raw = head("POST", secrets, chunked).into_bytes();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..4 {
        raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        raw.extend_from_slice(&chunk);
        raw.extend_from_slice(b"\r\n");
    }
    let a = exchange(&server.addr, &raw, PROMPT);
    assert_status(
        &a,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is",
    );

    // A well-formed chunked body is fine.
    let body = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"chunked"}}"#;
    let raw = format!(
        "{}{:x}\r\n{body}\r\n0\r\n\r\n",
        head("POST", secrets, chunked),
        body.len()
    );
    let a = exchange(&server.addr, raw.as_bytes(), PROMPT);
    assert_eq!(a.status, 201, "{}", a.body);
}
