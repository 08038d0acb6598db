//! kustomize v5.5's built-in field specs, as data: where names, namespaces, labels, annotations, images,
//! replica counts and `$(VAR)` references live in the Kubernetes types it knows.

use super::config::{NameBackReference, Specs};
use super::fieldspec::FieldSpec;
use super::resid::GvkSelector;

fn fs(group: &str, version: &str, kind: &str, path: &str, create: bool) -> FieldSpec {
    FieldSpec::for_kind(group, version, kind, path, create)
}

/// Workload kinds and where their pod spec is, for labels and annotations on pod templates.
const TEMPLATE_KINDS: &[(&str, &str, &str, &str)] = &[
    ("", "v1", "ReplicationController", "spec/template"),
    ("", "", "Deployment", "spec/template"),
    ("", "", "ReplicaSet", "spec/template"),
    ("", "", "DaemonSet", "spec/template"),
    ("apps", "", "StatefulSet", "spec/template"),
    ("batch", "", "Job", "spec/template"),
    ("batch", "", "CronJob", "spec/jobTemplate"),
    ("batch", "", "CronJob", "spec/jobTemplate/spec/template"),
];

fn template_labels() -> Vec<FieldSpec> {
    let mut specs = vec![FieldSpec::new("metadata/labels", true)];
    for (g, v, k, at) in TEMPLATE_KINDS {
        specs.push(fs(g, v, k, &format!("{at}/metadata/labels"), true));
        if *k == "StatefulSet" {
            specs.push(fs(
                g,
                v,
                k,
                "spec/volumeClaimTemplates[]/metadata/labels",
                true,
            ));
        }
    }
    specs
}

fn common_labels() -> Vec<FieldSpec> {
    let mut specs = vec![
        fs("", "v1", "Service", "spec/selector", true),
        fs("", "v1", "ReplicationController", "spec/selector", true),
        fs("", "", "Deployment", "spec/selector/matchLabels", true),
        fs("", "", "ReplicaSet", "spec/selector/matchLabels", true),
        fs("", "", "DaemonSet", "spec/selector/matchLabels", true),
        fs("apps", "", "StatefulSet", "spec/selector/matchLabels", true),
        fs("batch", "", "Job", "spec/selector/matchLabels", false),
        fs(
            "batch",
            "",
            "CronJob",
            "spec/jobTemplate/spec/selector/matchLabels",
            false,
        ),
        fs(
            "policy",
            "",
            "PodDisruptionBudget",
            "spec/selector/matchLabels",
            false,
        ),
        fs(
            "networking.k8s.io",
            "",
            "NetworkPolicy",
            "spec/podSelector/matchLabels",
            false,
        ),
        fs(
            "networking.k8s.io",
            "",
            "NetworkPolicy",
            "spec/ingress/from/podSelector/matchLabels",
            false,
        ),
        fs(
            "networking.k8s.io",
            "",
            "NetworkPolicy",
            "spec/egress/to/podSelector/matchLabels",
            false,
        ),
    ];
    for kind in ["Deployment", "StatefulSet"] {
        for affinity in ["podAffinity", "podAntiAffinity"] {
            let base = format!("spec/template/spec/affinity/{affinity}");
            specs.push(fs(
                "apps",
                "",
                kind,
                &format!("{base}/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels"),
                false,
            ));
            specs.push(fs(
                "apps",
                "",
                kind,
                &format!("{base}/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels"),
                false,
            ));
        }
        specs.push(fs(
            "apps",
            "",
            kind,
            "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels",
            false,
        ));
    }
    specs.extend(template_labels());
    specs
}

fn common_annotations() -> Vec<FieldSpec> {
    let mut specs = vec![FieldSpec::new("metadata/annotations", true)];
    for (g, v, k, at) in TEMPLATE_KINDS {
        // Annotations on StatefulSet templates apply whatever the group.
        let g = if *k == "StatefulSet" { "" } else { g };
        specs.push(fs(g, v, k, &format!("{at}/metadata/annotations"), true));
    }
    specs
}

fn namespace() -> Vec<FieldSpec> {
    vec![
        fs("", "", "Namespace", "metadata/name", true),
        fs(
            "apiregistration.k8s.io",
            "",
            "APIService",
            "spec/service/namespace",
            true,
        ),
        fs(
            "apiextensions.k8s.io",
            "",
            "CustomResourceDefinition",
            "spec/conversion/webhook/clientConfig/service/namespace",
            false,
        ),
    ]
}

