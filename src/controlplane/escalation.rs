//! The privilege-escalation check of a write of a Role, ClusterRole or binding by an impersonated
//! user, as kube-apiserver makes it: a role may grant only what its writer holds (unless the
//! writer may `escalate`, or `bind` the referenced role); the refusal lists what is not held.

use super::authz::{Rule, User, forbidden_resource, url_matches};
use super::error::ApiError;
/// The rules a Role or ClusterRole grants that `held` does not cover, each broken down to one
/// group, resource (or URL), verb and name, then compacted as kube-apiserver lists them.
pub fn not_held(granted: &[Rule], held: &[Rule]) -> Vec<Rule> {
    let mut missing = Vec::new();
    for rule in granted {
        for atom in break_down(rule) {
            if !held.iter().any(|h| covers(h, &atom)) {
                missing.push(atom);
            }
        }
    }
    compact(missing)
}

fn break_down(rule: &Rule) -> Vec<Rule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for verb in &rule.verbs {
        for url in &rule.non_resource_urls {
            out.push(Rule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Rule::default()
            });
        }
        for group in &rule.api_groups {
            for resource in &rule.resources {
                let base = Rule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: one(verb),
                    ..Rule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(Rule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    out
}

/// Whether `held` grants all of the atomic rule `atom`.
fn covers(held: &Rule, atom: &Rule) -> bool {
    let within = |held: &[String], want: &[String]| {
        held.iter().any(|h| h == "*") || want.iter().all(|w| held.contains(w))
    };
    if !within(&held.verbs, &atom.verbs) {
        return false;
    }
    if !atom.non_resource_urls.is_empty() {
        return atom.non_resource_urls.iter().all(|u| {
            held.non_resource_urls
                .iter()
                .any(|h| h == u || url_matches(h, u))
        });
    }
    within(&held.api_groups, &atom.api_groups)
        && atom.resources.iter().all(|res| {
            held.resources.iter().any(|h| {
                h == "*"
                    || h == res
                    || res
                        .split_once('/')
                        .is_some_and(|(_, sub)| h.strip_prefix("*/") == Some(sub))
            })
        })
        && (held.resource_names.is_empty() || within(&held.resource_names, &atom.resource_names))
}

/// Merges the verbs of rules naming the same single group and resource, without names.
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for rule in rules {
        let simple = |r: &Rule| {
            r.api_groups.len() == 1
                && r.resources.len() == 1
                && r.resource_names.is_empty()
                && r.non_resource_urls.is_empty()
        };
        if simple(&rule)
            && let Some(same) = out.iter_mut().find(|o| {
                simple(o) && o.api_groups == rule.api_groups && o.resources == rule.resources
            })
        {
            for verb in rule.verbs {
                if !same.verbs.contains(&verb) {
                    same.verbs.push(verb);
                }
            }
            continue;
        }
        out.push(rule);
    }
    out.sort_by_key(describe);
    out
}

/// A rule as kube-apiserver prints it in an escalation refusal.
pub fn describe(rule: &Rule) -> String {
    let list = |items: &[String]| {
        items
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut parts = Vec::new();
    if !rule.api_groups.is_empty() {
        parts.push(format!("APIGroups:[{}]", list(&rule.api_groups)));
    }
    if !rule.resources.is_empty() {
        parts.push(format!("Resources:[{}]", list(&rule.resources)));
    }
    if !rule.resource_names.is_empty() {
        parts.push(format!("ResourceNames:[{}]", list(&rule.resource_names)));
    }
    if !rule.non_resource_urls.is_empty() {
        parts.push(format!(
            "NonResourceURLs:[{}]",
            list(&rule.non_resource_urls)
        ));
    }
    parts.push(format!("Verbs:[{}]", list(&rule.verbs)));
    format!("{{{}}}", parts.join(", "))
}

/// The 403 kube-apiserver answers a write of a role (or binding) granting `missing`.
pub fn escalation(
    user: &User,
    group: &str,
    resource: &str,
    name: &str,
    missing: &[Rule],
) -> ApiError {
    let groups = user
        .groups
        .iter()
        .map(|g| format!("{g:?}"))
        .collect::<Vec<_>>()
        .join(" ");
    let rules = missing.iter().map(describe).collect::<Vec<_>>().join("\n");
    let why = format!(
        "user \"{}\" (groups=[{groups}]) is attempting to grant RBAC permissions not currently held:\n{rules}",
        user.name
    );
    forbidden_resource(group, resource, name, &why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(resources: &[&str], verbs: &[&str], names: &[&str]) -> Rule {
        Rule::core(resources, verbs, names)
    }

    fn sa_user() -> User {
        User {
            name: "system:serviceaccount:ns:bot".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:ns".into(),
                "system:authenticated".into(),
            ],
        }
    }

    #[test]
    fn an_escalation_lists_the_rules_not_held_compacted() {
        let held = [rule(&["configmaps"], &["get"], &[])];
        let granted = [rule(&["configmaps", "secrets"], &["get", "list"], &[])];
        let missing = not_held(&granted, &held);
        let described: Vec<String> = missing.iter().map(describe).collect();
        assert_eq!(
            described,
            [
                "{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"list\"]}",
                "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}",
            ]
        );
        let err = escalation(
            &sa_user(),
            "rbac.authorization.k8s.io",
            "roles",
            "more",
            &missing,
        );
        assert!(err.message.starts_with("roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"system:serviceaccount:ns:bot\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:ns\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups"));
        assert!(not_held(&granted, &[rule(&["*"], &["*"], &[])]).is_empty());
    }
}
