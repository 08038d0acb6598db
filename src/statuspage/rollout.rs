//! The rollout view (`/rollout`) and its line on the index: the newest revision's rollout wave by
//! wave (each wave's units and state), the paused units with their errors, and the units waiting
//! for their maintenance window with when it opens.

use super::html::text;
use crate::rollout::{RolloutView, WaveState};
use chrono::{DateTime, Utc};
use std::fmt::Write;

fn sha7(revision: &str) -> String {
    crate::rollout::short(revision).to_string()
}

/// A wave's state in words.
fn state(s: &WaveState) -> String {
    match s {
        WaveState::Done => "done".into(),
        WaveState::Soaking { until } => format!("soaking until {}", when(until)),
        WaveState::Rolling => "rolling".into(),
        WaveState::Paused => "paused".into(),
        WaveState::Waiting => "waiting".into(),
    }
}

fn when(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The rollout in one line (plain text): "rollout of abc1234: wave 2 of 3 (prod) rolling",
/// "rollout of abc1234: paused at wave dev: 1 failing", "rollout of abc1234: every wave done".
pub fn summary(view: &RolloutView) -> String {
    let head = format!("rollout of {}", sha7(&view.revision));
    if let Some(p) = &view.paused {
        return format!(
            "{head}: paused at wave {}: {} failing",
            p.wave,
            p.failing.len()
        );
    }
    match view.current.and_then(|i| Some((i, view.waves.get(i)?))) {
        Some((i, w)) => format!(
            "{head}: wave {} of {} ({}) {}",
            i + 1,
            view.waves.len(),
            w.name,
            state(&w.state)
        ),
        None => format!("{head}: every wave done"),
    }
}

/// The rollout as `/api/status` carries it (`rollout`), redacted with the rest.
pub fn json(view: &RolloutView) -> serde_json::Value {
    let waves: Vec<serde_json::Value> = (view.waves.iter())
        .map(|w| serde_json::json!({"name": w.name, "state": state(&w.state), "units": w.units}))
        .collect();
    let paused = view.paused.as_ref().map(|p| {
        let failing: Vec<serde_json::Value> = (p.failing.iter())
            .map(|(unit, errors)| serde_json::json!({"unit": unit, "errors": errors}))
            .collect();
        serde_json::json!({"wave": p.wave, "failing": failing})
    });
    let waiting: Vec<serde_json::Value> = (view.waiting_for_window.iter())
        .map(|(unit, opens)| {
            let opens = opens.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
            serde_json::json!({"unit": unit, "opensAt": opens})
        })
        .collect();
    serde_json::json!({
        "revision": view.revision,
        "summary": summary(view),
        "currentWave": view.current.map(|i| i + 1),
        "waves": waves,
        "paused": paused,
        "waitingForWindow": waiting,
    })
}

/// The index's line about the rollout, linking to its view (empty without one).
pub fn index_line(view: Option<&RolloutView>) -> String {
    let Some(v) = view else { return String::new() };
    let class = if v.paused.is_some() {
        "rollout paused"
    } else {
        "rollout"
    };
    format!(
        "<p class=\"{class}\"><a href=\"/rollout\">{}</a></p>",
        text(&summary(v))
    )
}

/// The main part of `/rollout`.
pub fn page(view: Option<&RolloutView>) -> String {
    let mut out = String::from("<p><a href=\"/\">&larr; all clusters</a></p>");
    let Some(v) = view else {
        out.push_str(
            "<p class=\"empty\">No rollout in progress: the newest revision changes no unit \
             through waves, or the repository declares no <code>rollout:</code>.</p>",
        );
        return out;
    };
    let _ = write!(
        out,
        "<section class=\"rollout\" data-revision=\"{rev}\"><h2>{}</h2>",
        text(&summary(v)),
        rev = text(&v.revision),
    );
    if let Some(p) = &v.paused {
        let _ = write!(
            out,
            "<div class=\"paused\"><h3>Paused at wave {}</h3><p>Nothing more of this revision \
             is applied: a newer commit starts a new rollout, or <code>aro-gitops rollout resume \
             --revision {}</code> resumes this one.</p><ul class=\"errors\">",
            text(&p.wave),
            text(&sha7(&v.revision)),
        );
        for (unit, errors) in &p.failing {
            let first = errors.first().map(String::as_str).unwrap_or("failed");
            let _ = write!(
                out,
                "<li data-unit=\"{u}\"><b>{u}</b>: {}",
                text(first),
                u = text(unit)
            );
            if errors.len() > 1 {
                out.push_str("<ul>");
                for e in &errors[1..] {
                    let _ = write!(out, "<li>{}</li>", text(e));
                }
                out.push_str("</ul>");
            }
            out.push_str("</li>");
        }
        out.push_str("</ul></div>");
    }
    out.push_str(
        "<table class=\"waves\"><thead><tr><th>#</th><th>Wave</th><th>State</th><th>Units</th>\
         </tr></thead><tbody>",
    );
    for (i, w) in v.waves.iter().enumerate() {
        let current = if v.current == Some(i) { " current" } else { "" };
        let units: Vec<String> = w.units.iter().map(|u| text(u)).collect();
        let _ = write!(
            out,
            "<tr class=\"wave{current}\" data-wave=\"{name}\"><td>{n}</td><td>{name}</td>\
             <td>{state}</td><td>{units}</td></tr>",
            n = i + 1,
            name = text(&w.name),
            state = text(&state(&w.state)),
            units = if units.is_empty() {
                "<span class=\"muted\">none changed</span>".to_string()
            } else {
                units.join(", ")
            },
        );
    }
    out.push_str("</tbody></table>");
    if !v.waiting_for_window.is_empty() {
        out.push_str("<h3>Waiting for a maintenance window</h3><ul class=\"windows\">");
        for (unit, opens) in &v.waiting_for_window {
            let opens = match opens {
                Some(t) => format!("opens at {}", when(t)),
                None => "not open within a year".to_string(),
            };
            let _ = write!(
                out,
                "<li data-unit=\"{}\">{}: waiting for the maintenance window ({})</li>",
                text(unit),
                text(unit),
                text(&opens)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::{Paused, WaveView};
    use chrono::TimeZone;

    fn view() -> RolloutView {
        let wave = |name: &str, units: &[&str], state| WaveView {
            name: name.into(),
            units: units.iter().map(|u| u.to_string()).collect(),
            state,
        };
        RolloutView {
            revision: "abc1234def".into(),
            waves: vec![
                wave("dev", &["clusters/dev-1"], WaveState::Done),
                wave("canary", &[], WaveState::Done),
                wave(
                    "prod",
                    &["clusters/prod-1", "clusters/prod-2"],
                    WaveState::Rolling,
                ),
            ],
            current: Some(2),
            paused: None,
            waiting_for_window: vec![(
                "clusters/prod-2".into(),
                Some(Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap()),
            )],
        }
    }

    #[test]
    fn the_summary_says_the_wave_in_progress_or_the_pause() {
        let mut v = view();
        assert_eq!(
            summary(&v),
            "rollout of abc1234: wave 3 of 3 (prod) rolling"
        );
        v.paused = Some(Paused {
            wave: "dev".into(),
            failing: vec![("clusters/dev-1".into(), vec!["quota".into()])],
        });
        assert_eq!(
            summary(&v),
            "rollout of abc1234: paused at wave dev: 1 failing"
        );
        v.paused = None;
        v.current = None;
        assert_eq!(summary(&v), "rollout of abc1234: every wave done");
        assert_eq!(index_line(None), "");
        assert!(index_line(Some(&v)).contains("href=\"/rollout\""));
    }

    #[test]
    fn the_page_shows_waves_pauses_and_windows_escaped() {
        let mut v = view();
        v.paused = Some(Paused {
            wave: "prod".into(),
            failing: vec![(
                "clusters/prod-1".into(),
                vec!["<script>x</script>".into(), "second".into()],
            )],
        });
        let page = page(Some(&v));
        assert!(page.contains("Paused at wave prod"), "{page}");
        assert!(page.contains("rollout resume --revision abc1234"), "{page}");
        assert!(
            page.contains("&lt;script&gt;") && !page.contains("<script>"),
            "{page}"
        );
        assert!(page.contains("<li>second</li>"), "{page}");
        assert!(
            page.contains("<tr class=\"wave current\" data-wave=\"prod\">"),
            "{page}"
        );
        assert!(page.contains("none changed"), "{page}");
        assert!(
            page.contains(
                "clusters/prod-2: waiting for the maintenance window (opens at 2026-11-30 00:00 UTC)"
            ),
            "{page}"
        );
        assert!(super::page(None).contains("No rollout in progress"));
    }

    #[test]
    fn the_json_carries_the_same() {
        let v = view();
        let j = json(&v);
        assert_eq!(
            j["summary"],
            "rollout of abc1234: wave 3 of 3 (prod) rolling"
        );
        assert_eq!(j["currentWave"], 3);
        assert_eq!(j["waves"][2]["units"][1], "clusters/prod-2");
        assert_eq!(j["waves"][0]["state"], "done");
        assert_eq!(j["paused"], serde_json::Value::Null);
        assert_eq!(j["waitingForWindow"][0]["opensAt"], "2026-11-30T00:00:00Z");
    }
}
