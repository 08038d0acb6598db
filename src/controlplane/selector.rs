//! Label and field selectors of LIST and WATCH requests, parsed once and matched against objects.
//! Label selectors are the shared [`crate::selector::LabelSelector`], read first by kube's own
//! grammar ([`label_selector_error`]) so a selector kube-apiserver refuses is refused in its words.

use super::error::ApiError;
use super::registry::ResourceType;
use crate::machinery::field::FieldError;
use crate::validate::builtin::{label_key_messages, label_value_messages};
use serde_json::Value;

/// A parsed `labelSelector`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(crate::selector::LabelSelector);

impl LabelSelector {
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        if let Some(why) = label_selector_error(input) {
            return Err(ApiError::bad_request(why));
        }
        crate::selector::LabelSelector::parse(input)
            .map(LabelSelector)
            .map_err(|e| ApiError::bad_request(e.to_string()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.matches(obj)
    }
}

/// A token of kube's label selector lexer.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
    /// A run of symbols that is no operator.
    Error,
}

fn is_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn symbol_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// kube's lexer: words end at whitespace or a symbol; symbols are read greedily into the longest
/// operator.
fn lex(input: &str) -> Vec<(Token, String)> {
    let b = input.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i >= b.len() {
            out.push((Token::End, String::new()));
            return out;
        }
        let start = i;
        if is_symbol(b[i]) {
            let mut last: Option<(Token, usize)> = None;
            while i < b.len() && is_symbol(b[i]) {
                match symbol_token(&input[start..=i]) {
                    Some(t) => last = Some((t, i + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                i += 1;
            }
            match last {
                Some((t, end)) => {
                    out.push((t, input[start..end].to_string()));
                    i = end;
                }
                None => out.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", &input[start..i]),
                )),
            }
            continue;
        }
        while i < b.len() && !is_symbol(b[i]) && !is_space(b[i]) {
            i += 1;
        }
        let word = &input[start..i];
        let token = match word {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Identifier,
        };
        out.push((token, word.to_string()));
    }
}

/// Why kube-apiserver cannot parse `input` as a label selector, in its words; `None` when it can.
pub fn label_selector_error(input: &str) -> Option<String> {
    let mut p = Parser {
        tokens: lex(input),
        pos: 0,
    };
    p.selector().err()
}

struct Parser {
    tokens: Vec<(Token, String)>,
    pos: usize,
}

/// `in` and `notin` are identifiers where a value is read.
fn as_value(t: &Token) -> Token {
    match t {
        Token::In | Token::NotIn => Token::Identifier,
        t => t.clone(),
    }
}

/// A field error of a selector's key: kube quotes it without a path, as `<nil>`.
fn selector_field_error(value: &str, messages: &[String]) -> String {
    format!(
        "<nil>: {}",
        FieldError::invalid("", value, &messages.join("; ")).body()
    )
}

impl Parser {
    fn token(&self) -> (Token, String) {
        self.tokens[self.pos.min(self.tokens.len() - 1)].clone()
    }

    /// The next token, where a value may stand.
    fn lookahead(&self) -> (Token, String) {
        let (t, lit) = self.token();
        (as_value(&t), lit)
    }

    fn consume(&mut self) -> (Token, String) {
        let next = self.token();
        self.pos += 1;
        next
    }

    fn consume_value(&mut self) -> (Token, String) {
        let (t, lit) = self.consume();
        (as_value(&t), lit)
    }

