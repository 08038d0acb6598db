//! Deletion safety (`policies.md` §2), as pure decisions: what leaving git does to each object the
//! agent applied before. [`deletions`] is the one decision a pass and a plan both take.
//!
//! - Nothing is pruned when the render failed or the source is unreachable ([`hold`]): a unit in
//!   that state keeps every object.
//! - A unit that renders no objects while its inventory has entries fails ([`EMPTY_RENDER`]) and
//!   deletes nothing, unless the user opts in: `--allow-empty-render`, or
//!   [`ALLOW_EMPTY_RENDER_ANNOTATION`]`=true` on the unit's inventory. A unit that left git (its
//!   folder removed) is not an empty render: its inventory is pruned under the rules below.
//! - An object whose deletion destroys an Azure resource (a `*.azure.com` kind under policy `manage`)
//!   is deleted only with consent: the `--allow-deletion` flag, [`ALLOW_DELETION_ANNOTATION`] on the
//!   object, or the same annotation on the unit (its CAPI Cluster in git, or its live inventory).
//!   Otherwise the deletion is blocked and the plan and report say why.
//! - `detach-on-delete` deletes the Kubernetes object and keeps the Azure resource: no consent needed.
//! - `skip` is never deleted.
//! - A plan that would delete more than `max_share` of a unit's objects needs unit consent (the flag
//!   or the unit annotation), whatever the objects are.

use super::policy::{Policy, declared};
use crate::object::ObjectKey;
use serde_json::Value;

/// Annotation that allows deletions: `"true"` on an object allows deleting it; on the unit's CAPI
/// Cluster (in git) or on its inventory (live), it allows the unit's deletions and lifts the share
/// guard.
pub const ALLOW_DELETION_ANNOTATION: &str = "aro-gitops.dev/allow-deletion";

/// Annotation on a unit's inventory (`"true"`) that lets the unit render no objects and prune all
/// it has (under the other rules); `--allow-empty-render` does the same for every unit.
pub const ALLOW_EMPTY_RENDER_ANNOTATION: &str = "aro-gitops.dev/allow-empty-render";

/// The words of a unit's failure when it rendered nothing but has objects.
pub const EMPTY_RENDER: &str = "refusing to prune: the unit rendered no objects";

/// The default share of a unit's objects one plan may delete without unit consent.
pub const DEFAULT_MAX_DELETE_SHARE: f64 = 0.5;

/// Why a unit prunes nothing at all this time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    RenderFailed,
    RenderEmpty,
    SourceUnreachable(String),
}

impl std::fmt::Display for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hold::RenderFailed => {
                f.write_str("the render failed; nothing is deleted until it succeeds")
            }
            Hold::RenderEmpty => write!(
                f,
                "{EMPTY_RENDER}, but it has objects live; nothing is deleted. If the unit is meant to be empty, run with --allow-empty-render or annotate its inventory with {ALLOW_EMPTY_RENDER_ANNOTATION}=true"
            ),
            Hold::SourceUnreachable(why) => write!(
                f,
                "the source is unreachable ({why}); nothing is deleted until it is reachable again"
            ),
        }
    }
}

impl Hold {
    /// Whether the hold fails the unit (an empty or failed render), rather than only waiting (an
    /// unreachable source).
    pub fn fails_unit(&self) -> bool {
        !matches!(self, Hold::SourceUnreachable(_))
    }

    /// Why each object is not deleted: the hold in short when it is the unit's error already.
    pub fn object_reason(&self) -> String {
        match self {
            Hold::RenderEmpty => EMPTY_RENDER.to_string(),
            h => h.to_string(),
        }
    }
}

/// Whether a unit may prune: `rendered` is how many objects the render gave (None: it failed),
/// `stale_source` why the source could not be fetched, when it could not.
pub fn hold(rendered: Option<usize>, stale_source: Option<&str>) -> Option<Hold> {
    if let Some(why) = stale_source {
        return Some(Hold::SourceUnreachable(why.to_string()));
    }
    match rendered {
        None => Some(Hold::RenderFailed),
        Some(0) => Some(Hold::RenderEmpty),
        Some(_) => None,
    }
}

