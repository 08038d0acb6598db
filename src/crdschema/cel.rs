//! `x-kubernetes-validations`: CEL rules of a structural schema, compiled when the CRD is read and
//! evaluated on create and update as kube-apiserver evaluates them.
//!
//! A rule sees its node's value as `self` (and the stored value as `oldSelf` on an update, for a
//! transition rule, when the old value can be found: by key in objects and in
//! `x-kubernetes-list-type: map` lists). A rule that fails gives a field error at its node (or at
//! `fieldPath` below it) of its `reason`, worded by `messageExpression`, `message`, or `failed rule:
//! <rule>`; an error while evaluating gives `<error> evaluating rule: <rule>`. On an update, a rule
//! without `oldSelf` whose value did not change is not enforced (CRDValidationRatcheting): its
//! failure becomes a warning.
//!
//! The environment is the `cel` crate's standard library (with optionals, and the `has`, `all`,
//! `exists`, `exists_one`, `map`, `filter` macros), its strings extension (`lowerAscii`,
//! `upperAscii`, `indexOf`, `split`, `trim`, `replace`, `substring`, `join`, ...) and `isSorted`.
//! Kubernetes' other libraries (`url`, `quantity`, `ip`, `cidr`, `semver`, regex `find`, list `sum`,
//! `min`, `max`, `indexOf`) are not available: a rule calling them does not compile, so its CRD is
//! refused, as kube-apiserver refuses a rule it cannot compile. Rules are not type-checked against
//! the schema and have no cost limits.

use super::node::{JsonType, ListType, Node};
use super::{ErrorType, FieldError, SchemaError};
use cel::objects::{Key, Map as CelMap, OptionalValue};
use cel::{Context, Env, Program, Value as Cel};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// The environment every rule is compiled and run in.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)
        .expect("the strings extension registers once");
    Arc::new(env)
});

/// Functions this module adds to each evaluation (the Kubernetes list library's cheap part).
const ADDED_FUNCTIONS: &[&str] = &["isSorted"];

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug, Clone)]
pub(super) struct Rule {
    source: String,
    program: Arc<Program>,
    message: String,
    message_expression: Option<Arc<Program>>,
    reason: ErrorType,
    /// `fieldPath`, as kube field path segments (`.a`, `[k]`) appended to the node's path.
    field_path: String,
    uses_old_self: bool,
    optional_old_self: bool,
}

fn malformed(at: String, error_type: ErrorType, message: String) -> SchemaError {
    SchemaError::Malformed {
        at,
        error_type,
        message,
    }
}

/// Compiles `source` and refuses it when it calls a function this environment does not have.
/// `value` is the invalid value the refusal shows (the rule, as kube-apiserver prints it), `what`
/// names what did not compile (`compilation failed`).
fn compile(source: &str, at: &str, value: &str, what: &str) -> Result<Program, SchemaError> {
    let refused = |detail: String| {
        malformed(
            at.to_string(),
            ErrorType::Invalid,
            format!("Invalid value: {value}: {what}: {detail}"),
        )
    };
    // cel-go indents the source lines under an error by one space.
    let program = ENV
        .compile(source)
        .map_err(|e| refused(e.to_string().replace("\n| ", "\n | ")))?;
    let references = program.references();
    // In the order the rule calls them (the set's own order is not stable), as cel-go reports.
    let mut functions: Vec<&str> = references.functions().into_iter().collect();
    functions.sort_by_key(|f| (source.find(&format!("{f}(")).unwrap_or(usize::MAX), *f));
    for f in functions {
        if !known_function(f) {
            return Err(refused(format!("undeclared reference to '{f}'")));
        }
    }
    Ok(program)
}

/// A `x-kubernetes-validations` entry as kube-apiserver prints it in a refusal: its Go type
/// encoded as JSON (field names capitalised, absent pointers `null`, `<`, `>` and `&` escaped).
fn rule_as_go_json(r: &Value) -> String {
    let text = |k: &str| Value::String(r.get(k).and_then(Value::as_str).unwrap_or("").into());
    let mut m = serde_json::Map::new();
    m.insert("Rule".into(), text("rule"));
    m.insert("Message".into(), text("message"));
    m.insert("MessageExpression".into(), text("messageExpression"));
    m.insert(
        "Reason".into(),
        r.get("reason").cloned().unwrap_or(Value::Null),
    );
    m.insert("FieldPath".into(), text("fieldPath"));
    m.insert(
        "OptionalOldSelf".into(),
        r.get("optionalOldSelf").cloned().unwrap_or(Value::Null),
    );
    go_json(&Value::Object(m))
}

