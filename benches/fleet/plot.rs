//! The fleet curve as an SVG written by hand (no plotting dependency): two panels, clusters
//! against wall time and against peak RSS, one line per series, the issue's targets as diamonds.

use super::{Row, Series, TARGET_MB_1000, TARGET_RSS_RATIO, TARGET_SECS_1000, TARGET_TIME_RATIO};
use std::fmt::Write;

const PANEL_W: f64 = 440.0;
const PANEL_H: f64 = 300.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 70.0;
const GAP: f64 = 90.0;
const BOTTOM: f64 = 56.0;

/// A line of points, how it is drawn, and its name in the legend.
struct Line {
    name: &'static str,
    color: &'static str,
    dashed: bool,
    /// (clusters, value, all Converged)
    points: Vec<(f64, f64, bool)>,
}

fn line(
    rows: &[Row],
    series: Series,
    name: &'static str,
    color: &'static str,
    dashed: bool,
    value: impl Fn(&Row) -> Option<f64>,
) -> Line {
    let mut points: Vec<(f64, f64, bool)> = rows
        .iter()
        .filter(|r| r.series == series)
        .filter_map(|r| value(r).map(|v| (r.clusters as f64, v, r.all_converged())))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Line {
        name,
        color,
        dashed,
        points,
    }
}

/// A round step that splits `0..max` into about five parts.
fn nice_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One panel at horizontal offset `x0`.
fn panel(
    out: &mut String,
    x0: f64,
    title: &str,
    unit: &str,
    lines: &[Line],
    targets: &[(f64, f64)],
) {
    let max_x = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(100.0, f64::max);
    let max_y = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(targets.iter().map(|t| t.1))
        .fold(1.0, f64::max);
    let (xs, ys) = (nice_step(max_x), nice_step(max_y));
    let (x_end, y_end) = ((max_x / xs).ceil() * xs, (max_y / ys).ceil() * ys);
    let px = |x: f64| x0 + x / x_end * PANEL_W;
    let py = |y: f64| TOP + PANEL_H - y / y_end * PANEL_H;
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
        x0,
        TOP - 12.0,
        esc(title)
    );
    let mut y = 0.0;
    while y <= y_end + ys / 2.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{x0:.1}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" font-size="11" text-anchor="end">{4}</text>"##,
            py(y),
            x0 + PANEL_W,
            x0 - 6.0,
            py(y) + 4.0,
            y
        );
        y += ys;
    }
    let mut x = 0.0;
    while x <= x_end + xs / 2.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#eee"/><text x="{0:.1}" y="{3:.1}" font-size="11" text-anchor="middle">{4}</text>"##,
            px(x),
            TOP,
            TOP + PANEL_H,
            TOP + PANEL_H + 16.0,
            x
        );
        x += xs;
    }
    let _ = writeln!(
        out,
        r##"<rect x="{x0:.1}" y="{TOP:.1}" width="{PANEL_W:.1}" height="{PANEL_H:.1}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">clusters</text>"#,
        x0 + PANEL_W / 2.0,
        TOP + PANEL_H + 36.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate({:.1},{:.1}) rotate(-90)" font-size="12" text-anchor="middle">{}</text>"#,
        x0 - 46.0,
        TOP + PANEL_H / 2.0,
        esc(unit)
    );
    for l in lines {
        if l.points.len() > 1 {
            let path: Vec<String> = l
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>"#,
                path.join(" "),
                l.color,
                if l.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                }
            );
        }
        for &(cx, cy, converged) in &l.points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" stroke="{}" stroke-width="2" fill="{}"><title>{}: {} clusters, {:.1} {}</title></circle>"#,
                px(cx),
                py(cy),
                l.color,
                if converged { l.color } else { "white" },
                esc(l.name),
                cx,
                cy,
                esc(unit)
            );
        }
    }
    for &(tx, ty) in targets {
        let (cx, cy) = (px(tx), py(ty));
        let _ = writeln!(
            out,
            r##"<path d="M{:.1},{:.1} l6,6 l-6,6 l-6,-6 z" fill="none" stroke="#e67e00" stroke-width="2"><title>target at {} clusters: {:.0} {}</title></path>"##,
            cx,
            cy - 6.0,
            tx,
            ty,
            esc(unit)
        );
    }
}

fn legend_width(l: &Line) -> f64 {
    40.0 + 6.4 * l.name.len() as f64
}

/// Where the legend's rows start (indexes into `legend`), each fitting in `width`; the target's
/// entry follows the last.
fn legend_rows(legend: &[&Line], width: f64) -> Vec<usize> {
    let mut starts = vec![0];
    let mut x = LEFT;
    for (k, l) in legend.iter().enumerate() {
        if x + legend_width(l) > width - 20.0 && k > 0 {
            starts.push(k);
            x = LEFT;
        }
        x += legend_width(l);
    }
    starts
}