/// One object the agent applied before that is no longer rendered.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    pub key: &'a ObjectKey,
    /// The live object; `None` when it is already gone.
    pub live: Option<&'a Value>,
    /// The policy the agent recorded when it last applied the object.
    pub recorded: Policy,
}

/// Who allowed deletions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Consent {
    /// `--allow-deletion`.
    pub flag: bool,
    /// [`ALLOW_DELETION_ANNOTATION`] on the unit's CAPI Cluster or on its inventory.
    pub unit: bool,
}

/// What happens to one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Delete it; `detach`: write `detach-on-delete` on it first (when not there yet) so the Azure
    /// resource is kept.
    Delete { detach: bool },
    /// Not deleted; the reason says why and how to allow it.
    Blocked { reason: String },
    /// Left alone for good (policy `skip`): the agent forgets it.
    Keep { reason: String },
    /// Already gone: the agent forgets it.
    Gone,
}

fn allowed_by_annotation(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(ALLOW_DELETION_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

/// Whether `obj` (a CAPI Cluster in git, or an inventory) carries the consent annotation.
pub fn consents(obj: &Value) -> bool {
    allowed_by_annotation(obj)
}

/// Whether `obj` (an inventory) carries [`ALLOW_EMPTY_RENDER_ANNOTATION`]`=true`.
pub fn allows_empty_render(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(ALLOW_EMPTY_RENDER_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

/// The policy in force on a live object: its annotation when it has one, else what was recorded.
fn effective(c: &Candidate) -> Policy {
    match c.live {
        Some(live)
            if live
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(crate::validate::RECONCILE_POLICY))
                .is_some() =>
        {
            declared(live)
        }
        _ => c.recorded,
    }
}

/// Deleting it deletes Azure resources: an ASO kind, or an ARO kind (garbage collection takes the
/// ASO resources it embeds with it).
fn is_azure(key: &ObjectKey) -> bool {
    crate::kinds::is_aso_group(&key.group) || crate::kinds::is_aro_kind(&key.group, &key.kind)
}

/// What one unit's pruning is decided on, in a pass and in a plan alike.
#[derive(Debug, Clone)]
pub struct Pruning<'a> {
    /// How many objects the unit rendered; `None`: the unit left git (its folder is gone).
    pub rendered: Option<usize>,
    /// Why the source could not be fetched, when it could not.
    pub stale_source: Option<&'a str>,
    /// The objects it applied before that it no longer renders.
    pub candidates: &'a [Candidate<'a>],
    /// How many objects the unit has under the agent (the share guard's denominator).
    pub total: usize,
    pub consent: Consent,
    pub max_share: f64,
    /// `--allow-empty-render`, or [`ALLOW_EMPTY_RENDER_ANNOTATION`] on the unit's inventory.
    pub allow_empty_render: bool,
}

/// The deletions of one unit: a verdict per candidate, or why nothing at all is pruned this time.
/// The one decision of a pass ([`crate::agent`]'s prune) and of a plan, so both always agree.
pub fn deletions(p: &Pruning) -> Result<Vec<Verdict>, Hold> {
    if p.candidates.is_empty() {
        return Ok(vec![]);
    }
    may_prune(p.rendered, p.stale_source, p.allow_empty_render)?;
    Ok(decide(p.candidates, p.total, p.consent, p.max_share))
}

/// The part of [`deletions`] that needs no live object: whether a unit with candidates may prune
/// at all (a pass asks first, to read nothing it will not delete).
pub fn may_prune(
    rendered: Option<usize>,
    stale_source: Option<&str>,
    allow_empty_render: bool,
) -> Result<(), Hold> {
    // A unit that left git rendered nothing on purpose: only the source can hold it.
    match hold(Some(rendered.unwrap_or(1)), stale_source) {
        Some(Hold::RenderEmpty) if allow_empty_render => Ok(()),
        Some(h) => Err(h),
        None => Ok(()),
    }
}

/// Decides every candidate of one unit. `total` is how many objects the unit has live under the
/// agent (the share guard's denominator).
pub fn decide(
    candidates: &[Candidate],
    total: usize,
    consent: Consent,
    max_share: f64,
) -> Vec<Verdict> {
    let how_to =
        format!("allow with --allow-deletion or the annotation {ALLOW_DELETION_ANNOTATION}=true");
    let mut verdicts: Vec<Verdict> = candidates
        .iter()
        .map(|c| {
            let Some(live) = c.live else {
                return Verdict::Gone;
            };
            match effective(c) {
                Policy::Skip => Verdict::Keep {
                    reason: "reconcile-policy skip: aro-gitops never deletes it".into(),
                },
                Policy::DetachOnDelete => Verdict::Delete { detach: true },
                Policy::Manage if is_azure(c.key) => {
                    if consent.flag || consent.unit || allowed_by_annotation(live) {
                        Verdict::Delete { detach: false }
                    } else {
                        Verdict::Blocked {
                            reason: format!(
                                "deleting it deletes the Azure resource (reconcile-policy manage); {how_to} on the object, its cluster or its inventory, or set reconcile-policy detach-on-delete to keep the Azure resource"
                            ),
                        }
                    }
                }
                Policy::Manage => Verdict::Delete { detach: false },
            }
        })
        .collect();
    let deleting = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Delete { .. } | Verdict::Blocked { .. }))
        .count();
    let total = total.max(deleting).max(1);
    let share = deleting as f64 / total as f64;
    if share > max_share && !(consent.flag || consent.unit) {
        let reason = format!(
            "this plan would delete {deleting} of the cluster's {total} objects ({:.0}%), more than the {:.0}% one plan may delete; {how_to} on the cluster or its inventory",
            share * 100.0,
            max_share * 100.0
        );
        for v in verdicts.iter_mut() {
            if matches!(v, Verdict::Delete { .. }) {
                *v = Verdict::Blocked {
                    reason: reason.clone(),
                };
            }
        }
    }
    verdicts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(group: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    fn live(annotations: Value) -> Value {
        json!({"metadata": {"name": "x", "annotations": annotations}})
    }

    const RG: &str = "resources.azure.com";

    #[test]
    fn failed_empty_or_unreachable_renders_hold_every_deletion() {
        assert_eq!(hold(None, None), Some(Hold::RenderFailed));
        assert_eq!(hold(Some(0), None), Some(Hold::RenderEmpty));
        assert!(matches!(
            hold(Some(5), Some("connection refused")),
            Some(Hold::SourceUnreachable(_))
        ));
        assert_eq!(hold(Some(5), None), None);
    }

    #[test]
    fn an_empty_render_with_objects_fails_unless_allowed() {
        let k = key("", "ConfigMap", "cm");
        let l = live(json!({}));
        let c = [Candidate {
            key: &k,
            live: Some(&l),
            recorded: Policy::Manage,
        }];
        let flag = Consent {
            flag: true,
            unit: false,
        };
        let p = Pruning {
            rendered: Some(0),
            stale_source: None,
            candidates: &c,
            total: 1,
            consent: flag,
            max_share: 0.5,
            allow_empty_render: false,
        };
        let held = deletions(&p).unwrap_err();
        assert_eq!(held, Hold::RenderEmpty);
        assert!(held.fails_unit());
        assert!(held.to_string().starts_with(EMPTY_RENDER), "{held}");
        let allowed = Pruning {
            allow_empty_render: true,
            ..p.clone()
        };
        assert_eq!(
            deletions(&allowed),
            Ok(vec![Verdict::Delete { detach: false }])
        );
        // Allowed but without consent: the share guard still holds it.
        let unconsented = Pruning {
            consent: Consent::default(),
            ..allowed.clone()
        };
        assert!(matches!(
            deletions(&unconsented).unwrap()[0],
            Verdict::Blocked { .. }
        ));
        // Nothing to prune: nothing to refuse. A unit that left git is not an empty render.
        assert_eq!(
            deletions(&Pruning {
                candidates: &[],
                ..p.clone()
            }),
            Ok(vec![])
        );
        assert_eq!(
            deletions(&Pruning {
                rendered: None,
                ..p.clone()
            }),
            Ok(vec![Verdict::Delete { detach: false }])
        );
        // An unreachable source holds everything, without failing the unit.
        let stale = deletions(&Pruning {
            stale_source: Some("connection refused"),
            ..allowed
        })
        .unwrap_err();
        assert!(!stale.fails_unit());
    }

    #[test]
    fn azure_deletions_need_consent() {
        let k = key(RG, "ResourceGroup", "rg");
        let l = live(json!({}));
        let c = [Candidate {
            key: &k,
            live: Some(&l),
            recorded: Policy::Manage,
        }];
        let v = decide(&c, 10, Consent::default(), 0.5);
        assert!(
            matches!(&v[0], Verdict::Blocked { reason } if reason.contains("deletes the Azure resource")),
            "{v:?}"
        );
        let v = decide(
            &c,
            10,
            Consent {
                flag: true,
                unit: false,
            },
            0.5,
        );
        assert_eq!(v[0], Verdict::Delete { detach: false });
        let allowed = live(json!({ALLOW_DELETION_ANNOTATION: "true"}));
        let c = [Candidate {
            key: &k,
            live: Some(&allowed),
            recorded: Policy::Manage,
        }];
        assert_eq!(
            decide(&c, 10, Consent::default(), 0.5)[0],
            Verdict::Delete { detach: false }
        );
    }

    #[test]
    fn plain_kubernetes_objects_detach_and_skip() {
        let cm = key("", "ConfigMap", "cm");
        let rg = key(RG, "ResourceGroup", "rg");
        let kept = key(RG, "ResourceGroup", "kept");
        let l = live(json!({}));
        let skip = live(json!({"serviceoperator.azure.com/reconcile-policy": "skip"}));
        let c = [
            Candidate {
                key: &cm,
                live: Some(&l),
                recorded: Policy::Manage,
            },
            Candidate {
                key: &rg,
                live: Some(&l),
                recorded: Policy::DetachOnDelete,
            },
            Candidate {
                key: &kept,
                live: Some(&skip),
                recorded: Policy::Manage,
            },
            Candidate {
                key: &cm,
                live: None,
                recorded: Policy::Manage,
            },
        ];
        let v = decide(&c, 10, Consent::default(), 0.5);
        assert_eq!(v[0], Verdict::Delete { detach: false });
        assert_eq!(v[1], Verdict::Delete { detach: true });
        assert!(matches!(v[2], Verdict::Keep { .. }));
        assert_eq!(v[3], Verdict::Gone);
    }

    #[test]
    fn the_share_guard_blocks_large_deletions_without_unit_consent() {
        let keys: Vec<ObjectKey> = (0..6)
            .map(|i| key("", "ConfigMap", &format!("c{i}")))
            .collect();
        let l = live(json!({}));
        let c: Vec<Candidate> = keys
            .iter()
            .map(|k| Candidate {
                key: k,
                live: Some(&l),
                recorded: Policy::Manage,
            })
            .collect();
        let v = decide(&c, 10, Consent::default(), 0.5);
        assert!(
            v.iter().all(|v| matches!(v, Verdict::Blocked { reason } if reason.contains("6 of the cluster's 10 objects (60%)"))),
            "{v:?}"
        );
        let v = decide(
            &c,
            10,
            Consent {
                flag: false,
                unit: true,
            },
            0.5,
        );
        assert!(v.iter().all(|v| *v == Verdict::Delete { detach: false }));
        // Under the share: allowed.
        assert!(
            decide(&c[..2], 10, Consent::default(), 0.5)
                .iter()
                .all(|v| *v == Verdict::Delete { detach: false })
        );
    }
}
