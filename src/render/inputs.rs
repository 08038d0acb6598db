//! A render's input closure: every repository path whose content or presence the render looked at.
//!
//! Every filesystem access of the renderer goes through one [`Loader`], which notes the path it
//! touches, so nothing a render depends on can be left out: kustomization files (and the candidate
//! names looked for in every folder, present or not), resources, bases, components, patches,
//! generator files and env files, replacement sources, openapi/crds/configurations files, and the
//! listing of plain folders. A path that was looked for and not found is noted too: adding it
//! changes the render. A render that fails has read a prefix of what it would read; the same
//! prefix fails the same way, so the closure of a failed render is as good as a complete one.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The largest repository file a render reads: 4 MiB. Kubernetes takes objects up to 1.5 MiB, so a
/// file over this holds generated data or a mistake (a build output, a dump), which a render would
/// otherwise read whole, per unit, on every pass.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Refuses a file over [`MAX_FILE_BYTES`], saying its size and the limit; the caller names the file.
fn within_size_limit(path: &Path) -> std::io::Result<()> {
    let size = std::fs::metadata(path)?.len();
    if size > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "the file is too large: {size} bytes, over the limit of {MAX_FILE_BYTES} bytes (4 MiB) per repository file; keep generated data out of the repository or split the file"
            ),
        ));
    }
    Ok(())
}

/// The repository-relative paths a render read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    /// Files read, and paths looked for (found or not).
    pub files: BTreeSet<PathBuf>,
    /// Folders whose listing was read (plain folders): any path below one counts.
    pub folders: BTreeSet<PathBuf>,
}

impl Inputs {
    /// Whether a change to `changed` (a repository-relative file, as git names changes) can change
    /// the render: it is a path read, a folder on the way to one (a symlink, or a file that became
    /// a folder), or a path below a folder whose listing was read.
    pub fn touched_by(&self, changed: &Path) -> bool {
        self.files.contains(changed)
            || self
                .files
                .range(changed.to_path_buf()..)
                .next()
                .is_some_and(|f| f.starts_with(changed))
            || changed.ancestors().any(|a| self.folders.contains(a))
    }

    /// The first of `changed` that touches these inputs.
    pub fn first_touched<'a>(&self, changed: &'a [PathBuf]) -> Option<&'a Path> {
        changed
            .iter()
            .map(PathBuf::as_path)
            .find(|c| self.touched_by(c))
    }

    /// How many paths the closure holds.
    pub fn len(&self) -> usize {
        self.files.len() + self.folders.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A closure of these files and listed folders (tests write closures by hand).
    #[cfg(test)]
    pub fn of(files: &[&str], folders: &[&str]) -> Inputs {
        Inputs {
            files: files.iter().map(PathBuf::from).collect(),
            folders: folders.iter().map(PathBuf::from).collect(),
        }
    }
}

/// The renderer's only door to the filesystem: reads and looks up paths, noting each one.
#[derive(Debug)]
pub struct Loader {
    /// The canonical repository root: what inputs are noted relative to.
    root: PathBuf,
    /// The canonical folder nothing may be read from outside of: the root, or the filesystem's
    /// root for a render that may reach anywhere (see [`Loader::anywhere`]).
    bound: PathBuf,
    inputs: RefCell<Inputs>,
}

impl Loader {
    /// A loader for the repository at the canonical `root`: nothing outside it may be read.
    pub fn new(root: PathBuf) -> Self {
        Loader {
            bound: root.clone(),
            root,
            inputs: RefCell::new(Inputs::default()),
        }
    }

