//! The standalone control plane takes the protobuf bodies of kubectl's typed generators
//! (`kubectl create namespace|secret|configmap|service`), which POST
//! `application/vnd.kubernetes.protobuf`; and answers bad or unsupported protobuf with a Status.

mod common;

use base64::Engine;
use common::kubectl::Server;
use serde_json::Value;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} missing in {v}"))
}

#[test]
fn kubectl_create_generators_are_decoded() {
    let server = Server::start();
    let k = server.kubectl();

    k.ok(&["create", "namespace", "proto"]);
    let ns = k
        .get_json(&["namespace", "proto"])
        .expect("namespace exists");
    assert_eq!(str_at(&ns, "/status/phase"), "Active");

    k.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "proto",
        "--from-literal=password=s3cr3t-pw",
        "--from-literal=user=admin",
    ]);
    let secret = k
        .get_json(&["secret", "creds", "-n", "proto"])
        .expect("secret");
    assert_eq!(str_at(&secret, "/data/password"), b64(b"s3cr3t-pw"));
    assert_eq!(str_at(&secret, "/data/user"), b64(b"admin"));
    assert_eq!(str_at(&secret, "/type"), "Opaque");
    assert_eq!(str_at(&secret, "/metadata/namespace"), "proto");

    let dir = server.dir().join("files");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let text = dir.join("app.conf");
    std::fs::write(&text, "mode=fast\nlevel=3\n").expect("write app.conf");
    let blob = dir.join("blob.bin");
    let blob_bytes = [0u8, 0xff, 0xfe, 0x01, 0x80];
    std::fs::write(&blob, blob_bytes).expect("write blob.bin");
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "proto",
        "--from-literal=a=b",
        &format!("--from-file={}", text.display()),
        &format!("--from-file={}", blob.display()),
    ]);
    let cm = k
        .get_json(&["configmap", "settings", "-n", "proto"])
        .expect("configmap");
    assert_eq!(str_at(&cm, "/data/a"), "b");
    assert_eq!(str_at(&cm, "/data/app.conf"), "mode=fast\nlevel=3\n");
    assert_eq!(str_at(&cm, "/binaryData/blob.bin"), b64(&blob_bytes));

    k.ok(&[
        "create",
        "service",
        "clusterip",
        "web",
        "-n",
        "proto",
        "--tcp=80:8080",
    ]);
    let svc = k
        .get_json(&["service", "web", "-n", "proto"])
        .expect("service");
    assert_eq!(svc.pointer("/spec/ports/0/port"), Some(&Value::from(80)));
    assert_eq!(
        svc.pointer("/spec/ports/0/targetPort"),
        Some(&Value::from(8080))
    );
    assert_eq!(str_at(&svc, "/spec/selector/app"), "web");

    assert!(
        !server.log().contains("s3cr3t-pw"),
        "the server log shows a secret value"
    );
}

#[test]
fn create_secret_in_a_missing_namespace_is_not_found() {
    let server = Server::start();
    let k = server.kubectl();
    let r = k.run(&[
        "create",
        "secret",
        "generic",
        "lost",
        "-n",
        "nowhere",
        "--from-literal=k=v",
    ]);
    assert_ne!(r.code, 0, "created in a missing namespace: {}", r.stdout);
    assert!(
        r.stderr.contains("NotFound") || r.stderr.contains("namespaces \"nowhere\" not found"),
        "{}",
        r.stderr
    );
    for wrong in ["415", "UnsupportedMediaType", "unknown format"] {
        assert!(!r.stderr.contains(wrong), "{}", r.stderr);
    }
}

/// `k8s\0` + runtime.Unknown{typeMeta{apiVersion, kind}} and nothing else (short strings only).
fn envelope(api_version: &str, kind: &str) -> Vec<u8> {
    let mut type_meta = vec![0x0a, api_version.len() as u8];
    type_meta.extend_from_slice(api_version.as_bytes());
    type_meta.extend([0x12, kind.len() as u8]);
    type_meta.extend_from_slice(kind.as_bytes());
    let mut body = b"k8s\0".to_vec();
    body.extend([0x0a, type_meta.len() as u8]);
    body.extend(type_meta);
    body
}

#[test]
fn bad_and_unsupported_protobuf_is_refused_with_a_status() {
    let server = Server::start();
    let pb = Some("application/vnd.kubernetes.protobuf");
    let secrets = "/api/v1/namespaces/default/secrets";

    let r = server.http("POST", secrets, pb, &envelope("apps/v1", "Deployment"));
    assert_eq!(r.status, 415, "{}", r.body);
    let status = r.json();
    assert_eq!(str_at(&status, "/reason"), "UnsupportedMediaType");
    assert!(str_at(&status, "/message").contains("apps/v1 Deployment"));

    for body in [
        &b"{\"kind\":\"Secret\"}"[..],
        b"k8s\0\x0a\x05\x0a",
        b"k8s\0\x0b",
    ] {
        let r = server.http("POST", secrets, pb, body);
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(str_at(&r.json(), "/reason"), "BadRequest");
    }

    // A well-formed body whose raw object is missing reaches the API's own checks.
    let r = server.http("POST", secrets, pb, &envelope("v1", "Secret"));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(str_at(&r.json(), "/message").contains("name"), "{}", r.body);
}
