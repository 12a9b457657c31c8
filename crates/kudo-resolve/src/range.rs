//! Version ranges in blang/semver syntax (what KUDO's Go code would have used), parsed
//! onto `version_ranges::Ranges<semver::Version>`, plus the lenient versions KUDO
//! packages carry (`appVersion: 5.7`).
//!
//! Syntax (blang/semver v4 `ParseRange`): space = AND, `||` = OR (AND binds tighter, no
//! brackets); operators `>`, `>=`, `<`, `<=`, `=`, `==`, `!=`, `!`; a bare version means
//! exactly that version; a space between an operator and its version is allowed
//! (`>= 1.0.0`). Wildcards `1.x`, `1.2.x`, `1.x.x` expand as blang does (`1.2.x` =
//! `>=1.2.0 <1.3.0`, `>1.2.x` = `>=1.3.0`, `<=1.2.x` = `<1.3.0`, `!=1.x` = `<1.0.0 ||
//! >=2.0.0`).
//!
//! Deliberate extensions over blang (all documented in the crate docs): `X` and `*`
//! work like `x`; a lone `x`/`*` means any version; versions may omit minor/patch and
//! carry a `v` prefix (`>=1.2` = `>=1.2.0`), because KUDO appVersions are often `5.7`.
//! Pre-releases are ordered by plain semver precedence (blang has no npm-style
//! pre-release exclusion): `<2.0.0` contains `2.0.0-rc.1`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use semver::Version;
use version_ranges::Ranges;

/// A parsed range together with the text it came from (used in every message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    pub text: String,
    pub ranges: Ranges<Version>,
}

impl VersionRange {
    pub fn contains(&self, v: &Version) -> bool {
        self.ranges.contains(v)
    }

    /// True when the text is a single exact version (`1.3.1`, `=1.3.1`, `==1.3.1`).
    pub fn is_exact(&self) -> bool {
        self.ranges.as_singleton().is_some()
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A range that could not be parsed. Display names the whole text and the bad part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version range {text:?}: {message}")]
pub struct RangeError {
    pub text: String,
    pub message: String,
}

/// Parse a blang/semver range (see the module docs).
pub fn parse_range(text: &str) -> Result<VersionRange, RangeError> {
    let err = |message: String| RangeError {
        text: text.to_string(),
        message,
    };
    let tokens = tokenize(text);
    if tokens.is_empty() {
        return Err(err(
            "the range is empty; write a version such as 1.2.3 or a range such as >=1.0.0 <2.0.0"
                .into(),
        ));
    }
    let mut alternatives: Vec<Vec<String>> = vec![Vec::new()];
    for tok in tokens {
        if tok == "||" {
            if alternatives.last().is_some_and(Vec::is_empty) {
                return Err(err("`||` needs a range on both sides".into()));
            }
            alternatives.push(Vec::new());
        } else if let Some(last) = alternatives.last_mut() {
            last.push(tok);
        }
    }
    if alternatives.last().is_some_and(Vec::is_empty) {
        return Err(err("`||` needs a range on both sides".into()));
    }
    let mut union = Ranges::empty();
    for conjunction in &alternatives {
        let mut all = Ranges::full();
        for term in conjunction {
            let r = parse_term(term).map_err(|m| err(format!("in {term:?}: {m}")))?;
            all = all.intersection(&r);
        }
        union = union.union(&all);
    }
    Ok(VersionRange {
        text: text.trim().to_string(),
        ranges: union,
    })
}

/// Split on whitespace, but glue an operator written alone (`>= 1.0.0`) to the version
/// that follows, as blang's splitAndTrim does.
fn tokenize(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending_op = false;
    for word in text.split_whitespace() {
        // `a||b` without spaces is still two alternatives.
        let pieces: Vec<&str> = split_keep(word, "||");
        for p in pieces {
            if p.is_empty() {
                continue;
            }
            if pending_op && let Some(last) = out.last_mut() {
                last.push_str(p);
                pending_op = p.chars().all(is_op_char);
                continue;
            }
            out.push(p.to_string());
            pending_op = p != "||" && p.chars().all(is_op_char);
        }
    }
    out
}

fn split_keep<'a>(s: &'a str, sep: &'a str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find(sep) {
        out.push(&rest[..i]);
        out.push(sep);
        rest = &rest[i + sep.len()..];
    }
    out.push(rest);
    out
}

