use super::*;
use crate::object::{Origin, SourcedObject};
use crate::render::config::TransformerConfig;
use serde_json::json;

fn res(object: Value) -> Resource {
    let file = format!("{}.yaml", object["metadata"]["name"].as_str().unwrap());
    Resource::loaded(SourcedObject {
        object,
        origin: Origin {
            file: file.into(),
            document: 0,
        },
    })
}

/// `r` moved to namespace `ns` (as the namespace transformer does).
fn moved(mut r: Resource, ns: &str) -> Resource {
    r.store_previous_id();
    crate::render::namespace::set_namespace(r.object_mut(), ns);
    r
}

/// `r` renamed with a prefix.
fn prefixed(mut r: Resource, prefix: &str) -> Resource {
    r.store_previous_id();
    let name = format!("{prefix}{}", r.name());
    r.set_name(&name);
    r.prefixes.push(prefix.to_string());
    r
}

fn sa(name: &str, ns: Option<&str>) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})
}

fn crb(subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "crb"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"}, "subjects": subjects})
}

fn run(list: Vec<Resource>) -> Result<ResMap, RenderError> {
    let mut map = ResMap::from_vec(list);
    fix(&mut map, &TransformerConfig::builtin().name_reference)?;
    Ok(map)
}

#[test]
fn subjects_follow_moved_service_accounts() {
    let map = run(vec![
        moved(res(sa("ctrl", Some("system"))), "sys"),
        res(sa("plain", Some("p"))),
        res(crb(json!([
            {"kind": "ServiceAccount", "name": "ctrl", "namespace": "system"},
            {"kind": "ServiceAccount", "name": "ctrl"},
            {"kind": "ServiceAccount", "name": "ctrl", "namespace": "elsewhere"},
            {"kind": "ServiceAccount", "name": "plain"},
            {"kind": "User", "name": "ctrl"}
        ]))),
    ])
    .unwrap();
    let ns: Vec<Option<&str>> = map.resources()[2].object()["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["namespace"].as_str())
        .collect();
    // kustomize matches by name whatever the subject's kind, hence the User.
    assert_eq!(
        ns,
        [
            Some("sys"),
            Some("sys"),
            Some("elsewhere"),
            None,
            Some("sys")
        ]
    );
}

#[test]
fn renamed_config_maps_and_roles_are_followed() {
    let map = run(vec![
        prefixed(res(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})), "p-"),
        prefixed(res(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}})), "p-"),
        res(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {
                "volumes": [{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "configMap": {"name": "other"}}],
                "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}}]}]}}}})),
        res(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}})),
        res(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
            "rules": [{"resourceNames": ["cm", "x"]}]})),
    ])
    .unwrap();
    let d = map.resources()[2].object();
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
        "p-cm"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][1]["configMap"]["name"],
        "other"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"],
        "p-cm"
    );
    assert_eq!(map.resources()[3].object()["roleRef"]["name"], "p-r");
    assert_eq!(
        map.resources()[4].object()["rules"][0]["resourceNames"],
        json!(["p-cm", "x"])
    );
}

#[test]
fn the_referrers_prefixes_break_ties() {
    let cm = || res(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}));
    let deploy = |name: &str| {
        res(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"template": {"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}}}}),
        )
    };
    let map = run(vec![
        prefixed(cm(), "a-"),
        prefixed(cm(), "b-"),
        prefixed(deploy("d"), "b-"),
    ])
    .unwrap();
    assert_eq!(
        map.resources()[2].object()["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
        "b-cm"
    );
    let err = run(vec![
        prefixed(cm(), "a-"),
        prefixed(cm(), "b-"),
        deploy("d"),
    ]);
    // An unprefixed referrer matches both (no prefixes compare equal to any): ambiguous.
    let err = err.unwrap_err().to_string();
    assert!(err.contains("found multiple possible referrals"), "{err}");
}

#[test]
fn ambiguous_and_nameless_references_are_errors() {
    let err = run(vec![
        moved(res(sa("sa", None)), "a"),
        moved(res(sa("sa", None)), "b"),
        res(crb(json!([{"kind": "ServiceAccount", "name": "sa"}]))),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "crb.yaml: ClusterRoleBinding/crb: field subjects: reference to sa could be any of ServiceAccount/a/sa (sa.yaml), \
         ServiceAccount/b/sa (sa.yaml): found multiple possible referrals"
    );
    let err = run(vec![res(crb(json!([{"kind": "ServiceAccount"}])))]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "crb.yaml: ClusterRoleBinding/crb: field subjects: a reference has no `name`"
    );
}

#[test]
fn a_role_binding_sees_its_namespace_and_its_subjects_namespaces() {
    let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "q"},
                    "subjects": [{"kind": "ServiceAccount", "name": "ctrl"}, {"kind": "ServiceAccount", "name": "x", "namespace": "sys"}]});
    let map = run(vec![
        moved(res(sa("ctrl", Some("system"))), "sys"),
        res(rb.clone()),
    ])
    .unwrap();
    assert_eq!(
        map.resources()[1].object()["subjects"][0]["namespace"],
        "sys"
    );
    // Without a subject naming `sys`, the ServiceAccount there is out of the RoleBinding's sight.
    let mut rb = rb;
    rb["subjects"][1]["namespace"] = json!("other");
    let map = run(vec![moved(res(sa("ctrl", Some("system"))), "sys"), res(rb)]).unwrap();
    assert_eq!(
        map.resources()[1].object()["subjects"][0].get("namespace"),
        None
    );
}
