//! `aro-gitops secrets encrypt FILE`: a YAML file in, its SOPS form out, for the recipients and
//! rule given on the command line or, without `--age`, by the first matching creation rule of the
//! nearest `.sops.yaml` (as `sops` finds them).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{EncryptionRules, SopsError, encrypt_documents, is_encrypted};

/// The file SOPS reads its creation rules from.
pub const SOPS_CONFIG_FILE: &str = ".sops.yaml";

/// Encrypts the YAML file at `path` (one or more documents) and returns the SOPS file's text.
/// With no `recipients`, the recipients and rule come from the nearest `.sops.yaml`.
pub fn encrypt_file(
    path: &Path,
    recipients: &[String],
    rules: &EncryptionRules,
) -> Result<String, SopsError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| SopsError::Invalid(format!("{shown}: cannot be read: {e}")))?;
    let documents = crate::yaml::from_multi_str(&text)
        .map_err(|e| SopsError::Invalid(format!("{shown}: {e}")))?;
    if documents.is_empty() {
        return Err(SopsError::Invalid(format!(
            "{shown}: holds no document to encrypt"
        )));
    }
    if documents.iter().any(is_encrypted) {
        return Err(SopsError::Invalid(format!(
            "{shown}: already has a `sops` block: it is already encrypted"
        )));
    }
    let (recipients, rules) = if recipients.is_empty() {
        let (config, rule) = creation_rule(path)?;
        let recipients = rule.recipients;
        if recipients.is_empty() {
            return Err(SopsError::Invalid(format!(
                "{}: the creation rule for {shown} names no age recipient",
                config.display()
            )));
        }
        (recipients, rule.rules)
    } else {
        (recipients.to_vec(), rules.clone())
    };
    let encrypted = encrypt_documents(&documents, &recipients, &rules)
        .map_err(|e| SopsError::Invalid(format!("{shown}: {e}")))?;
    Ok(crate::yaml::to_multi_string(&encrypted))
}

/// One `creation_rules` entry that applies to a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CreationRule {
    pub recipients: Vec<String>,
    pub rules: EncryptionRules,
}

/// The nearest `.sops.yaml` from the file's folder upwards, and its first rule matching the file.
fn creation_rule(path: &Path) -> Result<(PathBuf, CreationRule), SopsError> {
    let absolute = std::path::absolute(path)
        .map_err(|e| SopsError::Invalid(format!("{}: {e}", path.display())))?;
    let mut dir = absolute.parent();
    while let Some(d) = dir {
        let config = d.join(SOPS_CONFIG_FILE);
        if config.is_file() {
            let text = std::fs::read_to_string(&config)
                .map_err(|e| SopsError::Invalid(format!("{}: {e}", config.display())))?;
            let relative = absolute.strip_prefix(d).unwrap_or(&absolute);
            let rule = matching_rule(&text, &relative.to_string_lossy())
                .map_err(|e| SopsError::Invalid(format!("{}: {e}", config.display())))?
                .ok_or_else(|| {
                    SopsError::Invalid(format!(
                        "{}: no creation rule matches {}",
                        config.display(),
                        relative.display()
                    ))
                })?;
            return Ok((config, rule));
        }
        dir = d.parent();
    }
    Err(SopsError::Invalid(format!(
        "no --age recipient given and no {SOPS_CONFIG_FILE} found above {}",
        path.display()
    )))
}

/// The first creation rule of a `.sops.yaml` text whose `path_regex` matches `relative` (a rule
/// without one matches every file).
pub(crate) fn matching_rule(text: &str, relative: &str) -> Result<Option<CreationRule>, String> {
    let config = crate::yaml::from_str(text).map_err(|e| e.to_string())?;
    let Some(rules) = config.get("creation_rules") else {
        return Err("has no `creation_rules` list".to_string());
    };
    let Value::Array(rules) = rules else {
        return Err("`creation_rules` is not a list".to_string());
    };
    for (i, rule) in rules.iter().enumerate() {
        let field = |name: &str| -> Result<Option<String>, String> {
            match rule.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("`creation_rules[{i}].{name}` is not a string")),
            }
        };
        if let Some(pattern) = field("path_regex")? {
            let re = regex::Regex::new(&pattern).map_err(|e| {
                format!("`creation_rules[{i}].path_regex` is not a valid regex: {e}")
            })?;
            if !re.is_match(relative) {
                continue;
            }
        }
        let recipients = match rule.get("age") {
            None | Some(Value::Null) => vec![],
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        format!("`creation_rules[{i}].age` holds an entry that is not a string")
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(format!(
                    "`creation_rules[{i}].age` is not a string or a list"
                ));
            }
        };
        return Ok(Some(CreationRule {
            recipients,
            rules: EncryptionRules {
                encrypted_regex: field("encrypted_regex")?,
                unencrypted_regex: field("unencrypted_regex")?,
                encrypted_suffix: field("encrypted_suffix")?,
                unencrypted_suffix: field("unencrypted_suffix")?,
            },
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "creation_rules:\n  - path_regex: ^clusters/prod/.*\\.yaml$\n    age: age1prod1,age1prod2\n    encrypted_regex: ^(data|stringData)$\n  - age:\n      - age1any\n";

    #[test]
    fn the_first_matching_rule_wins() {
        let prod = matching_rule(CONFIG, "clusters/prod/secret.yaml")
            .unwrap()
            .unwrap();
        assert_eq!(prod.recipients, vec!["age1prod1,age1prod2"]);
        assert_eq!(
            prod.rules.encrypted_regex.as_deref(),
            Some("^(data|stringData)$")
        );
        let other = matching_rule(CONFIG, "clusters/dev/secret.yaml")
            .unwrap()
            .unwrap();
        assert_eq!(other.recipients, vec!["age1any"]);
        assert_eq!(other.rules.encrypted_regex, None);
    }

    #[test]
    fn no_match_and_bad_configs_are_told() {
        let only_prod = "creation_rules:\n  - path_regex: ^prod/\n    age: age1x\n";
        assert_eq!(matching_rule(only_prod, "dev/a.yaml").unwrap(), None);
        assert!(
            matching_rule("x: 1\n", "a.yaml")
                .unwrap_err()
                .contains("creation_rules")
        );
        let bad = "creation_rules:\n  - path_regex: \"(\"\n";
        assert!(
            matching_rule(bad, "a.yaml")
                .unwrap_err()
                .contains("not a valid regex")
        );
    }
}
