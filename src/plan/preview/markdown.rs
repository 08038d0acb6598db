//! The preview as a GitHub pull-request comment: a summary, then one collapsible section per cluster
//! with its errors, blocked deletions, adoptions, policy effects and changes (each with its diff).
//!
//! Everything from the repository or the cluster is user data and is escaped. GitHub refuses comments
//! over 65,536 characters, so the comment stays within [`MARKDOWN_LIMIT`]: when the whole plan does not
//! fit, diffs go first (largest first, later clusters first), then change lists, then the list of
//! unchanged clusters, then whole sections, and a closing note says what was left out. The output
//! is only ever shortened by whole pieces, so tags and fences stay balanced.

use super::model::{Change, ObjectRef};
use super::{
    ChangeAction, ClusterPreview, Preview, Problem, Totals, action_counts, action_word,
    against_phrase, has_details, plural, short_commit,
};
use escape::{cell_code, clip, code, html, longest_run, text};
use std::borrow::Cow;

mod escape;
mod rollout;

/// The longest comment [`markdown`] writes, in bytes (so also at most this many characters).
pub const MARKDOWN_LIMIT: usize = 65_000;

/// Longest piece of free text (message, reason, description) shown, in bytes.
const TEXT_CAP: usize = 2_000;
/// Longest name (unit, object, file, revision) shown, in bytes.
const NAME_CAP: usize = 400;

/// Renders `p` as a GitHub comment of at most [`MARKDOWN_LIMIT`] bytes.
pub fn markdown(p: &Preview) -> String {
    markdown_within(p, MARKDOWN_LIMIT)
}

/// [`markdown`] with another limit. The limit holds when it leaves room for the two summary lines
/// and the closing note (a few kilobytes at most).
pub(super) fn markdown_within(p: &Preview, limit: usize) -> String {
    let mut cut = Cut::none(p);
    let full = assemble(p, &cut);
    if full.len() <= limit {
        return full;
    }
    shorten(p, &mut cut, limit);
    assemble(p, &cut)
}

/// How much of one cluster's section is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Everything (diffs may still be omitted one by one).
    Full,
    /// Errors and blocked deletions; no changes, adoptions or policy effects.
    Essentials,
    /// One list line with the summary, no collapsible section.
    Summary,
    /// Nothing: the cluster is counted in the closing note.
    Hidden,
}

/// What is left out of the comment.
#[derive(Debug, Clone)]
struct Cut {
    /// Per cluster.
    detail: Vec<Detail>,
    /// Per cluster, per change: its diff is left out.
    omitted: Vec<Vec<bool>>,
    /// The unchanged clusters are named (else only counted).
    list_unchanged: bool,
    /// How many of the errors not tied to a cluster are shown.
    global_errors: usize,
    /// Set when anything was left out: the limit the closing note names.
    limit: Option<usize>,
}

impl Cut {
    fn none(p: &Preview) -> Self {
        Cut {
            detail: vec![Detail::Full; p.clusters.len()],
            omitted: p
                .clusters
                .iter()
                .map(|c| vec![false; c.changes.len()])
                .collect(),
            list_unchanged: true,
            global_errors: p.errors.len(),
            limit: None,
        }
    }
}

