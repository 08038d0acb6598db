//! kubectl wait and watch, deletion (finalizers, owners, namespaces), dry runs and generation.

use super::*;
use crate::common::kubectl::{LineReader, poll_until};
use std::process::{Child, Stdio};

/// A kubectl left running in the background, killed when the check ends, failed or not (a
/// shared server outlives the check).
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// wait and watch

pub fn wait_for_condition_ready_set_by_another_client(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    apply(k, "ci", &gizmo("g", &t.ns, 1, None));
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
    let mut wait = Background(wait);
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
        wait.0.try_wait().expect("try_wait")
    });
    assert!(
        status.success(),
        "kubectl wait failed; its log:\n{}",
        log.seen.join("\n")
    );
}

pub fn get_watch_shows_a_change_made_by_another_kubectl(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    apply(k, "ci", &gizmo("g", &t.ns, 1, None));
    let mut watch = k
        .command(&["get", "gizmos", "--watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get --watch starts");
    let mut lines = LineReader::new(watch.stdout.take().unwrap());
    let _watch = Background(watch);
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
    apply(k, "ci", &gizmo("h", &t.ns, 3, None));
    lines.wait_for(T, "the new object h", row("h", "3"));
}

// ---------------------------------------------------------------------------------------------
// Deletion: finalizers, owners, namespaces

pub fn finalizers_hold_a_delete_until_removed(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    let manifest = "apiVersion: kubectl.example.com/v1\nkind: Gizmo\nmetadata:\n  name: held\n  finalizers: [kubectl.example.com/hold]\nspec:\n  size: 1\n";
    apply(k, "ci", manifest);
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

pub fn owner_deletion_cascades_to_dependents(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    apply(k, "ci", &gizmo("owner", &t.ns, 1, None));
    let uid = str_at(&k.get_json(&["gizmo", "owner"]).unwrap(), "/metadata/uid").to_string();
    let owner_ref = format!(
        "  ownerReferences:\n  - apiVersion: kubectl.example.com/v1\n    kind: Gizmo\n    name: owner\n    uid: {uid}\n"
    );
    apply(
        k,
        "ci",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dep\n  namespace: {}\n{owner_ref}data:\n  a: {}\n",
            t.ns,
            b64("1")
        ),
    );
    apply(
        k,
        "ci",
        &format!(
            "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: dep-rg\n  namespace: {}\n{owner_ref}spec:\n  location: westeurope\n",
            t.ns
        ),
    );
    create(k, &secret("unrelated", &t.ns, &[("a", "1")]));

    k.ok(&["delete", "gizmo", "owner", &t.timeout_arg()]);
    // The garbage collector's work: kube-controller-manager's on kube-apiserver.
    poll_until(t.wait, "the dependent Secret to be collected", || {
        k.get_json(&["secret", "dep"]).is_none().then_some(())
    });
    poll_until(
        t.wait,
        "the dependent ResourceGroup to be collected",
        || {
            k.get_json(&["resourcegroup", "dep-rg"])
                .is_none()
                .then_some(())
        },
    );
    assert!(
        k.get_json(&["secret", "unrelated"]).is_some(),
        "objects without the ownerReference stay"
    );
}

pub fn namespace_deletion_removes_its_objects(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    let x = format!("{}-x", t.ns);
    create(
        k,
        &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {x}\n"),
    );
    apply(k, "ci", &gizmo("g", &x, 1, None));
    create(k, &secret("s", &x, &[("a", "1")]));
    create(k, &secret("s", &t.ns, &[("a", "1")]));

    // Emptying and removing it is the namespace controller's work on kube-apiserver.
    k.ok(&["delete", "ns", &x, &t.timeout_arg()]);
    poll_until(t.wait, "the namespace to go", || {
        k.get_json(&["namespace", &x]).is_none().then_some(())
    });
    assert!(k.get_json(&["gizmo", "g", "-n", &x]).is_none());
    assert!(k.get_json(&["secret", "s", "-n", &x]).is_none());
    assert!(
        k.get_json(&["secret", "s"]).is_some(),
        "other namespaces keep their objects"
    );
}

// ---------------------------------------------------------------------------------------------
// Dry run and generation

pub fn dry_run_server_stores_nothing(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    let out = k.ok_stdin(
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        &gizmo("g", &t.ns, 1, None),
    );
    assert!(out.contains("(server dry run)"), "{out}");
    assert!(
        k.get_json(&["gizmo", "g"]).is_none(),
        "a dry-run apply creates nothing"
    );
    let printed = k.ok_stdin(
        &["create", "-f", "-", "--dry-run=server", "-o", "json"],
        &secret("s", &t.ns, &[("a", "1")]),
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

    apply(k, "ci", &gizmo("g", &t.ns, 1, None));
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

pub fn status_writes_do_not_bump_generation_spec_writes_do(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    apply(k, "ci", &gizmo("g", &t.ns, 1, None));
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

    apply(k, "ci", &gizmo("g", &t.ns, 2, None));
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

/// A namespace held in Terminating (by an object's finalizer) refuses new objects with 403
/// NamespaceTerminating, then goes once the finalizer is removed.
pub fn a_terminating_namespace_refuses_new_objects(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    let x = format!("{}-x", t.ns);
    k.ok(&["create", "namespace", &x]);
    let held = format!(
        "apiVersion: kubectl.example.com/v1\nkind: Gizmo\nmetadata:\n  name: held\n  namespace: {x}\n  finalizers: [kubectl.example.com/hold]\nspec:\n  size: 1\n"
    );
    apply(k, "ci", &held);
    k.ok(&["delete", "namespace", &x, "--wait=false"]);
    let ns = k
        .get_json(&["namespace", &x])
        .expect("the finalizer holds the namespace");
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");

    let r = k.run(&["create", "configmap", "late", "-n", &x]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let refusal = format!(
        "configmaps \"late\" is forbidden: unable to create new content in namespace {x} because it is being terminated"
    );
    assert!(r.stderr.contains(&refusal), "{}", r.stderr);
    let r = t.http(
        "POST",
        &format!("/api/v1/namespaces/{x}/configmaps"),
        Some("application/json"),
        br#"{"metadata":{"name":"late"}}"#,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let s = r.json();
    assert_eq!(s["reason"], "Forbidden", "{}", r.body);
    assert_eq!(
        s["details"]["causes"][0]["reason"], "NamespaceTerminating",
        "{}",
        r.body
    );

    k.ok(&[
        "patch",
        "gizmo",
        "held",
        "-n",
        &x,
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":[]}}"#,
    ]);
    // The namespace controller's work on kube-apiserver.
    poll_until(t.wait, "the namespace to go", || {
        k.get_json(&["namespace", &x]).is_none().then_some(())
    });
}
