//! What each API write does to an object: create, update, patch (four kinds), delete, and the
//! per-kind rules (Secrets, Namespaces, CRDs). Every function works inside one [`Txn`]; the
//! caller commits it (or drops it, for `dryRun=All`).

use super::admission::{
    SERVER_METADATA, check_identity, check_namespace_open, normalise_kind, normalise_update,
    spec_part,
};
use super::defaults;
use super::error::ApiError;
use super::events;
use super::gc;
use super::registry::ResourceType;
use super::scale;
use super::service_ips;
use super::state::Txn;
use super::strategy;
use super::validation::{self, Via, Warnings};
use super::workloads;
use crate::crdschema::FieldValidation;
use crate::machinery::patch::{self, MergeKeys};
use crate::machinery::ssa;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The subresource a request addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Status,
    /// A Deployment's `autoscaling/v1` `Scale` view ([`super::scale`]).
    Scale,
}

impl Subresource {
    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
        }
    }
}

/// Which object (or collection) a request is about.
#[derive(Clone)]
pub struct Target {
    pub rt: Arc<ResourceType>,
    pub version: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<Subresource>,
}

impl Target {
    /// The collection (or, with `name`, the object) of a kind the registry serves at `v1`.
    #[cfg(test)]
    pub(super) fn of(
        reg: &super::registry::Registry,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> Target {
        Target {
            rt: reg.by_resource(group, "v1", plural).expect("a served kind"),
            version: "v1".into(),
            namespace: namespace.map(str::to_string),
            name: None,
            subresource: None,
        }
    }

    pub fn key(&self, name: &str) -> String {
        self.rt
            .storage_key(self.namespace.as_deref().unwrap_or(""), name)
    }

    pub(super) fn api_version(&self) -> String {
        self.rt.api_version(&self.version)
    }

    pub(super) fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(&self.rt.group, &self.rt.plural, name)
    }

    pub(super) fn invalid(&self, name: &str, what: &str) -> ApiError {
        ApiError::invalid(&self.rt.kind, &self.rt.group, name, what)
    }
}

/// Options every write carries.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub field_manager: String,
    pub force: bool,
    /// RFC 3339, seconds precision.
    pub now: String,
    /// What to do with fields a custom resource's schema does not declare.
    pub field_validation: FieldValidation,
    /// Where the write leaves its `Warning`s (unknown fields pruned).
    pub warnings: Warnings,
}

/// The kinds of PATCH, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Apply,
    Merge,
    Json,
    Strategic,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            _ => None,
        }
    }
}

/// Serves a stored object in the version the client asked for, with that version's schema
/// defaults filled in (kube-apiserver defaults what it reads from storage).
pub fn as_version(obj: &Value, rt: &ResourceType, version: &str) -> Value {
    if rt.converted() {
        return events::from_core(obj);
    }
    let mut out = obj.clone();
    out["apiVersion"] = json!(rt.api_version(version));
    if let Some(schema) = rt.validation.get(version) {
        schema.apply_defaults(&mut out);
    }
    out
}

/// The stored object at `key` in the shape of the request's API.
fn stored(txn: &Txn, target: &Target, key: &str) -> Option<Arc<Value>> {
    let obj = txn.get(key)?;
    if target.rt.converted() {
        return Some(Arc::new(events::from_core(&obj)));
    }
    Some(obj)
}

/// Stages `obj`, in the shape of the request's API, in the shape it is stored in.
fn store(txn: &mut Txn, target: &Target, key: &str, obj: Value) -> Arc<Value> {
    let obj = match (target.rt.group.as_str(), target.rt.kind.as_str()) {
        _ if target.rt.converted() => events::to_core(&obj),
        ("", "Event") if !target.rt.custom => events::core_encoded(&obj),
        _ => obj,
    };
    txn.put(key, obj)
}

