//! Field errors as kube-apiserver words them: a type (`Invalid value`, `Required value`, ...), the
//! field's path, the value at fault when it may be shown, and a detail. The local control plane
//! answers them as the `details.causes` of a 422 Invalid; the agent's offline validation reports
//! their text.

use std::fmt;

/// What is wrong with a field (kube's `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    Duplicate,
}

impl ErrorType {
    /// The `reason` of the Status cause.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::Duplicate => "FieldValueDuplicate",
        }
    }

    fn words(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::Duplicate => "Duplicate value",
        }
    }

    /// Whether the message shows the value (kube leaves it out of these types).
    fn shows_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong
        )
    }
}

/// The value at fault, as the message shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// Not shown.
    None,
    /// A string, shown quoted.
    Str(String),
    /// A number, boolean or JSON rendering, shown as is.
    Raw(String),
}

/// One field error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    pub value: BadValue,
    pub detail: String,
}

impl FieldError {
    fn new(kind: ErrorType, field: &str, value: BadValue, detail: &str) -> Self {
        FieldError {
            kind,
            field: field.to_string(),
            value,
            detail: detail.to_string(),
        }
    }

    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(ErrorType::Required, field, BadValue::None, detail)
    }

    /// An invalid string value, shown quoted.
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self::new(
            ErrorType::Invalid,
            field,
            BadValue::Str(value.to_string()),
            detail,
        )
    }

    /// An invalid value shown as is (a number, or a JSON rendering).
    pub fn invalid_raw(field: &str, value: impl fmt::Display, detail: &str) -> Self {
        Self::new(
            ErrorType::Invalid,
            field,
            BadValue::Raw(value.to_string()),
            detail,
        )
    }

    /// An unsupported value among `supported` (each quoted in the detail).
    pub fn not_supported(field: &str, value: BadValue, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, field, value, &detail)
    }

    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(ErrorType::Forbidden, field, BadValue::None, detail)
    }

    /// Over `max` bytes.
    pub fn too_long(field: &str, max: usize) -> Self {
        Self::new(
            ErrorType::TooLong,
            field,
            BadValue::None,
            &format!("may not be more than {max} bytes"),
        )
    }

    /// The message without the field: `Invalid value: "x": detail` (a Status cause's message).
    pub fn body(&self) -> String {
        let mut s = self.kind.words().to_string();
        if self.kind.shows_value() {
            match &self.value {
                BadValue::None => {}
                BadValue::Str(v) => s.push_str(&format!(": {}", go_quote(v))),
                BadValue::Raw(v) => s.push_str(&format!(": {v}")),
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Several errors in one line as kube-apiserver joins them: the one message alone, or
/// `[a, b]` with repeated messages once.
pub fn aggregate<T: fmt::Display>(errors: &[T]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let m = e.to_string();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    match seen.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// A string quoted as Go's `%q` quotes it (printable characters kept, others escaped).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                let n = c as u32;
                if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_kube_apiserver_words_them() {
        let e = FieldError::invalid("metadata.name", "a.b", "must not contain dots");
        assert_eq!(
            e.to_string(),
            "metadata.name: Invalid value: \"a.b\": must not contain dots"
        );
        assert_eq!(e.kind.reason(), "FieldValueInvalid");
        assert_eq!(
            FieldError::required("metadata.name", "name or generateName is required").body(),
            "Required value: name or generateName is required"
        );
        assert_eq!(
            FieldError::required("spec.x", "").to_string(),
            "spec.x: Required value"
        );
        assert_eq!(
            FieldError::invalid_raw("spec.leaseDurationSeconds", -1, "must be greater than 0")
                .body(),
            "Invalid value: -1: must be greater than 0"
        );
        assert_eq!(
            FieldError::forbidden("data", "field is immutable when `immutable` is set").body(),
            "Forbidden: field is immutable when `immutable` is set"
        );
        assert_eq!(
            FieldError::not_supported("dryRun", BadValue::Raw("[\"Some\"]".into()), &["All"])
                .to_string(),
            "dryRun: Unsupported value: [\"Some\"]: supported values: \"All\""
        );
        assert_eq!(
            FieldError::too_long("data", 1048576).to_string(),
            "data: Too long: may not be more than 1048576 bytes"
        );
    }

    #[test]
    fn several_errors_are_bracketed_once_each() {
        let a = FieldError::required("a", "");
        let b = FieldError::required("b", "");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Required value");
        assert_eq!(
            aggregate(&[a.clone(), b, a]),
            "[a: Required value, b: Required value]"
        );
    }

    #[test]
    fn quoting_follows_go() {
        assert_eq!(go_quote("bad key!"), "\"bad key!\"");
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("\u{81}"), "\"\\u0081\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }
}
