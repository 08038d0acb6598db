//! The credential Secrets ASO writes for an HcpOpenShiftCluster, simulated (pure).
//!
//! ASO writes the cluster's kubeconfig into the Secret named by
//! `spec.operatorSpec.secrets.adminCredentials` (`{name, key}`; ASO's HcpOpenShiftCluster has no
//! other destination). The simulator writes the same Secret, in
//! the cluster's namespace and owned by it, holding a syntactically valid kubeconfig whose server is
//! the simulated API URL and whose token is obviously fake; with the guest API running
//! (`guest`), the server is that API's address for the cluster and the token the cluster's own
//! (still fake). Each Secret carries
//! [`SIMULATED_ANNOTATION`] so nobody takes it for a real credential.

use super::azure;
use super::guest::GuestEndpoint;
use base64::Engine as _;
use serde_json::{Value, json};

/// Annotation on every Secret the simulator writes.
pub const SIMULATED_ANNOTATION: &str = "aro-gitops.dev/simulated";

/// Its value.
pub const SIMULATED_NOTE: &str = "Written by the aro-gitops Azure simulator: the cluster does not exist and the credential is fake";

/// The bearer token in every simulated kubeconfig: never valid anywhere.
pub const FAKE_TOKEN: &str = "sha256~aro-gitops-simulated-token-NOT-A-REAL-CREDENTIAL";

/// Annotation on an HcpOpenShiftCluster (value `"true"`) that makes the simulator provision it but
/// never write its kubeconfig Secret, as when ASO cannot write it: the control plane then stays
/// not ready until the Secret appears some other way.
pub const WITHHOLD_ANNOTATION: &str = "aro-gitops.dev/simulate-withhold-secrets";

fn withholds_secrets(cluster: &Value) -> bool {
    cluster
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(WITHHOLD_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

/// The key a Secret destination uses when it names none.
const DEFAULT_KEY: &str = "value";

/// The Secret (as an apply body) ASO would write for `cluster`; none when
/// `spec.operatorSpec.secrets.adminCredentials` names none, or under [`WITHHOLD_ANNOTATION`]. Their kubeconfigs name the simulated API URL, which
/// nothing serves (see [`credential_secrets_at`] for a guest API that answers).
pub fn credential_secrets(cluster: &Value) -> Vec<Value> {
    credential_secrets_at(cluster, None)
}

/// [`credential_secrets`], with kubeconfigs for the simulator's guest API at `guest` when given:
/// server `<base>/clusters/<namespace>/<name>`, the guest CA, and the cluster's own fake token
/// (`guest_api::token`).
pub fn credential_secrets_at(cluster: &Value, guest: Option<&GuestEndpoint>) -> Vec<Value> {
    if withholds_secrets(cluster) {
        return Vec::new();
    }
    let Some(dest) = cluster.pointer("/spec/operatorSpec/secrets/adminCredentials") else {
        return Vec::new();
    };
    let Some(name) = dest
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return Vec::new();
    };
    let key = dest
        .get("key")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_KEY);
    let text = match guest {
        Some(g) => guest_kubeconfig(cluster, "admin", g),
        None => kubeconfig(cluster, "admin"),
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let meta = |p: &str| cluster.pointer(p).cloned().unwrap_or(Value::Null);
    vec![json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": meta("/metadata/namespace"),
            "annotations": {SIMULATED_ANNOTATION: SIMULATED_NOTE},
            "ownerReferences": [{
                "apiVersion": meta("/apiVersion"),
                "kind": meta("/kind"),
                "name": meta("/metadata/name"),
                "uid": meta("/metadata/uid"),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "type": "Opaque",
        "data": {key: encoded},
    })]
}

/// A kubeconfig for `user` on the simulated cluster: server = the simulated API URL, fake token.
pub fn kubeconfig(cluster: &Value, user: &str) -> String {
    let server = json!({"server": azure::api_url(cluster), "insecure-skip-tls-verify": true});
    kubeconfig_with(cluster, user, server, FAKE_TOKEN)
}

/// A kubeconfig for `user` on the simulator's guest API at `guest` (HTTPS on loopback): the
/// cluster's path under it, the guest CA and the cluster's own fake token.
pub fn guest_kubeconfig(cluster: &Value, user: &str, guest: &GuestEndpoint) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(&guest.ca_pem);
    let server = json!({"server": super::guest::server_url(&guest.base, cluster),
        "certificate-authority-data": ca});
    kubeconfig_with(cluster, user, server, &super::guest_api::token(cluster))
}

fn kubeconfig_with(cluster: &Value, user: &str, server: Value, token: &str) -> String {
    let cluster_name = crate::arm::azure_name(cluster);
    let context = format!("{user}@{cluster_name}");
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": server}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user, "namespace": "default"}}],
        "current-context": context,
        "preferences": {},
    });
    format!(
        "# Simulated kubeconfig written by the aro-gitops Azure simulator.\n\
         # The cluster does not exist and the token is fake.\n{}",
        crate::yaml::to_string(&doc)
    )
}

