//! Raw HTTP against the standalone server: no acknowledged write is lost to kill -9, and bad input
//! is refused with a `Status` naming the problem while the store stays fine.

use super::*;
use crate::common::kubectl::{HttpResponse, http_request};
use std::time::Instant;

// ---------------------------------------------------------------------------------------------
// Durability

#[test]
fn kill_9_loses_no_acknowledged_write() {
    let mut server = Server::start();
    let addr = server.addr.clone();
    let (tx, rx) = std::sync::mpsc::channel::<(String, String)>();
    let writer = std::thread::spawn(move || {
        for i in 0.. {
            let name = format!("d-{i}");
            let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"n": b64(&i.to_string())}});
            match http_request(
                &addr,
                "POST",
                "/api/v1/namespaces/default/secrets",
                Some("application/json"),
                body.to_string().as_bytes(),
            ) {
                Ok(r) if r.status == 201 => {
                    let rv = r.json()["metadata"]["resourceVersion"]
                        .as_str()
                        .expect("resourceVersion")
                        .to_string();
                    if tx.send((name, rv)).is_err() {
                        break;
                    }
                }
                Ok(r) => panic!("unexpected answer to a create: {} {}", r.status, r.body),
                Err(_) => break, // the server is gone
            }
        }
    });
    let deadline = Instant::now() + T;
    let mut acked = Vec::new();
    while acked.len() < 40 {
        let left = deadline.saturating_duration_since(Instant::now());
        acked.push(rx.recv_timeout(left).unwrap_or_else(|e| {
            panic!(
                "writer stalled after {} writes ({e}); log:\n{}",
                acked.len(),
                server.log()
            )
        }));
    }
    server.kill9();
    writer.join().expect("writer thread");
    acked.extend(rx.try_iter());

    let server = server.restart();
    for (name, rv) in &acked {
        let r = server.http(
            "GET",
            &format!("/api/v1/namespaces/default/secrets/{name}"),
            None,
            b"",
        );
        assert_eq!(
            r.status, 200,
            "acknowledged {name} lost after kill -9: {}",
            r.body
        );
        assert_eq!(
            r.json()["metadata"]["resourceVersion"],
            json!(rv),
            "{name} came back with another resourceVersion"
        );
    }
    let max_rv: u64 = acked
        .iter()
        .map(|(_, rv)| rv.parse::<u64>().unwrap())
        .max()
        .unwrap();
    let r = server.http(
        "POST",
        "/api/v1/namespaces/default/secrets",
        Some("application/json"),
        br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"after-restart"}}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let new_rv: u64 = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        new_rv > max_rv,
        "resourceVersion went back after restart: {new_rv} <= {max_rv}"
    );
    let listed = server.kubectl().get_json(&["secrets"]).unwrap();
    assert!(
        listed["items"].as_array().unwrap().len() > acked.len(),
        "kubectl sees every secret after the restart"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[track_caller]
fn assert_refused(r: &HttpResponse, code: u16, needle: &str) {
    assert_eq!(r.status, code, "expected {code}: {}", r.body);
    let s = r.json();
    assert_eq!(s["kind"], "Status", "{s}");
    assert_eq!(s["status"], "Failure", "{s}");
    assert_eq!(s["code"], code, "{s}");
    let message = s["message"].as_str().unwrap_or("");
    assert!(
        message.contains(needle),
        "the message should name {needle:?}: {message}"
    );
}

#[test]
fn bad_input_is_refused_with_a_status_and_the_store_stays_fine() {
    let (server, k) = start_with_gizmos();
    let secrets = "/api/v1/namespaces/default/secrets";
    let post = |path: &str, ct: &str, body: &[u8]| server.http("POST", path, Some(ct), body);
    let json_ct = "application/json";
    assert_eq!(post(secrets, json_ct, br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"keep"},"data":{"a":"MQ=="}}"#).status, 201);

    // A body without kind/apiVersion takes them from the URL, as kube-apiserver does.
    for body in [
        &br#"{"metadata":{"name":"no-kind"}}"#[..],
        br#"{"kind":"Secret","metadata":{"name":"no-api-version"}}"#,
    ] {
        let r = post(secrets, json_ct, body);
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["kind"], "Secret", "{}", r.body);
        assert_eq!(r.json()["apiVersion"], "v1", "{}", r.body);
    }
    assert_refused(
        &post(
            secrets,
            json_ct,
            br#"{"apiVersion":"v1","kind":"Doodad","metadata":{"name":"wrong-kind"}}"#,
        ),
        400,
        "Doodad",
    );
    let r = post(
        "/apis/kubectl.example.com/v1/namespaces/default/doodads",
        json_ct,
        br#"{"apiVersion":"kubectl.example.com/v1","kind":"Doodad","metadata":{"name":"d"}}"#,
    );
    assert_refused(&r, 404, "could not find the requested resource");
    assert_refused(
        &post(secrets, json_ct, br#"{"apiVersion": "v1", "kind": "#),
        400,
        "JSON",
    );
    assert_refused(
        &post(
            secrets,
            "application/yaml",
            b"apiVersion: v1\nkind: Secret\nmetadata: {name: [unclosed\n",
        ),
        400,
        "YAML",
    );
    assert_refused(
        &post(
            secrets,
            json_ct,
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"Bad_Name"}}"#,
        ),
        422,
        "Bad_Name",
    );
    let gizmo = br#"{"apiVersion":"kubectl.example.com/v1","kind":"Gizmo","metadata":{"name":"nons"},"spec":{"size":1}}"#;
    // A namespaced resource without its namespace: no create there (405), no object (404).
    assert_refused(
        &post("/apis/kubectl.example.com/v1/gizmos", json_ct, gizmo),
        405,
        "does not allow this method",
    );
    assert_refused(
        &server.http(
            "PATCH",
            "/api/v1/secrets/keep?fieldManager=t",
            Some("application/apply-patch+yaml"),
            b"{}",
        ),
        404,
        "could not find the requested resource",
    );
    assert_refused(
        &server.http(
            "PATCH",
            &format!("{secrets}/keep"),
            Some("text/plain"),
            b"a=b",
        ),
        415,
        "415: Unsupported Media Type",
    );
    let huge = format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"huge"}},"data":{{"a":"{}"}}}}"#,
        "A".repeat(3 * 1024 * 1024 + 1024)
    );
    assert_refused(&post(secrets, json_ct, huge.as_bytes()), 413, "larger than");

    // The store is fine: the good object is intact, none of the bad ones exist, writes still work.
    let list = server.http("GET", secrets, None, b"");
    assert_eq!(list.status, 200, "{}", list.body);
    let names: Vec<String> = list.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| str_at(i, "/metadata/name").to_string())
        .collect();
    assert_eq!(names, ["keep", "no-api-version", "no-kind"]);
    assert!(
        k.get_json(&["gizmos", "-A"]).unwrap()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    create(&k, &secret("after", "default", &[("a", "1")]));
    assert_eq!(
        k.get_json(&["secret", "keep"]).unwrap()["data"]["a"],
        "MQ=="
    );
}
