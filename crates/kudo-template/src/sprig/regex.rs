//! Regular expressions (RE2 syntax; the `regex` crate accepts the same language for
//! what templates use). Invalid patterns are errors where Sprig v2 panics, except in
//! `regexMatch`, which Sprig makes return false.

use gotmpl::Value;
use regex::Regex;

use super::Reg;
use super::args::{arity, fail, int, s, string, strings};

fn compile(name: &str, pattern: &str) -> Result<Regex, gotmpl::TemplateError> {
    Regex::new(pattern).map_err(|e| {
        // The regex crate's message is a multi-line diagram; its last line says what is wrong.
        let text = e.to_string();
        let reason = text
            .lines()
            .last()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        fail(
            name,
            format!("regexp: Compile(`{pattern}`): error parsing regexp: {reason}"),
        )
    })
}

/// Go's n: negative means all, otherwise at most n.
fn limit(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

pub(super) fn register(m: &mut Reg) {
    m.add("regexMatch", |a| {
        arity("regexMatch", a, 2)?;
        let (re, st) = (string("regexMatch", &a[0])?, string("regexMatch", &a[1])?);
        Ok(Value::Bool(Regex::new(&re).is_ok_and(|r| r.is_match(&st))))
    });
    m.add("regexFind", |a| {
        arity("regexFind", a, 2)?;
        let re = compile("regexFind", &string("regexFind", &a[0])?)?;
        let st = string("regexFind", &a[1])?;
        Ok(s(re.find(&st).map_or("", |m| m.as_str())))
    });
    m.add("regexFindAll", |a| {
        arity("regexFindAll", a, 3)?;
        let re = compile("regexFindAll", &string("regexFindAll", &a[0])?)?;
        let st = string("regexFindAll", &a[1])?;
        let n = limit(int("regexFindAll", &a[2])?);
        Ok(strings(
            re.find_iter(&st).take(n).map(|m| m.as_str().to_string()),
        ))
    });
    m.add("regexReplaceAll", |a| {
        arity("regexReplaceAll", a, 3)?;
        let re = compile("regexReplaceAll", &string("regexReplaceAll", &a[0])?)?;
        let (st, repl) = (
            string("regexReplaceAll", &a[1])?,
            string("regexReplaceAll", &a[2])?,
        );
        Ok(s(re.replace_all(&st, &*repl)))
    });
    m.add("regexReplaceAllLiteral", |a| {
        arity("regexReplaceAllLiteral", a, 3)?;
        let re = compile(
            "regexReplaceAllLiteral",
            &string("regexReplaceAllLiteral", &a[0])?,
        )?;
        let (st, repl) = (
            string("regexReplaceAllLiteral", &a[1])?,
            string("regexReplaceAllLiteral", &a[2])?,
        );
        Ok(s(re.replace_all(&st, regex::NoExpand(&repl))))
    });
    m.add("regexSplit", |a| {
        arity("regexSplit", a, 3)?;
        let re = compile("regexSplit", &string("regexSplit", &a[0])?)?;
        let st = string("regexSplit", &a[1])?;
        let n = int("regexSplit", &a[2])?;
        if n == 0 {
            return Ok(strings(Vec::new()));
        }
        let parts: Vec<String> = if n < 0 {
            re.split(&st).map(str::to_string).collect()
        } else {
            re.splitn(&st, limit(n)).map(str::to_string).collect()
        };
        Ok(strings(parts))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r};

    #[test]
    fn regex_functions() {
        assert_eq!(
            r(r#"{{ regexMatch "^[a-z]+$" "abc" }} {{ regexMatch "(" "x" }}"#),
            "true false"
        );
        assert_eq!(
            r(
                r#"{{ regexFind "[0-9]+" "ab123cd45" }}|{{ regexFindAll "[0-9]" "a1b2c3" 2 }}|{{ regexFindAll "[0-9]" "a1b2c3" -1 }}"#
            ),
            "123|[1 2]|[1 2 3]"
        );
        assert_eq!(
            r(
                r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}|{{ regexReplaceAllLiteral "a(x*)b" "-ab-" "${1}" }}"#
            ),
            "-W-xxW-|-${1}-"
        );
        assert_eq!(
            r(r#"{{ regexSplit "z+" "pizza" -1 }} {{ regexSplit "z+" "pizza" 1 }}"#),
            "[pi a] [pizza]"
        );
        assert!(err(r#"{{ regexFind "(" "x" }}"#).contains("regexFind"));
    }
}
