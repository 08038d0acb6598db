//! RBAC as kube-apiserver evaluates it, for requests that impersonate a user.
//!
//! The control plane's own callers (the kubeconfig's admin, the agent, the simulator) are all
//! powerful, as `system:masters` is upstream: a request without `Impersonate-User` is never
//! checked. A request carrying it is authorized as that user (and its `Impersonate-Group`s)
//! against the Roles, ClusterRoles and their bindings stored at that moment, and refused with
//! kube-apiserver's 403 wording. The decisions here are pure; [`access`](super::access) reads the
//! stored objects they decide from, [`escalation`](super::escalation) checks a role's writer.

use super::error::{ApiError, StatusDetails};
use http::HeaderMap;
use serde_json::Value;

/// The group every identity but the anonymous one belongs to.
const AUTHENTICATED: &str = "system:authenticated";
/// The group whose members may do anything.
const MASTERS: &str = "system:masters";
const SA_PREFIX: &str = "system:serviceaccount:";

/// Who a request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    /// The identity a request impersonates, `None` for the caller itself. A ServiceAccount's
    /// user name brings its groups when none are given; every impersonated user is
    /// `system:authenticated` too, as upstream adds it.
    pub fn impersonated(headers: &HeaderMap) -> Option<User> {
        let name = headers.get("impersonate-user")?.to_str().ok()?.to_string();
        let mut groups: Vec<String> = headers
            .get_all("impersonate-group")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect();
        if groups.is_empty()
            && let Some(ns) = service_account_namespace(&name)
        {
            groups = vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
            ];
        }
        if name != "system:anonymous" && !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.into());
        }
        Some(User { name, groups })
    }

    fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }

    /// The `(namespace, name)` of a ServiceAccount user.
    fn service_account(&self) -> Option<(&str, &str)> {
        self.name.strip_prefix(SA_PREFIX)?.split_once(':')
    }
}

fn service_account_namespace(user: &str) -> Option<&str> {
    let (ns, name) = user.strip_prefix(SA_PREFIX)?.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some(ns)
}

/// What a request asks, as RBAC sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// `None` for a non-resource request (discovery, `/version`, ...).
    pub resource: Option<ResourceAttributes>,
    /// The URL path of a non-resource request.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceAttributes {
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    /// `""` at the cluster scope.
    pub namespace: String,
    /// `""` when the request names no object.
    pub name: String,
}

