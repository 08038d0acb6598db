//! The report for people: Markdown that reads well in a GitHub pull request and as plain text.
//!
//! A headline with the phase and the step on the dependency chain, the revision (short and full), a
//! visible note when Azure is simulated or the source is stale, the chain, a table of objects and the
//! errors. Free text from conditions and errors is escaped so it cannot break a table or open HTML.

use super::chain::StepState;
use super::model::{Action, AzureMode, ClusterReport, Phase, ReportError, ReportObject};
use std::fmt::Write;

/// Longest text shown in one table cell; the YAML report has it whole.
const MAX_CELL: usize = 300;

/// Renders the report as Markdown. Same report, same bytes.
pub fn to_markdown(report: &ClusterReport) -> String {
    let mut out = String::new();
    headline(&mut out, report);
    if report.azure == AzureMode::Simulated {
        out.push_str(
            "> [!WARNING]\n> **Simulated Azure.** Nothing in this report happened in real Azure: \
             the agent's Azure simulator created and judged every Azure resource below.\n\n",
        );
    }
    match (report.phase, &report.pass) {
        (Phase::NotStarted, Some(why)) => {
            let _ = write!(
                out,
                "> [!CAUTION]\n> **Not started.** {}: the run applied nothing to it, and \
                 nothing is known of where it stands.\n\n",
                inline(why)
            );
        }
        (Phase::Interrupted, Some(why)) => {
            let _ = write!(
                out,
                "> [!CAUTION]\n> **Interrupted.** {}: what its pass did is not known; the \
                 dependency chain below is where the pass before left it.\n\n",
                inline(why)
            );
        }
        _ => {}
    }
    if let Some(reason) = &report.stale_source
        && reason.contains(crate::source::signature::REFUSED)
    {
        let _ = write!(
            out,
            "> [!CAUTION]\n> **Revision refused.** {}; the last applied revision was applied \
             again.\n\n",
            inline(reason)
        );
    } else if let Some(reason) = &report.stale_source {
        let _ = write!(
            out,
            "> [!CAUTION]\n> **Stale source.** The repository could not be read ({}); the last \
             good revision was applied again.\n\n",
            inline(reason)
        );
    }
    if let Some(held) = &report.held {
        let _ = write!(
            out,
            "> [!NOTE]\n> **Rollout.** The cluster stays on this revision; the newest, `{}`, waits: \
             {}.\n\n",
            inline(&held.newest),
            inline(&held.why)
        );
    }
    facts(&mut out, report);
    chain_section(&mut out, report);
    objects_section(&mut out, report);
    conditions_section(&mut out, report);
    errors_section(&mut out, &report.errors);
    let end = out.trim_end().len();
    out.truncate(end);
    out.push('\n');
    out
}

fn title(report: &ClusterReport) -> String {
    match &report.cluster {
        Some(c) => format!("{}/{}", c.namespace, c.name),
        None => format!("unit {}", report.unit),
    }
}

fn headline(out: &mut String, report: &ClusterReport) {
    let chain = &report.chain;
    let at = match chain.current() {
        _ if report.phase == Phase::NotStarted => "no pass yet".to_string(),
        None => "no cluster known".to_string(),
        Some(_) if chain.is_complete() => {
            format!("step {}/{}, complete", chain.step, chain.total)
        }
        Some(s) if s.state == StepState::Failed => {
            format!("step {}/{}, {} failed", chain.step, chain.total, s.name)
        }
        Some(s) if report.phase == Phase::Interrupted => {
            format!("reached step {}/{}, {}", chain.step, chain.total, s.name)
        }
        Some(s) => format!("step {}/{}, {}", chain.step, chain.total, s.name),
    };
    let _ = writeln!(
        out,
        "# {}: {} ({at})\n",
        inline(&title(report)),
        report.phase.as_str()
    );
    let _ = writeln!(out, "**Stage:** {}\n", inline(&chain.stage));
}

fn facts(out: &mut String, report: &ClusterReport) {
    let revision = &report.revision;
    let short: String = revision.chars().take(7).collect();
    let full = if short.len() < revision.len() {
        format!("`{short}` (`{revision}`)")
    } else {
        format!("`{revision}`")
    };
    let _ = writeln!(
        out,
        "- **Revision:** {full}, the commit whose rendering of this cluster is applied \
         (later commits that leave it as it is leave this report as it is)"
    );
    let _ = writeln!(out, "- **Unit:** `{}`", report.unit.replace('`', "'"));
    let azure = match report.azure {
        AzureMode::Simulated => "simulated (not real Azure)",
        AzureMode::Real => "real",
    };
    let _ = writeln!(out, "- **Azure:** {azure}\n");
}