/// Leaves pieces out of `cut` until the comment fits in `limit`.
fn shorten(p: &Preview, cut: &mut Cut, limit: usize) {
    cut.limit = Some(limit);
    // The note, and the blank line that may close the list of one-line summaries.
    let budget = limit.saturating_sub(worst_note(p, limit).len() + 1);
    let head_len = head(p).len();
    let mut sections: Vec<usize> = (0..p.clusters.len())
        .map(|i| section(&p.clusters[i], i, cut).len())
        .collect();
    let mut globals = global_errors(p, cut.global_errors).len();
    let mut unchanged = unchanged_line(p, cut.list_unchanged).len();
    let total = |s: &[usize], g: usize, u: usize| head_len + g + s.iter().sum::<usize>() + u;

    // 1. Diffs, largest first, later clusters first among equals. Sections are sums of pieces, so
    //    leaving a diff out shortens its section by the difference between its two pieces.
    let mut diffs: Vec<(usize, usize, usize, usize)> = Vec::new();
    for (i, c) in p.clusters.iter().enumerate() {
        if !has_details(c) {
            continue;
        }
        for (j, ch) in c.changes.iter().enumerate() {
            let (with, without) = (change_piece(ch, false).len(), change_piece(ch, true).len());
            if with > without {
                diffs.push((with - without, i, j, with));
            }
        }
    }
    diffs.sort_by(|a, b| b.3.cmp(&a.3).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
    for (saved, i, j, _) in diffs {
        if total(&sections, globals, unchanged) <= budget {
            return;
        }
        cut.omitted[i][j] = true;
        sections[i] -= saved;
    }

    // 2-5. Parts of sections, later clusters first: changes, then (after naming the unchanged
    //      clusters gives way to counting them) errors and blocked deletions, then whole sections.
    for step in [Detail::Essentials, Detail::Summary, Detail::Hidden] {
        if step == Detail::Summary {
            if total(&sections, globals, unchanged) <= budget {
                return;
            }
            cut.list_unchanged = !p.clusters.iter().any(|c| !has_details(c));
            unchanged = unchanged_line(p, cut.list_unchanged).len();
        }
        for i in (0..p.clusters.len()).rev() {
            if total(&sections, globals, unchanged) <= budget {
                return;
            }
            if has_details(&p.clusters[i]) {
                cut.detail[i] = step;
                sections[i] = section(&p.clusters[i], i, cut).len();
            }
        }
    }

    // 6. Errors not tied to a cluster, last first.
    while total(&sections, globals, unchanged) > budget && cut.global_errors > 0 {
        cut.global_errors -= 1;
        globals = global_errors(p, cut.global_errors).len();
    }
}

/// The comment for a given cut. Pieces end with a blank line, except the one-line summaries of
/// clusters, which form a list: a blank line closes it.
fn assemble(p: &Preview, cut: &Cut) -> String {
    let mut out = head(p);
    out.push_str(&global_errors(p, cut.global_errors));
    if let Some(r) = &p.rollout {
        out.push_str(&rollout::paragraph(r));
    }
    let mut in_list = false;
    for (i, c) in p.clusters.iter().enumerate() {
        let piece = section(c, i, cut);
        let is_item = cut.detail[i] == Detail::Summary;
        if in_list && !is_item && !piece.is_empty() {
            out.push('\n');
        }
        in_list = (in_list && piece.is_empty()) || (is_item && !piece.is_empty());
        out.push_str(&piece);
    }
    if in_list {
        out.push('\n');
    }
    out.push_str(&unchanged_line(p, cut.list_unchanged));
    if let Some(limit) = cut.limit {
        out.push_str(&note(&NoteCounts::of(p, cut), limit));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The two summary lines: what changes overall, and which revisions were compared with what.
fn head(p: &Preview) -> String {
    let t = Totals::of(p);
    let mut extras = Vec::new();
    if t.counts.blocked > 0 {
        extras.push(plural(
            t.counts.blocked,
            "deletion blocked",
            "deletions blocked",
        ));
    }
    if t.counts.adopted > 0 {
        extras.push(format!("{} adopted", t.counts.adopted));
    }
    let what = if t.changing > 0 {
        format!(
            "{} ({})",
            plural(t.changing, "cluster changes", "clusters change"),
            action_counts(&t.counts).join(", ")
        )
    } else if extras.is_empty() {
        "no changes".to_string()
    } else {
        format!("no changes ({})", extras.join(", "))
    };
    let mut line = format!(
        "**aro-gitops plan**: {what} · {} unchanged · {} with errors",
        t.unchanged, t.failing
    );
    if !p.errors.is_empty() {
        line.push_str(&format!(
            " · {}",
            plural(
                p.errors.len(),
                "error not tied to a cluster",
                "errors not tied to a cluster"
            )
        ));
    }
    let rev = |r: &super::Revision| {
        format!(
            "{} at {}",
            code(&clip(&r.reference, NAME_CAP)),
            code(short_commit(&r.commit))
        )
    };
    let mut second = format!("Head {}", rev(&p.head));
    if let Some(base) = &p.base {
        second.push_str(&format!(" · base {}", rev(base)));
    }
    second.push_str(&format!(
        " · compared with {}: {}",
        against_phrase(p.against),
        text(&clip(&p.against_description, TEXT_CAP))
    ));
    for n in &p.notices {
        second.push_str(&format!("\n\n> {}", text(&clip(n, TEXT_CAP))));
    }
    format!("{line}\n\n{second}\n\n")
}

/// The errors not tied to a cluster, the first `shown` of them.
fn global_errors(p: &Preview, shown: usize) -> String {
    if p.errors.is_empty() || shown == 0 {
        return String::new();
    }
    let mut out = String::from("**Errors not tied to a cluster**\n\n");
    out.push_str(&error_table(&p.errors[..shown.min(p.errors.len())]));
    out
}

/// One cluster's collapsible section, as much of it as `cut` leaves (empty when not sectioned).
fn section(c: &ClusterPreview, i: usize, cut: &Cut) -> String {
    let detail = cut.detail[i];
    if !has_details(c) || detail == Detail::Hidden {
        return String::new();
    }
    if detail == Detail::Summary {
        let (unit, cluster, counts, marks) = summary_parts(c);
        let cluster = cluster.map_or_else(String::new, |c| format!(" ({})", code(&c)));
        return format!("- {}{cluster}: {counts} · **{marks}**\n", code(&unit));
    }
    let open = !c.errors.is_empty() || c.has_changes() || !c.blocked_deletions.is_empty();
    let (unit, cluster, counts, marks) = summary_parts(c);
    let cluster = cluster.map_or_else(String::new, |c| format!(" · <code>{}</code>", html(&c)));
    let mut out = format!(
        "<details{}>\n<summary><code>{}</code>{cluster} · {counts} · <b>{marks}</b></summary>\n\n",
        if open { " open" } else { "" },
        html(&unit),
    );
    if !c.errors.is_empty() {
        out.push_str("**Errors** (the cluster is not planned)\n\n");
        out.push_str(&error_table(&c.errors));
    }
    if !c.blocked_deletions.is_empty() {
        out.push_str("**Deletions blocked**\n\n| Object | Reason |\n| --- | --- |\n");
        for b in &c.blocked_deletions {
            out.push_str(&format!(
                "| {} | {} |\n",
                object_cell(&b.object),
                cell(&b.reason)
            ));
        }
        out.push('\n');
    }
    if detail == Detail::Essentials {
        let left_out: Vec<String> = [
            (c.changes.len(), "change", "changes"),
            (c.adopted.len(), "adoption", "adoptions"),
            (c.policy_effects.len(), "policy effect", "policy effects"),
            (
                c.pending_values.len(),
                "value not known yet",
                "values not known yet",
            ),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| plural(n, one, many))
        .collect();
        if !left_out.is_empty() {
            out.push_str(&format!(
                "_Left out, the comment being at its size limit: {}._\n\n",
                left_out.join(", ")
            ));
        }
        out.push_str("</details>\n\n");
        return out;
    }
    if !c.adopted.is_empty() {
        out.push_str(
            "**Adopted** (existing objects taken over)\n\n| Object | Reason |\n| --- | --- |\n",
        );
        for a in &c.adopted {
            out.push_str(&format!(
                "| {} | {} |\n",
                object_cell(&a.object),
                cell(&a.reason)
            ));
        }
        out.push('\n');
    }
    if !c.policy_effects.is_empty() {
        out.push_str("**Policy effects**\n\n| Object | Policy | Effect |\n| --- | --- | --- |\n");
        for e in &c.policy_effects {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                object_cell(&e.object),
                cell_code(&clip(&e.policy, NAME_CAP)),
                cell(&e.effect)
            ));
        }
        out.push('\n');
    }
    if !c.pending_values.is_empty() {
        out.push_str(
            "**Not known yet** (filled in by the agent)\n\n| Object | Field | Reason |\n| --- | --- | --- |\n",
        );
        for v in &c.pending_values {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                object_cell(&v.object),
                cell_code(&clip(&v.field, NAME_CAP)),
                cell(&v.reason)
            ));
        }
        out.push('\n');
    }
    if !c.changes.is_empty() {
        out.push_str("**Changes**\n\n");
        for (j, ch) in c.changes.iter().enumerate() {
            out.push_str(&change_piece(ch, cut.omitted[i][j]));
        }
    }
    out.push_str("</details>\n\n");
    out
}

