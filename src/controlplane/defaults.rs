//! kube-apiserver's defaulting of the built-in kinds: what its decoder fills in on every write,
//! before field management records the request, so the defaults belong to the writer (unlike
//! [`super::strategy`]'s, which no manager owns). Facts from kube's `SetDefaults_*` functions of
//! `core/v1` and `apps/v1` (and, for Pods, claims, Jobs and ReplicaSets, [`super::workloads`]'s); only the kinds and fields this server's clients write are covered.

use serde_json::{Map, Value, json};

/// Fills in the defaults of a built-in kind (`group`, `kind`) in `obj`, as the decoder does.
pub(super) fn apply_defaults(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("apps", "Deployment") => deployment(obj),
        ("apps", "ReplicaSet") | ("apps", "DaemonSet") | ("apps", "StatefulSet") => {
            if let Some(t) = obj.pointer_mut("/spec/template/spec") {
                pod_spec(t);
            }
            super::workloads::defaults(group, kind, obj);
        }
        ("", "Pod") => {
            if let Some(s) = obj.get_mut("spec") {
                pod_spec(s);
            }
            super::workloads::defaults(group, kind, obj);
        }
        ("", "PersistentVolumeClaim") => super::workloads::defaults(group, kind, obj),
        ("batch", "Job") => {
            if let Some(t) = obj.pointer_mut("/spec/template/spec") {
                pod_spec(t);
            }
            super::workloads::defaults(group, kind, obj);
        }
        ("", "Service") => service(obj),
        ("", "Endpoints") => endpoints(obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => binding(obj),
        _ => {}
    }
}

/// A binding's subjects: a User's or Group's `apiGroup` is RBAC's (a ServiceAccount's stays
/// empty), as `SetDefaults_Subject`.
fn binding(obj: &mut Value) {
    for subject in obj
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(s) = subject.as_object_mut() else {
            continue;
        };
        let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
        if matches!(kind, "User" | "Group")
            && s.get("apiGroup")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        {
            s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
        }
    }
}

/// The object under `key` of `map`, created empty when absent or not an object.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("an object")
}

/// Sets `key` to `value` where it is absent or null (Go's nil pointer).
pub(super) fn or_set(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// Sets `key` to `value` where it is absent, null or the empty string (Go's zero string).
fn or_set_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if map.get(key).is_none_or(|v| v.is_null() || v == "") {
        map.insert(key.into(), json!(value));
    }
}

/// The status a kind's decoder leaves where none was sent: its Go struct is no pointer, so it
/// reads back as an empty object (Deployments), or with its own non-pointer members (Services).
fn empty_status(root: &mut Map<String, Value>, empty: Value) {
    or_set(root, "status", empty);
}

fn deployment(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let spec = object_at(root, "spec");
    or_set(spec, "replicas", json!(1));
    let strategy = object_at(spec, "strategy");
    or_set_str(strategy, "type", "RollingUpdate");
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = object_at(strategy, "rollingUpdate");
        or_set(rolling, "maxUnavailable", json!("25%"));
        or_set(rolling, "maxSurge", json!("25%"));
    }
    or_set(spec, "revisionHistoryLimit", json!(10));
    or_set(spec, "progressDeadlineSeconds", json!(600));
    object_at(object_at(spec, "template"), "spec");
    empty_status(root, json!({}));
    if let Some(pod) = obj.pointer_mut("/spec/template/spec") {
        pod_spec(pod);
    }
}

/// `SetDefaults_PodSpec` and the defaults of what a pod spec holds.
fn pod_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    match s.get("serviceAccountName").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => {
            s.insert("serviceAccount".into(), json!(name));
        }
        _ => {
            if let Some(old) = s
                .get("serviceAccount")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            {
                s.insert("serviceAccountName".into(), json!(old));
            }
        }
    }
    or_set_str(s, "dnsPolicy", "ClusterFirst");
    or_set_str(s, "restartPolicy", "Always");
    or_set(s, "securityContext", json!({}));
    or_set(s, "terminationGracePeriodSeconds", json!(30));
    or_set_str(s, "schedulerName", "default-scheduler");
    for list in ["containers", "initContainers"] {
        for c in s
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            container(c);
        }
    }
    for v in s
        .get_mut("volumes")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        volume(v);
    }
}

/// The tag of an image reference, as the pull policy's default reads it (`latest` when none).
fn image_tag(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    match last.split_once(':') {
        Some((_, tag)) => tag,
        None if image.contains('@') => "",
        None => "latest",
    }
}

