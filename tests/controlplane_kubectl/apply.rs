//! Server-side apply (with field-manager conflicts), get, diff, patch and delete.

use super::*;

// ---------------------------------------------------------------------------------------------
// Server-side apply

pub fn apply_server_side_creates_updates_and_drops_fields_no_longer_applied(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    let out = apply(k, "ci", &gizmo("g1", &t.ns, 1, Some("red")));
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
    apply(k, "ci", &gizmo("g1", &t.ns, 2, None));
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
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s1\n  namespace: {}\ndata:\n{data}",
            t.ns
        )
    };
    apply(
        k,
        "ci",
        &secret(&format!(
            "  user: {}\n  password: {}\n",
            b64("admin"),
            b64("one")
        )),
    );
    apply(k, "ci", &secret(&format!("  password: {}\n", b64("two"))));
    let s = k.get_json(&["secret", "s1"]).expect("secret");
    assert_eq!(s["data"], json!({"password": b64("two")}));
    assert_eq!(s["type"], "Opaque");
}

pub fn apply_server_side_conflict_between_managers_and_force_conflicts(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    apply(k, "a", &gizmo("g", &t.ns, 1, Some("red")));
    let r = k.run_stdin(
        &["apply", "--server-side", "--field-manager", "b", "-f", "-"],
        &gizmo("g", &t.ns, 1, Some("blue")),
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
    apply(k, "b", &gizmo("g", &t.ns, 1, Some("red")));

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
        &gizmo("g", &t.ns, 1, Some("blue")),
    );
    let g = k
        .get_json(&["gizmo", "g", "--show-managed-fields"])
        .unwrap();
    assert_eq!(g["spec"]["color"], "blue");
    // b took color over: now a is the one who conflicts on it.
    let r = k.run_stdin(
        &["apply", "--server-side", "--field-manager", "a", "-f", "-"],
        &gizmo("g", &t.ns, 1, Some("red")),
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

pub fn get_prints_yaml_and_json_for_custom_preloaded_kinds_and_secrets(t: &Target) {
    let k = &t.k;
    let rg = format!(
        "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg1\n  namespace: {}\nspec:\n  location: westeurope\n  azureName: rg-one\n",
        t.ns
    );
    apply(k, "ci", &rg);
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
        assert_eq!(obj["metadata"]["namespace"], t.ns.as_str());
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

    create(k, &secret("db", &t.ns, &[("password", "hunter2")]));
    let s: Value =
        aro_gitops::yaml::from_str(&k.ok(&["get", "secret", "db", "-o", "yaml"])).unwrap();
    assert_eq!(s["data"]["password"], b64("hunter2"));
    assert_eq!(s["type"], "Opaque");
    let s = k.get_json(&["secret", "db"]).unwrap();
    assert_eq!(s["kind"], "Secret");
    assert_eq!(s["data"]["password"], b64("hunter2"));
}

pub fn diff_server_side_is_clean_after_apply_and_shows_a_change(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    let manifest = gizmo("g", &t.ns, 1, Some("red"));
    apply(k, "t", &manifest);
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

    let r = diff(&gizmo("g", &t.ns, 5, Some("red")));
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

pub fn patch_merge_and_json_including_a_failing_test_op(t: &Target) {
    let k = &t.k;
    apply(
        k,
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
    // 422 Invalid; kube-apiserver's message names neither the operation nor the path.
    assert!(
        r.stderr.starts_with("The request is invalid"),
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
    create(k, &secret("s", &t.ns, &[("a", "1")]));
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

pub fn delete_returns_and_the_object_is_gone(t: &Target) {
    with_gizmos(t);
    let k = &t.k;
    create(k, &secret("s", &t.ns, &[("a", "1")]));
    apply(k, "ci", &gizmo("g", &t.ns, 1, None));
    let rg = format!(
        "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: {}\nspec:\n  location: westeurope\n",
        t.ns
    );
    apply(k, "ci", &rg);

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
    k.ok_stdin(&["delete", "-f", "-", "--timeout=20s"], &rg);
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

/// A `v1 List` applies item by item. kubectl validates a List's items through `/openapi/v2`
/// (the other kinds through `/openapi/v3`), so the server must serve it.
pub fn apply_server_side_of_a_v1_list_applies_each_item(t: &Target) {
    let k = &t.k;
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: l1, namespace: {ns}}}\n  data: {{a: \"1\"}}\n- apiVersion: v1\n  kind: Secret\n  metadata: {{name: l2, namespace: {ns}}}\n  stringData: {{b: \"2\"}}\n",
        ns = t.ns
    );
    let out = apply(k, "ci", &list);
    assert!(out.contains("configmap/l1 serverside-applied"), "{out}");
    assert!(out.contains("secret/l2 serverside-applied"), "{out}");
    assert_eq!(
        k.get_json(&["configmap", "l1"]).expect("l1")["data"],
        json!({"a": "1"})
    );
    assert_eq!(
        k.get_json(&["secret", "l2"]).expect("l2")["data"],
        json!({"b": b64("2")})
    );
}
