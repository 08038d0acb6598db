//! The identity check of a pass (IO): for each cluster of the unit that names an
//! AzureClusterIdentity, read the identity, its namespace's labels and, where the type needs one,
//! the identity's Secret, and give the verdict (`identity`): allowed, with the cluster's
//! ASO credential Secret to apply; not allowed; or a per-cluster error naming the object. An
//! identity not live yet that another unit of the revision declares is waited for (nothing of the
//! cluster applied, no error).
//!
//! An identity or Secret the unit renders counts as rendered (the pass applies it), and the labels
//! a unit renders on its Namespace count with the live ones. Reads come from the shared caches (Secrets are always cached; the identity and Namespace kinds
//! when the controller runs): a pass over a unit costs no request, however many clusters share an
//! identity. Without caches, one GET per identity, namespace and identity Secret of the unit.
//!
//! A rotated identity Secret (a cluster's credential Secret would change its secret material) is
//! tried with one token request for the identity before the clusters get it; refused, those
//! clusters fail with the identity named and keep their previous credential.

use crate::agent::controller::cache::Caches;
use crate::agent::pass::prepare::{Prepared, aro_cluster_name};
use crate::apply::Cluster;
use crate::apply::inventory::Identity;
use crate::apply::live_index::LiveIndex;
use crate::azure::AzureEnvironment;
use crate::azure::access::AzureAccess;
use crate::azure::credential::CredentialRequest;
use crate::azure::secret::SecretMaterial;
use crate::identity::{
    AzureIdentity, CLIENT_SECRET_KEY, IdentityError, NOT_ALLOWED_MESSAGE, identity_key,
    namespace_labels,
};
use crate::object::ObjectKey;
use crate::plan::ownership::Fleet;
use crate::reconcile::credentials::{self, ClusterIdentityRef, Verdict};
use crate::report::UnitError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Where the check reads live state.
#[derive(Clone, Copy)]
pub enum Reads<'a> {
    /// A pass: the shared caches where they hold the kind, else a GET.
    Live {
        cluster: &'a Cluster,
        caches: Option<&'a Caches>,
    },
    /// `plan`: live state as it listed it (no request).
    Listed(&'a LiveIndex),
}

/// The verdicts of a unit's clusters, by the key of each ARO object and credential Secret.
#[derive(Debug, Default)]
pub struct Identities {
    by_object: HashMap<ObjectKey, Verdict>,
    /// Clusters whose identity neither the cluster nor any unit of the fleet has: a broken
    /// definition, so nothing of their unit is applied.
    unresolved: Vec<ObjectKey>,
}

impl Identities {
    /// The verdict for an ARO object or a credential Secret of the unit (none: no identity named).
    pub fn verdict(&self, key: &ObjectKey) -> Option<&Verdict> {
        self.by_object.get(key)
    }

    /// Whether a cluster of the unit names an identity that exists nowhere (live or in git).
    pub fn any_unresolved(&self) -> bool {
        !self.unresolved.is_empty()
    }
}

/// The kinds the check reads beyond a unit's own: the identities and the Namespaces.
pub fn read_kinds() -> [crate::agent::controller::cache::KindKey; 2] {
    let id = identity_key("", "");
    [
        (id.group, id.version, id.kind),
        ("".into(), "v1".into(), "Namespace".into()),
    ]
}

/// What a change to concerns the clusters of `prepared`: the identities they name and, for
/// those `rendered` (every identity the revision's units render, by key), the identity's Secret
/// (a rotated secret reaches the clusters' ASO credential Secrets).
pub fn watched(prepared: &Prepared, rendered: &HashMap<ObjectKey, Arc<Value>>) -> Vec<ObjectKey> {
    let mut out = Vec::new();
    for r in prepared.cluster_refs() {
        let key = identity_key(&r.identity.0, &r.identity.1);
        let secret = rendered.get(&key).and_then(|o| secret_of(o));
        out.extend(secret);
        out.push(key);
    }
    out
}

/// The Secret a rendered AzureClusterIdentity reads its credential from, if any.
pub fn secret_of(identity: &Value) -> Option<ObjectKey> {
    let identity = AzureIdentity::parse(identity).ok()?;
    identity.secret_ref.map(|s| s.key())
}

