//! A Pod as kube-apiserver creates it: `SetDefaults_Pod` (requests from limits, service links),
//! then the default admission plugins (ServiceAccount, DefaultTolerationSeconds, Priority) and
//! the strategy's status (Pending, with the pod's QoS class).

use super::super::error::ApiError;
use serde_json::{Map, Value, json};

/// The decoder's defaults of a Pod beyond its spec's (which `defaults.rs` applies).
pub(super) fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s < 0)
    {
        spec.insert("terminationGracePeriodSeconds".into(), json!(1));
    }
    for list in ["containers", "initContainers"] {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            requests_from_limits(c);
        }
    }
    if spec.get("enableServiceLinks").is_none_or(Value::is_null) {
        spec.insert("enableServiceLinks".into(), json!(true));
    }
}

/// A container with limits requests at least as much: each limit not requested is requested.
fn requests_from_limits(c: &mut Value) {
    let Some(limits) = c
        .pointer("/resources/limits")
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    let requests = &mut c["resources"]["requests"];
    if !requests.is_object() {
        *requests = json!({});
    }
    let requests = requests.as_object_mut().expect("an object");
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

/// The admission plugins and strategy of a new Pod; `service_account` finds a ServiceAccount of
/// the pod's namespace by name.
pub(super) fn admit(
    obj: &mut Value,
    service_account: impl Fn(&str) -> Option<Value>,
) -> Result<(), ApiError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let forbidden = |why: String| ApiError::forbidden_object("", "pods", &name, &why);
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = obj["spec"].as_object_mut().expect("an object");
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(account));
    spec.insert("serviceAccount".into(), json!(account));
    let Some(sa) = service_account(&account) else {
        return Err(forbidden(format!(
            "error looking up service account {namespace}/{account}: serviceaccount \"{account}\" not found"
        )));
    };
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| sa["automountServiceAccountToken"].as_bool())
        .unwrap_or(true);
    if automount {
        mount_token(spec, &token_volume_name());
    }
    if spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
        && let Some(secrets) = sa["imagePullSecrets"].as_array()
    {
        let refs: Vec<Value> = secrets
            .iter()
            .map(|s| json!({"name": s["name"].as_str().unwrap_or("")}))
            .collect();
        spec.insert("imagePullSecrets".into(), json!(refs));
    }
    default_tolerations(spec);
    priority(spec).map_err(forbidden)?;
    let qos = qos_class(spec);
    obj["status"] = json!({"phase": "Pending", "qosClass": qos});
    Ok(())
}

/// Where the ServiceAccount admission plugin mounts the API token volume.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// `kube-api-access-` and five characters of the alphabet Kubernetes generates names from.
fn token_volume_name() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let suffix: String = bytes[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    format!("{TOKEN_VOLUME_PREFIX}{suffix}")
}

/// Mounts the projected API token volume (the token, the cluster's CA and the namespace) in
/// every container that mounts nothing at the token path, adding the volume when one does.
fn mount_token(spec: &mut Map<String, Value>, fresh_name: &str) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_string);
    let volume = existing.clone().unwrap_or_else(|| fresh_name.to_string());
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let mounts = &mut c["volumeMounts"];
            if !mounts.is_array() {
                *mounts = json!([]);
            }
            let mounts = mounts.as_array_mut().expect("an array");
            if mounts.iter().any(|m| m["mountPath"] == TOKEN_MOUNT_PATH) {
                continue;
            }
            mounts.push(json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}));
            needed = true;
        }
    }
    if existing.is_none() && needed {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        volumes
            .as_array_mut()
            .expect("an array")
            .push(token_volume(&volume));
    }
}

fn token_volume(name: &str) -> Value {
    json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}})
}

/// The taints a pod tolerates for five minutes unless it says otherwise (DefaultTolerationSeconds).
const EVICTION_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

fn default_tolerations(spec: &mut Map<String, Value>) {
    let list = spec.entry("tolerations").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("an array");
    for key in EVICTION_TAINTS {
        let tolerated = list.iter().any(|t| {
            let effect = t["effect"].as_str().unwrap_or("");
            let any_key = t["key"].as_str().unwrap_or("").is_empty() && t["operator"] == "Exists";
            (t["key"] == key || any_key) && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            list.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300}),
            );
        }
    }
}

