//! Objects kept packed in memory: their JSON text compressed with zstd. Objects of one kind share
//! most of their keys and many of their values, so a dictionary trained on a few of them packs the
//! others to a tenth of their text (a 1.7 KB RoleAssignment into ~170 bytes); without one, zstd
//! alone packs a large object to a third.
//!
//! A packed object says whether it used a dictionary: a reader given a codec without one (not
//! trained yet) still reads those packed without.

use serde_json::Value;
use std::cell::RefCell;
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict};

/// zstd's fastest level: with a dictionary, higher levels pack these objects only a few percent
/// smaller.
const LEVEL: i32 = 1;
/// The size of a trained dictionary.
const DICT_SIZE: usize = 16 * 1024;
/// How many objects a dictionary is trained on (fewer train none).
pub const SAMPLES: usize = 128;

/// Header: one byte (with a dictionary or not), then the text's length (u32, little-endian).
const HEADER: usize = 5;

/// How objects are packed: with a dictionary trained on their kind, or without.
#[derive(Default)]
pub struct Codec {
    dict: Option<(CDict<'static>, DDict<'static>)>,
}

/// The codec without a dictionary.
pub static PLAIN: std::sync::LazyLock<Codec> = std::sync::LazyLock::new(Codec::default);

thread_local! {
    static COMPRESS: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    static DECOMPRESS: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

impl Codec {
    /// A codec with a dictionary trained on `samples` (at least [`SAMPLES`] of them are needed;
    /// with fewer, or when training fails, none).
    pub fn trained(samples: &[Vec<u8>]) -> Codec {
        if samples.len() < SAMPLES {
            return Codec::default();
        }
        match zstd::dict::from_samples(samples, DICT_SIZE) {
            Ok(d) => Codec {
                dict: Some((CDict::create(&d, LEVEL), DDict::create(&d))),
            },
            Err(error) => {
                tracing::debug!(%error, "no packing dictionary trained");
                Codec::default()
            }
        }
    }

    /// Whether it packs with a dictionary.
    pub fn has_dictionary(&self) -> bool {
        self.dict.is_some()
    }

    /// `text`, packed.
    pub fn pack(&self, text: &[u8]) -> Box<[u8]> {
        let len = u32::try_from(text.len()).expect("an object under 4 GB");
        let mut body = Vec::with_capacity(zstd::zstd_safe::compress_bound(text.len()));
        COMPRESS.with_borrow_mut(|cctx| {
            match &self.dict {
                Some((cdict, _)) => cctx.compress_using_cdict(&mut body, text, cdict),
                None => cctx.compress(&mut body, text, LEVEL),
            }
            .expect("the buffer holds zstd's bound")
        });
        let mut out = Vec::with_capacity(HEADER + body.len());
        out.push(u8::from(self.dict.is_some()));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&body);
        out.into_boxed_slice()
    }

    /// The text `packed` was packed from (by this codec, or by one without a dictionary).
    pub fn unpack(&self, packed: &[u8]) -> Vec<u8> {
        let (head, body) = packed.split_at(HEADER);
        let len = u32::from_le_bytes(head[1..].try_into().expect("four bytes")) as usize;
        let mut out = Vec::with_capacity(len);
        DECOMPRESS.with_borrow_mut(|dctx| {
            match (head[0], &self.dict) {
                (0, _) => dctx.decompress(&mut out, body),
                (_, Some((_, ddict))) => dctx.decompress_using_ddict(&mut out, body, ddict),
                (_, None) => panic!("an object packed with a dictionary read without it"),
            }
            .expect("packed objects are zstd frames this codec wrote")
        });
        out
    }
}

/// An object kept as packed JSON text and parsed when read: a tenth of the memory of the parsed
/// tree or less, for objects read only now and then (a converged unit's rendered objects, between
/// its passes). One parse is shared by every reader while any of them holds it, and freed with
/// the last.
pub struct Frozen {
    text: Box<[u8]>,
    thawed: std::sync::Mutex<std::sync::Weak<Value>>,
}

impl Frozen {
    pub fn new(value: &Value) -> Frozen {
        let text = serde_json::to_vec(value).expect("JSON values serialise");
        Frozen {
            text: PLAIN.pack(&text),
            thawed: Default::default(),
        }
    }

    /// The object as compact JSON text, unparsed.
    pub fn text(&self) -> Vec<u8> {
        PLAIN.unpack(&self.text)
    }

    /// The object, parsed (or the parse another reader holds).
    pub fn get(&self) -> std::sync::Arc<Value> {
        let mut thawed = self.thawed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = thawed.upgrade() {
            return v;
        }
        let v = std::sync::Arc::new(
            serde_json::from_slice(&self.text()).expect("frozen objects are the JSON they wrote"),
        );
        *thawed = std::sync::Arc::downgrade(&v);
        v
    }
}

impl Clone for Frozen {
    fn clone(&self) -> Frozen {
        Frozen {
            text: self.text.clone(),
            thawed: Default::default(),
        }
    }
}

/// Equal when they hold equal objects.
impl PartialEq for Frozen {
    fn eq(&self, other: &Frozen) -> bool {
        self.text == other.text || *self.get() == *other.get()
    }
}

/// Its size only: an object may hold secret values.
impl std::fmt::Debug for Frozen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Frozen({} bytes)", self.text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(i: usize) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"authorization.azure.com/v1api20220401","kind":"RoleAssignment","metadata":{{"name":"ra-{i}","namespace":"aro-c{i:05}","uid":"{i:08x}-79aa-4cea"}},"spec":{{"principalType":"ServicePrincipal"}},"status":{{"conditions":[{{"type":"Ready","status":"True"}}]}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn packed_objects_read_back_with_and_without_a_dictionary() {
        let plain = Codec::default();
        let samples: Vec<Vec<u8>> = (0..SAMPLES * 2).map(object).collect();
        let trained = Codec::trained(&samples);
        assert!(trained.has_dictionary());
        assert!(!Codec::trained(&samples[..SAMPLES - 1]).has_dictionary());
        for text in [object(7), object(100_000), Vec::new()] {
            let (a, b) = (plain.pack(&text), trained.pack(&text));
            assert_eq!(plain.unpack(&a), text);
            assert_eq!(trained.unpack(&b), text);
            // Packed without a dictionary: readable by a trained codec too.
            assert_eq!(trained.unpack(&a), text);
        }
        let one = object(123_456);
        assert!(
            trained.pack(&one).len() * 3 < one.len(),
            "a dictionary packs small objects"
        );
        assert_eq!(
            trained.pack(&one),
            trained.pack(&one),
            "the same text packs the same"
        );
    }

    #[test]
    fn a_frozen_object_reads_as_it_was_and_shares_one_parse_while_held() {
        let v =
            serde_json::json!({"kind": "X", "spec": {"b": 1.5, "a": [true, null, "s"], "n": -3}});
        let f = Frozen::new(&v);
        let (one, two) = (f.get(), f.get());
        assert_eq!(*one, v);
        assert_eq!(
            serde_json::to_string(&*one).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
        assert!(std::sync::Arc::ptr_eq(&one, &two));
        drop((one, two));
        assert_eq!(*f.clone().get(), v);
        assert_eq!(format!("{f:?}"), format!("Frozen({} bytes)", f.text.len()));
    }
}
