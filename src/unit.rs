//! Units of reconciliation: each cluster definition in the repository is rendered, planned,
//! applied and reported on its own, so one broken definition never stops the others.
//!
//! How units are found: if the repository root has `aro-gitops.yaml` with a `units` list of
//! folders, those are the units, in that order. Otherwise every folder directly under `clusters/`
//! that has a kustomization file (`kustomization.yaml`, `kustomization.yml` or `Kustomization`)
//! is a unit, in name order.

use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// The repository settings file that overrides unit discovery.
pub const SETTINGS_FILE: &str = "aro-gitops.yaml";
const KUSTOMIZATION_FILES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// One unit: a folder of the repository, named by its repo-relative path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Unit {
    pub path: PathBuf,
}

impl Unit {
    /// The unit's name as shown to people: its path with `/` separators.
    pub fn name(&self) -> String {
        self.path.to_string_lossy().replace('\\', "/")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UnitError {
    #[error("{file}: {message}")]
    Settings { file: PathBuf, message: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "no units found: the repository has no {SETTINGS_FILE} listing units and no folder under clusters/ with a kustomization"
    )]
    NoUnits,
}

/// Whether `dir` is a folder with a kustomization file: what a unit is.
pub fn is_unit_folder(dir: &Path) -> bool {
    dir.is_dir() && KUSTOMIZATION_FILES.iter().any(|f| dir.join(f).is_file())
}

/// The root of the repository `path` (a folder or file) belongs to, canonical: its git work
/// tree's top level; outside git, the nearest folder (from `path` up) holding [`SETTINGS_FILE`] or a
/// `clusters/` folder, else the folder itself. Never the working directory.
pub fn repository_root(path: &Path) -> std::io::Result<PathBuf> {
    let path = std::fs::canonicalize(path)?;
    match enclosing_repository(&path)? {
        Some(root) => Ok(root),
        None if path.is_dir() => Ok(path),
        None => Ok(path.parent().map(Path::to_path_buf).unwrap_or(path)),
    }
}

/// The repository `path` (a folder or file) is in, canonical, when there is one: its git work
/// tree's top level, or outside git the nearest folder (from `path` up) holding [`SETTINGS_FILE`]
/// or a `clusters/` folder. `None` for a plain folder outside any.
pub fn enclosing_repository(path: &Path) -> std::io::Result<Option<PathBuf>> {
    let path = std::fs::canonicalize(path)?;
    let folder = if path.is_dir() {
        path.clone()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or(path.clone())
    };
    // A work tree's top level holds `.git`: the repository's folder, or the file naming it that a
    // linked work tree or a submodule has. Looked for by hand, not with libgit2, whose first call
    // initialises OpenSSL and reads the system's CA bundle: most of a short `render`'s time.
    if let Some(top) = folder.ancestors().find(|d| d.join(".git").exists()) {
        return Ok(Some(top.to_path_buf()));
    }
    Ok(folder
        .ancestors()
        .find(|d| d.join(SETTINGS_FILE).is_file() || d.join("clusters").is_dir())
        .map(Path::to_path_buf))
}

/// The fleet name the settings file of the repository checked out at `root` gives (its `fleet`),
/// if it has one (see [`crate::plan::ownership::scope`]).
pub fn fleet_setting(root: &Path) -> Result<Option<String>, UnitError> {
    let Some(doc) = settings(root)? else {
        return Ok(None);
    };
    match doc.get("fleet") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) if !name.trim().is_empty() => Ok(Some(name.trim().to_string())),
        Some(_) => Err(UnitError::Settings {
            file: PathBuf::from(SETTINGS_FILE),
            message:
                "`fleet` must be a non-empty name (the fleet this repository's units belong to)"
                    .into(),
        }),
    }
}

/// The settings file of the repository checked out at `root`, parsed, if it has one.
pub fn settings(root: &Path) -> Result<Option<Value>, UnitError> {
    let file = root.join(SETTINGS_FILE);
    if !file.is_file() {
        return Ok(None);
    }
    let rel = PathBuf::from(SETTINGS_FILE);
    let text = std::fs::read_to_string(&file).map_err(|source| UnitError::Io {
        path: rel.clone(),
        source,
    })?;
    let doc = crate::yaml::from_str(&text).map_err(|e| UnitError::Settings {
        file: rel,
        message: e.to_string(),
    })?;
    Ok(Some(doc))
}

/// Finds the units of the repository checked out at `root`: those its settings file lists, else
/// the unit folders under `clusters/`.
pub fn discover(root: &Path) -> Result<Vec<Unit>, UnitError> {
    if let Some(doc) = settings(root)?
        && doc.get("units").is_some()
    {
        return from_settings(root, &doc);
    }
    let clusters = root.join("clusters");
    let entries = match std::fs::read_dir(&clusters) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(UnitError::NoUnits),
        Err(source) => {
            return Err(UnitError::Io {
                path: clusters,
                source,
            });
        }
    };
    let mut units = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| UnitError::Io {
            path: clusters.clone(),
            source,
        })?;
        let path = entry.path();
        if is_unit_folder(&path) {
            units.push(Unit {
                path: PathBuf::from("clusters").join(entry.file_name()),
            });
        }
    }
    units.sort();
    if units.is_empty() {
        return Err(UnitError::NoUnits);
    }
    Ok(units)
}