/// Kinds holding a pod spec, and where (for references from pods to other objects).
const POD_SPEC_KINDS: &[(&str, &str, &str)] = &[
    ("v1", "Pod", "spec"),
    ("", "PodTemplate", "template/spec"),
    ("", "Deployment", "spec/template/spec"),
    ("", "ReplicaSet", "spec/template/spec"),
    ("", "DaemonSet", "spec/template/spec"),
    ("", "StatefulSet", "spec/template/spec"),
    ("", "Job", "spec/template/spec"),
    ("", "CronJob", "spec/jobTemplate/spec/template/spec"),
];

/// Kinds holding a pod spec for service accounts, claims and priority classes.
const POD_OWNER_KINDS: &[(&str, &str)] = &[
    ("Pod", "spec"),
    ("StatefulSet", "spec/template/spec"),
    ("Deployment", "spec/template/spec"),
    ("ReplicationController", "spec/template/spec"),
    ("CronJob", "spec/jobTemplate/spec/template/spec"),
    ("Job", "spec/template/spec"),
    ("DaemonSet", "spec/template/spec"),
];

fn pod_refs(fields: &[&str]) -> Vec<FieldSpec> {
    let mut specs = Vec::new();
    for (version, kind, at) in POD_SPEC_KINDS {
        for field in fields {
            specs.push(fs("", version, kind, &format!("{at}/{field}"), false));
        }
    }
    specs
}

fn owner_refs(field: &str) -> Vec<FieldSpec> {
    POD_OWNER_KINDS
        .iter()
        .map(|(kind, at)| fs("", "", kind, &format!("{at}/{field}"), false))
        .collect()
}

fn back_ref(
    group: &str,
    version: &str,
    kind: &str,
    referrers: Vec<FieldSpec>,
) -> NameBackReference {
    NameBackReference {
        gvk: GvkSelector::new(group, version, kind),
        referrers,
    }
}

/// A field naming an object of another type: the referring type's group, version and kind, and
/// the field's path.
type Referrer = (&'static str, &'static str, &'static str, &'static str);

const RBAC: &str = "rbac.authorization.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";

/// Where a pod spec names a ConfigMap (in every kind holding one), then the other places.
const CONFIG_MAP_IN_PODS: &[&str] = &[
    "volumes/configMap/name",
    "containers/env/valueFrom/configMapKeyRef/name",
    "initContainers/env/valueFrom/configMapKeyRef/name",
    "containers/envFrom/configMapRef/name",
    "initContainers/envFrom/configMapRef/name",
    "volumes/projected/sources/configMap/name",
];
const CONFIG_MAP_ELSEWHERE: &[Referrer] = &[
    ("", "", "Node", "spec/configSource/configMap"),
    ("", "", "Role", "rules/resourceNames"),
    ("", "", "ClusterRole", "rules/resourceNames"),
    (
        "",
        "",
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
    ),
];

