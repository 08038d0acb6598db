//! Which units a wave or a window selects: path globs over the unit's repository path
//! (`clusters/dev*`), or a label selector over the labels of the unit's CAPI Cluster.

use std::collections::BTreeMap;

/// A selection of units.
#[derive(Debug, Clone, PartialEq)]
pub enum Select {
    /// Path globs (`*` any run of characters but `/`, `**` any run, `?` one character), matched
    /// against the unit's repository path (`clusters/dev-1`).
    Units(Vec<String>),
    /// `matchLabels` (all must equal) and `matchExpressions` (`In`, `NotIn`, `Exists`,
    /// `DoesNotExist`) over the labels of the unit's Cluster.
    Labels(crate::selector::LabelSelector),
    /// Every unit (a window without `units` or `selector`).
    All,
}

impl Select {
    /// Whether the unit at `path`, whose Cluster has `labels`, is selected.
    pub fn selects(&self, path: &str, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Select::Units(globs) => globs.iter().any(|g| glob_matches(g, path)),
            Select::Labels(selector) => {
                selector.matches_with(|k| labels.get(k).map(String::as_str))
            }
            Select::All => true,
        }
    }
}

/// One piece of a path glob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `?`: one character but `/`.
    One,
    /// `*`: any run of characters but `/`.
    Star,
    /// `**`: any run of characters.
    Deep,
    /// `**/`: zero or more whole folders (`clusters/**/dev` matches `clusters/dev`).
    Folders,
}

fn tokens(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                let at_segment_start = i == 0 || chars[i - 1] == '/';
                if at_segment_start && chars.get(i + 2) == Some(&'/') {
                    out.push(Token::Folders);
                    i += 3;
                } else {
                    out.push(Token::Deep);
                    i += 2;
                }
                // `***` is `**`.
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
            }
            '*' => {
                out.push(Token::Star);
                i += 1;
            }
            '?' => {
                out.push(Token::One);
                i += 1;
            }
            c => {
                out.push(Token::Char(c));
                i += 1;
            }
        }
    }
    out
}

/// A path without `./` in front or `/` behind: how globs and unit paths are compared.
fn normal(path: &str) -> &str {
    let path = path.strip_prefix("./").unwrap_or(path);
    path.trim_end_matches('/')
}

/// Whether the repository path `path` matches the glob `pattern` (see [`Select::Units`]).
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    let path: Vec<char> = normal(path).chars().collect();
    let tokens = tokens(normal(pattern));
    let mut memo = vec![None; (tokens.len() + 1) * (path.len() + 1)];
    Matcher {
        tokens: &tokens,
        s: &path,
        memo: &mut memo,
    }
    .at(0, 0)
}

/// Glob matching with each (token, character) position answered once, so many stars stay fast.
struct Matcher<'a> {
    tokens: &'a [Token],
    s: &'a [char],
    memo: &'a mut Vec<Option<bool>>,
}

impl Matcher<'_> {
    /// Whether `tokens[t..]` matches `s[i..]`.
    fn at(&mut self, t: usize, i: usize) -> bool {
        let key = t * (self.s.len() + 1) + i;
        if let Some(known) = self.memo[key] {
            return known;
        }
        let s = self.s;
        let found = match self.tokens.get(t) {
            None => i == s.len(),
            Some(Token::Char(c)) => s.get(i) == Some(c) && self.at(t + 1, i + 1),
            Some(Token::One) => s.get(i).is_some_and(|&c| c != '/') && self.at(t + 1, i + 1),
            Some(Token::Star) => {
                let run = s[i..].iter().take_while(|&&c| c != '/').count();
                (i..=i + run).any(|k| self.at(t + 1, k))
            }
            Some(Token::Deep) => (i..=s.len()).any(|k| self.at(t + 1, k)),
            Some(Token::Folders) => (i..=s.len())
                .filter(|&k| k == i || s[k - 1] == '/')
                .any(|k| self.at(t + 1, k)),
        };
        self.memo[key] = Some(found);
        found
    }
}

