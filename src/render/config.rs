//! The transformer configuration: which fields each built-in transformer touches, for which types.
//!
//! Starts from kustomize v5.5's built-in field specs (see [`super::config_tables`]) and merges what a
//! kustomization adds with `configurations` (files of the same shape) and `crds` (references declared in
//! CRD OpenAPI schemas). Merging follows kustomize: a spec is skipped when one with the same path whose type
//! the new one's selector covers is already there (an error if they disagree on `create`), and every merge
//! re-sorts the lists by type (kustomize's kind order), so a custom spec for one kind replaces a built-in
//! spec for every kind on the same path.

use super::fieldspec::{FieldSpec, list_from_value};
use super::order::LegacyOrder;
use super::resid::GvkSelector;
use serde_json::Value;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, LazyLock, Mutex};

/// References to objects of one type (`gvk`), held in the fields `referrers` designate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameBackReference {
    pub gvk: GvkSelector,
    pub referrers: Vec<FieldSpec>,
}

/// Field specs per transformer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Specs {
    pub name_prefix: Vec<FieldSpec>,
    pub name_suffix: Vec<FieldSpec>,
    pub namespace: Vec<FieldSpec>,
    pub common_labels: Vec<FieldSpec>,
    pub template_labels: Vec<FieldSpec>,
    pub common_annotations: Vec<FieldSpec>,
    pub name_reference: Vec<NameBackReference>,
    pub var_reference: Vec<FieldSpec>,
    pub images: Vec<FieldSpec>,
    pub replicas: Vec<FieldSpec>,
}

/// A transformer configuration: [`Specs`], shared (it reads as its specs, and a change copies them when
/// they are shared). Every kustomization of every render starts from the built-in configuration and merges
/// configurations into each other; sharing makes the copies free, and merges of configurations merged
/// before are answered from a small memo (see [`TransformerConfig::merge`]).
#[derive(Debug, Clone)]
pub struct TransformerConfig(Arc<Specs>);

impl Deref for TransformerConfig {
    type Target = Specs;

    fn deref(&self) -> &Specs {
        &self.0
    }
}

impl DerefMut for TransformerConfig {
    fn deref_mut(&mut self) -> &mut Specs {
        Arc::make_mut(&mut self.0)
    }
}

impl PartialEq for TransformerConfig {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for TransformerConfig {}

impl Default for TransformerConfig {
    /// The empty configuration (one shared instance, so merges into it can be memoised).
    fn default() -> Self {
        static EMPTY: LazyLock<TransformerConfig> =
            LazyLock::new(|| TransformerConfig(Arc::new(Specs::default())));
        EMPTY.clone()
    }
}

impl From<Specs> for TransformerConfig {
    fn from(specs: Specs) -> Self {
        TransformerConfig(Arc::new(specs))
    }
}

/// Recent merges of shared configurations: (into, merged, result). Holding the configurations keeps their
/// addresses from being reused, so pointer equality identifies them.
type MergeMemo = Vec<(TransformerConfig, TransformerConfig, TransformerConfig)>;

/// How many merges [`TransformerConfig::merge`] remembers (a fleet's renders repeat a handful).
const MEMO_ENTRIES: usize = 64;

fn memo() -> &'static Mutex<MergeMemo> {
    static MEMO: LazyLock<Mutex<MergeMemo>> = LazyLock::new(Default::default);
    &MEMO
}

impl TransformerConfig {
    /// kustomize's built-in configuration.
    pub fn builtin() -> Self {
        static BUILTIN: LazyLock<TransformerConfig> = LazyLock::new(|| {
            let mut specs = super::config_tables::builtin();
            specs.sort();
            specs.into()
        });
        BUILTIN.clone()
    }

    /// Reads a `configurations` file (already parsed); `what` names it in errors.
    pub fn from_value(v: &Value) -> Result<Self, String> {
        let map = match v {
            Value::Object(map) => map,
            Value::Null => return Ok(Self::default()),
            _ => return Err("a transformer configuration must be a mapping".into()),
        };
        let mut config = Specs::default();
        for (key, value) in map {
            let specs = || list_from_value(value).map_err(|e| format!("`{key}`: {e}"));
            match key.as_str() {
                "namePrefix" => config.name_prefix = specs()?,
                "nameSuffix" => config.name_suffix = specs()?,
                "namespace" => config.namespace = specs()?,
                "commonLabels" => config.common_labels = specs()?,
                "templateLabels" => config.template_labels = specs()?,
                "commonAnnotations" => config.common_annotations = specs()?,
                "varReference" => config.var_reference = specs()?,
                "images" => config.images = specs()?,
                "replicas" => config.replicas = specs()?,
                "nameReference" => {
                    config.name_reference =
                        name_references(value).map_err(|e| format!("`nameReference`: {e}"))?
                }
                other => return Err(format!("unknown transformer configuration field `{other}`")),
            }
        }
        Ok(config.into())
    }

