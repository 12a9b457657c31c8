//! The dependency tree as a picture: Mermaid flowchart text (GitHub and GitLab draw it
//! in pull requests and READMEs) and Graphviz DOT (`dot -Tsvg`). One function per
//! language, shared by the `resolve --format` command and the provider's `graph`
//! attributes, so that what CI posts and what Terraform shows are the same text.
//!
//! What is drawn, in both languages:
//! * every instance of the tree, labelled with its instance name, package and version,
//!   and where the package came from (the root: its folder, archive or URL; the others:
//!   `repository <name>` or their folder/URL);
//! * an arrow from parent to child, labelled with the parent's KudoOperator task and
//!   what it asked for;
//! * instances switched off by an `enablingParameter` (KEP-36) and their subtrees drawn
//!   dashed, with the parameter named;
//! * operators installed without an instance (operator.yaml `dependencies:`) as
//!   hexagons, with an arrow from each instance of the package that requires them.
//!
//! Node ids are generated (`i0`, `o0`), never taken from package or instance names, so
//! that no name can break the syntax; every label is escaped for its language.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::resolution::{RequiredOperator, Resolution, ResolvedInstance};

/// Which instances are on: instance name -> on, as [`Resolution::enabled`] computes it
/// from parameter values. `None` uses what was known at resolution time
/// ([`ResolvedInstance::enabled`]: the root values given to the resolver, defaults
/// elsewhere).
pub type Enabled = BTreeMap<String, bool>;

/// One node or edge of the picture, before it is written in either language.
struct Node {
    id: String,
    lines: Vec<String>,
    off: bool,
    operator: bool,
}

struct Edge {
    from: String,
    to: String,
    lines: Vec<String>,
    off: bool,
}

