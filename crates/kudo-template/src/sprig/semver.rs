//! `semver` and `semverCompare` with Masterminds/semver v1 rules (what Sprig 2.22
//! uses): loose versions ("v1.2" is 1.2.0), constraints joined by `,`/space (and) and
//! `||` (or), operators `= != > < >= <= ~ ~> ^`, wildcards `x X *`, hyphen ranges, and
//! prerelease versions matching only constraints that carry a prerelease.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::Reg;
use super::args::{arity, fail, s, string};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    meta: String,
}

fn parse(v: &str) -> Option<Version> {
    let v = v.strip_prefix('v').unwrap_or(v);
    let (rest, meta) = match v.split_once('+') {
        Some((r, m)) => (r, m.to_string()),
        None => (v, String::new()),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, p.to_string()),
        None => (rest, String::new()),
    };
    let ident_ok = |x: &str| {
        x.is_empty()
            || x.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'))
    };
    if !ident_ok(&pre) || !ident_ok(&meta) {
        return None;
    }
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        nums[i] = p.parse().ok()?;
    }
    Some(Version {
        major: nums[0],
        minor: nums[1],
        patch: nums[2],
        pre,
        meta,
    })
}

fn cmp_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (ap, bp): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for (x, y) in ap.iter().zip(bp.iter()) {
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(i), Ok(j)) => i.cmp(&j),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ap.len().cmp(&bp.len())
}

fn cmp(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| cmp_pre(&a.pre, &b.pre))
}

/// A constraint version: parts after the first wildcard or missing part are "any".
struct Partial {
    v: Version,
    /// How many leading parts were given (0..=3) before a wildcard or the end.
    given: usize,
}

fn parse_partial(text: &str) -> Option<Partial> {
    let t = text.strip_prefix('v').unwrap_or(text);
    let (core, suffix) = match t.find(['-', '+']) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let mut given = 0;
    let mut nums = Vec::new();
    for p in &parts {
        if matches!(*p, "x" | "X" | "*") {
            break;
        }
        nums.push(*p);
        given += 1;
    }
    let mut text = if nums.is_empty() {
        "0".to_string()
    } else {
        nums.join(".")
    };
    if given == parts.len() {
        text.push_str(suffix);
    }
    Some(Partial {
        v: parse(&text)?,
        given,
    })
}

fn bump(v: &Version, part: usize) -> Version {
    let mut n = Version {
        major: v.major,
        minor: v.minor,
        patch: v.patch,
        pre: String::new(),
        meta: String::new(),
    };
    match part {
        0 => {
            n.major += 1;
            n.minor = 0;
            n.patch = 0;
        }
        1 => {
            n.minor += 1;
            n.patch = 0;
        }
        _ => n.patch += 1,
    }
    n
}

fn check_one(op: &str, c: &Partial, v: &Version) -> bool {
    if !v.pre.is_empty() && c.v.pre.is_empty() {
        return false;
    }
    let lo = &c.v;
    let ge = cmp(v, lo) != Ordering::Less;
    match op {
        "" | "=" => {
            if c.given == 3 {
                cmp(v, lo) == Ordering::Equal
            } else if c.given == 0 {
                true
            } else {
                ge && cmp(v, &bump(lo, c.given - 1)) == Ordering::Less
            }
        }
        "!=" => !check_one("=", c, v),
        ">" => {
            if c.given == 3 {
                cmp(v, lo) == Ordering::Greater
            } else if c.given == 0 {
                false
            } else {
                cmp(v, &bump(lo, c.given - 1)) != Ordering::Less
            }
        }
        ">=" | "=>" => ge,
        "<" => cmp(v, lo) == Ordering::Less,
        "<=" | "=<" => {
            if c.given == 3 || c.given == 0 {
                cmp(v, lo) != Ordering::Greater || c.given == 0
            } else {
                cmp(v, &bump(lo, c.given - 1)) == Ordering::Less
            }
        }
        "~" | "~>" => {
            let upper = if c.given <= 1 {
                bump(lo, 0)
            } else {
                bump(lo, 1)
            };
            ge && cmp(v, &upper) == Ordering::Less
        }
        "^" => {
            let upper = if lo.major > 0 || c.given <= 1 {
                bump(lo, 0)
            } else {
                bump(lo, 1)
            };
            ge && cmp(v, &upper) == Ordering::Less
        }
        _ => false,
    }
}

fn split_op(t: &str) -> (&str, &str) {
    for op in ["!=", ">=", "=>", "<=", "=<", "~>", ">", "<", "=", "~", "^"] {
        if let Some(rest) = t.strip_prefix(op) {
            return (op, rest.trim());
        }
    }
    ("", t)
}

