//! `urlParse` / `urlJoin` over Go's url.URL fields.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::Reg;
use super::args::{arity, dict, s, string};
use super::conv::strval;

fn parse(u: &str) -> BTreeMap<Arc<str>, Value> {
    let (rest, fragment) = u.split_once('#').unwrap_or((u, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((sch, r))
            if !sch.is_empty()
                && sch
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && sch.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) =>
        {
            (sch, r)
        }
        _ => ("", rest),
    };
    let (mut host, mut path, mut userinfo, mut opaque) = ("", rest, "", "");
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        path = &after[end..];
        match authority.rsplit_once('@') {
            Some((ui, h)) => {
                userinfo = ui;
                host = h;
            }
            None => host = authority,
        }
    } else if !scheme.is_empty() && !rest.starts_with('/') {
        opaque = rest;
        path = "";
    }
    let hostname = match host.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    let hostname = hostname.trim_start_matches('[').trim_end_matches(']');
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("scheme", scheme),
        ("host", host),
        ("hostname", hostname),
        ("path", path),
        ("query", query),
        ("opaque", opaque),
        ("fragment", fragment),
        ("userinfo", userinfo),
    ] {
        m.insert(Arc::from(k), s(v));
    }
    m
}

fn join(d: &BTreeMap<Arc<str>, Value>) -> String {
    let get = |k: &str| d.get(k).map(strval).unwrap_or_default();
    let mut out = String::new();
    let scheme = get("scheme");
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    let opaque = get("opaque");
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        let (host, userinfo) = (get("host"), get("userinfo"));
        if !scheme.is_empty() || !host.is_empty() || !userinfo.is_empty() {
            out.push_str("//");
            if !userinfo.is_empty() {
                out.push_str(&userinfo);
                out.push('@');
            }
            out.push_str(&host);
        }
        let path = get("path");
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&path);
    }
    let query = get("query");
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    let fragment = get("fragment");
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&fragment);
    }
    out
}

pub(super) fn register(m: &mut Reg) {
    m.add("urlParse", |a| {
        arity("urlParse", a, 1)?;
        Ok(Value::Map(Arc::new(parse(&string("urlParse", &a[0])?))))
    });
    m.add("urlJoin", |a| {
        arity("urlJoin", a, 1)?;
        Ok(s(join(&*dict("urlJoin", &a[0])?)))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::r;

    #[test]
    fn parse_and_join() {
        let t = r#"{{ $u := urlParse "https://user:pw@example.com:8443/p/a?x=1#frag" }}{{ $u.scheme }}|{{ $u.host }}|{{ $u.hostname }}|{{ $u.path }}|{{ $u.query }}|{{ $u.fragment }}|{{ $u.userinfo }}"#;
        assert_eq!(
            r(t),
            "https|example.com:8443|example.com|/p/a|x=1|frag|user:pw"
        );
        assert_eq!(
            r(r#"{{ urlJoin (dict "scheme" "http" "host" "h:1" "path" "/x" "query" "a=b") }}"#),
            "http://h:1/x?a=b"
        );
    }
}
