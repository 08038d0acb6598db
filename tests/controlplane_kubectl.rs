//! The standalone local control plane (`aro-gitops control-plane serve`) driven by the real kubectl,
//! as a user drives a cluster: server-side apply (with field-manager conflicts), get, diff, patch,
//! delete, wait, watch, finalizers, garbage collection, dry runs, generation; plus durability under
//! kill -9 and refusal of bad input, over raw HTTP.
//!
//! Each test starts its own server on a temporary state directory and a free port. This file
//! holds the shared fixtures and the apply/get/diff/patch/delete tests; `lifecycle` has wait,
//! watch, deletion, dry-run and generation tests; `raw_http` has durability and bad input.

mod common;
#[path = "controlplane_kubectl/lifecycle.rs"]
mod lifecycle;
#[path = "controlplane_kubectl/raw_http.rs"]
mod raw_http;
#[path = "controlplane_kubectl/schema.rs"]
mod schema;

use base64::Engine;
use common::kubectl::{Kubectl, Server};
use serde_json::{Value, json};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// A small CRD of our own: namespaced, status subresource, a printer column for `kubectl get`.
const GIZMO_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.kubectl.example.com
spec:
  group: kubectl.example.com
  scope: Namespaced
  names:
    kind: Gizmo
    listKind: GizmoList
    plural: gizmos
    singular: gizmo
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Size
          type: integer
          jsonPath: .spec.size
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
                color:
                  type: string
            status:
              type: object
              properties:
                conditions:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [type]
                  items:
                    type: object
                    required: [type, status]
                    properties:
                      type:
                        type: string
                      status:
                        type: string
"#;

fn start_with_gizmos() -> (Server, Kubectl) {
    let server = Server::start();
    let k = server.kubectl();
    let out = k.ok_stdin(&["apply", "--server-side", "-f", "-"], GIZMO_CRD);
    assert!(out.contains("customresourcedefinition.apiextensions.k8s.io/gizmos.kubectl.example.com serverside-applied"), "{out}");
    (server, k)
}

fn gizmo(name: &str, namespace: &str, size: i64, color: Option<&str>) -> String {
    let color = color.map(|c| format!("\n  color: {c}")).unwrap_or_default();
    format!(
        "apiVersion: kubectl.example.com/v1\nkind: Gizmo\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  size: {size}{color}\n"
    )
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn apply(k: &Kubectl, manager: &str, manifest: &str) -> String {
    k.ok_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            manager,
            "-f",
            "-",
        ],
        manifest,
    )
}

/// `kubectl create -f -`.
fn create(k: &Kubectl, manifest: &str) -> String {
    k.ok_stdin(&["create", "-f", "-"], manifest)
}

fn secret(name: &str, namespace: &str, data: &[(&str, &str)]) -> String {
    let data: String = data
        .iter()
        .map(|(k, v)| format!("\n  {k}: {}", b64(v)))
        .collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:{data}\n"
    )
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} missing in {v}"))
}

// ---------------------------------------------------------------------------------------------
// Server-side apply

#[test]
fn apply_server_side_creates_updates_and_drops_fields_no_longer_applied() {
    let (_s, k) = start_with_gizmos();
    let out = apply(&k, "ci", &gizmo("g1", "default", 1, Some("red")));
    assert!(
        out.contains("gizmo.kubectl.example.com/g1 serverside-applied"),
        "{out}"
    );
    let created = k.get_json(&["gizmo", "g1"]).expect("created");
    assert_eq!(created["spec"], json!({"size": 1, "color": "red"}));
    assert_eq!(created["metadata"]["generation"], 1);
    let uid = str_at(&created, "/metadata/uid").to_string();
    let rv = str_at(&created, "/metadata/resourceVersion").to_string();

    // Update by the same manager: size changes, color is no longer applied and so goes away.
    apply(&k, "ci", &gizmo("g1", "default", 2, None));
    let updated = k
        .get_json(&["gizmo", "g1", "--show-managed-fields"])
        .expect("still there");
    assert_eq!(
        updated["spec"],
        json!({"size": 2}),
        "a field the manager stopped applying is removed"
    );
    assert_eq!(str_at(&updated, "/metadata/uid"), uid);
    assert_ne!(str_at(&updated, "/metadata/resourceVersion"), rv);
    assert_eq!(updated["metadata"]["generation"], 2);
    let managers: Vec<&Value> = updated["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .collect();
    assert!(
        managers
            .iter()
            .any(|m| m["manager"] == "ci" && m["operation"] == "Apply"),
        "{managers:?}"
    );

    // The same over a Secret.
    let secret = |data: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s1\n  namespace: default\ndata:\n{data}"
        )
    };
    apply(
        &k,
        "ci",
        &secret(&format!(
            "  user: {}\n  password: {}\n",
            b64("admin"),
            b64("one")
        )),
    );
    apply(&k, "ci", &secret(&format!("  password: {}\n", b64("two"))));
    let s = k.get_json(&["secret", "s1"]).expect("secret");
    assert_eq!(s["data"], json!({"password": b64("two")}));
    assert_eq!(s["type"], "Opaque");
}

