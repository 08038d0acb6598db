//! Where the control plane authorizes an impersonated request (see [`authz`](super::authz)): the
//! request's attributes parsed from its path as kube-apiserver parses them (before routing, so a
//! refused request is 403 even for a missing object or resource), the rules the stored bindings
//! give the user, and the checks a write makes once it knows what it writes: a write that creates
//! its object needs `create`, and a role or binding may grant only what its writer holds.

use super::authz::{self, Attributes, ResourceAttributes, Rule, Subject, User};
use super::error::ApiError;
use super::escalation;
use super::http::{Query, flag};
use super::objects::Target;
use super::served::rbac_verb;
use super::txn::Txn;
use http::Method;
use serde_json::Value;
use std::sync::Arc;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The attributes of a request to `path`, as kube-apiserver's request-info parsing sees them:
/// `/api/v1/...` and `/apis/GROUP/VERSION/...` with a resource are resource requests, anything
/// else (discovery included) a non-resource request.
pub fn attributes(method: &Method, path: &str, query: &Query) -> Option<Attributes> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let non_resource = || Attributes {
        verb: method.as_str().to_lowercase(),
        resource: None,
        path: path.to_string(),
    };
    let (group, rest) = match segs.as_slice() {
        ["api", _, rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", g, _, rest @ ..] if !rest.is_empty() => (*g, rest),
        _ => return Some(non_resource()),
    };
    let (namespace, parts): (&str, &[&str]) = match rest {
        ["namespaces", ns, more @ ..]
            if !more.is_empty() && !matches!(more[0], "status" | "finalize") =>
        {
            (ns, more)
        }
        ["namespaces", ns, ..] => (ns, rest),
        _ => ("", rest),
    };
    let (resource, name, subresource) = match parts {
        [r] => (*r, "", None),
        [r, n] => (*r, *n, None),
        [r, n, s, ..] => (*r, *n, Some(s.to_string())),
        [] => return Some(non_resource()),
    };
    let watch = flag(query, "watch");
    let verb = rbac_verb(method, !name.is_empty(), watch)?;
    Some(Attributes {
        verb: verb.to_string(),
        resource: Some(ResourceAttributes {
            group: group.to_string(),
            resource: resource.to_string(),
            subresource,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }),
        path: path.to_string(),
    })
}

