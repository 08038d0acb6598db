//! The commands that read only files: `render`, `validate` and `secrets encrypt`.

use anyhow::{Context, bail};
use aro_gitops::cli::{EncryptArgs, RenderArgs, ValidateArgs};
use aro_gitops::output::{self, print, println};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The repository `path` belongs to: its git top level, or the fleet folder outside git.
fn default_root(path: &Path) -> anyhow::Result<PathBuf> {
    aro_gitops::unit::repository_root(path)
        .with_context(|| format!("{}: not found", path.display()))
}

pub(crate) fn secrets_encrypt(args: EncryptArgs) -> anyhow::Result<ExitCode> {
    let rules = aro_gitops::secrets::EncryptionRules {
        encrypted_regex: args.encrypted_regex,
        unencrypted_regex: args.unencrypted_regex,
        encrypted_suffix: args.encrypted_suffix,
        unencrypted_suffix: args.unencrypted_suffix,
    };
    let text = aro_gitops::secrets::encrypt_file(&args.file, &args.age, &rules)?;
    if args.in_place {
        // Written beside the file, then renamed over it: the plain file is never half replaced.
        let tmp = args.file.with_extension("sops-tmp");
        std::fs::write(&tmp, &text).with_context(|| format!("{}", tmp.display()))?;
        std::fs::rename(&tmp, &args.file).with_context(|| format!("{}", args.file.display()))?;
    } else {
        // Ciphertext only: printed as is.
        output::print_verbatim(&text);
    }
    Ok(ExitCode::SUCCESS)
}

/// `render`: inside a repository (or under `--root`) nothing outside it is read, as the agent
/// renders; a plain folder outside any renders as `kustomize build` does (bases anywhere, each
/// kustomization's files in its own folder).
pub(crate) fn render(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let dir = std::fs::canonicalize(&args.dir)
        .with_context(|| format!("{}: not found", args.dir.display()))?;
    let root = match args.root {
        Some(root) => Some(root),
        None => aro_gitops::unit::enclosing_repository(&dir)
            .with_context(|| format!("{}: not found", args.dir.display()))?,
    };
    let objects = match root {
        Some(root) => aro_gitops::render::render(&root, &dir)?,
        None => {
            tracing::debug!(dir = %dir.display(), "no repository above the folder: rendering as kustomize build (bases anywhere)");
            aro_gitops::render::render_anywhere(&dir)?
        }
    };
    let docs: Vec<serde_json::Value> = objects.into_iter().map(|o| o.object).collect();
    // The user's own objects, as `kustomize build` prints them: not redacted.
    output::print_verbatim(&aro_gitops::yaml::to_multi_string(&docs));
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn validate(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let root = match args.root {
        Some(r) => r,
        None => default_root(&args.path)?,
    };
    let path = std::fs::canonicalize(&args.path)
        .with_context(|| format!("{}: not found", args.path.display()))?;
    let root = std::fs::canonicalize(root)?;
    // Without a key, ciphertext digests stand in for the encrypted values.
    let _decryption = aro_gitops::decrypt::register(
        &root,
        match &args.decryption_key_file {
            Some(path) => {
                aro_gitops::decrypt::Decryption::Keys(aro_gitops::decrypt::keys::from_file(path)?)
            }
            None => aro_gitops::decrypt::Decryption::digests(),
        },
    );
    let units = match aro_gitops::unit::discover(&path) {
        Ok(units) => units
            .into_iter()
            .map(|u| aro_gitops::unit::Unit {
                path: path.join(u.path),
            })
            .collect(),
        // One unit's folder.
        Err(aro_gitops::unit::UnitError::NoUnits) if aro_gitops::unit::is_unit_folder(&path) => {
            vec![aro_gitops::unit::Unit { path: path.clone() }]
        }
        Err(e) => bail!("{}: {e}", args.path.display()),
    };
    // The repository's rollout settings (waves, windows): every unit's, checked once.
    let mut failed = false;
    match aro_gitops::rollout::rollout_setting(&root) {
        Err(e) => {
            failed = true;
            println(&format!("error: {e}"));
        }
        // Over the whole repository, a glob that selects no unit is most likely a typo.
        Ok(Some(rollout)) if path == root => {
            let names: Vec<String> = units
                .iter()
                .map(|u: &aro_gitops::unit::Unit| {
                    let rel = u.path.strip_prefix(&root).unwrap_or(&u.path);
                    aro_gitops::unit::Unit { path: rel.into() }.name()
                })
                .collect();
            for (field, glob) in rollout.unused_globs(&names) {
                println(&format!(
                    "warning: {}: {field}: {glob:?} selects no unit",
                    aro_gitops::unit::SETTINGS_FILE
                ));
            }
        }
        Ok(_) => {}
    }
    let mut prepared = Vec::new();
    for unit in units {
        let rel = unit
            .path
            .strip_prefix(&root)
            .unwrap_or(&unit.path)
            .to_path_buf();
        let unit = aro_gitops::unit::Unit { path: rel };
        match aro_gitops::agent::prepare::prepare(&root, &unit) {
            Ok(p) => prepared.push(p),
            Err(errors) => {
                failed = true;
                print(&aro_gitops::report::failure_block(&unit.name(), &errors));
            }
        }
    }
    // What only the whole repository answers: identities another unit may declare.
    let refs: Vec<&aro_gitops::agent::prepare::Prepared> = prepared.iter().map(|p| &**p).collect();
    let mut unresolved = aro_gitops::agent::unresolved_identities(&refs);
    for (index, p) in prepared.iter().enumerate() {
        let errors: Vec<_> = unresolved
            .iter_mut()
            .filter(|(i, _)| *i == index)
            .map(|(_, e)| std::mem::take(e))
            .collect();
        if errors.is_empty() {
            println(&format!(
                "{}: ok ({} objects, {} embedded)",
                p.unit.name(),
                p.objects.iter().filter(|o| o.embedded_in.is_none()).count(),
                p.objects.iter().filter(|o| o.embedded_in.is_some()).count()
            ));
        } else {
            failed = true;
            print(&aro_gitops::report::failure_block(&p.unit.name(), &errors));
        }
    }
    if failed {
        bail!("validation failed");
    }
    Ok(ExitCode::SUCCESS)
}
