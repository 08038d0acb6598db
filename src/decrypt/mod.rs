//! Decrypting SOPS files in the pipeline: after rendering, before validation (see
//! [`crate::agent::pass::prepare`]).
//!
//! SOPS's MAC covers a document as written in its file, while kustomize may change the object it
//! makes of it (namespace, labels, name prefixes). So each rendered object that still carries a
//! `sops` block is decrypted from its **source** document (its origin file and document index,
//! read from the checkout), and the decrypted values are carried into the rendered object at the
//! same JSON pointers, refusing when the rendered object no longer holds the file's ciphertext
//! there (see [`fields::carry`]). The `sops` block is dropped and the pointers are recorded in the
//! [`fields::ENCRYPTED_FIELDS`] annotation, which every output masks by.
//!
//! Decrypted values exist only in memory: they are learnt for redaction
//! ([`crate::redact::learn_values`]) and never written to the state directory.
//!
//! A Secret a `secretGenerator` made from SOPS files holds stand-ins the renderer wrote; they are
//! replaced here too ([`generated`]).
//!
//! Which keys decrypt a checkout: the caller [`register`]s a [`Decryption`] for a folder (an
//! agent's state directory, which holds its checkouts, or a repository `validate` reads) for as
//! long as it works there; preparing a unit looks up the folder its checkout is in. Two agents in
//! one process (tests) thus keep their own keys. A checkout under no registered folder has no key.

pub mod fields;
pub mod generated;
pub mod keys;
pub mod watch;

use crate::object::{ObjectKey, SourcedObject};
use crate::secrets::Keyring;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, RwLock};

/// How SOPS files are read in a folder's checkouts.
#[derive(Debug)]
pub enum Decryption {
    /// Decrypted with these identities.
    Keys(Keyring),
    /// Not decrypted (no key: a plan on a pull request, `validate`): each ciphertext is replaced
    /// by its digest, so revisions compare by ciphertext ([`fields::stand_in_digests`]). `used`:
    /// an encrypted object was met (the plan then says so).
    Digests { used: std::sync::atomic::AtomicBool },
    /// The keys could not be loaded (why, naming the file or Secret): units with SOPS files fail
    /// with it, the others go on.
    Unavailable(String),
}

impl Decryption {
    /// Standing digests in for ciphertext (no key).
    pub fn digests() -> Decryption {
        Decryption::Digests {
            used: Default::default(),
        }
    }

    /// The keys of `source`, or why they are unavailable (logged once here; a unit with SOPS
    /// files then fails with it).
    /// `secret`: the Secret at [`keys::KeySource::secret_key`] as the caller read it, when the keys
    /// live in one.
    pub fn load(
        source: &keys::KeySource,
        secret: Result<Option<serde_json::Value>, String>,
    ) -> Decryption {
        match source.load(secret) {
            Ok(keyring) => {
                tracing::info!(identities = keyring.len(), "SOPS decryption keys loaded");
                Decryption::Keys(keyring)
            }
            Err(e) => {
                tracing::warn!(error = %e, "SOPS decryption keys unavailable: units with encrypted files will fail");
                Decryption::Unavailable(e.to_string())
            }
        }
    }
}

/// What a plan without the key says about encrypted values.
pub const DIGESTS_NOTE: &str = "encrypted values compared by ciphertext digest: no decryption key";

/// A SOPS object that could not be decrypted: its unit fails, nothing of it is applied.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", file.display())]
pub struct DecryptError {
    pub file: PathBuf,
    pub object: Option<ObjectKey>,
    pub message: String,
}

/// A registration: its id, its folder (canonical), its decryption.
type Registered = (u64, PathBuf, Arc<Decryption>);

static REGISTERED: LazyLock<RwLock<Vec<Registered>>> = LazyLock::new(Default::default);
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Keeps a [`register`]ed decryption in force; dropping it withdraws it.
#[derive(Debug)]
pub struct Registration {
    id: u64,
    /// The watch on the decryption Secret ([`watch`]), stopped with the registration.
    follower: Option<tokio::task::AbortHandle>,
}