/// The rules `user` holds in `namespace` (`""`: at the cluster scope), from the stored bindings.
pub fn rules_for(txn: &Txn, user: &User, namespace: &str) -> Vec<Rule> {
    let mut rules = authz::implicit_rules(user);
    let role_rules = |kind: &str, ns: &str, name: &str| -> Vec<Rule> {
        let key = format!("{RBAC_GROUP}/{kind}/{ns}/{name}");
        txn.get(&key).map(|r| Rule::of_role(&r)).unwrap_or_default()
    };
    let bound = |binding: &Value, ns: &str| {
        Subject::of_binding(binding)
            .iter()
            .any(|s| s.matches(user, ns))
    };
    let role_ref = |binding: &Value| {
        let field = |f: &str| {
            binding
                .pointer(&format!("/roleRef/{f}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (field("kind"), field("name"))
    };
    for (_, binding) in txn.scan(&format!("{RBAC_GROUP}/ClusterRoleBinding/")) {
        if bound(&binding, "") {
            let (_, name) = role_ref(&binding);
            rules.extend(role_rules("ClusterRole", "", &name));
        }
    }
    if !namespace.is_empty() {
        for (_, binding) in txn.scan(&format!("{RBAC_GROUP}/RoleBinding/{namespace}/")) {
            if bound(&binding, namespace) {
                let (kind, name) = role_ref(&binding);
                rules.extend(match kind.as_str() {
                    "ClusterRole" => role_rules("ClusterRole", "", &name),
                    _ => role_rules("Role", namespace, &name),
                });
            }
        }
    }
    rules
}

/// Refuses a request the impersonated `user` may not make, before it is routed.
pub fn check_request(
    txn: &Txn,
    user: &User,
    method: &Method,
    path: &str,
    query: &Query,
) -> Result<(), ApiError> {
    let Some(attrs) = attributes(method, path, query) else {
        return Ok(());
    };
    let namespace = attrs
        .resource
        .as_ref()
        .map(|r| r.namespace.as_str())
        .unwrap_or("");
    authz::authorize(user, &rules_for(txn, user, namespace), &attrs)
}

/// The checks of a write by `user` once its result `obj` is known: `create` when the write
/// created the object (an apply or a PUT of a missing object), and no escalation by a role or
/// binding.
pub fn check_write(
    txn: &Txn,
    user: &User,
    target: &Target,
    method: &Method,
    created: bool,
    obj: &Arc<Value>,
) -> Result<(), ApiError> {
    let namespace = target.namespace.clone().unwrap_or_default();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let held = rules_for(txn, user, &namespace);
    if created && *method != Method::POST && target.subresource.is_none() {
        let attrs = Attributes {
            verb: "create".into(),
            resource: Some(ResourceAttributes {
                group: target.rt.group.clone(),
                resource: target.rt.plural.clone(),
                subresource: None,
                namespace: namespace.clone(),
                name: name.clone(),
            }),
            path: String::new(),
        };
        authz::authorize(user, &held, &attrs)?;
    }
    if target.rt.group != RBAC_GROUP || target.subresource.is_some() {
        return Ok(());
    }
    let granted = match target.rt.kind.as_str() {
        "Role" | "ClusterRole" => Rule::of_role(obj),
        "RoleBinding" | "ClusterRoleBinding" => {
            // Binding a role needs `bind` on it, or holding all it grants.
            let role_kind = obj
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role_name = obj
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let bind = Attributes {
                verb: "bind".into(),
                resource: Some(ResourceAttributes {
                    group: RBAC_GROUP.into(),
                    resource: format!("{}s", role_kind.to_lowercase()),
                    subresource: None,
                    namespace: namespace.clone(),
                    name: role_name.into(),
                }),
                path: String::new(),
            };
            if authz::authorize(user, &held, &bind).is_ok() {
                return Ok(());
            }
            let role_ns = if role_kind == "ClusterRole" {
                ""
            } else {
                namespace.as_str()
            };
            txn.get(&format!("{RBAC_GROUP}/{role_kind}/{role_ns}/{role_name}"))
                .map(|r| Rule::of_role(&r))
                .unwrap_or_default()
        }
        _ => return Ok(()),
    };
    let escalate = Attributes {
        verb: "escalate".into(),
        resource: Some(ResourceAttributes {
            group: RBAC_GROUP.into(),
            resource: target.rt.plural.clone(),
            subresource: None,
            namespace: namespace.clone(),
            name: name.clone(),
        }),
        path: String::new(),
    };
    if authz::authorize(user, &held, &escalate).is_ok() {
        return Ok(());
    }
    let missing = escalation::not_held(&granted, &held);
    if missing.is_empty() {
        return Ok(());
    }
    Err(escalation::escalation(
        user,
        RBAC_GROUP,
        &target.rt.plural,
        &name,
        &missing,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::http::parse_query;

    fn resource(method: Method, path: &str, query: &str) -> (String, ResourceAttributes) {
        let a = attributes(&method, path, &parse_query(query)).expect("a verb");
        (a.verb, a.resource.expect("a resource request"))
    }

    #[test]
    fn paths_parse_as_kube_apiserver_parses_them() {
        let (verb, r) = resource(
            Method::GET,
            "/api/v1/namespaces/ns/configmaps",
            "watch=true",
        );
        assert_eq!(
            (verb.as_str(), r.namespace.as_str(), r.name.as_str()),
            ("watch", "ns", "")
        );
        let (verb, r) = resource(Method::GET, "/api/v1/namespaces/ns", "");
        assert_eq!(
            (
                verb.as_str(),
                r.resource.as_str(),
                r.namespace.as_str(),
                r.name.as_str()
            ),
            ("get", "namespaces", "ns", "ns")
        );
        let (verb, r) = resource(Method::GET, "/api/v1/namespaces", "");
        assert_eq!((verb.as_str(), r.namespace.as_str()), ("list", ""));
        let (verb, r) = resource(
            Method::PATCH,
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            "",
        );
        assert_eq!(
            (verb.as_str(), r.group.as_str(), r.subresource.as_deref()),
            ("patch", "apps", Some("scale"))
        );
        let (verb, _) = resource(Method::DELETE, "/api/v1/namespaces/ns/configmaps", "");
        assert_eq!(verb, "deletecollection");
        for discovery in ["/api", "/api/v1", "/apis/apps/v1", "/version"] {
            let a = attributes(&Method::GET, discovery, &Query::new()).expect("a verb");
            assert_eq!((a.verb.as_str(), a.resource), ("get", None));
        }
    }
}
