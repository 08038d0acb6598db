//! Equal values written differently: Kubernetes quantities (`"1"` and `"1000m"`, `"1Gi"` and
//! `"1024Mi"`) and RFC 3339 timestamps (`Z`, `.000Z` and `+00:00`). The API server rewrites
//! quantities in canonical form, so a desired `"0.5"` comes back as `"500m"`; both sides must
//! be strings, and values of different types are never equal here.

use serde_json::Value;

/// The live value to show for a desired scalar: the desired spelling when both are strings
/// equal as quantities or as instants, else the live value as it is.
pub(super) fn adopt_spelling(live: &Value, desired: &Value) -> Value {
    if let (Value::String(l), Value::String(d)) = (live, desired)
        && l != d
        && (quantities_equal(l, d) || instants_equal(l, d))
    {
        return desired.clone();
    }
    live.clone()
}

/// Whether two strings are the same Kubernetes quantity. Two plain decimals that both have a
/// fraction (`"1.1"`, `"1.10"`) are not: the server never writes a quantity that way, and such
/// strings are far more often versions than quantities.
pub(super) fn quantities_equal(a: &str, b: &str) -> bool {
    match (Quantity::parse(a), Quantity::parse(b)) {
        (Some(x), Some(y)) => x.value == y.value && !(x.plain_fraction && y.plain_fraction),
        _ => false,
    }
}

/// Whether two strings are RFC 3339 timestamps of the same instant.
pub(super) fn instants_equal(a: &str, b: &str) -> bool {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// A parsed quantity.
struct Quantity {
    value: Exact,
    /// No suffix or exponent, and a fraction part (`"1.5"`).
    plain_fraction: bool,
}

/// A rational number as `±m · 2^e2 · 5^e5` with `m` coprime to 10, so that equal numbers have
/// equal representations; zero is `m = 0`, exponents 0.
#[derive(Debug, PartialEq, Eq)]
struct Exact {
    negative: bool,
    m: u128,
    e2: i64,
    e5: i64,
}

impl Quantity {
    /// `[+-]digits[.digits][suffix]`, suffix one of `n u m k M G T P E Ki Mi Gi Ti Pi Ei` or a
    /// decimal exponent `e3`/`E-2`. An integer part with leading zeros (`"007"`) is refused.
    fn parse(s: &str) -> Option<Quantity> {
        let (negative, rest) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let number_len = rest
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        let (number, suffix) = rest.split_at(number_len);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        if frac.contains('.')
            || int.len() + frac.len() == 0
            || int.len() > 1 && int.starts_with('0')
        {
            return None;
        }
        let (mut e10, e2) = match suffix {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            _ => {
                let exp = suffix.strip_prefix(['e', 'E'])?;
                let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
                if digits.is_empty()
                    || digits.len() > 6
                    || !digits.bytes().all(|c| c.is_ascii_digit())
                {
                    return None;
                }
                (exp.parse::<i64>().ok()?, 0)
            }
        };
        let digits = format!("{int}{frac}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 38 {
            return None;
        }
        let mut m: u128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        e10 -= frac.len() as i64;
        let value = if m == 0 {
            Exact {
                negative: false,
                m: 0,
                e2: 0,
                e5: 0,
            }
        } else {
            let (mut e2, mut e5) = (e2 + e10, e10);
            while m.is_multiple_of(2) {
                m /= 2;
                e2 += 1;
            }
            while m.is_multiple_of(5) {
                m /= 5;
                e5 += 1;
            }
            Exact {
                negative,
                m,
                e2,
                e5,
            }
        };
        Some(Quantity {
            value,
            plain_fraction: suffix.is_empty() && !frac.is_empty(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        for (a, b) in [
            ("1", "1000m"),
            ("1Gi", "1024Mi"),
            ("0.5", "500m"),
            ("500m", "0.5"),
            ("1.5Gi", "1536Mi"),
            ("1k", "1000"),
            ("1e3", "1k"),
            ("1", "1.0"),
            ("0", "0m"),
            ("-0.25", "-250m"),
            ("+2", "2"),
            (".5", "500m"),
            ("100Mi", "104857600"),
            ("1n", "0.000000001"),
        ] {
            assert!(quantities_equal(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("1", "2"),
            ("1Gi", "1G"),
            ("1m", "1M"),
            ("1.1", "1.10"),
            ("4.1", "4.10"),
            ("007", "7"),
            ("1x", "1"),
            ("", "0"),
            ("-1", "1"),
            ("1..0", "1"),
            ("abc", "abc0"),
        ] {
            assert!(!quantities_equal(a, b), "{a} {b}");
        }
    }

    #[test]
    fn instants() {
        assert!(instants_equal(
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.000Z"
        ));
        assert!(instants_equal(
            "2026-01-01T00:00:00Z",
            "2026-01-01T01:00:00+01:00"
        ));
        assert!(instants_equal(
            "2026-01-01T00:00:00+00:00",
            "2026-01-01T00:00:00Z"
        ));
        assert!(!instants_equal(
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.5Z"
        ));
        assert!(!instants_equal("2026-01-01", "2026-01-01"));
    }

    #[test]
    fn live_takes_the_desired_spelling_only_when_equal_strings() {
        assert_eq!(adopt_spelling(&json!("1000m"), &json!("1")), json!("1"));
        assert_eq!(
            adopt_spelling(
                &json!("2026-01-01T00:00:00Z"),
                &json!("2026-01-01T00:00:00.000Z")
            ),
            json!("2026-01-01T00:00:00.000Z")
        );
        assert_eq!(adopt_spelling(&json!(1), &json!("1")), json!(1));
        assert_eq!(adopt_spelling(&json!("1"), &json!(1)), json!("1"));
        assert_eq!(adopt_spelling(&json!("2"), &json!("1")), json!("2"));
    }
}