fn is_op_char(c: char) -> bool {
    matches!(c, '<' | '>' | '=' | '!')
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

fn parse_term(term: &str) -> Result<Ranges<Version>, String> {
    let split = term.find(|c: char| !is_op_char(c)).unwrap_or(term.len());
    let (op_text, version_text) = term.split_at(split);
    let op = match op_text {
        "" | "=" | "==" => Op::Eq,
        "!" | "!=" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        other => {
            return Err(format!(
                "unknown operator {other:?}; use one of > >= < <= = == != !"
            ));
        }
    };
    if version_text.is_empty() {
        return Err("an operator needs a version after it".into());
    }
    let v = version_text.strip_prefix('v').unwrap_or(version_text);
    if matches!(v, "x" | "X" | "*") {
        return Ok(match op {
            Op::Eq | Op::Ge | Op::Le => Ranges::full(),
            // "anything but any version" / "beyond any version": nothing.
            _ => Ranges::empty(),
        });
    }
    let parts: Vec<&str> = v.split('.').collect();
    let is_wild = |p: &str| matches!(p, "x" | "X" | "*");
    if let Some(first_wild) = parts.iter().position(|p| is_wild(p)) {
        // Everything after the first wildcard must be a wildcard too (`1.x.x`).
        if parts[first_wild..].iter().any(|p| !is_wild(p)) || parts.len() > 3 {
            return Err(format!(
                "wildcards must come last, as in 1.x or 1.2.x (got {version_text:?})"
            ));
        }
        let nums: Result<Vec<u64>, _> = parts[..first_wild].iter().map(|p| p.parse()).collect();
        let nums = nums.map_err(|_| format!("{version_text:?} is not a version"))?;
        let (low, high) = match nums.as_slice() {
            [major] => (Version::new(*major, 0, 0), Version::new(major + 1, 0, 0)),
            [major, minor] => (
                Version::new(*major, *minor, 0),
                Version::new(*major, minor + 1, 0),
            ),
            _ => return Err(format!("{version_text:?} is not a version")),
        };
        return Ok(match op {
            Op::Eq => Ranges::between(low, high),
            Op::Ne => Ranges::between(low, high).complement(),
            Op::Gt => Ranges::higher_than(high),
            Op::Ge => Ranges::higher_than(low),
            Op::Lt => Ranges::strictly_lower_than(low),
            Op::Le => Ranges::strictly_lower_than(high),
        });
    }
    let version = parse_lenient(version_text).ok_or_else(|| {
        format!(
            "{version_text:?} is not a semantic version (expected MAJOR.MINOR.PATCH, e.g. 1.2.3)"
        )
    })?;
    Ok(match op {
        Op::Eq => Ranges::singleton(version),
        Op::Ne => Ranges::singleton(version).complement(),
        Op::Gt => Ranges::strictly_higher_than(version),
        Op::Ge => Ranges::higher_than(version),
        Op::Lt => Ranges::strictly_lower_than(version),
        Op::Le => Ranges::lower_than(version),
    })
}

/// `1`, `1.2`, `v1.2.3`, `1.2.3-rc.1+b` -> a semantic version (missing parts are 0).
pub fn parse_lenient(text: &str) -> Option<Version> {
    kudo_package::parse_version(text)
}

/// A version as written in a package (`operatorVersion` / `appVersion`).
///
/// Ordered and compared as a semantic version when it parses leniently (`5.7` ==
/// `5.7.0`); text that is not a version (`latest`, `1.2.3.4`) is older than every
/// semantic version, compared by text, and only an exact ask with the same text matches
/// it (ranges never do). This mirrors KUDO's repository order, which puts unparsable
/// versions last.
#[derive(Debug, Clone)]
pub struct LenientVersion {
    pub text: String,
    pub parsed: Option<Version>,
}

impl LenientVersion {
    pub fn new(text: &str) -> LenientVersion {
        LenientVersion {
            text: text.to_string(),
            parsed: parse_lenient(text),
        }
    }
}

impl PartialEq for LenientVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for LenientVersion {}

impl Ord for LenientVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.parsed, &other.parsed) {
            (Some(a), Some(b)) => a.cmp(b),
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => self.text.cmp(&other.text),
        }
    }
}
impl PartialOrd for LenientVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Hash for LenientVersion {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.parsed {
            Some(v) => v.hash(state),
            None => self.text.hash(state),
        }
    }
}
impl fmt::Display for LenientVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a KudoOperator task (or a user override) asks of one version field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionReq {
    Range(VersionRange),
    /// A non-semantic version, matched by its exact text (`latest`).
    ExactText(String),
}

impl VersionReq {
    /// A range, or a single word that is not a version (exact text match).
    pub fn parse(text: &str) -> Result<VersionReq, RangeError> {
        match parse_range(text) {
            Ok(r) => Ok(VersionReq::Range(r)),
            Err(e) => {
                let t = text.trim();
                let plain_word = !t.is_empty()
                    && !t.contains(char::is_whitespace)
                    && !t.contains("||")
                    && !t.starts_with(is_op_char);
                if plain_word && parse_lenient(t).is_none() && !t.contains(['x', 'X', '*']) {
                    Ok(VersionReq::ExactText(t.to_string()))
                } else {
                    Err(e)
                }
            }
        }
    }

