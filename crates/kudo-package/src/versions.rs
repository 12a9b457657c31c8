//! Lenient semantic versions as KUDO's Go semver library reads them (`v` prefix and
//! missing minor/patch allowed).

use std::cmp::Ordering;

pub fn parse_lenient(text: &str) -> Option<semver::Version> {
    let t = text.trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    if let Ok(v) = semver::Version::parse(t) {
        return Some(v);
    }
    // "1" / "1.2" with optional pre-release/build suffix.
    let split = t.find(['-', '+']).unwrap_or(t.len());
    let (core, rest) = t.split_at(split);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 2 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut padded = parts.join(".");
    for _ in parts.len()..3 {
        padded.push_str(".0");
    }
    semver::Version::parse(&format!("{padded}{rest}")).ok()
}

/// Descending by version; unparsable versions last (among themselves by text, descending).
pub fn cmp_desc(a: &str, b: &str) -> Ordering {
    match (parse_lenient(a), parse_lenient(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient() {
        assert_eq!(
            parse_lenient("5.7").map(|v| v.to_string()).as_deref(),
            Some("5.7.0")
        );
        assert_eq!(
            parse_lenient("v1").map(|v| v.to_string()).as_deref(),
            Some("1.0.0")
        );
        assert!(parse_lenient("1.2.3.4").is_none());
        assert!(parse_lenient("latest").is_none());
        assert_eq!(cmp_desc("1.10.0", "1.9.0"), Ordering::Less);
        assert_eq!(cmp_desc("junk", "0.1.0"), Ordering::Greater);
    }
}
