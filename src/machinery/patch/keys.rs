//! Which lists a strategic merge patch merges instead of replacing, per field path.
//!
//! Kubernetes reads this from the `patchStrategy`/`patchMergeKey` struct tags of the Go API types;
//! [`MergeKeys::builtin`] mirrors those tags for the kinds the local control plane serves, and
//! [`MergeKeys::kubernetes`] for every built-in kind with mergeable lists (workloads and their pod
//! templates included), as kustomize's patches need them.

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
    /// - core `ServiceAccount`, `apps` `Deployment`: as [`MergeKeys::kubernetes`];
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
            // The agent's own deployment: as the Kubernetes types declare them.
            ("", "ServiceAccount") | ("apps", "Deployment") => {
                Self::kubernetes(group, kind).unwrap_or(common)
            }
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

    /// The tables of the Kubernetes API types (`group` is `""` for core), following the
    /// `patchStrategy`/`patchMergeKey` tags of k8s.io/api, or `None` for a group/kind that is not a
    /// built-in Kubernetes type (custom resources have no patch strategies: their lists are replaced).
    ///
    /// Built-in kinds get `metadata.ownerReferences` (by `uid`) and `metadata.finalizers` (a set), and:
    /// - pod specs (`Pod` at `spec`, `PodTemplate` at `template.spec`, `ReplicationController`,
    ///   `Deployment`, `ReplicaSet`, `DaemonSet`, `StatefulSet`, `Job` at `spec.template.spec`, `CronJob`
    ///   at `spec.jobTemplate.spec.template.spec`): `containers`, `initContainers`,
    ///   `ephemeralContainers`, `volumes`, `imagePullSecrets`, `resourceClaims`, `schedulingGates` by
    ///   `name`, `hostAliases` by `ip`, `topologySpreadConstraints` by `topologyKey`; in each container
    ///   `env` by `name`, `ports` by `containerPort`, `volumeMounts` by `mountPath`, `volumeDevices` by
    ///   `devicePath` (`envFrom`, `args`, `command` and the rest are replaced);
    /// - `status.conditions` by `type` on workloads, pods, namespaces, nodes, claims, services,
    ///   disruption budgets and API services; pod `status.podIPs` by `ip`;
    /// - `Service` `spec.ports` by `port`; `ServiceAccount` `secrets` by `name`; `Node`
    ///   `spec.podCIDRs` as a set, `status.addresses` by `type`; admission webhook configurations
    ///   `webhooks` by `name`.
    #[must_use]
    pub fn kubernetes(group: &str, kind: &str) -> Option<Self> {
        if !KUBERNETES_GROUPS.contains(&group) {
            return None;
        }
        let common = Self::new()
            .with_key("metadata.ownerReferences", "uid")
            .with_set("metadata.finalizers");
        let pod_spec = match (group, kind) {
            ("", "Pod") => Some("spec"),
            ("", "PodTemplate") => Some("template.spec"),
            ("", "ReplicationController")
            | ("apps" | "extensions", "Deployment" | "ReplicaSet" | "DaemonSet")
            | ("apps", "StatefulSet")
            | ("batch", "Job") => Some("spec.template.spec"),
            ("batch", "CronJob") => Some("spec.jobTemplate.spec.template.spec"),
            _ => None,
        };
        let keys = match pod_spec {
            Some(at) => common
                .with_pod_spec(at)
                .with_key("status.conditions", "type"),
            None => common,
        };
        Some(match (group, kind) {
            ("", "Pod") => keys.with_key("status.podIPs", "ip"),
            ("", "Service") => keys
                .with_key("spec.ports", "port")
                .with_key("status.conditions", "type"),
            ("", "ServiceAccount") => keys.with_key("secrets", "name"),
            ("", "Node") => keys
                .with_set("spec.podCIDRs")
                .with_key("status.addresses", "type")
                .with_key("status.conditions", "type"),
            ("", "Namespace" | "PersistentVolumeClaim")
            | ("policy", "PodDisruptionBudget")
            | ("apiregistration.k8s.io", "APIService") => {
                keys.with_key("status.conditions", "type")
            }
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
            ) => keys.with_key("webhooks", "name"),
            _ => keys,
        })
    }

    /// The mergeable lists of a pod spec at `at`.
    fn with_pod_spec(mut self, at: &str) -> Self {
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            let c = format!("{at}.{list}");
            self = self
                .with_key(&c, "name")
                .with_key(&format!("{c}.env"), "name")
                .with_key(&format!("{c}.ports"), "containerPort")
                .with_key(&format!("{c}.volumeMounts"), "mountPath")
                .with_key(&format!("{c}.volumeDevices"), "devicePath");
        }
        for list in [
            "volumes",
            "imagePullSecrets",
            "resourceClaims",
            "schedulingGates",
        ] {
            self = self.with_key(&format!("{at}.{list}"), "name");
        }
        self.with_key(&format!("{at}.hostAliases"), "ip")
            .with_key(&format!("{at}.topologySpreadConstraints"), "topologyKey")
    }

    /// The strategy of the list at `path`, if it merges.
    pub(super) fn strategy(&self, path: &str) -> Option<&ListStrategy> {
        self.lists.get(path)
    }

    /// The merge key of the list at `path`, if it merges by key.
    pub fn merge_key(&self, path: &str) -> Option<&str> {
        match self.lists.get(path) {
            Some(ListStrategy::ByKey(key)) => Some(key),
            _ => None,
        }
    }

    /// Whether the list at `path` is a set of primitives.
    pub fn is_set(&self, path: &str) -> bool {
        matches!(self.lists.get(path), Some(ListStrategy::Set))
    }
}

/// The API groups of the Kubernetes built-in types.
const KUBERNETES_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
];

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
    fn kubernetes_tables_cover_pod_templates() {
        let deploy = MergeKeys::kubernetes("apps", "Deployment").unwrap();
        assert_eq!(
            deploy.merge_key("spec.template.spec.containers"),
            Some("name")
        );
        assert_eq!(
            deploy.merge_key("spec.template.spec.initContainers.env"),
            Some("name")
        );
        assert_eq!(
            deploy.merge_key("spec.template.spec.containers.volumeMounts"),
            Some("mountPath")
        );
        assert_eq!(
            deploy.merge_key("spec.template.spec.containers.envFrom"),
            None
        );
        assert!(deploy.is_set("metadata.finalizers"));
        let cron = MergeKeys::kubernetes("batch", "CronJob").unwrap();
        assert_eq!(
            cron.merge_key("spec.jobTemplate.spec.template.spec.volumes"),
            Some("name")
        );
        let pod = MergeKeys::kubernetes("", "Pod").unwrap();
        assert_eq!(
            pod.merge_key("spec.containers.ports"),
            Some("containerPort")
        );
        let hook = MergeKeys::kubernetes(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        )
        .unwrap();
        assert_eq!(hook.merge_key("webhooks"), Some("name"));
        assert_eq!(MergeKeys::kubernetes("example.com", "Widget"), None);
        // The control plane serves Deployments (the agent's own) with the same tables.
        assert_eq!(
            MergeKeys::builtin("apps", "Deployment").merge_key("spec.template.spec.containers"),
            Some("name")
        );
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