/// A resourceVersion the request names (`requested`) is a precondition: it must be the stored
/// object's, else 409 Conflict, as upstream.
pub(super) fn check_resource_version(
    target: &Target,
    name: &str,
    requested: Option<&str>,
    live: &Value,
) -> Result<(), ApiError> {
    match requested {
        Some(rv)
            if Some(rv)
                != live
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str) =>
        {
            Err(ApiError::conflict(
                &target.rt.group,
                &target.rt.plural,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ))
        }
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Writes

/// POST.
pub fn create(
    txn: &mut Txn,
    target: &Target,
    mut body: Value,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    let name = check_identity(target, &body, true)?;
    let key = target.key(&name);
    if txn.get(&key).is_some() {
        return Err(ApiError::already_exists(
            &target.rt.group,
            &target.rt.plural,
            &name,
        ));
    }
    check_namespace_open(txn, target, &name)?;
    if target.rt.status_subresource && !is_builtin_with_server_status(target) {
        body.as_object_mut().map(|m| m.remove("status"));
    }
    validation::enforce(
        target,
        &name,
        &mut body,
        None,
        opts.field_validation,
        Via::Body,
        &opts.warnings,
    )?;
    prepare_new(target, &name, &mut body, opts)?;
    let unowned_status = workloads::take_unowned_status(target, &mut body);
    ssa::record_update(
        None,
        &mut body,
        &opts.field_manager,
        &target.rt.schema,
        None,
        &target.api_version(),
        &opts.now,
    );
    if let Some(status) = unowned_status {
        body["status"] = status;
    }
    strategy::prepare_for_create(target, &mut body);
    workloads::admit_create(txn, target, &mut body)?;
    allocate_service(txn, target, &name, &mut body)?;
    warn_of(target, &body, opts);
    Ok(store(txn, target, &key, body))
}

/// Adds the warnings a valid write of `obj` earns to the request's.
fn warn_of(target: &Target, obj: &Value, opts: &WriteOptions) {
    for w in strategy::write_warnings(target, obj) {
        opts.warnings.push(w);
    }
}

fn is_builtin_with_server_status(target: &Target) -> bool {
    !target.rt.custom
        && matches!(
            target.rt.kind.as_str(),
            "Namespace" | "CustomResourceDefinition" | "Node"
        )
}

/// Server-set metadata and kind rules for an object about to be created.
fn prepare_new(
    target: &Target,
    name: &str,
    obj: &mut Value,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    let meta = obj["metadata"]
        .as_object_mut()
        .expect("metadata is an object");
    for k in SERVER_METADATA {
        meta.remove(*k);
    }
    meta.insert("name".into(), json!(name));
    match target.namespace.as_deref().filter(|_| target.rt.namespaced) {
        Some(ns) => meta.insert("namespace".into(), json!(ns)),
        None => meta.remove("namespace"),
    };
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(opts.now));
    if target.rt.has_generation() {
        meta.insert("generation".into(), json!(1));
    }
    obj["apiVersion"] = json!(target.rt.api_version(&target.rt.storage_version));
    default_builtin(target, obj);
    normalise_kind(target, name, obj)
}

/// kube-apiserver's decoder defaults a built-in kind on every write, before field management.
fn default_builtin(target: &Target, obj: &mut Value) {
    if !target.rt.custom {
        defaults::apply_defaults(&target.rt.group, &target.rt.kind, obj);
    }
}

fn is_service(target: &Target) -> bool {
    !target.rt.custom && target.rt.group.is_empty() && target.rt.kind == "Service"
}

/// A new Service's cluster IP and IP families, set after field management as upstream's storage
/// does.
fn allocate_service(
    txn: &Txn,
    target: &Target,
    name: &str,
    obj: &mut Value,
) -> Result<(), ApiError> {
    if !is_service(target) {
        return Ok(());
    }
    let used = txn
        .scan(&target.rt.key_prefix())
        .into_iter()
        .filter_map(|(_, s)| {
            s.pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    let errors = service_ips::allocate(obj, &used, uuid::Uuid::new_v4().as_u128() as u32);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_object("Service", "", name, &errors))
    }
}

/// PUT (of the object or its status).
pub fn update(
    txn: &mut Txn,
    target: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    if target.subresource == Some(Subresource::Scale) {
        return write_scale(txn, target, None, body, opts);
    }
    let name = check_identity(target, &body, false)?;
    let key = target.key(&name);
    let old = stored(txn, target, &key).ok_or_else(|| target.not_found(&name))?;
    let body_rv = body
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if body_rv.is_none() && target.rt.custom {
        // Custom resources allow no unconditional update (upstream's strategy).
        return Err(ApiError::invalid_fields(
            &target.rt.plural,
            &target.rt.group,
            &name,
            vec![(
                "FieldValueInvalid".into(),
                "Invalid value: 0: must be specified for an update".into(),
                "metadata.resourceVersion".into(),
            )],
        ));
    }
    check_resource_version(target, &name, body_rv, &old)?;
    let mut new = scope_to_subresource(target, &old, body);
    validation::enforce(
        target,
        &name,
        &mut new,
        Some(&old),
        opts.field_validation,
        Via::Body,
        &opts.warnings,
    )?;
    finish_write(txn, target, &key, &name, old, new, opts, false)
}

