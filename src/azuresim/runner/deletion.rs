//! The simulator's finalizer: added to every ASO object it reconciles, released when a deletion is
//! done (what to do is decided by [`policy::delete_step`]).
//!
//! Finalizer edits are JSON merge patches of the whole `metadata.finalizers` list carrying the
//! `resourceVersion` read, so a concurrent change fails with a conflict (and is re-read) instead of
//! dropping another party's finalizer.

use super::{Runner, write_status};
use crate::azuresim::FIELD_MANAGER;
use crate::azuresim::inventory;
use crate::azuresim::policy::{self, DeleteStep, ReconcilePolicy};
use crate::azuresim::status::{self, Phase};
use crate::azuresim::watch::{Key, to_value};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::cmp::Reverse;
use tokio::time::Instant;

impl Runner {
    /// Takes the deletion of `obj` (it has a `deletionTimestamp`) one step further.
    pub(super) async fn finalize(
        &self,
        key: &Key,
        ar: &ApiResource,
        api: &Api<DynamicObject>,
        obj: Value,
    ) -> Result<(), kube::Error> {
        match policy::delete_step(&obj) {
            DeleteStep::NotHeld => {
                // Another finalizer holds it; the watch's Delete event handles its Azure resource.
                self.state().deletions.remove(key);
                if ReconcilePolicy::of(&obj) != ReconcilePolicy::Skip {
                    self.write_deleting(key, ar, api, &obj).await?;
                }
            }
            DeleteStep::ReleaseKeepingAzure => {
                self.state().deletions.remove(key);
                release(api, &obj).await?;
                tracing::info!(kind = %key.kind, namespace = %key.namespace, name = %key.name,
                    policy = ?ReconcilePolicy::of(&obj), "simulated ASO finalizer released; the simulated Azure resource is kept");
            }
            DeleteStep::DeleteInAzure { arm_id } => {
                // ASO deletes in Azure with the resource's credential too.
                if self.credential_refused(key, ar, api, &obj).await? {
                    return Ok(());
                }
                let obj = self.write_deleting(key, ar, api, &obj).await?;
                let now = Instant::now();
                let due = {
                    let mut state = self.state();
                    match state.deletions.get(key) {
                        Some(due) => *due,
                        None => {
                            let due = now + self.config.provisioning_delay;
                            state.deletions.insert(key.clone(), due);
                            state.wakeups.push(Reverse((due, key.clone())));
                            due
                        }
                    }
                };
                if now < due {
                    return Ok(());
                }
                if let Some(arm_id) = &arm_id {
                    inventory::remove(&self.client, arm_id).await?;
                    self.state().recorded.remove(arm_id);
                    tracing::info!(%arm_id, kind = %key.kind, namespace = %key.namespace, name = %key.name,
                        "simulated Azure resource deleted");
                }
                if let Some(uid) = obj.pointer("/metadata/uid").and_then(Value::as_str) {
                    self.state().finalized.insert(uid.to_string());
                }
                release(api, &obj).await?;
                self.state().deletions.remove(key);
                tracing::info!(kind = %key.kind, namespace = %key.namespace, name = %key.name,
                    "simulated ASO finalizer released");
            }
        }
        Ok(())
    }

    /// Reports `Deleting` (Ready False, provisioningState `Deleting`). Returns the object after.
    async fn write_deleting(
        &self,
        key: &Key,
        ar: &ApiResource,
        api: &Api<DynamicObject>,
        obj: &Value,
    ) -> Result<Value, kube::Error> {
        let desired = status::render(obj, None, &Phase::Deleting, &super::timestamp());
        write_status(api, ar, key, obj, &desired, Phase::Deleting.reason()).await
    }
}

fn merge_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..Default::default()
    }
}

fn finalizers_patch(obj: &Value, finalizers: Vec<String>) -> Value {
    json!({"metadata": {
        "resourceVersion": obj.pointer("/metadata/resourceVersion"),
        "finalizers": finalizers,
    }})
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Adds the simulator's finalizer to `obj`. Returns the object after.
pub(super) async fn add_finalizer(
    api: &Api<DynamicObject>,
    ar: &ApiResource,
    obj: &Value,
) -> Result<Value, kube::Error> {
    let body = finalizers_patch(obj, policy::with_finalizer(obj));
    let patched = api
        .patch(name_of(obj), &merge_params(), &Patch::Merge(&body))
        .await?;
    Ok(to_value(patched, ar))
}

/// Removes the simulator's finalizer from `obj`, keeping every other one. Gone already is fine.
async fn release(api: &Api<DynamicObject>, obj: &Value) -> Result<(), kube::Error> {
    let body = finalizers_patch(obj, policy::without_finalizer(obj));
    match api
        .patch(name_of(obj), &merge_params(), &Patch::Merge(&body))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