/// The priority classes every cluster has, with their values.
const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// The Priority admission plugin: the pod's priority is its class's (0 without one; this
/// server holds no PriorityClasses but the system ones), and a priority the pod states must
/// agree.
fn priority(spec: &mut Map<String, Value>) -> Result<(), String> {
    let class = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let value = if class.is_empty() {
        0
    } else {
        SYSTEM_PRIORITY_CLASSES
            .iter()
            .find(|(n, _)| *n == class)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("no PriorityClass with name {class} was found"))?
    };
    if let Some(stated) = spec.get("priority").and_then(Value::as_i64)
        && stated != value
    {
        return Err(format!(
            "the integer value of priority ({stated}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        ));
    }
    spec.insert("priority".into(), json!(value));
    const POLICY: &str = "PreemptLowerPriority";
    match spec.get("preemptionPolicy").and_then(Value::as_str) {
        Some(p) if p != POLICY => Err(format!(
            "the string value of PreemptionPolicy ({p}) must not be provided in pod spec; priority admission controller computed {POLICY} from the given PriorityClass name"
        )),
        _ => {
            spec.insert("preemptionPolicy".into(), json!(POLICY));
            Ok(())
        }
    }
}

/// A pod's quality of service: `BestEffort` when no container requests or limits CPU or
/// memory, `Guaranteed` when every container limits both and requests what it limits,
/// `Burstable` otherwise.
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    const COMPUTE: [&str; 2] = ["cpu", "memory"];
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .collect();
    let amount = |c: &Value, kind: &str, r: &str| {
        c.pointer(&format!("/resources/{kind}/{r}"))
            .and_then(quantity)
            .filter(|q| *q != 0.0)
    };
    let any = containers.iter().any(|c| {
        COMPUTE
            .iter()
            .any(|r| amount(c, "requests", r).is_some() || amount(c, "limits", r).is_some())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        COMPUTE.iter().all(|r| {
            let limit = amount(c, "limits", r);
            limit.is_some() && amount(c, "requests", r).is_none_or(|q| Some(q) == limit)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A resource quantity (`500m`, `1Gi`, `2e3`) as a number, enough to compare two.
fn quantity(v: &Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let s = v.as_str()?.trim();
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    for (suffix, factor) in SUFFIXES {
        if let Some(n) = s.strip_suffix(suffix) {
            return n.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted(spec: Value) -> Result<Value, ApiError> {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": spec});
        defaults(&mut pod);
        admit(&mut pod, |name| {
            (name == "default").then(|| json!({"metadata": {"name": name}}))
        })?;
        Ok(pod)
    }

    #[test]
    fn a_pod_runs_as_the_default_account_with_its_token_mounted() {
        let pod = admitted(json!({"containers": [{"name": "c", "image": "i"}]})).unwrap();
        let spec = &pod["spec"];
        assert_eq!(spec["serviceAccountName"], "default");
        assert_eq!(spec["serviceAccount"], "default");
        let volume = spec["volumes"][0]["name"].as_str().unwrap();
        assert!(
            volume.starts_with("kube-api-access-") && volume.len() == 21,
            "{volume}"
        );
        assert_eq!(
            spec["containers"][0]["volumeMounts"],
            json!([{"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}])
        );
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(
            (&spec["priority"], &spec["preemptionPolicy"]),
            (&json!(0), &json!("PreemptLowerPriority"))
        );
        assert_eq!(spec["enableServiceLinks"], true);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
    }

    #[test]
    fn no_token_when_the_pod_declines_it_and_a_missing_account_is_forbidden() {
        let pod = admitted(json!({"automountServiceAccountToken": false,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}))
        .unwrap();
        assert!(pod["spec"].get("volumes").is_none());
        assert_eq!(pod["spec"]["tolerations"], json!([{"operator": "Exists"}]));
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(pod["status"]["qosClass"], "Guaranteed");
        let err = admitted(json!({"serviceAccountName": "x", "containers": []})).unwrap_err();
        assert_eq!(err.code, 403);
        assert!(
            err.message
                .contains("error looking up service account n/x: serviceaccount \"x\" not found"),
            "{}",
            err.message
        );
        let err = admitted(json!({"priorityClassName": "high", "containers": []})).unwrap_err();
        assert!(
            err.message
                .ends_with("no PriorityClass with name high was found")
        );
    }

    #[test]
    fn qos_is_burstable_when_requests_differ_from_limits() {
        let spec = json!({"containers": [{"resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(spec.as_object().unwrap()), "Burstable");
        let spec = json!({"containers": [{"resources": {"requests": {"cpu": "1000m", "memory": "1024Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(spec.as_object().unwrap()), "Guaranteed");
    }
}
