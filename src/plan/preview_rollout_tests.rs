//! The rollout section of a preview: the terminal names every cluster of each wave and of each
//! window opening, the comment only counts them, and the JSON carries it as the schema says.

use super::*;

/// The pull request's preview with a rollout: `dev` then `prod`, and one cluster of each wave
/// waiting for a window (one opening, one never within a year).
fn with_rollout() -> Preview {
    let mut p = pull_request();
    p.rollout = Some(RolloutPreview {
        waves: vec![
            WavePreview {
                name: "dev".into(),
                units: vec!["clusters/dev".into(), "clusters/staging".into()],
            },
            WavePreview {
                name: "prod".into(),
                units: vec!["clusters/prod".into()],
            },
            WavePreview {
                name: "rest".into(),
                units: vec![],
            },
        ],
        waiting_for_window: vec![
            WindowWait {
                unit: "clusters/prod".into(),
                opens_at: Some("2026-11-30T00:00:00Z".into()),
            },
            WindowWait {
                unit: "clusters/staging".into(),
                opens_at: None,
            },
        ],
    });
    p
}

#[test]
fn the_terminal_names_the_clusters_of_each_wave_and_window() {
    let out = text(&with_rollout(), false);
    let expected = "\nrollout: 3 waves\n  wave 1 dev: clusters/dev, clusters/staging\n  \
                    wave 2 prod: clusters/prod\n  wave 3 rest: no changed cluster\n  \
                    waiting for the maintenance window (opens at 2026-11-30 00:00 UTC): clusters/prod\n  \
                    waiting for the maintenance window (no opening within a year): clusters/staging\n\n";
    assert!(out.contains(expected), "{out}");
    // Before the summary line, which stays last.
    assert!(out.trim_end().ends_with("deletion blocked."), "{out}");
    assert!(!text(&pull_request(), false).contains("rollout:"));
}

#[test]
fn the_comment_counts_the_clusters_of_each_wave() {
    let out = markdown(&with_rollout());
    let expected = "**Rollout:** 3 waves: 1. `dev` (2 clusters), 2. `prod` (1 cluster), 3. `rest` \
                    (0 clusters). Waiting for the maintenance window (opens at 2026-11-30 00:00 UTC): \
                    1 cluster. Waiting for the maintenance window (no opening within a year): 1 cluster.\n";
    assert!(out.contains(expected), "{out}");
    assert!(!markdown(&pull_request()).contains("Rollout"));
}

#[test]
fn the_json_carries_the_rollout_as_the_schema_says() {
    let p = with_rollout();
    let out: Value = serde_json::from_str(&json(&p)).unwrap();
    assert_eq!(out["rollout"]["waves"][0]["name"], "dev");
    assert_eq!(out["rollout"]["waves"][2]["units"], serde_json::json!([]));
    assert_eq!(
        out["rollout"]["waitingForWindow"],
        serde_json::json!([
            {"unit": "clusters/prod", "opensAt": "2026-11-30T00:00:00Z"},
            {"unit": "clusters/staging"}
        ])
    );
    let schema = plan_schema();
    let errors: Vec<String> = schema.iter_errors(&out).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let back: Preview = serde_json::from_str(&json(&p)).unwrap();
    assert_eq!(back, p);
    let mut bad = out.clone();
    bad["rollout"]["waves"][0]["colour"] = "red".into();
    assert!(!schema.is_valid(&bad));
}
