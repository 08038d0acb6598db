//! Tests of [`super`]: checkouts by difference, by links, whole.

use super::*;

fn git_error(e: git2::Error) -> SourceError {
    SourceError::Git {
        url: "test".into(),
        reference: "test".into(),
        op: "checkout",
        message: e.message().into(),
    }
}

/// A commit with a file, an executable, a link inside, a link out and a chain that ends outside.
fn commit_with_links(repo: &Repository) -> Oid {
    let blob = |bytes: &[u8]| repo.blob(bytes).unwrap();
    let mut sub = repo.treebuilder(None).unwrap();
    sub.insert("b.yaml", blob(b"b: 1\n"), 0o100644).unwrap();
    sub.insert("up", blob(b"../.."), 0o120000).unwrap();
    let sub = sub.write().unwrap();
    let mut root = repo.treebuilder(None).unwrap();
    root.insert("a.yaml", blob(b"a: 1\n"), 0o100644).unwrap();
    root.insert("run.sh", blob(b"#!/bin/sh\n"), 0o100755)
        .unwrap();
    root.insert("dir", sub, 0o040000).unwrap();
    root.insert("inside", blob(b"dir/b.yaml"), 0o120000)
        .unwrap();
    root.insert("outside", blob(b"/etc/hostname"), 0o120000)
        .unwrap();
    root.insert("chain", blob(b"dir/up/etc"), 0o120000).unwrap();
    let tree = repo.find_tree(root.write().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(None, &sig, &sig, "files", &tree, &[]).unwrap()
}

#[test]
fn writes_files_modes_and_only_links_that_stay_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::init_bare(tmp.path().join("repo.git")).unwrap();
    let commit = commit_with_links(&repo);
    let dir = materialize(&repo, commit, tmp.path(), git_error).unwrap();
    assert_eq!(dir, checkout_dir(tmp.path(), &commit.to_string()));
    assert_eq!(fs::read_to_string(dir.join("a.yaml")).unwrap(), "a: 1\n");
    assert_eq!(fs::read_to_string(dir.join("inside")).unwrap(), "b: 1\n");
    assert_eq!(
        fs::metadata(dir.join("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0o111
    );
    for dropped in ["outside", "chain", "dir/up"] {
        assert!(
            fs::symlink_metadata(dir.join(dropped)).is_err(),
            "{dropped} should be dropped"
        );
    }
    let names: Vec<_> = fs::read_dir(tmp.path().join(CHECKOUT_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![OsStr::new(&commit.to_string()).to_owned()],
        "no partial directory left"
    );
}

/// A commit of `files` (path, content, executable), nested folders made as needed.
fn commit_files(repo: &Repository, files: &[(&str, &str, bool)]) -> Oid {
    let mut index = git2::Index::new().unwrap();
    for (path, content, exec) in files {
        let id = repo.blob(content.as_bytes()).unwrap();
        let mut entry = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: if *exec { 0o100755 } else { 0o100644 },
            uid: 0,
            gid: 0,
            file_size: content.len() as u32,
            id,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        };
        entry.flags = (path.len() as u16) & 0xfff;
        index.add(&entry).unwrap();
    }
    let tree = repo.find_tree(index.write_tree_to(repo).unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(None, &sig, &sig, "files", &tree, &[]).unwrap()
}

/// Every file under `dir` with its content and whether it is executable, and every folder.
fn listing(dir: &Path) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                out.push((rel + "/", String::new(), false));
                stack.push(p);
            } else {
                let exec = fs::metadata(&p).unwrap().permissions().mode() & 0o111 != 0;
                out.push((rel, fs::read_to_string(&p).unwrap(), exec));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_checkout_by_difference_is_the_checkout_of_the_whole_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::init_bare(tmp.path().join("repo.git")).unwrap();
    let first = commit_files(
        &repo,
        &[
            ("a.yaml", "a: 1\n", false),
            ("gone/b.yaml", "b\n", false),
            ("gone/deeper/c.yaml", "c\n", false),
            ("kept/d.yaml", "d\n", false),
            ("run.sh", "#!/bin/sh\n", false),
        ],
    );
    let second = commit_files(
        &repo,
        &[
            ("a.yaml", "a: 2\n", false),
            ("kept/d.yaml", "d\n", false),
            ("new/e/f.yaml", "f\n", false),
            ("run.sh", "#!/bin/sh\n", true),
        ],
    );
    let state = tmp.path().join("state");
    materialize(&repo, first, &state, git_error).unwrap();
    let dir = materialize_from(&repo, second, Some(first), None, &state, git_error).unwrap();
    assert!(
        !checkout_dir(&state, &first.to_string()).exists(),
        "the earlier checkout was reused"
    );
    let whole = materialize(&repo, second, &tmp.path().join("whole"), git_error).unwrap();
    assert_eq!(listing(&dir), listing(&whole));
    assert!(!dir.join("gone").exists(), "emptied folders are removed");

    // A symbolic link in the difference: the whole tree is written, links checked.
    let linked = commit_with_links(&repo);
    let dir = materialize_from(&repo, linked, Some(second), None, &state, git_error).unwrap();
    assert_eq!(fs::read_to_string(dir.join("inside")).unwrap(), "b: 1\n");
    assert!(fs::symlink_metadata(dir.join("outside")).is_err());
}

/// A checkout linked from another source's checkout is the checkout of the whole tree, and
/// leaves the seed as it was (a changed file is replaced, not written through its link).
#[test]
fn a_checkout_seeded_from_another_is_the_whole_tree_and_leaves_the_seed_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::init_bare(tmp.path().join("repo.git")).unwrap();
    let head = commit_files(
        &repo,
        &[
            (
                "a.yaml", "a: 2
", false,
            ),
            (
                "kept/d.yaml",
                "d
",
                false,
            ),
            (
                "new/e/f.yaml",
                "f
",
                false,
            ),
            (
                "run.sh",
                "#!/bin/sh
",
                true,
            ),
        ],
    );
    let base = commit_files(
        &repo,
        &[
            (
                "a.yaml", "a: 1
", false,
            ),
            (
                "gone/b.yaml",
                "b
",
                false,
            ),
            (
                "kept/d.yaml",
                "d
",
                false,
            ),
            (
                "run.sh",
                "#!/bin/sh
",
                false,
            ),
        ],
    );
    let head_state = tmp.path().join("head");
    let seed_dir = materialize(&repo, head, &head_state, git_error).unwrap();
    let before = listing(&seed_dir);
    assert_eq!(
        any_checkout(&head_state),
        Some((seed_dir.clone(), head)),
        "a partial checkout is never a seed"
    );
    let state = tmp.path().join("base");
    let dir = materialize_from(
        &repo,
        base,
        None,
        Some((seed_dir.as_path(), head)),
        &state,
        git_error,
    )
    .unwrap();
    let whole = materialize(&repo, base, &tmp.path().join("whole"), git_error).unwrap();
    assert_eq!(listing(&dir), listing(&whole));
    assert_eq!(listing(&seed_dir), before, "the seed is untouched");
    use std::os::unix::fs::MetadataExt;
    let ino = |p: &Path| fs::metadata(p).unwrap().ino();
    assert_eq!(
        ino(&dir.join("kept/d.yaml")),
        ino(&seed_dir.join("kept/d.yaml")),
        "an unchanged file is linked"
    );

    // A seed whose commit the repository lacks: the whole tree is written.
    let other = tmp.path().join("other");
    let missing = Oid::from_str(&"1".repeat(40)).unwrap();
    let dir =
        materialize_seeded(&repo, base, Some((&seed_dir, missing)), &other, git_error).unwrap();
    assert_eq!(listing(&dir), listing(&whole));
    assert_eq!(listing(&seed_dir), before);
}

#[test]
fn last_good_round_trips_only_for_the_same_source() {
    let tmp = tempfile::tempdir().unwrap();
    let main = GitRef::Branch("main".into());
    assert_eq!(load_last_good(tmp.path(), "u", &main), None);
    store_last_good(tmp.path(), "u", &main, "abc").unwrap();
    assert_eq!(
        load_last_good(tmp.path(), "u", &main).as_deref(),
        Some("abc")
    );
    assert_eq!(load_last_good(tmp.path(), "other", &main), None);
    assert_eq!(
        load_last_good(tmp.path(), "u", &GitRef::Tag("v1".into())),
        None
    );
    fs::write(tmp.path().join(LAST_GOOD_FILE), "not json").unwrap();
    assert_eq!(load_last_good(tmp.path(), "u", &main), None);
}
