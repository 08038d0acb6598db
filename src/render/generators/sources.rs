//! The key/value pairs of a generator entry, read as kustomize's kv loader reads them: env files first,
//! then literals, then files; every file through kustomize's load restrictor (in or below the kustomization
//! folder, after `..` and symlinks).
//!
//! - A literal is `KEY=VALUE`; a value wrapped in matching single or double quotes loses them.
//! - A file is `PATH` (the key is its base name as written) or `KEY=PATH`.
//! - An env file is read line by line: a UTF-8 BOM on the first line is dropped, leading whitespace is
//!   trimmed, blank lines and `#` comments are skipped, `KEY=VALUE` splits at the first `=` (the value is
//!   kept as is: no quotes removed, no trailing whitespace trimmed, CR of CRLF dropped) and a bare `KEY` has
//!   the empty value (kustomize v5 no longer reads the environment). A line with an empty key is skipped.

use super::GeneratorContext;
use super::args::Args;
use super::error::{At, GeneratorError};
use super::sops;
use std::collections::HashSet;
use std::path::Path;

/// One key and its raw value (files may hold any bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pair {
    pub key: String,
    pub value: Vec<u8>,
}

/// The longest env-file line Go's `bufio.Scanner` reads; kustomize silently drops a longer line and every
/// line after it, which is an error here.
const MAX_ENV_LINE: usize = 64 * 1024 - 1;

/// Reads every pair of `args` and checks the keys (valid, not repeated).
/// `secret`: for a Secret (SOPS inputs give stand-ins, see [`super::sops`]), else a ConfigMap.
pub(super) fn load(
    at: &At,
    args: &Args,
    secret: bool,
    ctx: &GeneratorContext,
) -> Result<Vec<Pair>, GeneratorError> {
    let mut pairs = Vec::new();
    let root = ctx.loader.root();
    for path in &args.envs {
        let (resolved, content) = read_restricted(at, ctx, path)?;
        let sops = sops::stand_in(at, secret, sops::Use::Env, path, &resolved, root, &content)?;
        let env_error = |line, problem| GeneratorError::EnvFile {
            at: at.clone(),
            path: path.clone(),
            line,
            problem,
        };
        for line in parse_env(&content).map_err(|(line, problem)| env_error(line, problem))? {
            // A line without `=` may be a stray value: it is not shown if it is not a key either.
            if !line.has_equals && validate_key(&line.key).is_err() {
                return Err(env_error(line.number, "has no '=' and is not a valid key"));
            }
            let value = match &sops {
                Some(_) if sops::is_metadata_key(&line.key) => continue,
                Some(s) => sops::StandIn {
                    selector: sops::Selector::Env(line.key.clone()),
                    ..s.clone()
                }
                .text()
                .into_bytes(),
                None => line.value.into_bytes(),
            };
            pairs.push(Pair {
                key: line.key,
                value,
            });
        }
    }
    for (index, literal) in args.literals.iter().enumerate() {
        let (key, value) =
            parse_literal(literal).ok_or_else(|| GeneratorError::InvalidLiteral {
                at: at.clone(),
                index,
            })?;
        pairs.push(Pair {
            key: key.to_string(),
            value: value.as_bytes().to_vec(),
        });
    }
    for source in &args.files {
        let (key, path) =
            parse_file_source(source).map_err(|problem| GeneratorError::InvalidFileSource {
                at: at.clone(),
                entry: source.clone(),
                problem,
            })?;
        let (resolved, value) = read_restricted(at, ctx, path)?;
        let value =
            match sops::stand_in(at, secret, sops::Use::File, path, &resolved, root, &value)? {
                Some(s) => s.text().into_bytes(),
                None => value,
            };
        pairs.push(Pair { key, value });
    }

    let mut seen = HashSet::new();
    for pair in &pairs {
        if let Err(reason) = validate_key(&pair.key) {
            return Err(GeneratorError::InvalidKey {
                at: at.clone(),
                key: pair.key.clone(),
                reason,
            });
        }
        if !seen.insert(pair.key.as_str()) {
            return Err(GeneratorError::DuplicateKey {
                at: at.clone(),
                key: pair.key.clone(),
            });
        }
    }
    Ok(pairs)
}

