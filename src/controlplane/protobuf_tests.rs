//! Unit tests of the protobuf decoder, on bodies built by a tiny encoder below.

use super::*;
use serde_json::json;

/// A minimal protobuf encoder, enough to build the bodies kubectl sends.
mod enc {
    pub fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(num: u32, wire: u8, out: &mut Vec<u8>) {
        varint((u64::from(num) << 3) | u64::from(wire), out);
    }

    pub fn uint(num: u32, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        key(num, 0, &mut out);
        varint(v, &mut out);
        out
    }

    pub fn bytes(num: u32, b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        key(num, 2, &mut out);
        varint(b.len() as u64, &mut out);
        out.extend_from_slice(b);
        out
    }

    pub fn str(num: u32, s: &str) -> Vec<u8> {
        bytes(num, s.as_bytes())
    }

    pub fn msg(num: u32, parts: &[Vec<u8>]) -> Vec<u8> {
        bytes(num, &parts.concat())
    }

    pub fn entry(num: u32, k: &str, v: &[u8]) -> Vec<u8> {
        msg(num, &[str(1, k), bytes(2, v)])
    }

    pub fn fixed64(num: u32) -> Vec<u8> {
        let mut out = Vec::new();
        key(num, 1, &mut out);
        out.extend_from_slice(&[7; 8]);
        out
    }

    pub fn fixed32(num: u32) -> Vec<u8> {
        let mut out = Vec::new();
        key(num, 5, &mut out);
        out.extend_from_slice(&[7; 4]);
        out
    }

    /// `k8s\0` + runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}, as Go writes it.
    pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut out = b"k8s\0".to_vec();
        out.extend(msg(1, &[str(1, api_version), str(2, kind)]));
        out.extend(bytes(2, raw));
        out.extend(str(3, ""));
        out.extend(str(4, ""));
        out
    }
}

use enc::{bytes, entry, envelope, msg, str, uint};

/// ObjectMeta the way gogo-protobuf writes it: every non-pointer field, zero or not.
fn meta(name: &str, namespace: &str, extra: &[Vec<u8>]) -> Vec<u8> {
    let mut parts = vec![
        str(1, name),
        str(2, ""),
        str(3, namespace),
        str(4, ""),
        str(5, ""),
        str(6, ""),
        uint(7, 0),
        msg(8, &[]),
    ];
    parts.extend_from_slice(extra);
    msg(1, &parts)
}

const SECRET_VALUE: &str = "s3cr3t-value";

fn secret_body() -> Vec<u8> {
    let raw = [
        meta(
            "creds",
            "apps",
            &[
                entry(11, "app", b"web"),
                entry(12, "note", b"hello"),
                msg(
                    13,
                    &[
                        str(5, "v1"),
                        str(1, "ConfigMap"),
                        str(3, "owner"),
                        str(4, "uid-1"),
                        uint(6, 1),
                    ],
                ),
                str(14, "example.com/keep"),
            ],
        ),
        entry(2, "password", SECRET_VALUE.as_bytes()),
        entry(2, "blob", &[0, 159, 146, 150]),
        entry(4, "plain", b"text"),
        str(3, "Opaque"),
        uint(5, 1),
    ]
    .concat();
    envelope("v1", "Secret", &raw)
}

#[test]
fn decodes_a_secret_with_metadata_and_base64_data() {
    let got = decode(&secret_body()).expect("decodes");
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "creds",
                "namespace": "apps",
                "labels": {"app": "web"},
                "annotations": {"note": "hello"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "uid-1", "controller": true}
                ],
                "finalizers": ["example.com/keep"]
            },
            "immutable": true,
            "data": {"password": "czNjcjN0LXZhbHVl", "blob": "AJ+Slg=="},
            "stringData": {"plain": "text"},
            "type": "Opaque"
        })
    );
}

#[test]
fn go_zero_values_are_dropped_like_omitempty() {
    // `kubectl create secret generic x` without --type: type "" on the wire, no data.
    let raw = [meta("x", "", &[]), str(3, "")].concat();
    let got = decode(&envelope("v1", "Secret", &raw)).expect("decodes");
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}})
    );
}

