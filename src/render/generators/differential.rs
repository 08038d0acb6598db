//! Differential test: small kustomizations made only of generators (and bases for merge and replace), built
//! by `kubectl kustomize` (kustomize v5.5) and by this module, must give the same objects, names with their
//! hash suffix; and where kustomize fails, so must we. Skipped when kubectl is not on PATH.
//!
//! The accumulation kustomize does around generators (bases first, then `configMapGenerator`, then
//! `secretGenerator`, each merged into the object of the same kind, name and namespace, hash suffixes
//! appended last) is emulated here by hand.

use super::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What kustomize and this module are expected to do with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The same objects, or both fail.
    Same,
    /// kustomize succeeds but this module refuses, on purpose (see the module header of `generators`).
    Stricter,
    /// kustomize fails (when printing the result) but this module succeeds: a known limitation.
    Looser,
    /// Both succeed with the same names (so the same hashes), but kubectl's printed data reads back
    /// differently: its YAML output is lossy for these values.
    SameNames,
    /// Both succeed but differ: a known limitation.
    Differs,
}

struct Case {
    name: &'static str,
    /// The folder to build, relative to the case root.
    target: &'static str,
    files: Vec<(&'static str, Vec<u8>)>,
    /// Symlinks: (link, target as written).
    links: Vec<(&'static str, &'static str)>,
    expect: Expect,
    /// For a case both must refuse: what our error must say.
    error: Option<&'static str>,
}

impl Case {
    fn fails(self, error: &'static str) -> Case {
        Case {
            error: Some(error),
            ..self
        }
    }
}

fn case(name: &'static str, files: &[(&'static str, &[u8])]) -> Case {
    Case {
        name,
        target: ".",
        files: files.iter().map(|(p, c)| (*p, c.to_vec())).collect(),
        links: Vec::new(),
        expect: Expect::Same,
        error: None,
    }
}

fn overlay(name: &'static str, files: &[(&'static str, &[u8])]) -> Case {
    Case {
        target: "overlay",
        ..case(name, files)
    }
}

const K: &str = "kustomization.yaml";