/// `v` as Go's `encoding/json` writes it (HTML-sensitive characters escaped).
fn go_json(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Whether the environment (or this module) provides function `name`.
fn known_function(name: &str) -> bool {
    if name.starts_with('_') || name.starts_with('@') || name.starts_with("!_") {
        return true; // operators and macro internals
    }
    if ADDED_FUNCTIONS.contains(&name) {
        return true;
    }
    // The crate refuses to add a function the environment already declares.
    let mut probe = Context::with_env(ENV.clone());
    probe.add_function(name, |x: i64| x).is_err()
}

/// The rules of one schema node (`x-kubernetes-validations`), compiled; `at` is the node's place.
pub(super) fn parse_rules(schema: &Value, at: &str) -> Result<Vec<Rule>, SchemaError> {
    let Some(list) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return Ok(Vec::new());
    };
    let mut rules = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let here = format!("{at}.x-kubernetes-validations[{i}]");
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let source = text("rule");
        let program = compile(
            &source,
            &format!("{here}.rule"),
            &rule_as_go_json(r),
            "compilation failed",
        )?;
        let message_expression = match text("messageExpression") {
            m if m.is_empty() => None,
            m => Some(Arc::new(compile(
                &m,
                &format!("{here}.messageExpression"),
                &go_json(&Value::String(m.clone())),
                "messageExpression compilation failed",
            )?)),
        };
        let reason = match text("reason").as_str() {
            "" | "FieldValueInvalid" => ErrorType::Invalid,
            "FieldValueForbidden" => ErrorType::Forbidden,
            "FieldValueRequired" => ErrorType::Required,
            "FieldValueDuplicate" => ErrorType::Duplicate,
            other => {
                return Err(malformed(
                    format!("{here}.reason"),
                    ErrorType::NotSupported,
                    format!(
                        "Unsupported value: {other:?}: supported values: \"FieldValueDuplicate\", \
                         \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                    ),
                ));
            }
        };
        let uses_old_self = program.references().has_variable("oldSelf");
        rules.push(Rule {
            message: text("message").trim().to_string(),
            field_path: kube_field_path(&text("fieldPath")),
            optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
            source,
            program: Arc::new(program),
            message_expression,
            reason,
            uses_old_self,
        });
    }
    Ok(rules)
}

/// A rule's `fieldPath` (`.spec.a`, `.m['k']`) as the segments kube appends to a field path
/// (`.spec.a`, `.m.k`).
fn kube_field_path(json_path: &str) -> String {
    let mut out = String::new();
    let mut rest = json_path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out.push('.');
            out.push_str(&r[..end]);
            rest = r.get(end + 2..).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push('.');
            out.push_str(&r[..end]);
            rest = &r[end..];
        } else {
            break;
        }
    }
    out
}

/// What evaluating the rules of an object found: errors, and the failures ratcheting turned into
/// warnings.
#[derive(Debug, Default)]
pub(super) struct Findings {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<String>,
}

