//! One SOPS value: `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`, AES-256-GCM with a 32-byte IV and
//! the value's path (keys joined by `:`, with a trailing `:`) as additional data.
//!
//! The plaintext of a value is its text as SOPS writes it (see [`plain_bytes`]); its type tag says
//! how to read it back.

use aes_gcm::aead::consts::U32;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, Nonce, Tag};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Number, Value};

/// AES-256-GCM with SOPS's 32-byte nonce.
type SopsGcm = AesGcm<Aes256, U32>;

const IV_LEN: usize = 32;
const TAG_LEN: usize = 16;

/// Why one value could not be read or decrypted (never carries the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CipherError {
    /// Not in `ENC[AES256_GCM,...]` form.
    NotEncrypted,
    /// In that form, but a part is broken (which part).
    Malformed(&'static str),
    /// The tag does not verify: wrong data key, or the value or its path changed.
    Authentication,
    /// Decrypted, but the text does not read as its type.
    BadType(String),
}

/// The parts of an `ENC[...]` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EncValue {
    pub data: Vec<u8>,
    pub iv: Vec<u8>,
    pub tag: Vec<u8>,
    pub kind: String,
}

/// Whether `text` has the shape of an encrypted SOPS value.
pub(crate) fn looks_encrypted(text: &str) -> bool {
    text.starts_with("ENC[AES256_GCM,") && text.ends_with(']')
}

/// Reads the parts of an `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` value.
pub(crate) fn parse(text: &str) -> Result<EncValue, CipherError> {
    let inner = text
        .strip_prefix("ENC[AES256_GCM,")
        .and_then(|t| t.strip_suffix(']'))
        .ok_or(CipherError::NotEncrypted)?;
    let mut data = None;
    let mut iv = None;
    let mut tag = None;
    let mut kind = None;
    for part in inner.split(',') {
        let (name, value) = part
            .split_once(':')
            .ok_or(CipherError::Malformed("a part without `name:`"))?;
        match name {
            "data" => data = Some(value),
            "iv" => iv = Some(value),
            "tag" => tag = Some(value),
            "type" => kind = Some(value),
            _ => return Err(CipherError::Malformed("an unknown part")),
        }
    }
    let decode = |part: Option<&str>, what: &'static str| -> Result<Vec<u8>, CipherError> {
        let part = part.ok_or(CipherError::Malformed(what))?;
        STANDARD
            .decode(part)
            .map_err(|_| CipherError::Malformed(what))
    };
    let value = EncValue {
        data: decode(data, "data")?,
        iv: decode(iv, "iv")?,
        tag: decode(tag, "tag")?,
        kind: kind.ok_or(CipherError::Malformed("type"))?.to_string(),
    };
    if value.iv.len() != IV_LEN {
        return Err(CipherError::Malformed("iv"));
    }
    if value.tag.len() != TAG_LEN {
        return Err(CipherError::Malformed("tag"));
    }
    Ok(value)
}

/// Writes the `ENC[...]` form of `value`.
pub(crate) fn format(value: &EncValue) -> String {
    format!(
        "ENC[AES256_GCM,data:{},iv:{},tag:{},type:{}]",
        STANDARD.encode(&value.data),
        STANDARD.encode(&value.iv),
        STANDARD.encode(&value.tag),
        value.kind
    )
}

