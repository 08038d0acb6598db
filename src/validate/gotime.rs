//! Go's `time.Parse` as kube-apiserver's decoder meets a timestamp it cannot read: a
//! `metav1.Time` (`RFC3339`) or `metav1.MicroTime` (six fraction digits), and the error Go gives
//! (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`, `... month
//! out of range`, `... extra text: "..."`). Only these two layouts are known: each is a fixed
//! list of elements, read in turn as Go's parser reads them.

/// The layouts of kube's two timestamp types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `metav1.Time`: `2006-01-02T15:04:05Z07:00`.
    Rfc3339,
    /// `metav1.MicroTime`: `2006-01-02T15:04:05.000000Z07:00`.
    Rfc3339Micro,
}

impl Layout {
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Rfc3339 => "2006-01-02T15:04:05Z07:00",
            Layout::Rfc3339Micro => "2006-01-02T15:04:05.000000Z07:00",
        }
    }

    /// The layout's elements: the literal text before each, and the element.
    fn elements(self) -> &'static [(&'static str, Element)] {
        use Element::*;
        match self {
            Layout::Rfc3339 => &[
                ("", Year),
                ("-", Month),
                ("-", Day),
                ("T", Hour),
                (":", Minute),
                (":", Second),
                ("", Zone),
            ],
            Layout::Rfc3339Micro => &[
                ("", Year),
                ("-", Month),
                ("-", Day),
                ("T", Hour),
                (":", Minute),
                (":", Second),
                ("", Micros),
                ("", Zone),
            ],
        }
    }
}

/// One element of a layout, as Go names it in the error (`2006`, `01`, `.000000`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Micros,
    Zone,
}

impl Element {
    fn layout_text(self) -> &'static str {
        match self {
            Element::Year => "2006",
            Element::Month => "01",
            Element::Day => "02",
            Element::Hour => "15",
            Element::Minute => "04",
            Element::Second => "05",
            Element::Micros => ".000000",
            Element::Zone => "Z07:00",
        }
    }
}

/// Why an element did not parse.
enum Failure {
    /// `cannot parse "<rest>" as "<element>"`.
    Bad,
    /// `<what> out of range`.
    Range(&'static str),
}

/// One or two digits (`fixed`: exactly two), and what follows.
fn two_digits(s: &[u8], fixed: bool) -> Option<(u32, &[u8])> {
    let digit = |i: usize| {
        s.get(i)
            .filter(|c| c.is_ascii_digit())
            .map(|c| u32::from(c - b'0'))
    };
    let first = digit(0)?;
    match digit(1) {
        Some(second) => Some((first * 10 + second, &s[2..])),
        None if fixed => None,
        None => Some((first, &s[1..])),
    }
}

/// The parsed date, to check the day against its month.
#[derive(Default)]
struct Date {
    year: i64,
    month: u32,
    day: u32,
}

/// Reads one element from `value`; the rest of it, or why not.
fn element<'a>(e: Element, value: &'a [u8], date: &mut Date) -> Result<&'a [u8], Failure> {
    match e {
        Element::Year => {
            let digits = value.get(..4).ok_or(Failure::Bad)?;
            if !digits.iter().all(u8::is_ascii_digit) {
                return Err(Failure::Bad);
            }
            date.year = digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'));
            Ok(&value[4..])
        }
        Element::Month => {
            let (m, rest) = two_digits(value, true).ok_or(Failure::Bad)?;
            if !(1..=12).contains(&m) {
                return Err(Failure::Range("month"));
            }
            date.month = m;
            Ok(rest)
        }
        Element::Day => {
            let (d, rest) = two_digits(value, true).ok_or(Failure::Bad)?;
            date.day = d;
            Ok(rest)
        }
        Element::Hour => match two_digits(value, false) {
            Some((h, _)) if h >= 24 => Err(Failure::Range("hour")),
            Some((_, rest)) => Ok(rest),
            None => Err(Failure::Bad),
        },
        Element::Minute => match two_digits(value, true) {
            Some((m, _)) if m >= 60 => Err(Failure::Range("minute")),
            Some((_, rest)) => Ok(rest),
            None => Err(Failure::Bad),
        },
        Element::Second => {
            let (s, rest) = two_digits(value, true).ok_or(Failure::Bad)?;
            if s >= 60 {
                return Err(Failure::Range("second"));
            }
            Ok(rest)
        }
        Element::Micros => {
            // Exactly six digits after the point; Go's atoi takes a sign before them too.
            const LEN: usize = 7;
            let Some(frac) = value.get(..LEN).filter(|f| matches!(f[0], b'.' | b',')) else {
                return Err(Failure::Bad);
            };
            let (negative, digits) = match frac[1] {
                b'-' => (true, &frac[2..]),
                b'+' => (false, &frac[2..]),
                _ => (false, &frac[1..]),
            };
            if !digits.iter().all(u8::is_ascii_digit) {
                return Err(Failure::Bad);
            }
            if negative && digits.iter().any(|d| *d != b'0') {
                return Err(Failure::Range("fractional second"));
            }
            Ok(&value[LEN..])
        }
        Element::Zone => zone(value),
    }
}

/// `Z`, or `±hh:mm`. Go reads both numbers before it looks at the sign, and words a range
/// first: the minutes', then the hours'.
fn zone(value: &[u8]) -> Result<&[u8], Failure> {
    if value.first() == Some(&b'Z') {
        return Ok(&value[1..]);
    }
    if value.len() < 6 || value[3] != b':' {
        return Err(Failure::Bad);
    }
    let hours = two_digits(&value[1..3], true);
    let minutes = hours.and_then(|_| two_digits(&value[4..6], true));
    let (h, m) = (hours.map_or(0, |x| x.0), minutes.map_or(0, |x| x.0));
    // Offsets of 24 hours or 60 minutes pass, as in Go.
    if m > 60 {
        return Err(Failure::Range("time zone offset minute"));
    }
    if h > 24 {
        return Err(Failure::Range("time zone offset hour"));
    }
    if minutes.is_none() || !matches!(value[0], b'+' | b'-') {
        return Err(Failure::Bad);
    }
    Ok(&value[6..])
}

