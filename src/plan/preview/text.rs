//! The preview for a terminal, in the manner of `terraform plan`: per cluster a header, then its
//! errors, blocked deletions, adoptions, policy effects and changes (`+` create, `~` update,
//! `-` delete, each with its diff), and the summary line last.
//!
//! Colour is plain ANSI escapes and only when asked for. Control characters in user data are
//! shown escaped, so the output holds no escape sequence that this module did not write.

use super::model::{Change, ObjectRef, Problem};
use super::{
    ChangeAction, ClusterPreview, Preview, Totals, action_counts, against_phrase, has_details,
    plural, short_commit,
};
use std::borrow::Cow;

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Renders `p` for a terminal; `color` adds ANSI colours (diff lines, symbols, headers).
pub fn text(p: &Preview, color: bool) -> String {
    let w = Writer { color };
    let mut out = String::new();
    out.push_str(&w.paint(BOLD, &format!("aro-gitops plan of {}", clean(&p.repo))));
    out.push('\n');
    let rev =
        |r: &super::Revision| format!("{} ({})", clean(&r.reference), short_commit(&r.commit));
    out.push_str(&format!("Head {}", rev(&p.head)));
    if let Some(base) = &p.base {
        out.push_str(&format!(", base {}", rev(base)));
    }
    out.push_str(&format!(
        "\nCompared with {}: {}\n",
        against_phrase(p.against),
        clean(&p.against_description)
    ));
    for n in &p.notices {
        out.push_str(&format!("{}\n", clean(n)));
    }
    if !p.errors.is_empty() {
        out.push_str(&format!(
            "\n{}\n",
            w.paint(RED, "Errors not tied to a cluster:")
        ));
        for e in &p.errors {
            out.push_str(&w.problem(e));
        }
    }
    let mut unchanged = Vec::new();
    for c in &p.clusters {
        if has_details(c) {
            out.push_str(&w.cluster(c));
        } else {
            unchanged.push(clean(&c.unit));
        }
    }
    if !unchanged.is_empty() {
        out.push_str(&format!(
            "\nNo changes in {}: {}\n",
            plural(unchanged.len(), "cluster", "clusters"),
            unchanged.join(", ")
        ));
    }
    if let Some(r) = &p.rollout {
        out.push('\n');
        out.push_str(&rollout(r));
    }
    out.push('\n');
    out.push_str(&w.summary(p));
    out
}

/// `rollout: 2 waves`, a line per wave with its changed clusters, and a line per window opening
/// with the clusters waiting for it.
fn rollout(r: &super::RolloutPreview) -> String {
    let mut out = format!("rollout: {}\n", plural(r.waves.len(), "wave", "waves"));
    for (i, wave) in r.waves.iter().enumerate() {
        let units: Vec<Cow<'_, str>> = wave.units.iter().map(|u| clean(u)).collect();
        let units = if units.is_empty() {
            "no changed cluster".to_string()
        } else {
            units.join(", ")
        };
        out.push_str(&format!(
            "  wave {} {}: {units}\n",
            i + 1,
            clean(&wave.name)
        ));
    }
    for (opening, units) in r.window_groups() {
        let units: Vec<Cow<'_, str>> = units.into_iter().map(clean).collect();
        out.push_str(&format!(
            "  waiting for the maintenance window ({opening}): {}\n",
            units.join(", ")
        ));
    }
    out
}

struct Writer {
    color: bool,
}

impl Writer {
    /// `s` in `style` when colouring; the style never spans a line break.
    fn paint(&self, style: &str, s: &str) -> String {
        if self.color && !s.is_empty() {
            format!("{style}{s}{RESET}")
        } else {
            s.to_string()
        }
    }

    fn cluster(&self, c: &ClusterPreview) -> String {
        let mut title = format!("Cluster {}", clean(&c.unit));
        if let Some(cluster) = &c.cluster {
            title.push_str(&format!(" ({})", clean(cluster)));
        }
        let k = &c.counts;
        let planned = k.create + k.update + k.delete + k.unchanged + k.blocked + k.adopted > 0;
        let counts = if !c.errors.is_empty() && !planned {
            format!("not planned: {}", plural(c.errors.len(), "error", "errors"))
        } else {
            let mut parts = action_counts(k);
            parts.insert(3, format!("{} unchanged", k.unchanged));
            parts.join(", ")
        };
        let mut out = format!("\n{}: {counts}\n", self.paint(BOLD, &title));
        if !c.errors.is_empty() {
            out.push_str(&format!(
                "\n  {}\n",
                self.paint(RED, "Errors (the cluster is not planned):")
            ));
            for e in &c.errors {
                out.push_str(&self.problem(e));
            }
        }
        if !c.blocked_deletions.is_empty()
            || !c.adopted.is_empty()
            || !c.policy_effects.is_empty()
            || !c.pending_values.is_empty()
        {
            out.push('\n');
        }
        for b in &c.blocked_deletions {
            out.push_str(&self.item(
                &self.paint(YELLOW, "!"),
                &format!("{} will not be deleted", object(&b.object)),
                &b.reason,
            ));
        }
        for a in &c.adopted {
            out.push_str(&self.item(
                &self.paint(CYAN, "="),
                &format!("{} is adopted", object(&a.object)),
                &a.reason,
            ));
        }
        for e in &c.policy_effects {
            out.push_str(&self.item(
                &self.paint(CYAN, "*"),
                &format!("{} has policy {}", object(&e.object), clean(&e.policy)),
                &e.effect,
            ));
        }
        for v in &c.pending_values {
            out.push_str(&self.item(
                &self.paint(CYAN, "?"),
                &format!("{} {} is not known yet", object(&v.object), clean(&v.field)),
                &v.reason,
            ));
        }
        for ch in &c.changes {
            out.push_str(&self.change(ch));
        }
        out
    }

