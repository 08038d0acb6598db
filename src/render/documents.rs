//! One YAML file of Kubernetes objects: its documents, `List` expansion, and the fields every object needs.
//!
//! Documents are numbered the way a reader counts them (every `---` starts one, empty ones included), so
//! an error can say "document 3 (line 41)". The stream is split at its `---` markers and each piece is
//! parsed with [`crate::yaml`]; a syntax error is reported with the line counted from the start of the file.

use super::error::RenderError;
use crate::object::{Origin, SourcedObject};
use crate::yaml::YamlError;
use serde_json::Value;
use std::path::Path;

/// Parses `text` (the content of `file`, repository-relative) into objects, in document order.
pub(crate) fn parse_objects(file: &Path, text: &str) -> Result<Vec<SourcedObject>, RenderError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut objects = Vec::new();
    let mut index = 0;
    for chunk in split(text) {
        if !chunk.explicit && chunk.content_line.is_none() {
            continue; // comments or directives before the first `---`: not a document
        }
        let piece = &text[chunk.start..chunk.end];
        let docs =
            crate::yaml::from_multi_str(piece).map_err(|e| piece_error(file, text, &chunk, e))?;
        let line = chunk.content_line.unwrap_or(chunk.first_line);
        if docs.is_empty() {
            index += 1; // an empty document still counts
        }
        for doc in docs {
            let origin = Origin {
                file: file.to_path_buf(),
                document: index,
            };
            expand(doc, &origin, line, None, &mut objects)?;
            index += 1;
        }
    }
    Ok(objects)
}

/// A piece of the stream holding one document (more only after a `...` end marker).
pub(super) struct Chunk {
    pub start: usize,
    pub end: usize,
    /// 1-based line of the chunk's first line.
    pub first_line: usize,
    /// 1-based line of the first line with content, if any.
    pub content_line: Option<usize>,
    /// Whether the chunk opens with a `---` marker (so it is a document even when empty).
    pub explicit: bool,
}

/// Splits at every line starting with `---` (a document marker wherever it appears in YAML). Directive lines
/// (`%YAML`) right before a marker belong to the document the marker opens.
pub(super) fn split(text: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut current = Chunk {
        start: 0,
        end: 0,
        first_line: 1,
        content_line: None,
        explicit: false,
    };
    let mut directives: Option<(usize, usize)> = None; // (byte offset, line) of pending directive lines
    let mut offset = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        let line = raw.trim_end_matches(['\n', '\r']);
        if is_marker(line) {
            let (start, first_line) = directives.take().unwrap_or((offset, line_no));
            current.end = start;
            chunks.push(current);
            let rest = line[3..].trim_start();
            let content_line = (!rest.is_empty() && !rest.starts_with('#')).then_some(line_no);
            current = Chunk {
                start,
                end: 0,
                first_line,
                content_line,
                explicit: true,
            };
        } else if line.starts_with('%') {
            directives.get_or_insert((offset, line_no));
        } else if !is_blank_or_comment(line) {
            directives = None;
            current.content_line.get_or_insert(line_no);
        }
        offset += raw.len();
    }
    current.end = text.len();
    chunks.push(current);
    chunks
}