/// What a section's summary says: unit, cluster, counts and marker (names not yet escaped).
fn summary_parts(c: &ClusterPreview) -> (Cow<'_, str>, Option<Cow<'_, str>>, String, String) {
    let unit = clip(&c.unit, NAME_CAP);
    let cluster = c.cluster.as_deref().map(|s| clip(s, NAME_CAP));
    let k = &c.counts;
    let planned = k.create + k.update + k.delete + k.unchanged + k.blocked + k.adopted > 0;
    let counts = if !c.errors.is_empty() && !planned {
        format!("not planned: {}", plural(c.errors.len(), "error", "errors"))
    } else {
        let mut counts = action_counts(k);
        counts.insert(3, format!("{} unchanged", k.unchanged));
        counts.join(", ")
    };
    let mut marks = Vec::new();
    if !c.errors.is_empty() {
        marks.push("errors");
    }
    if c.has_changes() {
        marks.push("changes");
    }
    if k.blocked > 0 || !c.blocked_deletions.is_empty() {
        marks.push("deletion blocked");
    }
    if marks.is_empty() {
        marks.push("no changes");
    }
    (unit, cluster, counts, marks.join(", "))
}

/// One change: a line naming it, then its diff (or a line saying the diff was left out).
fn change_piece(ch: &Change, omit_diff: bool) -> String {
    let mut out = format!(
        "**{}** {} ({})",
        action_word(ch.action),
        code(&clip(&ch.object.to_string(), NAME_CAP)),
        code(&clip(&ch.object.api_version, NAME_CAP))
    );
    if ch.secret {
        out.push_str(" · Secret: values hidden");
    }
    if ch.detach && ch.action == ChangeAction::Delete {
        out.push_str(" · detached: the Azure resource is kept");
    } else if ch.detach {
        out.push_str(" · detach on delete");
    }
    out.push_str("\n\n");
    if ch.diff.is_empty() {
        return out;
    }
    if omit_diff {
        out.push_str(&format!(
            "_Diff left out ({}): the comment is at its size limit._\n\n",
            plural(ch.diff.lines().count(), "line", "lines")
        ));
        return out;
    }
    let fence = "`".repeat(longest_run(&ch.diff, '`').max(2) + 1);
    out.push_str(&format!("{fence}diff\n{}", ch.diff));
    if !ch.diff.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("{fence}\n\n"));
    out
}

