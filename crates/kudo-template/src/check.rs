//! Static checks over the parse tree, and mapping run-time errors back to a position.
//!
//! Go rejects a call to an undefined function when the template is parsed; gotmpl only
//! notices when (and if) the call executes. gotmpl's run-time errors also carry no
//! position, so we find the action the error is about in the tree instead.

use std::collections::BTreeSet;

use gotmpl::TemplateError;
use gotmpl::parse::{CommandNode, DefineNode, Expr, ListNode, Node, PipeNode, Pos};

use crate::RenderError;

/// One reference found in the tree, in source order.
#[derive(Debug)]
enum Use {
    /// A function called by name.
    Func(String, Pos),
    /// A field chain, with its variable if any (`$root.Params.X` -> Some("$root")).
    Fields(Option<String>, Vec<String>, Pos),
    /// `{{template "name"}}`: gotmpl's "undefined template" error names no position.
    Template(String, Pos),
    /// `{{range}}`: for "cannot range over ...".
    Range(Pos),
    /// A field or variable given arguments (`{{.A 1}}`, `{{x | .A}}`): Go's "can't give
    /// argument to non-function".
    NonFunction(Pos),
}

fn collect(list: &ListNode, out: &mut Vec<Use>) {
    for node in &list.nodes {
        match node {
            Node::List(l) => collect(l, out),
            Node::Action(a) => pipe(&a.pipe, out),
            Node::If(b) | Node::Range(b) | Node::With(b) => {
                if matches!(node, Node::Range(_)) {
                    out.push(Use::Range(b.pos));
                }
                pipe(&b.pipe, out);
                collect(&b.body, out);
                if let Some(e) = &b.else_body {
                    collect(e, out);
                }
            }
            Node::Template(t) => {
                out.push(Use::Template(t.name.to_string(), t.pos));
                if let Some(p) = &t.pipe {
                    pipe(p, out);
                }
            }
            Node::Define(d) => collect(&d.body, out),
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
        }
    }
}

fn pipe(p: &PipeNode, out: &mut Vec<Use>) {
    for (i, c) in p.commands.iter().enumerate() {
        // A later command of a pipeline gets the previous result as an argument.
        let gets_arguments = i > 0 || c.args.len() > 1;
        if gets_arguments
            && let Some(Expr::Field(pos, _) | Expr::Variable(pos, _, _) | Expr::Chain(pos, _, _)) =
                c.args.first()
        {
            out.push(Use::NonFunction(*pos));
        }
        command(c, out);
    }
}

fn command(c: &CommandNode, out: &mut Vec<Use>) {
    for a in &c.args {
        expr(a, out);
    }
}

fn expr(e: &Expr, out: &mut Vec<Use>) {
    match e {
        Expr::Identifier(pos, name) => out.push(Use::Func(name.to_string(), *pos)),
        Expr::Field(pos, fields) => out.push(Use::Fields(
            None,
            fields.iter().map(|f| f.to_string()).collect(),
            *pos,
        )),
        Expr::Variable(pos, name, fields) => out.push(Use::Fields(
            Some(name.to_string()),
            fields.iter().map(|f| f.to_string()).collect(),
            *pos,
        )),
        Expr::Pipe(_, p) => pipe(p, out),
        Expr::Chain(pos, inner, fields) => {
            expr(inner, out);
            out.push(Use::Fields(
                None,
                fields.iter().map(|f| f.to_string()).collect(),
                *pos,
            ));
        }
        Expr::Dot(_) | Expr::String(..) | Expr::Number(..) | Expr::Bool(..) | Expr::Nil(_) => {}
    }
}

fn uses(tree: &ListNode, defines: &[DefineNode]) -> Vec<Use> {
    let mut out = Vec::new();
    collect(tree, &mut out);
    for d in defines {
        collect(&d.body, &mut out);
    }
    out
}

/// Byte offset to 1-based (line, column), column counted in bytes as Go does.
fn line_col(text: &str, pos: Pos) -> (usize, usize) {
    let end = pos.offset.min(text.len());
    let line_start = text.as_bytes()[..end]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    (pos.line.max(1), end - line_start + 1)
}