    /// `  <symbol> <what>: <why>`, further lines of `why` indented under it.
    fn item(&self, symbol: &str, what: &str, why: &str) -> String {
        let mut lines = why.lines();
        let mut out = format!("  {symbol} {what}: {}\n", clean(lines.next().unwrap_or("")));
        for l in lines {
            out.push_str(&format!("      {}\n", clean(l)));
        }
        out
    }

    fn problem(&self, e: &Problem) -> String {
        let mut place = Vec::new();
        if let Some(f) = e.location() {
            place.push(clean(&f).into_owned());
        }
        if let Some(o) = &e.object {
            place.push(object(o));
        }
        let what = if place.is_empty() {
            "error".to_string()
        } else {
            place.join(": ")
        };
        self.item(&self.paint(RED, "✗"), &what, &e.message)
    }

    fn change(&self, ch: &Change) -> String {
        let (symbol, style, verb) = match ch.action {
            ChangeAction::Create => ("+", GREEN, "will be created"),
            ChangeAction::Update => ("~", YELLOW, "will be updated in place"),
            ChangeAction::Delete if ch.detach => (
                "-",
                RED,
                "will be deleted from Kubernetes; its Azure resource is kept (detach-on-delete)",
            ),
            ChangeAction::Delete => ("-", RED, "will be deleted"),
        };
        let mut out = format!(
            "\n  {} {} {verb}",
            self.paint(style, symbol),
            object(&ch.object)
        );
        if ch.secret {
            out.push_str(" (Secret: values hidden)");
        }
        out.push('\n');
        let mut in_hunk = false;
        for line in ch.diff.lines() {
            in_hunk |= line.starts_with("@@");
            let style = if !in_hunk && (line.starts_with("+++ ") || line.starts_with("--- ")) {
                BOLD
            } else if line.starts_with('+') {
                GREEN
            } else if line.starts_with('-') {
                RED
            } else if line.starts_with("@@") {
                CYAN
            } else {
                ""
            };
            let line = clean(line);
            let shown = if style.is_empty() {
                line.into_owned()
            } else {
                self.paint(style, &line)
            };
            out.push_str(&format!("      {shown}\n"));
        }
        out
    }

    /// The closing lines: what applying would do, then what failed.
    fn summary(&self, p: &Preview) -> String {
        let t = Totals::of(p);
        let mut out = if p.has_changes() || t.counts.blocked > 0 || p.has_errors() {
            let mut parts = action_counts(&t.counts);
            let extras = parts.split_off(3);
            let mut line = format!("Plan: {}", parts.join(", "));
            for e in extras {
                line.push_str(&format!("; {e}"));
            }
            format!("{}.\n", self.paint(BOLD, &line))
        } else {
            let same = match p.against {
                super::Against::Live => "Live state matches the desired state.",
                super::Against::Base => "The head revision renders the same objects as the base.",
            };
            format!("{} {same}\n", self.paint(BOLD, "No changes."))
        };
        let failing: Vec<Cow<'_, str>> = p
            .clusters
            .iter()
            .filter(|c| !c.errors.is_empty())
            .map(|c| clean(&c.unit))
            .collect();
        if !failing.is_empty() {
            let n = failing.len();
            out.push_str(&format!(
                "{} {} not planned because of errors: {}.\n",
                self.paint(RED, "Error:"),
                plural(n, "cluster was", "clusters were"),
                failing.join(", ")
            ));
        }
        if !p.errors.is_empty() {
            out.push_str(&format!(
                "{} {}.\n",
                self.paint(RED, "Error:"),
                plural(
                    p.errors.len(),
                    "error not tied to a cluster",
                    "errors not tied to a cluster"
                )
            ));
        }
        out
    }
}

fn object(o: &ObjectRef) -> String {
    clean(&o.to_string()).into_owned()
}

/// `s` with control characters (tab aside) shown as `\u{..}` escapes, so user data cannot move
/// the cursor or change colours.
fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}