#[test]
fn decodes_a_configmap_with_binary_data() {
    let raw = [
        meta("cfg", "", &[str(2, "cfg-")]),
        entry(2, "a", b"b"),
        entry(2, "empty", b""),
        entry(3, "bin", &[255, 0]),
        uint(4, 0),
    ]
    .concat();
    let got = decode(&envelope("v1", "ConfigMap", &raw)).expect("decodes");
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "generateName": "cfg-"},
            "immutable": false,
            "data": {"a": "b", "empty": ""},
            "binaryData": {"bin": "/wA="}
        })
    );
}

#[test]
fn decodes_a_namespace_with_spec_and_status() {
    let empty = [meta("team", "", &[]), msg(2, &[]), msg(3, &[str(1, "")])].concat();
    assert_eq!(
        decode(&envelope("v1", "Namespace", &empty)).expect("decodes"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    );
    let full = [
        meta("team", "", &[]),
        msg(2, &[str(1, "kubernetes"), str(1, "example.com/x")]),
        msg(3, &[str(1, "Active")]),
    ]
    .concat();
    assert_eq!(
        decode(&envelope("v1", "Namespace", &full)).expect("decodes"),
        json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"},
            "spec": {"finalizers": ["kubernetes", "example.com/x"]},
            "status": {"phase": "Active"}
        })
    );
}

/// IntOrString as Go writes it: type, intVal and strVal always present.
fn int_or_string(is_str: bool, int: u64, text: &str) -> Vec<u8> {
    msg(4, &[uint(1, u64::from(is_str)), uint(2, int), str(3, text)])
}

#[test]
fn decodes_a_service() {
    let port = |name: &str, port: u64, target: Vec<u8>| {
        msg(
            1,
            &[
                str(1, name),
                str(2, "TCP"),
                uint(3, port),
                target,
                uint(5, 0),
            ],
        )
    };
    let spec = msg(
        2,
        &[
            port("http", 80, int_or_string(false, 8080, "")),
            port("named", 443, int_or_string(true, 0, "https")),
            port("same", 9000, int_or_string(false, 0, "")),
            entry(2, "app", b"web"),
            str(3, "None"),
            str(4, "ClusterIP"),
            str(7, ""),
            uint(12, 0),
            uint(13, 0),
            str(17, "SingleStack"),
            uint(20, 0),
        ],
    );
    let raw = [meta("web", "apps", &[]), spec, msg(3, &[msg(1, &[])])].concat();
    assert_eq!(
        decode(&envelope("v1", "Service", &raw)).expect("decodes"),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {
                "ports": [
                    {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                    {"name": "named", "protocol": "TCP", "port": 443, "targetPort": "https"},
                    {"name": "same", "protocol": "TCP", "port": 9000}
                ],
                "selector": {"app": "web"},
                "clusterIP": "None",
                "type": "ClusterIP",
                "ipFamilyPolicy": "SingleStack",
                "allocateLoadBalancerNodePorts": false
            }
        })
    );
}

