//! How kube-apiserver reads a `continue` token, so that one which is not a token is refused in
//! its words: Go's base64 (the URL alphabet, unpadded, lenient about the last character's unused
//! bits), then Go's JSON into upstream's token struct, then what the token says.

const NOT_VALID: &str = "continue key is not valid";

/// The version, resourceVersion and start key of a continue token, or why it is not one.
pub(super) fn decode(text: &str) -> Result<(String, i64, String), String> {
    let raw = go_raw_url_base64(text)
        .map_err(|at| format!("{NOT_VALID}: illegal base64 data at input byte {at}"))?;
    let (v, rv, start) = token_fields(&raw).map_err(|why| format!("{NOT_VALID}: {why}"))?;
    if v != "meta.k8s.io/v1" {
        return Err(format!(
            "{NOT_VALID}: server does not recognize this encoded version {v}"
        ));
    }
    if rv == 0 {
        return Err(format!(
            "{NOT_VALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ));
    }
    if start.is_empty() {
        return Err(format!(
            "{NOT_VALID}: encoded start key empty (version meta.k8s.io/v1)"
        ));
    }
    // A key that climbs out of the list's prefix (`../x`) is refused, as upstream refuses it.
    let rooted = if start.starts_with('/') {
        start.clone()
    } else {
        format!("/{start}")
    };
    let unclean = rooted.split('/').any(|seg| seg == ".." || seg == ".")
        || rooted.contains("//")
        || (rooted.len() > 1 && rooted.ends_with('/'));
    if unclean {
        return Err(format!("{NOT_VALID}: {start}"));
    }
    Ok((v, rv, start))
}

/// Go's `base64.RawURLEncoding.DecodeString`: the URL alphabet without padding, line breaks
/// skipped, the unused bits of the last character ignored; `Err` is the offset Go reports.
fn go_raw_url_base64(text: &str) -> Result<Vec<u8>, usize> {
    let value = |b: u8| -> Option<u32> {
        match b {
            b'A'..=b'Z' => Some(u32::from(b - b'A')),
            b'a'..=b'z' => Some(u32::from(b - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(b - b'0') + 52),
            b'-' => Some(62),
            b'_' => Some(63),
            _ => None,
        }
    };
    let mut out = Vec::new();
    let (mut acc, mut n, mut last) = (0u32, 0usize, 0usize);
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if b == b'\n' || b == b'\r' {
            continue;
        }
        acc = (acc << 6) | value(b).ok_or(i)?;
        n += 1;
        last = i;
        if n == 4 {
            out.extend_from_slice(&acc.to_be_bytes()[1..]);
            (acc, n) = (0, 0);
        }
    }
    match n {
        0 => {}
        1 => return Err(last),
        2 => out.push((acc >> 4) as u8),
        _ => out.extend_from_slice(&((acc >> 2) as u16).to_be_bytes()),
    }
    Ok(out)
}

/// The three fields of a token as Go's `json.Unmarshal` reads them into upstream's struct
/// (`v`, `rv`, `start`; names matched case-insensitively, others ignored), or Go's error.
fn token_fields(raw: &[u8]) -> Result<(String, i64, String), String> {
    if let Some(e) = crate::machinery::gojson::syntax_error(raw) {
        return Err(e);
    }
    let value: serde_json::Value =
        serde_json::from_str(&String::from_utf8_lossy(raw)).map_err(|e| e.to_string())?;
    let (mut v, mut rv, mut start) = (String::new(), 0i64, String::new());
    let map = match value {
        serde_json::Value::Object(map) => map,
        serde_json::Value::Null => return Ok((v, rv, start)),
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type storage.continueToken",
                crate::machinery::gojson::type_name(&other)
            ));
        }
    };
    let wrong = |found: &serde_json::Value, field: &str, go_type: &str| {
        let found = match found {
            serde_json::Value::Number(n) => format!("number {n}"),
            other => crate::machinery::gojson::type_name(other).to_string(),
        };
        format!(
            "json: cannot unmarshal {found} into Go struct field continueToken.{field} of type {go_type}"
        )
    };
    let mut first_error = None;
    for (key, x) in &map {
        let field = ["v", "rv", "start"]
            .into_iter()
            .find(|f| key.eq_ignore_ascii_case(f));
        let problem = match (field, x) {
            (None, _) | (Some(_), serde_json::Value::Null) => None,
            (Some("rv"), serde_json::Value::Number(n)) => match n.as_i64() {
                Some(n) => {
                    rv = n;
                    None
                }
                None => Some(wrong(x, "rv", "int64")),
            },
            (Some("rv"), _) => Some(wrong(x, "rv", "int64")),
            (Some(f), serde_json::Value::String(text)) => {
                if f == "v" {
                    v = text.clone()
                } else {
                    start = text.clone()
                };
                None
            }
            (Some(f), _) => Some(wrong(x, f, "string")),
        };
        first_error = first_error.or(problem);
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok((v, rv, start)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn a_continue_token_that_is_not_one_is_refused_in_go_words() {
        let refused = |c: &str| decode(c).unwrap_err();
        // Go's decoder ignores the unused bits of the last character, then JSON reads the bytes.
        assert_eq!(
            refused("garbage"),
            "continue key is not valid: invalid character '\\u0081' looking for beginning of value"
        );
        assert_eq!(
            refused("ab!c"),
            "continue key is not valid: illegal base64 data at input byte 2"
        );
        assert_eq!(
            refused("abcde"),
            "continue key is not valid: illegal base64 data at input byte 4"
        );
        let encode = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
        assert_eq!(
            refused(&encode(r#"{"v":"x","rv":1,"start":"a"}"#)),
            "continue key is not valid: server does not recognize this encoded version x"
        );
        assert_eq!(
            refused(&encode(r#"{"v":"meta.k8s.io/v1","rv":"1","start":"a"}"#)),
            "continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64"
        );
        assert_eq!(
            refused(&encode(r#"[1]"#)),
            "continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken"
        );
        assert_eq!(
            refused(&encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            refused(&encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../b"}"#)),
            "continue key is not valid: ../b"
        );
        let ok = decode(&encode(
            r#"{"V":"meta.k8s.io/v1","rv":3,"start":"b\u0000","x":1}"#,
        ));
        assert_eq!(ok, Ok(("meta.k8s.io/v1".to_string(), 3, "b\0".to_string())));
    }
}
