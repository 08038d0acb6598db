//! Where a field of an object is written: the line and column of a JSON pointer in the document of
//! a YAML file it came from, so an error about the field can name `file:line:column`.
//!
//! A plain reading of block-style YAML (the style of Kubernetes manifests): mapping keys by their
//! indentation, list items by their dashes. Anything it cannot follow (flow style, anchors, a field
//! a patch added) gives no position rather than a wrong one.

use super::documents::split;

/// One line of a document: 1-based number, the column its content starts at (0-based), and the
/// content.
#[derive(Clone, Copy)]
struct Line<'a> {
    number: usize,
    indent: usize,
    text: &'a str,
}

/// The 1-based line and column of the field `pointer` (a JSON pointer: `/spec/clientSecret`) in
/// document `document` (0-based, counted as the renderer counts them) of `text`.
pub fn field_position(text: &str, document: usize, pointer: &str) -> Option<(usize, usize)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let chunk = split(text)
        .into_iter()
        .filter(|c| c.explicit || c.content_line.is_some())
        .nth(document)?;
    let lines: Vec<Line<'_>> = text[chunk.start..chunk.end]
        .lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let content = raw.trim_start();
            let blank = content.is_empty() || content.starts_with('#');
            (!blank && !content.starts_with("---") && !content.starts_with('%')).then(|| Line {
                number: chunk.first_line + i,
                indent: raw.len() - content.len(),
                text: content.trim_end(),
            })
        })
        .collect();
    let mut scope: Vec<Line<'_>> = lines;
    let mut found: Option<Line<'_>> = None;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let (at, inner) = match token.parse::<usize>() {
            Ok(index) => item(&scope, index)?,
            Err(_) => key(&scope, &token)?,
        };
        found = Some(at);
        scope = inner;
    }
    found.map(|l| (l.number, l.indent + 1))
}

/// The lines of a block whose first line sets the block's indentation.
fn block_indent(scope: &[Line<'_>]) -> Option<usize> {
    scope.first().map(|l| l.indent)
}

/// The entry `name:` of the mapping `scope`, and the lines of its value.
fn key<'a>(scope: &[Line<'a>], name: &str) -> Option<(Line<'a>, Vec<Line<'a>>)> {
    let indent = block_indent(scope)?;
    let i = scope.iter().position(|l| {
        l.indent == indent && {
            let t = l.text;
            [
                format!("{name}:"),
                format!("\"{name}\":"),
                format!("'{name}':"),
            ]
            .iter()
            .any(|k| t == k || t.starts_with(&format!("{k} ")))
        }
    })?;
    let at = scope[i];
    let inner = scope[i + 1..]
        .iter()
        .take_while(|l| l.indent > indent || (l.indent == indent && l.text.starts_with("- ")))
        .copied()
        .collect();
    Some((at, inner))
}

/// Item `index` of the list `scope`, and its lines (the dash line's content as the first line,
/// at the column after the dash).
fn item<'a>(scope: &[Line<'a>], index: usize) -> Option<(Line<'a>, Vec<Line<'a>>)> {
    let indent = block_indent(scope)?;
    let dashes: Vec<usize> = scope
        .iter()
        .enumerate()
        .filter(|(_, l)| l.indent == indent && (l.text.starts_with("- ") || l.text == "-"))
        .map(|(i, _)| i)
        .collect();
    let start = *dashes.get(index)?;
    let end = dashes.get(index + 1).copied().unwrap_or(scope.len());
    let dash = scope[start];
    let rest = dash.text[1..].trim_start();
    let mut inner = Vec::new();
    if !rest.is_empty() {
        inner.push(Line {
            number: dash.number,
            indent: dash.indent + (dash.text.len() - rest.len()),
            text: rest,
        });
    }
    inner.extend(scope[start + 1..end].iter().copied());
    Some((dash, inner))
}

#[cfg(test)]
mod tests {
    use super::field_position;

    const TEXT: &str = "\
# a comment
apiVersion: v1
kind: Thing
metadata:
  name: a
spec:
  list:
    - name: first
      value: 1
    - name: second
      nested:
        deep: true
  \"quoted\": x
---
kind: Other
spec:
  clientSecret: s
";

    #[test]
    fn fields_are_found_by_key_and_index() {
        assert_eq!(field_position(TEXT, 0, "/kind"), Some((3, 1)));
        assert_eq!(field_position(TEXT, 0, "/metadata/name"), Some((5, 3)));
        assert_eq!(field_position(TEXT, 0, "/spec/list/1"), Some((10, 5)));
        assert_eq!(field_position(TEXT, 0, "/spec/list/0/value"), Some((9, 7)));
        assert_eq!(field_position(TEXT, 0, "/spec/list/1/name"), Some((10, 7)));
        assert_eq!(
            field_position(TEXT, 0, "/spec/list/1/nested/deep"),
            Some((12, 9))
        );
        assert_eq!(field_position(TEXT, 0, "/spec/quoted"), Some((13, 3)));
        assert_eq!(field_position(TEXT, 1, "/spec/clientSecret"), Some((17, 3)));
    }

    #[test]
    fn what_is_not_written_has_no_position() {
        assert_eq!(field_position(TEXT, 0, "/spec/missing"), None);
        assert_eq!(field_position(TEXT, 0, "/spec/list/5"), None);
        assert_eq!(field_position(TEXT, 2, "/kind"), None);
        assert_eq!(
            field_position(TEXT, 0, "/name"),
            None,
            "not at the top level"
        );
        assert_eq!(field_position("a: {b: 1}\n", 0, "/a/b"), None);
    }
}
