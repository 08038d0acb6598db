//! The page's HTML, rendered on the server (it works with JavaScript off): the layout, the index
//! (every unit, failed first, filtered and paginated) and the pieces the cluster page shares.
//! Every value from the repository or a cluster goes through [`text`]: redacted, then escaped.

use super::feed::{Snapshot, UnitView};
use crate::report::{Chain, StepState};
use std::borrow::Cow;
use std::fmt::Write;

/// Units on one page of the index (a page of failed units with errors stays well under 1 MB).
pub const PAGE_SIZE: usize = 100;

/// The phases, in the order the index lists them (failed first).
pub const PHASES: [&str; 6] = [
    "Failed",
    "Interrupted",
    "NotStarted",
    "Blocked",
    "Progressing",
    "Converged",
];

/// `s` escaped for HTML text and for a double- or single-quoted attribute value.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A value from the repository or a cluster, ready for the page: secrets redacted, then escaped.
pub fn text(s: &str) -> String {
    escape(&crate::redact::scrub(s)).into_owned()
}

/// What a link's path segment or query value keeps as it is (RFC 3986's unreserved characters).
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A path segment or query value of a link (then escaped for the attribute by [`text`]).
pub fn segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string()
}

/// The link to a cluster's page (`namespace/name`).
pub fn cluster_href(cluster: &str) -> String {
    let (namespace, name) = cluster.split_once('/').unwrap_or(("default", cluster));
    format!("/clusters/{}/{}", segment(namespace), segment(name))
}

/// A whole page: `main` is replaced by the live updates.
pub fn layout(title: &str, generation: u64, header: &str, main: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><link rel=\"stylesheet\" href=\"/assets/status.css\">\
         <script src=\"/assets/status.js\" defer></script></head>\
         <body data-generation=\"{generation}\"><header>{header}</header>\
         <main id=\"main\">{main}</main></body></html>\n",
        title = text(title),
    )
}

/// "3m ago", from Unix seconds.
pub fn ago(now: i64, then: i64) -> String {
    let s = (now - then).max(0);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// The first 12 characters (a commit's short form).
pub fn short(s: &str) -> String {
    s.chars().take(12).collect()
}

/// An RFC 3339 time, for `<time datetime>`.
pub fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// The ten steps of the ARO dependency chain, each done, current, blocked (failed), waiting or
/// not applicable; `names` writes each step's name beside its number (the cluster page).
pub fn chain(chain: &Chain, names: bool) -> String {
    let mut out = format!(
        "<ol class=\"chain{}\" title=\"{}\">",
        if names { " long" } else { "" },
        text(&format!(
            "step {}/{}: {}",
            chain.step, chain.total, chain.stage
        ))
    );
    let complete = chain.is_complete();
    for s in &chain.steps {
        let state = match s.state {
            StepState::Failed => "blocked",
            StepState::NotApplicable => "na",
            _ if s.done => "done",
            _ if s.step == chain.step && !complete => "current",
            _ => "waiting",
        };
        let detail = s
            .detail
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let tip = format!("{}. {} ({}){detail}", s.step, s.name, s.state.as_str());
        let _ = write!(
            out,
            "<li class=\"step {state}\" title=\"{}\"><span>{}</span>",
            text(&tip),
            s.step
        );
        if names {
            let _ = write!(out, " {}", text(s.name));
            if let Some(d) = &s.detail {
                let _ = write!(out, "<small>{}</small>", text(d));
            }
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    out
}

/// The index's query: `?page=N` (from 1), `?q=` text in the unit, the cluster or the description,
/// `?phase=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Query {
    pub page: Option<usize>,
    pub q: Option<String>,
    pub phase: Option<String>,
}

impl Query {
    fn matches(&self, u: &UnitView) -> bool {
        let phase = self.phase.as_deref().filter(|p| !p.is_empty());
        if phase.is_some_and(|p| !p.eq_ignore_ascii_case(u.phase)) {
            return false;
        }
        let Some(q) = self.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) else {
            return true;
        };
        let q = q.to_lowercase();
        [Some(&u.unit), u.cluster.as_ref(), u.description.as_ref()]
            .into_iter()
            .flatten()
            .any(|s| s.to_lowercase().contains(&q))
    }

    /// The link to page `page` of the same query.
    fn href(&self, page: usize) -> String {
        let mut params = vec![format!("page={page}")];
        for (name, value) in [("q", &self.q), ("phase", &self.phase)] {
            if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
                params.push(format!("{name}={}", segment(v)));
            }
        }
        format!("/?{}", params.join("&"))
    }
}

