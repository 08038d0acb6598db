//! TEMPORARY stand-in until the SSA module lands (lead's compile scaffold; replaced wholesale).
use serde_json::Value;
#[derive(Debug)]
pub enum Schema { Any }
impl Schema {
    pub fn from_openapi_v3(_: &Value) -> Schema { Schema::Any }
    pub fn builtin(_: &str, _: &str) -> Schema { Schema::Any }
    pub fn any_object() -> Schema { Schema::Any }
}
pub struct ApplyRequest<'a> {
    pub live: Option<&'a Value>, pub applied: &'a Value, pub manager: &'a str, pub force: bool,
    pub schema: &'a Schema, pub subresource: Option<&'a str>, pub api_version: &'a str, pub now: &'a str,
}
#[derive(Debug, thiserror::Error)]
#[error("conflict")]
pub struct ApplyConflicts;
pub fn apply(req: &ApplyRequest) -> Result<Value, ApplyConflicts> {
    let mut out = req.live.cloned().unwrap_or(Value::Null);
    crate::controlplane::patch::merge_patch(&mut out, req.applied).ok();
    if req.live.is_none() { out = req.applied.clone(); }
    Ok(out)
}
pub fn record_update(_: Option<&Value>, _: &mut Value, _: &str, _: &Schema, _: Option<&str>, _: &str, _: &str) {}