/// Why `pattern` is not a usable unit glob, in the user's words; `None` when it is.
pub fn glob_problem(pattern: &str) -> Option<String> {
    let p = normal(pattern.trim());
    if p.is_empty() {
        return Some("is empty (a glob over unit paths, like clusters/dev*)".into());
    }
    if p.starts_with('/') {
        return Some(format!(
            "{pattern:?} is absolute: unit paths are relative to the repository (clusters/dev*)"
        ));
    }
    if p.split('/').any(|s| s == "..") {
        return Some(format!(
            "{pattern:?} leaves the repository (..): unit paths are inside it"
        ));
    }
    if let Some(c) = p.chars().find(|c| "[]{}\\".contains(*c)) {
        return Some(format!(
            "{pattern:?} uses {c:?}, which unit globs do not support (only *, ** and ?)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::LabelSelector;
    use serde_json::json;

    #[test]
    fn globs_match_unit_paths() {
        for (pattern, path, want) in [
            ("clusters/dev*", "clusters/dev", true),
            ("clusters/dev*", "clusters/dev-1", true),
            ("clusters/dev*", "clusters/prod-1", false),
            ("clusters/dev*", "clusters/dev/eu", false),
            ("clusters/**", "clusters/dev/eu", true),
            ("clusters/**", "clusters/dev", true),
            ("clusters/**/eu", "clusters/eu", true),
            ("clusters/**/eu", "clusters/a/b/eu", true),
            ("clusters/**/eu", "clusters/a/beu", false),
            ("**/prod-*", "fleet/x/prod-3", true),
            ("**", "anything/at/all", true),
            ("clusters/dev-?", "clusters/dev-1", true),
            ("clusters/dev-?", "clusters/dev-12", false),
            ("clusters/?", "clusters//", false),
            ("clusters/dev", "clusters/dev", true),
            ("clusters/dev/", "clusters/dev", true),
            ("./clusters/dev", "clusters/dev/", true),
            ("clusters/dev", "clusters/dev-1", false),
            ("clusters/*-eu", "clusters/prod-eu", true),
            ("clusters/*-eu", "clusters/prod-us", false),
            ("*", "clusters/dev", false),
            ("c*s/*", "clusters/dev", true),
        ] {
            assert_eq!(glob_matches(pattern, path), want, "{pattern} ~ {path}");
        }
    }

    #[test]
    fn many_stars_stay_fast() {
        let path = format!("clusters/{}", "a".repeat(60));
        assert!(!glob_matches("clusters/*a*a*a*a*a*b", &path));
    }

    #[test]
    fn unusable_globs_are_named() {
        assert_eq!(glob_problem("clusters/dev*"), None);
        assert_eq!(glob_problem("**"), None);
        for (bad, says) in [
            ("", "is empty"),
            ("/clusters/dev", "absolute"),
            ("clusters/../x", "leaves the repository"),
            ("clusters/dev-[0-9]", "do not support"),
            ("clusters/{a,b}", "do not support"),
        ] {
            let p = glob_problem(bad).unwrap_or_default();
            assert!(p.contains(says), "{bad}: {p}");
        }
    }

    #[test]
    fn selections_use_paths_labels_or_everything() {
        let labels: BTreeMap<String, String> = [("env".to_string(), "prod".to_string())].into();
        let none = BTreeMap::new();
        let units = Select::Units(vec!["clusters/dev*".into(), "clusters/canary".into()]);
        assert!(units.selects("clusters/canary", &labels));
        assert!(!units.selects("clusters/prod-1", &labels));
        let prod = Select::Labels(
            LabelSelector::from_json(&json!({"matchLabels": {"env": "prod"}})).unwrap(),
        );
        assert!(prod.selects("clusters/x", &labels));
        assert!(!prod.selects("clusters/x", &none));
        let not_prod = Select::Labels(
            LabelSelector::from_json(
                &json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
            )
            .unwrap(),
        );
        assert!(!not_prod.selects("clusters/x", &labels));
        assert!(not_prod.selects("clusters/x", &none));
        assert!(Select::All.selects("anything", &none));
    }
}