/// PATCH of any kind.
pub fn patch(
    txn: &mut Txn,
    target: &Target,
    patch_type: PatchType,
    body: Value,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    let name = target
        .name
        .clone()
        .ok_or_else(ApiError::method_not_allowed)?;
    if target.subresource == Some(Subresource::Scale) {
        return write_scale(txn, target, Some(patch_type), body, opts);
    }
    let key = target.key(&name);
    let old = stored(txn, target, &key);
    if patch_type == PatchType::Apply {
        return apply(txn, target, &key, &name, old, body, opts);
    }
    let old = old.ok_or_else(|| target.not_found(&name))?;
    let mut new = (*old).clone();
    let result = match patch_type {
        PatchType::Merge => patch::merge_patch(&mut new, &body),
        PatchType::Json => patch::json_patch_with(&mut new, &body, patch::MissingReplace::Add),
        PatchType::Strategic => {
            if target.rt.custom {
                return Err(ApiError::new(
                    415,
                    super::error::Reason::UnsupportedMediaType,
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ));
            }
            patch::strategic_merge_patch(
                &mut new,
                &body,
                &MergeKeys::builtin(&target.rt.group, &target.rt.kind),
            )
        }
        PatchType::Apply => unreachable!("handled above"),
    };
    result?;
    super::patched::check(target, &name, &old, &mut new, patch_type, &body)?;
    // A patch that sets metadata.resourceVersion is a precondition, as upstream.
    let rv = body
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    check_resource_version(target, &name, rv, &old)?;
    check_patched_identity(target, &name, &old, &new)?;
    let mut new = scope_to_subresource(target, &old, new);
    validation::enforce(
        target,
        &name,
        &mut new,
        Some(&old),
        opts.field_validation,
        Via::Patch,
        &opts.warnings,
    )?;
    finish_write(txn, target, &key, &name, old, new, opts, false)
}

/// A PUT or PATCH of a Deployment's `/scale`: its replicas, written into the Deployment.
fn write_scale(
    txn: &mut Txn,
    target: &Target,
    patch_type: Option<PatchType>,
    body: Value,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    let name = target
        .name
        .clone()
        .ok_or_else(ApiError::method_not_allowed)?;
    let key = target.key(&name);
    let old = stored(txn, target, &key).ok_or_else(|| target.not_found(&name))?;
    let new = scale::scaled(target, &name, &old, patch_type, &body)?;
    finish_write(txn, target, &key, &name, old, new, opts, false)
}

fn check_patched_identity(
    target: &Target,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    for (path, what) in [
        ("/metadata/name", "metadata.name"),
        ("/metadata/namespace", "metadata.namespace"),
        ("/kind", "kind"),
    ] {
        if new.pointer(path) != old.pointer(path) {
            return Err(target.invalid(name, &format!("{what}: Invalid value: field is immutable")));
        }
    }
    if !new.is_object() {
        return Err(ApiError::bad_request(
            "the patched object is not a JSON object",
        ));
    }
    Ok(())
}

/// For a status write keep everything but `.status` from `old`; for a main-resource write of a
/// kind with a status subresource keep `old`'s `.status`.
fn scope_to_subresource(target: &Target, old: &Value, mut new: Value) -> Value {
    match target.subresource {
        Some(Subresource::Status) => {
            let mut out = old.clone();
            match new.as_object_mut().and_then(|m| m.remove("status")) {
                Some(s) => out["status"] = s,
                None => {
                    out.as_object_mut().map(|m| m.remove("status"));
                }
            }
            // Field ownership of the status write travels with it (apply computed it already;
            // other writes get it recomputed from `old` later).
            match new.pointer("/metadata/managedFields") {
                Some(m) => out["metadata"]["managedFields"] = m.clone(),
                None => {
                    out["metadata"]
                        .as_object_mut()
                        .map(|m| m.remove("managedFields"));
                }
            }
            out
        }
        None if target.rt.status_subresource => {
            match old.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    new.as_object_mut().map(|m| m.remove("status"));
                }
            }
            new
        }
        None | Some(Subresource::Scale) => new,
    }
}

