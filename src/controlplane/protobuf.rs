//! Decodes Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) into the
//! JSON objects the API takes.
//!
//! kubectl's typed generators (`kubectl create secret|configmap|namespace …`) send their bodies
//! as protobuf: the magic `k8s\0`, then a `runtime.Unknown` envelope whose `typeMeta` names the
//! kind and whose `raw` holds the object. This module reads the wire format by hand (varints and
//! length-delimited fields; fixed-width fields are skipped) and maps the fields of the few kinds
//! such clients create to JSON, by the field numbers of the upstream `generated.proto` files
//! (see [`schema`]). Responses stay JSON, which every client accepts.
//!
//! Like the Go encoding, scalar fields that are not pointers upstream are always on the wire; their
//! zero values (`""`, `0`, `false`, an empty message) are dropped, as `omitempty` would drop them
//! from JSON. Unknown fields are skipped. No error message carries a field's value.

mod schema;

use base64::Engine;
use schema::{Card, Field, Message, Ty};
use serde_json::{Map, Value, json};

/// The first bytes of every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Why a protobuf body could not be decoded. Names messages and fields, never their values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("the body does not start with the Kubernetes protobuf prefix \"k8s\\0\"")]
    Magic,
    #[error("malformed protobuf in {message}: {problem}")]
    Malformed {
        message: &'static str,
        problem: &'static str,
    },
    #[error("malformed protobuf: {message}.{field} {problem}")]
    Field {
        message: &'static str,
        field: &'static str,
        problem: &'static str,
    },
    #[error("the protobuf envelope names no apiVersion and kind")]
    NoType,
    #[error(
        "the protobuf envelope has a contentEncoding or contentType this server does not decode"
    )]
    Encoding,
    #[error(
        "protobuf bodies are supported for {}; send {api_version} {kind} as JSON",
        schema::SUPPORTED
    )]
    Unsupported { api_version: String, kind: String },
}

impl ProtobufError {
    /// The body is well-formed but names a kind this decoder does not know (HTTP 415).
    pub fn is_unsupported_kind(&self) -> bool {
        matches!(self, ProtobufError::Unsupported { .. })
    }
}

/// Whether a Content-Type header names Kubernetes protobuf.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// Decodes a protobuf request body into the JSON object it stands for (`apiVersion`, `kind`,
/// `metadata`, and the kind's own fields).
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtobufError::Magic)?;
    let envelope = Envelope::read(rest)?;
    if !envelope.content_encoding.is_empty()
        || !(envelope.content_type.is_empty() || envelope.content_type == CONTENT_TYPE)
    {
        return Err(ProtobufError::Encoding);
    }
    if envelope.api_version.is_empty() || envelope.kind.is_empty() {
        return Err(ProtobufError::NoType);
    }
    let msg = schema::lookup(&envelope.api_version, &envelope.kind).ok_or_else(|| {
        ProtobufError::Unsupported {
            api_version: envelope.api_version.clone(),
            kind: envelope.kind.clone(),
        }
    })?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(envelope.api_version));
    out.insert("kind".into(), Value::String(envelope.kind));
    out.extend(message(envelope.raw, msg)?);
    Ok(Value::Object(out))
}

/// `runtime.Unknown`: typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3, contentType=4.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

impl<'a> Envelope<'a> {
    fn read(buf: &'a [u8]) -> Result<Envelope<'a>, ProtobufError> {
        const UNKNOWN: &str = "runtime.Unknown";
        const TYPE_META: &str = "runtime.TypeMeta";
        let mut env = Envelope {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
            content_encoding: String::new(),
            content_type: String::new(),
        };
        let mut r = Reader::new(buf, UNKNOWN);
        while let Some((num, wire)) = r.next()? {
            match num {
                1 => {
                    let mut t = Reader::new(len(wire, UNKNOWN, "typeMeta")?, TYPE_META);
                    while let Some((num, wire)) = t.next()? {
                        match num {
                            1 => env.api_version = string(wire, TYPE_META, "apiVersion")?,
                            2 => env.kind = string(wire, TYPE_META, "kind")?,
                            _ => {}
                        }
                    }
                }
                2 => env.raw = len(wire, UNKNOWN, "raw")?,
                3 => env.content_encoding = string(wire, UNKNOWN, "contentEncoding")?,
                4 => env.content_type = string(wire, UNKNOWN, "contentType")?,
                _ => {}
            }
        }
        Ok(env)
    }
}

/// One field's payload as it is on the wire.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Len(&'a [u8]),
    /// A fixed32/fixed64 field, already skipped (no supported field has one).
    Fixed,
}

