//! Tests of the plan's render cache.

use super::*;
use crate::source::testutil::{Upstream, git};

#[test]
fn a_fingerprint_changes_with_any_path_and_a_link_makes_none() {
    let closure = Inputs::of(&["a/k.yaml", "a/gone.yaml"], &["a/plain"]);
    let id = |n: u8| Oid::from_bytes(&[n; 20]).unwrap();
    let at = |k: u8, gone: PathState| {
        move |p: &Path| match p.to_str().unwrap() {
            "a/k.yaml" => PathState::Entry {
                mode: 0o100644,
                id: id(k),
            },
            "a/gone.yaml" => gone,
            _ => PathState::Entry {
                mode: 0o040000,
                id: id(9),
            },
        }
    };
    let absent = PathState::Absent { depth: 1, on: None };
    let one = fingerprint(&closure, at(1, absent)).unwrap();
    assert_eq!(fingerprint(&closure, at(1, absent)), Some(one));
    assert_ne!(fingerprint(&closure, at(2, absent)), Some(one));
    // A file looked for and not found that appears: another fingerprint.
    let appeared = PathState::Entry {
        mode: 0o100644,
        id: id(3),
    };
    assert_ne!(fingerprint(&closure, at(1, appeared)), Some(one));
    assert_eq!(fingerprint(&closure, at(1, PathState::Link)), None);
}

fn kust(resources: &str) -> String {
    format!("resources: [{resources}]\n")
}

fn cm(name: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: x}}\ndata: {{k: {data}}}\n"
    )
}

fn names(p: &Prepared) -> Vec<String> {
    let mut n: Vec<String> = p.objects.iter().map(|o| o.key.name.clone()).collect();
    n.sort();
    n
}

/// Prepares `unit` of the checkout `work` at `commit` through a cache under `root`.
fn prepare_at(root: &Path, up: &Upstream, commit: &str, unit: &str) -> (Prepared, bool) {
    let cache = RenderCache::new(root, up.bare.clone(), commit).unwrap();
    let unit = Unit { path: unit.into() };
    let (p, _, hit) = prepare(Some(&cache), &up.work, &unit);
    (std::sync::Arc::unwrap_or_clone(p.unwrap()), hit)
}

/// Entries found again at another commit only when every path the render read is the same
/// there: a change elsewhere hits; a changed resource, a removed resource (a file base reads
/// and head does not) and a file new in a listed folder miss; both sides' entries coexist; a
/// corrupt entry is removed.
#[test]
fn entries_stand_exactly_while_the_closure_reads_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::new(tmp.path());
    let cache = tmp.path().join("cache");
    let a_kust = kust("cm.yaml, extra.yaml");
    let c1 = up.commit(
        &[
            ("clusters/a/kustomization.yaml", a_kust.as_str()),
            ("clusters/a/cm.yaml", &cm("a", "one")),
            ("clusters/a/extra.yaml", &cm("a-extra", "one")),
            ("clusters/b/kustomization.yaml", &kust("cm.yaml")),
            ("clusters/b/cm.yaml", &cm("b", "one")),
            ("clusters/c/one.yaml", &cm("c1", "one")),
            ("README.md", "fleet\n"),
        ],
        "c1",
    );
    let (a1, hit) = prepare_at(&cache, &up, &c1, "clusters/a");
    assert!(!hit);
    assert_eq!(names(&a1), ["a", "a-extra"]);
    let (again, hit) = prepare_at(&cache, &up, &c1, "clusters/a");
    assert!(hit);
    assert_eq!(names(&again), names(&a1));
    assert_eq!(again.order, a1.order);
    assert!(!prepare_at(&cache, &up, &c1, "clusters/c").1);

    // Elsewhere: a hits; b's own file: b misses.
    let c2 = up.commit(
        &[
            ("README.md", "more\n"),
            ("clusters/b/cm.yaml", &cm("b", "two")),
        ],
        "c2",
    );
    assert!(prepare_at(&cache, &up, &c2, "clusters/a").1);
    assert!(!prepare_at(&cache, &up, &c2, "clusters/b").1);

    // A resource removed (the file too): head's closure no longer has it, and a misses.
    std::fs::remove_file(up.work.join("clusters/a/extra.yaml")).unwrap();
    let c3 = up.commit(&[("clusters/a/kustomization.yaml", &kust("cm.yaml"))], "c3");
    let (a3, hit) = prepare_at(&cache, &up, &c3, "clusters/a");
    assert!(!hit);
    assert_eq!(names(&a3), ["a"]);
    // Base's entry still stands for base: both sides' closures are kept.
    git(&up.work, &["checkout", "-q", &c1]);
    let (a_base, hit) = prepare_at(&cache, &up, &c1, "clusters/a");
    assert!(hit);
    assert_eq!(names(&a_base), ["a", "a-extra"]);
    git(&up.work, &["checkout", "-q", "-"]);

    // A plain folder's listing: a file new in it misses.
    let c4 = up.commit(&[("clusters/c/two.yaml", &cm("c2", "one"))], "c4");
    let (c, hit) = prepare_at(&cache, &up, &c4, "clusters/c");
    assert!(!hit);
    assert_eq!(names(&c), ["c1", "c2"]);

    // Corrupt entries are removed, and the unit renders.
    let version = std::fs::read_dir(&cache)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut corrupted = 0;
    for dir in std::fs::read_dir(&version).unwrap().flatten() {
        for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
            std::fs::write(e.path(), "not json").unwrap();
            corrupted += 1;
        }
    }
    assert!(corrupted >= 5);
    let (c, hit) = prepare_at(&cache, &up, &c4, "clusters/c");
    assert!(!hit);
    assert_eq!(names(&c), ["c1", "c2"]);
    assert!(prepare_at(&cache, &up, &c4, "clusters/c").1);
}

#[test]
fn only_the_entries_used_last_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..PER_UNIT + 2 {
        let path = tmp.path().join(format!("{i}.json"));
        std::fs::write(&path, "{}").unwrap();
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
        std::fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }
    evict(tmp.path(), PER_UNIT);
    let mut left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["2.json", "3.json", "4.json", "5.json"]);
}
