//! Apply conflicts, and how the API server words them.
//!
//! Single: `Apply failed with 1 conflict: conflict with "mgr" using v1: .data.key`.
//! Several: `Apply failed with 2 conflicts: conflicts with "mgr" using v1:\n- .spec.a\n- .spec.b`,
//! grouped by owner. Owners print as `"name"`, plus ` with subresource "status"` and, for Update
//! entries, ` using <apiVersion>`.

use super::managed::Operation;
use super::path::FieldPath;
use crate::machinery::field::go_quote;
use std::fmt;

/// The managedFields entry that owns a conflicting field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConflictOwner {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub subresource: Option<String>,
}

impl fmt::Display for ConflictOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&go_quote(&self.manager))?;
        if let Some(s) = &self.subresource {
            write!(f, " with subresource {}", go_quote(s))?;
        }
        if self.operation == Operation::Update {
            write!(f, " using {}", self.api_version)?;
        }
        Ok(())
    }
}

/// Fields the applier tried to set to a value other than the one another manager owns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.message())]
pub struct ApplyConflicts {
    /// Owning manager's name and the conflicting field, grouped by owner.
    pub conflicts: Vec<(String, FieldPath)>,
    /// The owning entry of each conflict (same order and length as `conflicts`).
    pub owners: Vec<ConflictOwner>,
}

impl ApplyConflicts {
    /// From each owner's conflicting paths; owners are sorted as the API server sorts them.
    pub(crate) fn new(mut groups: Vec<(ConflictOwner, Vec<FieldPath>)>) -> ApplyConflicts {
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        let mut conflicts = Vec::new();
        let mut owners = Vec::new();
        for (owner, paths) in groups {
            for p in paths {
                conflicts.push((owner.manager.clone(), p));
                owners.push(owner.clone());
            }
        }
        ApplyConflicts { conflicts, owners }
    }

    /// The Status message the API server returns with the 409.
    pub fn message(&self) -> String {
        if let ([(_, path)], [owner]) = (self.conflicts.as_slice(), self.owners.as_slice()) {
            return format!("Apply failed with 1 conflict: conflict with {owner}: {path}");
        }
        let mut lines: Vec<String> = Vec::new();
        let mut current: Option<&ConflictOwner> = None;
        for ((_, path), owner) in self.conflicts.iter().zip(&self.owners) {
            if current != Some(owner) {
                lines.push(format!("conflicts with {owner}:"));
                current = Some(owner);
            }
            lines.push(format!("- {path}"));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.conflicts.len(),
            lines.join("\n")
        )
    }

    /// The Status `details.causes`: (`type`, `message`, `field`) per conflict, type
    /// `FieldManagerConflict`, message `conflict with "mgr" using v1`, field `.data.key`.
    pub fn causes(&self) -> Vec<(&'static str, String, String)> {
        self.conflicts
            .iter()
            .zip(&self.owners)
            .map(|((_, path), owner)| {
                (
                    "FieldManagerConflict",
                    format!("conflict with {owner}"),
                    path.to_string(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::ssa::path::PathElement;

    fn path(fields: &[&str]) -> FieldPath {
        FieldPath(
            fields
                .iter()
                .map(|f| PathElement::Field(f.to_string()))
                .collect(),
        )
    }

    fn owner(m: &str, op: Operation, sub: Option<&str>) -> ConflictOwner {
        ConflictOwner {
            manager: m.into(),
            operation: op,
            api_version: "v1".into(),
            subresource: sub.map(str::to_string),
        }
    }

    #[test]
    fn one_conflict() {
        let c = ApplyConflicts::new(vec![(
            owner("kubectl-client-side-apply", Operation::Update, None),
            vec![path(&["data", "key"])],
        )]);
        assert_eq!(
            c.to_string(),
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key"#
        );
        assert_eq!(
            c.causes(),
            vec![(
                "FieldManagerConflict",
                r#"conflict with "kubectl-client-side-apply" using v1"#.to_string(),
                ".data.key".to_string()
            )]
        );
    }

    #[test]
    fn several_conflicts_grouped_by_sorted_owner() {
        let c = ApplyConflicts::new(vec![
            (
                owner("zeta", Operation::Apply, Some("status")),
                vec![path(&["status", "x"])],
            ),
            (
                owner("mgr", Operation::Update, None),
                vec![path(&["spec", "a"]), path(&["spec", "b"])],
            ),
        ]);
        assert_eq!(
            c.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"mgr\" using v1:\n- .spec.a\n- .spec.b\n\
             conflicts with \"zeta\" with subresource \"status\":\n- .status.x"
        );
        assert_eq!(c.conflicts[0].0, "mgr");
        assert_eq!(c.owners.len(), 3);
    }
}
