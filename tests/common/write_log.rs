//! The writes an API server answered, as the fault proxy ([`super::fault_proxy`]) saw them: each
//! named by the object's namespace, kind, subresource and patch kind, and whether it left its
//! object as it was (refused, or answered with the resourceVersion the object had before).

use std::collections::BTreeMap;

/// One write the upstream server answered with success (dry runs left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// The object's path, its subresource kept (a create: the collection's path and the name the
    /// server answered with).
    pub path: String,
    /// A PATCH's kind, from its content type: `apply`, `merge`, `json` or `strategic`.
    pub patch: Option<&'static str>,
    /// The `fieldManager` the write names (who writes, and for what).
    pub manager: Option<String>,
    /// The HTTP status the server answered.
    pub status: u16,
    /// The server left the object as it was: it refused the write, or answered an update with
    /// the resourceVersion the object had just before (read by the proxy; a write by another
    /// client in between makes an update look like a change, never the reverse).
    pub unchanged: bool,
}

/// The writes forwarded and answered, in order.
#[derive(Default)]
pub struct WriteLog {
    pub writes: Vec<Write>,
}

impl WriteLog {
    /// Records what the server answered (`status`, `body`) to `method path` (`patch`: the
    /// PATCH's kind), the object at `before` (its resourceVersion read just before an update).
    pub fn answered(
        &mut self,
        request: (&str, &str, Option<&str>, Option<&'static str>),
        before: Option<String>,
        status: u16,
        body: &[u8],
    ) {
        let (method, path, query, patch) = request;
        let manager = query.and_then(|q| {
            q.split('&')
                .find_map(|p| p.strip_prefix("fieldManager="))
                .map(str::to_string)
        });
        let object = serde_json::from_slice::<serde_json::Value>(body).unwrap_or_default();
        let after = object["metadata"]["resourceVersion"].as_str();
        let path = match (method, object["metadata"]["name"].as_str()) {
            ("POST", Some(name))
                if object["kind"] != "Status" && !path.ends_with(&format!("/{name}")) =>
            {
                format!("{path}/{name}")
            }
            _ => path.to_string(),
        };
        let refused = !(200..300).contains(&status);
        self.writes.push(Write {
            method: method.to_string(),
            path,
            patch,
            manager,
            status,
            unchanged: refused || before.is_some() && before.as_deref() == after,
        });
    }
}

/// A PATCH's kind from its `Content-Type`.
pub fn patch_kind(content_type: &str) -> Option<&'static str> {
    match content_type.split(';').next().unwrap_or_default().trim() {
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some("apply"),
        "application/merge-patch+json" => Some("merge"),
        "application/json-patch+json" => Some("json"),
        "application/strategic-merge-patch+json" => Some("strategic"),
        _ => None,
    }
}

/// What a write did, in a table's words:
/// `PATCH (apply, aro-gitops) aroclusters.infrastructure.cluster.x-k8s.io/status`.
pub fn what(w: &Write) -> String {
    let (_, resource, sub) = place(&w.path);
    let patch = match (w.patch, &w.manager) {
        (Some(p), Some(m)) => format!(" ({p}, {m})"),
        (Some(p), None) => format!(" ({p})"),
        (None, Some(m)) => format!(" ({m})"),
        (None, None) => String::new(),
    };
    let sub = sub.map(|s| format!("/{s}")).unwrap_or_default();
    let refused = if (200..300).contains(&w.status) {
        String::new()
    } else {
        format!(" -> {}", w.status)
    };
    format!("{}{patch} {resource}{sub}{refused}", w.method)
}

/// The namespace a write's object is in (`-` for a cluster-scoped one), its resource
/// (`plural.group`, or the plural of the core group) and subresource, from its path.
pub fn place(path: &str) -> (String, String, Option<String>) {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match segs.as_slice() {
        ["api", _, rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => return ("-".into(), path.into(), None),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (ns.to_string(), rest),
        _ => ("-".to_string(), rest),
    };
    let plural = rest.first().copied().unwrap_or_default();
    let resource = if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    };
    (namespace, resource, rest.get(2).map(|s| s.to_string()))
}

/// The writes counted by namespace, then by [`what`]: one line each, `NAMESPACE  COUNT  WHAT`.
pub fn table(writes: &[Write]) -> String {
    let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for w in writes {
        *counts.entry((place(&w.path).0, what(w))).or_default() += 1;
    }
    counts
        .iter()
        .map(|((ns, what), n)| format!("{ns:<20} {n:>4}  {what}\n"))
        .collect()
}