/// `KEY=VALUE` into its key and value (matching surrounding quotes removed); `None` without `=` or with an
/// empty key.
fn parse_literal(literal: &str) -> Option<(&str, &str)> {
    let (key, value) = literal.split_once('=')?;
    if key.is_empty() {
        return None;
    }
    Some((key, remove_quotes(value)))
}

/// Removes one pair of quotes when the value starts and ends with the same quote character.
fn remove_quotes(value: &str) -> &str {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last))
            if bytes.len() >= 2 && first == last && (first == b'"' || first == b'\'') =>
        {
            &value[1..value.len() - 1]
        }
        _ => value,
    }
}

/// `PATH` or `KEY=PATH` into the key and the path.
fn parse_file_source(source: &str) -> Result<(String, &str), &'static str> {
    match source.matches('=').count() {
        0 => Ok((base_name(source), source)),
        1 if source.starts_with('=') => Err("missing the key before '='"),
        1 if source.ends_with('=') => Err("missing the file path after '='"),
        1 => {
            let (key, path) = source.split_once('=').unwrap_or((source, ""));
            Ok((key.to_string(), path))
        }
        _ => Err("key names or file paths cannot contain '='"),
    }
}

/// The last element of a slash-separated path, as Go's `path.Base`.
fn base_name(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_string();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// One `KEY=VALUE` (or bare `KEY`) line of an env file.
#[derive(Debug, PartialEq, Eq)]
struct EnvLine {
    key: String,
    value: String,
    /// 1-based.
    number: usize,
    has_equals: bool,
}

/// Parses an env file into its pairs, or the 1-based line number and what is wrong with it.
fn parse_env(content: &[u8]) -> Result<Vec<EnvLine>, (usize, &'static str)> {
    let mut pairs = Vec::new();
    for (index, raw) in lines(content).enumerate() {
        let number = index + 1;
        if raw.len() > MAX_ENV_LINE {
            return Err((number, "is 64 KiB or longer, more than kustomize reads"));
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let mut line = std::str::from_utf8(raw).map_err(|_| (number, "is not valid UTF-8"))?;
        if index == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        if key.is_empty() {
            continue;
        }
        pairs.push(EnvLine {
            key: key.to_string(),
            value: value.to_string(),
            number,
            has_equals: line.contains('='),
        });
    }
    Ok(pairs)
}

/// Lines as Go's `bufio.ScanLines` yields them (without the `\n`; no empty last line).
fn lines(content: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = content.strip_suffix(b"\n").unwrap_or(content);
    let empty = content.is_empty();
    body.split(|&b| b == b'\n').filter(move |_| !empty)
}

/// Checks a key as the API server checks ConfigMap and Secret keys.
fn validate_key(key: &str) -> Result<(), &'static str> {
    if key.len() > 253 {
        return Err("must be no more than 253 characters");
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("must consist of alphanumeric characters, '-', '_' or '.'");
    }
    match key {
        "." => Err("must not be '.'"),
        ".." => Err("must not be '..'"),
        k if k.starts_with("..") => Err("must not start with '..'"),
        _ => Ok(()),
    }
}

/// Reads a file named in the kustomization, refusing remote files and anything not in or below the
/// kustomization folder once `..` and symlinks are resolved: where it is (canonical) and its bytes.
fn read_restricted(
    at: &At,
    ctx: &GeneratorContext,
    written: &str,
) -> Result<(std::path::PathBuf, Vec<u8>), GeneratorError> {
    let lower = written.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(GeneratorError::RemoteFile {
            at: at.clone(),
            path: written.to_string(),
        });
    }
    let error_path = || written.to_string();
    // Containment first: a file outside says so whether or not it exists.
    let resolved = match ctx
        .loader
        .within(ctx.dir, &ctx.dir.join(Path::new(written)))
    {
        Ok(crate::render::Within::Found(path)) if path.starts_with(ctx.loader.bound()) => path,
        Ok(crate::render::Within::Missing(_)) => {
            return Err(GeneratorError::FileNotFound {
                at: at.clone(),
                path: error_path(),
            });
        }
        Ok(_) => {
            return Err(GeneratorError::OutsideKustomization {
                at: at.clone(),
                path: error_path(),
            });
        }
        Err(source) => {
            return Err(GeneratorError::Read {
                at: at.clone(),
                path: error_path(),
                source,
            });
        }
    };
    let read_error = |source| GeneratorError::Read {
        at: at.clone(),
        path: error_path(),
        source,
    };
    if !ctx
        .loader
        .metadata(&resolved)
        .map_err(read_error)?
        .is_file()
    {
        return Err(GeneratorError::NotAFile {
            at: at.clone(),
            path: error_path(),
        });
    }
    let bytes = ctx.loader.read(&resolved).map_err(read_error)?;
    Ok((resolved, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn at() -> At {
        At {
            file: PathBuf::from("k/kustomization.yaml"),
            entry: "configMapGenerator \"x\"".to_string(),
        }
    }

    fn env(text: &[u8]) -> Vec<(String, String)> {
        parse_env(text)
            .unwrap()
            .into_iter()
            .map(|line| (line.key, line.value))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn literals_split_at_the_first_equals_and_lose_matching_quotes() {
        assert_eq!(parse_literal("a=b=c"), Some(("a", "b=c")));
        assert_eq!(parse_literal("a=\"quoted\""), Some(("a", "quoted")));
        assert_eq!(parse_literal("a='x'"), Some(("a", "x")));
        assert_eq!(parse_literal("a='"), Some(("a", "'")));
        assert_eq!(parse_literal("a=\"x'"), Some(("a", "\"x'")));
        assert_eq!(parse_literal("a=''"), Some(("a", "")));
        assert_eq!(parse_literal("a="), Some(("a", "")));
        assert_eq!(parse_literal("=x"), None);
        assert_eq!(parse_literal("novalue"), None);
    }

    #[test]
    fn file_sources() {
        assert_eq!(
            parse_file_source("dir/f.txt"),
            Ok(("f.txt".to_string(), "dir/f.txt"))
        );
        assert_eq!(
            parse_file_source("k=dir/f.txt"),
            Ok(("k".to_string(), "dir/f.txt"))
        );
        assert_eq!(parse_file_source("sub/"), Ok(("sub".to_string(), "sub/")));
        assert!(parse_file_source("=f").is_err());
        assert!(parse_file_source("k=").is_err());
        assert!(parse_file_source("a=b=c").is_err());
    }

    #[test]
    fn env_files_parse_like_kustomize() {
        assert_eq!(
            env(b"\xef\xbb\xbfA=1\r\n# comment\n\n  B = 2 \nC\n=skipped\n\tD=\"q\"\nE=x=y"),
            pairs(&[
                ("A", "1"),
                ("B ", " 2 "),
                ("C", ""),
                ("D", "\"q\""),
                ("E", "x=y")
            ])
        );
        assert_eq!(env(b""), pairs(&[]));
        assert_eq!(env(b"\n\n"), pairs(&[]));
        assert_eq!(env(b"A=1\r\r\n"), pairs(&[("A", "1\r")]));
        // The BOM is only dropped from the first line.
        assert_eq!(
            env(b"A=1\n\xef\xbb\xbfB=2"),
            pairs(&[("A", "1"), ("\u{feff}B", "2")])
        );
    }

    #[test]
    fn env_file_errors_name_the_line() {
        assert_eq!(parse_env(b"A=1\nB=\xff\n"), Err((2, "is not valid UTF-8")));
        let mut long = b"A=".to_vec();
        long.resize(MAX_ENV_LINE, b'x');
        assert!(parse_env(&long).is_ok());
        long.push(b'x');
        assert_eq!(parse_env(&long).unwrap_err().0, 1);
    }

    #[test]
    fn keys_are_checked_like_the_api_server() {
        for ok in ["a", "A-b_c.d", ".a", "a..b", "0"] {
            assert_eq!(validate_key(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "..a",
            "a b",
            "B ",
            "a/b",
            "é",
            &"k".repeat(254),
        ] {
            assert!(validate_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_only_inside_the_kustomization_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let dir = root.join("app");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(root.join("outside.txt"), "no").unwrap();
        std::fs::write(dir.join("sub/in.txt"), "yes").unwrap();
        std::os::unix::fs::symlink("../outside.txt", dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink("sub/in.txt", dir.join("inner-link.txt")).unwrap();
        let loader = crate::render::inputs::Loader::new(root.clone());
        let ctx = GeneratorContext {
            loader: &loader,
            dir: &dir,
            file: Path::new("app/kustomization.yaml"),
        };
        let read = |p: &str| read_restricted(&at(), &ctx, p).map(|(_, bytes)| bytes);
        assert_eq!(read("sub/in.txt").unwrap(), b"yes");
        assert_eq!(read("inner-link.txt").unwrap(), b"yes");
        assert_eq!(
            read(dir.join("sub/in.txt").to_str().unwrap()).unwrap(),
            b"yes"
        );
        for (path, expected) in [
            (
                "../outside.txt",
                "is not in or below the kustomization folder",
            ),
            ("link.txt", "is not in or below the kustomization folder"),
            (
                "/etc/hostname",
                "is not in or below the kustomization folder",
            ),
            ("sub", "is not a file"),
            ("missing.txt", "does not exist"),
            ("https://example.com/x", "is a remote file"),
        ] {
            let err = read(path).unwrap_err().to_string();
            assert!(err.contains(expected), "{path}: {err}");
            assert!(
                err.starts_with("k/kustomization.yaml: configMapGenerator \"x\": "),
                "{err}"
            );
            assert!(!err.contains(root.to_str().unwrap()), "no host path: {err}");
        }
    }

    #[test]
    fn load_orders_sources_and_rejects_repeats() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(dir.join("e.env"), "E=1\n").unwrap();
        std::fs::write(dir.join("f"), [0xffu8, 0]).unwrap();
        let loader = crate::render::inputs::Loader::new(dir.clone());
        let ctx = GeneratorContext {
            loader: &loader,
            dir: &dir,
            file: Path::new("kustomization.yaml"),
        };
        let args = Args {
            literals: vec!["L=2".into()],
            files: vec!["f".into()],
            envs: vec!["e.env".into()],
            ..Args::default()
        };
        let keys: Vec<_> = load(&at(), &args, false, &ctx)
            .unwrap()
            .into_iter()
            .map(|p| p.key)
            .collect();
        assert_eq!(keys, ["E", "L", "f"]);

        let repeated = Args {
            literals: vec!["E=2".into()],
            ..args.clone()
        };
        let err = load(&at(), &repeated, false, &ctx).unwrap_err().to_string();
        assert!(err.contains("\"E\" is given more than once"), "{err}");

        std::fs::write(dir.join("stray.env"), "A=1\nmy secret value\n").unwrap();
        let stray = Args {
            envs: vec!["stray.env".into()],
            ..Args::default()
        };
        let err = load(&at(), &stray, false, &ctx).unwrap_err().to_string();
        assert!(
            err.contains("line 2: has no '='") && !err.contains("secret"),
            "{err}"
        );

        let secret_literal = Args {
            literals: vec!["hunter2".into()],
            ..Args::default()
        };
        let err = load(&at(), &secret_literal, true, &ctx)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("literals[0] is not KEY=VALUE") && !err.contains("hunter2"),
            "{err}"
        );
    }
}