    /// A loader with no containment root, as `kustomize build` outside a repository: a base or a
    /// component may be anywhere (each kustomization's files are still kept in its own folder by
    /// the renderer). Inputs are noted relative to the canonical `root` (those outside it are not).
    pub fn anywhere(root: PathBuf) -> Self {
        Loader {
            root,
            bound: PathBuf::from("/"),
            inputs: RefCell::new(Inputs::default()),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder nothing may be read from outside of (the load restrictor's root).
    pub fn bound(&self) -> &Path {
        &self.bound
    }

    /// Whether a render may read outside the root ([`Loader::anywhere`]).
    pub fn reaches_anywhere(&self) -> bool {
        self.bound != self.root
    }

    /// What was read so far.
    pub fn into_inputs(self) -> Inputs {
        self.inputs.into_inner()
    }

    /// `path` (absolute) relative to the root, `.` and `..` resolved lexically; `None` outside it.
    fn relative(&self, path: &Path) -> Option<PathBuf> {
        let lexical = super::normalize(path);
        let rel = lexical.strip_prefix(&self.root).ok()?;
        (!rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
    }

    /// Notes `path`, and the path before each `..` in it (a symlink there decides where `..` leads).
    fn note_file(&self, path: &Path) {
        let mut inputs = self.inputs.borrow_mut();
        let mut before = PathBuf::new();
        for c in path.components() {
            if c == Component::ParentDir
                && let Some(rel) = self.relative(&before)
            {
                inputs.files.insert(rel);
            }
            before.push(c);
        }
        if let Some(rel) = self.relative(path) {
            inputs.files.insert(rel);
        }
    }

    fn note_folder(&self, path: &Path) {
        // The root itself: every path counts.
        let rel = self.relative(path).unwrap_or_default();
        if path.starts_with(&self.root) {
            self.inputs.borrow_mut().folders.insert(rel);
        }
    }

    /// `path` with symlinks resolved; both the path as written and where it leads are noted.
    pub fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.note_file(path);
        let found = std::fs::canonicalize(path)?;
        self.note_file(&found);
        Ok(found)
    }

    /// Where `target` leads relative to the canonical `folder` ([`super::within`]: containment
    /// before existence); the path as written and where it leads are noted.
    pub(crate) fn within(&self, folder: &Path, target: &Path) -> std::io::Result<super::Within> {
        self.note_file(target);
        let found = super::within(folder, target)?;
        if let super::Within::Found(path) = &found {
            self.note_file(path);
        }
        Ok(found)
    }

    pub fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        self.note_file(path);
        within_size_limit(path)?;
        std::fs::read_to_string(path)
    }

    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.note_file(path);
        within_size_limit(path)?;
        std::fs::read(path)
    }

    pub fn metadata(&self, path: &Path) -> std::io::Result<std::fs::Metadata> {
        self.note_file(path);
        std::fs::metadata(path)
    }

    pub fn is_file(&self, path: &Path) -> bool {
        self.note_file(path);
        path.is_file()
    }

    pub fn is_dir(&self, path: &Path) -> bool {
        self.note_file(path);
        path.is_dir()
    }

    /// The names in folder `dir`, unsorted; the folder's whole listing is noted.
    pub fn read_dir_names(&self, dir: &Path) -> std::io::Result<Vec<OsString>> {
        self.note_folder(dir);
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_touches_a_file_read_a_folder_on_its_way_or_a_listed_folder() {
        let i = Inputs::of(
            &["base/kustomization.yaml", "clusters/dev/kustomization.yaml"],
            &["plain"],
        );
        for (changed, touched) in [
            ("base/kustomization.yaml", true),
            // A symlink (or a file) replaced on the way to a path read.
            ("base", true),
            ("clusters", true),
            ("base/other.yaml", false),
            ("base/kustomization.yaml.orig", false),
            ("plain/a.yaml", true),
            ("plain/deep/b.yaml", true),
            ("plainer/a.yaml", false),
            ("README.md", false),
        ] {
            assert_eq!(i.touched_by(Path::new(changed)), touched, "{changed}");
        }
        let all = Inputs::of(&[], &[""]);
        assert!(all.touched_by(Path::new("anything/at/all")));
    }

    #[test]
    fn a_file_over_the_size_limit_is_refused_with_its_size() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let at_limit = root.join("ok.yaml");
        let over = root.join("big.yaml");
        std::fs::File::create(&at_limit)
            .unwrap()
            .set_len(MAX_FILE_BYTES)
            .unwrap();
        std::fs::File::create(&over)
            .unwrap()
            .set_len(MAX_FILE_BYTES + 1)
            .unwrap();
        let l = Loader::new(root.clone());
        assert!(l.read(&at_limit).is_ok());
        let e = l.read_to_string(&over).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(
            e.to_string().starts_with(
                "the file is too large: 4194305 bytes, over the limit of 4194304 bytes (4 MiB)"
            ),
            "{e}"
        );
        assert!(l.read(&over).is_err());
        // Noted all the same: the render depends on it.
        assert!(l.into_inputs().files.contains(Path::new("big.yaml")));
    }

    #[test]
    fn the_loader_notes_paths_relative_to_the_root_found_or_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f.yaml"), "x: 1").unwrap();
        std::os::unix::fs::symlink("b", root.join("a/link")).unwrap();
        let l = Loader::new(root.clone());
        assert!(l.canonicalize(&root.join("a/link/../b/f.yaml")).is_ok());
        assert!(l.canonicalize(&root.join("a/link/f.yaml")).is_ok());
        assert!(!l.is_file(&root.join("a/missing.yaml")));
        assert!(l.read_to_string(&root.join("../outside")).is_err());
        l.read_dir_names(&root.join("a")).unwrap();
        let got = l.into_inputs();
        assert_eq!(
            got,
            Inputs::of(
                &["a/b/f.yaml", "a/link", "a/link/f.yaml", "a/missing.yaml"],
                &["a"]
            )
        );
    }

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n";

