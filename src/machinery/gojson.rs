//! Go's `encoding/json` as kube-apiserver's decoder reports a body it cannot read: the syntax
//! error of the first byte at fault (`invalid character 'x' looking for beginning of value`,
//! `unexpected end of JSON input`), and the type of a JSON value as its messages name it. The
//! local control plane answers these words so a client sees what kube-apiserver would say.

use serde_json::Value;

/// The syntax error Go's scanner finds first in `data`, or `None` when `data` is one valid JSON
/// value (surrounded by whitespace at most).
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut s = Scanner { data, pos: 0 };
    s.skip_space();
    if let Err(e) = s.value() {
        return Some(e.message());
    }
    s.skip_space();
    s.peek()
        .map(|c| Problem::Char(c, "after top-level value").message())
}

/// The name Go's messages give a JSON value's type (`cannot unmarshal number into ...`).
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A character quoted as Go's scanner quotes it in an error: `'x'`, `'\''`, `'"'`, `'\n'`.
fn quote_char(c: char) -> String {
    match c {
        '\'' => r"'\''".to_string(),
        '"' => "'\"'".to_string(),
        c => {
            let q = crate::machinery::field::go_quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

enum Problem {
    End,
    Char(char, &'static str),
}

impl Problem {
    fn message(&self) -> String {
        match self {
            Problem::End => "unexpected end of JSON input".to_string(),
            Problem::Char(c, context) => format!("invalid character {} {context}", quote_char(*c)),
        }
    }
}

struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    /// The byte at the cursor as Go quotes it: each byte on its own, read as a Latin-1 character.
    fn peek(&self) -> Option<char> {
        self.data.get(self.pos).map(|b| char::from(*b))
    }

    /// The next byte of a literal or number: at the end, Go's scanner sees a space.
    fn next_in(&mut self) -> Option<u8> {
        let b = self.data.get(self.pos).copied();
        self.pos += 1;
        b
    }

    fn next_byte(&mut self) -> Result<u8, Problem> {
        let b = *self.data.get(self.pos).ok_or(Problem::End)?;
        self.pos += 1;
        Ok(b)
    }

    /// The byte just read is at fault (a space when the input ended there).
    fn bad(&self, context: &'static str) -> Problem {
        let c = self.data.get(self.pos - 1).map_or(' ', |b| char::from(*b));
        Problem::Char(c, context)
    }

    fn skip_space(&mut self) {
        while matches!(self.data.get(self.pos), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<(), Problem> {
        self.skip_space();
        match self.next_byte()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' => {
                match self.next_in() {
                    Some(b'0') => {}
                    Some(b'1'..=b'9') => self.digits(),
                    _ => return Err(self.bad("in numeric literal")),
                }
                self.number_rest()
            }
            b'0' => self.number_rest(),
            b'1'..=b'9' => {
                self.digits();
                self.number_rest()
            }
            b't' => self.literal("rue", "true"),
            b'f' => self.literal("alse", "false"),
            b'n' => self.literal("ull", "null"),
            _ => Err(self.bad("looking for beginning of value")),
        }
    }

    fn literal(&mut self, rest: &str, word: &'static str) -> Result<(), Problem> {
        for expected in rest.bytes() {
            if self.next_in() != Some(expected) {
                let context: &'static str = match (word, expected) {
                    ("true", b'r') => "in literal true (expecting 'r')",
                    ("true", b'u') => "in literal true (expecting 'u')",
                    ("true", _) => "in literal true (expecting 'e')",
                    ("false", b'a') => "in literal false (expecting 'a')",
                    ("false", b'l') => "in literal false (expecting 'l')",
                    ("false", b's') => "in literal false (expecting 's')",
                    ("false", _) => "in literal false (expecting 'e')",
                    (_, b'u') => "in literal null (expecting 'u')",
                    _ => "in literal null (expecting 'l')",
                };
                return Err(self.bad(context));
            }
        }
        Ok(())
    }

    fn digits(&mut self) {
        while matches!(self.data.get(self.pos), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }

    fn number_rest(&mut self) -> Result<(), Problem> {
        if self.data.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if !matches!(self.next_in(), Some(b'0'..=b'9')) {
                return Err(self.bad("after decimal point in numeric literal"));
            }
            self.digits();
        }
        if matches!(self.data.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            let mut b = self.next_in();
            if matches!(b, Some(b'+' | b'-')) {
                b = self.next_in();
            }
            if !b.is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.bad("in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), Problem> {
        loop {
            match self.next_byte()? {
                b'"' => return Ok(()),
                b'\\' => match self.next_byte()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            if !self.next_byte()?.is_ascii_hexdigit() {
                                return Err(self.bad("in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    _ => return Err(self.bad("in string escape code")),
                },
                b if b < 0x20 => return Err(self.bad("in string literal")),
                _ => {}
            }
        }
    }

    fn object(&mut self) -> Result<(), Problem> {
        self.skip_space();
        match self.next_byte()? {
            b'}' => return Ok(()),
            b'"' => self.string()?,
            _ => return Err(self.bad("looking for beginning of object key string")),
        }
        loop {
            self.skip_space();
            if self.next_byte()? != b':' {
                return Err(self.bad("after object key"));
            }
            self.value()?;
            self.skip_space();
            match self.next_byte()? {
                b'}' => return Ok(()),
                b',' => {}
                _ => return Err(self.bad("after object key:value pair")),
            }
            self.skip_space();
            if self.next_byte()? != b'"' {
                return Err(self.bad("looking for beginning of object key string"));
            }
            self.string()?;
        }
    }

    fn array(&mut self) -> Result<(), Problem> {
        self.skip_space();
        if self.data.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_space();
            match self.next_byte()? {
                b']' => return Ok(()),
                b',' => {}
                _ => return Err(self.bad("after array element")),
            }
        }
    }
}

/// A string as Go's `encoding/json` writes it: HTML-safe (`<`, `>`, `&` escaped), U+2028 and
/// U+2029 escaped, other control characters as `\u00XX` unless they have a short escape.
pub fn write_string(out: &mut String, s: &str) {
    use std::fmt::Write as _;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_read_as_go_words_them() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"a": [1, 2.5e3, "x\n", true, null]}"#, None),
            ("  7 ", None),
            (
                "{not json",
                Some("invalid character 'n' looking for beginning of object key string"),
            ),
            ("", Some("unexpected end of JSON input")),
            (
                r#"{"a":}"#,
                Some("invalid character '}' looking for beginning of value"),
            ),
            (
                r#"{"k": tru}"#,
                Some("invalid character '}' in literal true (expecting 'e')"),
            ),
            (r#"{"k": "v""#, Some("unexpected end of JSON input")),
            (r#"{"a" 1}"#, Some("invalid character '1' after object key")),
            (
                r#"{"a": 1 "b"}"#,
                Some("invalid character '\"' after object key:value pair"),
            ),
            ("[1 2]", Some("invalid character '2' after array element")),
            ("{} x", Some("invalid character 'x' after top-level value")),
            ("-x", Some("invalid character 'x' in numeric literal")),
            (
                "1.x",
                Some("invalid character 'x' after decimal point in numeric literal"),
            ),
            (
                r#""\q""#,
                Some("invalid character 'q' in string escape code"),
            ),
            (
                "'a'",
                Some(r"invalid character '\'' looking for beginning of value"),
            ),
            (
                "\"a\nb\"",
                Some(r"invalid character '\n' in string literal"),
            ),
            ("01", Some("invalid character '1' after top-level value")),
            (
                "1e",
                Some("invalid character ' ' in exponent of numeric literal"),
            ),
            ("[", Some("unexpected end of JSON input")),
            (
                "nul",
                Some("invalid character ' ' in literal null (expecting 'l')"),
            ),
            (
                r#""\u12g4""#,
                Some(r"invalid character 'g' in \u hexadecimal character escape"),
            ),
            (
                r#"{"a":1,}"#,
                Some("invalid character '}' looking for beginning of object key string"),
            ),
            (
                "é",
                Some("invalid character 'Ã' looking for beginning of value"),
            ),
        ];
        assert_eq!(
            syntax_error(&[0x81]).as_deref(),
            Some(r"invalid character '\u0081' looking for beginning of value")
        );
        assert_eq!(
            syntax_error(&[0x01]).as_deref(),
            Some(r"invalid character '\x01' looking for beginning of value")
        );
        for (input, expected) in cases {
            assert_eq!(
                syntax_error(input.as_bytes()).as_deref(),
                *expected,
                "{input:?}"
            );
        }
    }
}
