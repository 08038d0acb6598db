//! Which values of a SOPS document are encrypted: SOPS's one rule per file (a key suffix or a key
//! regex, encrypting or leaving plain), `_unencrypted` suffix when none is set.

use regex::Regex;

use super::{EncryptionRules, SopsError};

/// The suffix SOPS leaves plain when a file sets no rule.
pub(crate) const DEFAULT_UNENCRYPTED_SUFFIX: &str = "_unencrypted";

/// A file's rule.
#[derive(Debug, Clone)]
pub(crate) enum Rule {
    /// Values under a key ending with it stay plain.
    UnencryptedSuffix(String),
    /// Only values under a key ending with it are encrypted.
    EncryptedSuffix(String),
    /// Values under a key matching it stay plain.
    UnencryptedRegex(Regex),
    /// Only values under a key matching it are encrypted.
    EncryptedRegex(Regex),
    /// `encrypted_comment_regex` / `unencrypted_comment_regex`: decided by YAML comments, which
    /// documents here do not keep; a value is then encrypted exactly when it reads as `ENC[...]`.
    ByComment,
}

impl Rule {
    /// The rule from the four settings (at most one set). `what` names where they come from for
    /// the error ("the file's sops metadata", "the command line").
    pub(crate) fn from_settings(
        rules: &EncryptionRules,
        comment_rule: bool,
        what: &str,
    ) -> Result<Rule, SopsError> {
        let set = [
            rules.encrypted_regex.is_some(),
            rules.unencrypted_regex.is_some(),
            rules.encrypted_suffix.is_some(),
            rules.unencrypted_suffix.is_some(),
            comment_rule,
        ]
        .iter()
        .filter(|s| **s)
        .count();
        if set > 1 {
            return Err(SopsError::Invalid(format!(
                "{what} sets more than one of encrypted_regex, unencrypted_regex, encrypted_suffix, \
                 unencrypted_suffix and the comment regexes; SOPS allows one"
            )));
        }
        let regex = |name: &str, text: &str| {
            Regex::new(text).map_err(|e| {
                SopsError::Invalid(format!("{what}: {name} `{text}` is not a valid regex: {e}"))
            })
        };
        Ok(if comment_rule {
            Rule::ByComment
        } else if let Some(r) = &rules.encrypted_regex {
            Rule::EncryptedRegex(regex("encrypted_regex", r)?)
        } else if let Some(r) = &rules.unencrypted_regex {
            Rule::UnencryptedRegex(regex("unencrypted_regex", r)?)
        } else if let Some(s) = &rules.encrypted_suffix {
            Rule::EncryptedSuffix(s.clone())
        } else {
            Rule::UnencryptedSuffix(
                rules
                    .unencrypted_suffix
                    .clone()
                    .unwrap_or_else(|| DEFAULT_UNENCRYPTED_SUFFIX.to_string()),
            )
        })
    }

    /// Whether the value under the keys `path` is encrypted (any key on the path decides, as in
    /// SOPS). `None` for [`Rule::ByComment`]: the value's own form decides.
    pub(crate) fn encrypts(&self, path: &[&str]) -> Option<bool> {
        Some(match self {
            Rule::UnencryptedSuffix(s) => !path.iter().any(|k| k.ends_with(s.as_str())),
            Rule::EncryptedSuffix(s) => path.iter().any(|k| k.ends_with(s.as_str())),
            Rule::UnencryptedRegex(r) => !path.iter().any(|k| r.is_match(k)),
            Rule::EncryptedRegex(r) => path.iter().any(|k| r.is_match(k)),
            Rule::ByComment => return None,
        })
    }

    /// The metadata entry SOPS writes for this rule (name, value).
    pub(crate) fn metadata_entry(&self) -> Option<(&'static str, String)> {
        match self {
            Rule::UnencryptedSuffix(s) => Some(("unencrypted_suffix", s.clone())),
            Rule::EncryptedSuffix(s) => Some(("encrypted_suffix", s.clone())),
            Rule::UnencryptedRegex(r) => Some(("unencrypted_regex", r.as_str().to_string())),
            Rule::EncryptedRegex(r) => Some(("encrypted_regex", r.as_str().to_string())),
            Rule::ByComment => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: EncryptionRules) -> Rule {
        Rule::from_settings(&r, false, "test").unwrap()
    }

    #[test]
    fn no_rule_leaves_the_default_suffix_plain() {
        let r = rule(EncryptionRules::default());
        assert_eq!(r.encrypts(&["data", "password"]), Some(true));
        assert_eq!(r.encrypts(&["name_unencrypted"]), Some(false));
        assert_eq!(r.encrypts(&["outer_unencrypted", "inner"]), Some(false));
    }

    #[test]
    fn encrypted_regex_matches_any_key_on_the_path() {
        let r = rule(EncryptionRules {
            encrypted_regex: Some("^(data|stringData)$".into()),
            ..Default::default()
        });
        assert_eq!(r.encrypts(&["data", "password"]), Some(true));
        assert_eq!(r.encrypts(&["metadata", "name"]), Some(false));
        // Unanchored search, as Go's regexp.Match.
        let r = rule(EncryptionRules {
            encrypted_regex: Some("pass".into()),
            ..Default::default()
        });
        assert_eq!(r.encrypts(&["spec", "mypassword"]), Some(true));
    }

    #[test]
    fn suffixes_and_unencrypted_regex() {
        let r = rule(EncryptionRules {
            encrypted_suffix: Some("_secret".into()),
            ..Default::default()
        });
        assert_eq!(r.encrypts(&["db_secret"]), Some(true));
        assert_eq!(r.encrypts(&["db"]), Some(false));
        let r = rule(EncryptionRules {
            unencrypted_regex: Some("^kind$".into()),
            ..Default::default()
        });
        assert_eq!(r.encrypts(&["kind"]), Some(false));
        assert_eq!(r.encrypts(&["spec", "x"]), Some(true));
    }

    #[test]
    fn two_rules_or_a_bad_regex_are_refused() {
        let two = EncryptionRules {
            encrypted_regex: Some("a".into()),
            unencrypted_suffix: Some("_u".into()),
            ..Default::default()
        };
        let err = Rule::from_settings(&two, false, "the command line").unwrap_err();
        assert!(err.to_string().contains("more than one"), "{err}");
        let bad = EncryptionRules {
            encrypted_regex: Some("(".into()),
            ..Default::default()
        };
        let err = Rule::from_settings(&bad, false, "the command line").unwrap_err();
        assert!(err.to_string().contains("not a valid regex"), "{err}");
    }
}