impl ResourceAttributes {
    fn resource_and_sub(&self) -> String {
        match &self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.clone(),
        }
    }
}

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl Rule {
    /// A rule of the core group, for tests.
    #[cfg(test)]
    pub(super) fn core(resources: &[&str], verbs: &[&str], names: &[&str]) -> Rule {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        Rule {
            api_groups: vec![String::new()],
            resources: v(resources),
            verbs: v(verbs),
            resource_names: v(names),
            non_resource_urls: Vec::new(),
        }
    }

    /// The rules of a stored Role or ClusterRole.
    pub fn of_role(role: &Value) -> Vec<Rule> {
        let strings =
            |rule: &Value, field: &str| crate::object::strings_at(rule, &format!("/{field}"));
        role.get("rules")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| Rule {
                        api_groups: strings(r, "apiGroups"),
                        resources: strings(r, "resources"),
                        verbs: strings(r, "verbs"),
                        resource_names: strings(r, "resourceNames"),
                        non_resource_urls: strings(r, "nonResourceURLs"),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether this rule grants `attrs`.
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !has(&self.verbs, &attrs.verb) {
            return false;
        }
        match &attrs.resource {
            None => self
                .non_resource_urls
                .iter()
                .any(|u| url_matches(u, &attrs.path)),
            Some(r) => {
                has(&self.api_groups, &r.group)
                    && resource_matches(&self.resources, r)
                    && (self.resource_names.is_empty()
                        || (!r.name.is_empty() && self.resource_names.contains(&r.name)))
            }
        }
    }
}

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

fn resource_matches(resources: &[String], r: &ResourceAttributes) -> bool {
    let combined = r.resource_and_sub();
    resources.iter().any(|x| {
        x == "*"
            || *x == combined
            || (r.subresource.is_some() && x.strip_prefix("*/") == r.subresource.as_deref())
    })
}

pub(super) fn url_matches(rule: &str, path: &str) -> bool {
    rule == "*"
        || rule == path
        || rule
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

/// A binding's subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

impl Subject {
    /// The subjects of a stored RoleBinding or ClusterRoleBinding.
    pub fn of_binding(binding: &Value) -> Vec<Subject> {
        let field = |s: &Value, f: &str| s.get(f).and_then(Value::as_str).unwrap_or("").to_string();
        binding
            .get("subjects")
            .and_then(Value::as_array)
            .map(|subjects| {
                subjects
                    .iter()
                    .map(|s| Subject {
                        kind: field(s, "kind"),
                        name: field(s, "name"),
                        namespace: field(s, "namespace"),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `user` is this subject; a ServiceAccount subject without a namespace takes the
    /// binding's (`binding_namespace`).
    pub fn matches(&self, user: &User, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => self.name == user.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                user.service_account() == Some((ns, self.name.as_str()))
            }
            _ => false,
        }
    }
}

/// Non-resource paths every authenticated identity may GET (the bootstrap ClusterRoles
/// `system:discovery` and `system:public-info-viewer`).
const PUBLIC_URLS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];

/// The rules every impersonated identity holds without a binding.
pub fn implicit_rules(user: &User) -> Vec<Rule> {
    if !user.groups.iter().any(|g| g == AUTHENTICATED) {
        return Vec::new();
    }
    vec![Rule {
        verbs: vec!["get".into()],
        non_resource_urls: PUBLIC_URLS.iter().map(|s| s.to_string()).collect(),
        ..Rule::default()
    }]
}

/// Allows `attrs` when `user` may, else kube-apiserver's 403.
pub fn authorize(user: &User, rules: &[Rule], attrs: &Attributes) -> Result<(), ApiError> {
    if user.is_master() || rules.iter().any(|r| r.allows(attrs)) {
        return Ok(());
    }
    Err(forbidden(user, attrs))
}

/// The 403 kube-apiserver answers a request its authorizer denied.
pub fn forbidden(user: &User, attrs: &Attributes) -> ApiError {
    let who = format!("User \"{}\"", user.name);
    let Some(r) = &attrs.resource else {
        return ApiError::forbidden(format!(
            "forbidden: {who} cannot {} path \"{}\"",
            attrs.verb, attrs.path
        ))
        .with_empty_details();
    };
    let scope = if r.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{}\"", r.namespace)
    };
    let why = format!(
        "{who} cannot {} resource \"{}\" in API group \"{}\" {scope}",
        attrs.verb,
        r.resource_and_sub(),
        r.group
    );
    forbidden_resource(&r.group, &r.resource, &r.name, &why)
}

/// `configmaps "a" is forbidden: why`, or `configmaps is forbidden: why` naming no object, with
/// kube-apiserver's details.
pub(super) fn forbidden_resource(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    if !name.is_empty() {
        return ApiError::forbidden_object(group, resource, name, why);
    }
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let mut e = ApiError::forbidden(format!("{qualified} is forbidden: {why}"));
    e.details = Some(Box::new(StatusDetails {
        group: group.into(),
        kind: resource.into(),
        ..StatusDetails::default()
    }));
    e
}

/// The default ClusterRoles kube-apiserver creates at startup that users bind: `cluster-admin`
/// (everything) and the user-facing `admin`, `edit` and `view`, whose rules upstream's
/// aggregation controller fills (there is none here, as on a bare kube-apiserver: no rules).
pub fn default_cluster_roles() -> Vec<Value> {
    let role = |name: &str, extra_labels: &[(&str, &str)]| {
        let mut labels = serde_json::Map::new();
        labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
        for (k, v) in extra_labels {
            labels.insert((*k).into(), (*v).into());
        }
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
            },
        })
    };
    let aggregated = |name: &str, extra_labels: &[(&str, &str)]| {
        let mut r = role(name, extra_labels);
        r["aggregationRule"] = serde_json::json!({"clusterRoleSelectors": [
            {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{name}"): "true"}}
        ]});
        r
    };
    let mut admin = role("cluster-admin", &[]);
    admin["rules"] = serde_json::json!([
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]);
    vec![
        admin,
        aggregated("admin", &[]),
        aggregated(
            "edit",
            &[("rbac.authorization.k8s.io/aggregate-to-admin", "true")],
        ),
        aggregated(
            "view",
            &[("rbac.authorization.k8s.io/aggregate-to-edit", "true")],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn sa_user() -> User {
        let mut h = HeaderMap::new();
        h.insert(
            "impersonate-user",
            HeaderValue::from_static("system:serviceaccount:ns:bot"),
        );
        User::impersonated(&h).expect("impersonated")
    }

    fn attrs(verb: &str, resource: &str, sub: Option<&str>, ns: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: Default::default(),
                resource: resource.into(),
                subresource: sub.map(str::to_string),
                namespace: ns.into(),
                name: name.into(),
            }),
            path: String::new(),
        }
    }

    fn rule(resources: &[&str], verbs: &[&str], names: &[&str]) -> Rule {
        Rule::core(resources, verbs, names)
    }

    #[test]
    fn no_header_is_the_caller_and_a_service_account_brings_its_groups() {
        assert_eq!(User::impersonated(&HeaderMap::new()), None);
        assert_eq!(
            sa_user().groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        let mut h = HeaderMap::new();
        h.insert("impersonate-user", HeaderValue::from_static("alice"));
        h.append("impersonate-group", HeaderValue::from_static("devs"));
        h.append(
            "impersonate-group",
            HeaderValue::from_static("system:masters"),
        );
        let alice = User::impersonated(&h).expect("impersonated");
        assert_eq!(
            alice.groups,
            ["devs", "system:masters", "system:authenticated"]
        );
        assert!(authorize(&alice, &[], &attrs("delete", "secrets", None, "x", "y")).is_ok());
    }

    #[test]
    fn rules_match_verbs_resources_subresources_and_names() {
        let get_a = rule(&["configmaps"], &["get"], &["a"]);
        assert!(get_a.allows(&attrs("get", "configmaps", None, "ns", "a")));
        assert!(!get_a.allows(&attrs("get", "configmaps", None, "ns", "b")));
        assert!(!get_a.allows(&attrs("list", "configmaps", None, "ns", "")));
        let all = rule(&["widgets"], &["*"], &[]);
        assert!(all.allows(&attrs("patch", "widgets", None, "ns", "w")));
        assert!(!all.allows(&attrs("patch", "widgets", Some("status"), "ns", "w")));
        let scale = rule(&["deployments/scale"], &["patch"], &[]);
        assert!(scale.allows(&attrs("patch", "deployments", Some("scale"), "ns", "d")));
        assert!(!scale.allows(&attrs("get", "deployments", None, "ns", "d")));
        assert!(rule(&["*/status"], &["get"], &[]).allows(&attrs(
            "get",
            "pods",
            Some("status"),
            "",
            "p"
        )));
    }

    #[test]
    fn discovery_is_public_and_other_paths_are_not() {
        let user = sa_user();
        let rules = implicit_rules(&user);
        let path = |p: &str| Attributes {
            verb: "get".into(),
            resource: None,
            path: p.into(),
        };
        assert!(authorize(&user, &rules, &path("/apis/apps/v1")).is_ok());
        let refused = authorize(&user, &rules, &path("/metrics")).expect_err("refused");
        assert_eq!(
            refused.message,
            "forbidden: User \"system:serviceaccount:ns:bot\" cannot get path \"/metrics\""
        );
    }

    #[test]
    fn refusals_are_worded_as_kube_apiserver_words_them() {
        let user = sa_user();
        let named = forbidden(&user, &attrs("get", "configmaps", None, "ns", "a"));
        assert_eq!(
            named.message,
            "configmaps \"a\" is forbidden: User \"system:serviceaccount:ns:bot\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"ns\""
        );
        let cluster = forbidden(&user, &attrs("list", "namespaces", None, "", ""));
        assert_eq!(
            cluster.message,
            "namespaces is forbidden: User \"system:serviceaccount:ns:bot\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
        );
        assert_eq!(
            cluster.to_status()["details"],
            serde_json::json!({"kind": "namespaces"})
        );
        let mut status = attrs("patch", "widgets", Some("status"), "ns", "w");
        if let Some(r) = status.resource.as_mut() {
            r.group = "example.com".into();
        }
        assert!(forbidden(&user, &status).message.starts_with(
            "widgets.example.com \"w\" is forbidden: User \"system:serviceaccount:ns:bot\" cannot patch resource \"widgets/status\" in API group \"example.com\""
        ));
    }
}