fn is_marker(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// A syntax error, located from the start of the file: the whole stream is parsed again to get the
/// parser's own line; if only the piece fails (it should not), its line is shifted by the piece's start.
fn piece_error(file: &Path, text: &str, chunk: &Chunk, piece_err: YamlError) -> RenderError {
    match crate::yaml::from_multi_str(text) {
        Err(e) => yaml_error(file, e, 1),
        Ok(_) => yaml_error(file, piece_err, chunk.first_line),
    }
}

/// A YAML error as render reports it: the file, the line (counted from `first_line`) and column, and the
/// parser's message without the location the parser repeats at its end.
pub(crate) fn yaml_error(file: &Path, e: YamlError, first_line: usize) -> RenderError {
    let located = match (e.line, e.column) {
        (Some(l), Some(c)) => e.message.strip_suffix(&format!(" at line {l}, column {c}")),
        _ => None,
    };
    RenderError::Yaml {
        file: file.to_path_buf(),
        line: e.line.map(|l| l + first_line - 1),
        column: e.column,
        message: located.unwrap_or(&e.message).to_string(),
    }
}

/// Checks one document and appends the objects it holds: itself, or the items of a `*List` with `items`
/// (as kustomize does, nested lists included).
fn expand(
    doc: Value,
    origin: &Origin,
    line: usize,
    item: Option<usize>,
    out: &mut Vec<SourcedObject>,
) -> Result<(), RenderError> {
    let invalid = |problem: String| RenderError::InvalidObject {
        origin: origin.clone(),
        line,
        item,
        problem,
    };
    let Value::Object(mut map) = doc else {
        return Err(invalid(format!(
            "is {}, not a mapping (a Kubernetes object)",
            type_name(&doc)
        )));
    };
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if kind.ends_with("List") && map.contains_key("items") {
        let items = match map.remove("items") {
            Some(Value::Array(items)) => items,
            Some(Value::Null) => Vec::new(),
            Some(other) => {
                return Err(invalid(format!(
                    "`items` of {kind} is {}, not a list",
                    type_name(&other)
                )));
            }
            None => Vec::new(),
        };
        for (i, it) in items.into_iter().enumerate() {
            expand(it, origin, line, Some(i + 1), out)?;
        }
        return Ok(());
    }
    let mut object = Value::Object(map);
    check_object(&object).map_err(invalid)?;
    stringify_annotations(&mut object);
    out.push(SourcedObject {
        object,
        origin: origin.clone(),
    });
    Ok(())
}

/// The fields every object needs, as kustomize requires them: `kind` and `metadata.name` (strings), and
/// `apiVersion` and `metadata.namespace` strings if present (kustomize accepts an object without
/// `apiVersion`).
fn check_object(obj: &Value) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    match obj.get("apiVersion") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(other) => wrong.push(format!("apiVersion is {}, not a string", type_name(other))),
    }
    let mut string_field = |value: Option<&Value>, name: &'static str| match value {
        None | Some(Value::Null) => missing.push(name),
        Some(Value::String(s)) if s.is_empty() => missing.push(name),
        Some(Value::String(_)) => {}
        Some(other) => wrong.push(format!("{name} is {}, not a string", type_name(other))),
    };
    string_field(obj.get("kind"), "kind");
    match obj.get("metadata") {
        None | Some(Value::Null) => missing.push("metadata.name"),
        Some(meta @ Value::Object(_)) => {
            string_field(meta.get("name"), "metadata.name");
            match meta.get("namespace") {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => wrong.push(format!(
                    "metadata.namespace is {}, not a string",
                    type_name(other)
                )),
            }
        }
        Some(other) => wrong.push(format!("metadata is {}, not a mapping", type_name(other))),
    }
    if missing.is_empty() && wrong.is_empty() {
        return Ok(());
    }
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("missing {}", missing.join(", ")));
    }
    problems.extend(wrong);
    Err(format!("{} ({})", problems.join("; "), describe(obj)))
}

/// kustomize reads `metadata.annotations` as strings: another scalar becomes its text (best effort here: the
/// parsed value's, so `True`, `1.50` or `~` are not kept as spelled), a mapping or list becomes `""`, and an
/// empty or null `annotations` is dropped.
pub(super) fn stringify_annotations(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match meta.get_mut("annotations") {
        Some(Value::Object(annotations)) if !annotations.is_empty() => {
            for value in annotations.values_mut() {
                let text = match value {
                    Value::String(_) => continue,
                    Value::Null => "null".to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    Value::Array(_) | Value::Object(_) => String::new(),
                };
                *value = Value::String(text);
            }
        }
        Some(Value::Object(_) | Value::Null) => {
            meta.remove("annotations");
        }
        _ => {}
    }
}

