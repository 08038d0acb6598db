//! Custom resources held to their CRD's structural schema, as kube-apiserver holds them: violations
//! refused with 422 naming each field, unknown fields pruned with a `Warning` (the default), refused
//! under `fieldValidation=Strict` (what kubectl sends), pruned silently under `Ignore`; on create,
//! update, every patch type, server-side apply and the status subresource.

use super::*;

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.schema.example.com
spec:
  group: schema.example.com
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 1}
                color: {type: string, enum: [red, blue]}
                extra:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
            status:
              type: object
              properties:
                phase: {type: string, pattern: '^[A-Z][a-z]+$'}
"#;

const BASE: &str = "/apis/schema.example.com/v1/namespaces/default/widgets";

fn start_with_widgets() -> (Server, Kubectl) {
    let server = Server::start();
    let k = server.kubectl();
    k.ok_stdin(&["apply", "--server-side", "-f", "-"], WIDGET_CRD);
    // The CRD's kind is served once discovery shows it.
    common::kubectl::poll_until(T, "widgets served", || {
        (server.http("GET", BASE, None, b"").status == 200).then_some(())
    });
    (server, k)
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "schema.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

fn post(server: &Server, query: &str, body: &Value) -> common::kubectl::HttpResponse {
    server.http(
        "POST",
        &format!("{BASE}{query}"),
        Some("application/json"),
        body.to_string().as_bytes(),
    )
}

#[test]
fn violations_are_refused_with_422_naming_each_field() {
    let (server, _k) = start_with_widgets();
    let r = post(
        &server,
        "",
        &widget("w", json!({"size": "big", "color": "green"})),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(
        s["message"],
        "Widget.schema.example.com \"w\" is invalid: [spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\", spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"]"
    );
    assert_eq!(s["details"]["kind"], "Widget");
    assert_eq!(s["details"]["group"], "schema.example.com");
    assert_eq!(
        s["details"]["causes"],
        json!([
            {"reason": "FieldValueTypeInvalid", "field": "spec.size",
             "message": "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""},
            {"reason": "FieldValueNotSupported", "field": "spec.color",
             "message": "Unsupported value: \"green\": supported values: \"red\", \"blue\""},
        ])
    );
    let r = post(&server, "", &widget("w", json!({})));
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Widget.schema.example.com \"w\" is invalid: spec.size: Required value"
    );
    assert_eq!(
        server.http("GET", &format!("{BASE}/w"), None, b"").status,
        404
    );
}

#[test]
fn unknown_fields_warn_by_default_are_refused_when_strict_and_pruned_when_ignored() {
    let (server, _k) = start_with_widgets();
    let body = |name: &str| widget(name, json!({"size": 1, "foo": 1, "extra": {"kept": true}}));
    let r = post(&server, "", &body("warned"));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.header_values("warning"),
        vec![r#"299 - "unknown field \"spec.foo\"""#]
    );
    let stored = server
        .http("GET", &format!("{BASE}/warned"), None, b"")
        .json();
    assert_eq!(stored["spec"], json!({"size": 1, "extra": {"kept": true}}));

    let r = post(&server, "?fieldValidation=Strict", &body("strict"));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.foo\""
    );
    assert_eq!(
        server
            .http("GET", &format!("{BASE}/strict"), None, b"")
            .status,
        404
    );

    let r = post(&server, "?fieldValidation=Ignore", &body("ignored"));
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.header_values("warning").is_empty());
    assert!(r.json()["spec"].get("foo").is_none());

    // An unknown directive: kube-apiserver refuses the CreateOptions (422).
    let r = post(&server, "?fieldValidation=Loose", &body("x"));
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["details"]["kind"], "CreateOptions", "{}", r.body);

    // A field set twice: the last wins with a warning, or Strict refuses.
    let twice = br#"{"apiVersion": "schema.example.com/v1", "kind": "Widget", "metadata": {"name": "twice"}, "spec": {"size": 1, "size": 2}}"#;
    let r = server.http("POST", BASE, Some("application/json"), twice);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.header_values("warning"),
        vec![r#"299 - "duplicate field \"spec.size\"""#]
    );
    assert_eq!(r.json()["spec"]["size"], 2);
    let r = server.http(
        "POST",
        &format!("{BASE}?fieldValidation=Strict"),
        Some("application/json"),
        twice,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: duplicate field \"spec.size\""),
        "{}",
        r.body
    );
}

