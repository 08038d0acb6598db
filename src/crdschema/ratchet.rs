//! Validation ratcheting (CRDValidationRatcheting, on by default since Kubernetes 1.30): on an
//! update, a schema violation at a field whose value the update did not change is not enforced.

use serde_json::Value;

/// Whether the value at kube field path `field` (`spec.items[0].name`) is the same in both objects
/// (both absent counts as the same).
pub(super) fn unchanged(old: &Value, new: &Value, field: &str) -> bool {
    lookup(old, field) == lookup(new, field)
}

fn lookup<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    let mut current = v;
    for part in field.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            current = current.get(key)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = index.trim_end_matches(']').parse().ok()?;
            current = current.get(i)?;
        }
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_paths_are_looked_up_and_compared() {
        let old = json!({"spec": {"items": [{"name": "a"}, {"name": "b"}], "n": 1}});
        let new = json!({"spec": {"items": [{"name": "a"}, {"name": "c"}], "n": 1}});
        assert_eq!(lookup(&old, "spec.items[1].name"), Some(&json!("b")));
        assert_eq!(lookup(&old, "spec.items[5].name"), None);
        assert!(unchanged(&old, &new, "spec.items[0].name"));
        assert!(!unchanged(&old, &new, "spec.items[1].name"));
        assert!(unchanged(&old, &new, "spec.missing"));
        assert!(unchanged(&old, &new, "spec.n"));
    }
}
