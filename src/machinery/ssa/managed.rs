//! `metadata.managedFields` entries: decoding, identity, encoding and Kubernetes' ordering.
//!
//! An entry is identified by manager, operation and subresource, plus the apiVersion for Update
//! entries (as Kubernetes builds its manager identifier: appliers keep one entry across versions).
//! Entries are written sorted like the API server sorts them: Apply before Update, then by time,
//! manager, apiVersion and subresource. An entry whose fields and time did not change is written
//! back exactly as it was read.

use super::fieldset::FieldSet;
use serde_json::{Map, Value};

/// The operation a managedFields entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One decoded managedFields entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub subresource: Option<String>,
    pub time: Option<String>,
    pub set: FieldSet,
    /// The entry as read, with what it said, to write it back untouched when nothing changed.
    original: Option<(Value, FieldSet, Option<String>, String)>,
}

impl Entry {
    pub fn new(
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: Option<&str>,
        set: FieldSet,
    ) -> Entry {
        Entry {
            manager: manager.to_string(),
            operation,
            api_version: api_version.to_string(),
            subresource: subresource.map(str::to_string),
            time: None,
            set,
            original: None,
        }
    }

    /// Whether this entry is the one `manager` writes with `operation` through `subresource`
    /// (and `api_version`, for Update).
    pub fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    fn same_identity(&self, o: &Entry) -> bool {
        o.is(
            &self.manager,
            self.operation,
            &self.api_version,
            self.subresource.as_deref(),
        )
    }

    /// Decodes one entry; `None` when it is malformed (unknown operation, no apiVersion,
    /// fieldsType other than FieldsV1, undecodable fieldsV1).
    pub fn decode(v: &Value) -> Option<Entry> {
        let obj = v.as_object()?;
        let text = |k: &str| obj.get(k).and_then(Value::as_str);
        let operation = match text("operation")? {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        let api_version = text("apiVersion").filter(|s| !s.is_empty())?;
        if text("fieldsType")? != "FieldsV1" {
            return None;
        }
        let set = match obj.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f).ok()?,
        };
        let time = text("time").map(str::to_string);
        Some(Entry {
            manager: text("manager").unwrap_or_default().to_string(),
            operation,
            api_version: api_version.to_string(),
            subresource: text("subresource")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            time: time.clone(),
            original: Some((v.clone(), set.clone(), time, api_version.to_string())),
            set,
        })
    }

    pub fn encode(&self) -> Value {
        if let Some((json, set, time, api_version)) = &self.original
            && *set == self.set
            && *time == self.time
            && *api_version == self.api_version
        {
            return json.clone();
        }
        let mut m = Map::new();
        m.insert("manager".into(), Value::from(self.manager.clone()));
        m.insert("operation".into(), Value::from(self.operation.as_str()));
        m.insert("apiVersion".into(), Value::from(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::from(t.clone()));
        }
        m.insert("fieldsType".into(), Value::from("FieldsV1"));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), Value::from(s.clone()));
        }
        Value::Object(m)
    }
}

fn managed_list(obj: &Value) -> Option<&Vec<Value>> {
    obj.get("metadata")?.get("managedFields")?.as_array()
}

/// Decodes the entries of an object's managedFields, dropping the malformed ones. Two entries
/// with the same identity: the later wins.
pub(crate) fn decode_lenient(obj: &Value) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for e in managed_list(obj)
        .into_iter()
        .flatten()
        .filter_map(Entry::decode)
    {
        out.retain(|o| !o.same_identity(&e));
        out.push(e);
    }
    out
}

/// The fields each manager owns in `obj`, as its managedFields record them: `(manager,
/// operation, fields)` per entry, in recorded order, malformed entries skipped. For readers
/// outside the control plane (the planner's diff and drift report).
pub fn managed_sets(obj: &Value) -> Vec<(String, Operation, FieldSet)> {
    decode_lenient(obj)
        .into_iter()
        .map(|e| (e.manager, e.operation, e.set))
        .collect()
}

/// Decodes every entry of an object's managedFields; `None` if any is malformed.
pub(crate) fn decode_strict(obj: &Value) -> Option<Vec<Entry>> {
    let mut out: Vec<Entry> = Vec::new();
    for v in managed_list(obj).into_iter().flatten() {
        let e = Entry::decode(v)?;
        out.retain(|o| !o.same_identity(&e));
        out.push(e);
    }
    Some(out)
}