    #[test]
    fn a_render_reads_its_whole_tree_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(
            root,
            &[
                (
                    "clusters/dev/kustomization.yaml",
                    "resources: [../../base, extra.yaml]\ncomponents: [../../components/env]\n\
                     configMapGenerator:\n- name: gen\n  files: [conf.txt]\n  envs: [vars.env]\n\
                     patches:\n- path: patch.yaml\n",
                ),
                (
                    "clusters/dev/extra.yaml",
                    CM.replace("name: c", "name: e").as_str(),
                ),
                ("clusters/dev/conf.txt", "x"),
                ("clusters/dev/vars.env", "A=1\n"),
                (
                    "clusters/dev/patch.yaml",
                    CM.replace("a: b", "a: patched").as_str(),
                ),
                ("clusters/dev/README.md", "not read"),
                (
                    "clusters/prod/kustomization.yaml",
                    "resources: [../../base]\n",
                ),
                ("base/kustomization.yml", "resources: [cm.yaml, plain]\n"),
                ("base/cm.yaml", CM),
                ("base/plain/kustomization.yaml", "resources: [more.yaml]\n"),
                ("plainunit/sub/a.yaml", CM),
                (
                    "components/env/kustomization.yaml",
                    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonLabels: {env: dev}\n",
                ),
            ],
        );
        write(
            root,
            &[(
                "base/plain/more.yaml",
                CM.replace("name: c", "name: m").as_str(),
            )],
        );
        let (rendered, got) = crate::render::render_traced(root, Path::new("clusters/dev"));
        rendered.expect("renders");
        let paths: Vec<String> = got.files.iter().map(|p| p.display().to_string()).collect();
        for read in [
            "clusters/dev",
            "clusters/dev/kustomization.yaml",
            "clusters/dev/kustomization.yml",
            "clusters/dev/Kustomization",
            "clusters/dev/extra.yaml",
            "clusters/dev/conf.txt",
            "clusters/dev/vars.env",
            "clusters/dev/patch.yaml",
            "base/kustomization.yml",
            // Looked for and absent: adding one would change the render.
            "base/kustomization.yaml",
            "base/cm.yaml",
            "components/env/kustomization.yaml",
            "base/plain/kustomization.yaml",
        ] {
            assert!(paths.iter().any(|p| p == read), "{read} not in {paths:?}");
        }
        assert!(got.folders.is_empty(), "{got:?}");
        for unread in ["clusters/dev/README.md", "clusters/prod/kustomization.yaml"] {
            assert!(!got.touched_by(Path::new(unread)), "{unread}");
        }
        assert!(!got.touched_by(Path::new("base/plain/new.yaml")));
        assert!(got.touched_by(Path::new("base/plain/more.yaml")));

        // A plain folder depends on its listing: a new file in it (or below) counts.
        let (rendered, got) = crate::render::render_traced(root, Path::new("plainunit"));
        rendered.expect("renders");
        assert!(got.touched_by(Path::new("plainunit/new.yaml")));
        assert!(got.touched_by(Path::new("plainunit/sub/b.yaml")));
        assert!(!got.touched_by(Path::new("base/cm.yaml")));

        // A render that fails still tells what it read, up to the missing file.
        std::fs::remove_file(root.join("base/cm.yaml")).unwrap();
        let (rendered, got) = crate::render::render_traced(root, Path::new("clusters/prod"));
        assert!(rendered.is_err());
        assert!(got.touched_by(Path::new("base/cm.yaml")), "{got:?}");
    }
}