impl Registration {
    /// Whether, registered as [`Decryption::Digests`], it met an encrypted object.
    pub fn digests_used(&self) -> bool {
        REGISTERED
            .read()
            .expect("decryption registry lock")
            .iter()
            .find(|(id, _, _)| *id == self.id)
            .is_some_and(|(_, _, d)| match d.as_ref() {
                Decryption::Digests { used } => used.load(std::sync::atomic::Ordering::Relaxed),
                _ => false,
            })
    }
}

/// Whether keys are registered for a folder holding `dir` (or `dir` itself).
pub fn has_keys(dir: &Path) -> bool {
    matches!(lookup(dir).as_deref(), Some(Decryption::Keys(_)))
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(follower) = self.follower.take() {
            follower.abort();
        }
        if let Ok(mut all) = REGISTERED.write() {
            all.retain(|(id, _, _)| *id != self.id);
        }
    }
}

/// Decrypts the checkouts under `dir` with `decryption` until the registration is dropped.
pub fn register(dir: &Path, decryption: Decryption) -> Registration {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    REGISTERED
        .write()
        .expect("decryption registry lock")
        .push((id, dir, Arc::new(decryption)));
    Registration { id, follower: None }
}

/// The decryption registered for the folder nearest above `root`, if any.
fn lookup(root: &Path) -> Option<Arc<Decryption>> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    REGISTERED
        .read()
        .expect("decryption registry lock")
        .iter()
        .filter(|(_, dir, _)| root.starts_with(dir))
        .max_by_key(|(_, dir, _)| dir.as_os_str().len())
        .map(|(_, _, d)| d.clone())
}