    fn selector(&mut self) -> Result<(), String> {
        loop {
            let (t, lit) = self.lookahead();
            match t {
                Token::Identifier | Token::DoesNotExist => {
                    self.requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    let (t, lit) = self.consume_value();
                    match t {
                        Token::End => return Ok(()),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead();
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Token::End => return Ok(()),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<(), String> {
        let (mut t, mut key) = self.consume_value();
        let not_exists = t == Token::DoesNotExist;
        if not_exists {
            (t, key) = self.consume_value();
        }
        if t != Token::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        let key_errors = label_key_messages(&key);
        if !key_errors.is_empty() {
            return Err(selector_field_error(&key, &key_errors));
        }
        let (next, _) = self.lookahead();
        if next == Token::End || next == Token::Comma || not_exists {
            return Ok(());
        }
        let (op, lit) = self.consume();
        let values = match op {
            Token::In | Token::NotIn => self.set_values()?,
            Token::Equals
            | Token::DoubleEquals
            | Token::NotEquals
            | Token::GreaterThan
            | Token::LessThan => self.exact_value()?,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        // kube's requirement checks each value, sorted and without repeats, at `values[i]`.
        let mut values = values;
        values.sort();
        values.dedup();
        for (i, v) in values.iter().enumerate() {
            if matches!(op, Token::GreaterThan | Token::LessThan) {
                if v.parse::<i64>().is_err() {
                    return Err(FieldError::invalid(
                        &format!("values[{i}]"),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                    .to_string());
                }
                continue;
            }
            let m = label_value_messages(v);
            if !m.is_empty() {
                return Err(
                    FieldError::invalid(&format!("values[{i}][{key}]"), v, &m.join("; "))
                        .to_string(),
                );
            }
        }
        Ok(())
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (t, _) = self.lookahead();
        if t == Token::End || t == Token::Comma {
            return Ok(vec![String::new()]);
        }
        match self.consume_value() {
            (Token::Identifier, lit) => Ok(vec![lit]),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }

    fn set_values(&mut self) -> Result<Vec<String>, String> {
        let (t, lit) = self.consume_value();
        if t != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (t, lit) = self.lookahead();
        match t {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                let (t, _) = self.consume_value();
                if t != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume();
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut values = Vec::new();
        loop {
            let (t, lit) = self.consume_value();
            match t {
                Token::Identifier => {
                    values.push(lit);
                    let (t2, l2) = self.lookahead();
                    match t2 {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (t2, _) = self.lookahead();
                    if t2 == Token::ClosedPar || t2 == Token::Comma {
                        values.push(String::new());
                    }
                    if t2 == Token::ClosedPar {
                        return Ok(values);
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }
}

/// A parsed `fieldSelector`: `(field, equal, value)` requirements, all of them to hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

/// The fields a kind's objects are selected by, and whether the kind words an unknown one as
/// its own (`field label not supported: x`) rather than as the default (`"x" is not a known
/// field selector: ...`).
fn selectable(rt: Option<&ResourceType>) -> (&'static [&'static str], bool) {
    const META: &[&str] = &["metadata.name", "metadata.namespace"];
    let Some(rt) = rt else {
        return (META, false);
    };
    if rt.custom {
        return (META, true);
    }
    let fields: &'static [&'static str] = match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Secret") => &["metadata.name", "metadata.namespace", "type"],
        ("", "Namespace") => &["metadata.name", "status.phase"],
        ("", "Service") => &[
            "metadata.name",
            "metadata.namespace",
            "spec.clusterIP",
            "spec.type",
        ],
        ("", "Event") => &[
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        _ => return (META, false),
    };
    (fields, true)
}

impl FieldSelector {
    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// [`FieldSelector::parse_for`] a kind selected by `metadata.name` and `metadata.namespace`
    /// only.
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        Self::parse_with(input, None)
    }

    /// Parses as kube-apiserver does for `rt`: terms split at unescaped commas, each
    /// `field=value`, `field==value` or `field!=value` (the first operator found), no space
    /// trimmed; each field one the kind is selected by.
    pub fn parse_for(input: &str, rt: &ResourceType) -> Result<Self, ApiError> {
        Self::parse_with(input, Some(rt))
    }

    fn parse_with(input: &str, rt: Option<&ResourceType>) -> Result<Self, ApiError> {
        let mut terms = split_terms(input);
        terms.sort();
        let mut reqs = Vec::new();
        for term in terms.iter().filter(|t| !t.is_empty()) {
            let Some((field, equal, value)) = split_term(term) else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{input}'; can't understand '{term}'"
                )));
            };
            reqs.push((field.to_string(), equal, unescape(value)));
        }
        let (fields, own_words) = selectable(rt);
        if let Some((field, _, _)) = reqs.iter().find(|(f, _, _)| !fields.contains(&f.as_str())) {
            return Err(ApiError::bad_request(if own_words {
                format!("field label not supported: {field}")
            } else {
                format!(
                    "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                )
            }));
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let pointer = match field.as_str() {
                // An Event's `source` is its reporting component.
                "source" => "/source/component".to_string(),
                f => format!("/{}", f.replace('.', "/")),
            };
            let actual = obj.pointer(&pointer).and_then(Value::as_str).unwrap_or("");
            (actual == value) == *equal
        })
    }
}

/// Splits at commas not escaped by a backslash.
fn split_terms(input: &str) -> Vec<&str> {
    if input.is_empty() {
        return Vec::new();
    }
    let (mut terms, mut start, mut escaped) = (Vec::new(), 0, false);
    for (i, c) in input.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&input[start..]);
    terms
}

/// The first `!=`, `==` or `=` of a term: (field, equal, value).
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    (0..term.len())
        .filter(|i| term.is_char_boundary(*i))
        .find_map(|i| {
            let rest = &term[i..];
            [("!=", false), ("==", true), ("=", true)]
                .iter()
                .find(|(op, _)| rest.starts_with(op))
                .map(|(op, equal)| (&term[..i], *equal, &rest[op.len()..]))
        })
}

/// A field selector value with its backslash escapes removed.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selectors() {
        let obj = json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=n")
                .unwrap()
                .matches(&obj)
        );
        assert_eq!(
            FieldSelector::parse("data.k=1").unwrap_err().message,
            "\"data.k\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            FieldSelector::parse("metadata.name").unwrap_err().message,
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        let reg = crate::controlplane::registry::Registry::new([]);
        let secrets = reg.by_resource("", "v1", "secrets").expect("served");
        let opaque = json!({"metadata": {"name": "a"}, "type": "Opaque"});
        assert!(
            FieldSelector::parse_for("type=Opaque", &secrets)
                .unwrap()
                .matches(&opaque)
        );
        assert_eq!(
            FieldSelector::parse_for("data.x=1", &secrets)
                .unwrap_err()
                .message,
            "field label not supported: data.x"
        );
        let namespaces = reg.by_resource("", "v1", "namespaces").expect("served");
        assert!(FieldSelector::parse_for("metadata.namespace=x", &namespaces).is_err());
        let escaped = json!({"metadata": {"name": "a,b"}});
        assert!(
            FieldSelector::parse("metadata.name=a\\,b")
                .unwrap()
                .matches(&escaped)
        );
    }

    #[test]
    fn label_selectors_kube_refuses_are_refused_in_its_words() {
        let cases = [
            (
                "app===x",
                Some("unable to parse requirement: found '=', expected: identifier"),
            ),
            (
                "a in (x",
                Some("unable to parse requirement: found '', expected: ',' or ')'"),
            ),
            (
                "!",
                Some("unable to parse requirement: found '', expected: identifier"),
            ),
            ("a,", Some("found '', expected: identifier after ','")),
            ("a=b=c", Some("found '=', expected: ',' or 'end of string'")),
            (
                "a notin x",
                Some("unable to parse requirement: found 'x' expected: '('"),
            ),
            ("a=b c", Some("found 'c', expected: ',' or 'end of string'")),
            (
                "-a=b",
                Some(
                    "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                ),
            ),
            ("a=b,!c,d in (x, y),e notin (),f!=g,h", None),
            ("a>1", None),
            (
                "a>x",
                Some(
                    "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
                ),
            ),
            (
                "a in (ok, -bad)",
                Some(
                    "unable to parse requirement: values[0][a]: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                ),
            ),
            ("", None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                label_selector_error(input).as_deref(),
                expected,
                "{input:?}"
            );
        }
        let web = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(LabelSelector::parse("app=web").unwrap().matches(&web));
    }
}
