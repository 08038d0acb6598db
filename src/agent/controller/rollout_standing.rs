//! Each shard's standing in a rollout, on the fleet's rollout Lease (see [`super::rollout_record`]):
//! for the newest revision, which of the shard's units took it and how each stands there
//! (applying it, converged since when, failed with which errors). One annotation per shard,
//! written by that shard's leader, `aro-gitops.dev/rollout-standing-<index>-of-<count>`.
//!
//! It is what makes a rollout fleet-wide and durable: every shard decides over every unit, and
//! reads the other shards' units from their standings (a failure anywhere pauses the rollout
//! everywhere, `maxUnavailable` counts the whole wave), and a restarted or newly elected agent
//! reads its own back (a soak goes on from when the units converged, not from the restart).
//! Standings of another shard layout (`--shard-count`) are not read.

use crate::rollout::State;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The annotations' prefix; the shard (`3-of-4`) follows.
pub const STANDING_PREFIX: &str = "aro-gitops.dev/rollout-standing-";
/// The most errors kept per failed unit, and the most characters kept of each.
const ERRORS_KEPT: usize = 3;
const ERROR_CHARS: usize = 300;
/// The largest standing written (annotations total at most 256 KiB on a Kubernetes object): a
/// larger one is not recorded, and the shards then decide from the inventories alone.
pub const MAX_STANDING_BYTES: usize = 96 * 1024;

/// One shard's standing: its units that took `revision`, and their state there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    pub revision: String,
    pub units: BTreeMap<String, State>,
}

/// The annotation key of shard `index` of `count`.
pub fn key(index: u32, count: u32) -> String {
    format!("{STANDING_PREFIX}{index}-of-{count}")
}

/// The shard an annotation key names, if it is a standing's.
pub fn shard_of(key: &str) -> Option<(u32, u32)> {
    let (index, count) = key.strip_prefix(STANDING_PREFIX)?.split_once("-of-")?;
    Some((index.parse().ok()?, count.parse().ok()?))
}

/// The standing as its annotation holds it: the units grouped by state, the converged ones by
/// the instant they converged (the units of one pass share it), so that a thousand units fit.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StandingJson {
    revision: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    progressing: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    /// RFC 3339 instant → units.
    converged: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    failed: BTreeMap<String, Vec<String>>,
}

impl Standing {
    pub fn decode(text: &str) -> Result<Standing, serde_json::Error> {
        let json: StandingJson = serde_json::from_str(text)?;
        let mut units = BTreeMap::new();
        for u in json.progressing {
            units.insert(u, State::Progressing);
        }
        for (since, us) in json.converged {
            let since = DateTime::parse_from_rfc3339(&since)
                .map_err(serde::de::Error::custom)?
                .with_timezone(&Utc);
            for u in us {
                units.insert(u, State::Converged { since });
            }
        }
        for (u, errors) in json.failed {
            units.insert(u, State::Failed { errors });
        }
        Ok(Standing {
            revision: json.revision,
            units,
        })
    }

    /// The annotation's text: the errors kept short (they are the reports', already redacted).
    pub fn encode(&self) -> String {
        let mut json = StandingJson {
            revision: self.revision.clone(),
            ..Default::default()
        };
        for (u, state) in &self.units {
            match state {
                State::Progressing => json.progressing.push(u.clone()),
                State::Converged { since } => (json.converged)
                    .entry(since.to_rfc3339_opts(SecondsFormat::AutoSi, true))
                    .or_default()
                    .push(u.clone()),
                State::Failed { errors } => {
                    let kept = (errors.iter().take(ERRORS_KEPT))
                        .map(|e| shorten(e))
                        .collect();
                    json.failed.insert(u.clone(), kept);
                }
            }
        }
        serde_json::to_string(&json).expect("plain data serialises")
    }

    /// What this standing keeps of `self` once recorded and read back (errors shortened, instants
    /// to the second as RFC 3339 keeps them): to compare what would be written with what is.
    pub fn as_recorded(&self) -> Standing {
        Standing::decode(&self.encode()).expect("a standing encoded decodes")
    }
}

/// `error` cut to [`ERROR_CHARS`] characters.
fn shorten(error: &str) -> String {
    match error.char_indices().nth(ERROR_CHARS) {
        Some((i, _)) => format!("{}…", &error[..i]),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_shard_and_layout() {
        assert_eq!(key(1, 3), "aro-gitops.dev/rollout-standing-1-of-3");
        assert_eq!(shard_of(&key(1, 3)), Some((1, 3)));
        assert_eq!(shard_of("aro-gitops.dev/rollout-paused"), None);
        assert_eq!(shard_of("aro-gitops.dev/rollout-standing-x-of-3"), None);
    }

    #[test]
    fn a_standing_round_trips_grouped_by_state() {
        let since: DateTime<Utc> = "2026-11-30T10:00:00Z".parse().unwrap();
        let standing = Standing {
            revision: "abc".into(),
            units: BTreeMap::from([
                ("clusters/a".into(), State::Progressing),
                ("clusters/b".into(), State::Converged { since }),
                ("clusters/c".into(), State::Converged { since }),
                (
                    "clusters/d".into(),
                    State::Failed {
                        errors: vec!["quota".into()],
                    },
                ),
            ]),
        };
        let text = standing.encode();
        assert_eq!(
            text,
            r#"{"revision":"abc","progressing":["clusters/a"],"converged":{"2026-11-30T10:00:00Z":["clusters/b","clusters/c"]},"failed":{"clusters/d":["quota"]}}"#
        );
        assert_eq!(Standing::decode(&text).unwrap(), standing);
    }

    #[test]
    fn long_and_many_errors_are_cut() {
        let standing = Standing {
            revision: "abc".into(),
            units: BTreeMap::from([(
                "clusters/a".into(),
                State::Failed {
                    errors: vec!["é".repeat(400), "2".into(), "3".into(), "4".into()],
                },
            )]),
        };
        let State::Failed { errors } = &standing.as_recorded().units["clusters/a"] else {
            panic!("failed");
        };
        assert_eq!(errors.len(), 3);
        assert_eq!(errors[0].chars().count(), 301);
        assert!(errors[0].ends_with('…'));
    }
}