/// Whether the object asks to clear its managedFields: an empty list, or a list of one empty
/// entry (`[{}]`), as kube's field manager reads a reset. An absent or `null` list is no reset.
pub(crate) fn is_reset(obj: &Value) -> bool {
    match managed_list(obj).map(Vec::as_slice) {
        Some([]) => true,
        Some([Value::Object(m)]) => m.is_empty(),
        _ => false,
    }
}

/// Encodes entries in the API server's order. When `previous` (the object's current list) holds
/// exactly the same entries, it is returned as it is, so an unchanged object stays equal.
pub(crate) fn encode_sorted(entries: &[Entry], previous: Option<&Value>) -> Vec<Value> {
    let mut sorted: Vec<&Entry> = entries.iter().filter(|e| !e.set.is_empty()).collect();
    sorted.sort_by(|p, q| {
        p.operation
            .as_str()
            .cmp(q.operation.as_str())
            .then_with(|| time_seconds(p).cmp(&time_seconds(q)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| {
                let s = |e: &Entry| e.subresource.clone().unwrap_or_default();
                s(p).cmp(&s(q))
            })
    });
    let encoded: Vec<Value> = sorted.into_iter().map(Entry::encode).collect();
    if let Some(prev) = previous.and_then(managed_list)
        && prev.len() == encoded.len()
        && encoded.iter().all(|e| prev.contains(e))
    {
        return prev.clone();
    }
    encoded
}

fn time_seconds(e: &Entry) -> i64 {
    e.time.as_deref().and_then(parse_rfc3339).unwrap_or(0)
}

/// Seconds since the Unix epoch of an RFC 3339 time (`2024-05-01T10:00:00Z`,
/// fractional seconds and numeric offsets allowed).
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) => {
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6)?.parse().ok()?;
            let o = h * 3600 + m * 60;
            if rest.starts_with('-') { -o } else { o }
        }
        _ => return None,
    };
    // Days from the civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + min * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_times() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-03-01T00:00:01Z"), Some(1_709_251_201));
        assert_eq!(
            parse_rfc3339("2024-03-01T01:00:01.5+01:00"),
            Some(1_709_251_201)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn decodes_and_drops_bad_entries() {
        let obj = json!({"metadata": {"managedFields": [
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "b", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"},
            {"manager": "c", "operation": "Update", "fieldsType": "FieldsV1"},
            {"manager": "d", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"bogus": {}}},
            "not an entry"
        ]}});
        let entries = decode_lenient(&obj);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].manager, "a");
        assert!(decode_strict(&obj).is_none());
        assert!(is_reset(&json!({"metadata": {"managedFields": [{}]}})));
        assert!(is_reset(&json!({"metadata": {"managedFields": []}})));
        assert!(!is_reset(&json!({"metadata": {"managedFields": null}})));
        assert!(!is_reset(&json!({"metadata": {}})));
    }

    #[test]
    fn managed_sets_per_entry() {
        let obj = json!({"metadata": {"managedFields": [
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"bogus": {}}},
            {"manager": "c", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:y": {}}}}
        ]}});
        let sets = managed_sets(&obj);
        let names: Vec<(&str, Operation)> = sets.iter().map(|(m, o, _)| (m.as_str(), *o)).collect();
        assert_eq!(
            names,
            vec![("a", Operation::Apply), ("c", Operation::Update)]
        );
        let f = |n: &str| crate::machinery::ssa::PathElement::Field(n.into());
        assert!(sets[1].2.has(&[f("data"), f("y")]));
        assert!(managed_sets(&json!({})).is_empty());
    }

    #[test]
    fn sorts_like_the_api_server() {
        let set = FieldSet::from_fields_v1(&json!({"f:a": {}})).unwrap();
        let mut u = Entry::new("zz", Operation::Update, "v1", None, set.clone());
        u.time = Some("2024-01-01T00:00:00Z".into());
        let mut a1 = Entry::new("b", Operation::Apply, "v1", None, set.clone());
        a1.time = Some("2024-01-02T00:00:00Z".into());
        let mut a2 = Entry::new("a", Operation::Apply, "v1", Some("status"), set.clone());
        a2.time = Some("2024-01-02T00:00:00Z".into());
        let empty = Entry::new("e", Operation::Apply, "v1", None, FieldSet::new());
        let out = encode_sorted(&[u, a1, empty, a2], None);
        let names: Vec<&str> = out.iter().map(|e| e["manager"].as_str().unwrap()).collect();
        assert_eq!(names, vec!["a", "b", "zz"]);
        assert_eq!(out[0]["subresource"], "status");
        assert!(out[1].get("subresource").is_none());
    }
}