fn from_settings(root: &Path, doc: &Value) -> Result<Vec<Unit>, UnitError> {
    let bad = |message: String| UnitError::Settings {
        file: PathBuf::from(SETTINGS_FILE),
        message,
    };
    let list = doc
        .get("units")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("`units` must be a list of folders".into()))?;
    let mut units = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let p = entry
            .as_str()
            .ok_or_else(|| bad(format!("units[{i}] must be a folder path")))?;
        let path = PathBuf::from(p.trim_end_matches('/'));
        if path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(bad(format!(
                "units[{i}] {p:?} must be a path inside the repository"
            )));
        }
        if !root.join(&path).is_dir() {
            return Err(bad(format!("units[{i}] {p:?} is not a folder")));
        }
        let unit = Unit { path };
        if units.contains(&unit) {
            return Err(bad(format!("units[{i}] {p:?} is listed twice")));
        }
        units.push(unit);
    }
    if units.is_empty() {
        return Err(UnitError::NoUnits);
    }
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_comes_from_the_path_not_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(tmp.path()).unwrap();
        // A plain fleet folder: its root is the folder holding clusters/.
        let plain = top.join("plain");
        std::fs::create_dir_all(plain.join("clusters/dev")).unwrap();
        std::fs::write(plain.join("clusters/dev/kustomization.yaml"), "").unwrap();
        assert_eq!(repository_root(&plain.join("clusters/dev")).unwrap(), plain);
        assert_eq!(
            repository_root(&plain.join("clusters/dev/kustomization.yaml")).unwrap(),
            plain
        );
        // A folder with nothing of a fleet: itself, and no enclosing repository.
        std::fs::create_dir_all(top.join("lone/x")).unwrap();
        assert_eq!(
            repository_root(&top.join("lone/x")).unwrap(),
            top.join("lone/x")
        );
        assert_eq!(enclosing_repository(&top.join("lone/x")).unwrap(), None);
        assert_eq!(
            enclosing_repository(&plain.join("clusters/dev")).unwrap(),
            Some(plain.clone())
        );
        // Inside a git work tree: its top level, whatever is below.
        let repo = top.join("repo");
        std::fs::create_dir_all(repo.join("fleet/clusters/dev")).unwrap();
        git2::Repository::init(&repo).unwrap();
        assert_eq!(
            repository_root(&repo.join("fleet/clusters/dev")).unwrap(),
            repo
        );
        // A linked work tree (its `.git` a file naming the repository): its own top level.
        let linked = top.join("linked");
        std::fs::create_dir_all(linked.join("fleet/x")).unwrap();
        std::fs::write(
            linked.join(".git"),
            "gitdir: ../repo/.git/worktrees/linked\n",
        )
        .unwrap();
        assert_eq!(
            enclosing_repository(&linked.join("fleet/x")).unwrap(),
            Some(linked)
        );
    }

    fn touch(root: &Path, rel: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "resources: []\n").unwrap();
    }

    #[test]
    fn every_cluster_folder_with_a_kustomization_is_a_unit() {
        let d = tempfile::tempdir().unwrap();
        touch(d.path(), "clusters/prod/kustomization.yaml");
        touch(d.path(), "clusters/dev/Kustomization");
        touch(d.path(), "clusters/notes/readme.yaml");
        touch(d.path(), "base/kustomization.yaml");
        let units = discover(d.path()).unwrap();
        assert_eq!(
            units.iter().map(Unit::name).collect::<Vec<_>>(),
            vec!["clusters/dev", "clusters/prod"]
        );
    }

    #[test]
    fn settings_file_overrides_discovery() {
        let d = tempfile::tempdir().unwrap();
        touch(d.path(), "fleet/a/kustomization.yaml");
        touch(d.path(), "clusters/dev/kustomization.yaml");
        std::fs::write(d.path().join(SETTINGS_FILE), "units:\n  - fleet/a\n").unwrap();
        assert_eq!(
            discover(d.path()).unwrap(),
            vec![Unit {
                path: "fleet/a".into()
            }]
        );
        std::fs::write(d.path().join(SETTINGS_FILE), "units:\n  - ../outside\n").unwrap();
        assert!(
            discover(d.path())
                .unwrap_err()
                .to_string()
                .contains("inside the repository")
        );
        std::fs::write(d.path().join(SETTINGS_FILE), "units: [missing]\n").unwrap();
        assert!(
            discover(d.path())
                .unwrap_err()
                .to_string()
                .contains("aro-gitops.yaml: units[0] \"missing\" is not a folder")
        );
    }

    #[test]
    fn no_units_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(discover(d.path()), Err(UnitError::NoUnits)));
    }
}
