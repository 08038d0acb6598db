//! The plan's render cache: a unit's preparation kept in the state directory between plans, found
//! again by the git blob ids of its input closure, so a warm `plan --base/--head` renders only what
//! it never rendered.
//!
//! A preparation is a function of the files its render reads ([`Inputs`], see
//! [`crate::agent::controller::incremental`]). An entry holds a unit's closure and its preparation,
//! named by the closure's fingerprint: the git object id (and mode) at each path of the closure,
//! or where the path stops existing, in the commit rendered. At another commit, the entry stands
//! when the same paths give the same fingerprint there: the render would read the same content and
//! take the same turns. A folder whose listing was read counts by its tree id (everything below
//! it); a symbolic link on the way to any path makes the unit uncacheable (git does not say what it
//! leads to).
//!
//! Bounded ([`PER_UNIT`] closures per unit), versioned (a new build of the agent starts an empty
//! cache: the renderer may have changed), written atomically (a temporary file renamed), and an
//! entry that cannot be read is removed with a warning. Only preparations that succeeded are
//! kept, and only without decryption keys (the ciphertexts' digests stand in for secret values):
//! no decrypted value is ever written.

use crate::agent::pass::prepare::{PlannedObject, Prepared};
use crate::object::{ObjectKey, Origin};
use crate::render::Inputs;
use crate::unit::Unit;
use git2::{ObjectType, Oid, Repository};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Entries kept per unit (each a closure seen: base's and head's, and a few earlier ones).
pub const PER_UNIT: usize = 4;
/// Bumped when an entry's layout changes.
const FORMAT: u32 = 1;

/// What a closure path is at a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    /// An entry (blob or tree) with this mode and id.
    Entry { mode: i32, id: Oid },
    /// Nothing there: the walk stopped at the component `depth` (0-based), under a folder, or
    /// under the blob `on` (a file on the way to the path).
    Absent { depth: usize, on: Option<Oid> },
    /// A symbolic link at or on the way to the path.
    Link,
}

/// The fingerprint of `inputs` at a commit whose paths `state` tells; `None` when a symbolic link
/// makes it unknowable. Pure: equal fingerprints mean every path of the closure reads alike.
pub fn fingerprint(inputs: &Inputs, mut state: impl FnMut(&Path) -> PathState) -> Option<Oid> {
    let mut text = String::new();
    let lists = [("file", &inputs.files), ("folder", &inputs.folders)];
    for (kind, paths) in lists {
        for path in paths.iter() {
            let seen = match state(path) {
                PathState::Link => return None,
                PathState::Entry { mode, id } => format!("{mode:o} {id}"),
                PathState::Absent { depth, on: None } => format!("absent {depth}"),
                PathState::Absent {
                    depth,
                    on: Some(id),
                } => format!("absent {depth} under {id}"),
            };
            text.push_str(&format!("{kind} {}\0{seen}\n", path.display()));
        }
    }
    Oid::hash_object(ObjectType::Blob, text.as_bytes()).ok()
}

/// The trees of a mirror read so far, by id: each is read (inflated, its hash checked) once, not
/// once per unit whose closure walks through it (the `clusters` folder of a 1,000-cluster fleet).
struct Trees {
    repo: Repository,
    listings: HashMap<Oid, HashMap<String, (i32, Oid)>>,
}

impl Trees {
    /// The entries of the tree `id`; `None` when `id` is not a tree.
    fn listing(&mut self, id: Oid) -> Option<&HashMap<String, (i32, Oid)>> {
        if !self.listings.contains_key(&id) {
            let tree = self.repo.find_tree(id).ok()?;
            let entries = (tree.iter())
                .filter_map(|e| Some((e.name().ok()?.to_string(), (e.filemode(), e.id()))))
                .collect();
            self.listings.insert(id, entries);
        }
        self.listings.get(&id)
    }

    /// What `path` (repository-relative) is in the tree `root`.
    fn path_state(&mut self, root: Oid, path: &Path) -> PathState {
        let parts: Vec<&std::ffi::OsStr> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        if parts.is_empty() {
            return PathState::Entry {
                mode: 0o040000,
                id: root,
            };
        }
        let mut current = root;
        for (depth, part) in parts.iter().enumerate() {
            let found = (part.to_str()).and_then(|p| self.listing(current)?.get(p).copied());
            let Some((mode, id)) = found else {
                return PathState::Absent { depth, on: None };
            };
            if mode == 0o120000 {
                return PathState::Link;
            }
            if depth + 1 == parts.len() {
                return PathState::Entry { mode, id };
            }
            if self.listing(id).is_none() {
                return PathState::Absent {
                    depth: depth + 1,
                    on: Some(id),
                };
            }
            current = id;
        }
        unreachable!("the last component returns")
    }
}

/// A cache error, with the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("render cache {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("render cache entry {path} is unreadable: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("render cache: commit {commit} is not readable in {mirror}: {message}")]
    Git {
        commit: String,
        mirror: PathBuf,
        message: String,
    },
}