#[test]
fn decodes_endpoints_events_and_leases() {
    let target_ref = msg(2, &[str(1, "Pod"), str(2, "apps"), str(3, "web-0")]);
    let subset = msg(
        2,
        &[
            msg(1, &[str(1, "10.0.0.1"), str(3, ""), target_ref]),
            msg(2, &[str(1, "10.0.0.2"), str(3, "")]),
            msg(3, &[str(1, "http"), uint(2, 8080), str(3, "TCP")]),
        ],
    );
    let raw = [meta("web", "apps", &[]), subset].concat();
    assert_eq!(
        decode(&envelope("v1", "Endpoints", &raw)).expect("decodes")["subsets"],
        json!([{
            "addresses": [{"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "namespace": "apps", "name": "web-0"}}],
            "notReadyAddresses": [{"ip": "10.0.0.2"}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
        }])
    );

    let raw = [
        meta("web.1", "apps", &[]),
        msg(2, &[str(1, "Pod"), str(3, "web-0")]),
        str(3, "Started"),
        str(4, "started container"),
        msg(5, &[str(1, "kubelet"), str(2, "")]),
        msg(6, &[uint(1, 1_700_000_000)]),
        msg(7, &[]),
        uint(8, 3),
        str(9, "Normal"),
        msg(10, &[uint(1, 1_700_000_000), uint(2, 123_456_000)]),
        str(12, ""),
    ]
    .concat();
    let event = decode(&envelope("v1", "Event", &raw)).expect("decodes");
    assert_eq!(
        event,
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "apps"},
            "involvedObject": {"kind": "Pod", "name": "web-0"},
            "reason": "Started",
            "message": "started container",
            "source": {"component": "kubelet"},
            "firstTimestamp": "2023-11-14T22:13:20Z",
            "count": 3,
            "type": "Normal",
            "eventTime": "2023-11-14T22:13:20.123456Z"
        })
    );

    let spec = msg(
        2,
        &[
            str(1, ""),
            uint(2, 15),
            msg(4, &[uint(1, 1_700_000_000), uint(2, 5_000)]),
            uint(5, 0),
        ],
    );
    let raw = [meta("leader", "kube-system", &[]), spec].concat();
    assert_eq!(
        decode(&envelope("coordination.k8s.io/v1", "Lease", &raw)).expect("decodes"),
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "",
                "leaseDurationSeconds": 15,
                "renewTime": "2023-11-14T22:13:20.000005Z",
                "leaseTransitions": 0
            }
        })
    );
}

#[test]
fn negative_int32_and_large_int64_values_decode() {
    // int32 -1 is a 10-byte sign-extended varint on the wire.
    let raw = [meta("e", "", &[uint(7, u64::MAX >> 1)]), uint(8, u64::MAX)].concat();
    let got = decode(&envelope("v1", "Event", &raw)).expect("decodes");
    assert_eq!(got["count"], json!(-1));
    assert_eq!(got["metadata"]["generation"], json!(i64::MAX));
}

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    let raw = [
        enc::fixed64(90),
        meta("x", "", &[enc::fixed32(99), uint(98, 5), str(97, "?")]),
        uint(91, 1),
        str(92, "unknown"),
        enc::fixed32(93),
    ]
    .concat();
    let mut body = envelope("v1", "ConfigMap", &raw);
    body.extend(enc::fixed64(9));
    body.extend(uint(10, 3));
    assert_eq!(
        decode(&body).expect("decodes"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    );
}

#[test]
fn unsupported_kinds_are_named() {
    let err = decode(&envelope("apps/v1", "Deployment", &meta("d", "", &[]))).unwrap_err();
    assert!(err.is_unsupported_kind());
    let text = err.to_string();
    assert!(text.contains("apps/v1 Deployment"), "{text}");
    assert!(text.contains("protobuf bodies are supported for"), "{text}");
    assert!(
        text.contains("send JSON") || text.contains("as JSON"),
        "{text}"
    );
    for (version, kind, _) in schema::KINDS {
        assert!(
            schema::SUPPORTED.contains(kind),
            "{kind} missing from SUPPORTED"
        );
        if *version != "v1" {
            assert!(schema::SUPPORTED.contains(version), "{version} missing");
        }
    }
}

#[test]
fn envelope_problems_are_errors() {
    assert_eq!(decode(b"{\"kind\":\"Secret\"}"), Err(ProtobufError::Magic));
    assert_eq!(decode(b""), Err(ProtobufError::Magic));
    assert_eq!(decode(b"k8s\0"), Err(ProtobufError::NoType));
    let mut gz = b"k8s\0".to_vec();
    gz.extend(msg(1, &[str(1, "v1"), str(2, "Secret")]));
    gz.extend(str(3, "gzip"));
    assert_eq!(decode(&gz), Err(ProtobufError::Encoding));
    let mut json_inside = b"k8s\0".to_vec();
    json_inside.extend(msg(1, &[str(1, "v1"), str(2, "Secret")]));
    json_inside.extend(str(4, "application/json"));
    assert_eq!(decode(&json_inside), Err(ProtobufError::Encoding));
    // typeMeta with the wrong wire type.
    let mut bad = b"k8s\0".to_vec();
    bad.extend(uint(1, 5));
    assert!(matches!(
        decode(&bad),
        Err(ProtobufError::Field {
            field: "typeMeta",
            ..
        })
    ));
}

