//! The comment size limit: large plans lose diffs first, then change lists, then whole sections,
//! and the comment stays well-formed (every `<details>` and fence closed) and within the limit.

use super::super::markdown::markdown_within;
use super::*;

/// `n` clusters, each with a create, an update and a delete carrying diffs of about `diff_bytes`;
/// every 7th cluster has an error and every 5th a blocked deletion.
pub(super) fn huge(n: usize, diff_bytes: usize) -> Preview {
    let clusters = (0..n)
        .map(|i| {
            let name = format!("c{i:04}");
            let mut c = cluster(
                &name,
                Counts {
                    blocked: usize::from(i % 5 == 0),
                    ..counts(1, 1, 1, 9)
                },
            );
            let filler: String = (0..diff_bytes / 40)
                .map(|k| format!("    label-{k:04}: välue-ü-{i}\n"))
                .collect();
            let old = format!(
                "{}{filler}",
                machine_pool_yaml(&name, "workers", "Standard_D4s_v3")
            );
            let new = format!(
                "{}{filler}",
                machine_pool_yaml(&name, "workers", "Standard_D8s_v3")
            );
            c.changes = vec![
                change(
                    control_plane(&name),
                    ChangeAction::Create,
                    "live",
                    "",
                    &format!("{}{filler}", control_plane_yaml(&name)),
                ),
                change(
                    machine_pool(&name, "workers"),
                    ChangeAction::Update,
                    "live",
                    &old,
                    &new,
                ),
                change(
                    node_pool(&name, "spot"),
                    ChangeAction::Delete,
                    "live",
                    &format!("{}{filler}", node_pool_yaml(&name, "spot")),
                    "",
                ),
            ];
            if i % 5 == 0 {
                c.blocked_deletions = vec![blocked_infra(&name)];
            }
            if i % 7 == 0 {
                c.errors = vec![Problem {
                    file: Some(format!("clusters/{name}/x.yaml")),
                    object: Some(control_plane(&name)),
                    message: format!("error in {name}: ```"),
                    ..Default::default()
                }];
            }
            c
        })
        .collect();
    preview(Against::Live, clusters)
}

/// Checks that every `<details>` is closed, every fence closed, outside fences no stray tags.
fn assert_well_formed(md: &str) {
    let (mut fence, mut depth, mut summaries) = (None::<usize>, 0i64, 0i64);
    for line in md.lines() {
        if let Some(n) = fence {
            if line.len() >= n && line.chars().all(|c| c == '`') {
                fence = None;
            }
            continue;
        }
        let ticks = line.chars().take_while(|&c| c == '`').count();
        if ticks >= 3 {
            fence = Some(ticks);
            continue;
        }
        if line.starts_with("<details") {
            depth += 1;
        } else if line == "</details>" {
            depth -= 1;
            assert!(depth >= 0, "</details> without <details>");
        } else {
            assert!(
                !line.contains("<details") && !line.contains("</details"),
                "stray tag: {line}"
            );
        }
        summaries +=
            line.matches("<summary>").count() as i64 - line.matches("</summary>").count() as i64;
    }
    assert_eq!(fence, None, "unclosed fence");
    assert_eq!(depth, 0, "unclosed <details>");
    assert_eq!(summaries, 0, "unbalanced <summary>");
}

#[test]
fn every_fixture_is_well_formed_markdown() {
    for (name, p) in fixtures() {
        let md = markdown(&p);
        assert_well_formed(&md);
        assert!(!md.contains("Output cut"), "{name}");
    }
}

#[test]
fn large_plans_lose_diffs_first_and_keep_errors_and_blocked_deletions() {
    let p = huge(40, 3_000);
    let md = markdown(&p);
    assert!(md.len() <= MARKDOWN_LIMIT, "{}", md.len());
    assert_well_formed(&md);
    assert!(
        md.contains("diffs omitted. Run `aro-gitops plan --output json` for the whole plan."),
        "{}",
        &md[md.len() - 300..]
    );
    assert!(md.contains("_Diff left out ("));
    for c in &p.clusters {
        assert!(
            md.contains(&format!("<summary><code>{}</code>", c.unit)),
            "{}",
            c.unit
        );
        let name = &c.unit["clusters/".len()..];
        let error = format!("error in {name}: \\`\\`\\`");
        assert_eq!(c.errors.is_empty(), !md.contains(&error), "{name}");
        let blocked = format!("`AROMachinePool/aro-{name}/{name}-infra`");
        assert_eq!(
            c.blocked_deletions.is_empty(),
            !md.contains(&blocked),
            "{name}"
        );
    }
    // Among diffs of one size, later clusters lose theirs first.
    let first = &md[..md.find("</details>").unwrap()];
    let last = &md[md.rfind("<details").unwrap()..];
    let diffs_in = |s: &str| s.matches("```diff").count();
    assert!(diffs_in(first) > diffs_in(last), "{first}\n…\n{last}");
    // Largest first: the small update diffs all stay.
    assert_eq!(md.matches("+          vmSize: Standard_D8s_v3").count(), 40);
}

#[test]
fn huge_plans_stay_under_the_limit_and_well_formed() {
    for (n, bytes) in [(500, 4_000), (2_000, 200)] {
        let p = huge(n, bytes);
        let md = markdown(&p);
        assert!(md.len() <= MARKDOWN_LIMIT, "{n}: {}", md.len());
        assert_well_formed(&md);
        assert!(md.starts_with("**aro-gitops plan**: "));
        assert!(md.trim_end().ends_with("for the whole plan."));
        if n == 500 {
            for c in &p.clusters {
                let (html, code) = (format!("<code>{}</code>", c.unit), format!("`{}`", c.unit));
                assert!(
                    md.contains(&html) || md.contains(&code),
                    "{} has no summary",
                    c.unit
                );
            }
        }
    }
    // A smaller limit cuts the same way: summaries stay whole lines.
    let md = markdown_within(&huge(20, 500), 6_000);
    assert!(md.len() <= 6_000, "{}", md.len());
    assert_well_formed(&md);
    assert!(md.contains("Output cut at 6,000 characters"));
}

#[test]
fn one_diff_larger_than_the_limit_is_left_out_whole() {
    let mut p = huge(1, 0);
    let big: String = (0..20_000)
        .map(|i| format!("+ünïcödé {i} ```` \n"))
        .collect();
    p.clusters[0].changes[1].diff = format!("--- live/x\n+++ desired/x\n@@ -1 +1,20000 @@\n{big}");
    let md = markdown(&p);
    assert!(md.len() <= MARKDOWN_LIMIT);
    assert_well_formed(&md);
    assert!(md.contains("_Diff left out (20003 lines)"));
    assert!(md.contains("1 diff omitted"));
}
