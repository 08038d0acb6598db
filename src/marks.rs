//! The names the agent writes on objects and recognises there: its field managers, its own
//! namespace, and the labels and annotations that mark inventories and the unit owning each object.
//! No unit may declare them (`crate::validate::reserved`); every stage reads them from here.

/// The field manager the agent applies what git says with.
pub const FIELD_MANAGER: &str = "aro-gitops";
/// The field manager of what the embedded reconcilers write (status, the mirrored endpoint).
pub const RECONCILER_MANAGER: &str = "aro-gitops-reconciler";
/// The field manager of the owned-kinds annotation the shared applier records on ARO objects.
/// Separate from the others: server-side apply removes what a manager stops applying, and each
/// of these writes carries only its own fields.
pub const OWNERSHIP_MANAGER: &str = "aro-gitops-ownership";
/// The field manager of the finalizers the embedded reconcilers put on ARO objects (their own, so
/// that the agent's later applies of the object, which do not carry them, never remove them).
pub const FINALIZER_MANAGER: &str = "aro-gitops-finalizer";

/// The agent's own namespace: the inventories live there, and no unit may write into it.
pub const AGENT_NAMESPACE: &str = "aro-gitops-system";
/// Label every inventory carries (value `"true"`).
pub const INVENTORY_LABEL: &str = "aro-gitops.dev/inventory";
/// Annotation holding a unit path: on an inventory, the unit it belongs to; on any other object
/// the agent applied, the unit that owns it.
pub const OWNER_ANNOTATION: &str = "aro-gitops.dev/unit";
/// Label with a short digest of the owning unit's path (labels hold at most 63 characters; the
/// annotation has the path itself): `kubectl get -l aro-gitops.dev/unit-digest=...` lists a unit's
/// objects.
pub const OWNER_LABEL: &str = "aro-gitops.dev/unit-digest";
/// Annotation a unit sets in git on an object to take it over from the unit that owns it live:
/// its value is that unit's path (see `crate::plan::ownership`).
pub const ADOPT_FROM_ANNOTATION: &str = "aro-gitops.dev/adopt-from";
/// Annotation naming the fleet (see `crate::plan::ownership::scope`) that wrote an inventory or
/// applied an object: an agent acts only on its own fleet's.
pub const FLEET_ANNOTATION: &str = "aro-gitops.dev/fleet";