/// What is known of an object's identity, for messages: `kind ConfigMap, name foo`.
fn describe(obj: &Value) -> String {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match (kind, name) {
        (Some(k), Some(n)) => format!("object {k}/{n}"),
        (Some(k), None) => format!("a {k}"),
        (None, Some(n)) => format!("object named {n}"),
        (None, None) => "an object of unknown kind".to_string(),
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Vec<SourcedObject>, RenderError> {
        parse_objects(Path::new("apps/x.yaml"), text)
    }

    fn docs(text: &str) -> Vec<(usize, String)> {
        parse(text)
            .unwrap()
            .into_iter()
            .map(|o| {
                (
                    o.origin.document,
                    o.object["metadata"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    const CM_A: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    const CM_B: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n";

    #[test]
    fn numbers_documents_as_a_reader_counts_them_skipping_empty_ones() {
        assert_eq!(docs(CM_A), vec![(0, "a".into())]);
        assert_eq!(
            docs(&format!("---\n{CM_A}---\n{CM_B}---\n")),
            vec![(0, "a".into()), (1, "b".into())]
        );
        // A commented-out document and an empty one still count.
        let text = format!("# header\n---\n# apiVersion: v1\n---\n---\n{CM_A}---\n~\n---\n{CM_B}");
        assert_eq!(docs(&text), vec![(2, "a".into()), (4, "b".into())]);
        assert_eq!(docs("# nothing here\n"), vec![]);
        assert_eq!(docs(""), vec![]);
    }

    #[test]
    fn markers_with_content_directives_crlf_and_bom() {
        assert_eq!(
            docs("--- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"),
            vec![(0, "a".into())]
        );
        assert_eq!(
            docs(&format!("%YAML 1.2\n---\n{CM_A}")),
            vec![(0, "a".into())]
        );
        assert_eq!(
            docs(&format!("{CM_A}...\n%YAML 1.2\n---\n{CM_B}")),
            vec![(0, "a".into()), (1, "b".into())]
        );
        let crlf = format!("{CM_A}---\r\n{CM_B}").replace('\n', "\r\n");
        assert_eq!(docs(&crlf), vec![(0, "a".into()), (1, "b".into())]);
        assert_eq!(docs(&format!("\u{feff}{CM_A}")), vec![(0, "a".into())]);
        // `---` inside a block scalar is only a marker at column 0.
        let text =
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  s: |\n    ---\n    x\n";
        assert_eq!(
            parse(text).unwrap()[0].object["data"]["s"],
            json!("---\nx\n")
        );
    }

    #[test]
    fn syntax_errors_give_the_file_line_counted_from_the_top() {
        let text =
            format!("{CM_A}---\n{CM_B}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x\n");
        let err = parse(&text).unwrap_err();
        let RenderError::Yaml { file, line, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            (file.as_path(), *line),
            (Path::new("apps/x.yaml"), Some(11))
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("apps/x.yaml: invalid YAML at line 11 column"),
            "{msg}"
        );
        assert_eq!(msg.matches("line 11").count(), 1, "{msg}");
    }

    #[test]
    fn documents_that_are_not_objects_are_named_by_number_and_line() {
        let err = parse(&format!("{CM_A}---\nhello\n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "apps/x.yaml: document 2 (line 5): is a string, not a mapping (a Kubernetes object)"
        );
        let err = parse("- a\n- b\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("document 1 (line 1): is a list, not a mapping"),
            "{err}"
        );
    }

    #[test]
    fn missing_identity_fields_are_listed_with_what_is_known() {
        let msg = |t: &str| parse(t).unwrap_err().to_string();
        assert_eq!(
            msg("apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"),
            "apps/x.yaml: document 1 (line 1): missing metadata.name (a ConfigMap)"
        );
        assert_eq!(
            msg(&format!(
                "{CM_A}---\n# c\napiVersion: v1\nmetadata: {{name: s}}\ndata: {{password: aHVudGVyMg==}}\n"
            )),
            "apps/x.yaml: document 2 (line 6): missing kind (object named s)"
        );
        assert_eq!(
            msg("metadata: {name: nm}\n"),
            "apps/x.yaml: document 1 (line 1): missing kind (object named nm)"
        );
        assert_eq!(
            msg("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 12, namespace: [a]}\n"),
            "apps/x.yaml: document 1 (line 1): metadata.name is a number, not a string; metadata.namespace is a list, not a string (a ConfigMap)"
        );
        assert!(
            msg("apiVersion: v1\nkind: ConfigMap\nmetadata: x\n")
                .contains("metadata is a string, not a mapping")
        );
    }

    #[test]
    fn secret_values_never_appear_in_errors() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata: {namespace: ns}\nstringData: {password: hunter2}\n";
        let msg = parse(text).unwrap_err().to_string();
        assert!(!msg.contains("hunter2"), "{msg}");
        let text =
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: [hunter2\n";
        let msg = parse(text).unwrap_err().to_string();
        assert!(!msg.contains("hunter2"), "{msg}");
    }

    #[test]
    fn annotation_values_become_strings_as_in_kustomize() {
        let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  labels: {n: 1}\n  \
                    annotations: {port: 8080, happy: true, none: null, list: [1], color: green}\n";
        let obj = &parse(text).unwrap()[0].object;
        assert_eq!(
            obj["metadata"]["annotations"],
            json!({"port": "8080", "happy": "true", "none": "null", "list": "", "color": "green"})
        );
        assert_eq!(obj["metadata"]["labels"], json!({"n": 1}));
        let obj = &parse("apiVersion: v1\nkind: Service\nmetadata: {name: s, annotations: {}}\n")
            .unwrap()[0]
            .object;
        assert_eq!(obj["metadata"], json!({"name": "s"}));
    }

    #[test]
    fn lists_expand_into_their_items_as_kustomize_does() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n\
                    - apiVersion: v1\n  kind: ConfigMapList\n  items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: inner}}]\n\
                    ---\napiVersion: example.com/v1\nkind: FooList\nmetadata: {name: fl}\nitems: []\n\
                    ---\napiVersion: example.com/v1\nkind: MyResourceList\nmetadata: {name: kept}\nrules: []\n";
        assert_eq!(
            docs(text),
            vec![(0, "a".into()), (0, "inner".into()), (2, "kept".into())]
        );
        let err = parse("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {}}\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "apps/x.yaml: document 1, list item 1 (line 1): missing metadata.name (a ConfigMap)"
        );
        let err = parse("apiVersion: v1\nkind: List\nitems: {a: b}\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("`items` of List is a mapping, not a list"),
            "{err}"
        );
    }
}
