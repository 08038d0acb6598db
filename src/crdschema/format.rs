//! The string `format`s kube-apiserver checks in CRD schemas (kube-openapi's registry). Formats
//! of numbers (`int32`, `int64`, `float`, `double`) and unknown formats are not checked, as there.

use base64::Engine;
use regex::Regex;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a literal pattern compiles")
}

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?([0-9a-f])[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static MAC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        "^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\\.){2}[0-9A-Fa-f]{4}$",
    )
});
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$",
        r"|^\d+\s*(ns|us|µs|μs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)$",
        r"|^0$"
    ))
});
static HEXCOLOR: LazyLock<Regex> = LazyLock::new(|| re("^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static OBJECT_ID: LazyLock<Regex> = LazyLock::new(|| re("^[0-9a-fA-F]{24}$"));
static HOST_LABEL: LazyLock<Regex> =
    LazyLock::new(|| re("^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"));

/// Whether `s` is valid for `format`.
pub(super) fn valid(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "uuid" => UUID.is_match(s),
        "uuid3" | "uuid4" | "uuid5" => UUID
            .captures(s)
            .and_then(|c| c.get(1))
            .is_some_and(|v| v.as_str() == &format[4..]),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => cidr(s),
        "mac" => MAC.is_match(s),
        "hostname" => hostname(s),
        "email" => email(s),
        "uri" => s.starts_with('/') || url::Url::parse(s).is_ok(),
        "duration" => DURATION.is_match(s.trim()),
        "hexcolor" => HEXCOLOR.is_match(s),
        "bsonobjectid" => OBJECT_ID.is_match(s),
        _ => true,
    }
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.parse::<Ipv4Addr>().is_ok() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

fn hostname(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty() && s.len() <= 255 && s.split('.').all(|l| HOST_LABEL.is_match(l))
}

fn email(s: &str) -> bool {
    match s.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !local.contains(char::is_whitespace) && hostname(domain)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn formats_accept_and_refuse_like_kube_openapi() {
        let cases: &[(&str, &str, bool)] = &[
            ("date-time", "2024-05-01T10:00:00Z", true),
            ("date-time", "2024-05-01T10:00:00.123+02:00", true),
            ("date-time", "yesterday", false),
            ("date-time", "2024-05-01", false),
            ("date", "2024-05-01", true),
            ("date", "2024-13-01", false),
            ("uuid", "00000000-0000-4000-8000-000000000000", true),
            ("uuid", "not-a-uuid", false),
            ("uuid4", "00000000-0000-4000-8000-000000000000", true),
            ("uuid5", "00000000-0000-4000-8000-000000000000", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fd00::1", true),
            ("cidr", "10.0.0.0/16", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "fd00::/64", true),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "00:1a:2b", false),
            ("hostname", "api.example.com", true),
            ("hostname", "-bad-.example.com", false),
            ("email", "a@example.com", true),
            ("email", "nobody", false),
            ("uri", "https://example.com/x", true),
            ("uri", "not a uri", false),
            ("duration", "1h30m", true),
            ("duration", "5 days", true),
            ("duration", "soon", false),
            ("int32", "anything", true),
            ("int64", "x", true),
            ("password", "x", true),
            ("no-such-format", "x", true),
        ];
        for (format, value, ok) in cases {
            assert_eq!(valid(format, value), *ok, "{format} {value:?}");
        }
    }
}