fn container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else {
        return;
    };
    if m.get("imagePullPolicy")
        .is_none_or(|v| v.is_null() || v == "")
    {
        let image = m.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image) == "latest" {
            "Always"
        } else {
            "IfNotPresent"
        };
        m.insert("imagePullPolicy".into(), json!(policy));
    }
    // Not a default but the decoder's doing all the same: a non-pointer struct reads back empty.
    or_set(m, "resources", json!({}));
    or_set_str(m, "terminationMessagePath", "/dev/termination-log");
    or_set_str(m, "terminationMessagePolicy", "File");
    for p in m
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(p) = p.as_object_mut() {
            or_set_str(p, "protocol", "TCP");
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = m.get_mut(probe).and_then(Value::as_object_mut) {
            for (k, d) in [
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ] {
                if p.get(k).is_none_or(|v| v.is_null() || v == 0) {
                    p.insert(k.into(), json!(d));
                }
            }
            if let Some(h) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                or_set_str(h, "path", "/");
                or_set_str(h, "scheme", "HTTP");
            }
        }
    }
    for e in m
        .get_mut("env")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(f) = e
            .pointer_mut("/valueFrom/fieldRef")
            .and_then(Value::as_object_mut)
        {
            or_set_str(f, "apiVersion", "v1");
        }
    }
}

fn volume(v: &mut Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    let has_source = m.keys().any(|k| k != "name");
    if !has_source {
        m.insert("emptyDir".into(), json!({}));
    }
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(s) = m.get_mut(source).and_then(Value::as_object_mut) {
            or_set(s, "defaultMode", json!(420));
        }
    }
}

fn service(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let spec = object_at(root, "spec");
    or_set_str(spec, "sessionAffinity", "None");
    if spec.get("sessionAffinity") == Some(&json!("None")) {
        spec.remove("sessionAffinityConfig");
    } else if spec.get("sessionAffinity") == Some(&json!("ClientIP"))
        && spec
            .get("sessionAffinityConfig")
            .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
            .is_none_or(Value::is_null)
    {
        spec.insert(
            "sessionAffinityConfig".into(),
            json!({"clientIP": {"timeoutSeconds": 10800}}),
        );
    }
    or_set_str(spec, "type", "ClusterIP");
    for p in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(p) = p.as_object_mut() else { continue };
        or_set_str(p, "protocol", "TCP");
        if p.get("targetPort")
            .is_none_or(|t| t.is_null() || t == 0 || t == "")
            && let Some(port) = p.get("port").cloned()
        {
            p.insert("targetPort".into(), port);
        }
    }
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let externally_accessible =
        kind == "LoadBalancer" || kind == "NodePort" || (kind == "ClusterIP" && external_ips);
    if externally_accessible {
        or_set_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        or_set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        or_set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    empty_status(root, json!({"loadBalancer": {}}));
}

fn endpoints(obj: &mut Value) {
    for subset in obj
        .get_mut("subsets")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for p in subset
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(p) = p.as_object_mut() {
                or_set_str(p, "protocol", "TCP");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_subject_that_is_a_user_or_group_is_in_the_rbac_group() {
        let mut rb = json!({"subjects": [
            {"kind": "User", "name": "u"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "n"},
        ]});
        apply_defaults("rbac.authorization.k8s.io", "RoleBinding", &mut rb);
        assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
        assert!(rb["subjects"][1].get("apiGroup").is_none());
    }

    #[test]
    fn a_deployment_gets_its_strategy_limits_and_pod_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "nginx:1.25"}
        ], "volumes": [{"name": "c", "configMap": {"name": "x"}}, {"name": "e"}]}}}});
        apply_defaults("apps", "Deployment", &mut d);
        let spec = &d["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            pod["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );
        assert_eq!(pod["containers"][0]["terminationMessagePolicy"], "File");
        assert_eq!(pod["volumes"][0]["configMap"]["defaultMode"], 420);
        assert_eq!(pod["volumes"][1]["emptyDir"], json!({}));
    }

    #[test]
    fn a_recreate_deployment_gets_no_rolling_update() {
        let mut d = json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}});
        apply_defaults("apps", "Deployment", &mut d);
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn image_tags_are_read_past_registry_ports_and_digests() {
        assert_eq!(image_tag("nginx"), "latest");
        assert_eq!(image_tag("localhost:5000/nginx"), "latest");
        assert_eq!(image_tag("localhost:5000/nginx:1.2"), "1.2");
        assert_eq!(image_tag("nginx@sha256:abc"), "");
        assert_eq!(image_tag("nginx:latest"), "latest");
    }

    #[test]
    fn a_service_gets_its_type_affinity_ports_and_traffic_policy() {
        let mut s =
            json!({"spec": {"ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}});
        apply_defaults("", "Service", &mut s);
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(s["spec"]["internalTrafficPolicy"], "Cluster");
        assert_eq!(
            s["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(s["spec"]["ports"][1]["targetPort"], "https");
        let mut lb = json!({"spec": {"type": "LoadBalancer"}});
        apply_defaults("", "Service", &mut lb);
        assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
        let mut ext = json!({"spec": {"type": "ExternalName", "externalName": "a.b"}});
        apply_defaults("", "Service", &mut ext);
        assert!(ext["spec"].get("internalTrafficPolicy").is_none());
    }

    #[test]
    fn endpoints_ports_default_to_tcp() {
        let mut e =
            json!({"subsets": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]});
        apply_defaults("", "Endpoints", &mut e);
        assert_eq!(e["subsets"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(e["subsets"][0]["ports"][1]["protocol"], "UDP");
    }
}