/// The render cache of one side of a plan: its entries under `dir`, fingerprints read at
/// `commit` in the mirror `mirror`.
#[derive(Debug, Clone)]
pub struct RenderCache {
    dir: PathBuf,
    mirror: PathBuf,
    commit: Oid,
    repos: Repos,
}

/// The mirror's repositories opened so far with the trees read in each, one per thread at a time
/// (a [`Repository`] is not shared between threads).
#[derive(Clone, Default)]
struct Repos(std::sync::Arc<std::sync::Mutex<Vec<Trees>>>);

impl std::fmt::Debug for Repos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Repos")
    }
}

/// The version folder: the entry format and this build of the agent (its size and time), so a
/// new renderer never reads an older one's entries.
fn version() -> String {
    let build = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let at = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}-{at}", m.len())
        })
        .unwrap_or_else(|_| "unknown".into());
    let text = format!("{FORMAT} {} {build}", env!("CARGO_PKG_VERSION"));
    let id = Oid::hash_object(ObjectType::Blob, text.as_bytes()).expect("hashing bytes");
    format!("v{FORMAT}-{}", &id.to_string()[..16])
}

/// One entry as written: objects as `Box<RawValue>` (their frozen text, copied unparsed), read back
/// as `Value`.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<B> {
    format: u32,
    unit: PathBuf,
    files: Vec<PathBuf>,
    folders: Vec<PathBuf>,
    objects: Vec<Object<B>>,
    deps: Vec<Vec<usize>>,
    order: Vec<usize>,
    cluster: Option<ObjectKey>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Object<B> {
    key: ObjectKey,
    object: B,
    origin: Origin,
    embedded_in: Option<usize>,
}

impl RenderCache {
    /// The cache under `root` (the plan's state), for the commit `commit` of the mirror `mirror`.
    pub fn new(root: &Path, mirror: PathBuf, commit: &str) -> Result<RenderCache, CacheError> {
        let commit = Oid::from_str(commit).map_err(|e| CacheError::Git {
            commit: commit.to_string(),
            mirror: mirror.clone(),
            message: e.message().to_string(),
        })?;
        Ok(RenderCache {
            dir: root.join(version()),
            mirror,
            commit,
            repos: Repos::default(),
        })
    }

    /// The fingerprint of `inputs` at the cache's commit (see [`fingerprint`]).
    fn fingerprint_of(&self, inputs: &Inputs) -> Result<Option<Oid>, CacheError> {
        let git = |e: git2::Error| CacheError::Git {
            commit: self.commit.to_string(),
            mirror: self.mirror.clone(),
            message: e.message().to_string(),
        };
        let taken = self.repos.0.lock().expect("repositories lock").pop();
        let mut trees = match taken {
            Some(trees) => trees,
            None => Trees {
                repo: Repository::open_bare(&self.mirror).map_err(git)?,
                listings: HashMap::new(),
            },
        };
        let root = (trees.repo.find_commit(self.commit))
            .map(|c| c.tree_id())
            .map_err(git);
        let found = root.map(|root| fingerprint(inputs, |p| trees.path_state(root, p)));
        self.repos.0.lock().expect("repositories lock").push(trees);
        found
    }

    fn unit_dir(&self, unit: &Unit) -> PathBuf {
        let id = Oid::hash_object(ObjectType::Blob, unit.name().as_bytes()).expect("hashing bytes");
        self.dir.join(id.to_string())
    }

