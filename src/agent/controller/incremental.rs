//! Incremental rendering: between two revisions, only the units whose input closure changed are
//! rendered again.
//!
//! A unit's preparation is a function of the files its render reads, its input closure
//! ([`Inputs`], recorded by the renderer's loader as it reads; preparing reads nothing else).
//! Between an earlier revision A and a revision B, with C the paths git says changed (added,
//! modified, deleted, and both sides of a rename):
//! - a unit of B that was also a unit of A, and whose A-closure no path of C touches, renders at B
//!   exactly as at A: it reads the same paths, which hold the same content, so it takes the same
//!   turns and reads nothing else. Its A preparation (a failed one too) and its A closure stand for B;
//! - a unit whose A-closure some path of C touches renders again: a shared base or component
//!   changed re-renders every unit that read it, on every core;
//! - a unit new at B renders; a unit gone at B is dropped. Units are discovered afresh at every
//!   revision (`aro-gitops.yaml`, or the folders of `clusters/`): a change to the units file adds
//!   and removes units, it re-renders none that stays;
//! - when C is not known (no earlier revision, or the diff failed), every unit renders.
//!
//! A file of the unit's folder that its render does not read (a README, a report) changes nothing.
//! "Touches" is [`Inputs::touched_by`]: the path read or looked for, a folder on the way to one
//! (a symlink), or anything below a plain folder whose listing was read.
//!
//! `plan --base/--head` uses the same rule with A the base: base renders every unit (that is how
//! its closures are known: nothing is kept between plans), head renders only the units it decides,
//! and takes base's preparation for the others ([`prepare_units_taking`] moves it rather than copy
//! it; their diff is then empty by construction, and the plan skips it).

use crate::agent::pass::prepare::{self, PreparedUnit};
use crate::render::Inputs;
use crate::unit::{self, Unit, UnitError};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Why a unit is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The unit has no earlier render (the first revision, or a unit new in this one).
    New,
    /// What changed since the earlier revision is not known.
    Unknown,
    /// This path, read by the unit's earlier render, changed.
    Changed(PathBuf),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::New => f.write_str("new unit"),
            Why::Unknown => f.write_str("changes unknown"),
            Why::Changed(p) => write!(f, "{} changed", p.display()),
        }
    }
}

/// What to do with one unit at a new revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Its earlier preparation stands.
    Keep,
    Render(Why),
}

/// For each of `units` (a revision's units), whether it renders again, given the closures of the
/// earlier revision's units and the paths changed since (`None`: unknown). Pure; see the module
/// documentation for the rule.
pub fn decide(
    units: &[Unit],
    earlier: &BTreeMap<Unit, Inputs>,
    changed: Option<&[PathBuf]>,
) -> Vec<Decision> {
    units
        .iter()
        .map(|u| match (earlier.get(u), changed) {
            (None, _) => Decision::Render(Why::New),
            (Some(_), None) => Decision::Render(Why::Unknown),
            (Some(inputs), Some(changed)) => match inputs.first_touched(changed) {
                Some(path) => Decision::Render(Why::Changed(path.to_path_buf())),
                None => Decision::Keep,
            },
        })
        .collect()
}

/// An earlier revision's units, prepared, and what changed since.
#[derive(Clone, Copy)]
pub struct Earlier<'a> {
    pub units: &'a [PreparedUnit],
    pub inputs: &'a BTreeMap<Unit, Inputs>,
    /// Paths changed between that revision and this one (`None`: unknown).
    pub changed: Option<&'a [PathBuf]>,
}

/// A revision's units, prepared, with their input closures.
#[derive(Debug, Default)]
pub struct PreparedRevision {
    pub units: Vec<PreparedUnit>,
    pub inputs: BTreeMap<Unit, Inputs>,
    /// The units rendered for this revision (the others kept their earlier preparation), and why.
    pub rendered: Vec<(Unit, Why)>,
}

/// Finds the units of the checkout at `root` and prepares them, rendering only those
/// [`decide`] says (on every core) and keeping the earlier preparation of the others.
pub fn prepare_revision(
    root: &Path,
    earlier: Option<Earlier<'_>>,
) -> Result<PreparedRevision, UnitError> {
    Ok(prepare_units(root, unit::discover(root)?, earlier))
}

/// [`prepare_revision`] of units already found.
pub fn prepare_units(
    root: &Path,
    units: Vec<Unit>,
    earlier: Option<Earlier<'_>>,
) -> PreparedRevision {
    let before: HashMap<&Unit, &prepare::Preparation> = earlier
        .iter()
        .flat_map(|e| e.units.iter().map(|(u, p)| (u, p)))
        .collect();
    prepare_units_taking(root, units, earlier.map(|e| (e.inputs, e.changed)), |u| {
        before.get(u).map(|p| (*p).clone())
    })
}

/// An earlier revision's input closures, and the paths changed since (`None`: unknown).
pub type Since<'a> = (&'a BTreeMap<Unit, Inputs>, Option<&'a [PathBuf]>);