/// Whether [`watched`] can give `key`: an AzureClusterIdentity or a Secret.
pub fn may_be_watched(key: &ObjectKey) -> bool {
    let id = identity_key("", "");
    (key.group == id.group && key.kind == id.kind) || (key.group.is_empty() && key.kind == "Secret")
}

/// The AzureClusterIdentities `units` render, by key (for [`watched`]).
pub fn rendered_identities<'a>(
    units: impl IntoIterator<Item = &'a Prepared>,
) -> HashMap<ObjectKey, Arc<Value>> {
    let id = identity_key("", "");
    units
        .into_iter()
        .flat_map(|p| &p.objects)
        .filter(|o| o.key.group == id.group && o.key.kind == id.kind)
        .map(|o| {
            let key = identity_key(o.key.namespace.as_deref().unwrap_or_default(), &o.key.name);
            (key, o.object())
        })
        .collect()
}

/// The identityRefs of `units` that name an AzureClusterIdentity no unit renders, for `validate`
/// (which reads no cluster: a pass also takes a live one, see [`check`]). Each error is the
/// referrer's, naming its file: (index of the unit, error).
pub fn unresolved_offline(units: &[&Prepared]) -> Vec<(usize, UnitError)> {
    let rendered = rendered_identities(units.iter().copied());
    let mut out = Vec::new();
    for (index, prepared) in units.iter().enumerate() {
        for r in prepared.cluster_refs() {
            let (namespace, name) = r.identity.clone();
            if rendered.contains_key(&identity_key(&namespace, &name)) {
                continue;
            }
            let file = prepared
                .objects
                .iter()
                .find(|o| o.key == r.referrer)
                .map(|o| o.origin.file.clone());
            let referrer = r.referrer.to_string();
            let message = format!(
                "/spec/identityRef/name: {}; no unit of the repository declares it (validate reads no cluster: declare it in git, or check it with plan against the cluster)",
                IdentityError::Missing {
                    referrer: referrer.clone(),
                    namespace,
                    name,
                }
                .to_string()
                .trim_start_matches(&format!("{referrer}: "))
            );
            out.push((
                index,
                UnitError::new(Some(r.referrer.clone()), file, message),
            ));
        }
    }
    out
}

/// The object `key` names as the unit renders it (this pass applies it), if it does.
fn rendered(prepared: &Prepared, key: &ObjectKey) -> Option<Arc<Value>> {
    prepared
        .objects
        .iter()
        .find(|o| {
            (&o.key.group, &o.key.kind, &o.key.namespace, &o.key.name)
                == (&key.group, &key.kind, &key.namespace, &key.name)
        })
        .map(|o| o.object())
}

/// Reads `key` from the caches, else with a GET; one the unit renders counts as rendered (this
/// pass applies it, and the cluster is judged on what the pass converges to).
async fn read_one(
    reads: Reads<'_>,
    prepared: &Prepared,
    key: &ObjectKey,
) -> Result<Option<Value>, String> {
    if let Some(o) = rendered(prepared, key) {
        return Ok(Some(Value::clone(&o)));
    }
    read_live(reads, key).await
}

/// Reads `key` from the caches, else with a GET; or from what a plan listed.
async fn read_live(reads: Reads<'_>, key: &ObjectKey) -> Result<Option<Value>, String> {
    let (cluster, caches) = match reads {
        Reads::Listed(live) => {
            return match live.failure(key) {
                Some(why) => Err(why.to_string()),
                None => Ok(live.get(&Identity::from(key))),
            };
        }
        Reads::Live { cluster, caches } => (cluster, caches),
    };
    match caches.and_then(|c| c.read(cluster, key)) {
        Some(items) => Ok(items
            .into_iter()
            .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(&key.name))),
        None => cluster.get(key).await.map_err(|e| e.to_string()),
    }
}

fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: "Namespace".into(),
        namespace: None,
        name: name.into(),
    }
}

