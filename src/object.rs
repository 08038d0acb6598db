//! Identity of a Kubernetes object, as every stage of the agent names it.
//!
//! Objects flow through the agent as `serde_json::Value` (key order preserved); an [`ObjectKey`] is
//! how errors, plans and reports name one: `Kind/namespace/name` (or `Kind/name` when cluster-scoped).

pub use crate::sym::Sym;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// The identity of one object: group, version, kind, namespace (if any) and name.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectKey {
    /// API group; empty for the core group. Group, version, kind and namespace are interned
    /// ([`Sym`]): a fleet repeats them in every key.
    pub group: Sym,
    pub version: Sym,
    pub kind: Sym,
    pub namespace: Option<Sym>,
    pub name: String,
}

/// An object's identity across API versions ([`ObjectKey::versionless`]).
pub type VersionlessId = (Sym, Sym, Option<Sym>, String);

/// An object that cannot be identified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectKeyError {
    #[error("object has no apiVersion")]
    MissingApiVersion,
    #[error("object has no kind")]
    MissingKind,
    #[error("{kind} has no metadata.name")]
    MissingName { kind: String },
    #[error("object is not a mapping")]
    NotAnObject,
}

impl ObjectKey {
    /// Reads the identity of `obj` from `apiVersion`, `kind`, `metadata.namespace` and `metadata.name`.
    pub fn from_object(obj: &Value) -> Result<Self, ObjectKeyError> {
        let map = obj.as_object().ok_or(ObjectKeyError::NotAnObject)?;
        let api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(ObjectKeyError::MissingApiVersion)?;
        let kind = map
            .get("kind")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(ObjectKeyError::MissingKind)?;
        let meta = map.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ObjectKeyError::MissingName {
                kind: kind.to_string(),
            })?;
        let namespace = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(Sym::new);
        let (group, version) = split_api_version(api_version);
        Ok(ObjectKey {
            group: Sym::new(group),
            version: Sym::new(version),
            kind: Sym::new(kind),
            namespace,
            name: name.to_string(),
        })
    }

    /// The identity across API versions: group, kind, namespace, name (what ownership and
    /// duplicate checks judge by).
    pub fn versionless(&self) -> VersionlessId {
        (
            self.group.clone(),
            self.kind.clone(),
            self.namespace.clone(),
            self.name.clone(),
        )
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        join_api_version(&self.group, &self.version)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// Splits `apiVersion` into `(group, version)`; the core group is `""`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Joins a group and a version into an `apiVersion`.
pub fn join_api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Where a rendered object came from: the file (relative to the repository root) and the document in it.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Origin {
    pub file: PathBuf,
    /// 0-based index of the YAML document in the file.
    pub document: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.document == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(
                f,
                "{} (document {})",
                self.file.display(),
                self.document + 1
            )
        }
    }
}

/// A rendered object with the place it was defined.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedObject {
    pub object: Value,
    pub origin: Origin,
}

/// The value at the JSON pointer `pointer` (RFC 6901), as `Value::pointer` finds it, without
/// allocating for the tokens that hold no escape (the decisions look up paths in hot loops).
pub fn at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(value);
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').try_fold(value, |target, token| {
        let unescaped;
        let token = if token.contains('~') {
            unescaped = token.replace("~1", "/").replace("~0", "~");
            unescaped.as_str()
        } else {
            token
        };
        match target {
            Value::Object(map) => map.get(token),
            Value::Array(list) => {
                let index_ok = !token.starts_with('+') && (token == "0" || !token.starts_with('0'));
                index_ok
                    .then(|| token.parse::<usize>().ok())
                    .flatten()
                    .and_then(|i| list.get(i))
            }
            _ => None,
        }
    })
}

/// The string at `pointer`, if there is one.
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    at(value, pointer).and_then(Value::as_str)
}

/// The string at `pointer`, if there is one and it is not empty.
pub fn text_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    str_at(value, pointer).filter(|s| !s.is_empty())
}

/// The strings of the array at `pointer`, in order (none when it is absent or not an array;
/// items that are not strings are skipped).
pub fn strings_at(value: &Value, pointer: &str) -> Vec<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The object's `metadata.finalizers`, in order.
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings_at(obj, "/metadata/finalizers")
}

/// `text` as a piece of an object name: lower-case ASCII letters and digits, anything else a `-`,
/// no `-` at either end, at most `max` characters.
pub fn name_slug(text: &str, max: usize) -> String {
    let slug: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    slug.trim_matches('-').chars().take(max).collect()
}

/// Hex SHA-256 of `bytes` (digests in names, labels and the inventory).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `file`, `file:line` or `file:line:column`: a place in a file as people and editors read it.
pub fn file_position(file: &str, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{file}:{l}:{c}"),
        (Some(l), None) => format!("{file}:{l}"),
        _ => file.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn at_finds_what_value_pointer_finds() {
        let v = serde_json::json!({"a": {"b/c": [1, {"d~e": "x"}], "": ""}, "0": "zero"});
        for p in [
            "",
            "/a",
            "/a/b~1c",
            "/a/b~1c/1/d~0e",
            "/a/b~1c/01",
            "/a/b~1c/+1",
            "/a/",
            "/0",
            "/a/b~1c/2",
            "a",
            "/a/b~1c/0/x",
        ] {
            assert_eq!(super::at(&v, p), v.pointer(p), "{p}");
        }
        assert_eq!(super::text_at(&v, "/a/"), None);
        assert_eq!(super::str_at(&v, "/a/"), Some(""));
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn reads_identity_and_displays_kind_namespace_name() {
        let key = ObjectKey::from_object(&json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AROCluster",
            "metadata": {"name": "dev", "namespace": "team-a"}
        }))
        .unwrap();
        assert_eq!(key.group, "infrastructure.cluster.x-k8s.io");
        assert_eq!(key.to_string(), "AROCluster/team-a/dev");
        assert_eq!(key.api_version(), "infrastructure.cluster.x-k8s.io/v1beta2");
    }

    #[test]
    fn core_group_and_missing_fields() {
        let key = ObjectKey::from_object(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        )
        .unwrap();
        assert_eq!(
            (key.group.as_str(), key.to_string().as_str()),
            ("", "Namespace/a")
        );
        assert_eq!(
            ObjectKey::from_object(&json!({"kind": "X"})),
            Err(ObjectKeyError::MissingApiVersion)
        );
        assert_eq!(
            ObjectKey::from_object(&json!({"apiVersion": "v1", "kind": "X", "metadata": {}})),
            Err(ObjectKeyError::MissingName { kind: "X".into() })
        );
    }
}