/// Where a pod spec names a Secret, then the other places.
const SECRET_IN_PODS: &[&str] = &[
    "volumes/secret/secretName",
    "containers/env/valueFrom/secretKeyRef/name",
    "initContainers/env/valueFrom/secretKeyRef/name",
    "containers/envFrom/secretRef/name",
    "initContainers/envFrom/secretRef/name",
    "imagePullSecrets/name",
    "volumes/projected/sources/secret/name",
];
const SECRET_ELSEWHERE: &[Referrer] = &[
    ("", "", "Ingress", "spec/tls/secretName"),
    (
        "",
        "",
        "Ingress",
        "metadata/annotations/ingress.kubernetes.io\\/auth-secret",
    ),
    (
        "",
        "",
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
    ),
    (
        "",
        "",
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
    ),
    ("", "", "ServiceAccount", "imagePullSecrets/name"),
    ("", "", "StorageClass", "parameters/secretName"),
    ("", "", "StorageClass", "parameters/adminSecretName"),
    ("", "", "StorageClass", "parameters/userSecretName"),
    ("", "", "StorageClass", "parameters/secretRef"),
    ("", "", "Role", "rules/resourceNames"),
    ("", "", "ClusterRole", "rules/resourceNames"),
    (
        "serving.knative.dev",
        "v1",
        "Service",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    ("", "", "PersistentVolume", "spec/azureFile/secretName"),
];

const SERVICE: &[Referrer] = &[
    ("apps", "", "StatefulSet", "spec/serviceName"),
    (
        "",
        "",
        "Ingress",
        "spec/rules/http/paths/backend/serviceName",
    ),
    ("", "", "Ingress", "spec/backend/serviceName"),
    (
        "",
        "",
        "Ingress",
        "spec/rules/http/paths/backend/service/name",
    ),
    ("", "", "Ingress", "spec/defaultBackend/service/name"),
    (
        "apiregistration.k8s.io",
        "",
        "APIService",
        "spec/service/name",
    ),
    (
        ADMISSION,
        "",
        "ValidatingWebhookConfiguration",
        "webhooks/clientConfig/service",
    ),
    (
        ADMISSION,
        "",
        "MutatingWebhookConfiguration",
        "webhooks/clientConfig/service",
    ),
];

/// Where a ServiceAccount is named besides the pod specs' `serviceAccountName`.
const SERVICE_ACCOUNT_ELSEWHERE: &[Referrer] = &[
    (RBAC, "", "RoleBinding", "subjects"),
    (RBAC, "", "ClusterRoleBinding", "subjects"),
];

const ROLE: &[Referrer] = &[(RBAC, "", "RoleBinding", "roleRef/name")];

const CLUSTER_ROLE: &[Referrer] = &[
    (RBAC, "", "RoleBinding", "roleRef/name"),
    (RBAC, "", "ClusterRoleBinding", "roleRef/name"),
];

const PERSISTENT_VOLUME: &[Referrer] = &[
    ("", "", "PersistentVolumeClaim", "spec/volumeName"),
    ("", "", "ClusterRole", "rules/resourceNames"),
];

const STORAGE_CLASS: &[Referrer] = &[
    ("", "", "PersistentVolume", "spec/storageClassName"),
    ("", "", "PersistentVolumeClaim", "spec/storageClassName"),
    (
        "",
        "",
        "StatefulSet",
        "spec/volumeClaimTemplates/spec/storageClassName",
    ),
];

const INGRESS_CLASS: &[Referrer] = &[("", "", "Ingress", "spec/ingressClassName")];

const VALIDATING_ADMISSION_POLICY: &[Referrer] = &[(
    ADMISSION,
    "",
    "ValidatingAdmissionPolicyBinding",
    "spec/policyName",
)];

/// The referrers' field specs (names are never created).
fn referrers(list: &[Referrer]) -> Vec<FieldSpec> {
    (list.iter())
        .map(|(g, v, k, path)| fs(g, v, k, path, false))
        .collect()
}

fn name_reference() -> Vec<NameBackReference> {
    let hpa = || {
        referrers(&[(
            "",
            "",
            "HorizontalPodAutoscaler",
            "spec/scaleTargetRef/name",
        )])
    };
    let in_pods_and = |in_pods: &[&str], elsewhere: &[Referrer]| {
        let mut specs = pod_refs(in_pods);
        specs.extend(referrers(elsewhere));
        specs
    };
    let mut service_account = referrers(SERVICE_ACCOUNT_ELSEWHERE);
    service_account.extend(owner_refs("serviceAccountName"));
    vec![
        back_ref("", "", "Deployment", hpa()),
        back_ref("", "", "ReplicationController", hpa()),
        back_ref("", "", "ReplicaSet", hpa()),
        back_ref("", "", "StatefulSet", hpa()),
        back_ref(
            "",
            "v1",
            "ConfigMap",
            in_pods_and(CONFIG_MAP_IN_PODS, CONFIG_MAP_ELSEWHERE),
        ),
        back_ref(
            "",
            "v1",
            "Secret",
            in_pods_and(SECRET_IN_PODS, SECRET_ELSEWHERE),
        ),
        back_ref("", "v1", "Service", referrers(SERVICE)),
        back_ref(RBAC, "", "Role", referrers(ROLE)),
        back_ref(RBAC, "", "ClusterRole", referrers(CLUSTER_ROLE)),
        back_ref("", "v1", "ServiceAccount", service_account),
        back_ref(
            "",
            "v1",
            "PersistentVolumeClaim",
            owner_refs("volumes/persistentVolumeClaim/claimName"),
        ),
        back_ref("", "v1", "PersistentVolume", referrers(PERSISTENT_VOLUME)),
        back_ref(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            referrers(STORAGE_CLASS),
        ),
        back_ref(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            owner_refs("priorityClassName"),
        ),
        // kustomize spells this group with a version, so it never matches; kept as it is.
        back_ref(
            "networking.k8s.io/v1",
            "v1",
            "IngressClass",
            referrers(INGRESS_CLASS),
        ),
        back_ref(
            ADMISSION,
            "",
            "ValidatingAdmissionPolicy",
            referrers(VALIDATING_ADMISSION_POLICY),
        ),
    ]
}

fn var_reference() -> Vec<FieldSpec> {
    let container_fields = |at: &str| {
        let mut v = Vec::new();
        for c in ["containers", "initContainers"] {
            for f in ["args", "command", "env/value", "volumeMounts/mountPath"] {
                v.push(format!("{at}/{c}/{f}"));
            }
        }
        v
    };
    let mut specs = Vec::new();
    let mut add = |kind: &str, paths: Vec<String>| {
        for p in paths {
            specs.push(fs("", "", kind, &p, false));
        }
    };
    let mut cron = container_fields("spec/jobTemplate/spec/template/spec");
    cron.push("spec/jobTemplate/spec/template/volumes/nfs/server".into());
    add("CronJob", cron);
    for kind in ["DaemonSet", "Deployment", "Job"] {
        let mut p = container_fields("spec/template/spec");
        p.push("spec/template/spec/volumes/nfs/server".into());
        if kind == "Deployment" {
            p.push("spec/template/metadata/annotations".into());
        }
        add(kind, p);
        if kind == "Deployment" {
            add(
                "Ingress",
                vec![
                    "spec/rules/host".into(),
                    "spec/tls/hosts".into(),
                    "spec/tls/secretName".into(),
                ],
            );
        }
    }
    let mut pod = container_fields("spec");
    pod.push("spec/volumes/nfs/server".into());
    add("Pod", pod);
    let mut rs = container_fields("spec/template/spec");
    rs.push("spec/template/spec/volumes/nfs/server".into());
    add("ReplicaSet", rs);
    add(
        "Service",
        vec!["spec/ports/port".into(), "spec/ports/targetPort".into()],
    );
    let mut sts = container_fields("spec/template/spec");
    sts.push("spec/volumeClaimTemplates/spec/nfs/server".into());
    add("StatefulSet", sts);
    add("PersistentVolume", vec!["spec/nfs/server".into()]);
    specs.push(FieldSpec::new("metadata/labels", false));
    specs.push(FieldSpec::new("metadata/annotations", false));
    specs
}

pub fn builtin() -> Specs {
    let containers = ["spec/containers[]/image", "spec/initContainers[]/image"];
    let mut images: Vec<FieldSpec> = containers.iter().map(|p| FieldSpec::new(p, true)).collect();
    images.extend(
        containers
            .iter()
            .map(|p| FieldSpec::new(&p.replacen("spec/", "spec/template/spec/", 1), true)),
    );
    Specs {
        name_prefix: vec![FieldSpec::new("metadata/name", false)],
        name_suffix: vec![FieldSpec::new("metadata/name", false)],
        namespace: namespace(),
        common_labels: common_labels(),
        template_labels: template_labels(),
        common_annotations: common_annotations(),
        name_reference: name_reference(),
        var_reference: var_reference(),
        images,
        replicas: [
            "Deployment",
            "ReplicationController",
            "ReplicaSet",
            "StatefulSet",
        ]
        .iter()
        .map(|k| fs("", "", k, "spec/replicas", true))
        .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_kustomizes_sizes() {
        let c = builtin();
        assert_eq!(c.common_labels.len(), 32);
        assert_eq!(c.template_labels.len(), 10);
        assert_eq!(c.common_annotations.len(), 9);
        assert_eq!(c.var_reference.len(), 72);
        assert_eq!(c.images.len(), 4);
        let refs: usize = c.name_reference.iter().map(|n| n.referrers.len()).sum();
        assert_eq!(c.name_reference.len(), 16);
        // kustomize lists `spec/tls/secretName` of Ingress twice for Secrets; once is enough.
        assert_eq!(refs, 4 + 52 + 69 + 8 + 1 + 2 + 9 + 7 + 2 + 3 + 7 + 1 + 1);
    }
}