/// One page of the units `query` selects, failed first (then blocked, progressing, converged; by
/// unit within a phase), the number selected, and the page shown (clamped).
pub fn select<'a>(snapshot: &'a Snapshot, query: &Query) -> (Vec<&'a UnitView>, usize, usize) {
    let mut found: Vec<&UnitView> = snapshot
        .units
        .values()
        .map(|u| &**u)
        .filter(|u| query.matches(u))
        .collect();
    let rank = |u: &UnitView| PHASES.iter().position(|p| *p == u.phase).unwrap_or(0);
    found.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.unit.cmp(&b.unit)));
    let total = found.len();
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let page = query.page.unwrap_or(1).clamp(1, pages);
    let shown = found
        .into_iter()
        .skip((page - 1) * PAGE_SIZE)
        .take(PAGE_SIZE)
        .collect();
    (shown, total, page)
}

/// The header every page shares.
pub fn header(snapshot: &Snapshot) -> String {
    let commit = snapshot
        .status_commit
        .as_deref()
        .map(|c| {
            format!(
                " <span class=\"muted\">reports at <code>{}</code></span>",
                text(&short(c))
            )
        })
        .unwrap_or_default();
    let leader = snapshot
        .leader
        .as_ref()
        .map(leader_banner)
        .unwrap_or_default();
    format!(
        "<h1><a href=\"/\">aro-gitops</a> status</h1><p class=\"muted\">read-only{commit}</p>{leader}"
    )
}

/// What a standby says above its page: whose report this is, from which commit and when.
fn leader_banner(leader: &super::feed::LeaderReport) -> String {
    let holder = match &leader.holder {
        Some(h) => format!("the leader <b class=\"holder\">{}</b>", text(h)),
        None => "the leader".to_string(),
    };
    let Some(commit) = &leader.commit else {
        return format!(
            "<p class=\"leader\">This instance stands by: {holder} has published no report on \
             the status branch yet. This instance applies nothing until it leads.</p>"
        );
    };
    format!(
        "<p class=\"leader\" data-leader-commit=\"{commit}\">This instance stands by: \
         this is {holder}'s report, read from the status branch at commit <code>{short}</code> \
         (committed <time datetime=\"{when}\">{when}</time>). This instance applies nothing \
         until it leads.</p>",
        commit = text(commit),
        short = text(&short(commit)),
        when = leader.time.map(rfc3339).unwrap_or_default(),
    )
}

/// The link to the page of the unit at path `unit` (each path segment encoded).
pub fn unit_href(unit: &str) -> String {
    let segments: Vec<String> = unit
        .split('/')
        .filter(|s| !s.is_empty())
        .map(segment)
        .collect();
    format!("/units/{}", segments.join("/"))
}

/// The index: counts by phase, the filter form, the units of the page.
pub fn index(snapshot: &Snapshot, query: &Query, now: i64) -> String {
    let (units, total, page) = select(snapshot, query);
    let mut main = String::with_capacity(4096 + units.len() * 2048);
    main.push_str(&super::rollout::index_line(snapshot.rollout.as_deref()));
    main.push_str("<nav class=\"phases\">");
    let _ = write!(
        main,
        "<a href=\"/\">All <b>{}</b></a>",
        snapshot.units.len()
    );
    for p in PHASES {
        let n = snapshot.units.values().filter(|u| u.phase == p).count();
        let _ = write!(
            main,
            "<a class=\"phase-{p}\" href=\"/?phase={p}\">{p} <b>{n}</b></a>"
        );
    }
    main.push_str("</nav>");
    let _ = write!(
        main,
        "<form method=\"get\" action=\"/\" class=\"filter\"><input type=\"search\" name=\"q\" \
         placeholder=\"unit, cluster or description\" value=\"{}\"><select name=\"phase\">\
         <option value=\"\">any phase</option>",
        text(query.q.as_deref().unwrap_or_default())
    );
    for p in PHASES {
        let selected = if query.phase.as_deref() == Some(p) {
            " selected"
        } else {
            ""
        };
        let _ = write!(main, "<option{selected}>{p}</option>");
    }
    main.push_str("</select><button>Filter</button></form>");
    if units.is_empty() {
        main.push_str("<p class=\"empty\">No unit to show.</p>");
    } else {
        main.push_str(
            "<table class=\"units\"><thead><tr><th>Cluster</th><th>Phase</th>\
             <th>Dependency chain</th><th>Revision</th><th>Drift</th><th>Conditions and errors</th>\
             </tr></thead><tbody>",
        );
        for u in &units {
            row(&mut main, u, now);
        }
        main.push_str("</tbody></table>");
    }
    pages(&mut main, query, total, page);
    main
}