    /// `unit`'s preparation at this commit, and its closure, if an entry stands for it; and
    /// whether it holds encrypted values. The secret values of its rendered objects are learnt for
    /// redaction, as a render would learn them.
    pub fn get(&self, unit: &Unit) -> Option<(Prepared, Inputs, bool)> {
        let dir = self.unit_dir(unit);
        let entries = std::fs::read_dir(&dir).ok()?;
        for path in entries.flatten().map(|e| e.path()) {
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            match self.try_entry(unit, &path) {
                Ok(Some(found)) => {
                    // Touched: eviction keeps the entries used last.
                    let _ = std::fs::File::options()
                        .append(true)
                        .open(&path)
                        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
                    return Some(found);
                }
                Ok(None) => {}
                Err(e @ CacheError::Corrupt { .. }) => {
                    tracing::warn!(error = %e, unit = %unit.name(), "render cache entry ignored and removed");
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => {
                    tracing::warn!(error = %e, unit = %unit.name(), "render cache not used");
                    return None;
                }
            }
        }
        None
    }

    fn try_entry(
        &self,
        unit: &Unit,
        path: &Path,
    ) -> Result<Option<(Prepared, Inputs, bool)>, CacheError> {
        let corrupt = |message: String| CacheError::Corrupt {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read(path).map_err(|e| corrupt(e.to_string()))?;
        let entry: Entry<Value> =
            serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
        if entry.format != FORMAT || entry.unit != unit.path {
            return Err(corrupt("written for another unit or format".into()));
        }
        let inputs = Inputs {
            files: entry.files.into_iter().collect(),
            folders: entry.folders.into_iter().collect(),
        };
        let named = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        match self.fingerprint_of(&inputs)? {
            Some(f) if f.to_string() == named => {}
            _ => return Ok(None),
        }
        // As a render would, from the rendered objects (not those embedded in another, nor the
        // credential Secrets' placeholders preparing adds): later messages must not show their
        // secret values.
        crate::redact::learn(
            (entry.objects.iter())
                .filter(|o| o.embedded_in.is_none() && !is_placeholder(&o.object))
                .map(|o| &o.object),
        );
        let encrypted = (entry.objects.iter())
            .any(|o| !crate::decrypt::fields::encrypted_pointers(&o.object).is_empty());
        let bodies: Vec<Value> = entry.objects.iter().map(|o| o.object.clone()).collect();
        let prepared = Prepared {
            unit: unit.clone(),
            objects: (entry.objects.into_iter())
                .map(|o| PlannedObject::new(o.key, &o.object, o.origin, o.embedded_in))
                .collect(),
            deps: entry.deps,
            order: entry.order,
            cluster: entry.cluster,
            rollout: crate::agent::pass::prepare::RolloutFacts::of(&bodies),
        };
        Ok(Some((prepared, inputs, encrypted)))
    }

    /// Keeps `prepared` (rendered at this commit, reading `inputs`), evicting the unit's entries
    /// used least recently beyond [`PER_UNIT`].
    pub fn put(&self, prepared: &Prepared, inputs: &Inputs) -> Result<(), CacheError> {
        let Some(fp) = self.fingerprint_of(inputs)? else {
            return Ok(());
        };
        let dir = self.unit_dir(&prepared.unit);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CacheError::Io { path, source }
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let entry = Entry {
            format: FORMAT,
            unit: prepared.unit.path.clone(),
            files: inputs.files.iter().cloned().collect(),
            folders: inputs.folders.iter().cloned().collect(),
            objects: prepared
                .objects
                .iter()
                .map(|o| Object {
                    key: o.key.clone(),
                    object: frozen_text(o),
                    origin: o.origin.clone(),
                    embedded_in: o.embedded_in,
                })
                .collect(),
            deps: prepared.deps.clone(),
            order: prepared.order.clone(),
            cluster: prepared.cluster.clone(),
        };
        let text = serde_json::to_vec(&entry).expect("an entry serialises");
        let path = dir.join(format!("{fp}.json"));
        let temporary = dir.join(format!(".{fp}.{}.tmp", std::process::id()));
        std::fs::write(&temporary, text).map_err(io(&temporary))?;
        std::fs::rename(&temporary, &path).map_err(io(&path))?;
        evict(&dir, PER_UNIT);
        Ok(())
    }
}

/// An object's frozen text as a raw JSON value, for writing as it is.
fn frozen_text(o: &PlannedObject) -> Box<serde_json::value::RawValue> {
    let text = String::from_utf8(o.text()).expect("frozen text is the JSON it wrote");
    serde_json::value::RawValue::from_string(text).expect("frozen text is one JSON value")
}

/// Removes the entries of `dir` beyond the `keep` modified last (best effort).
fn evict(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if found.len() <= keep {
        return;
    }
    found.sort();
    for (_, path) in &found[..found.len() - keep] {
        let _ = std::fs::remove_file(path);
    }
}

/// `unit` prepared from the checkout at `root`: from `cache` when an entry stands for it (`true`),
/// else rendered and kept there.
pub fn prepare(
    cache: Option<&RenderCache>,
    root: &Path,
    unit: &Unit,
) -> (crate::agent::pass::prepare::Preparation, Inputs, bool) {
    if let Some((prepared, inputs, encrypted)) = cache.and_then(|c| c.get(unit)) {
        // Its encrypted values were compared by digest when it was rendered; the plan says so
        // again.
        if encrypted {
            crate::decrypt::note_digests_used(root);
        }
        return (Ok(std::sync::Arc::new(prepared)), inputs, true);
    }
    let (prepared, inputs) = crate::agent::pass::prepare::prepare_traced(root, unit);
    if let (Some(cache), Ok(p)) = (cache, &prepared)
        && let Err(e) = cache.put(p, &inputs)
    {
        tracing::warn!(error = %e, unit = %unit.name(), "render not kept in the cache");
    }
    (prepared, inputs, false)
}

/// A credential Secret's placeholder, as preparing adds it (see
/// [`crate::reconcile::credentials`]): labelled, and without values.
fn is_placeholder(object: &Value) -> bool {
    crate::kinds::is_secret(object)
        && object
            .pointer("/metadata/labels")
            .and_then(|l| l.get(crate::reconcile::credentials::CREDENTIAL_LABEL))
            .is_some()
        && object.get("data").is_none()
        && object.get("stringData").is_none()
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
