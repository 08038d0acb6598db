//! Generators: kustomize's `configMapGenerator`, `secretGenerator` and `generatorOptions`, natively.
//!
//! Each entry of a kustomization's generator list becomes one ConfigMap or Secret, built as kustomize v5.5
//! builds it: keys from env files, then literals, then files (a key given twice is an error), written in key
//! order; ConfigMap values that are not UTF-8 go to `binaryData`; Secret values are base64 (wrapped at 70
//! columns, as kustomize does); labels, annotations and `immutable` come from the entry's `options` merged with
//! the kustomization's `generatorOptions` (the entry wins a label or annotation both set).
//!
//! This module is pure apart from reading the files an entry names: it knows nothing of the rest of the
//! renderer. The caller accumulates what is generated (see [`Behavior`], [`merge_into`]) and, once the
//! kustomization is fully transformed, appends [`content_hash`] to the names of objects whose
//! [`Generated::hash`] (combined with [`hash_after_merge`]) says so, as `<name>-<hash>`.
//!
//! Where this differs from kustomize on purpose (each an error here, where kustomize would produce an object
//! the API server rejects, or silently drop data): keys must be valid ConfigMap keys, and env files may not
//! have lines of 64 KiB or more. Known limitations, where kustomize's YAML round trips show through: a
//! literal's U+0085 (NEL) is kept here (kustomize turns it into a space), and data keys that YAML reads as
//! numbers, booleans or null (`0`, `1.5`, `true`) are generated here (kustomize then fails to print them).

mod args;
mod error;
mod hash;
mod merge;
mod object;
pub mod sops;
mod sources;

#[cfg(test)]
mod differential;

pub use error::{At, GeneratorError};
pub use hash::content_hash;
pub use merge::{hash_after_merge, merge_into};

use args::{GeneratorKind, merge_options, parse_entries, parse_global_options};
use serde_json::Value;
use std::path::Path;

/// Where the generators being expanded are written.
#[derive(Debug, Clone, Copy)]
pub struct GeneratorContext<'a> {
    /// Reads files (and notes them in the render's input closure); knows the canonical repository root.
    pub loader: &'a crate::render::inputs::Loader,
    /// The folder of the kustomization (canonical): files are read relative to it, and only from inside it.
    pub dir: &'a Path,
    /// The kustomization file, repository-relative, as errors name it.
    pub file: &'a Path,
}

/// What a generated object does to an object of the same identity already accumulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// A new object; an existing one of the same identity is an error. (Also what kustomize makes of an
    /// absent or unknown `behavior`.)
    Create,
    /// Merged into the existing object (which must exist): data keys, labels and annotations merged.
    Merge,
    /// Replaces the existing object's data (which must exist), keeping its name and merging its metadata.
    Replace,
}

/// One generated ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The object, named as written (no hash suffix yet).
    pub object: Value,
    pub behavior: Behavior,
    /// Whether the content hash is to be appended to the name (`disableNameSuffixHash` not set).
    pub hash: bool,
}

/// Expands a kustomization's `configMapGenerator` list (`entries`, Null when absent) with its
/// `generatorOptions` (`options`, Null when absent).
pub fn config_maps(
    entries: &Value,
    options: &Value,
    ctx: &GeneratorContext,
) -> Result<Vec<Generated>, GeneratorError> {
    generate(GeneratorKind::ConfigMap, entries, options, ctx)
}

/// Expands a kustomization's `secretGenerator` list (`entries`, Null when absent) with its
/// `generatorOptions` (`options`, Null when absent).
pub fn secrets(
    entries: &Value,
    options: &Value,
    ctx: &GeneratorContext,
) -> Result<Vec<Generated>, GeneratorError> {
    generate(GeneratorKind::Secret, entries, options, ctx)
}

fn generate(
    kind: GeneratorKind,
    entries: &Value,
    options: &Value,
    ctx: &GeneratorContext,
) -> Result<Vec<Generated>, GeneratorError> {
    let global = parse_global_options(options, ctx.file)?;
    let entries = parse_entries(kind, entries, ctx.file)?;
    let mut generated = Vec::with_capacity(entries.len());
    for entry in entries {
        let options = merge_options(entry.args.options.clone(), global.as_ref());
        let at = entry.at;
        if entry.args.name.is_empty() {
            return Err(GeneratorError::MissingName { at });
        }
        let pairs = sources::load(&at, &entry.args, kind == GeneratorKind::Secret, ctx)?;
        let object = object::build(kind, &entry.args, options.as_ref(), &pairs);
        generated.push(Generated {
            object,
            behavior: entry.args.behavior,
            hash: !options.as_ref().is_some_and(|o| o.disable_name_suffix_hash),
        });
    }
    Ok(generated)
}