/// A unit prepared earlier from the checkout at `root` (a plan's render cache) holds encrypted
/// values: the digests registered there count as used, as decrypting it again would have made
/// them (the plan then says that encrypted values were compared by digest).
pub fn note_digests_used(root: &Path) {
    if let Some(d) = lookup(root)
        && let Decryption::Digests { used } = d.as_ref()
    {
        used.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Decrypts (or, without a key, stands digests in for) every SOPS object of a unit rendered from
/// the checkout at `root`, in place. Any error fails the unit: the caller applies none of it.
pub fn decrypt_rendered(
    root: &Path,
    objects: &mut [SourcedObject],
) -> Result<(), Vec<DecryptError>> {
    let mut errors = Vec::new();
    let mut decryption: Option<Option<Arc<Decryption>>> = None;
    // Each SOPS file decrypted once per unit, whole (one MAC covers all its documents).
    let mut files: HashMap<PathBuf, Result<DecryptedFile, String>> = HashMap::new();
    let mut generated_files = generated::Files::new();
    for s in objects.iter_mut() {
        let object_error = |s: &SourcedObject, message: String| DecryptError {
            file: s.origin.file.clone(),
            object: ObjectKey::from_object(&s.object).ok(),
            message,
        };
        let stand_ins = generated::stand_ins(&s.object);
        if !stand_ins.is_empty() {
            let mode = decryption.get_or_insert_with(|| lookup(root)).clone();
            if let Err(message) = generated::decrypt(
                root,
                &mut s.object,
                &stand_ins,
                mode.as_deref(),
                &mut generated_files,
            ) {
                errors.push(object_error(s, message));
            }
            continue;
        }
        if !crate::secrets::is_encrypted(&s.object) {
            if let Some(p) = first_ciphertext(&s.object) {
                errors.push(object_error(
                    s,
                    format!(
                        "{p}: holds a SOPS encrypted value but the object has no sops metadata \
                         (an encrypted List, or a value copied from a SOPS file?); it cannot be \
                         decrypted"
                    ),
                ));
            }
            continue;
        }
        let mode = decryption.get_or_insert_with(|| lookup(root)).clone();
        let result = match mode.as_deref() {
            None => Err(
                "is encrypted with SOPS and the agent has no decryption key (give \
                 --decryption-key-file or --decryption-secret)"
                    .to_string(),
            ),
            Some(Decryption::Unavailable(why)) => Err(format!(
                "is encrypted with SOPS and the decryption key could not be loaded: {why}"
            )),
            Some(Decryption::Digests { used }) => {
                used.store(true, std::sync::atomic::Ordering::Relaxed);
                fields::stand_in_digests(&mut s.object).map(|_| ())
            }
            Some(Decryption::Keys(keyring)) => {
                let file = files
                    .entry(s.origin.file.clone())
                    .or_insert_with(|| decrypt_file(root, &s.origin.file, keyring));
                match file {
                    Ok(docs) => match docs.iter().find(|(i, _, _)| *i == s.origin.document) {
                        Some((_, source, plain)) => fields::carry(&mut s.object, source, plain),
                        None => Err(format!("{}: no such document", s.origin)),
                    },
                    Err(e) => Err(e.clone()),
                }
            }
        };
        if let Err(message) = result {
            errors.push(object_error(s, message));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A SOPS file's documents: index, as written, decrypted.
type DecryptedFile = Vec<(usize, serde_json::Value, crate::secrets::Decrypted)>;

/// Decrypts the SOPS documents of `file` (all or nothing) and learns their values for redaction.
fn decrypt_file(root: &Path, file: &Path, keyring: &Keyring) -> Result<DecryptedFile, String> {
    let docs: Vec<(usize, serde_json::Value)> = crate::render::source_documents(root, file)?
        .into_iter()
        .filter(|(_, d)| crate::secrets::is_encrypted(d))
        .collect();
    let values: Vec<serde_json::Value> = docs.iter().map(|(_, d)| d.clone()).collect();
    let plain = crate::secrets::decrypt_documents(&values, keyring)
        .map_err(|e| format!("cannot decrypt: {e}"))?;
    for p in &plain {
        crate::redact::learn_values(fields::plaintexts(&p.document, &p.encrypted_pointers));
    }
    Ok(docs
        .into_iter()
        .zip(plain)
        .map(|((i, source), p)| (i, source, p))
        .collect())
}

/// The pointer of the first SOPS ciphertext in `object`, if any.
fn first_ciphertext(object: &serde_json::Value) -> Option<String> {
    fields::ciphertext_pointers(object).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::secrecy::ExposeSecret;
    use serde_json::json;

    /// A unit `unit/` whose kustomization sets a namespace and renders a two-document SOPS file
    /// (one MAC over both), and the key that opens it.
    fn unit_with_sops_file(dir: &Path) -> Keyring {
        let identity = age::x25519::Identity::generate();
        let secret = |name: &str, token: &str| {
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "stringData": {"token": token}})
        };
        let docs = crate::secrets::encrypt_documents(
            &[
                secret("a", "token-of-a-1234"),
                secret("b", "token-of-b-5678"),
            ],
            &[identity.to_public().to_string()],
            &crate::secrets::EncryptionRules {
                encrypted_regex: Some("^(data|stringData)$".into()),
                ..Default::default()
            },
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("unit")).unwrap();
        std::fs::write(
            dir.join("unit/kustomization.yaml"),
            "namespace: ns\nresources: [secrets.yaml]\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("unit/secrets.yaml"),
            crate::yaml::to_multi_string(&docs),
        )
        .unwrap();
        Keyring::parse(identity.to_string().expose_secret()).unwrap()
    }

    fn render(dir: &Path) -> Vec<SourcedObject> {
        crate::render::render(dir, Path::new("unit")).unwrap()
    }

    #[test]
    fn a_kustomized_multi_document_file_decrypts_with_the_key_registered_for_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = unit_with_sops_file(dir.path());

        let mut objects = render(dir.path());
        let errors = decrypt_rendered(dir.path(), &mut objects).unwrap_err();
        assert_eq!(errors.len(), 2);
        assert!(
            errors[0].message.contains("no decryption key"),
            "{}",
            errors[0]
        );
        assert_eq!(errors[0].file, Path::new("unit/secrets.yaml"));

        let registration = register(dir.path(), Decryption::Keys(keyring));
        let mut objects = render(dir.path());
        decrypt_rendered(dir.path(), &mut objects).unwrap();
        let b = &objects[1].object;
        assert_eq!(b["stringData"]["token"], "token-of-b-5678");
        assert_eq!(
            b["metadata"]["namespace"], "ns",
            "kustomize's namespace kept"
        );
        assert!(b.get("sops").is_none());
        assert_eq!(
            fields::encrypted_pointers(b),
            vec!["/stringData/token".to_string()]
        );
        assert_eq!(
            crate::redact::scrub("x token-of-a-1234 y"),
            format!("x {} y", crate::redact::REDACTED)
        );
        drop(registration);

        let registration = register(dir.path(), Decryption::digests());
        let mut objects = render(dir.path());
        decrypt_rendered(dir.path(), &mut objects).unwrap();
        assert!(registration.digests_used());
        let token = objects[0].object["stringData"]["token"].as_str().unwrap();
        assert!(token.starts_with("sha256:"), "{token}");
    }

    #[test]
    fn a_secret_generator_over_a_sops_env_file_is_decrypted_with_the_registered_key() {
        let dir = tempfile::tempdir().unwrap();
        let identity = age::x25519::Identity::generate();
        let env = crate::secrets::formats::encrypt_dotenv(
            "USER=app\nPASSWORD=generated-secret-9876\n",
            &[identity.to_public().to_string()],
            &Default::default(),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("unit")).unwrap();
        std::fs::write(dir.path().join("unit/app.env"), env).unwrap();
        std::fs::write(
            dir.path().join("unit/kustomization.yaml"),
            "secretGenerator:\n  - name: creds\n    envs: [app.env]\n",
        )
        .unwrap();
        let rendered = render(dir.path());
        let name = rendered[0].object["metadata"]["name"].clone();
        assert!(!rendered[0].object.to_string().contains("generated-secret"));

        let keyring = Keyring::parse(identity.to_string().expose_secret()).unwrap();
        let registration = register(dir.path(), Decryption::Keys(keyring));
        let mut objects = render(dir.path());
        decrypt_rendered(dir.path(), &mut objects).unwrap();
        let secret = &objects[0].object;
        assert_eq!(
            secret["metadata"]["name"], name,
            "the name is the one without the key"
        );
        use base64::Engine;
        let password = base64::engine::general_purpose::STANDARD
            .decode(secret["data"]["PASSWORD"].as_str().unwrap())
            .unwrap();
        assert_eq!(password, b"generated-secret-9876");
        assert_eq!(
            fields::encrypted_pointers(secret),
            vec!["/data/PASSWORD".to_string(), "/data/USER".to_string()]
        );
        assert_eq!(
            crate::redact::scrub("x generated-secret-9876 y"),
            format!("x {} y", crate::redact::REDACTED)
        );
        drop(registration);

        // The file changed after the render read it: refused, nothing half-decrypted.
        let mut objects = render(dir.path());
        let keyring = Keyring::parse(identity.to_string().expose_secret()).unwrap();
        let _registration = register(dir.path(), Decryption::Keys(keyring));
        let env = std::fs::read_to_string(dir.path().join("unit/app.env")).unwrap();
        std::fs::write(dir.path().join("unit/app.env"), env + "\n").unwrap();
        let errors = decrypt_rendered(dir.path(), &mut objects).unwrap_err();
        assert!(
            errors[0]
                .message
                .contains("unit/app.env: changed since the render read it"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn ciphertext_without_sops_metadata_fails() {
        let dir = tempfile::tempdir().unwrap();
        unit_with_sops_file(dir.path());
        let mut objects = render(dir.path());
        objects[0].object.as_object_mut().unwrap().remove("sops");
        let errors = decrypt_rendered(dir.path(), &mut objects).unwrap_err();
        assert!(
            errors[0]
                .message
                .starts_with("/stringData/token: holds a SOPS encrypted value but the object has no sops metadata"),
            "{}",
            errors[0]
        );
    }
}
