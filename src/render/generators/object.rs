//! The ConfigMap or Secret of one generator entry, laid out as kustomize builds it: `apiVersion`, `kind`,
//! `metadata` (`name`, `namespace`, `labels`, `annotations`), then `type` (Secret), the data maps in key
//! order, and `immutable`.

use super::args::{Args, GeneratorKind, Options};
use super::sources::Pair;
use base64::Engine as _;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Builds the object of an entry from its pairs (keys already checked).
pub(super) fn build(
    kind: GeneratorKind,
    args: &Args,
    options: Option<&Options>,
    pairs: &[Pair],
) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(args.name.clone()));
    if !args.namespace.is_empty() {
        metadata.insert("namespace".into(), Value::String(args.namespace.clone()));
    }
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String("v1".into()));
    object.insert("kind".into(), Value::String(kind.kind().into()));
    object.insert("metadata".into(), Value::Null);

    let sorted: BTreeMap<&str, &[u8]> = pairs
        .iter()
        .map(|p| (p.key.as_str(), p.value.as_slice()))
        .collect();
    match kind {
        GeneratorKind::ConfigMap => {
            for (key, value) in sorted {
                let (field, value) = config_map_value(value);
                object
                    .entry(field)
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("a data map is an object")
                    .insert(key.to_string(), Value::String(value));
            }
        }
        GeneratorKind::Secret => {
            let secret_type = match args.secret_type.as_str() {
                "" => "Opaque",
                t => t,
            };
            object.insert("type".into(), Value::String(secret_type.into()));
            let data = sorted
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::String(encode_base64(v))))
                .collect();
            object.insert("data".into(), Value::Object(data));
        }
    }

    if let Some(options) = options {
        for (field, map) in [
            ("labels", &options.labels),
            ("annotations", &options.annotations),
        ] {
            if let Some(map) = map.as_ref().filter(|m| !m.is_empty()) {
                let map = map
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                metadata.insert(field.into(), Value::Object(map));
            }
        }
        if options.immutable {
            object.insert("immutable".into(), Value::Bool(true));
        }
    }
    object.insert("metadata".into(), Value::Object(metadata));
    Value::Object(object)
}

/// Where a ConfigMap value goes: `data` as text when it is UTF-8, else `binaryData` as base64.
pub(super) fn config_map_value(value: &[u8]) -> (&'static str, String) {
    match std::str::from_utf8(value) {
        Ok(text) => ("data", text.to_string()),
        Err(_) => ("binaryData", encode_base64(value)),
    }
}

/// Standard base64 as kustomize writes it: lines of 70 characters, each ending with a newline when there
/// is more than one (that is, when the encoding is 70 characters or longer).
pub(super) fn encode_base64(value: &[u8]) -> String {
    const LINE: usize = 70;
    let encoded = base64::engine::general_purpose::STANDARD.encode(value);
    if encoded.len() < LINE {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        // Base64 is ASCII, so every chunk is a whole string.
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pair(key: &str, value: &[u8]) -> Pair {
        Pair {
            key: key.into(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn config_map_layout() {
        let args = Args {
            name: "cm".into(),
            namespace: "ns".into(),
            ..Args::default()
        };
        let options = Options {
            labels: Some([("b".to_string(), "2".to_string()), ("a".into(), "1".into())].into()),
            annotations: Some(BTreeMap::new()),
            disable_name_suffix_hash: false,
            immutable: true,
        };
        let pairs = [
            pair("z", b"text\n"),
            pair("bin", &[0xff, 0xfe]),
            pair("a", b""),
        ];
        let object = build(GeneratorKind::ConfigMap, &args, Some(&options), &pairs);
        assert_eq!(
            serde_json::to_string(&object).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cm", "namespace": "ns", "labels": {"a": "1", "b": "2"}},
                   "data": {"a": "", "z": "text\n"}, "binaryData": {"bin": "//4="},
                   "immutable": true})
            .to_string()
        );
    }

    #[test]
    fn empty_config_map_has_no_data_but_empty_secret_has() {
        let args = Args {
            name: "x".into(),
            ..Args::default()
        };
        assert_eq!(
            build(GeneratorKind::ConfigMap, &args, None, &[]),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        );
        assert_eq!(
            build(GeneratorKind::Secret, &args, None, &[]),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "type": "Opaque", "data": {}})
        );
    }

    #[test]
    fn secret_values_are_wrapped_base64() {
        let args = Args {
            name: "s".into(),
            secret_type: "kubernetes.io/tls".into(),
            ..Args::default()
        };
        let object = build(
            GeneratorKind::Secret,
            &args,
            None,
            &[pair("k", &[b'a'; 52])],
        );
        assert_eq!(object["type"], "kubernetes.io/tls");
        let expected = "YWFh".repeat(17) + "YQ\n==\n";
        assert_eq!(object["data"]["k"], json!(expected));
    }

    #[test]
    fn base64_wraps_at_seventy() {
        assert_eq!(encode_base64(b"abc"), "YWJj");
        // 51 bytes encode to 68 characters, 52 to 72, 53 to 72: one or two lines.
        assert!(!encode_base64(&[0; 51]).contains('\n'));
        let two = encode_base64(&[0; 52]);
        assert_eq!(two.lines().map(str::len).collect::<Vec<_>>(), [70, 2]);
        assert!(two.ends_with('\n'));
        let three = encode_base64(&[0; 105]);
        assert_eq!(three.lines().map(str::len).collect::<Vec<_>>(), [70, 70]);
        assert!(three.ends_with('\n'));
    }
}