/// True when `live` already holds everything `desired` (from [`credential_secrets`]) sets: its data,
/// annotations, owner references (by uid) and type. Compares values without exposing them.
pub fn is_up_to_date(live: &Value, desired: &Value) -> bool {
    let entries = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let contains = |p: &str| {
        let have = entries(live, p);
        entries(desired, p)
            .iter()
            .all(|(k, v)| have.get(k) == Some(v))
    };
    let uids = |v: &Value| -> Vec<Value> {
        v.pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| refs.iter().map(|r| r["uid"].clone()).collect())
            .unwrap_or_default()
    };
    let live_uids = uids(live);
    contains("/data")
        && contains("/metadata/annotations")
        && uids(desired).iter().all(|u| live_uids.contains(u))
        && live.get("type") == desired.get("type")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(secrets: Value) -> Value {
        json!({
            "apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
            "kind": "HcpOpenShiftCluster",
            "metadata": {"name": "c1", "namespace": "team", "uid": "u-1"},
            "spec": {"location": "westeurope", "operatorSpec": {"secrets": secrets}},
        })
    }

    fn decoded(secret: &Value, key: &str) -> Value {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(secret["data"][key].as_str().unwrap())
            .unwrap();
        crate::yaml::from_str(&String::from_utf8(bytes).unwrap()).expect("a valid kubeconfig")
    }

    #[test]
    fn admin_kubeconfig_secret_points_at_the_simulated_api_with_a_fake_token() {
        let c = cluster(json!({"adminCredentials": {"name": "c1-kubeconfig", "key": "value"}}));
        let secrets = credential_secrets(&c);
        assert_eq!(secrets.len(), 1);
        let s = &secrets[0];
        assert_eq!(s["metadata"]["name"], "c1-kubeconfig");
        assert_eq!(s["metadata"]["namespace"], "team");
        assert_eq!(
            s["metadata"]["annotations"][SIMULATED_ANNOTATION],
            SIMULATED_NOTE
        );
        assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(
            s["metadata"]["ownerReferences"][0]["kind"],
            "HcpOpenShiftCluster"
        );
        let kc = decoded(s, "value");
        assert_eq!(kc["kind"], "Config");
        assert_eq!(kc["clusters"][0]["cluster"]["server"], azure::api_url(&c));
        assert_eq!(kc["users"][0]["user"]["token"], FAKE_TOKEN);
        assert_eq!(kc["current-context"], kc["contexts"][0]["name"]);
    }

    #[test]
    fn with_a_guest_api_the_kubeconfig_names_it_and_the_cluster_token() {
        let c = cluster(json!({"adminCredentials": {"name": "c1-kubeconfig", "key": "value"}}));
        let guest = GuestEndpoint {
            base: "https://127.0.0.1:4567".into(),
            ca_pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
        };
        let s = credential_secrets_at(&c, Some(&guest)).remove(0);
        let kc = decoded(&s, "value");
        let server = &kc["clusters"][0]["cluster"];
        assert_eq!(server["server"], "https://127.0.0.1:4567/clusters/team/c1");
        let ca = server["certificate-authority-data"].as_str().unwrap();
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(ca)
                .unwrap(),
            guest.ca_pem.as_bytes()
        );
        assert!(server.get("insecure-skip-tls-verify").is_none());
        assert_eq!(
            kc["users"][0]["user"]["token"],
            super::super::guest_api::token(&c).as_str()
        );
        // The same cluster at the same address: the same bytes (nothing to write again).
        assert_eq!(credential_secrets_at(&c, Some(&guest))[0], s);
    }

    #[test]
    fn only_admin_credentials_is_written_and_none_or_withheld_means_none() {
        let c = cluster(
            json!({"adminCredentials": {"name": "k", "key": "admin"}, "userCredentials": {"name": "u", "key": "user"}}),
        );
        let secrets = credential_secrets(&c);
        assert_eq!(secrets.len(), 1);
        assert_eq!(decoded(&secrets[0], "admin")["users"][0]["name"], "admin");
        assert!(secrets[0]["data"].get("user").is_none());
        assert!(credential_secrets(&cluster(json!({}))).is_empty());
        let mut withheld = c.clone();
        withheld["metadata"]["annotations"] = json!({WITHHOLD_ANNOTATION: "true"});
        assert!(credential_secrets(&withheld).is_empty());
        let defaulted = credential_secrets(&cluster(json!({"adminCredentials": {"name": "k"}})));
        assert!(defaulted[0]["data"]["value"].is_string());
    }

    #[test]
    fn up_to_date_compares_data_annotations_owner_and_type() {
        let c = cluster(json!({"adminCredentials": {"name": "k", "key": "value"}}));
        let desired = credential_secrets(&c).remove(0);
        let mut live = desired.clone();
        live["metadata"]["resourceVersion"] = json!("7");
        live["metadata"]["annotations"]["other"] = json!("x");
        assert!(is_up_to_date(&live, &desired));
        let mut changed = live.clone();
        changed["data"]["value"] = json!("b3RoZXI=");
        assert!(!is_up_to_date(&changed, &desired));
        let mut orphan = live.clone();
        orphan["metadata"]["ownerReferences"] = json!([]);
        assert!(!is_up_to_date(&orphan, &desired));
    }
}