#[test]
fn malformed_fields_are_errors_without_values() {
    // stringData value that is not UTF-8.
    let raw = [
        meta("s", "", &[]),
        msg(4, &[str(1, "k"), bytes(2, &[0xff, 0xfe])]),
    ]
    .concat();
    let err = decode(&envelope("v1", "Secret", &raw)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed protobuf: core.v1.Secret.stringData is not valid UTF-8"
    );
    // A string field sent as a varint.
    let raw = [meta("s", "", &[]), uint(3, 1)].concat();
    let err = decode(&envelope("v1", "Secret", &raw)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed protobuf: core.v1.Secret.type has the wrong wire type"
    );
    // A timestamp out of range.
    let raw = meta("s", "", &[msg(9, &[uint(1, i64::MAX as u64)])]);
    let err = decode(&envelope("v1", "Secret", &raw)).unwrap_err();
    assert!(err.to_string().contains("deletionTimestamp"), "{err}");
    // Groups, field number 0, an 11-byte varint.
    for raw in [
        vec![0x0b],
        vec![0x00, 0x01],
        [vec![0x08], vec![0xff; 10], vec![0x01]].concat(),
    ] {
        assert!(matches!(
            decode(&envelope("v1", "Secret", &raw)),
            Err(ProtobufError::Malformed { .. })
        ));
    }
}

/// xorshift64*: deterministic pseudo-random bytes without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Decoding never panics, and no error message carries the secret value.
fn check_no_leak(body: &[u8]) {
    if let Err(e) = decode(body) {
        let text = e.to_string();
        assert!(!text.contains(SECRET_VALUE), "error leaks a value: {text}");
        assert!(!text.contains("czNjcjN0"), "error leaks a value: {text}");
    }
}

#[test]
fn truncated_bodies_are_errors_not_panics() {
    let body = secret_body();
    for cut in 0..body.len() {
        check_no_leak(&body[..cut]);
    }
    // Cutting inside the raw object always fails: its length prefix no longer fits.
    let raw_start = body.len() - 200.min(body.len() / 2);
    for cut in raw_start..body.len() - 4 {
        assert!(decode(&body[..cut]).is_err(), "cut at {cut} decoded");
    }
}

#[test]
fn mutated_and_random_bodies_never_panic() {
    let body = secret_body();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..body.len() {
        for v in [0x00, 0x01, 0x7f, 0x80, 0xff, rng.next() as u8] {
            let mut m = body.clone();
            m[i] = v;
            check_no_leak(&m);
        }
    }
    for _ in 0..3000 {
        let n = (rng.next() % 96) as usize;
        let mut m = body.clone();
        for _ in 0..(rng.next() % 4 + 1) {
            let at = (rng.next() as usize) % m.len();
            m[at] = rng.next() as u8;
        }
        check_no_leak(&m);
        let mut random = b"k8s\0".to_vec();
        random.extend((0..n).map(|_| rng.next() as u8));
        check_no_leak(&random);
        // Random bytes inside a well-formed envelope of every supported kind.
        let raw: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        for (version, kind, _) in schema::KINDS {
            check_no_leak(&envelope(version, kind, &raw));
        }
    }
}

#[test]
fn recognises_the_content_type() {
    assert!(is_protobuf("application/vnd.kubernetes.protobuf"));
    assert!(is_protobuf(
        "application/vnd.kubernetes.protobuf; charset=utf-8"
    ));
    assert!(is_protobuf(
        "application/vnd.kubernetes.protobuf;stream=watch"
    ));
    assert!(!is_protobuf("application/json"));
    assert!(!is_protobuf("application/vnd.kubernetes.protobuffer"));
}