pub(crate) fn undefined_functions(
    template: &str,
    text: &str,
    tree: &ListNode,
    defines: &[DefineNode],
    known: &BTreeSet<String>,
) -> Result<(), RenderError> {
    for u in uses(tree, defines) {
        if let Use::Func(name, pos) = u
            && !known.contains(&name)
        {
            let (line, col) = line_col(text, pos);
            return Err(RenderError::new(
                template,
                Some(line),
                Some(col),
                format!("function {name:?} not defined"),
            ));
        }
    }
    Ok(())
}

fn describe(var: &Option<String>, fields: &[String]) -> String {
    let mut s = var.clone().unwrap_or_default();
    for f in fields {
        s.push('.');
        s.push_str(f);
    }
    s
}

/// Turn a gotmpl execution error into a [`RenderError`] pointing at the first action
/// that can have caused it.
pub(crate) fn locate_exec_error(
    template: &str,
    text: &str,
    trees: &[&ListNode],
    err: TemplateError,
) -> RenderError {
    let mut found = Vec::new();
    for tree in trees {
        collect(tree, &mut found);
    }
    let full = err.to_string();
    let message = full
        .strip_prefix("execution error: ")
        .unwrap_or(&full)
        .to_string();
    let hit = match &err {
        TemplateError::MissingKey { key } => found.iter().find_map(|u| match u {
            Use::Fields(var, fields, pos) if fields.iter().any(|f| f == key) => Some((
                *pos,
                format!(
                    "executing at <{}>: map has no entry for key {key:?}",
                    describe(var, fields)
                ),
            )),
            _ => None,
        }),
        TemplateError::UndefinedVariable(name) => found.iter().find_map(|u| match u {
            Use::Fields(Some(var), _, pos) if var == name => Some((*pos, message.clone())),
            _ => None,
        }),
        _ if message.contains("can't evaluate field ") => {
            let field = message
                .split("can't evaluate field ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_default();
            found.iter().find_map(|u| match u {
                Use::Fields(var, fields, pos) if fields.iter().any(|f| f == field) => Some((
                    *pos,
                    format!("executing at <{}>: {message}", describe(var, fields)),
                )),
                _ => None,
            })
        }
        _ if message.contains("undefined template") || message.contains("no such template") => {
            found.iter().find_map(|u| match u {
                Use::Template(name, pos) if message.contains(name.as_str()) => {
                    Some((*pos, message.clone()))
                }
                _ => None,
            })
        }
        _ if message.contains("range over") || message.contains("range iteration budget") => {
            found.iter().find_map(|u| match u {
                Use::Range(pos) => Some((*pos, message.clone())),
                _ => None,
            })
        }
        _ if message.contains("argument to non-function") => found.iter().find_map(|u| match u {
            Use::NonFunction(pos) => Some((*pos, message.clone())),
            _ => None,
        }),
        _ => {
            let candidates = functions_in_message(&err, &message);
            found.iter().find_map(|u| match u {
                Use::Func(n, pos) if candidates.iter().any(|c| c == n) => Some((
                    *pos,
                    format!("executing at <{}>: {message}", command_text(text, *pos)),
                )),
                _ => None,
            })
        }
    };
    match hit {
        Some((pos, msg)) => {
            let (line, col) = line_col(text, pos);
            RenderError::new(template, Some(line), Some(col), msg)
        }
        None => RenderError::new(template, None, None, message),
    }
}

/// The source of a call from its function name to the end of its command, as Go
/// quotes it in "executing at <...>".
fn command_text(text: &str, pos: Pos) -> String {
    let rest = text.get(pos.offset..).unwrap_or_default();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut end = rest.len();
    let mut prev = ' ';
    for (i, c) in rest.char_indices() {
        if in_str {
            if c == '"' && prev != '\\' {
                in_str = false;
            }
        } else {
            match c {
                '"' => in_str = true,
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = i;
                    break;
                }
                ')' => depth -= 1,
                '|' if depth == 0 => {
                    end = i;
                    break;
                }
                '}' if depth == 0 && rest[i..].starts_with("}}") => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        prev = c;
    }
    rest[..end]
        .trim()
        .trim_end_matches('-')
        .trim_end()
        .to_string()
}

/// Which functions can have raised this error: the one named in it, or for Go's
/// builtins (whose messages name no function) the builtins that raise such messages.
fn functions_in_message(err: &TemplateError, message: &str) -> Vec<String> {
    match err {
        TemplateError::ArgCount { name, .. } | TemplateError::UndefinedFunction(name) => {
            return vec![name.clone()];
        }
        #[allow(unreachable_patterns)]
        TemplateError::FuncPanic { name, .. } => return vec![name.clone()],
        _ => {}
    }
    // Our Sprig functions report "error calling <name>: ..." as Go does.
    if let Some(rest) = message.strip_prefix("error calling ") {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            return vec![name];
        }
    }
    let builtins: &[&str] = if message.contains("comparison") || message.contains("compare") {
        &["eq", "ne", "lt", "le", "gt", "ge"]
    } else if message.contains("index") {
        &["index", "slice"]
    } else if message.contains("len of") {
        &["len"]
    } else {
        &[
            "printf", "print", "println", "call", "html", "js", "urlquery",
        ]
    };
    builtins.iter().map(|b| b.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{RenderError, Vars, render};

    fn vars() -> Vars {
        let mut params = BTreeMap::new();
        params.insert("N".to_string(), serde_json::Value::String("3".into()));
        Vars {
            params,
            ..Vars::default()
        }
    }

    fn err(text: &str) -> RenderError {
        match render("deploy.yaml", text, &vars()) {
            Ok(out) => panic!("expected an error, got {out:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn missing_param_names_the_key_and_position() {
        let e = err("a: 1\nb: {{ .Params.N }}\nc: {{ .Params.REPLICAS }}\n");
        assert_eq!((e.line, e.column), (Some(3), Some(7)));
        assert!(e.message.contains("\"REPLICAS\""), "{e}");
        assert_eq!(
            e.to_string(),
            "deploy.yaml:3:7: executing at <.Params.REPLICAS>: map has no entry for key \"REPLICAS\""
        );
        let pipe = err("x: {{ $.Pipes.cert }}");
        assert!(pipe.message.contains("<$.Pipes.cert>"), "{pipe}");
    }

    #[test]
    fn undefined_function_rejected_before_execution_even_in_dead_branch() {
        let e = err("a\n{{ if false }}\n  {{ nofunc 1 }}\n{{ end }}");
        assert_eq!((e.line, e.column), (Some(3), Some(6)));
        assert_eq!(e.message, "function \"nofunc\" not defined");
        for removed in [
            "env",
            "expandenv",
            "base",
            "dir",
            "clean",
            "ext",
            "isAbs",
            "getHostByName",
        ] {
            let e = err(&format!("{{{{ {removed} \"x\" }}}}"));
            assert!(e.message.contains("not defined"), "{removed}: {e}");
        }
    }

    #[test]
    fn function_errors_point_at_the_call() {
        let e = err("ok\n  {{ div 1 0 }}");
        assert_eq!((e.line, e.column), (Some(2), Some(6)));
        assert_eq!(
            e.message,
            "executing at <div 1 0>: error calling div: runtime error: integer divide by zero"
        );
        let nested = err(r#"{{ printf "%s" (div 4 (sub 2 "2")) | upper -}}"#);
        assert!(
            nested
                .message
                .starts_with("executing at <div 4 (sub 2 \"2\")>"),
            "{nested}"
        );
        let cmp = err("{{ if eq 1 2 }}{{ end }}\n{{ lt (int .Params.N) 3.5 }}");
        assert_eq!(
            cmp.line,
            Some(1),
            "first comparison is the best guess: {cmp}"
        );
        let f = err("{{ fail \"stop here\" }}");
        assert!(f.message.contains("stop here"));
    }

    #[test]
    fn errors_inside_defines_are_located() {
        let e = err("{{ define \"x\" }}\n  {{ .Params.NOPE }}\n{{ end }}{{ template \"x\" . }}");
        assert_eq!((e.line, e.column), (Some(2), Some(6)), "{e}");
    }

    #[test]
    fn parse_errors_keep_their_position() {
        let e = err("line1\n{{ .Name ");
        assert_eq!(e.template, "deploy.yaml");
        assert_eq!(e.line, Some(2));
        let unclosed = err("{{ if true }}x");
        assert!(unclosed.line.is_some(), "{unclosed}");
    }
}