#[test]
fn apply_server_side_conflict_between_managers_and_force_conflicts() {
    let (_s, k) = start_with_gizmos();
    apply(&k, "a", &gizmo("g", "default", 1, Some("red")));
    let r = k.run_stdin(
        &["apply", "--server-side", "--field-manager", "b", "-f", "-"],
        &gizmo("g", "default", 1, Some("blue")),
    );
    assert_ne!(
        r.code, 0,
        "manager b changing a field owned by a must conflict:\n{}{}",
        r.stdout, r.stderr
    );
    assert!(r.stderr.to_lowercase().contains("conflict"), "{}", r.stderr);
    assert!(
        r.stderr.contains(".spec.color"),
        "the conflict names the field: {}",
        r.stderr
    );
    assert_eq!(
        k.get_json(&["gizmo", "g"]).unwrap()["spec"]["color"],
        "red",
        "a refused apply changes nothing"
    );

    // Same value from b: no conflict (shared ownership).
    apply(&k, "b", &gizmo("g", "default", 1, Some("red")));

    k.ok_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "b",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &gizmo("g", "default", 1, Some("blue")),
    );
    let g = k
        .get_json(&["gizmo", "g", "--show-managed-fields"])
        .unwrap();
    assert_eq!(g["spec"]["color"], "blue");
    // b took color over: now a is the one who conflicts on it.
    let r = k.run_stdin(
        &["apply", "--server-side", "--field-manager", "a", "-f", "-"],
        &gizmo("g", "default", 1, Some("red")),
    );
    assert_ne!(
        r.code, 0,
        "a no longer owns color:\n{}{}",
        r.stdout, r.stderr
    );
    assert!(r.stderr.to_lowercase().contains("conflict"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------------
// get, diff, patch, delete

#[test]
fn get_prints_yaml_and_json_for_custom_preloaded_kinds_and_secrets() {
    let server = Server::start();
    let k = server.kubectl();
    let rg = "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg1\n  namespace: default\nspec:\n  location: westeurope\n  azureName: rg-one\n";
    apply(&k, "ci", rg);
    let yaml = k.ok(&["get", "resourcegroup", "rg1", "-o", "yaml"]);
    let from_yaml: Value = aro_gitops::yaml::from_str(&yaml).expect("kubectl prints YAML");
    let json_text = k.ok(&[
        "get",
        "resourcegroups.resources.azure.com",
        "rg1",
        "-o",
        "json",
    ]);
    let from_json: Value = serde_json::from_str(&json_text).expect("kubectl prints JSON");
    for obj in [&from_yaml, &from_json] {
        assert_eq!(obj["apiVersion"], "resources.azure.com/v1api20200601");
        assert_eq!(obj["kind"], "ResourceGroup");
        assert_eq!(obj["metadata"]["name"], "rg1");
        assert_eq!(obj["metadata"]["namespace"], "default");
        assert_eq!(
            obj["spec"],
            json!({"location": "westeurope", "azureName": "rg-one"})
        );
    }
    assert_eq!(
        from_yaml["metadata"]["resourceVersion"],
        from_json["metadata"]["resourceVersion"]
    );
    let list = k.get_json(&["resourcegroups"]).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| str_at(i, "/metadata/name"))
        .collect();
    assert_eq!(names, ["rg1"]);

    create(&k, &secret("db", "default", &[("password", "hunter2")]));
    let s: Value =
        aro_gitops::yaml::from_str(&k.ok(&["get", "secret", "db", "-o", "yaml"])).unwrap();
    assert_eq!(s["data"]["password"], b64("hunter2"));
    assert_eq!(s["type"], "Opaque");
    let s = k.get_json(&["secret", "db"]).unwrap();
    assert_eq!(s["kind"], "Secret");
    assert_eq!(s["data"]["password"], b64("hunter2"));
}

#[test]
fn diff_server_side_is_clean_after_apply_and_shows_a_change() {
    let (_s, k) = start_with_gizmos();
    let manifest = gizmo("g", "default", 1, Some("red"));
    apply(&k, "t", &manifest);
    let diff = |m: &str| {
        k.run_stdin(
            &["diff", "--server-side", "--field-manager", "t", "-f", "-"],
            m,
        )
    };
    let r = diff(&manifest);
    assert_eq!(
        r.code, 0,
        "no diff right after apply:\n{}{}",
        r.stdout, r.stderr
    );
    assert!(r.stdout.trim().is_empty(), "{}", r.stdout);

    let r = diff(&gizmo("g", "default", 5, Some("red")));
    assert_eq!(
        r.code, 1,
        "a changed manifest differs:\n{}{}",
        r.stdout, r.stderr
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with('-') && l.contains("size: 1")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with('+') && l.contains("size: 5")),
        "{}",
        r.stdout
    );
    let changed: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .collect();
    assert!(
        !changed
            .iter()
            .any(|l| l.contains("color") || l.contains("resourceVersion")),
        "only changed fields differ (a dry run keeps the resourceVersion): {}",
        r.stdout
    );
    assert_eq!(
        k.get_json(&["gizmo", "g"]).unwrap()["spec"]["size"],
        1,
        "diff stores nothing"
    );
}

