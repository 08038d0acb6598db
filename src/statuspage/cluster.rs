//! A cluster's page (or a unit's, when its cluster was never known): its chain step by step,
//! conditions, objects, annotations, errors, what it renders when its preparation failed, and its
//! history on the status branch.

use super::feed::UnitView;
use super::history::HistoryEntry;
use super::html::{ago, chain, errors, identity_attributes, revision, rfc3339, short, text};
use std::fmt::Write;

/// The main part of the page of `u`, with its `history` (or why it could not be read).
pub fn page(u: &UnitView, history: Result<&[HistoryEntry], String>, now: i64) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let name = u.cluster.as_deref().unwrap_or(&u.unit);
    let _ = write!(
        out,
        "<p><a href=\"/\">&larr; all clusters</a></p><section class=\"cluster phase-{phase}\" \
         {attributes}><h2>{name} <span class=\"phase\">{phase}</span></h2>{unknown}",
        phase = u.phase,
        attributes = identity_attributes(u),
        name = text(name),
        unknown = if u.cluster.is_none() {
            "<p class=\"muted\">No cluster of this unit is known yet: it failed before one was \
             read from its objects.</p>"
        } else {
            ""
        },
    );
    if let Some(d) = &u.description {
        let _ = write!(out, "<p class=\"description\">{}</p>", text(d));
    }
    let _ = write!(
        out,
        "<table class=\"facts\"><tr><th>Unit</th><td>{}</td></tr><tr><th>Revision</th>",
        text(&u.unit)
    );
    revision(&mut out, u, now);
    let _ = write!(
        out,
        "</tr><tr><th>Azure</th><td>{}</td></tr><tr><th>Step</th><td>{}/{}: {}</td></tr>\
         <tr><th>Drift</th><td>{}</td></tr></table>",
        match u.report.azure {
            crate::report::AzureMode::Simulated => "simulated (no real Azure resource)",
            crate::report::AzureMode::Real => "real",
        },
        u.report.chain.step,
        u.report.chain.total,
        text(&u.report.chain.stage),
        match u.drifted {
            0 => "none found".to_string(),
            n => format!("{n} objects drifted"),
        }
    );
    if !u.report.errors.is_empty() {
        out.push_str("<h3>Errors</h3>");
        errors(&mut out, u);
    }
    out.push_str("<h3>Dependency chain</h3>");
    out.push_str(&chain(&u.report.chain, true));
    conditions(&mut out, u);
    objects(&mut out, u);
    super::rendered::section(&mut out, &u.rendered);
    annotations(&mut out, u);
    history_table(&mut out, history, now);
    out.push_str("</section>");
    out
}

fn conditions(out: &mut String, u: &UnitView) {
    if u.report.conditions.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Conditions</h3><table class=\"conditions\"><thead><tr><th>Object</th><th>Type</th>\
         <th>Status</th><th>Reason</th><th>Message</th></tr></thead><tbody>",
    );
    for o in &u.report.conditions {
        for c in &o.conditions {
            let _ = write!(
                out,
                "<tr class=\"status-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if c.status == "True" { "true" } else { "other" },
                text(&o.object),
                text(&c.type_),
                text(&c.status),
                text(c.reason.as_deref().unwrap_or_default()),
                text(c.message.as_deref().unwrap_or_default()),
            );
        }
    }
    out.push_str("</tbody></table>");
}

fn objects(out: &mut String, u: &UnitView) {
    if u.report.objects.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Objects</h3><table class=\"objects\"><thead><tr><th>Object</th><th>Action</th>\
         <th>Ready</th><th>Message</th></tr></thead><tbody>",
    );
    for o in &u.report.objects {
        let name = match &o.namespace {
            Some(ns) => format!("{}/{}/{}", o.kind, ns, o.name),
            None => format!("{}/{}", o.kind, o.name),
        };
        let mut message = o.reason.clone().unwrap_or_default();
        if let Some(m) = &o.message {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(m);
        }
        if !o.blocked_on.is_empty() {
            message.push_str(&format!(" (waits for {})", o.blocked_on.join(", ")));
        }
        let _ = write!(
            out,
            "<tr class=\"action-{action}\"><td>{}</td><td>{action}</td><td>{}</td><td>{}</td></tr>",
            text(&name),
            if o.ready { "yes" } else { "no" },
            text(message.trim()),
            action = o.action.as_str(),
        );
    }
    out.push_str("</tbody></table>");
}

fn annotations(out: &mut String, u: &UnitView) {
    out.push_str("<h3>Annotations</h3>");
    if u.annotations.is_empty() {
        out.push_str("<p class=\"muted\">none</p>");
        return;
    }
    out.push_str("<table class=\"annotations\"><tbody>");
    for (k, v) in &u.annotations {
        let _ = write!(
            out,
            "<tr><th>{}</th><td class=\"annotation\">{}</td></tr>",
            text(k),
            text(v)
        );
    }
    out.push_str("</tbody></table>");
}

fn history_table(out: &mut String, history: Result<&[HistoryEntry], String>, now: i64) {
    out.push_str("<h3>History on the status branch</h3>");
    let entries = match history {
        Ok([]) => {
            out.push_str("<p class=\"muted\">no report published yet</p>");
            return;
        }
        Ok(entries) => entries,
        Err(e) => {
            let _ = write!(out, "<p class=\"errors\">{}</p>", text(&e));
            return;
        }
    };
    out.push_str(
        "<table class=\"history\"><thead><tr><th>Commit</th><th>When</th><th>Phase</th>\
         <th>Step</th><th>Revision</th><th>Message</th></tr></thead><tbody>",
    );
    for e in entries {
        let phase = e.phase.as_deref().unwrap_or_default();
        let revision = e.revision.as_deref().unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td><time datetime=\"{}\">{}</time></td>\
             <td class=\"phase-{}\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            text(&short(&e.commit)),
            rfc3339(e.time),
            ago(now, e.time),
            text(phase),
            text(phase),
            text(e.step.as_deref().unwrap_or_default()),
            text(&short(revision)),
            text(&e.summary),
        );
    }
    out.push_str("</tbody></table>");
}