/// After the seconds of a layout without a fraction, Go takes one from the value anyway.
fn optional_fraction(value: &[u8]) -> &[u8] {
    if value.len() >= 2 && matches!(value[0], b'.' | b',') && value[1].is_ascii_digit() {
        let n = 1 + value[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        return &value[n..];
    }
    value
}

fn days_in(month: u32, year: i64) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's error for `value` under `layout`, or `None` when it parses.
pub fn parse_error(layout: Layout, value: &str) -> Option<String> {
    let whole = value;
    let mut value = value.as_bytes();
    let mut date = Date {
        month: 1,
        day: 1,
        ..Date::default()
    };
    let cannot = |value_elem: &[u8], layout_elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(whole),
            quote(layout.as_str()),
            quote(&String::from_utf8_lossy(value_elem)),
            quote(layout_elem)
        )
    };
    for (prefix, e) in layout.elements() {
        match value.strip_prefix(prefix.as_bytes()) {
            Some(rest) => value = rest,
            None => {
                // Go reports the value from the first byte that differs from the prefix.
                let same = prefix
                    .bytes()
                    .zip(value)
                    .take_while(|(p, v)| p == *v)
                    .count();
                return Some(cannot(&value[same..], prefix));
            }
        }
        match element(*e, value, &mut date) {
            Ok(rest) => value = rest,
            Err(Failure::Bad) => return Some(cannot(value, e.layout_text())),
            Err(Failure::Range(what)) => {
                return Some(format!(
                    "parsing time {}: {what} out of range",
                    quote(whole)
                ));
            }
        }
        if *e == Element::Second && layout == Layout::Rfc3339 {
            value = optional_fraction(value);
        }
    }
    if !value.is_empty() {
        let rest = quote(&String::from_utf8_lossy(value));
        return Some(format!("parsing time {}: extra text: {rest}", quote(whole)));
    }
    if date.day < 1 || date.day > days_in(date.month, date.year) {
        return Some(format!("parsing time {}: day out of range", quote(whole)));
    }
    None
}

/// Go's `time` package quoting: `"` and `\` escaped, any byte of a character outside printable
/// ASCII as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MICRO: &str = "\"2006-01-02T15:04:05.000000Z07:00\"";

    fn micro(v: &str) -> Option<String> {
        parse_error(Layout::Rfc3339Micro, v)
    }

    #[test]
    fn valid_times_parse() {
        assert_eq!(micro("2024-01-01T00:00:00.000000Z"), None);
        assert_eq!(micro("2024-01-01T00:00:00.000000+01:00"), None);
        assert_eq!(micro("2024-02-29T23:59:59.123456-05:30"), None);
        assert_eq!(parse_error(Layout::Rfc3339, "2024-01-01T00:00:00Z"), None);
        assert_eq!(parse_error(Layout::Rfc3339, "2024-01-01T00:00:00.5Z"), None);
        assert_eq!(parse_error(Layout::Rfc3339, "2024-01-01T7:00:00Z"), None);
    }

    #[test]
    fn an_element_that_does_not_parse_is_named_with_the_rest_of_the_value() {
        assert_eq!(
            micro("yesterday").unwrap(),
            format!(
                "parsing time \"yesterday\" as {MICRO}: cannot parse \"yesterday\" as \"2006\""
            )
        );
        assert_eq!(
            micro("").unwrap(),
            format!("parsing time \"\" as {MICRO}: cannot parse \"\" as \"2006\"")
        );
        assert_eq!(
            micro("2024-01-01").unwrap(),
            format!("parsing time \"2024-01-01\" as {MICRO}: cannot parse \"\" as \"T\"")
        );
        assert_eq!(
            micro("2024-01-01T00:00:00Z").unwrap(),
            format!(
                "parsing time \"2024-01-01T00:00:00Z\" as {MICRO}: cannot parse \"Z\" as \".000000\""
            )
        );
        assert_eq!(
            micro("2024-01-01T00:00:00.0Z").unwrap(),
            format!(
                "parsing time \"2024-01-01T00:00:00.0Z\" as {MICRO}: cannot parse \".0Z\" as \".000000\""
            )
        );
        assert_eq!(
            parse_error(Layout::Rfc3339, "x").unwrap(),
            "parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"x\" as \"2006\""
        );
    }

    #[test]
    fn ranges_and_extra_text_are_worded_without_the_layout() {
        assert_eq!(
            micro("2024-13-01T00:00:00.000000Z").unwrap(),
            "parsing time \"2024-13-01T00:00:00.000000Z\": month out of range"
        );
        assert_eq!(
            micro("2024-01-01T25:00:00.000000Z").unwrap(),
            "parsing time \"2024-01-01T25:00:00.000000Z\": hour out of range"
        );
        assert_eq!(
            micro("2024-01-01T00:00:00.000000Zjunk").unwrap(),
            "parsing time \"2024-01-01T00:00:00.000000Zjunk\": extra text: \"junk\""
        );
        assert_eq!(
            micro("2023-02-29T00:00:00.000000Z").unwrap(),
            "parsing time \"2023-02-29T00:00:00.000000Z\": day out of range"
        );
    }

    #[test]
    fn quoting_follows_go_time() {
        assert_eq!(quote("a\"b\\"), "\"a\\\"b\\\\\"");
        assert_eq!(quote("é\n"), "\"\\xc3\\xa9\\x0a\"");
    }
}