    pub fn matches(&self, v: &LenientVersion) -> bool {
        match (self, &v.parsed) {
            (VersionReq::Range(r), Some(p)) => r.contains(p),
            (VersionReq::Range(_), None) => false,
            (VersionReq::ExactText(t), _) => *t == v.text,
        }
    }
}

impl fmt::Display for VersionReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionReq::Range(r) => f.write_str(&r.text),
            VersionReq::ExactText(t) => f.write_str(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn check(range: &str, yes: &[&str], no: &[&str]) {
        let r = parse_range(range).unwrap_or_else(|e| panic!("{e}"));
        for y in yes {
            assert!(r.contains(&v(y)), "{range} should contain {y}");
        }
        for n in no {
            assert!(!r.contains(&v(n)), "{range} should not contain {n}");
        }
    }

    #[test]
    fn operators_and_combinations() {
        check(">0.5.1", &["0.5.2", "1.0.0"], &["0.5.1", "0.1.0"]);
        check(">=1.0.0 <1.1.0", &["1.0.0", "1.0.9"], &["1.1.0", "0.9.9"]);
        check(
            ">=1.0.0 <2.0.0 || >3.0.0",
            &["1.5.0", "3.0.1"],
            &["2.0.0", "3.0.0"],
        );
        check(
            ">1.0.0 <2.0.0 || >3.0.0 !4.2.1",
            &["1.2.3", "1.9.9", "3.1.1"],
            &["4.2.1", "2.1.1"],
        );
        check("1.3.1", &["1.3.1"], &["1.3.2", "1.3.0"]);
        check("=1.3.1", &["1.3.1"], &["1.3.2"]);
        check("==1.3.1", &["1.3.1"], &["1.3.2"]);
        check("!=1.3.1", &["1.3.2", "0.1.0"], &["1.3.1"]);
        check("!1.3.1", &["1.3.2"], &["1.3.1"]);
        check("<=1.3.1", &["1.3.1", "0.0.1"], &["1.3.2"]);
        check(">= 1.0.0", &["1.0.0"], &["0.9.0"]);
        check(">=1.0.0||<0.1.0", &["1.0.0", "0.0.1"], &["0.5.0"]);
        check(">=1.2", &["1.2.0"], &["1.1.9"]);
        check("5.7", &["5.7.0"], &["5.7.1"]);
    }

    #[test]
    fn wildcards_expand_like_blang() {
        check("1.x", &["1.0.0", "1.9.9"], &["2.0.0", "0.9.0"]);
        check("1.2.x", &["1.2.0", "1.2.9"], &["1.3.0", "1.1.9"]);
        check("1.x.x", &["1.0.0"], &["2.0.0"]);
        check("1.X", &["1.4.0"], &["2.0.0"]);
        check("1.2.*", &["1.2.7"], &["1.3.0"]);
        check(">1.2.x", &["1.3.0"], &["1.2.9"]);
        check(">=1.2.x", &["1.2.0"], &["1.1.9"]);
        check("<1.2.x", &["1.1.9"], &["1.2.0"]);
        check("<=1.2.x", &["1.2.9"], &["1.3.0"]);
        check("!=1.x", &["0.9.0", "2.0.0"], &["1.5.0"]);
        check("*", &["0.0.1", "99.0.0"], &[]);
        check("x", &["1.0.0"], &[]);
    }

    #[test]
    fn bad_syntax_names_the_text() {
        for bad in [
            "",
            "||1.0.0",
            "1.0.0 ||",
            ">=",
            "=>1.0.0",
            "1.x.2",
            "abc",
            "~1.2.3",
            ">=1.0.0 <",
            "1.2.3.4",
        ] {
            let e = parse_range(bad).expect_err(bad);
            let text = e.to_string();
            assert!(
                text.contains(&format!("{:?}", bad.trim())),
                "{text} should name {bad:?}"
            );
        }
        let e = parse_range(">=1.0.0 <abc").unwrap_err().to_string();
        assert!(e.contains("\"<abc\""), "{e}");
    }

    #[test]
    fn lenient_versions_and_text() {
        assert_eq!(LenientVersion::new("5.7"), LenientVersion::new("5.7.0"));
        assert!(LenientVersion::new("latest") < LenientVersion::new("0.0.1"));
        let req = VersionReq::parse("latest").unwrap();
        assert!(req.matches(&LenientVersion::new("latest")));
        assert!(!req.matches(&LenientVersion::new("1.0.0")));
        let r = VersionReq::parse(">=5.7").unwrap();
        assert!(r.matches(&LenientVersion::new("5.7")));
        assert!(!r.matches(&LenientVersion::new("weird")));
        assert!(VersionReq::parse(">=weird").is_err());
        assert!(VersionReq::parse("1.x.2").is_err());
        assert!(parse_range("1.3.1").unwrap().is_exact());
        assert!(!parse_range("1.3.x").unwrap().is_exact());
    }
}
