//! The shapes of the built-in kinds a deployment of the agent itself is made of (`deploy/base`):
//! core ServiceAccount, apps Deployment (with its pod template) and the RBAC kinds, as the
//! upstream Go types declare them. Fields not named here are of unknown shape (maps granular,
//! lists atomic).

use super::{Schema, strukt};
use super::{
    atomic_list, atomic_scalars, conditions, map_list, object, object_meta, object_reference,
    scalars,
};

/// The shape of `group`/`kind` when it is one of these kinds.
pub(super) fn schema(group: &str, kind: &str) -> Option<Schema> {
    Some(match (group, kind) {
        ("", "ServiceAccount") => object(vec![
            ("secrets", map_list(&["name"], object_reference())),
            // An atomic list on a ServiceAccount (unlike a pod's).
            ("imagePullSecrets", atomic_list()),
            ("automountServiceAccountToken", Schema::Scalar),
        ]),
        ("apps", "Deployment") => object(vec![
            ("spec", deployment_spec()),
            (
                "status",
                strukt(vec![
                    ("observedGeneration", Schema::Scalar),
                    ("replicas", Schema::Scalar),
                    ("updatedReplicas", Schema::Scalar),
                    ("readyReplicas", Schema::Scalar),
                    ("availableReplicas", Schema::Scalar),
                    ("unavailableReplicas", Schema::Scalar),
                    ("terminatingReplicas", Schema::Scalar),
                    ("collisionCount", Schema::Scalar),
                    ("conditions", conditions(&["lastUpdateTime"])),
                ]),
            ),
        ]),
        ("rbac.authorization.k8s.io", "ClusterRole") => object(vec![
            ("rules", atomic_list()),
            (
                "aggregationRule",
                strukt(vec![("clusterRoleSelectors", atomic_list())]),
            ),
        ]),
        ("rbac.authorization.k8s.io", "Role") => object(vec![("rules", atomic_list())]),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => object(vec![
            ("subjects", atomic_list()),
            ("roleRef", atomic_scalars(&["apiGroup", "kind", "name"])),
        ]),
        _ => return None,
    })
}

fn deployment_spec() -> Schema {
    strukt(vec![
        ("replicas", Schema::Scalar),
        ("selector", label_selector()),
        (
            "template",
            strukt(vec![("metadata", object_meta()), ("spec", pod_spec())]),
        ),
        (
            "strategy",
            strukt(vec![
                ("type", Schema::Scalar),
                ("rollingUpdate", scalars(&["maxUnavailable", "maxSurge"])),
            ]),
        ),
        ("minReadySeconds", Schema::Scalar),
        ("revisionHistoryLimit", Schema::Scalar),
        ("paused", Schema::Scalar),
        ("progressDeadlineSeconds", Schema::Scalar),
    ])
}

/// A LabelSelector: atomic (`+structType=atomic`).
pub(super) fn label_selector() -> Schema {
    Schema::Map {
        fields: Default::default(),
        additional: Some(Box::new(Schema::Any)),
        atomic: true,
    }
}

pub(super) fn pod_spec() -> Schema {
    strukt(vec![
        ("containers", map_list(&["name"], container())),
        ("initContainers", map_list(&["name"], container())),
        ("volumes", map_list(&["name"], Schema::Any)),
        ("imagePullSecrets", map_list(&["name"], scalars(&["name"]))),
        ("tolerations", atomic_list()),
        ("serviceAccountName", Schema::Scalar),
        ("automountServiceAccountToken", Schema::Scalar),
        ("terminationGracePeriodSeconds", Schema::Scalar),
    ])
}

fn container() -> Schema {
    strukt(vec![
        ("name", Schema::Scalar),
        ("image", Schema::Scalar),
        ("imagePullPolicy", Schema::Scalar),
        ("command", atomic_list()),
        ("args", atomic_list()),
        (
            "ports",
            map_list(
                &["containerPort", "protocol"],
                scalars(&["name", "containerPort", "protocol", "hostPort", "hostIP"]),
            ),
        ),
        ("env", map_list(&["name"], Schema::Any)),
        ("envFrom", atomic_list()),
        ("volumeMounts", map_list(&["mountPath"], Schema::Any)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_the_agents_deployment_has_a_shape() {
        for (group, kind) in [
            ("", "ServiceAccount"),
            ("apps", "Deployment"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
        ] {
            assert!(schema(group, kind).is_some(), "{group}/{kind}");
        }
        assert!(schema("", "ConfigMap").is_none());
    }

    #[test]
    fn containers_merge_by_name_and_ports_by_port_and_protocol() {
        let s = schema("apps", "Deployment").unwrap();
        let containers = s
            .field("spec")
            .0
            .field("template")
            .0
            .field("spec")
            .0
            .field("containers")
            .0;
        assert!(matches!(
            containers,
            Schema::List { list_type: super::super::ListType::Map(k), .. } if k == &vec!["name".to_string()]
        ));
        let ports = containers.items().field("ports").0;
        assert!(matches!(
            ports,
            Schema::List { list_type: super::super::ListType::Map(k), .. }
                if k == &vec!["containerPort".to_string(), "protocol".to_string()]
        ));
    }
}