/// The attributes naming `u` for the page's script and its tests (the contract): `data-unit`,
/// `data-cluster` when the cluster is known, and `data-phase`.
pub(super) fn identity_attributes(u: &UnitView) -> String {
    let cluster = u
        .cluster
        .as_deref()
        .map(|c| format!(" data-cluster=\"{}\"", text(c)))
        .unwrap_or_default();
    format!(
        "data-unit=\"{unit}\"{cluster} data-phase=\"{phase}\"",
        unit = text(&u.unit),
        phase = u.phase,
    )
}

fn row(out: &mut String, u: &UnitView, now: i64) {
    let _ = write!(
        out,
        "<tr class=\"unit phase-{phase}\" {attributes}><td>",
        phase = u.phase,
        attributes = identity_attributes(u),
    );
    match &u.cluster {
        Some(c) => {
            let _ = write!(
                out,
                "<a class=\"name\" href=\"{}\">{}</a>",
                text(&cluster_href(c)),
                text(c)
            );
        }
        None => {
            let _ = write!(
                out,
                "<a class=\"name muted\" href=\"{}\">no cluster known</a>",
                text(&unit_href(&u.unit))
            );
        }
    }
    if let Some(d) = &u.description {
        let _ = write!(out, "<div class=\"description\">{}</div>", text(d));
    }
    let _ = write!(
        out,
        "<div class=\"muted\">{}</div></td><td><span class=\"phase\">{}</span></td><td>{}</td>",
        text(&u.unit),
        u.phase,
        chain(&u.report.chain, false)
    );
    revision(out, u, now);
    let _ = write!(
        out,
        "<td>{}</td><td>",
        match u.drifted {
            0 => "none".to_string(),
            1 => "<b>1 object</b>".to_string(),
            n => format!("<b>{n} objects</b>"),
        }
    );
    errors(out, u);
    let mut not_true = 0;
    for o in &u.report.conditions {
        for c in o.conditions.iter().filter(|c| c.status != "True") {
            not_true += 1;
            if not_true <= 3 {
                let _ = write!(
                    out,
                    "<div class=\"condition\">{} {} {}</div>",
                    text(&c.type_),
                    text(&c.status),
                    text(c.reason.as_deref().unwrap_or_default())
                );
            }
        }
    }
    if not_true > 3 {
        let _ = write!(out, "<div class=\"muted\">and {} more</div>", not_true - 3);
    }
    out.push_str("</td></tr>");
}

/// The revision cell: the commit's short form and when it was first reported.
pub fn revision(out: &mut String, u: &UnitView, now: i64) {
    let r = &u.report.revision;
    let _ = write!(
        out,
        "<td><code title=\"{}\">{}</code> <time datetime=\"{}\">{}</time>",
        text(r),
        text(&short(r)),
        rfc3339(u.applied_at),
        ago(now, u.applied_at)
    );
    if let Some(s) = &u.report.stale_source {
        let _ = write!(out, "<div class=\"stale\">source stale: {}</div>", text(s));
    }
    out.push_str("</td>");
}

/// The unit's errors, as its report lists them.
pub fn errors(out: &mut String, u: &UnitView) {
    if u.report.errors.is_empty() {
        return;
    }
    out.push_str("<ul class=\"errors\">");
    for e in &u.report.errors {
        let mut line = String::new();
        if let Some(f) = &e.file {
            line.push_str(&crate::object::file_position(f, e.line, e.column));
            line.push_str(": ");
        }
        if let Some(o) = &e.object {
            line.push_str(o);
            line.push_str(": ");
        }
        line.push_str(&e.message);
        let _ = write!(out, "<li>{}</li>", text(&line));
    }
    out.push_str("</ul>");
}

fn pages(out: &mut String, query: &Query, total: usize, page: usize) {
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let _ = write!(
        out,
        "<nav class=\"pages\"><span>{total} units, page {page} of {pages}</span>"
    );
    if page > 1 {
        let _ = write!(
            out,
            " <a rel=\"prev\" href=\"{}\">previous</a>",
            text(&query.href(page - 1))
        );
    }
    if page < pages {
        let _ = write!(
            out,
            " <a rel=\"next\" href=\"{}\">next</a>",
            text(&query.href(page + 1))
        );
    }
    out.push_str("</nav>");
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