/// The verdict of one cluster.
async fn judge(
    reads: Reads<'_>,
    azure: Option<&AzureAccess>,
    prepared: &Prepared,
    r: &ClusterIdentityRef,
    fleet: &Fleet,
    identities: &mut HashMap<(String, String), Result<Option<Value>, String>>,
) -> Verdict {
    let (id_ns, id_name) = &r.identity;
    let identity_key = identity_key(id_ns, id_name);
    if !identities.contains_key(&r.identity) {
        let read = read_one(reads, prepared, &identity_key).await;
        identities.insert(r.identity.clone(), read);
    }
    let failed = |message: String| Verdict::Failed { message };
    let object = match &identities[&r.identity] {
        Err(e) => return failed(format!("{}: reading {identity_key}: {e}", r.referrer)),
        Ok(None) if fleet.declared_by(&identity_key).is_some() => {
            let unit = fleet.declared_by(&identity_key).unwrap_or_default();
            return Verdict::Waiting {
                message: format!(
                    "waiting for AzureClusterIdentity {id_ns}/{id_name}, declared by unit {unit}"
                ),
                on: identity_key,
            };
        }
        Ok(None) => {
            return failed(
                IdentityError::Missing {
                    referrer: r.referrer.to_string(),
                    namespace: id_ns.clone(),
                    name: id_name.clone(),
                }
                .to_string(),
            );
        }
        Ok(Some(o)) => o,
    };
    let identity = match AzureIdentity::parse(object) {
        Ok(i) => i,
        Err(e) => return failed(format!("{}: {e}", r.referrer)),
    };
    // The namespace's labels as live; before the Namespace exists, as the unit renders it.
    // The namespace's labels: live ones (a person may label it), with those the unit renders.
    let ns_key = namespace_key(&r.namespace);
    let labels = match read_live(reads, &ns_key).await {
        Ok(ns) => {
            let mut labels = ns.as_ref().map(namespace_labels).unwrap_or_default();
            labels.extend(
                rendered(prepared, &ns_key)
                    .map(|ns| namespace_labels(&ns))
                    .unwrap_or_default(),
            );
            labels
        }
        Err(e) => {
            return failed(format!(
                "{}: reading Namespace {}: {e}",
                r.referrer, r.namespace
            ));
        }
    };
    if !identity.allows(&r.namespace, &labels) {
        return Verdict::NotAllowed {
            identity: format!("{id_ns}/{id_name}"),
        };
    }
    let secret = match identity.required_secret() {
        Err(e) => return failed(format!("{}: {e}", r.referrer)),
        Ok(None) => None,
        Ok(Some(s)) => match read_one(reads, prepared, &s.key()).await {
            Ok(None) if fleet.declared_by(&s.key()).is_some() => {
                let unit = fleet.declared_by(&s.key()).unwrap_or_default();
                return Verdict::Waiting {
                    message: format!(
                        "waiting for Secret {}/{} of AzureClusterIdentity {id_ns}/{id_name}, declared by unit {unit}",
                        s.namespace, s.name
                    ),
                    on: s.key(),
                };
            }
            Ok(found) => found,
            Err(e) => {
                return failed(format!(
                    "{}: reading Secret {}/{}: {e}",
                    r.referrer, s.namespace, s.name
                ));
            }
        },
    };
    if let Err(e) = identity.check_secret(secret.as_ref()) {
        return failed(format!("{}: {e}", r.referrer));
    }
    // Its values are never to show, wherever they might end up.
    if let Some(s) = &secret {
        crate::redact::learn([s]);
    }
    let credential = credentials::credential_secret(r, &identity, secret.as_ref());
    if let Some(azure) = azure {
        let live = read_live(reads, &r.secret_key()).await.ok().flatten();
        if credentials::material_rotated(&credential, live.as_ref())
            && let Err(e) = verify_rotated(azure, prepared, r, &identity, secret.as_ref()).await
        {
            return failed(format!(
                "{}: the rotated secret of AzureClusterIdentity {id_ns}/{id_name} was refused, \
                 the cluster keeps its previous credential: {e}",
                r.referrer
            ));
        }
    }
    Verdict::Allowed {
        secret: Box::new(credential),
    }
}

