//! The agent's own writes, as its watches will see them again. A controller that wakes on every
//! change would wake itself with each of its writes; the resourceVersion a write came back with
//! marks its echo, so the caches can keep the object and let the wake-up go. A change anyone else
//! makes carries another resourceVersion, and wakes as before.

use crate::apply::inventory::Identity;
use crate::object::{ObjectKey, str_at};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The last resourceVersion the agent wrote, per object (one entry per object at most).
#[derive(Debug, Clone, Default)]
pub struct Echoes(Arc<Mutex<HashMap<Identity, String>>>);

impl Echoes {
    /// Notes `written` (a write's response) as the agent's own.
    pub fn record(&self, written: &Value) {
        let (Ok(key), Some(rv)) = (
            ObjectKey::from_object(written),
            str_at(written, "/metadata/resourceVersion"),
        ) else {
            return;
        };
        self.0
            .lock()
            .expect("echoes lock")
            .insert(Identity::from(&key), rv.to_string());
    }

    /// The writes of objects `of` selects whose echo the watches have not taken yet, with the
    /// resourceVersion each came back with.
    pub fn pending(&self, of: impl Fn(&Identity) -> bool) -> Vec<(Identity, String)> {
        let written = self.0.lock().expect("echoes lock");
        written
            .iter()
            .filter(|(id, _)| of(id))
            .map(|(id, rv)| (id.clone(), rv.clone()))
            .collect()
    }

    /// Whether `id` at `resource_version` is the echo of the agent's last write of it (forgotten
    /// once seen).
    pub fn take(&self, id: &Identity, resource_version: &str) -> bool {
        let mut written = self.0.lock().expect("echoes lock");
        if written.get(id).is_some_and(|rv| rv == resource_version) {
            written.remove(id);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_version_written_is_an_echo_and_only_once() {
        let echoes = Echoes::default();
        let obj = |rv: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv}})
        };
        echoes.record(&obj("7"));
        let id = Identity::from(&ObjectKey::from_object(&obj("7")).unwrap());
        assert!(!echoes.take(&id, "6"), "someone else's earlier change");
        assert!(echoes.take(&id, "7"));
        assert!(!echoes.take(&id, "7"), "seen once");
        echoes.record(&obj("8"));
        echoes.record(&obj("9"));
        assert!(!echoes.take(&id, "8"), "only the last write is remembered");
        assert!(echoes.take(&id, "9"));
    }
}