fn chain_section(out: &mut String, report: &ClusterReport) {
    let chain = &report.chain;
    out.push_str("## Dependency chain\n\n");
    if report.phase == Phase::NotStarted {
        out.push_str("Not known: no pass has read the cluster yet.\n\n");
        return;
    }
    if chain.current().is_none() {
        out.push_str("No cluster known: the unit failed before its Cluster was read.\n\n");
        return;
    }
    out.push_str("| # | Step | State | Detail |\n|---|---|---|---|\n");
    for s in &chain.steps {
        let state = match s.state {
            StepState::Done => "done",
            StepState::Waiting if s.step == chain.step => "**waiting**",
            StepState::Waiting => "waiting",
            StepState::Failed => "**FAILED**",
            StepState::NotApplicable => "not applicable",
        };
        let detail = s.detail.as_deref().map(cell).unwrap_or_default();
        let _ = writeln!(out, "| {} | {} | {state} | {detail} |", s.step, s.name);
    }
    out.push_str(
        "\nSteps are numbered 1 to 10 by aro-gitops: the seed's steps 9 and 10 (Cluster API's \
         InfrastructureProvisioned and connecting to the cluster) belong to Cluster API and are not \
         tracked here; our 9 and 10 are the node pools and the ExternalAuth.\n\n",
    );
}

fn objects_section(out: &mut String, report: &ClusterReport) {
    let _ = writeln!(out, "## Objects ({})\n", report.objects.len());
    if report.objects.is_empty() {
        out.push_str("No objects.\n\n");
        return;
    }
    out.push_str("| Kind | Name | Action | Ready | Reason / Message |\n|---|---|---|---|---|\n");
    let home = report.cluster.as_ref().map(|c| c.namespace.as_str());
    for o in &report.objects {
        let name = match o.namespace.as_deref() {
            Some(ns) if Some(ns) != home => format!("{ns}/{}", o.name),
            _ => o.name.clone(),
        };
        let ready = match (o.action, o.ready) {
            (Action::Deleted | Action::Kept | Action::DeletionBlocked, _) => "–",
            (_, true) => "yes",
            (_, false) => "no",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {ready} | {} |",
            o.kind,
            cell(&name),
            action(o),
            reason_message(o)
        );
    }
    out.push('\n');
}

fn action(o: &ReportObject) -> String {
    match o.action {
        Action::Blocked if !o.blocked_on.is_empty() => {
            let on: Vec<String> = o.blocked_on.iter().map(|k| format!("`{k}`")).collect();
            format!("blocked on {}", on.join(", "))
        }
        Action::Failed => "**failed**".to_string(),
        other => other.as_str().to_string(),
    }
}

fn conditions_section(out: &mut String, report: &ClusterReport) {
    if report.conditions.is_empty() {
        return;
    }
    out.push_str(
        "## Conditions\n\n| Object | Type | Status | Reason | Message |\n|---|---|---|---|---|\n",
    );
    for o in &report.conditions {
        for c in &o.conditions {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&o.object),
                cell(&c.type_),
                cell(&c.status),
                cell(c.reason.as_deref().unwrap_or("")),
                cell(c.message.as_deref().unwrap_or(""))
            );
        }
    }
    out.push('\n');
}

fn reason_message(o: &ReportObject) -> String {
    match (o.reason.as_deref(), o.message.as_deref()) {
        (Some(r), Some(m)) => format!("{}: {}", cell(r), cell(m)),
        (Some(t), None) | (None, Some(t)) => cell(t),
        (None, None) => String::new(),
    }
}

fn errors_section(out: &mut String, errors: &[ReportError]) {
    let _ = writeln!(out, "## Errors ({})\n", errors.len());
    if errors.is_empty() {
        out.push_str("None.\n");
        return;
    }
    for e in errors {
        let mut place = Vec::new();
        if let Some(object) = &e.object {
            place.push(format!("`{object}`"));
        }
        if let Some(file) = &e.file {
            let at = crate::object::file_position(file, e.line, e.column);
            place.push(format!("in `{}`", at.replace('`', "'")));
        }
        let lead = if place.is_empty() {
            "-".to_string()
        } else {
            format!("- {}:", place.join(" "))
        };
        let message = e.message.trim_end();
        if message.contains('\n') {
            let fence = if message.contains("```") {
                "~~~~"
            } else {
                "```"
            };
            let _ = writeln!(out, "{lead}\n\n  {fence}text");
            for line in message.lines() {
                let _ = writeln!(out, "  {line}");
            }
            let _ = writeln!(out, "  {fence}\n");
        } else {
            let _ = writeln!(out, "{lead} {}", inline(message));
        }
    }
}

/// Free text on one line, safe in Markdown: no HTML (every `&` is escaped, so a cut never splits an
/// entity unnoticed), no emphasis, no table breaks.
fn inline(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(one_line.len());
    for c in one_line.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '*' => out.push_str("\\*"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// Free text in a table cell, cut to [`MAX_CELL`] characters.
fn cell(text: &str) -> String {
    let escaped = inline(text);
    if escaped.chars().count() <= MAX_CELL {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(MAX_CELL).collect();
    // Do not leave half an escape behind.
    while cut.ends_with('\\') || cut.rfind('&').is_some_and(|i| !cut[i..].contains(';')) {
        cut.pop();
    }
    cut.push('…');
    cut
}