/// Reads the fields of one message, in wire order.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    message: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], message: &'static str) -> Self {
        Reader {
            buf,
            pos: 0,
            message,
        }
    }

    fn malformed(&self, problem: &'static str) -> ProtobufError {
        ProtobufError::Malformed {
            message: self.message,
            problem,
        }
    }

    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value = 0u64;
        for i in 0..10 {
            let byte = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| self.malformed("a varint runs past the end of the message"))?;
            self.pos += 1;
            if i == 9 && byte > 1 {
                break;
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.malformed("a varint is longer than 64 bits"))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], ProtobufError> {
        let left = self.buf.len() - self.pos;
        let n = usize::try_from(n)
            .ok()
            .filter(|n| *n <= left)
            .ok_or_else(|| self.malformed("a field runs past the end of the message"))?;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The next field's number and payload, or `None` at the end of the message.
    fn next(&mut self) -> Result<Option<(u32, Wire<'a>)>, ProtobufError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let num = u32::try_from(key >> 3)
            .ok()
            .filter(|n| (1..1 << 29).contains(n))
            .ok_or_else(|| self.malformed("a field number is out of range"))?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed
            }
            2 => {
                let n = self.varint()?;
                Wire::Len(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed
            }
            3 | 4 => return Err(self.malformed("groups are not supported")),
            _ => return Err(self.malformed("a field has an invalid wire type")),
        };
        Ok(Some((num, wire)))
    }
}

fn len<'a>(
    wire: Wire<'a>,
    message: &'static str,
    field: &'static str,
) -> Result<&'a [u8], ProtobufError> {
    match wire {
        Wire::Len(b) => Ok(b),
        _ => Err(ProtobufError::Field {
            message,
            field,
            problem: "has the wrong wire type",
        }),
    }
}

fn string(wire: Wire, message: &'static str, field: &'static str) -> Result<String, ProtobufError> {
    let bytes = len(wire, message, field)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtobufError::Field {
        message,
        field,
        problem: "is not valid UTF-8",
    })
}

