//! YAML in and out, for every stage: one parser (serde-saphyr), one emitter.
//!
//! Documents are read into `serde_json::Value` (key order kept), the form objects take everywhere
//! in the agent. Errors carry the line and column the parser reports.

use serde_json::Value;

/// A YAML document that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid YAML{}: {message}", location_suffix(*line, *column))]
pub struct YamlError {
    /// 1-based line, when the parser knows it.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

fn location_suffix(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l} column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

impl YamlError {
    /// The parser's error in the user's words, with its position.
    pub(crate) fn from_saphyr(err: serde_saphyr::Error) -> Self {
        let location = err.location();
        // A breach met through an alias comes wrapped with the alias's locations: the breach
        // itself is what the user reads.
        let mut inner = &err;
        while let serde_saphyr::Error::AliasError { error, .. }
        | serde_saphyr::Error::WithSnippet { error, .. } = inner
        {
            inner = error;
        }
        let message = match inner {
            serde_saphyr::Error::Budget { breach, .. } => too_large(breach),
            serde_saphyr::Error::DuplicateMappingKey { key: Some(key), .. } => {
                format!("the key `{key}` appears twice in one mapping")
            }
            serde_saphyr::Error::DuplicateMappingKey { key: None, .. } => {
                "a key appears twice in one mapping".to_string()
            }
            other => without_library_hints(&other.to_string()),
        };
        YamlError {
            line: location.map(|l| l.line() as usize),
            column: location.map(|l| l.column() as usize),
            message,
        }
    }
}

/// A breached parser limit in the user's words: what was too much, and the limit.
fn too_large(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    let limits = serde_saphyr::Budget::default();
    let (what, limit) = match breach {
        B::Nodes { .. } => ("nodes", limits.max_nodes),
        B::Events { .. } => ("parser events", limits.max_events),
        B::Aliases { .. } => ("aliases", limits.max_aliases),
        B::Anchors { .. } => ("anchors", limits.max_anchors),
        B::Depth { .. } => ("levels of nesting", limits.max_depth),
        B::Documents { .. } => ("documents", limits.max_documents),
        B::ScalarBytes { .. } => ("bytes of text", limits.max_total_scalar_bytes),
        B::MergeKeys { .. } => ("merge keys", limits.max_merge_keys),
        B::AliasAnchorRatio { .. } => {
            return "the YAML document is too complex: too many aliases for its anchors"
                .to_string();
        }
        _ => return "the YAML document is too large or too complex".to_string(),
    };
    format!("the YAML document is too large: more than {limit} {what}")
}

/// The parser's message without its hints to programmers (options of the library).
fn without_library_hints(message: &str) -> String {
    let mut text = message.replace(", set DuplicateKeyPolicy in Options if acceptable", "");
    // "... . If you just use ..., set <option> in Options": drop that sentence.
    if let Some(i) = text.find(" If you ")
        && text[i..].contains(" in Options")
    {
        text.truncate(i);
    }
    // The position is the error's own (`line` and `column`): not repeated in the message.
    static AT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r" at line \d+, column \d+$").expect("valid pattern")
    });
    AT.replace(&text, "").into_owned()
}

/// How scalars are typed: as kustomize (go-yaml v3) types them. `yes`/`no`/`on`/`off`/`y`/`n` stay
/// strings (YAML 1.2 booleans only), and `0777` is the octal number 511.
fn options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.legacy_octal_numbers = true;
    options
}

/// Recently parsed texts and their documents. Renders of a fleet read the same bases again and again,
/// and parsing dominates a render; a hit costs a clone of the values. A text is kept the second time it is
/// parsed, so texts read once (each cluster's own files) cost no copy. Bounded: texts over
/// [`CACHE_MAX_TEXT`] bytes are not kept, and the cache is emptied when it holds [`CACHE_ENTRIES`].
struct ParseCache(std::sync::Mutex<CacheState>);

#[derive(Default)]
struct CacheState {
    /// By [`text_hash`]: the text (compared on a hit) and what parsing it gave.
    parsed: std::collections::HashMap<u64, (CacheKey, Parsed)>,
    /// Hashes of the texts parsed once and not kept.
    seen: std::collections::HashSet<u64>,
}

/// (several documents?, the text).
type CacheKey = (bool, Box<str>);
type Parsed = Result<Vec<Value>, YamlError>;

const CACHE_MAX_TEXT: usize = 64 * 1024;
const CACHE_ENTRIES: usize = 4096;

/// A fast 64-bit hash of a text (FxHash's mixing, eight bytes at a time); hits are confirmed by comparing
/// the texts.
fn text_hash(multi: bool, text: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut h = mix(u64::from(multi), text.len() as u64);
    let mut chunks = text.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        h = mix(
            h,
            u64::from_le_bytes(chunk.try_into().expect("eight bytes")),
        );
    }
    for &b in chunks.remainder() {
        h = mix(h, u64::from(b));
    }
    h
}