struct Picture {
    title: String,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

/// The tree as a Mermaid flowchart (`flowchart TD`), ending with a newline.
pub fn to_mermaid(resolution: &Resolution, enabled: Option<&Enabled>) -> String {
    let picture = picture(resolution, enabled);
    let mut out = String::from("flowchart TD\n");
    for n in &picture.nodes {
        let label = n
            .lines
            .iter()
            .map(|l| mermaid_text(l))
            .collect::<Vec<_>>()
            .join("<br/>");
        // A hexagon for an operator without an instance, a rounded box for an instance.
        let (open, close) = if n.operator { ("{{", "}}") } else { ("(", ")") };
        let _ = writeln!(out, "  {}{open}\"{label}\"{close}", n.id);
    }
    for e in &picture.edges {
        let arrow = if e.off { "-.->" } else { "-->" };
        let label = e
            .lines
            .iter()
            .map(|l| mermaid_text(l))
            .collect::<Vec<_>>()
            .join("<br/>");
        let _ = writeln!(out, "  {} {arrow}|\"{label}\"| {}", e.from, e.to);
    }
    let off: Vec<&str> = picture
        .nodes
        .iter()
        .filter(|n| n.off)
        .map(|n| n.id.as_str())
        .collect();
    if !off.is_empty() {
        out.push_str("  classDef off stroke-dasharray: 5 5,opacity:0.6\n");
        let _ = writeln!(out, "  class {} off", off.join(","));
    }
    out
}

/// The tree as a Graphviz `digraph`, ending with a newline; `dot -Tsvg` draws it.
pub fn to_dot(resolution: &Resolution, enabled: Option<&Enabled>) -> String {
    let picture = picture(resolution, enabled);
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", dot_text(&picture.title));
    // Room between siblings: edge labels (task and range) are wider than the boxes.
    out.push_str("  rankdir=TB;\n  nodesep=0.6;\n  ranksep=0.8;\n");
    out.push_str("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for n in &picture.nodes {
        let mut attrs = vec![format!("label=\"{}\"", dot_lines(&n.lines))];
        if n.operator {
            attrs.push("shape=hexagon".into());
        }
        if n.off {
            attrs.push("style=\"rounded,dashed\"".into());
            attrs.push("fontcolor=gray40".into());
        }
        let _ = writeln!(out, "  {} [{}];", n.id, attrs.join(", "));
    }
    for e in &picture.edges {
        let mut attrs = vec![format!("label=\"{}\"", dot_lines(&e.lines))];
        if e.off {
            attrs.push("style=dashed".into());
        }
        let _ = writeln!(out, "  {} -> {} [{}];", e.from, e.to, attrs.join(", "));
    }
    out.push_str("}\n");
    out
}

fn picture(resolution: &Resolution, enabled: Option<&Enabled>) -> Picture {
    let is_on = |n: &ResolvedInstance| match enabled {
        Some(map) => map.get(&n.instance).copied().unwrap_or(n.enabled),
        None => n.enabled,
    };
    let mut ids: BTreeMap<&str, String> = BTreeMap::new();
    let mut nodes = Vec::new();
    for (i, n) in resolution.nodes.iter().enumerate() {
        let id = format!("i{i}");
        ids.insert(n.instance.as_str(), id.clone());
        nodes.push(Node {
            id,
            lines: instance_lines(n, is_on(n)),
            off: !is_on(n),
            operator: false,
        });
    }
    let mut edges = Vec::new();
    for n in &resolution.nodes {
        let (Some(parent), Some(to)) = (n.parent.as_deref(), ids.get(n.instance.as_str())) else {
            continue;
        };
        let Some(from) = ids.get(parent) else {
            continue;
        };
        let mut lines = Vec::new();
        if let Some(task) = &n.task {
            lines.push(format!("task {task}"));
        }
        if let Some(constraint) = &n.constraint {
            lines.push(constraint.clone());
        }
        edges.push(Edge {
            from: from.clone(),
            to: to.clone(),
            lines,
            off: !is_on(n),
        });
    }
    // One hexagon per operator version, however many packages require it.
    let mut operator_ids: BTreeMap<&str, String> = BTreeMap::new();
    for o in &resolution.operators {
        if operator_ids.contains_key(o.operator_version_name.as_str()) {
            continue;
        }
        let id = format!("o{}", operator_ids.len());
        operator_ids.insert(o.operator_version_name.as_str(), id.clone());
        nodes.push(Node {
            id,
            lines: operator_lines(o),
            off: false,
            operator: true,
        });
    }
    let mut seen = BTreeSet::new();
    for o in &resolution.operators {
        let Some(to) = operator_ids.get(o.operator_version_name.as_str()) else {
            continue;
        };
        // From every instance of the requiring package; a package installed only as an
        // operator requires from its own hexagon.
        let mut froms: Vec<&String> = resolution
            .nodes
            .iter()
            .filter(|n| n.package == o.required_by)
            .filter_map(|n| ids.get(n.instance.as_str()))
            .collect();
        if froms.is_empty() {
            froms.extend(
                resolution
                    .operators
                    .iter()
                    .filter(|r| r.package == o.required_by)
                    .filter_map(|r| operator_ids.get(r.operator_version_name.as_str())),
            );
        }
        let lines = vec![format!("requires ({})", o.reference), o.constraint.clone()];
        for from in froms {
            if seen.insert((from.clone(), to.clone(), lines.clone())) {
                edges.push(Edge {
                    from: from.clone(),
                    to: to.clone(),
                    lines: lines.clone(),
                    off: false,
                });
            }
        }
    }
    let title = resolution
        .nodes
        .first()
        .map_or_else(|| "dependencies".to_string(), |r| r.package.clone());
    Picture {
        title,
        nodes,
        edges,
    }
}

fn version_text(operator_version: &str, app_version: Option<&str>) -> String {
    match app_version {
        Some(a) => format!("{operator_version} (app {a})"),
        None => operator_version.to_string(),
    }
}

fn instance_lines(n: &ResolvedInstance, on: bool) -> Vec<String> {
    let mut lines = vec![
        format!("instance {}", n.instance),
        format!(
            "{} {}",
            n.package,
            version_text(&n.operator_version, n.app_version.as_deref())
        ),
    ];
    lines.push(match n.parent {
        None => n.location.clone(),
        Some(_) => format!("from {}", n.source),
    });
    if let Some(p) = &n.enabling_parameter {
        lines.push(format!("enabled by {p}: {}", if on { "on" } else { "off" }));
    } else if !on {
        // Off because an ancestor is.
        lines.push("off with its parent".to_string());
    }
    lines
}

fn operator_lines(o: &RequiredOperator) -> Vec<String> {
    vec![
        format!(
            "{} {}",
            o.package,
            version_text(&o.operator_version, o.app_version.as_deref())
        ),
        "operator only, no instance".to_string(),
        format!("from {}", o.source),
    ]
}

/// Text inside a Mermaid `"..."` label. Mermaid turns `#name;` / `#code;` into
/// characters when it draws, so every character that means something to its grammar
/// or to HTML is written that way; line breaks are the caller's `<br/>`.
fn mermaid_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '&' => out.push_str("#amp;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '`' => out.push_str("#96;"),
            '|' => out.push_str("#124;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text inside a DOT `"..."` string: quotes and backslashes escaped (a backslash would
/// otherwise start one of Graphviz's label escapes, `\n`, `\N`, `\G`).
fn dot_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn dot_lines(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| dot_text(l))
        .collect::<Vec<_>>()
        .join("\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(name: &str, package: &str, parent: Option<&str>) -> ResolvedInstance {
        ResolvedInstance {
            instance: name.into(),
            package: package.into(),
            operator_version: "1.0.0".into(),
            app_version: None,
            operator_version_name: format!("{package}-1.0.0"),
            source: if parent.is_some() {
                "repository r".into()
            } else {
                "root".into()
            },
            repository: None,
            location: "./pkg".into(),
            parent: parent.map(str::to_string),
            task: parent.map(|_| format!("t-{package}")),
            reference: None,
            constraint: parent.map(|_| "any version".into()),
            parameter_file: None,
            enabling_parameter: None,
            enabled: true,
            depth: usize::from(parent.is_some()),
            children: Vec::new(),
        }
    }

    #[test]
    fn labels_are_escaped_for_each_language() {
        assert_eq!(
            mermaid_text(r#"a "b" #1 <x> & `y` | z"#),
            "a #quot;b#quot; #35;1 #lt;x#gt; #amp; #96;y#96; #124; z"
        );
        assert_eq!(dot_text(r#"a "b" \N c"#), r#"a \"b\" \\N c"#);
        assert_eq!(dot_text("two\nlines"), "two lines");
    }

    #[test]
    fn names_never_become_ids() {
        let mut root = instance("my.app", "my-app", None);
        root.location = r#"C:\ops\"quoted""#.into();
        let mut child = instance("my.app-db\"x", "db.v2", Some("my.app"));
        child.enabling_parameter = Some("DB_ON".into());
        child.enabled = false;
        let resolution = Resolution {
            root_instance: "my.app".into(),
            nodes: vec![root, child],
            ..Default::default()
        };
        let m = to_mermaid(&resolution, None);
        assert!(m.starts_with("flowchart TD\n"), "{m}");
        assert!(m.contains("  i0(\"instance my.app<br/>"), "{m}");
        assert!(
            m.contains("  i0 -.->|\"task t-db.v2<br/>any version\"| i1\n"),
            "{m}"
        );
        assert!(m.contains("instance my.app-db#quot;x"), "{m}");
        assert!(m.contains("  class i1 off\n"), "{m}");
        let d = to_dot(&resolution, None);
        assert!(d.starts_with("digraph \"my-app\" {\n"), "{d}");
        assert!(d.contains(r#"C:\\ops\\\"quoted\""#), "{d}");
        assert!(
            d.contains("i0 -> i1 [label=\"task t-db.v2\\nany version\", style=dashed];"),
            "{d}"
        );
        // Values known later switch the child on: drawn solid.
        let on = Enabled::from([("my.app-db\"x".to_string(), true)]);
        let m = to_mermaid(&resolution, Some(&on));
        assert!(m.contains("i0 -->|"), "{m}");
        assert!(!m.contains("class i1 off"), "{m}");
        assert!(m.contains("enabled by DB_ON: on"), "{m}");
    }
}