/// Decodes one message by its schema; fields come out in schema order, zero values dropped.
fn message(buf: &[u8], msg: &'static Message) -> Result<Map<String, Value>, ProtobufError> {
    let mut slots: Vec<Option<Value>> = vec![None; msg.fields.len()];
    let mut r = Reader::new(buf, msg.name);
    while let Some((num, wire)) = r.next()? {
        let Some(i) = msg.fields.iter().position(|f| f.num == num) else {
            continue;
        };
        let f = &msg.fields[i];
        let slot = &mut slots[i];
        if let Ty::StrMap | Ty::BytesMap = f.ty {
            let (k, v) = map_entry(msg, f, wire)?;
            match slot {
                Some(Value::Object(m)) => {
                    m.insert(k, v);
                }
                _ => *slot = Some(Value::Object(Map::from_iter([(k, v)]))),
            }
            continue;
        }
        let v = value(msg, f, wire)?;
        match (f.card, slot.as_mut(), v) {
            (Card::Many, Some(Value::Array(items)), v) => items.push(v),
            (Card::Many, _, v) => *slot = Some(Value::Array(vec![v])),
            // A message field seen twice merges, as protobuf does.
            (_, Some(Value::Object(old)), Value::Object(new)) => old.extend(new),
            (_, _, v) => *slot = Some(v),
        }
    }
    let mut out = Map::new();
    for (f, v) in msg.fields.iter().zip(slots) {
        let Some(v) = v else { continue };
        let keep = match f.card {
            Card::One => !is_zero(&v),
            Card::Opt => !v.is_null(),
            Card::Many => true,
        };
        if keep {
            out.insert(f.json.to_string(), v);
        }
    }
    Ok(out)
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

fn field_error(msg: &Message, f: &Field, problem: &'static str) -> ProtobufError {
    ProtobufError::Field {
        message: msg.name,
        field: f.json,
        problem,
    }
}

/// One (non-map) field value.
fn value(msg: &Message, f: &Field, wire: Wire) -> Result<Value, ProtobufError> {
    match (f.ty, wire) {
        (Ty::Str, _) => string(wire, msg.name, f.json).map(Value::String),
        // int32 values are sign-extended to 64 bits on the wire; truncating recovers them.
        (Ty::I32, Wire::Varint(v)) => Ok(json!(v as i32)),
        (Ty::I64, Wire::Varint(v)) => Ok(json!(v as i64)),
        (Ty::Bool, Wire::Varint(v)) => Ok(Value::Bool(v != 0)),
        (Ty::Time, Wire::Len(b)) => time(b, false).map_err(|p| field_error(msg, f, p)),
        (Ty::MicroTime, Wire::Len(b)) => time(b, true).map_err(|p| field_error(msg, f, p)),
        (Ty::IntOrString, Wire::Len(b)) => int_or_string(b),
        (Ty::Msg(m), Wire::Len(b)) => message(b, m).map(Value::Object),
        _ => Err(field_error(msg, f, "has the wrong wire type")),
    }
}

/// A map entry: key=1 (string), value=2 (string, or bytes shown as base64).
fn map_entry(msg: &Message, f: &Field, wire: Wire) -> Result<(String, Value), ProtobufError> {
    let mut r = Reader::new(len(wire, msg.name, f.json)?, msg.name);
    let (mut key, mut val) = (String::new(), Value::String(String::new()));
    while let Some((num, wire)) = r.next()? {
        match num {
            1 => key = string(wire, msg.name, f.json)?,
            2 if matches!(f.ty, Ty::BytesMap) => {
                let b = len(wire, msg.name, f.json)?;
                val = Value::String(base64::engine::general_purpose::STANDARD.encode(b));
            }
            2 => val = Value::String(string(wire, msg.name, f.json)?),
            _ => {}
        }
    }
    Ok((key, val))
}

/// `meta/v1.Time`/`MicroTime`: seconds=1, nanos=2; RFC 3339 in UTC, `null` when zero.
fn time(buf: &[u8], micro: bool) -> Result<Value, &'static str> {
    let mut r = Reader::new(buf, "meta.v1.Time");
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while let Some((num, wire)) = r.next().map_err(|_| "is not a valid timestamp")? {
        match (num, wire) {
            (1, Wire::Varint(v)) => seconds = v as i64,
            (2, Wire::Varint(v)) => nanos = i64::from(v as i32),
            (1 | 2, _) => return Err("is not a valid timestamp"),
            _ => {}
        }
    }
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let at = u32::try_from(nanos)
        .ok()
        .and_then(|n| chrono::DateTime::from_timestamp(seconds, n))
        .ok_or("is not a valid timestamp")?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Value::String(at.format(format).to_string()))
}

/// `util/intstr.IntOrString`: type=1 (0 int, 1 string), intVal=2, strVal=3.
fn int_or_string(buf: &[u8]) -> Result<Value, ProtobufError> {
    const NAME: &str = "intstr.IntOrString";
    let mut r = Reader::new(buf, NAME);
    let (mut is_str, mut int, mut text) = (false, 0i32, String::new());
    while let Some((num, wire)) = r.next()? {
        match (num, wire) {
            (1, Wire::Varint(v)) => is_str = v == 1,
            (2, Wire::Varint(v)) => int = v as i32,
            (3, _) => text = string(wire, NAME, "strVal")?,
            (1 | 2, _) => {
                return Err(ProtobufError::Malformed {
                    message: NAME,
                    problem: "a field has the wrong wire type",
                });
            }
            _ => {}
        }
    }
    Ok(if is_str { json!(text) } else { json!(int) })
}

#[cfg(test)]
#[path = "protobuf_tests.rs"]
mod tests;