impl ParseCache {
    fn get_or_parse(
        &self,
        multi: bool,
        input: &str,
        parse: impl FnOnce() -> Result<Vec<Value>, YamlError>,
    ) -> Result<Vec<Value>, YamlError> {
        if input.len() > CACHE_MAX_TEXT {
            return parse();
        }
        let hash = text_hash(multi, input);
        let keep = {
            let mut state = self.0.lock().expect("parse cache lock");
            if let Some(((m, text), hit)) = state.parsed.get(&hash)
                && *m == multi
                && **text == *input
            {
                return hit.clone();
            }
            // Kept the second time it is seen.
            if state.seen.len() >= CACHE_ENTRIES {
                state.seen.clear();
            }
            !state.seen.insert(hash)
        };
        let parsed = parse();
        if keep {
            let mut state = self.0.lock().expect("parse cache lock");
            if state.parsed.len() >= CACHE_ENTRIES {
                state.parsed.clear();
            }
            state.seen.remove(&hash);
            state
                .parsed
                .insert(hash, ((multi, input.into()), parsed.clone()));
        }
        parsed
    }
}

fn cache() -> &'static ParseCache {
    static CACHE: std::sync::LazyLock<ParseCache> =
        std::sync::LazyLock::new(|| ParseCache(Default::default()));
    &CACHE
}

/// Parses one YAML (or JSON) document.
pub fn from_str(input: &str) -> Result<Value, YamlError> {
    cache()
        .get_or_parse(false, input, || {
            serde_saphyr::from_str_with_options(input, options())
                .map(|v| vec![v])
                .map_err(YamlError::from_saphyr)
        })
        .map(|mut v| v.pop().unwrap_or(Value::Null))
}

/// Parses a stream of `---`-separated documents; empty and null documents are skipped.
pub fn from_multi_str(input: &str) -> Result<Vec<Value>, YamlError> {
    cache().get_or_parse(true, input, || {
        serde_saphyr::from_multiple_with_options::<Value>(input, options())
            .map(|docs| docs.into_iter().filter(|d| !d.is_null()).collect())
            .map_err(YamlError::from_saphyr)
    })
}

/// Emits one document as YAML.
pub fn to_string(value: &Value) -> String {
    // Serialising a JSON value cannot fail: every key is a string and every number finite.
    serde_saphyr::to_string(value).expect("a JSON value always serialises to YAML")
}

/// Emits documents as a `---`-separated stream, as `kustomize build` does.
pub fn to_multi_string(values: &[Value]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&to_string(v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_documents_with_types() {
        let docs =
            from_multi_str("a: 1\nb: true\nc: \"1\"\nd: 1.5\ne: null\n---\n---\nx: [1, two]\n")
                .unwrap();
        assert_eq!(
            docs,
            vec![
                json!({"a": 1, "b": true, "c": "1", "d": 1.5, "e": null}),
                json!({"x": [1, "two"]})
            ]
        );
    }

    #[test]
    fn scalars_are_typed_like_kustomize() {
        let v = from_str("a: yes\nb: n\nc: on\nd: true\ne: 0777\nf: 10\n").unwrap();
        assert_eq!(
            v,
            json!({"a": "yes", "b": "n", "c": "on", "d": true, "e": 511, "f": 10})
        );
    }

    #[test]
    fn error_names_the_line() {
        let err = from_str("a: 1\nb: [\n").unwrap_err();
        assert!(err.line.is_some(), "{err:?}");
        assert!(err.to_string().contains("line"), "{err}");
    }

    #[test]
    fn errors_carry_no_library_hint_nor_debug_dump() {
        let err = from_str("a: 1\na: 2\n").unwrap_err();
        assert_eq!(err.message, "the key `a` appears twice in one mapping");
        let many = format!("[{}]", vec!["1"; 300_000].join(","));
        let err = from_str(&many).unwrap_err();
        assert!(
            err.message
                .starts_with("the YAML document is too large: more than "),
            "{err}"
        );
        assert!(!err.message.contains('{'), "{err}");
        // The same breach reached through aliases (a "billion laughs").
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (prev, name) in ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .zip(["b", "c", "d", "e", "f", "g", "h"])
        {
            bomb.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{prev}"); 10].join(",")
            ));
        }
        let err = from_str(&bomb).unwrap_err();
        assert!(
            err.message
                .starts_with("the YAML document is too large: more than "),
            "{err}"
        );
        assert!(!err.message.contains('{'), "{err}");
    }

    #[test]
    fn a_text_is_kept_the_second_time_it_is_parsed() {
        let text = "kept: [the, second, time]\n";
        let kept = || {
            let state = cache().0.lock().unwrap();
            state
                .parsed
                .get(&text_hash(true, text))
                .is_some_and(|((_, t), _)| &**t == text)
        };
        let first = from_multi_str(text).unwrap();
        assert!(!kept());
        assert_eq!(from_multi_str(text).unwrap(), first);
        assert!(kept());
        assert_eq!(from_multi_str(text).unwrap(), first);
        // The single-document reading is kept apart.
        assert_eq!(from_str(text).unwrap(), first[0]);
        assert_ne!(text_hash(true, text), text_hash(false, text));
    }

    #[test]
    fn round_trips() {
        let v = json!({"kind": "ConfigMap", "data": {"k": "yes", "n": "012", "e": ""}, "list": [1, {"a": null}]});
        assert_eq!(from_str(&to_string(&v)).unwrap(), v);
        assert_eq!(
            from_multi_str(&to_multi_string(&[v.clone(), v.clone()]))
                .unwrap()
                .len(),
            2
        );
    }
}
