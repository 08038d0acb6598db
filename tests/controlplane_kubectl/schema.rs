//! Custom resources held to their CRD's structural schema, as kube-apiserver holds them: violations
//! refused with 422 naming each field, unknown fields pruned with a `Warning` (the default), refused
//! under `fieldValidation=Strict` (what kubectl sends), pruned silently under `Ignore`; on create,
//! update, every patch type and the status subresource; a server-side apply naming a field the
//! schema does not declare is refused whatever `fieldValidation` says (500, as kube-apiserver
//! answers). Each check holds the server to kube-apiserver v1.37's answers.

use super::*;

pub const WIDGET_CRD: &str = r#"
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

/// The widgets of the check's namespace.
fn base(t: &Target) -> String {
    format!("/apis/schema.example.com/v1/namespaces/{}/widgets", t.ns)
}

fn with_widgets(t: &Target) {
    t.install_crd(WIDGET_CRD, "widgets.schema.example.com", &base(t));
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "schema.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

fn post(t: &Target, query: &str, body: &Value) -> common::kubectl::HttpResponse {
    t.http(
        "POST",
        &format!("{}{query}", base(t)),
        Some("application/json"),
        body.to_string().as_bytes(),
    )
}

pub fn violations_are_refused_with_422_naming_each_field(t: &Target) {
    with_widgets(t);
    let server = t;
    let base = base(t);
    let r = post(
        server,
        "",
        &widget("w", json!({"size": "big", "color": "green"})),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid");
    // kube-apiserver lists the errors in no fixed order: compare them as sets.
    let size = "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"";
    let color = "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"";
    let message = s["message"].as_str().expect("a message");
    assert!(
        [
            format!("Widget.schema.example.com \"w\" is invalid: [{size}, {color}]"),
            format!("Widget.schema.example.com \"w\" is invalid: [{color}, {size}]"),
        ]
        .iter()
        .any(|m| m == message),
        "{message}"
    );
    assert_eq!(s["details"]["kind"], "Widget");
    assert_eq!(s["details"]["group"], "schema.example.com");
    let mut causes = s["details"]["causes"].as_array().expect("causes").clone();
    causes.sort_by_key(|c| c["field"].to_string());
    assert_eq!(
        Value::Array(causes),
        json!([
            {"reason": "FieldValueNotSupported", "field": "spec.color",
             "message": "Unsupported value: \"green\": supported values: \"red\", \"blue\""},
            {"reason": "FieldValueTypeInvalid", "field": "spec.size",
             "message": "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""},
        ])
    );
    let r = post(server, "", &widget("w", json!({})));
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Widget.schema.example.com \"w\" is invalid: spec.size: Required value"
    );
    assert_eq!(
        server.http("GET", &format!("{base}/w"), None, b"").status,
        404
    );
}

pub fn unknown_fields_warn_by_default_are_refused_when_strict_and_pruned_when_ignored(t: &Target) {
    with_widgets(t);
    let server = t;
    let base = base(t);
    let body = |name: &str| widget(name, json!({"size": 1, "foo": 1, "extra": {"kept": true}}));
    let r = post(server, "", &body("warned"));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.header_values("warning"),
        vec![r#"299 - "unknown field \"spec.foo\"""#]
    );
    let stored = server
        .http("GET", &format!("{base}/warned"), None, b"")
        .json();
    assert_eq!(stored["spec"], json!({"size": 1, "extra": {"kept": true}}));

    let r = post(server, "?fieldValidation=Strict", &body("strict"));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.foo\""
    );
    assert_eq!(
        server
            .http("GET", &format!("{base}/strict"), None, b"")
            .status,
        404
    );

    let r = post(server, "?fieldValidation=Ignore", &body("ignored"));
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.header_values("warning").is_empty());
    assert!(r.json()["spec"].get("foo").is_none());

    // A field set twice: the last wins with a warning, or Strict refuses.
    let twice = br#"{"apiVersion": "schema.example.com/v1", "kind": "Widget", "metadata": {"name": "twice"}, "spec": {"size": 1, "size": 2}}"#;
    let r = server.http("POST", &base, Some("application/json"), twice);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.header_values("warning"),
        vec![r#"299 - "duplicate field \"spec.size\"""#]
    );
    assert_eq!(r.json()["spec"]["size"], 2);
    let r = server.http(
        "POST",
        &format!("{base}?fieldValidation=Strict"),
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

    // fieldValidation takes Ignore, Warn and Strict: anything else is an invalid CreateOptions.
    let r = post(server, "?fieldValidation=Loose", &body("x"));
    assert_eq!(r.status, 422, "{}", r.body);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid", "{}", r.body);
    assert_eq!(s["details"]["kind"], "CreateOptions", "{}", r.body);
    assert_eq!(
        s["details"]["causes"][0]["field"], "fieldValidation",
        "{}",
        r.body
    );
}

pub fn updates_patches_applies_and_status_writes_are_validated(t: &Target) {
    with_widgets(t);
    let server = t;
    let base = base(t);
    assert_eq!(
        post(server, "", &widget("w", json!({"size": 2}))).status,
        201
    );
    let path = format!("{base}/w");
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
    let r = apply("", json!({"size": 3}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["spec"], json!({"size": 3}));
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

    // Unknown fields in a patch. A strict JSON patch: 422 Invalid, its cause the patch itself.
    let r = send(
        "PATCH",
        &format!("{path}?fieldValidation=Strict"),
        "application/json-patch+json",
        json!([{"op": "add", "path": "/spec/foo", "value": 1}]),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid", "{}", r.body);
    assert_eq!(s["details"]["causes"][0]["field"], "patch", "{}", r.body);
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: unknown field \"spec.foo\""),
        "{}",
        r.body
    );
    // A server-side apply: the typed patch cannot be built, whatever fieldValidation says
    // (kube-apiserver answers 500 InternalError).
    for query in ["&fieldValidation=Strict", ""] {
        let r = apply(query, json!({"size": 4, "bar": 1}));
        assert_eq!(r.status, 500, "fieldValidation {query:?}: {}", r.body);
        assert!(
            r.json()["message"]
                .as_str()
                .unwrap()
                .ends_with(".spec.bar: field not declared in schema"),
            "{}",
            r.body
        );
    }
    let stored = server.http("GET", &path, None, b"").json();
    assert_eq!(
        stored["spec"],
        json!({"size": 3}),
        "refused patches store nothing"
    );
}

pub fn kubectl_refuses_unknown_fields_as_on_a_cluster_unless_told_not_to_validate(t: &Target) {
    with_widgets(t);
    let k = &t.k;
    let manifest = &format!(
        "apiVersion: schema.example.com/v1\nkind: Widget\nmetadata:\n  name: k\n  namespace: {}\nspec:\n  size: 1\n  foo: 1\n",
        t.ns
    );
    let r = k.run_stdin(&["apply", "-f", "-"], manifest);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("unknown field \"spec.foo\""),
        "{}",
        r.stderr
    );
    let r = k.run_stdin(&["apply", "--validate=false", "-f", "-"], manifest);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let got = k.get_json(&["widget", "k"]).expect("created");
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