/// The whole figure.
pub fn svg(rows: &[Row]) -> String {
    let time = [
        line(rows, Series::Before, "before", "#d62728", false, |r| {
            Some(r.wall_s)
        }),
        line(
            rows,
            Series::After,
            "after (embedded)",
            "#1f77b4",
            false,
            |r| Some(r.wall_s),
        ),
        line(
            rows,
            Series::Separate,
            "after, served control plane",
            "#2ca02c",
            true,
            |r| Some(r.wall_s),
        ),
        line(
            rows,
            Series::RealBefore,
            "before, real server",
            "#bcbd22",
            false,
            |r| Some(r.wall_s),
        ),
        line(
            rows,
            Series::Real,
            "after, kube-apiserver + etcd",
            "#8c564b",
            false,
            |r| Some(r.wall_s),
        ),
    ];
    let memory = [
        line(rows, Series::Before, "before", "#d62728", false, |r| {
            r.rss_mb
        }),
        line(
            rows,
            Series::After,
            "after (embedded)",
            "#1f77b4",
            false,
            |r| r.rss_mb,
        ),
        line(
            rows,
            Series::Separate,
            "after, served: agent",
            "#2ca02c",
            true,
            |r| r.rss_mb,
        ),
        line(
            rows,
            Series::Separate,
            "after, served: server",
            "#9467bd",
            true,
            |r| r.server_rss_mb,
        ),
        line(
            rows,
            Series::RealBefore,
            "before, real server: agent",
            "#bcbd22",
            false,
            |r| r.rss_mb,
        ),
        line(
            rows,
            Series::Real,
            "real server: agent",
            "#8c564b",
            false,
            |r| r.rss_mb,
        ),
        line(
            rows,
            Series::Real,
            "real server: kube-apiserver",
            "#e377c2",
            true,
            |r| r.server_rss_mb,
        ),
        line(
            rows,
            Series::Real,
            "real server: etcd",
            "#7f7f7f",
            true,
            |r| r.etcd_rss_mb,
        ),
    ];
    let after_1000 = rows
        .iter()
        .find(|r| r.series == Series::After && r.clusters == 1000);
    let mut time_targets = vec![(1000.0, TARGET_SECS_1000)];
    let mut memory_targets = vec![(1000.0, TARGET_MB_1000)];
    if let Some(k) = after_1000.filter(|_| {
        rows.iter()
            .any(|r| r.series == Series::After && r.clusters == 2000)
    }) {
        time_targets.push((2000.0, k.wall_s * TARGET_TIME_RATIO));
        if let Some(m) = k.rss_mb {
            memory_targets.push((2000.0, m * TARGET_RSS_RATIO));
        }
    }
    let width = LEFT + 2.0 * PANEL_W + GAP + 20.0;
    // The legend's entries: the memory panel's lines, and the time panel's that it lacks.
    let legend: Vec<&Line> = memory
        .iter()
        .chain(
            time.iter()
                .filter(|t| !memory.iter().any(|m| m.name == t.name)),
        )
        .filter(|l| !l.points.is_empty())
        .collect();
    let legend_rows = legend_rows(&legend, width);
    let height = TOP + PANEL_H + BOTTOM + 24.0 * (legend_rows.len() + 1) as f64 + 16.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="22" font-size="15" font-weight="bold">aro-gitops run --once --sim-delay 0s, empty control plane to all Converged (Azure SIMULATED)</text>"#
    );
    panel(&mut out, LEFT, "Wall time", "seconds", &time, &time_targets);
    panel(
        &mut out,
        LEFT + PANEL_W + GAP,
        "Peak RSS",
        "MB",
        &memory,
        &memory_targets,
    );
    // Legend, in rows under the panels.
    let (mut lx, mut ly) = (LEFT, TOP + PANEL_H + BOTTOM + 16.0);
    for (k, l) in legend.iter().enumerate() {
        if k > 0 && legend_rows.contains(&k) {
            (lx, ly) = (LEFT, ly + 24.0);
        }
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="2"{}/><text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
            lx + 22.0,
            l.color,
            if l.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            },
            lx + 28.0,
            ly + 4.0,
            esc(l.name)
        );
        lx += legend_width(l);
    }
    if lx + 420.0 > width {
        (lx, ly) = (LEFT, ly + 24.0);
    }
    let _ = writeln!(
        out,
        r##"<path d="M{:.1},{:.1} l6,6 l-6,6 l-6,-6 z" fill="none" stroke="#e67e00" stroke-width="2"/><text x="{:.1}" y="{:.1}" font-size="12">target; hollow point: not all Converged (a lower bound)</text>"##,
        lx + 6.0,
        ly - 6.0,
        lx + 18.0,
        ly + 4.0
    );
    out.push_str("</svg>\n");
    out
}