fn cases() -> Vec<Case> {
    let long_text = "line of text\n".repeat(800);
    let binary_long: Vec<u8> = (0..=255u8).cycle().take(700).collect();
    let mut cases = vec![
        case("literals", &[(K, b"configMapGenerator:\n- name: lit\n  literals:\n  - a=1\n  - b=x=y\n  - empty=\n  - dq=\"quoted\"\n  - sq='single'\n  - half='\n  - mixed=\"x'\n  - spaces=  padded  \n  - 'yes=true'\n")]),
        case("literal with newlines", &[(K, b"configMapGenerator:\n- name: nl\n  literals:\n  - |\n    initial.txt=greetings\n    everyone\n  - \"tail=ends with newline\\n\"\n")]),
        case("files", &[
            (K, b"configMapGenerator:\n- name: files\n  files:\n  - app.properties\n  - renamed=sub/conf.ini\n  - sub/empty.txt\n  - ./dotted.txt\n"),
            ("app.properties", b"a=1\nb=2\n"),
            ("sub/conf.ini", b"[x]\ny = z"),
            ("sub/empty.txt", b""),
            ("dotted.txt", b"dot\n"),
        ]),
        case("env files", &[
            (K, b"configMapGenerator:\n- name: envs\n  envs:\n  - one.env\n  - two.env\n  env: three.env\n"),
            ("one.env", b"\xef\xbb\xbfFIRST=1\r\n# comment\n\n   INDENTED=  v  \nBARE\nQUOTED=\"kept\"\nEQ=a=b\n=no-key\n"),
            ("two.env", b"\tTAB=t\nEMPTY=\nLAST=no-newline"),
            ("three.env", b"DEPRECATED=env\n"),
        ]),
        case("binary data", &[
            (K, b"configMapGenerator:\n- name: bin\n  files:\n  - small.bin\n  - long.bin\n  - text.txt\n  literals:\n  - lit=x\n"),
            ("small.bin", b"\x00\x01\xff"),
            ("text.txt", b"plain \x00 nul is still UTF-8\n"),
        ]),
        case("options", &[(K, b"configMapGenerator:\n- name: opts\n  literals: [k=v]\n  options:\n    labels: {app: web, tier: \"1\"}\n    annotations: {note: hello, empty: \"\"}\n    immutable: true\n")]),
        case("generatorOptions", &[(K, b"generatorOptions:\n  labels: {l: global, g: global}\n  annotations: {an: global}\n  immutable: true\nconfigMapGenerator:\n- name: merged\n  literals: [k=v]\n  options:\n    labels: {l: local}\n    immutable: false\n- name: plain\n  literals: [k=v]\nsecretGenerator:\n- name: sec\n  literals: [k=v]\n")]),
        case("disableNameSuffixHash", &[(K, b"configMapGenerator:\n- name: nohash\n  literals: [k=v]\n  options: {disableNameSuffixHash: true}\n- name: hash\n  literals: [k=v]\n  options: {disableNameSuffixHash: false}\n")]),
        case("global disableNameSuffixHash", &[(K, b"generatorOptions: {disableNameSuffixHash: true}\nconfigMapGenerator:\n- name: a\n  literals: [k=v]\n  options: {disableNameSuffixHash: false}\nsecretGenerator:\n- name: b\n  literals: [k=v]\n")]),
        case("secrets", &[
            (K, b"secretGenerator:\n- name: opaque\n  literals:\n  - user=admin\n  - password=\"s3cr3t\"\n  files:\n  - long.txt\n  envs: [s.env]\n"),
            ("s.env", b"TOKEN=abc\n"),
        ]),
        case("secret types", &[
            (K, b"secretGenerator:\n- name: tls\n  type: kubernetes.io/tls\n  files: [tls.crt, tls.key]\n- name: empty-type\n  type: \"\"\n  literals: [a=b]\n- name: docker\n  type: kubernetes.io/dockerconfigjson\n  files: [.dockerconfigjson=docker.json]\n"),
            ("tls.crt", b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
            ("tls.key", b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"),
            ("docker.json", b"{\"auths\":{}}"),
        ]),
        case("secret options", &[(K, b"secretGenerator:\n- name: s\n  literals: [a=b]\n  options:\n    immutable: true\n    labels: {x: z}\n    annotations: {z: w}\n")]),
        case("namespaced", &[(K, b"configMapGenerator:\n- name: cm\n  namespace: team-a\n  literals: [k=v]\nsecretGenerator:\n- name: s\n  namespace: team-b\n  literals: [k=v]\n")]),
        case("escapes in the hash", &[
            (K, b"configMapGenerator:\n- name: esc\n  files: [chars.txt]\n  literals:\n  - \"html=<a href='x'>&amp;</a>\"\n  - \"controls=tab\\there\\u0001\\u0000\\e\\b\\f\\r\\u00a0\\ufeff\"\n  - \"unicode=\\u00e9 \\u2028 \\u2029 \\U0001F600\"\n  - \"slashes=back\\\\slash \\\"quote\\\" /\"\n"),
            ("chars.txt", "caf\u{e9} \u{1F600}\n\t<tag>\n".as_bytes()),
        ]),
        Case {
            // kubectl prints U+2028 and U+2029 raw and indents after them, which reads back with spaces.
            expect: Expect::SameNames,
            ..case("odd characters in literals", &[(K, b"configMapGenerator:\n- name: c0\n  literals: [\"k=a\\u0001b\"]\n- name: c1\n  literals: [\"k=a\\bb\"]\n- name: c2\n  literals: [\"k=a\\fb\"]\n- name: c3\n  literals: [\"k=a\\rb\"]\n- name: c4\n  literals: [\"k=a\\tb\"]\n- name: c5\n  literals: [\"k=a\\u00a0b\"]\n- name: c6\n  literals: [\"k=a\\u2028b\"]\n- name: c7\n  literals: [\"k=a\\u2029b\"]\n- name: c8\n  literals: [\"k=a\\ufeffb\"]\n- name: c9\n  literals: [\"k=a\\u0000b\"]\n- name: c10\n  literals: [\"k=a\\eb\"]\n- name: c11\n  literals: [\"k=a\\u001fb\"]\n- name: c12\n  literals: [\"k=a\\_b\"]\n- name: c13\n  literals: [\"k=a\\Lb\"]\n- name: c14\n  literals: [\"k=a\\Pb\"]\n- name: c15\n  literals: [\"k=a\\u00e9b\"]\n- name: c16\n  literals: [\"k=a\\U0001F600b\"]\n- name: c17\n  literals: [\"k=a<b\"]\n- name: c18\n  literals: [\"k=a>b\"]\n- name: c19\n  literals: [\"k=a&b\"]\n- name: c20\n  literals: [\"k=a\\\\b\"]\n- name: c21\n  literals: [\"k=a\\\"b\"]\n")])
        },
        Case {
            // kustomize reads its own arguments back as YAML 1.1, where NEL is a line break: it becomes a space.
            expect: Expect::Differs,
            ..case("NEL in a literal", &[(K, b"configMapGenerator:\n- name: x\n  literals: [\"k=a\\u0085b\"]\n")])
        },
        case("key order", &[(K, b"configMapGenerator:\n- name: order\n  literals: [b=1, B=2, a=3, _u=4, -d=5, .dot=6, a0=7, Z.z=8, yes=9, 0a=10]\n")]),
        case("empty generators", &[(K, b"configMapGenerator:\n- name: empty-cm\nsecretGenerator:\n- name: empty-secret\n")]),
        case("many generators", &[(K, b"configMapGenerator:\n- name: one\n  literals: [a=1]\n- name: two\n  literals: [a=2]\nsecretGenerator:\n- name: one\n  literals: [a=1]\n- name: two\n  literals: [a=2]\n")]),
        case("field names fold", &[(K, b"configMapGenerator:\n- NAME: folded\n  Literals: [a=1]\n  OPTIONS: {Labels: {a: b}, IMMUTABLE: true}\n")]),
        case("unknown behavior creates", &[(K, b"configMapGenerator:\n- name: x\n  behavior: Merge\n  literals: [a=1]\n")]),
        case("nulls", &[(K, b"configMapGenerator:\n- name: x\n  literals: null\n  namespace: null\n  options: {labels: {a: null}}\n")]),
        case("large values", &[
            (K, b"configMapGenerator:\n- name: big\n  files: [long.txt]\nsecretGenerator:\n- name: big\n  files: [long.txt]\n"),
        ]),
        case("symlink inside", &[(K, b"configMapGenerator:\n- name: x\n  files: [link.txt]\n"), ("real.txt", b"real\n")]),
    ];
    cases.extend(overlays_and_failing());
    for case in &mut cases {
        match case.name {
            "binary data" => case.files.push(("long.bin", binary_long.clone())),
            "secrets" | "large values" => case
                .files
                .push(("long.txt", long_text.clone().into_bytes())),
            "symlink inside" => case.links.push(("link.txt", "real.txt")),
            "symlink outside fails" => case.links.push(("escape.txt", "../outside.txt")),
            _ => {}
        }
    }
    cases.push(randomized());
    let mut long_line = b"A=".to_vec();
    long_line.resize(70_000, b'x');
    long_line.extend_from_slice(b"\nB=2\n");
    cases.push(Case {
        expect: Expect::Stricter,
        ..case(
            "env line over 64 KiB",
            &[(K, b"configMapGenerator:\n- name: x\n  envs: [e.env]\n")],
        )
        .fails("line 1: is 64 KiB or longer")
    });
    cases.last_mut().unwrap().files.push(("e.env", long_line));
    cases
}

/// Cases over a base (`overlay`) and cases the renderer must refuse.
fn overlays_and_failing() -> Vec<Case> {
    vec![
        overlay("merge", &[
            ("base/kustomization.yaml", b"configMapGenerator:\n- name: cm\n  literals: [fruit=apple, year=2020]\n  options: {labels: {l1: base, l2: base}, annotations: {a1: base}}\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [veggie=broccoli, year=2021]\n  options: {labels: {l2: overlay}}\n"),
        ]),
        overlay("merge with envs", &[
            ("base/kustomization.yaml", b"configMapGenerator:\n- name: test-configmap\n  behavior: create\n  envs: [properties]\n"),
            ("base/properties", b"VAR1=100\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: test-configmap\n  behavior: merge\n  envs: [properties]\n"),
            ("overlay/properties", b"VAR2=200\n"),
        ]),
        overlay("merge without hash in base", &[
            ("base/kustomization.yaml", b"configMapGenerator:\n- name: cm\n  literals: [a=1]\n  files: [b.bin]\n  options: {disableNameSuffixHash: true}\n"),
            ("base/b.bin", b"\xfe\xff"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [c=3]\n  files: [d.bin]\n"),
            ("overlay/d.bin", b"\x80"),
        ]),
        overlay("merge disabling hash in overlay", &[
            ("base/kustomization.yaml", b"generatorOptions: {labels: {foo: bar}}\nconfigMapGenerator:\n- name: cm\n  literals: [foo=bar]\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\ngeneratorOptions: {disableNameSuffixHash: true, labels: {fruit: apple}}\nconfigMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [fruit=apple]\n"),
        ]),
        overlay("replace", &[
            ("base/kustomization.yaml", b"configMapGenerator:\n- name: cm\n  literals: [a=1, b=2]\n  options: {labels: {l: base}, annotations: {a: base}}\nsecretGenerator:\n- name: s\n  literals: [a=1]\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: cm\n  behavior: replace\n  literals: [c=3]\n  options: {labels: {l2: overlay}}\nsecretGenerator:\n- name: s\n  behavior: replace\n  literals: [b=2]\n  options: {disableNameSuffixHash: true}\n"),
        ]),
        overlay("secret merge loses the base type", &[
            ("base/kustomization.yaml", b"secretGenerator:\n- name: s\n  type: kubernetes.io/tls\n  literals: [tls.crt=x, tls.key=y]\n  options: {immutable: true}\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nsecretGenerator:\n- name: s\n  behavior: merge\n  literals: [extra=1]\n"),
        ]),
        overlay("merge into a plain resource", &[
            ("base/kustomization.yaml", b"resources: [cm.yaml]\n"),
            ("base/cm.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  labels: {p: q}\ndata:\n  n: 1\n  f: 1.5\n  t: true\n  s: x\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: plain\n  behavior: merge\n  literals: [m=1]\n"),
        ]),
        Case {
            target: "top",
            ..case("three layers", &[
                ("base/kustomization.yaml", b"configMapGenerator:\n- name: cm\n  literals: [a=1]\n"),
                ("mid/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [b=2]\n"),
                ("top/kustomization.yaml", b"resources: [../mid]\nconfigMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [a=3, c=4]\n"),
            ])
        },
        overlay("create over a base object fails", &[
            ("base/kustomization.yaml", b"configMapGenerator:\n- name: cm\n  literals: [a=1]\n"),
            ("overlay/kustomization.yaml", b"resources: [../base]\nconfigMapGenerator:\n- name: cm\n  literals: [a=2]\n"),
        ]).fails("cannot create"),
        case("merge without a base fails", &[(K, b"configMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [a=1]\n")]).fails("cannot merge or replace"),
        case("same name twice fails", &[(K, b"secretGenerator:\n- name: test\n  literals: [a=1]\n- name: test\n  literals: [a=1]\n")]).fails("cannot create"),
        case("duplicate key fails", &[(K, b"configMapGenerator:\n- name: x\n  literals: [a=1]\n  envs: [e.env]\n"), ("e.env", b"a=2\n")]).fails("the key \"a\" is given more than once"),
        case("duplicate file base name fails", &[(K, b"configMapGenerator:\n- name: x\n  files: [f.txt, sub/f.txt]\n"), ("f.txt", b"1"), ("sub/f.txt", b"2")]).fails("the key \"f.txt\" is given more than once"),
        case("file outside the folder fails", &[(K, b"configMapGenerator:\n- name: x\n  files: [../outside.txt]\n"), ("../outside.txt", b"no")]).fails("is not in or below the kustomization folder"),
        case("symlink outside fails", &[(K, b"configMapGenerator:\n- name: x\n  files: [escape.txt]\n"), ("../outside.txt", b"no")]).fails("is not in or below the kustomization folder"),
        case("missing file fails", &[(K, b"configMapGenerator:\n- name: x\n  envs: [missing.env]\n")]).fails("does not exist"),
        case("directory as file fails", &[(K, b"configMapGenerator:\n- name: x\n  files: [sub]\n"), ("sub/f.txt", b"1")]).fails("is not a file"),
        case("invalid literal fails", &[(K, b"secretGenerator:\n- name: x\n  literals: [no-equals-sign]\n")]).fails("literals[0] is not KEY=VALUE"),
        case("literal without key fails", &[(K, b"configMapGenerator:\n- name: x\n  literals: [=value]\n")]).fails("literals[0] is not KEY=VALUE"),
        case("file source without key fails", &[(K, b"configMapGenerator:\n- name: x\n  files: [=f.txt]\n"), ("f.txt", b"1")]).fails("missing the key"),
        case("unknown field fails", &[(K, b"configMapGenerator:\n- name: x\n  literal: [a=1]\n")]).fails("unknown field \"literal\""),
        case("wrong type fails", &[(K, b"configMapGenerator:\n- name: x\n  options: {disableNameSuffixHash: \"true\"}\n")]).fails("must be a boolean"),
        case("missing name fails", &[(K, b"secretGenerator:\n- literals: [a=1]\n")]).fails("secretGenerator[0]: has no name"),
        Case {
            expect: Expect::Looser,
            ..case("numeric key", &[(K, b"configMapGenerator:\n- name: x\n  literals: ['0=zero', '1.5=x']\n")])
        },
        Case {
            expect: Expect::Looser,
            ..case("DEL in a literal", &[(K, b"configMapGenerator:\n- name: x\n  literals: [\"k=a\\u007fb\"]\n")])
        },
        Case {
            expect: Expect::Stricter,
            ..case("invalid key", &[(K, b"configMapGenerator:\n- name: x\n  literals: [\"a b=c\"]\n")]).fails("is not a valid key")
        },
        Case {
            expect: Expect::Stricter,
            ..case("env key with a space", &[(K, b"configMapGenerator:\n- name: x\n  envs: [e.env]\n"), ("e.env", b"KEY =value\n")]).fails("is not a valid key")
        },
    ]
}

/// Many ConfigMaps and Secrets with pseudo-random keys, literal values and binary files (fixed seed).
fn randomized() -> Case {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n
    };
    const KEY_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
    // Characters kubectl's YAML reads and prints faithfully (not NEL, DEL, C1 controls, U+2028/9).
    let value_chars: Vec<char> =
        "abc XYZ 019 \t\n\r\u{1}\u{8}\u{c}\u{1b}\"'\\/<>&=#:-{}[],|é中😀\u{a0}\u{feff}"
            .chars()
            .collect();
    let mut kustomization = String::from("configMapGenerator:\n");
    let mut files: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let file_names: [&'static str; 6] =
        ["b0.bin", "b1.bin", "b2.bin", "b3.bin", "b4.bin", "b5.bin"];
    for (i, name) in file_names.iter().enumerate() {
        let len = [0, 1, 51, 52, 53, 400][i];
        let mut bytes: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
        bytes.push(0xff);
        files.push((name, bytes));
    }
    for generator in ["configMapGenerator", "secretGenerator"] {
        if generator == "secretGenerator" {
            kustomization.push_str("secretGenerator:\n");
        }
        for i in 0..40 {
            kustomization.push_str(&format!("- name: r{i}\n  literals:\n"));
            let mut keys = std::collections::BTreeSet::new();
            for _ in 0..next(6) {
                let mut key = String::from("k");
                for _ in 0..next(8) {
                    key.push(KEY_CHARS[next(KEY_CHARS.len())] as char);
                }
                if !keys.insert(key.clone()) {
                    continue;
                }
                let value: String = (0..next(120))
                    .map(|_| value_chars[next(value_chars.len())])
                    .collect();
                // A JSON string is a YAML double-quoted string; a raw BOM inside one trips go-yaml at
                // buffer boundaries (it drops entries), so it is escaped.
                let literal = serde_json::to_string(&format!("{key}={value}"))
                    .unwrap()
                    .replace('\u{feff}', "\\ufeff");
                kustomization.push_str(&format!("  - {literal}\n"));
            }
            if next(3) == 0 {
                kustomization.push_str(&format!(
                    "  files: [{}]\n",
                    file_names[next(file_names.len())]
                ));
            }
        }
    }
    files.push((K, kustomization.into_bytes()));
    Case {
        name: "randomized",
        target: ".",
        files,
        links: Vec::new(),
        expect: Expect::Same,
        error: None,
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds `target` with kubectl: the objects, or `None` when it fails.
fn kubectl(target: &Path) -> Option<Vec<Value>> {
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(target)
        // A bare key in an env file must not be read from here.
        .env("BARE", "from-the-environment")
        .output()
        .expect("kubectl runs");
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).expect("kubectl prints UTF-8");
    Some(crate::yaml::from_multi_str(&text).expect("kubectl prints YAML"))
}

/// An accumulated object and whether it wants the hash suffix.
struct Accumulated {
    object: Value,
    hash: bool,
}

/// Builds `dir` as kustomize would for generator-only kustomizations, then appends hash suffixes.
fn native(root: &Path, dir: &Path) -> Result<Vec<Value>, String> {
    let mut objects = accumulate(root, dir)?;
    for acc in &mut objects {
        if acc.hash {
            let hash = content_hash(&acc.object).map_err(|e| e.to_string())?;
            let name = &mut acc.object["metadata"]["name"];
            *name = Value::String(format!("{}-{hash}", name.as_str().unwrap_or_default()));
        }
    }
    Ok(objects.into_iter().map(|a| a.object).collect())
}

/// Kind, namespace and name; as kustomize matches ids, no namespace is the `default` namespace.
fn identity(object: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let namespace = match text(&object["metadata"]["namespace"]) {
        ns if ns.is_empty() => "default".to_string(),
        ns => ns,
    };
    (
        text(&object["kind"]),
        namespace,
        text(&object["metadata"]["name"]),
    )
}

fn accumulate(root: &Path, dir: &Path) -> Result<Vec<Accumulated>, String> {
    let text = std::fs::read_to_string(dir.join(K)).map_err(|e| e.to_string())?;
    let kustomization = crate::yaml::from_str(&text).map_err(|e| e.to_string())?;
    let mut objects = Vec::new();
    for resource in kustomization["resources"].as_array().into_iter().flatten() {
        let path = dir.join(resource.as_str().unwrap_or_default());
        if path.is_dir() {
            objects.extend(accumulate(root, &std::fs::canonicalize(&path).unwrap())?);
        } else {
            let docs = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            for object in crate::yaml::from_multi_str(&docs).map_err(|e| e.to_string())? {
                objects.push(Accumulated {
                    object,
                    hash: false,
                });
            }
        }
    }
    let file = dir.strip_prefix(root).unwrap().join(K);
    let loader = crate::render::inputs::Loader::new(root.to_path_buf());
    let ctx = GeneratorContext {
        loader: &loader,
        dir,
        file: &file,
    };
    let options = &kustomization["generatorOptions"];
    let mut generated = config_maps(&kustomization["configMapGenerator"], options, &ctx)
        .map_err(|e| e.to_string())?;
    generated.extend(
        secrets(&kustomization["secretGenerator"], options, &ctx).map_err(|e| e.to_string())?,
    );
    for g in generated {
        let id = identity(&g.object);
        match objects.iter_mut().find(|a| identity(&a.object) == id) {
            None if g.behavior == Behavior::Create => objects.push(Accumulated {
                object: g.object,
                hash: g.hash,
            }),
            None => return Err(format!("{id:?} does not exist; cannot merge or replace")),
            Some(existing) => {
                merge_into(&mut existing.object, &g.object, g.behavior)
                    .map_err(|e| e.to_string())?;
                existing.hash = hash_after_merge(existing.hash, g.hash);
            }
        }
    }
    Ok(objects)
}

fn write_case(case: &Case) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    // Cases live one level down so that `../outside.txt` stays inside the temporary folder.
    let root = std::fs::canonicalize(tmp.path()).unwrap().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    for (path, content) in &case.files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    for (link, target) in &case.links {
        std::os::unix::fs::symlink(target, root.join(link)).unwrap();
    }
    (tmp, root)
}

fn sorted(mut objects: Vec<Value>) -> Vec<Value> {
    objects.sort_by_key(identity);
    objects
}

#[test]
fn generators_match_kubectl_kustomize() {
    if !kubectl_available() {
        eprintln!("kubectl is not on PATH: skipping the differential test of the generators");
        return;
    }
    let cases = cases();
    assert!(cases.len() >= 20);
    let mut failures = Vec::new();
    for case in &cases {
        let (_tmp, root) = write_case(case);
        let target = std::fs::canonicalize(root.join(case.target)).unwrap();
        let theirs = kubectl(&target).map(sorted);
        let ours = native(&root, &target).map(sorted);
        let agree = match (&theirs, &ours, case.expect) {
            (Some(theirs), Ok(ours), Expect::Same) => theirs == ours,
            (None, Err(e), Expect::Same) | (Some(_), Err(e), Expect::Stricter) => {
                case.error.is_some_and(|expected| e.contains(expected))
            }
            (None, Ok(_), Expect::Looser) => true,
            (Some(theirs), Ok(ours), Expect::SameNames) => {
                theirs.iter().map(identity).eq(ours.iter().map(identity))
            }
            (Some(theirs), Ok(ours), Expect::Differs) => theirs != ours,
            _ => false,
        };
        if !agree {
            if let (Some(theirs), Ok(ours)) = (&theirs, &ours) {
                // Show only what differs.
                let only = |a: &[Value], b: &[Value]| -> Vec<Value> {
                    a.iter().filter(|o| !b.contains(o)).cloned().collect()
                };
                let (theirs, ours) = (only(theirs, ours), only(ours, theirs));
                failures.push(format!(
                    "case {:?} ({:?}):\n--- kubectl kustomize only:\n{}\n--- generators only:\n{}",
                    case.name,
                    case.expect,
                    crate::yaml::to_multi_string(&theirs),
                    crate::yaml::to_multi_string(&ours),
                ));
                continue;
            }
            let show = |objects: &[Value]| crate::yaml::to_multi_string(objects);
            failures.push(format!(
                "case {:?} ({:?}):\n--- kubectl kustomize:\n{}\n--- generators:\n{}",
                case.name,
                case.expect,
                theirs
                    .as_deref()
                    .map(show)
                    .unwrap_or_else(|| "(failed)".into()),
                match &ours {
                    Ok(objects) => show(objects),
                    Err(e) => format!("(failed) {e}"),
                }
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// kustomize's own test cases (`../shared/conformance/kustomize`, when present) that use nothing but
/// generators and bases must come out as kustomize v5.5 printed them.
#[test]
fn conformance_generator_cases_match() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/kustomize");
    let Ok(entries) = std::fs::read_dir(&cases) else {
        eprintln!("no conformance cases at {}: skipping", cases.display());
        return;
    };
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for entry in entries {
        let case = entry.unwrap().path();
        if !case.join("tree").is_dir() {
            continue;
        }
        let tree = std::fs::canonicalize(case.join("tree")).unwrap();
        if !generators_only(&tree) {
            continue;
        }
        let target = std::fs::read_to_string(case.join("target")).unwrap();
        let target = std::fs::canonicalize(tree.join(target.trim())).unwrap();
        let ours = native(&tree, &target).map(sorted);
        let expected = std::fs::read_to_string(case.join("expected.yaml"))
            .ok()
            .map(|text| sorted(crate::yaml::from_multi_str(&text).unwrap()));
        let agree = match (&expected, &ours) {
            (Some(expected), Ok(ours)) => expected == ours,
            (None, Err(_)) => true,
            _ => false,
        };
        if !agree {
            failures.push(format!(
                "{}: expected {expected:?}, got {ours:?}",
                case.display()
            ));
        }
        checked.push(case);
    }
    assert!(
        checked.len() >= 5,
        "only {} generator cases found",
        checked.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Whether every kustomization under `tree` uses only generators and folder resources, and one a generator.
fn generators_only(tree: &Path) -> bool {
    const ALLOWED: [&str; 4] = [
        "resources",
        "configMapGenerator",
        "secretGenerator",
        "generatorOptions",
    ];
    let mut any_generator = false;
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.file_name().and_then(|n| n.to_str()) != Some(K) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let Ok(Value::Object(map)) = crate::yaml::from_str(&text) else {
                return false;
            };
            if map.keys().any(|k| !ALLOWED.contains(&k.as_str())) {
                return false;
            }
            any_generator |=
                map.contains_key("configMapGenerator") || map.contains_key("secretGenerator");
            let resources = map.get("resources").and_then(Value::as_array);
            let folders_only = resources.into_iter().flatten().all(|r| {
                r.as_str()
                    .is_some_and(|r| path.parent().unwrap().join(r).is_dir())
            });
            if !folders_only {
                return false;
            }
        }
    }
    any_generator
}