    /// Merges `other` into this configuration, kustomize's way.
    ///
    /// The result depends only on the two configurations, so a merge of two shared configurations merged
    /// before (the built-in one into a kustomization's, a base's into its overlay's) is looked up, not redone.
    pub fn merge(&mut self, other: &TransformerConfig) -> Result<(), String> {
        // Merging a configuration into itself changes nothing (every spec is already covered).
        if Arc::ptr_eq(&self.0, &other.0) {
            return Ok(());
        }
        let same = |a: &TransformerConfig, b: &TransformerConfig| Arc::ptr_eq(&a.0, &b.0);
        if let Some((_, _, result)) = memo()
            .lock()
            .expect("config memo lock")
            .iter()
            .find(|(into, merged, _)| same(into, self) && same(merged, other))
        {
            *self = result.clone();
            return Ok(());
        }
        let before = self.clone();
        let mut specs = Specs::clone(&self.0);
        specs.merge(other)?;
        // An unchanged configuration stays the same shared one.
        if specs != *before.0 {
            *self = specs.into();
        }
        let mut memo = memo().lock().expect("config memo lock");
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.push((before, other.clone(), self.clone()));
        Ok(())
    }
}

impl Specs {
    /// [`TransformerConfig::merge`], done.
    fn merge(&mut self, other: &Specs) -> Result<(), String> {
        // Merging a configuration into itself changes nothing (every spec is already covered).
        if self == other {
            return Ok(());
        }
        let lists: [(&mut Vec<FieldSpec>, &Vec<FieldSpec>, &str); 9] = [
            (&mut self.name_prefix, &other.name_prefix, "namePrefix"),
            (&mut self.name_suffix, &other.name_suffix, "nameSuffix"),
            (&mut self.namespace, &other.namespace, "namespace"),
            (
                &mut self.common_labels,
                &other.common_labels,
                "commonLabels",
            ),
            (
                &mut self.template_labels,
                &other.template_labels,
                "templateLabels",
            ),
            (
                &mut self.common_annotations,
                &other.common_annotations,
                "commonAnnotations",
            ),
            (
                &mut self.var_reference,
                &other.var_reference,
                "varReference",
            ),
            (&mut self.images, &other.images, "images"),
            (&mut self.replicas, &other.replicas, "replicas"),
        ];
        for (mine, theirs, name) in lists {
            merge_specs(mine, theirs).map_err(|e| format!("{name}: {e}"))?;
        }
        for nbr in &other.name_reference {
            match self.name_reference.iter_mut().find(|n| n.gvk == nbr.gvk) {
                Some(existing) => merge_specs(&mut existing.referrers, &nbr.referrers)
                    .map_err(|e| format!("nameReference: {e}"))?,
                None => self.name_reference.push(nbr.clone()),
            }
        }
        self.sort();
        Ok(())
    }

    fn sort(&mut self) {
        for list in [
            &mut self.name_prefix,
            &mut self.name_suffix,
            &mut self.namespace,
            &mut self.common_labels,
            &mut self.template_labels,
            &mut self.common_annotations,
            &mut self.var_reference,
            &mut self.images,
            &mut self.replicas,
        ] {
            list.sort_by(|a, b| gvk_order(&a.gvk, &b.gvk));
        }
        self.name_reference
            .sort_by(|a, b| gvk_order(&a.gvk, &b.gvk));
    }
}

/// kustomize's `MergeOne`: skip a spec whose path is there for a type the new selector covers.
fn merge_specs(mine: &mut Vec<FieldSpec>, theirs: &[FieldSpec]) -> Result<(), String> {
    for spec in theirs {
        let covered = mine.iter().find(|s| {
            s.path == spec.path
                && (spec.gvk.group.is_empty() || spec.gvk.group == s.gvk.group)
                && (spec.gvk.version.is_empty() || spec.gvk.version == s.gvk.version)
                && (spec.gvk.kind.is_empty() || spec.gvk.kind == s.gvk.kind)
        });
        match covered {
            Some(s) if s.create != spec.create => {
                return Err(format!(
                    "conflicting field specs for path {}: create is both {} and {}",
                    spec.path, s.create, spec.create
                ));
            }
            Some(_) => {}
            None => mine.push(spec.clone()),
        }
    }
    Ok(())
}

