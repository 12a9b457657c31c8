//! Broken templates, table-driven: each must fail to render with a message that starts
//! with the template's name and the line of the mistake. docs/testing.md ("Bad input,
//! counted") counts the rows.

use std::collections::BTreeMap;

use kudo_template::{Vars, render};

/// (what is wrong, template text, expected start of the message: `<name>:<line>`).
const ROWS: &[(&str, &str, &str)] = &[
    ("unclosed action", "a: 1\nb: {{ .Name\n", "t.yaml:2"),
    ("unclosed comment", "a: 1\n\nb: {{/* note\n", "t.yaml:3"),
    ("unterminated string", "a: {{ \"open }}\n", "t.yaml:1"),
    (
        "unterminated raw string",
        "a: 1\nb: {{ `open }}\n",
        "t.yaml:2",
    ),
    ("bad number", "a: {{ 1x2 }}\n", "t.yaml:1"),
    ("unexpected end", "a: 1\n{{ end }}\n", "t.yaml:2"),
    ("if without end", "a: 1\n{{ if .Name }}\nb: 2\n", "t.yaml:2"),
    (
        "range without end",
        "{{ range .Params.LIST }}\n",
        "t.yaml:1",
    ),
    ("else outside if", "a: 1\nb: 2\n{{ else }}\n", "t.yaml:3"),
    (
        "unknown function",
        "a: 1\nb: {{ nosuchfunc .Name }}\n",
        "t.yaml:2",
    ),
    (
        "removed Sprig function",
        "a: {{ env \"HOME\" }}\n",
        "t.yaml:1",
    ),
    ("undefined variable", "a: 1\nb: {{ $nope }}\n", "t.yaml:2"),
    (
        "missing parameter",
        "a: 1\nb: 2\nc: {{ .Params.MISSING }}\n",
        "t.yaml:3",
    ),
    ("missing pipe", "a: {{ .Pipes.nothing }}\n", "t.yaml:1"),
    (
        "field of a string",
        "a: 1\nb: {{ .Name.Field }}\n",
        "t.yaml:2",
    ),
    ("wrong argument count", "a: 1\nb: {{ upper }}\n", "t.yaml:2"),
    (
        "wrong argument type",
        "a: 1\nb: {{ upper 1 }}\n",
        "t.yaml:2",
    ),
    (
        "index out of range",
        "a: 1\nb: {{ index .Params.LIST 9 }}\n",
        "t.yaml:2",
    ),
    (
        "fail function",
        "a: 1\nb: {{ fail \"stop\" }}\n",
        "t.yaml:2",
    ),
    (
        "required function",
        "a: {{ required \"need it\" \"\" }}\n",
        "t.yaml:1",
    ),
    (
        "undefined template",
        "a: 1\n{{ template \"nope\" . }}\n",
        "t.yaml:2",
    ),
    (
        "pipeline into non-function",
        "a: {{ .Name | .Namespace }}\n",
        "t.yaml:1",
    ),
    ("bad character in action", "a: {{ .Name # }}\n", "t.yaml:1"),
    (
        "unclosed parenthesis",
        "a: 1\nb: {{ (upper .Name }}\n",
        "t.yaml:2",
    ),
    (
        "range over a number",
        "a: 1\n{{ range 3.5 }}x{{ end }}\n",
        "t.yaml:2",
    ),
    ("call of non-function", "a: {{ call .Name }}\n", "t.yaml:1"),
    (
        "bad regex",
        "a: 1\nb: {{ mustRegexMatch \"(\" \"x\" }}\n",
        "t.yaml:2",
    ),
    ("division by zero", "a: 1\nb: {{ div 1 0 }}\n", "t.yaml:2"),
    (
        "fromJson garbage into a field",
        "a: 1\nb: {{ (fromJson \"{\").x.y }}\n",
        "t.yaml:2",
    ),
    // Resource limits (found by fuzzing: each of these exhausted memory or time).
    (
        "repeat too large",
        "a: 1\nb: {{ repeat 1000000000 \"x\" }}\n",
        "t.yaml:2",
    ),
    (
        "repeat overflowing",
        "a: {{ repeat 9223372036854775807 \"xy\" }}\n",
        "t.yaml:1",
    ),
    (
        "until too long",
        "a: 1\nb: {{ until 1000000000 }}\n",
        "t.yaml:2",
    ),
    (
        "untilStep too long",
        "a: 1\nb: {{ untilStep 0 1000000000 1 }}\n",
        "t.yaml:2",
    ),
    (
        "indent too wide",
        "a: 1\nb: {{ indent 1000000000 \"x\" }}\n",
        "t.yaml:2",
    ),
    (
        "nindent too wide",
        "a: 1\nb: {{ nindent 9223372036854775807 \"x\" }}\n",
        "t.yaml:2",
    ),
    (
        "random string too long",
        "a: 1\nb: {{ randAlphaNum 9223372036854775807 }}\n",
        "t.yaml:2",
    ),
    (
        "nested ranges beyond the budget",
        "a: 1\n{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n",
        "t.yaml:2",
    ),
];

fn vars() -> Vars {
    let mut params = BTreeMap::new();
    params.insert("LIST".to_string(), serde_json::json!(["a"]));
    Vars {
        name: "demo".to_string(),
        namespace: "ns".to_string(),
        params,
        ..Vars::default()
    }
}

#[test]
fn every_broken_template_names_file_and_line() {
    let vars = vars();
    let mut problems = Vec::new();
    for (what, text, expected) in ROWS {
        match render("t.yaml", text, &vars) {
            Ok(out) => problems.push(format!("{what}: rendered {out:?}")),
            Err(e) => {
                let message = e.to_string();
                // `t.yaml:2` must not match `t.yaml:23`.
                let named = message.starts_with(&format!("{expected}:"));
                if !named {
                    problems.push(format!("{what}: expected {expected}: in: {message}"));
                }
            }
        }
    }
    println!("bad_input: {} broken templates", ROWS.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