/// Server-side apply: creates when absent, merges by field ownership otherwise.
fn apply(
    txn: &mut Txn,
    target: &Target,
    key: &str,
    name: &str,
    old: Option<Arc<Value>>,
    body: Value,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    check_identity(target, &body, false)?;
    if opts.field_manager.is_empty() || opts.field_manager == "unknown" {
        return Err(ApiError::bad_request(
            "PATCH with application/apply-patch+yaml requires the fieldManager query parameter",
        ));
    }
    // A resourceVersion in the configuration is a precondition, as upstream.
    if let Some(live) = old.as_deref() {
        let rv = body
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| !rv.is_empty());
        check_resource_version(target, name, rv, live)?;
    }
    let mut applied = body;
    match target.subresource {
        Some(Subresource::Status) => {
            let status = applied.get("status").cloned();
            let mut m = Map::new();
            for k in ["apiVersion", "kind", "metadata"] {
                if let Some(v) = applied.get(k) {
                    m.insert(k.into(), v.clone());
                }
            }
            if let Some(s) = status {
                m.insert("status".into(), s);
            }
            applied = Value::Object(m);
        }
        None if target.rt.status_subresource => {
            applied.as_object_mut().map(|m| m.remove("status"));
        }
        None | Some(Subresource::Scale) => {}
    }
    if let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in SERVER_METADATA {
            meta.remove(*k);
        }
        meta.remove("managedFields");
    }
    if old.is_none() {
        if target.subresource.is_some() {
            return Err(target.not_found(name));
        }
        check_namespace_open(txn, target, name)?;
    }
    validation::prune_applied(target, &mut applied, opts.field_validation, &opts.warnings)?;
    let api_version = target.api_version();
    let req = ssa::ApplyRequest {
        live: old.as_deref(),
        applied: &applied,
        manager: &opts.field_manager,
        force: opts.force,
        schema: &target.rt.schema,
        subresource: target.subresource.map(Subresource::as_str),
        api_version: &api_version,
        now: &opts.now,
    };
    let mut merged = ssa::apply(&req).map_err(|c| {
        ApiError::apply_conflict(
            c.to_string(),
            c.causes()
                .into_iter()
                .map(|(r, m, f)| (r.to_string(), m, f))
                .collect(),
        )
    })?;
    // Unknown fields of the configuration were dealt with above; what is left is validated.
    validation::enforce(
        target,
        name,
        &mut merged,
        old.as_deref(),
        FieldValidation::Ignore,
        Via::Patch,
        &opts.warnings,
    )?;
    match old {
        None => {
            let managed = merged.pointer("/metadata/managedFields").cloned();
            prepare_new(target, name, &mut merged, opts)?;
            if let Some(m) = managed {
                merged["metadata"]["managedFields"] = m;
            }
            strategy::prepare_for_create(target, &mut merged);
            workloads::admit_create(txn, target, &mut merged)?;
            allocate_service(txn, target, name, &mut merged)?;
            warn_of(target, &merged, opts);
            Ok(store(txn, target, key, merged))
        }
        Some(old) => {
            let merged = scope_to_subresource(target, &old, merged);
            finish_write(txn, target, key, name, old, merged, opts, true)
        }
    }
}

/// Common end of every update: keep server metadata, bump generation, record managed fields,
/// skip no-ops, and complete a pending deletion once the last finalizer is gone.
#[allow(clippy::too_many_arguments)]
fn finish_write(
    txn: &mut Txn,
    target: &Target,
    key: &str,
    name: &str,
    old: Arc<Value>,
    mut new: Value,
    opts: &WriteOptions,
    managed_fields_done: bool,
) -> Result<Arc<Value>, ApiError> {
    if !new.get("metadata").is_some_and(Value::is_object) {
        new["metadata"] = json!({});
    }
    {
        let meta = new["metadata"]
            .as_object_mut()
            .expect("metadata is an object");
        for k in SERVER_METADATA.iter().chain(["name", "namespace"].iter()) {
            match old.get("metadata").and_then(|m| m.get(*k)) {
                Some(v) => meta.insert(k.to_string(), v.clone()),
                None => meta.remove(*k),
            };
        }
        // managedFields stay as the write left them: `ssa::record_update` takes a list the write
        // set (or a reset, `[]` or `[{}]`), else the stored one, as kube's field manager does.
    }
    new["apiVersion"] = old["apiVersion"].clone();
    if target.rt.kind == "Namespace" && target.subresource.is_none() {
        // spec.finalizers only change through the finalize subresource upstream.
        new["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
    }
    default_builtin(target, &mut new);
    if is_service(target) && target.subresource.is_none() {
        service_ips::keep_allocated(&old, &mut new);
        service_ips::sync_cluster_ips(&old, &mut new);
        let errors = service_ips::init_ip_families(&mut new, Some(&old));
        if !errors.is_empty() {
            return Err(ApiError::invalid_object("Service", "", name, &errors));
        }
    }
    normalise_update(target, name, &old, &mut new)?;
    warn_of(target, &new, opts);
    if target.rt.has_generation() && spec_part(&new) != spec_part(&old) {
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        new["metadata"]["generation"] = json!(generation);
    }
    if !managed_fields_done {
        ssa::record_update(
            Some(&old),
            &mut new,
            &opts.field_manager,
            &target.rt.schema,
            target.subresource.map(Subresource::as_str),
            &target.api_version(),
            &opts.now,
        );
    }
    strategy::prepare_for_update(target, &old, &mut new);
    if new == *old {
        return Ok(old);
    }
    let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
    let finalizers_left = new
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if deleting && !finalizers_left {
        return gc::remove_finalized(txn, key, new).ok_or_else(|| target.not_found(name));
    }
    Ok(store(txn, target, key, new))
}
