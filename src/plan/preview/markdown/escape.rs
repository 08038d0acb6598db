//! Putting user data (names, messages, diffs) into Markdown and HTML so that it shows as written:
//! escaped text, code spans and fences that no backtick inside can close, and cutting text to a
//! length on a character boundary. Control characters are shown as `\u{..}` escapes.

/// Free text as Markdown: HTML and Markdown syntax escaped, line breaks kept as `<br>`.
pub(super) fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' => out.push_str("<br>"),
            '\r' => {}
            c if c.is_control() && c != '\t' => out.push_str(&c.escape_unicode().to_string()),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '$' | '#' => {
                out.push('\\');
                out.push(ch);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text in raw HTML (the `<summary>` line).
pub(super) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() && c != '\t' => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// An inline code span holding `s` literally, whatever backticks it contains.
pub(super) fn code(s: &str) -> String {
    if s.is_empty() {
        return "—".to_string();
    }
    let s: String = s
        .chars()
        .map(|c| match c {
            '\n' | '\r' => " ".to_string(),
            c if c.is_control() && c != '\t' => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect();
    let ticks = "`".repeat(longest_run(&s, '`') + 1);
    let pad = s.starts_with('`') || s.ends_with('`') || (s.starts_with(' ') && s.ends_with(' '));
    let sp = if pad { " " } else { "" };
    format!("{ticks}{sp}{s}{sp}{ticks}")
}

/// A code span in a table cell: pipes are escaped (GitHub unescapes them inside the span).
pub(super) fn cell_code(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// The longest run of `c` in `s`.
pub(super) fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in s.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

pub(super) use crate::output::clip;