/// The text SOPS encrypts (and hashes into the MAC) for a plain value, with its type tag;
/// `None` for values SOPS does not touch (null, mappings, sequences).
pub(crate) fn plain_bytes(value: &Value) -> Option<(Vec<u8>, &'static str)> {
    match value {
        Value::String(s) => Some((s.as_bytes().to_vec(), "str")),
        Value::Bool(b) => Some((if *b { "True" } else { "False" }.into(), "bool")),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            (i.to_string().into_bytes(), "int")
        } else if let Some(u) = n.as_u64() {
            (u.to_string().into_bytes(), "int")
        } else {
            // Rust's `Display` for f64 is the shortest text that reads back exactly, without an
            // exponent: the same as Go's `FormatFloat(f, 'f', -1, 64)` SOPS uses.
            (
                format!("{}", n.as_f64().unwrap_or(0.0)).into_bytes(),
                "float",
            )
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Encrypts a plain scalar at `aad` (the value's path) with `key` and a fresh random IV.
/// An empty string stays an empty string, as SOPS leaves it.
pub(crate) fn encrypt_value(value: &Value, key: &[u8; 32], aad: &str) -> Option<String> {
    if value.as_str() == Some("") {
        return Some(String::new());
    }
    let (plain, kind) = plain_bytes(value)?;
    let mut iv = [0u8; IV_LEN];
    super::random_fill(&mut iv);
    let (data, tag) = seal(key, &iv, aad.as_bytes(), plain);
    Some(format(&EncValue {
        data,
        iv: iv.to_vec(),
        tag,
        kind: kind.to_string(),
    }))
}

/// AES-256-GCM with a 32-byte IV: the ciphertext and the 16-byte tag.
pub(crate) fn seal(
    key: &[u8; 32],
    iv: &[u8; IV_LEN],
    aad: &[u8],
    plain: Vec<u8>,
) -> (Vec<u8>, Vec<u8>) {
    let cipher = SopsGcm::new(key.into());
    let mut buffer = plain;
    let tag = cipher
        .encrypt_inout_detached(&Nonce::<U32>::from(*iv), aad, buffer.as_mut_slice().into())
        .expect("a value is far below AES-GCM's length limits");
    (buffer, tag.to_vec())
}

/// Decrypts an `ENC[...]` value at `aad` with `key` into its typed value.
pub(crate) fn decrypt_value(text: &str, key: &[u8; 32], aad: &str) -> Result<Value, CipherError> {
    let enc = parse(text)?;
    let plain = open(key, &enc, aad.as_bytes())?;
    typed(plain, &enc.kind)
}

/// Checks the tag and decrypts the bytes of `enc`.
pub(crate) fn open(key: &[u8; 32], enc: &EncValue, aad: &[u8]) -> Result<Vec<u8>, CipherError> {
    let cipher = SopsGcm::new(key.into());
    let mut buffer = enc.data.clone();
    let tag: &Tag = enc
        .tag
        .as_slice()
        .try_into()
        .map_err(|_| CipherError::Malformed("tag"))?;
    let nonce: &Nonce<U32> = enc
        .iv
        .as_slice()
        .try_into()
        .map_err(|_| CipherError::Malformed("iv"))?;
    cipher
        .decrypt_inout_detached(nonce, aad, buffer.as_mut_slice().into(), tag)
        .map_err(|_| CipherError::Authentication)?;
    Ok(buffer)
}

/// Reads decrypted text as its SOPS type.
fn typed(plain: Vec<u8>, kind: &str) -> Result<Value, CipherError> {
    let bad = || CipherError::BadType(kind.to_string());
    let text = || String::from_utf8(plain.clone()).map_err(|_| bad());
    Ok(match kind {
        // `time` values keep their RFC 3339 text: documents here hold timestamps as strings.
        "str" | "time" => Value::String(text()?),
        "bytes" => Value::String(String::from_utf8_lossy(&plain).into_owned()),
        "int" => {
            let t = text()?;
            match t.parse::<i64>() {
                Ok(i) => Value::Number(i.into()),
                Err(_) => Value::Number(t.parse::<u64>().map_err(|_| bad())?.into()),
            }
        }
        "float" => {
            let f: f64 = text()?.parse().map_err(|_| bad())?;
            Value::Number(Number::from_f64(f).ok_or_else(bad)?)
        }
        // Go's `strconv.ParseBool` spellings.
        "bool" => match text()?.as_str() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Value::Bool(true),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Value::Bool(false),
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: [u8; 32] = [7u8; 32];

    #[test]
    fn values_round_trip_with_their_types() {
        for v in [
            json!("s3cret"),
            json!(42),
            json!(-7),
            json!(1.5),
            json!(true),
            json!(false),
        ] {
            let enc = encrypt_value(&v, &KEY, "data:password:").unwrap();
            assert!(looks_encrypted(&enc), "{enc}");
            assert_eq!(decrypt_value(&enc, &KEY, "data:password:").unwrap(), v);
        }
    }

    #[test]
    fn type_tags_and_plain_text_are_sops_s() {
        assert_eq!(
            plain_bytes(&json!(true)).unwrap(),
            (b"True".to_vec(), "bool")
        );
        assert_eq!(plain_bytes(&json!(1.0)).unwrap(), (b"1".to_vec(), "float"));
        assert_eq!(
            plain_bytes(&json!(0.1)).unwrap(),
            (b"0.1".to_vec(), "float")
        );
        assert_eq!(
            plain_bytes(&json!(1e21)).unwrap().0,
            b"1000000000000000000000".to_vec()
        );
        assert_eq!(plain_bytes(&json!(12)).unwrap(), (b"12".to_vec(), "int"));
        assert!(plain_bytes(&json!(null)).is_none());
        let enc = encrypt_value(&json!(3), &KEY, "a:").unwrap();
        assert!(enc.ends_with(",type:int]"), "{enc}");
        assert_eq!(parse(&enc).unwrap().iv.len(), 32);
    }

    #[test]
    fn the_path_is_authenticated() {
        let enc = encrypt_value(&json!("x"), &KEY, "a:b:").unwrap();
        assert_eq!(
            decrypt_value(&enc, &KEY, "a:c:"),
            Err(CipherError::Authentication)
        );
        assert_eq!(
            decrypt_value(&enc, &[8u8; 32], "a:b:"),
            Err(CipherError::Authentication)
        );
    }

    #[test]
    fn empty_strings_stay_empty() {
        assert_eq!(encrypt_value(&json!(""), &KEY, "a:").unwrap(), "");
    }

    #[test]
    fn malformed_values_are_named_by_part() {
        assert_eq!(parse("hello"), Err(CipherError::NotEncrypted));
        assert_eq!(
            parse("ENC[AES256_GCM,data:!!,iv:AAAA,tag:AAAA,type:str]"),
            Err(CipherError::Malformed("data"))
        );
        assert_eq!(
            parse("ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA,type:str]"),
            Err(CipherError::Malformed("iv"))
        );
    }

    #[test]
    fn go_bool_spellings_are_read() {
        let (data, tag) = seal(&KEY, &[1u8; 32], b"k:", b"true".to_vec());
        let text = format(&EncValue {
            data,
            iv: vec![1u8; 32],
            tag,
            kind: "bool".into(),
        });
        assert_eq!(decrypt_value(&text, &KEY, "k:").unwrap(), json!(true));
    }
}