/// kustomize's type order for field specs: the legacy kind ranks, then `Kind.version.group` (empty parts
/// spelled `[noKind]`, `[noVer]`, `[noGrp]`, so they sort after named ones).
fn gvk_order(a: &GvkSelector, b: &GvkSelector) -> std::cmp::Ordering {
    let order = LegacyOrder::kustomize();
    let rank = |g: &GvkSelector| {
        if let Some(i) = order.first.iter().position(|k| *k == g.kind) {
            return i as i64 - order.first.len() as i64;
        }
        order
            .last
            .iter()
            .position(|k| *k == g.kind)
            .map_or(0, |i| i as i64 + 1)
    };
    let or = |s: &str, placeholder: &str| {
        if s.is_empty() {
            placeholder.to_string()
        } else {
            s.to_string()
        }
    };
    let text = |g: &GvkSelector| {
        format!(
            "{}.{}.{}",
            or(&g.kind, "[noKind]"),
            or(&g.version, "[noVer]"),
            or(&g.group, "[noGrp]")
        )
    };
    rank(a).cmp(&rank(b)).then_with(|| text(a).cmp(&text(b)))
}

fn name_references(v: &Value) -> Result<Vec<NameBackReference>, String> {
    let Some(items) = v.as_array() else {
        return match v {
            Value::Null => Ok(Vec::new()),
            _ => Err("must be a list".into()),
        };
    };
    items
        .iter()
        .map(|item| {
            let map = item
                .as_object()
                .ok_or_else(|| "each entry must be a mapping".to_string())?;
            let referrers = map
                .get("fieldSpecs")
                .map(list_from_value)
                .transpose()?
                .unwrap_or_default();
            Ok(NameBackReference {
                gvk: GvkSelector::from_map(map),
                referrers,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_custom_spec_for_one_kind_replaces_the_general_one() {
        let mut acc = TransformerConfig::default();
        let mut config = TransformerConfig::builtin();
        let custom = TransformerConfig::from_value(
            &json!({"namePrefix": [{"path": "metadata/name", "kind": "Deployment"}]}),
        )
        .unwrap();
        config.merge(&custom).unwrap();
        acc.merge(&config).unwrap();
        assert_eq!(
            acc.name_prefix,
            vec![FieldSpec::for_kind(
                "",
                "",
                "Deployment",
                "metadata/name",
                false
            )]
        );

        let conflicting = TransformerConfig::from_value(
            &json!({"namePrefix": [{"path": "metadata/name", "kind": "Deployment", "create": true}]}),
        )
        .unwrap();
        let mut config = TransformerConfig::builtin();
        config.merge(&conflicting).unwrap();
        assert!(TransformerConfig::default().merge(&config).is_err());
    }

    #[test]
    fn merges_of_shared_configurations_are_remembered_and_equal_fresh_ones() {
        let builtin = TransformerConfig::builtin();
        let mut first = TransformerConfig::default();
        first.merge(&builtin).unwrap();
        // Usually answered by the memo (unless other tests' renders emptied it meanwhile).
        let mut second = TransformerConfig::default();
        second.merge(&builtin).unwrap();
        let mut fresh = Specs::default();
        fresh.merge(&builtin).unwrap();
        assert_eq!((&*first, &*second), (&fresh, &fresh));

        // A change copies the shared specs: the memo's result stays as it was.
        let custom = TransformerConfig::from_value(
            &json!({"namePrefix": [{"path": "spec/x", "kind": "Widget"}]}),
        )
        .unwrap();
        let mut changed = first.clone();
        changed.merge(&custom).unwrap();
        assert_ne!(changed.name_prefix, first.name_prefix);
        assert_eq!(*first, fresh);
        let mut again = TransformerConfig::default();
        again.merge(&builtin).unwrap();
        assert_eq!(*again, fresh);
    }

    #[test]
    fn name_references_merge_by_target_type() {
        let mut config = TransformerConfig::builtin();
        let before = config.name_reference.len();
        let custom = TransformerConfig::from_value(&json!({"nameReference": [
            {"kind": "Secret", "version": "v1", "fieldSpecs": [{"path": "spec/x", "kind": "Widget"}]},
            {"kind": "Gadget", "fieldSpecs": [{"path": "spec/gadget", "kind": "Widget"}]}
        ]}))
        .unwrap();
        config.merge(&custom).unwrap();
        assert_eq!(config.name_reference.len(), before + 1);
        let secret = config
            .name_reference
            .iter()
            .find(|n| n.gvk.kind == "Secret")
            .unwrap();
        assert!(secret.referrers.iter().any(|s| s.path == "spec/x"));
        assert!(TransformerConfig::from_value(&json!({"bogus": []})).is_err());
    }
}
