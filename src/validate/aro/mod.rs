//! ARO checks before apply: what Azure or Cluster API would refuse minutes into provisioning,
//! caught when a unit is validated, so a broken cluster applies nothing. Pure functions over the
//! unit's rendered objects (and the ASO resources the ARO kinds embed):
//!
//! - [`locations`]: an ASO resource's `spec.location` is an Azure location where ARO HCP is
//!   offered (a table the project keeps), with the nearest name suggested for a typo;
//! - [`networks`]: CIDRs parse (prefix length in range, host bits zero); the cluster's machine,
//!   service and pod networks do not overlap; a subnet lies inside its VNet and no two subnets of
//!   one VNet overlap;
//! - [`versions`]: the OpenShift version's format and channel group, and no node pool newer than
//!   its cluster;
//! - [`references`]: the managed resource group is not the cluster's own; ASO references
//!   (identities, subnet, NSG) name a resource of the right kind that the unit declares; Cluster
//!   API references (infrastructureRef, controlPlaneRef, a MachinePool's clusterName and
//!   infrastructureRef) name objects of the unit;
//! - [`vm_sizes`]: a node pool's VM size, zone and architecture inside the AutoNodePolicy that
//!   counts for it (the same decision the reconciler takes, [`crate::validate::node_policy`]).
//!
//! Every message starts with the JSON pointer of the field (on the top-level object, through
//! `/spec/resources/N` for an embedded resource), says what is wrong and the rule in words.

mod locations;
mod networks;
mod references;
mod versions;
mod vm_sizes;

pub use locations::{ARO_HCP_LOCATIONS, nearest_location};
pub use networks::Cidr;

use serde_json::Value;

/// One problem: the index of the top-level object it is reported on, and the message (starting
/// with the field's JSON pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub object: usize,
    pub message: String,
}

/// A declared object or embedded resource, as the checks read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item<'a> {
    /// Index of the top-level object (the owner, for an embedded resource).
    pub object: usize,
    /// `/spec/resources/N` for an embedded resource, empty for a top-level object.
    pub at: Option<usize>,
    /// The namespace it lives in (an embedded resource: its owner's).
    pub namespace: &'a str,
    pub group: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub value: &'a Value,
}

impl Item<'_> {
    /// The pointer prefix of the item's fields on its top-level object.
    pub fn prefix(&self) -> String {
        self.at
            .map(|i| format!("/spec/resources/{i}"))
            .unwrap_or_default()
    }

    /// A problem on the field at `pointer` (relative to the item).
    pub fn problem(&self, pointer: &str, what: String) -> Problem {
        Problem {
            object: self.object,
            message: format!("{}{pointer}: {what}", self.prefix()),
        }
    }

    pub fn str(&self, pointer: &str) -> Option<&str> {
        self.value.pointer(pointer).and_then(Value::as_str)
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }
}

/// The unit's objects and embedded resources.
pub(crate) struct Declared<'a> {
    pub items: Vec<Item<'a>>,
}

impl<'a> Declared<'a> {
    pub fn of(objects: &[&'a Value]) -> Self {
        let mut items = Vec::new();
        for (object, value) in objects.iter().copied().enumerate() {
            let Some(item) = item(object, None, None, value) else {
                continue;
            };
            items.push(item);
            for (index, entry) in super::rules::embedded(value) {
                items.extend(self::item(object, Some(index), Some(item.namespace), entry));
            }
        }
        Declared { items }
    }

    /// The item of `group`/`kind` named `name` in `namespace`, if declared.
    pub fn find(&self, namespace: &str, group: &str, kind: &str, name: &str) -> Option<&Item<'a>> {
        self.items
            .iter()
            .find(|i| i.namespace == namespace && i.is(group, kind) && i.name == name)
    }

    /// The items of `group`/`kind`.
    pub fn of_kind<'s>(
        &'s self,
        group: &'s str,
        kind: &'s str,
    ) -> impl Iterator<Item = &'s Item<'a>> + 's {
        self.items.iter().filter(move |i| i.is(group, kind))
    }
}

fn item<'a>(
    object: usize,
    at: Option<usize>,
    namespace: Option<&'a str>,
    value: &'a Value,
) -> Option<Item<'a>> {
    let api_version = value.get("apiVersion")?.as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    Some(Item {
        object,
        at,
        namespace: namespace
            .or_else(|| value.pointer("/metadata/namespace").and_then(Value::as_str))
            .unwrap_or(""),
        group,
        kind: value.get("kind")?.as_str()?,
        name: value.pointer("/metadata/name")?.as_str()?,
        value,
    })
}

/// Every ARO problem of a unit's rendered objects, in the order of the checks.
pub fn problems(objects: &[&Value]) -> Vec<Problem> {
    let declared = Declared::of(objects);
    let mut out = locations::problems(&declared);
    out.extend(networks::problems(&declared));
    out.extend(versions::problems(&declared));
    out.extend(references::problems(&declared));
    out.extend(vm_sizes::problems(&declared, objects));
    out
}

#[cfg(test)]
pub(crate) mod testutil;
