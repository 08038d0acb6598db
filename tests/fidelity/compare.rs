//! Comparing two runs of one sequence: the first step whose normalised answers differ, and a
//! compact diff of it (the JSON paths that differ, values cut short).

use serde_json::Value;

/// Where two runs first differ: the step (1-based) and the lines of its diff.
#[derive(Debug, Clone)]
pub struct Difference {
    pub step: usize,
    /// Every differing step (1-based), the first included.
    pub steps: Vec<usize>,
    pub lines: Vec<String>,
}

/// Lines of a diff shown per difference.
const MAX_LINES: usize = 8;
/// Characters of a value shown in a diff line.
const MAX_VALUE: usize = 160;

/// How many steps of `b` equal `a`'s, and the first difference if any.
pub fn compare(a: &[Value], b: &[Value]) -> (usize, Option<Difference>) {
    let mut same = 0;
    let mut first = None;
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (
            a.get(i).unwrap_or(&Value::Null),
            b.get(i).unwrap_or(&Value::Null),
        );
        if x == y {
            same += 1;
        } else if let Some(d) = first.as_mut() {
            let d: &mut Difference = d;
            d.steps.push(i + 1);
        } else {
            let lines = step_diff(x, y);
            first = Some(Difference {
                step: i + 1,
                steps: vec![i + 1],
                lines,
            });
        }
    }
    (same, first)
}

/// The compact diff of one step's two answers (at most [`MAX_LINES`] lines and a count).
pub fn step_diff(a: &Value, b: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    diff(a, b, "", &mut lines);
    if lines.len() > MAX_LINES {
        let more = lines.len() - MAX_LINES;
        lines.truncate(MAX_LINES);
        lines.push(format!("... and {more} more"));
    }
    lines
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > MAX_VALUE {
        format!("{}...", s.chars().take(MAX_VALUE).collect::<String>())
    } else {
        s
    }
}

fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let p = format!("{path}.{k}");
                match y.get(k) {
                    Some(w) => diff(v, w, &p, out),
                    None => out.push(format!("{p}: kube {} | local (absent)", short(v))),
                }
            }
            for (k, w) in y {
                if !x.contains_key(k) {
                    out.push(format!("{path}.{k}: kube (absent) | local {}", short(w)));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!(
            "{}: kube {} | local {}",
            if path.is_empty() { "." } else { path },
            short(a),
            short(b)
        )),
        _ => {}
    }
}