#[test]
fn patch_merge_and_json_including_a_failing_test_op() {
    let server = Server::start();
    let k = server.kubectl();
    apply(
        &k,
        "ci",
        "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\nspec:\n  location: westeurope\n  tags:\n    a: x\n",
    );
    let out = k.ok(&[
        "patch",
        "resourcegroup",
        "rg",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"location":"northeurope","tags":{"a":null,"b":"y"}}}"#,
    ]);
    assert!(
        out.contains("resourcegroup.resources.azure.com/rg patched"),
        "{out}"
    );
    let rg = k.get_json(&["resourcegroup", "rg"]).unwrap();
    assert_eq!(
        rg["spec"],
        json!({"location": "northeurope", "tags": {"b": "y"}})
    );

    let ops = r#"[{"op":"test","path":"/spec/location","value":"northeurope"},{"op":"add","path":"/spec/tags/c","value":"z"},{"op":"remove","path":"/spec/tags/b"}]"#;
    k.ok(&["patch", "resourcegroup", "rg", "--type", "json", "-p", ops]);
    let rg = k.get_json(&["resourcegroup", "rg"]).unwrap();
    assert_eq!(rg["spec"]["tags"], json!({"c": "z"}));
    let rv = str_at(&rg, "/metadata/resourceVersion").to_string();

    let failing = r#"[{"op":"test","path":"/spec/location","value":"eastus"},{"op":"replace","path":"/spec/location","value":"eastus"}]"#;
    let r = k.run(&[
        "patch",
        "resourcegroup",
        "rg",
        "--type",
        "json",
        "-p",
        failing,
    ]);
    assert_ne!(
        r.code, 0,
        "a failed test op is an error:\n{}{}",
        r.stdout, r.stderr
    );
    // kube-apiserver's words for any JSON patch it cannot apply (422, no object named).
    assert!(
        r.stderr
            .contains("the server rejected our request due to an error in our request"),
        "{}",
        r.stderr
    );
    let after = k.get_json(&["resourcegroup", "rg"]).unwrap();
    assert_eq!(after["spec"]["location"], "northeurope");
    assert_eq!(
        str_at(&after, "/metadata/resourceVersion"),
        rv,
        "a refused patch stores nothing"
    );

    // A Secret: merge patch on data.
    create(&k, &secret("s", "default", &[("a", "1")]));
    k.ok(&[
        "patch",
        "secret",
        "s",
        "--type",
        "merge",
        "-p",
        &json!({"data": {"b": b64("2")}}).to_string(),
    ]);
    assert_eq!(
        k.get_json(&["secret", "s"]).unwrap()["data"],
        json!({"a": b64("1"), "b": b64("2")})
    );
}

#[test]
fn delete_returns_and_the_object_is_gone() {
    let (_s, k) = start_with_gizmos();
    create(&k, &secret("s", "default", &[("a", "1")]));
    apply(&k, "ci", &gizmo("g", "default", 1, None));
    let rg = "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: default\nspec:\n  location: westeurope\n";
    apply(&k, "ci", rg);

    assert!(
        k.ok(&["delete", "secret", "s", "--timeout=20s"])
            .contains(r#"secret "s" deleted"#)
    );
    assert!(k.get_json(&["secret", "s"]).is_none());
    assert!(
        k.ok(&["delete", "gizmo", "g", "--timeout=20s"])
            .contains(r#"gizmo.kubectl.example.com "g" deleted"#)
    );
    assert!(k.get_json(&["gizmo", "g"]).is_none());
    k.ok_stdin(&["delete", "-f", "-", "--timeout=20s"], rg);
    assert!(k.get_json(&["resourcegroup", "rg"]).is_none());

    let r = k.run(&["delete", "secret", "s"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("NotFound") || r.stderr.contains("not found"),
        "{}",
        r.stderr
    );
    k.ok(&["delete", "secret", "s", "--ignore-not-found"]);
}