#[test]
fn updates_patches_applies_and_status_writes_are_validated() {
    let (server, _k) = start_with_widgets();
    assert_eq!(
        post(&server, "", &widget("w", json!({"size": 2}))).status,
        201
    );
    let path = format!("{BASE}/w");
    let send = |method: &str, path: &str, ct: &str, body: Value| {
        server.http(method, path, Some(ct), body.to_string().as_bytes())
    };

    let r = send(
        "PATCH",
        &path,
        "application/merge-patch+json",
        json!({"spec": {"size": 0}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "spec.size");

    let r = send(
        "PATCH",
        &format!("{path}?fieldValidation=Strict"),
        "application/json-patch+json",
        json!([{"op": "add", "path": "/spec/foo", "value": 1}]),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "strict decoding error: unknown field \"spec.foo\""
    );

    let mut put = server.http("GET", &path, None, b"").json();
    put["spec"]["color"] = json!("green");
    let r = send("PUT", &path, "application/json", put);
    assert_eq!(r.status, 422, "{}", r.body);

    let apply = |query: &str, spec: Value| {
        send(
            "PATCH",
            &format!("{path}?fieldManager=test&force=true{query}"),
            "application/apply-patch+yaml",
            widget("w", spec),
        )
    };
    let r = apply("&fieldValidation=Strict", json!({"size": 3, "bar": 1}));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .ends_with(".spec.bar: field not declared in schema"),
        "{}",
        r.body
    );
    let r = apply("", json!({"size": 3, "bar": 1}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header_values("warning"),
        vec![r#"299 - "unknown field \"spec.bar\"""#]
    );
    let stored = r.json();
    assert_eq!(stored["spec"], json!({"size": 3}));
    let managed = stored["metadata"]["managedFields"].to_string();
    assert!(!managed.contains("f:bar"), "{managed}");
    let r = apply("", json!({"size": -1}));
    assert_eq!(r.status, 422, "{}", r.body);

    let status_path = format!("{path}/status");
    let r = send(
        "PATCH",
        &status_path,
        "application/merge-patch+json",
        json!({"status": {"phase": "not-a-phase"}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "status.phase");
    let r = send(
        "PATCH",
        &status_path,
        "application/merge-patch+json",
        json!({"status": {"phase": "Ready", "other": 1}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], json!({"phase": "Ready"}));
}

#[test]
fn kubectl_refuses_unknown_fields_as_on_a_cluster_unless_told_not_to_validate() {
    let (_server, k) = start_with_widgets();
    let manifest = "apiVersion: schema.example.com/v1\nkind: Widget\nmetadata:\n  name: k\n  namespace: default\nspec:\n  size: 1\n  foo: 1\n";
    let r = k.run_stdin(&["apply", "-f", "-"], manifest);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("unknown field \"spec.foo\""),
        "{}",
        r.stderr
    );
    let r = k.run_stdin(&["apply", "--validate=false", "-f", "-"], manifest);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let got = k
        .get_json(&["widget", "k", "-n", "default"])
        .expect("created");
    assert_eq!(got["spec"], json!({"size": 1}));
    let r = k.run_stdin(
        &["apply", "-f", "-"],
        &manifest
            .replace("  foo: 1\n", "")
            .replace("size: 1", "size: 0"),
    );
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("spec.size: Invalid value: 0"),
        "{}",
        r.stderr
    );
}