/// The line naming the clusters without a section.
fn unchanged_line(p: &Preview, list: bool) -> String {
    let names: Vec<&str> = p
        .clusters
        .iter()
        .filter(|c| !has_details(c))
        .map(|c| c.unit.as_str())
        .collect();
    if names.is_empty() {
        return String::new();
    }
    let n = plural(names.len(), "cluster", "clusters");
    if !list {
        return format!(
            "**No changes** in {n} (not listed: the comment is at its size limit).\n\n"
        );
    }
    let listed: Vec<String> = names.iter().map(|u| code(&clip(u, NAME_CAP))).collect();
    format!("**No changes** in {n}: {}\n\n", listed.join(", "))
}

/// What was left out, counted for the closing note.
#[derive(Debug, Default)]
struct NoteCounts {
    diffs: usize,
    essentials: usize,
    unlisted: bool,
    summaries: usize,
    hidden: usize,
    errors: usize,
}

impl NoteCounts {
    fn of(p: &Preview, cut: &Cut) -> Self {
        let mut n = NoteCounts {
            unlisted: !cut.list_unchanged,
            errors: p.errors.len() - cut.global_errors.min(p.errors.len()),
            ..NoteCounts::default()
        };
        for (i, c) in p.clusters.iter().enumerate() {
            if !has_details(c) {
                continue;
            }
            match cut.detail[i] {
                Detail::Full => {
                    n.diffs += (0..c.changes.len())
                        .filter(|&j| cut.omitted[i][j] && !c.changes[j].diff.is_empty())
                        .count()
                }
                Detail::Essentials => n.essentials += 1,
                Detail::Summary => n.summaries += 1,
                Detail::Hidden => n.hidden += 1,
            }
        }
        n
    }
}