/// Evaluates every rule of `node` and below against `new` (with `old`, the stored value, on an
/// update). `root` marks the resource root.
pub(super) fn evaluate(
    new: &Value,
    old: Option<&Value>,
    node: &Node,
    path: &str,
    root: bool,
    out: &mut Findings,
) {
    if new.is_null() {
        return;
    }
    for rule in &node.rules {
        run(rule, new, old, node, path, root, out);
    }
    match new {
        Value::Object(map) => {
            for (k, x) in map {
                if (root || node.embedded)
                    && matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                {
                    continue;
                }
                let here = if node.properties.contains_key(k) {
                    child(path, k)
                } else {
                    format!("{path}[{k}]")
                };
                if let Some(c) = node.child(k) {
                    evaluate(x, old.and_then(|o| o.get(k)), c, &here, false, out);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = &node.items else { return };
            for (i, x) in items.iter().enumerate() {
                let old_item = match (&node.list_type, old) {
                    (ListType::Map(keys), Some(Value::Array(olds))) => olds
                        .iter()
                        .find(|o| keys.iter().all(|k| o.get(k) == x.get(k))),
                    _ => None,
                };
                evaluate(x, old_item, item, &format!("{path}[{i}]"), false, out);
            }
        }
        _ => {}
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn run(
    rule: &Rule,
    new: &Value,
    old: Option<&Value>,
    node: &Node,
    path: &str,
    root: bool,
    out: &mut Findings,
) {
    if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
        return;
    }
    let mut ctx = Context::with_env(ENV.clone());
    add_functions(&mut ctx);
    ctx.add_variable_from_value("self", to_cel(new, Some(node), root));
    if rule.optional_old_self {
        let opt = match old {
            Some(o) => OptionalValue::of(to_cel(o, Some(node), root)),
            None => OptionalValue::none(),
        };
        ctx.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(opt)));
    } else if let Some(o) = old {
        ctx.add_variable_from_value("oldSelf", to_cel(o, Some(node), root));
    }
    let type_name = node.types.map(JsonType::name).unwrap_or("");
    let passed = match rule.program.execute(&ctx) {
        Ok(Cel::Bool(b)) => b,
        Ok(_) => false,
        Err(e) => {
            out.errors.push(
                FieldError::new(
                    if path.is_empty() { "<nil>" } else { path },
                    ErrorType::Invalid,
                    Some(Value::String(type_name.into())),
                    format!("{} evaluating rule: {}", cel_error(&e), rule.error_string()),
                )
                .type_named(),
            );
            return;
        }
    };
    if passed {
        return;
    }
    let field = match (path, rule.field_path.as_str()) {
        ("", "") => "<nil>".to_string(),
        ("", below) => below.trim_start_matches('.').to_string(),
        (path, below) => format!("{path}{below}"),
    };
    let expressed = rule
        .message_expression
        .as_ref()
        .and_then(|p| match p.execute(&ctx) {
            Ok(Cel::String(s)) => {
                let s = s.trim();
                (!s.is_empty() && !s.contains('\n')).then(|| s.to_string())
            }
            _ => None,
        });
    // A messageExpression may quote values: the agent's redacted wording uses the static one.
    let fixed = rule.message_or_default();
    let detail = expressed.unwrap_or_else(|| fixed.clone());
    let value = match node.types {
        Some(JsonType::Object | JsonType::Array) => None,
        _ => Some(new.clone()),
    };
    let error = match rule.reason {
        ErrorType::Duplicate => FieldError::new(&field, ErrorType::Duplicate, value, ""),
        ErrorType::Required | ErrorType::Forbidden => {
            FieldError::new(&field, rule.reason, None, detail).redacted(fixed)
        }
        _ => FieldError::new(&field, ErrorType::Invalid, value, detail).redacted(fixed),
    };
    if !rule.uses_old_self && old == Some(new) {
        out.warnings.push(error.to_string());
    } else {
        out.errors.push(error);
    }
}

impl Rule {
    /// `message`, or the rule itself: how kube names a rule in an error.
    fn error_string(&self) -> String {
        if self.message.is_empty() {
            self.source.trim().to_string()
        } else {
            self.message.clone()
        }
    }

    fn message_or_default(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.source.trim())
        } else {
            self.message.clone()
        }
    }
}

/// An evaluation error worded as cel-go words the common ones.
fn cel_error(e: &cel::ExecutionError) -> String {
    match e {
        cel::ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        other => other.to_string(),
    }
}

fn add_functions(ctx: &mut Context) {
    use cel::extractors::This;
    let _ = ctx.add_function("isSorted", |This(list): This<Arc<Vec<Cel>>>| {
        list.windows(2).all(|w| w[0] <= w[1])
    });
}

/// A JSON value as CEL sees it under `node`: integers as `int` (as `double` where the schema
/// says `number`), objects as maps; the resource root's `metadata` shows `name` and
/// `generateName` only.
pub(super) fn to_cel(v: &Value, node: Option<&Node>, root: bool) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let number = node.and_then(|n| n.types) == Some(JsonType::Number);
            match (n.as_i64(), n.as_u64()) {
                (Some(i), _) if !number => Cel::Int(i),
                (None, Some(u)) if !number => Cel::UInt(u),
                _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
            }
        }
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            Cel::List(Arc::new(
                items.iter().map(|x| to_cel(x, item, false)).collect(),
            ))
        }
        Value::Object(map) => {
            let mut out: HashMap<Key, Cel> = HashMap::new();
            for (k, x) in map {
                let value = if root && k == "metadata" {
                    let mut meta = serde_json::Map::new();
                    for f in ["name", "generateName"] {
                        if let Some(s) = x.get(f) {
                            meta.insert(f.into(), s.clone());
                        }
                    }
                    to_cel(&Value::Object(meta), None, false)
                } else {
                    to_cel(x, node.and_then(|n| n.child(k)), false)
                };
                out.insert(Key::String(Arc::new(k.clone())), value);
            }
            Cel::Map(CelMap { map: Arc::new(out) })
        }
    }
}

#[cfg(test)]
#[path = "cel_tests.rs"]
mod tests;