/// A rotated identity Secret is tried once before the cluster's ASO credential Secret carries
/// it: a token for the Key Vault scope (what the agent itself uses the identity for, so the token
/// serves its next key step). The process's credential cache rebuilds the credential (the secret's
/// hash changed) and lets one token request through for all the clusters of the identity.
async fn verify_rotated(
    azure: &AzureAccess,
    prepared: &Prepared,
    r: &ClusterIdentityRef,
    identity: &AzureIdentity,
    secret: Option<&Value>,
) -> Result<(), String> {
    let referrer = rendered(prepared, &r.referrer);
    let environment = (referrer.as_ref())
        .and_then(|o| o.pointer("/spec/azureEnvironment"))
        .and_then(Value::as_str);
    let environment = AzureEnvironment::parse(environment).map_err(|e| e.to_string())?;
    let endpoints = azure.endpoints(environment);
    let scope = format!("{}/.default", endpoints.key_vault_resource());
    let material = secret.and_then(|s| SecretMaterial::from_secret_object(s, CLIENT_SECRET_KEY));
    let request = CredentialRequest::from_identity(identity, material, endpoints);
    azure
        .credentials()
        .token(&request, &scope)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The verdicts of `prepared`'s clusters; a cluster stopped by its identity adds one error naming
/// its object (kind/namespace/name) and the identity.
pub async fn check(
    reads: Reads<'_>,
    azure: Option<&AzureAccess>,
    prepared: &Prepared,
    fleet: &Fleet,
    errors: &mut Vec<UnitError>,
) -> Identities {
    let refs = prepared.cluster_refs();
    let mut out = Identities::default();
    let mut read = HashMap::new();
    for r in &refs {
        let verdict = judge(reads, azure, prepared, r, fleet, &mut read).await;
        let nowhere = matches!(read.get(&r.identity), Some(Ok(None)))
            && matches!(verdict, Verdict::Failed { .. });
        if nowhere {
            out.unresolved.push(r.referrer.clone());
        }
        let file = prepared
            .objects
            .iter()
            .find(|o| o.key == r.referrer)
            .map(|o| o.origin.file.clone());
        match &verdict {
            Verdict::Allowed { .. } => {}
            Verdict::Waiting { message, .. } => {
                tracing::info!(object = %r.referrer, %message, "the cluster waits for its identity");
            }
            Verdict::NotAllowed { identity } => {
                tracing::warn!(object = %r.referrer, identity = %identity, namespace = %r.namespace, "the identity does not allow the cluster's namespace: nothing of the cluster is applied");
                errors.push(UnitError {
                    object: Some(r.referrer.clone()),
                    file,
                    message: format!(
                        "{}: AzureClusterIdentity {identity} does not allow namespace {}: {NOT_ALLOWED_MESSAGE}",
                        r.referrer, r.namespace
                    ),
                    ..Default::default()
                });
            }
            Verdict::Failed { message } => {
                tracing::warn!(object = %r.referrer, error = %message, "the cluster's identity cannot be used: nothing of the cluster is applied");
                errors.push(UnitError {
                    object: Some(r.referrer.clone()),
                    file,
                    message: message.clone(),
                    ..Default::default()
                });
            }
        }
        for o in &prepared.objects {
            let of_cluster = o.embedded_in.is_none()
                && crate::kinds::is_aro_kind(&o.key.group, &o.key.kind)
                && o.key.namespace.as_deref() == Some(r.namespace.as_str())
                && aro_cluster_name(&o.object()) == r.cluster;
            if of_cluster {
                out.by_object.insert(o.key.clone(), verdict.clone());
            }
        }
        out.by_object.insert(r.secret_key(), verdict);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_cluster_watches_is_an_identity_or_a_secret() {
        let root = std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/examples-repo"))
            .expect("the examples repository");
        let unit = crate::unit::Unit {
            path: "clusters/dev".into(),
        };
        let p = crate::agent::pass::prepare::prepare(&root, &unit).expect("prepared");
        let mut identities = rendered_identities([&*p]);
        let keys = watched(&p, &identities);
        assert!(!keys.is_empty());
        assert!(keys.iter().all(may_be_watched), "{keys:?}");
        // An identity that reads a Secret: the Secret is watched too.
        let (key, body) = identities
            .iter()
            .next()
            .map(|(k, v)| (k.clone(), Value::clone(v)))
            .unwrap();
        let mut with_secret = body;
        with_secret["spec"]["type"] = "ServicePrincipal".into();
        with_secret["spec"]["clientSecret"] =
            serde_json::json!({"name": "sp-secret", "namespace": "aro-dev"});
        identities.insert(key, Arc::new(with_secret));
        let keys = watched(&p, &identities);
        assert!(keys.iter().any(|k| k.kind == "Secret"), "{keys:?}");
        assert!(keys.iter().all(may_be_watched), "{keys:?}");
    }
}
