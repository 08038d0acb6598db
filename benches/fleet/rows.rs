//! The fleet bench's rows: which binary and control plane a run measured, its figures, how they
//! read from `run --once`'s output, and how they are written (Markdown, CSV).

use super::common::{self, mb};

/// Which binary and which control plane a row measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Series {
    /// `--before BIN`, embedded control plane.
    Before,
    /// This build, embedded control plane.
    After,
    /// This build, the control plane served by `control-plane serve` in its own process.
    Separate,
    /// `--before BIN` on a real kube-apiserver and etcd (`scripts/real-cluster`).
    RealBefore,
    /// This build on a real kube-apiserver and etcd, Azure played by `aro-gitops azure-simulator`.
    Real,
}

impl Series {
    pub fn name(self) -> &'static str {
        match self {
            Series::Before => "before",
            Series::After => "after",
            Series::Separate => "after-separate",
            Series::RealBefore => "before-real",
            Series::Real => "after-real",
        }
    }

    fn parse(s: &str) -> Option<Series> {
        [
            Series::Before,
            Series::After,
            Series::Separate,
            Series::RealBefore,
            Series::Real,
        ]
        .into_iter()
        .find(|x| x.name() == s)
    }

    pub fn is_real(self) -> bool {
        matches!(self, Series::Real | Series::RealBefore)
    }

    fn control_plane(self) -> &'static str {
        match self {
            Series::Before | Series::After => "embedded",
            Series::Separate => "served (own process)",
            Series::RealBefore | Series::Real => "kube-apiserver + etcd",
        }
    }
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct Row {
    pub series: Series,
    pub clusters: usize,
    pub wall_s: f64,
    pub cpu_s: Option<f64>,
    /// The agent's peak RSS (the embedded control plane included when it is embedded).
    pub rss_mb: Option<f64>,
    /// The served control plane's peak RSS (separate process), or kube-apiserver's (real server).
    pub server_rss_mb: Option<f64>,
    /// etcd's peak RSS (real server only).
    pub etcd_rss_mb: Option<f64>,
    /// `aro-gitops azure-simulator`'s peak RSS (real server only).
    pub sim_rss_mb: Option<f64>,
    pub reads: Option<u64>,
    pub writes: Option<u64>,
    pub code: Option<i32>,
    /// Units in the summary table, and how many of them are Converged.
    pub units: usize,
    pub converged: usize,
}

impl Row {
    /// A case that could not run (its server did not start): no figures.
    pub fn failed(series: Series, clusters: usize) -> Row {
        Row {
            series,
            clusters,
            wall_s: 0.0,
            cpu_s: None,
            rss_mb: None,
            server_rss_mb: None,
            etcd_rss_mb: None,
            sim_rss_mb: None,
            reads: None,
            writes: None,
            code: None,
            units: 0,
            converged: 0,
        }
    }

    pub fn all_converged(&self) -> bool {
        self.code == Some(0) && self.units == self.clusters && self.converged == self.units
    }

    pub const CSV_HEADER: &str = "series,clusters,wall_s,cpu_s,peak_rss_mb,server_peak_rss_mb,reads,writes,exit_code,units,converged,etcd_peak_rss_mb,simulator_peak_rss_mb";

    pub fn csv(&self) -> String {
        fn o<T: ToString>(v: Option<T>) -> String {
            v.map_or(String::new(), |v| v.to_string())
        }
        let m = |v: Option<f64>| o(v.map(|v| format!("{v:.0}")));
        format!(
            "{},{},{:.1},{},{},{},{},{},{},{},{},{},{}",
            self.series.name(),
            self.clusters,
            self.wall_s,
            o(self.cpu_s.map(|v| format!("{v:.1}"))),
            m(self.rss_mb),
            m(self.server_rss_mb),
            o(self.reads),
            o(self.writes),
            o(self.code),
            self.units,
            self.converged,
            m(self.etcd_rss_mb),
            m(self.sim_rss_mb),
        )
    }

    /// A row of the CSV (also of the 11 columns written before the real server's).
    pub fn from_csv(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 11 && f.len() != 13 {
            return None;
        }
        let extra = |i: usize| f.get(i).and_then(|v| v.parse().ok());
        Some(Row {
            series: Series::parse(f[0])?,
            clusters: f[1].parse().ok()?,
            wall_s: f[2].parse().ok()?,
            cpu_s: f[3].parse().ok(),
            rss_mb: f[4].parse().ok(),
            server_rss_mb: f[5].parse().ok(),
            etcd_rss_mb: extra(11),
            sim_rss_mb: extra(12),
            reads: f[6].parse().ok(),
            writes: f[7].parse().ok(),
            code: f[8].parse().ok(),
            units: f[9].parse().ok()?,
            converged: f[10].parse().ok()?,
        })
    }

    pub const MARKDOWN_HEADER: &str = "| binary | clusters | control plane | wall | agent CPU | agent peak RSS | server peak RSS | etcd peak RSS | simulator peak RSS | reads | writes | exit | Converged |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|";

    pub fn markdown(&self) -> String {
        let o = |v: Option<u64>| v.map_or("n/a".into(), |v| v.to_string());
        let real = |v: Option<f64>| {
            if self.series.is_real() {
                mb(v)
            } else {
                String::new()
            }
        };
        format!(
            "| {} | {} | {} | {:.1} s | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} {} |",
            self.series.name(),
            self.clusters,
            self.series.control_plane(),
            self.wall_s,
            self.cpu_s.map_or("n/a".into(), |c| format!("{c:.1} s")),
            mb(self.rss_mb),
            mb(self.server_rss_mb),
            real(self.etcd_rss_mb),
            real(self.sim_rss_mb),
            o(self.reads),
            o(self.writes),
            match self.code {
                Some(c) => c.to_string(),
                None if self.series.is_real() => "stopped at step 1".into(),
                None => "killed".into(),
            },
            self.converged,
            self.clusters,
            if self.all_converged() { "✓" } else { "✗" }
        )
    }
}

/// What `run --once` printed: the summary table's units and phases, and the requests line.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    pub units: usize,
    pub converged: usize,
    pub reads: Option<u64>,
    pub writes: Option<u64>,
}

pub fn summary(stdout: &str) -> Summary {
    let mut s = Summary::default();
    let mut phase_at = None;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("requests to the cluster: ") {
            let mut n = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|t| !t.is_empty());
            s.reads = n.next().and_then(|v| v.parse().ok());
            s.writes = n.next().and_then(|v| v.parse().ok());
            phase_at = None;
        } else if line.starts_with("UNIT ") && line.contains(" PHASE ") {
            phase_at = line.find(" PHASE ").map(|i| i + 1);
        } else if let Some(at) = phase_at {
            if line.trim().is_empty() {
                phase_at = None;
                continue;
            }
            s.units += 1;
            let phase = line.get(at..).and_then(|p| p.split_whitespace().next());
            if phase == Some("Converged") {
                s.converged += 1;
            }
        }
    }
    s
}

pub fn row(series: Series, clusters: usize, m: &common::Measured) -> Row {
    let s = summary(&m.stdout);
    Row {
        series,
        clusters,
        wall_s: m.wall.as_secs_f64(),
        cpu_s: m.cpu.map(|c| c.as_secs_f64()),
        rss_mb: m.peak_rss_mb,
        server_rss_mb: None,
        etcd_rss_mb: None,
        sim_rss_mb: None,
        reads: s.reads,
        writes: s.writes,
        code: m.code,
        units: s.units,
        converged: s.converged,
    }
}