fn satisfies(constraint: &str, v: &Version) -> Result<bool, String> {
    let bad = || format!("improper constraint: {constraint}");
    for group in constraint.split("||") {
        let group = group.trim();
        if group.is_empty() {
            return Err(bad());
        }
        // Hyphen ranges first: "1.2 - 1.4.5".
        let normalized = group.replace(',', " ");
        let tokens: Vec<&str> = normalized.split_whitespace().collect();
        let mut items: Vec<(String, String)> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            if tokens.get(i + 1) == Some(&"-") && i + 2 < tokens.len() {
                items.push((">=".into(), tokens[i].into()));
                items.push(("<=".into(), tokens[i + 2].into()));
                i += 3;
                continue;
            }
            let (mut op, mut ver) = split_op(tokens[i]);
            if ver.is_empty() {
                // "> 1.2": operator and version separated by a space.
                ver = tokens.get(i + 1).copied().ok_or_else(bad)?;
                i += 1;
                if op.is_empty() {
                    op = "";
                }
            }
            items.push((op.to_string(), ver.to_string()));
            i += 1;
        }
        let mut all = true;
        for (op, ver) in &items {
            let p = parse_partial(ver).ok_or_else(bad)?;
            if !check_one(op, &p, v) {
                all = false;
                break;
            }
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

pub(super) fn register(m: &mut Reg) {
    m.add("semver", |a| {
        arity("semver", a, 1)?;
        let text = string("semver", &a[0])?;
        let v = parse(&text).ok_or_else(|| fail("semver", "Invalid Semantic Version"))?;
        let mut out: BTreeMap<Arc<str>, Value> = BTreeMap::new();
        out.insert("Major".into(), Value::Int(v.major as i64));
        out.insert("Minor".into(), Value::Int(v.minor as i64));
        out.insert("Patch".into(), Value::Int(v.patch as i64));
        out.insert("Prerelease".into(), s(&v.pre));
        out.insert("Metadata".into(), s(&v.meta));
        out.insert("Original".into(), s(&*text));
        Ok(Value::Map(Arc::new(out)))
    });
    m.add("semverCompare", |a| {
        arity("semverCompare", a, 2)?;
        let c = string("semverCompare", &a[0])?;
        let v = parse(&string("semverCompare", &a[1])?)
            .ok_or_else(|| fail("semverCompare", "Invalid Semantic Version"))?;
        satisfies(&c, &v)
            .map(Value::Bool)
            .map_err(|e| fail("semverCompare", e))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r};

    fn c(constraint: &str, v: &str) -> String {
        r(&format!("{{{{ semverCompare {constraint:?} {v:?} }}}}"))
    }

    #[test]
    fn constraints() {
        assert_eq!(c(">=1.2.3", "1.2.3"), "true");
        assert_eq!(c(">1.2.3", "1.2.3"), "false");
        assert_eq!(c("~1.2.3", "1.2.9"), "true");
        assert_eq!(c("~1.2.3", "1.3.0"), "false");
        assert_eq!(c("^1.2.3", "1.9.0"), "true");
        assert_eq!(c("^1.2.3", "2.0.0"), "false");
        assert_eq!(c("^0.2.3", "0.3.0"), "false");
        assert_eq!(c("1.2.x", "1.2.7"), "true");
        assert_eq!(c("1.2.x", "1.3.0"), "false");
        assert_eq!(c(">=1.0, <2.0", "1.5.0"), "true");
        assert_eq!(c(">=1.0 <2.0", "2.1.0"), "false");
        assert_eq!(c("<1.0 || >=3", "3.1.0"), "true");
        assert_eq!(c("1.2 - 1.4.5", "1.4.5"), "true");
        assert_eq!(c("1.2 - 1.4.5", "1.4.6"), "false");
        assert_eq!(c(">=1.0.0", "1.1.0-beta"), "false");
        assert_eq!(c(">=1.0.0-alpha", "1.1.0-beta"), "true");
        assert_eq!(c("!=1.2.3", "1.2.4"), "true");
        assert!(
            err(r#"{{ semverCompare ">=1" "not.a.version" }}"#)
                .contains("Invalid Semantic Version")
        );
    }

    #[test]
    fn parse_versions() {
        assert_eq!(
            r(
                r#"{{ (semver "v1.2.3-rc.1+b5").Major }} {{ (semver "1.2").Minor }} {{ (semver "1.2.3-rc.1").Prerelease }}"#
            ),
            "1 2 rc.1"
        );
    }
}
