//! The standalone local control plane (`aro-gitops control-plane serve`) driven by the real kubectl,
//! as a user drives a cluster: server-side apply (with field-manager conflicts), get, diff, patch,
//! delete, wait, watch, finalizers, garbage collection, dry runs, generation; plus durability under
//! kill -9 and refusal of bad input, over raw HTTP.
//!
//! Each test starts its own server on a temporary state directory and a free port.

mod common;

use base64::Engine;
use common::kubectl::{HttpResponse, Kubectl, LineReader, Server, http_request, poll_until};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

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

/// `kubectl create -f -`. (Not `kubectl create secret|namespace`: those send protobuf, which
/// this server does not decode.)
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
    assert!(
        !r.stdout.lines().any(|l| l.contains("color")),
        "unchanged fields are not in the diff: {}",
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
    assert!(r.stderr.contains("test"), "{}", r.stderr);
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

// ---------------------------------------------------------------------------------------------
// wait and watch

#[test]
fn wait_for_condition_ready_set_by_another_client() {
    let (_s, k) = start_with_gizmos();
    apply(&k, "ci", &gizmo("g", "default", 1, None));
    let mut wait = k
        .command(&[
            "wait",
            "--for=condition=Ready",
            "gizmo/g",
            "--timeout=20s",
            "-v=6",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl wait starts");
    let mut log = LineReader::new(wait.stderr.take().unwrap());
    let mut out = LineReader::new(wait.stdout.take().unwrap());
    // kubectl logs each request at -v=6: once its watch is open, the condition is set elsewhere.
    log.wait_for(T, "kubectl wait watching", |l| {
        l.contains("watch=true") && l.contains(" 200 OK")
    });
    k.ok(&[
        "patch",
        "gizmo",
        "g",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    out.wait_for(T, "condition met", |l| {
        l.contains("gizmo.kubectl.example.com/g condition met")
    });
    let status = poll_until(T, "kubectl wait to exit", || {
        wait.try_wait().expect("try_wait")
    });
    assert!(
        status.success(),
        "kubectl wait failed; its log:\n{}",
        log.seen.join("\n")
    );
}

#[test]
fn get_watch_shows_a_change_made_by_another_kubectl() {
    let (_s, k) = start_with_gizmos();
    apply(&k, "ci", &gizmo("g", "default", 1, None));
    let mut watch = k
        .command(&["get", "gizmos", "--watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get --watch starts");
    let mut lines = LineReader::new(watch.stdout.take().unwrap());
    let row = |name: &'static str, size: &'static str| {
        move |l: &str| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() >= 2 && cols[0] == name && cols[1] == size
        }
    };
    let header = lines.wait_for(T, "the header", |l| l.starts_with("NAME"));
    assert!(
        header.contains("SIZE"),
        "printer columns come from the CRD: {header}"
    );
    lines.wait_for(T, "g with size 1", row("g", "1"));
    k.ok(&[
        "patch",
        "gizmo",
        "g",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":7}}"#,
    ]);
    lines.wait_for(T, "g with size 7", row("g", "7"));
    apply(&k, "ci", &gizmo("h", "default", 3, None));
    lines.wait_for(T, "the new object h", row("h", "3"));
    let _ = watch.kill();
    let _ = watch.wait();
}

// ---------------------------------------------------------------------------------------------
// Deletion: finalizers, owners, namespaces

#[test]
fn finalizers_hold_a_delete_until_removed() {
    let (_s, k) = start_with_gizmos();
    let manifest = "apiVersion: kubectl.example.com/v1\nkind: Gizmo\nmetadata:\n  name: held\n  finalizers: [kubectl.example.com/hold]\nspec:\n  size: 1\n";
    apply(&k, "ci", manifest);
    k.ok(&["delete", "gizmo", "held", "--wait=false"]);
    let g = k
        .get_json(&["gizmo", "held"])
        .expect("a finalizer holds the object");
    assert!(g["metadata"]["deletionTimestamp"].is_string(), "{g}");
    assert_eq!(
        g["metadata"]["finalizers"],
        json!(["kubectl.example.com/hold"])
    );

    k.ok(&[
        "patch",
        "gizmo",
        "held",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":[]}}"#,
    ]);
    poll_until(T, "the gizmo to go once its finalizer is removed", || {
        k.get_json(&["gizmo", "held"]).is_none().then_some(())
    });
}

#[test]
fn owner_deletion_cascades_to_dependents() {
    let (_s, k) = start_with_gizmos();
    apply(&k, "ci", &gizmo("owner", "default", 1, None));
    let uid = str_at(&k.get_json(&["gizmo", "owner"]).unwrap(), "/metadata/uid").to_string();
    let owner_ref = format!(
        "  ownerReferences:\n  - apiVersion: kubectl.example.com/v1\n    kind: Gizmo\n    name: owner\n    uid: {uid}\n"
    );
    apply(
        &k,
        "ci",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dep\n  namespace: default\n{owner_ref}data:\n  a: {}\n",
            b64("1")
        ),
    );
    apply(
        &k,
        "ci",
        &format!(
            "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: dep-rg\n  namespace: default\n{owner_ref}spec:\n  location: westeurope\n"
        ),
    );
    create(&k, &secret("unrelated", "default", &[("a", "1")]));

    k.ok(&["delete", "gizmo", "owner", "--timeout=20s"]);
    poll_until(T, "the dependent Secret to be collected", || {
        k.get_json(&["secret", "dep"]).is_none().then_some(())
    });
    poll_until(T, "the dependent ResourceGroup to be collected", || {
        k.get_json(&["resourcegroup", "dep-rg"])
            .is_none()
            .then_some(())
    });
    assert!(
        k.get_json(&["secret", "unrelated"]).is_some(),
        "objects without the ownerReference stay"
    );
}

#[test]
fn namespace_deletion_removes_its_objects() {
    let (_s, k) = start_with_gizmos();
    create(
        &k,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n",
    );
    apply(&k, "ci", &gizmo("g", "x", 1, None));
    create(&k, &secret("s", "x", &[("a", "1")]));
    create(&k, &secret("s", "default", &[("a", "1")]));

    k.ok(&["delete", "ns", "x", "--timeout=20s"]);
    poll_until(T, "namespace x to go", || {
        k.get_json(&["namespace", "x"]).is_none().then_some(())
    });
    assert!(k.get_json(&["gizmo", "g", "-n", "x"]).is_none());
    assert!(k.get_json(&["secret", "s", "-n", "x"]).is_none());
    assert!(
        k.get_json(&["secret", "s", "-n", "default"]).is_some(),
        "other namespaces keep their objects"
    );
}

// ---------------------------------------------------------------------------------------------
// Dry run and generation

#[test]
fn dry_run_server_stores_nothing() {
    let (_s, k) = start_with_gizmos();
    let out = k.ok_stdin(
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        &gizmo("g", "default", 1, None),
    );
    assert!(out.contains("(server dry run)"), "{out}");
    assert!(
        k.get_json(&["gizmo", "g"]).is_none(),
        "a dry-run apply creates nothing"
    );
    let printed = k.ok_stdin(
        &["create", "-f", "-", "--dry-run=server", "-o", "json"],
        &secret("s", "default", &[("a", "1")]),
    );
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(
        printed["data"]["a"],
        b64("1"),
        "the dry run answers the object as it would be stored"
    );
    assert!(
        k.get_json(&["secret", "s"]).is_none(),
        "a dry-run create stores nothing"
    );

    apply(&k, "ci", &gizmo("g", "default", 1, None));
    let before = k.get_json(&["gizmo", "g"]).unwrap();
    k.ok(&[
        "patch",
        "gizmo",
        "g",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":9}}"#,
        "--dry-run=server",
    ]);
    k.ok(&["delete", "gizmo", "g", "--dry-run=server"]);
    let after = k
        .get_json(&["gizmo", "g"])
        .expect("a dry-run delete deletes nothing");
    assert_eq!(after, before, "dry-run patch and delete change nothing");
}

#[test]
fn status_writes_do_not_bump_generation_spec_writes_do() {
    let (_s, k) = start_with_gizmos();
    apply(&k, "ci", &gizmo("g", "default", 1, None));
    let get = || k.get_json(&["gizmo", "g"]).unwrap();
    let g0 = get();
    assert_eq!(g0["metadata"]["generation"], 1);

    k.ok(&[
        "patch",
        "gizmo",
        "g",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]}}"#,
    ]);
    let g1 = get();
    assert_eq!(g1["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        g1["metadata"]["generation"], 1,
        "a status write keeps the generation"
    );
    assert_ne!(
        g1["metadata"]["resourceVersion"],
        g0["metadata"]["resourceVersion"]
    );

    // Status sent to the main resource is ignored (status subresource).
    k.ok(&[
        "patch",
        "gizmo",
        "g",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    assert_eq!(get()["status"]["conditions"][0]["status"], "False");

    k.ok(&["label", "gizmo", "g", "team=a"]);
    assert_eq!(
        get()["metadata"]["generation"],
        1,
        "a metadata write keeps the generation"
    );

    apply(&k, "ci", &gizmo("g", "default", 2, None));
    assert_eq!(
        get()["metadata"]["generation"],
        2,
        "an applied spec change bumps the generation"
    );
    k.ok(&[
        "patch",
        "gizmo",
        "g",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":3}}"#,
    ]);
    assert_eq!(
        get()["metadata"]["generation"],
        3,
        "a patched spec change bumps the generation"
    );
}

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

    assert_refused(
        &post(secrets, json_ct, br#"{"metadata":{"name":"no-kind"}}"#),
        400,
        "Kind",
    );
    assert_refused(
        &post(
            secrets,
            json_ct,
            br#"{"kind":"Secret","metadata":{"name":"no-api-version"}}"#,
        ),
        400,
        "apiVersion",
    );
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
    assert_refused(
        &post("/apis/kubectl.example.com/v1/gizmos", json_ct, gizmo),
        400,
        "namespace",
    );
    assert_refused(
        &server.http(
            "PATCH",
            "/api/v1/secrets/keep?fieldManager=t",
            Some("application/apply-patch+yaml"),
            b"{}",
        ),
        400,
        "namespace",
    );
    assert_refused(
        &server.http(
            "PATCH",
            &format!("{secrets}/keep"),
            Some("text/plain"),
            b"a=b",
        ),
        415,
        "text/plain",
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
    assert_eq!(names, ["keep"]);
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