/// [`prepare_units`], the earlier preparation of a unit kept given by `take` (which may move it
/// out of the earlier revision rather than copy it; `None`: there is none, the unit renders).
pub fn prepare_units_taking(
    root: &Path,
    units: Vec<Unit>,
    earlier: Option<Since<'_>>,
    take: impl FnMut(&Unit) -> Option<prepare::Preparation>,
) -> PreparedRevision {
    prepare_units_with(units, earlier, take, |u| prepare::prepare_traced(root, u))
}

/// [`prepare_units_taking`], each unit to render prepared by `render` (a cache may stand in for
/// the renderer: see the plan's render cache).
pub fn prepare_units_with(
    units: Vec<Unit>,
    earlier: Option<Since<'_>>,
    mut take: impl FnMut(&Unit) -> Option<prepare::Preparation>,
    render: impl Fn(&Unit) -> (prepare::Preparation, Inputs) + Sync,
) -> PreparedRevision {
    let none = BTreeMap::new();
    let decisions = decide(
        &units,
        earlier.map_or(&none, |(inputs, _)| inputs),
        earlier.and_then(|(_, changed)| changed),
    );
    // A unit kept needs its earlier preparation; without one it renders.
    let mut kept: Vec<Option<prepare::Preparation>> = Vec::with_capacity(units.len());
    let decisions: Vec<Decision> = units
        .iter()
        .zip(decisions)
        .map(|(u, d)| match d {
            Decision::Keep => match take(u) {
                Some(p) => {
                    kept.push(Some(p));
                    Decision::Keep
                }
                None => {
                    kept.push(None);
                    Decision::Render(Why::New)
                }
            },
            d => {
                kept.push(None);
                d
            }
        })
        .collect();
    let to_render: Vec<&Unit> = units
        .iter()
        .zip(&decisions)
        .filter(|(_, d)| matches!(d, Decision::Render(_)))
        .map(|(u, _)| u)
        .collect();
    let mut fresh = prepare::on_every_core(&to_render, |u| render(u)).into_iter();
    let mut out = PreparedRevision::default();
    for ((u, d), kept) in units.into_iter().zip(decisions).zip(kept) {
        match d {
            Decision::Keep => {
                let p = kept.expect("a kept unit's preparation");
                if let Some(i) = earlier.and_then(|(inputs, _)| inputs.get(&u)) {
                    out.inputs.insert(u.clone(), i.clone());
                }
                out.units.push((u, p));
            }
            Decision::Render(why) => {
                let (p, inputs) = fresh.next().expect("one render per unit to render");
                tracing::debug!(unit = %u.name(), reason = %why, inputs = inputs.len(), "unit rendered");
                out.inputs.insert(u.clone(), inputs);
                out.rendered.push((u.clone(), why));
                out.units.push((u, p));
            }
        }
    }
    tracing::info!(
        units = out.units.len(),
        rendered = out.rendered.len(),
        kept = out.units.len() - out.rendered.len(),
        "units prepared"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(p: &str) -> Unit {
        Unit { path: p.into() }
    }

    /// dev and prod share base/ and the monitoring component; each has its own environment
    /// component; dev has a generator file and a plain folder of extras.
    fn fleet() -> BTreeMap<Unit, Inputs> {
        let candidates = |dir: &str| {
            ["kustomization.yaml", "kustomization.yml", "Kustomization"]
                .map(|f| format!("{dir}/{f}"))
        };
        let mut out = BTreeMap::new();
        for (name, own) in [
            (
                "clusters/dev",
                vec![
                    "clusters/dev/cluster.yaml",
                    "clusters/dev/settings.env",
                    "components/dev/kustomization.yaml",
                ],
            ),
            (
                "clusters/prod",
                vec![
                    "clusters/prod/cluster.yaml",
                    "components/prod/kustomization.yaml",
                ],
            ),
        ] {
            let mut files: Vec<String> = candidates(name).into();
            files.extend(candidates("base"));
            files.extend(candidates("components/monitoring"));
            files.extend(own.iter().map(|s| s.to_string()));
            files.push("base/cluster.yaml".into());
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            let folders: &[&str] = if name == "clusters/dev" {
                &["clusters/dev/extras"]
            } else {
                &[]
            };
            out.insert(unit(name), Inputs::of(&files, folders));
        }
        out
    }

    fn rendered(units: &[&str], changed: &[&str]) -> Vec<(String, Decision)> {
        let units: Vec<Unit> = units.iter().map(|u| unit(u)).collect();
        let changed: Vec<PathBuf> = changed.iter().map(PathBuf::from).collect();
        let d = decide(&units, &fleet(), Some(&changed));
        units.iter().map(|u| u.name()).zip(d).collect()
    }

    fn changed(p: &str) -> Decision {
        Decision::Render(Why::Changed(p.into()))
    }

    #[test]
    fn which_units_render_for_which_change() {
        use Decision::Keep;
        let both = ["clusters/dev", "clusters/prod"];
        // (what, units, changed paths, decisions)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], Vec<Decision>);
        let cases: &[Case] = &[
            (
                "a shared base re-renders every unit",
                &both,
                &["base/cluster.yaml"],
                vec![changed("base/cluster.yaml"), changed("base/cluster.yaml")],
            ),
            (
                "a shared component re-renders every unit",
                &both,
                &["components/monitoring/kustomization.yaml"],
                vec![
                    changed("components/monitoring/kustomization.yaml"),
                    changed("components/monitoring/kustomization.yaml"),
                ],
            ),
            (
                "one unit's component re-renders that unit",
                &both,
                &["components/dev/kustomization.yaml"],
                vec![changed("components/dev/kustomization.yaml"), Keep],
            ),
            (
                "a generator file re-renders the unit reading it",
                &both,
                &["clusters/dev/settings.env"],
                vec![changed("clusters/dev/settings.env"), Keep],
            ),
            (
                "a file outside every closure re-renders nothing",
                &both,
                &[
                    "README.md",
                    "docs/fleet.md",
                    "components/staging/kustomization.yaml",
                ],
                vec![Keep, Keep],
            ),
            (
                "a unit's own file",
                &both,
                &["clusters/prod/cluster.yaml"],
                vec![Keep, changed("clusters/prod/cluster.yaml")],
            ),
            (
                "a file of the unit's folder its render does not read",
                &both,
                &["clusters/prod/NOTES.md"],
                vec![Keep, Keep],
            ),
            (
                "a new file in a plain folder the render lists",
                &both,
                &["clusters/dev/extras/new.yaml"],
                vec![changed("clusters/dev/extras/new.yaml"), Keep],
            ),
            (
                "a deleted file",
                &both,
                &["clusters/dev/cluster.yaml"],
                vec![changed("clusters/dev/cluster.yaml"), Keep],
            ),
            (
                "a kustomization added where one was looked for",
                &both,
                &["base/Kustomization"],
                vec![changed("base/Kustomization"), changed("base/Kustomization")],
            ),
            (
                "a rename shows both paths: the old one was read",
                &both,
                &[
                    "clusters/prod/cluster.yaml",
                    "clusters/prod/cluster-renamed.yaml",
                ],
                vec![Keep, changed("clusters/prod/cluster.yaml")],
            ),
            (
                "a folder on the way replaced (a symlink)",
                &both,
                &["components"],
                vec![changed("components"), changed("components")],
            ),
            (
                "the units file adds a unit and keeps the others",
                &["clusters/dev", "clusters/prod", "clusters/new"],
                &["aro-gitops.yaml", "clusters/new/kustomization.yaml"],
                vec![Keep, Keep, Decision::Render(Why::New)],
            ),
            (
                "the units file removes a unit: the other stays as it was",
                &["clusters/prod"],
                &["aro-gitops.yaml"],
                vec![Keep],
            ),
            ("nothing changed", &both, &[], vec![Keep, Keep]),
        ];
        for (what, units, paths, expected) in cases {
            let got: Vec<Decision> = rendered(units, paths).into_iter().map(|(_, d)| d).collect();
            assert_eq!(&got, expected, "{what}");
        }
    }

    #[test]
    fn unknown_changes_render_every_unit() {
        let units = [unit("clusters/dev"), unit("clusters/new")];
        assert_eq!(
            decide(&units, &fleet(), None),
            vec![Decision::Render(Why::Unknown), Decision::Render(Why::New)]
        );
        assert_eq!(
            decide(&units, &BTreeMap::new(), Some(&[])),
            vec![Decision::Render(Why::New), Decision::Render(Why::New)]
        );
    }

    #[test]
    fn a_kept_unit_keeps_its_preparation_and_closure() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for (path, text) in [
            ("clusters/a/kustomization.yaml", "resources: [cm.yaml]\n"),
            (
                "clusters/a/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
            ),
            (
                "clusters/b/kustomization.yaml",
                "resources: [missing.yaml]\n",
            ),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let first = prepare_revision(root, None).unwrap();
        assert_eq!(first.rendered.len(), 2);
        assert!(first.units[0].1.is_ok() && first.units[1].1.is_err());
        // b's missing file appears: b renders again, a keeps its preparation.
        std::fs::write(
            root.join("clusters/b/missing.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: x}\n",
        )
        .unwrap();
        let changed = vec![PathBuf::from("clusters/b/missing.yaml")];
        let second = prepare_revision(
            root,
            Some(Earlier {
                units: &first.units,
                inputs: &first.inputs,
                changed: Some(&changed),
            }),
        )
        .unwrap();
        assert_eq!(
            second.rendered,
            vec![(
                unit("clusters/b"),
                Why::Changed("clusters/b/missing.yaml".into())
            )]
        );
        assert!(second.units.iter().all(|(_, p)| p.is_ok()));
        assert_eq!(second.inputs, {
            let mut i = first.inputs.clone();
            i.insert(
                unit("clusters/b"),
                second.inputs[&unit("clusters/b")].clone(),
            );
            i
        });
    }
}