/// The longest closing note this preview could get: room kept for it while shortening.
fn worst_note(p: &Preview, limit: usize) -> String {
    let n = NoteCounts {
        diffs: p.clusters.iter().map(|c| c.changes.len()).sum(),
        essentials: p.clusters.len(),
        unlisted: p.clusters.iter().any(|c| !has_details(c)),
        summaries: p.clusters.len(),
        hidden: p.clusters.len(),
        errors: p.errors.len(),
    };
    note(&n, limit)
}

/// The closing note saying what was left out.
fn note(n: &NoteCounts, limit: usize) -> String {
    let mut parts = Vec::new();
    if n.diffs > 0 {
        parts.push(format!("{} omitted", plural(n.diffs, "diff", "diffs")));
    }
    if n.essentials > 0 {
        parts.push(format!(
            "changes of {} omitted",
            plural(n.essentials, "cluster", "clusters")
        ));
    }
    if n.unlisted {
        parts.push("unchanged clusters not listed".to_string());
    }
    if n.summaries > 0 {
        parts.push(format!(
            "{} shown as one line",
            plural(n.summaries, "cluster", "clusters")
        ));
    }
    if n.hidden > 0 {
        parts.push(format!(
            "{} not shown",
            plural(n.hidden, "cluster", "clusters")
        ));
    }
    if n.errors > 0 {
        parts.push(format!(
            "{} not shown",
            plural(
                n.errors,
                "error not tied to a cluster",
                "errors not tied to a cluster"
            )
        ));
    }
    format!(
        "> Output cut at {} characters: {}. Run `aro-gitops plan --output json` for the whole plan.\n",
        thousands(limit),
        parts.join(", ")
    )
}

/// A table of errors: file, object, message.
fn error_table(errors: &[Problem]) -> String {
    let mut out = String::from("| File | Object | Message |\n| --- | --- | --- |\n");
    for e in errors {
        let file = e
            .location()
            .map_or_else(|| "—".to_string(), |f| cell_code(&clip(&f, NAME_CAP)));
        let object = e
            .object
            .as_ref()
            .map_or_else(|| "—".to_string(), object_cell);
        out.push_str(&format!("| {file} | {object} | {} |\n", cell(&e.message)));
    }
    out.push('\n');
    out
}

fn object_cell(o: &ObjectRef) -> String {
    cell_code(&clip(&o.to_string(), NAME_CAP))
}

/// Free text in a table cell.
fn cell(s: &str) -> String {
    let t = text(&clip(s, TEXT_CAP));
    if t.trim().is_empty() {
        "—".to_string()
    } else {
        t
    }
}

/// `65000` as `65,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}
