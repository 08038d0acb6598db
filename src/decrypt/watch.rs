//! Following the `--decryption-secret` Secret: one watch on that one Secret (kube-rs's runtime
//! watcher, a field selector on its name, no re-lists of anything else), so a rotated key is used
//! for the next revision without a restart. A Secret deleted or made invalid keeps the last good
//! keys and says so in a warning, naming the Secret and never a value.
//!
//! [`decide`] is the decision, a pure function; [`Registration::follow_secret`] carries it out.

use super::keys::KeySource;
use super::{Decryption, Registration};
use crate::secrets::Keyring;
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

/// What a change to the Secret does to the decryption in force.
#[derive(Debug)]
pub enum Reload {
    /// New keys: use them from the next revision on.
    Use(Keyring),
    /// The Secret is gone or invalid and good keys are in force: keep them, with this warning.
    KeepLast(String),
    /// The Secret is gone or invalid and no good keys were ever loaded: still none, for this reason.
    Unavailable(String),
    /// Nothing changed that matters (the same identities).
    Unchanged,
}

/// The decision for the Secret as now seen (`None`: deleted or absent). `current`: the digest of
/// the identities in force (`None` when no good keys are); `identities` of the new Secret are
/// compared by digest so an unrelated edit (a label) does not reload.
pub fn decide(
    source: &KeySource,
    secret: Option<&Value>,
    current: Option<&str>,
) -> (Reload, Option<String>) {
    let digest = secret
        .and_then(|s| super::keys::identities_of_secret(s).ok())
        .map(|text| crate::object::sha256_hex(text.as_bytes()));
    if digest.is_some() && digest.as_deref() == current {
        return (Reload::Unchanged, digest);
    }
    match source.load(Ok(secret.cloned())) {
        Ok(keyring) => (Reload::Use(keyring), digest),
        Err(e) if current.is_some() => (
            Reload::KeepLast(format!(
                "{e}; keeping the decryption keys last loaded from it"
            )),
            current.map(str::to_string),
        ),
        Err(e) => (Reload::Unavailable(e.to_string()), None),
    }
}

impl Registration {
    /// Follows the Secret of `source` through `client` for as long as this registration lives:
    /// each change is decided by [`decide`] and the decryption replaced accordingly. `loaded`:
    /// whether the keys in force came from it (the first read succeeded).
    pub fn follow_secret(
        &mut self,
        client: kube::Client,
        source: KeySource,
        loaded: Option<&Value>,
    ) {
        let KeySource::Secret { namespace, name } = source.clone() else {
            return;
        };
        let id = self.id;
        let mut current = loaded
            .filter(|s| source.load(Ok(Some((*s).clone()))).is_ok())
            .and_then(|s| super::keys::identities_of_secret(s).ok())
            .map(|text| crate::object::sha256_hex(text.as_bytes()));
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(client, &namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let task = tokio::spawn(async move {
            let mut events = watcher(api, config).default_backoff().boxed();
            let mut seen = false;
            let mut last_warning: Option<String> = None;
            while let Some(event) = events.next().await {
                let secret = match event {
                    Ok(watcher::Event::Init) => {
                        seen = false;
                        continue;
                    }
                    Ok(watcher::Event::InitApply(s) | watcher::Event::Apply(s)) => {
                        if s.metadata.name.as_deref() != Some(name.as_str()) {
                            continue;
                        }
                        seen = true;
                        serde_json::to_value(s).ok()
                    }
                    Ok(watcher::Event::Delete(s))
                        if s.metadata.name.as_deref() != Some(name.as_str()) =>
                    {
                        continue;
                    }
                    Ok(watcher::Event::InitDone) if seen => continue,
                    Ok(watcher::Event::InitDone | watcher::Event::Delete(_)) => None,
                    Err(e) => {
                        tracing::warn!(namespace = %namespace, name = %name, error = %e, "cannot watch the decryption Secret");
                        continue;
                    }
                };
                let (reload, digest) = decide(&source, secret.as_ref(), current.as_deref());
                current = digest;
                match reload {
                    Reload::Unchanged => {}
                    Reload::Use(keyring) => {
                        tracing::info!(namespace = %namespace, name = %name, identities = keyring.len(), "SOPS decryption keys reloaded from their Secret");
                        last_warning = None;
                        replace(id, Decryption::Keys(keyring));
                    }
                    Reload::KeepLast(why) | Reload::Unavailable(why)
                        if last_warning.as_ref() == Some(&why) => {}
                    Reload::KeepLast(why) => {
                        tracing::warn!(warning = %why, "SOPS decryption keys not reloaded");
                        last_warning = Some(why);
                    }
                    Reload::Unavailable(why) => {
                        tracing::warn!(warning = %why, "SOPS decryption keys unavailable: units with encrypted files will fail");
                        replace(id, Decryption::Unavailable(why.clone()));
                        last_warning = Some(why);
                    }
                }
            }
        });
        self.follower = Some(task.abort_handle());
    }
}

/// Puts `decryption` in force for registration `id`.
fn replace(id: u64, decryption: Decryption) {
    let mut all = super::REGISTERED.write().expect("decryption registry lock");
    if let Some(entry) = all.iter_mut().find(|(i, _, _)| *i == id) {
        entry.2 = std::sync::Arc::new(decryption);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::secrecy::ExposeSecret;
    use serde_json::json;

    fn source() -> KeySource {
        KeySource::Secret {
            namespace: "ops".into(),
            name: "sops-age".into(),
        }
    }

    fn secret_with(identity: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sops-age"},
            "stringData": {"identity.agekey": identity}})
    }

    fn identity() -> String {
        age::x25519::Identity::generate()
            .to_string()
            .expose_secret()
            .to_string()
    }

    #[test]
    fn a_new_key_is_used_and_the_same_key_is_not_reloaded() {
        let first = secret_with(&identity());
        let (reload, digest) = decide(&source(), Some(&first), None);
        assert!(matches!(reload, Reload::Use(_)), "{reload:?}");
        let (reload, again) = decide(&source(), Some(&first), digest.as_deref());
        assert!(matches!(reload, Reload::Unchanged), "{reload:?}");
        assert_eq!(again, digest);
        let (reload, next) = decide(
            &source(),
            Some(&secret_with(&identity())),
            digest.as_deref(),
        );
        assert!(matches!(reload, Reload::Use(_)), "{reload:?}");
        assert_ne!(next, digest);
    }

    #[test]
    fn a_deleted_or_broken_secret_keeps_the_last_good_keys_and_says_so_without_values() {
        let key = identity();
        let (_, digest) = decide(&source(), Some(&secret_with(&key)), None);
        let (reload, kept) = decide(&source(), None, digest.as_deref());
        match reload {
            Reload::KeepLast(why) => assert_eq!(
                why,
                "decryption Secret ops/sops-age: not found; keeping the decryption keys last loaded from it"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(kept, digest, "the keys in force are still the good ones");
        let broken = secret_with("AGE-SECRET-KEY-1NOTAKEY");
        let (reload, _) = decide(&source(), Some(&broken), digest.as_deref());
        match reload {
            Reload::KeepLast(why) => {
                assert!(why.contains("line 1 is not an age identity"), "{why}");
                assert!(!why.contains("NOTAKEY") && !why.contains(&key), "{why}");
            }
            other => panic!("{other:?}"),
        }
        let (reload, none) = decide(&source(), None, None);
        assert!(matches!(reload, Reload::Unavailable(_)), "{reload:?}");
        assert_eq!(none, None);
    }
}
