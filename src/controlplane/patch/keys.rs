//! Which lists a strategic merge patch merges instead of replacing, per field path.
//!
//! Kubernetes reads this from the `patchStrategy`/`patchMergeKey` struct tags of the Go API types;
//! [`MergeKeys::builtin`] mirrors those tags for the kinds the local control plane serves.

use std::collections::BTreeMap;

/// How the list at one field path merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ListStrategy {
    /// A list of objects merged element-wise by the value of this member (`patchMergeKey`).
    ByKey(String),
    /// A list of primitives merged as an unordered set (`patchStrategy: merge`, no key).
    Set,
}

/// Where lists merge by key instead of being replaced.
///
/// Paths are dotted field paths from the object root with list indices left out, e.g. `spec.ports`
/// for the list itself and `spec.ports.targetPort` for a member of its elements. A list whose path
/// is not in the table is replaced by a strategic merge patch, as Kubernetes does for lists without
/// a patch strategy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeKeys {
    lists: BTreeMap<String, ListStrategy>,
}

impl MergeKeys {
    /// An empty table: every list is replaced.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The list at `path` is a list of objects merged by their `key` member.
    #[must_use]
    pub fn with_key(mut self, path: &str, key: &str) -> Self {
        self.lists
            .insert(path.to_string(), ListStrategy::ByKey(key.to_string()));
        self
    }

    /// The list at `path` is a list of primitives merged as a set.
    #[must_use]
    pub fn with_set(mut self, path: &str) -> Self {
        self.lists.insert(path.to_string(), ListStrategy::Set);
        self
    }

    /// The table for a built-in kind the control plane serves (`group` is `""` for core), with
    /// `metadata.ownerReferences` (merged by `uid`) and `metadata.finalizers` (a set) for every kind.
    ///
    /// Mirrors the `patchStrategy`/`patchMergeKey` tags of the k8s.io/api types:
    /// - core `Namespace`: `status.conditions` by `type` (`spec.finalizers` has no strategy: replaced);
    /// - core `Service`: `spec.ports` by `port`, `status.conditions` by `type`; `clusterIPs`,
    ///   `externalIPs`, `ipFamilies`, `loadBalancerSourceRanges`, `status.loadBalancer.ingress` are
    ///   replaced;
    /// - core `Endpoints`: `subsets` (and the lists inside them) are replaced;
    /// - core `Secret`, `ConfigMap`, `Event` (core and `events.k8s.io`), `coordination.k8s.io`
    ///   `Lease`: no mergeable lists besides metadata;
    /// - `apiregistration.k8s.io` `APIService`: `status.conditions` by `type`;
    /// - `apiextensions.k8s.io` `CustomResourceDefinition`: no patch tags on its lists (`versions`,
    ///   `status.conditions`, `storedVersions`, names lists), so they are replaced.
    ///
    /// Any other group/kind (custom resources) gets the metadata entries only.
    #[must_use]
    pub fn builtin(group: &str, kind: &str) -> Self {
        let common = Self::new()
            .with_key("metadata.ownerReferences", "uid")
            .with_set("metadata.finalizers");
        match (group, kind) {
            ("", "Namespace") => common.with_key("status.conditions", "type"),
            ("", "Service") => common
                .with_key("spec.ports", "port")
                .with_key("status.conditions", "type"),
            ("apiregistration.k8s.io", "APIService") => {
                common.with_key("status.conditions", "type")
            }
            _ => common,
        }
    }

    /// The strategy of the list at `path`, if it merges.
    pub(super) fn strategy(&self, path: &str) -> Option<&ListStrategy> {
        self.lists.get(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_records_keys_and_sets() {
        let keys = MergeKeys::new()
            .with_key("spec.items", "name")
            .with_set("spec.tags");
        assert_eq!(
            keys.strategy("spec.items"),
            Some(&ListStrategy::ByKey("name".into()))
        );
        assert_eq!(keys.strategy("spec.tags"), Some(&ListStrategy::Set));
        assert_eq!(keys.strategy("spec.other"), None);
    }

    #[test]
    fn builtin_metadata_entries_for_every_kind() {
        for (group, kind) in [
            ("", "Secret"),
            ("", "ConfigMap"),
            ("", "Endpoints"),
            ("", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("example.com", "Widget"),
        ] {
            let keys = MergeKeys::builtin(group, kind);
            assert_eq!(
                keys.strategy("metadata.ownerReferences"),
                Some(&ListStrategy::ByKey("uid".into())),
                "{group}/{kind}"
            );
            assert_eq!(
                keys.strategy("metadata.finalizers"),
                Some(&ListStrategy::Set)
            );
            assert_eq!(keys.strategy("status.conditions"), None, "{group}/{kind}");
        }
    }

    #[test]
    fn builtin_kind_specific_entries() {
        let svc = MergeKeys::builtin("", "Service");
        assert_eq!(
            svc.strategy("spec.ports"),
            Some(&ListStrategy::ByKey("port".into()))
        );
        assert_eq!(svc.strategy("spec.clusterIPs"), None);
        assert_eq!(
            svc.strategy("status.conditions"),
            Some(&ListStrategy::ByKey("type".into()))
        );
        let ns = MergeKeys::builtin("", "Namespace");
        assert_eq!(
            ns.strategy("status.conditions"),
            Some(&ListStrategy::ByKey("type".into()))
        );
        assert_eq!(ns.strategy("spec.finalizers"), None);
        let api = MergeKeys::builtin("apiregistration.k8s.io", "APIService");
        assert_eq!(
            api.strategy("status.conditions"),
            Some(&ListStrategy::ByKey("type".into()))
        );
        assert_eq!(
            MergeKeys::builtin("", "Endpoints").strategy("subsets"),
            None
        );
        // Service is a core kind: the same kind name in another group is not the core table.
        assert_eq!(
            MergeKeys::builtin("example.com", "Service").strategy("spec.ports"),
            None
        );
    }
}
