//! How a rollout reads on the terminal and in logs: one line for where it stands.

use super::decide::{RolloutView, WaveState};
use super::short;

/// Where the rollout stands, in one line: "rollout of abc1234: wave 2 of 3 (staging) rolling, 7
/// clusters", "rollout of abc1234 paused at wave dev: 2 failing (clusters/a: …)", "rollout of
/// abc1234: every wave done".
pub fn headline(view: &RolloutView) -> String {
    let rev = short(&view.revision);
    if let Some(p) = &view.paused {
        let first = p
            .failing
            .first()
            .map(|(u, errors)| match errors.first() {
                Some(e) => format!(" ({u}: {e})"),
                None => format!(" ({u})"),
            })
            .unwrap_or_default();
        return format!(
            "rollout of {rev} paused at wave {}: {} failing{first}; `aro-gitops rollout resume --revision {rev}` goes on without them, a new commit starts a new rollout",
            p.wave,
            p.failing.len()
        );
    }
    let total = view.waves.len();
    let mut line = match view.current.and_then(|i| view.waves.get(i).map(|w| (i, w))) {
        None => format!("rollout of {rev}: every wave done"),
        Some((i, w)) => {
            let state = match w.state {
                WaveState::Soaking { until } => {
                    format!("soaking until {}", until.format("%Y-%m-%d %H:%M:%S UTC"))
                }
                WaveState::Paused => "paused".to_string(),
                _ => "rolling".to_string(),
            };
            let n = w.units.len();
            let clusters = if n == 1 { "cluster" } else { "clusters" };
            format!(
                "rollout of {rev}: wave {} of {total} ({}) {state}, {n} {clusters}",
                i + 1,
                w.name
            )
        }
    };
    if !view.waiting_for_window.is_empty() {
        line.push_str(&format!(
            "; {} waiting for the maintenance window",
            view.waiting_for_window.len()
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::decide::{Paused, WaveView};

    fn view(current: Option<usize>, paused: Option<Paused>) -> RolloutView {
        RolloutView {
            revision: "abcdef0123".into(),
            waves: vec![
                WaveView {
                    name: "dev".into(),
                    units: vec!["clusters/a".into()],
                    state: WaveState::Done,
                },
                WaveView {
                    name: "prod".into(),
                    units: vec!["clusters/b".into(), "clusters/c".into()],
                    state: WaveState::Rolling,
                },
            ],
            current,
            paused,
            waiting_for_window: vec![],
        }
    }

    #[test]
    fn the_headline_says_the_wave_in_progress_or_the_pause() {
        assert_eq!(
            headline(&view(Some(1), None)),
            "rollout of abcdef0: wave 2 of 2 (prod) rolling, 2 clusters"
        );
        assert_eq!(
            headline(&view(None, None)),
            "rollout of abcdef0: every wave done"
        );
        let paused = Paused {
            wave: "dev".into(),
            failing: vec![("clusters/a".into(), vec!["bad CIDR".into()])],
        };
        assert!(headline(&view(Some(0), Some(paused))).starts_with(
            "rollout of abcdef0 paused at wave dev: 1 failing (clusters/a: bad CIDR)"
        ));
    }
}
