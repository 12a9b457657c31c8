//! A YAML node tree built from parser events, keeping scalar text, style and position.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScanError, Span};

use crate::error::YamlError;
use crate::resolve::{Resolved, resolve_plain};

/// Deep nesting is only ever hostile input; stop before the stack does.
const MAX_DEPTH: usize = 256;
/// Alias expansion can blow up exponentially ("billion laughs"); cap the tree size.
const MAX_NODES: usize = 1_000_000;

/// How a scalar was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// A scalar as written: its text after YAML unescaping/folding, its style and its tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    pub text: String,
    pub style: ScalarStyle,
    /// Full tag, e.g. `tag:yaml.org,2002:str` for `!!str`, or `!foo`.
    pub tag: Option<String>,
}

const CORE_TAG_PREFIX: &str = "tag:yaml.org,2002:";

impl Scalar {
    /// Meaning under yaml.v2 rules: only untagged plain scalars are resolved; quoted and
    /// block scalars are strings; core-schema tags force a type.
    pub fn resolve(&self) -> Resolved {
        if let Some(tag) = &self.tag {
            let resolved = resolve_plain(&self.text);
            return match tag.strip_prefix(CORE_TAG_PREFIX) {
                Some("int") if matches!(resolved, Resolved::Int(_) | Resolved::UInt(_)) => resolved,
                Some("float") => match resolved {
                    Resolved::Int(i) => Resolved::Float(i as f64),
                    Resolved::Float(_) => resolved,
                    _ => Resolved::String,
                },
                Some("bool") if matches!(resolved, Resolved::Bool(_)) => resolved,
                Some("null") if resolved == Resolved::Null => resolved,
                _ => Resolved::String,
            };
        }
        match self.style {
            ScalarStyle::Plain => resolve_plain(&self.text),
            _ => Resolved::String,
        }
    }

    /// True when the scalar is a string (not null/bool/number) under yaml.v2 rules.
    pub fn is_string(&self) -> bool {
        self.resolve() == Resolved::String
    }
}

/// A node with its 1-based source position. Aliases are already expanded (the aliased
/// node is copied, with the anchor's position).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: NodeValue,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    Scalar(Scalar),
    Sequence(Vec<Node>),
    /// Entries in source order; merge keys (`<<`) are kept as written and applied by
    /// [`Node::to_json`] and [`Node::merged_entries`].
    Mapping(Vec<(Node, Node)>),
}

impl Node {
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.value {
            NodeValue::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_sequence(&self) -> Option<&[Node]> {
        match &self.value {
            NodeValue::Sequence(items) => Some(items),
            _ => None,
        }
    }

    /// Is this a null scalar (`~`, `null`, empty)?
    pub fn is_null(&self) -> bool {
        self.as_scalar()
            .is_some_and(|s| s.resolve() == Resolved::Null)
    }

    /// Mapping entries with merge keys applied and later duplicates winning; `None` if
    /// this is not a mapping.
    pub fn merged_entries(&self) -> Option<Vec<(&Node, &Node)>> {
        match &self.value {
            NodeValue::Mapping(_) => {
                let mut out: Vec<(&Node, &Node)> = Vec::new();
                collect_entries(self, &mut out);
                Some(out)
            }
            _ => None,
        }
    }

    /// Value of a mapping entry whose key is the string `key` (merge keys applied).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.merged_entries()?
            .into_iter()
            .find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
            .map(|(_, v)| v)
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> YamlError {
        YamlError::at(self.line, self.column, message)
    }

    /// The first mapping anywhere in this tree that writes one key twice, as an error at
    /// the second key naming the line of the first. yaml.v2 (and so KUDO) keeps the
    /// last value without a word, which hides a field written twice by mistake: callers
    /// that read files people write (operator.yaml, params.yaml) refuse it instead.
    /// Keys are compared as [`Node::to_json`] names them (`"a"` and `a` are one key);
    /// merge keys (`<<`) do not count, since an explicit key may override a merged one.
    pub fn check_unique_keys(&self) -> Result<(), YamlError> {
        match &self.value {
            NodeValue::Scalar(_) => Ok(()),
            NodeValue::Sequence(items) => items.iter().try_for_each(Node::check_unique_keys),
            NodeValue::Mapping(entries) => {
                let mut seen: HashMap<String, &Node> = HashMap::new();
                for (k, v) in entries {
                    if !is_merge_key(k)
                        && let Ok(name) = crate::json::key_string(k)
                        && let Some(first) = seen.insert(name.clone(), k)
                    {
                        return Err(k.error(format!(
                            "key {name:?} is written twice in this mapping (first on line {}); YAML would keep only the last value, so remove one",
                            first.line
                        )));
                    }
                    k.check_unique_keys()?;
                    v.check_unique_keys()?;
                }
                Ok(())
            }
        }
    }
}

fn is_merge_key(node: &Node) -> bool {
    node.as_scalar()
        .is_some_and(|s| s.tag.is_none() && s.style == ScalarStyle::Plain && s.text == "<<")
}

fn scalar_key_text(node: &Node) -> Option<&str> {
    node.as_scalar().map(|s| s.text.as_str())
}

fn push_entry<'a>(out: &mut Vec<(&'a Node, &'a Node)>, k: &'a Node, v: &'a Node, replace: bool) {
    let text = scalar_key_text(k);
    if let Some(pos) = out
        .iter()
        .position(|(ek, _)| text.is_some() && scalar_key_text(ek) == text)
    {
        if replace {
            out[pos] = (k, v);
        }
    } else {
        out.push((k, v));
    }
}

/// Explicit keys win over merged ones wherever `<<` appears; among several merged maps
/// the first one listed wins (YAML merge-key spec).
fn collect_entries<'a>(node: &'a Node, out: &mut Vec<(&'a Node, &'a Node)>) {
    let NodeValue::Mapping(entries) = &node.value else {
        return;
    };
    let mut merged: Vec<(&Node, &Node)> = Vec::new();
    for (k, v) in entries {
        if is_merge_key(k) {
            match &v.value {
                NodeValue::Mapping(_) => collect_entries_into(v, &mut merged),
                NodeValue::Sequence(items) => {
                    for item in items {
                        collect_entries_into(item, &mut merged);
                    }
                }
                NodeValue::Scalar(_) => {}
            }
        } else {
            push_entry(out, k, v, true);
        }
    }
    for (k, v) in merged {
        push_entry(out, k, v, false);
    }
}

fn collect_entries_into<'a>(node: &'a Node, merged: &mut Vec<(&'a Node, &'a Node)>) {
    let mut inner = Vec::new();
    collect_entries(node, &mut inner);
    for (k, v) in inner {
        push_entry(merged, k, v, false);
    }
}

/// Parse every document of a YAML stream into node trees.
pub fn parse_nodes(text: &str) -> Result<Vec<Node>, YamlError> {
    let mut builder = Builder {
        parser: Parser::new_from_str(text),
        anchors: HashMap::new(),
        nodes: 0,
    };
    builder.stream()
}

struct Builder<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    anchors: HashMap<usize, (Node, usize)>,
    nodes: usize,
}

fn scan_error(e: &ScanError) -> YamlError {
    let m = e.marker();
    YamlError::at(m.line(), m.col() + 1, e.info().to_string())
}

fn position(span: &Span) -> (usize, usize) {
    (span.start.line(), span.start.col() + 1)
}

fn style_of(style: saphyr_parser::ScalarStyle) -> ScalarStyle {
    match style {
        saphyr_parser::ScalarStyle::Plain => ScalarStyle::Plain,
        saphyr_parser::ScalarStyle::SingleQuoted => ScalarStyle::SingleQuoted,
        saphyr_parser::ScalarStyle::DoubleQuoted => ScalarStyle::DoubleQuoted,
        saphyr_parser::ScalarStyle::Literal => ScalarStyle::Literal,
        saphyr_parser::ScalarStyle::Folded => ScalarStyle::Folded,
    }
}

fn count(node: &Node) -> usize {
    match &node.value {
        NodeValue::Scalar(_) => 1,
        NodeValue::Sequence(items) => 1 + items.iter().map(count).sum::<usize>(),
        NodeValue::Mapping(entries) => {
            1 + entries
                .iter()
                .map(|(k, v)| count(k) + count(v))
                .sum::<usize>()
        }
    }
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), YamlError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(scan_error(&e)),
            None => Err(YamlError::at(0, 0, "unexpected end of YAML stream")),
        }
    }

    fn stream(&mut self) -> Result<Vec<Node>, YamlError> {
        let mut docs = Vec::new();
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::StreamStart | Event::Nothing | Event::DocumentEnd => {}
                Event::StreamEnd => return Ok(docs),
                Event::DocumentStart(_) => {
                    // Anchors are scoped to their document.
                    self.anchors.clear();
                    let (ev, span) = self.next()?;
                    let node = self.node(ev, span, 0)?;
                    docs.push(node);
                }
                other => {
                    let (line, column) = position(&span);
                    return Err(YamlError::at(
                        line,
                        column,
                        format!("unexpected YAML event {other:?} outside a document"),
                    ));
                }
            }
        }
    }

    fn register(&mut self, anchor: usize, node: &Node) {
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), count(node)));
        }
    }

    fn bump(&mut self, n: usize, line: usize, column: usize) -> Result<(), YamlError> {
        self.nodes += n;
        if self.nodes > MAX_NODES {
            return Err(YamlError::at(
                line,
                column,
                format!(
                    "document expands to more than {MAX_NODES} nodes (alias expansion?); simplify the YAML"
                ),
            ));
        }
        Ok(())
    }

    fn node(&mut self, ev: Event<'a>, span: Span, depth: usize) -> Result<Node, YamlError> {
        let (line, column) = position(&span);
        if depth > MAX_DEPTH {
            return Err(YamlError::at(
                line,
                column,
                format!("YAML nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                self.bump(1, line, column)?;
                let node = Node {
                    value: NodeValue::Scalar(Scalar {
                        text: text.into_owned(),
                        style: style_of(style),
                        tag: tag.map(|t| format!("{}{}", t.handle, t.suffix)),
                    }),
                    line,
                    column,
                };
                self.register(anchor, &node);
                Ok(node)
            }
            Event::Alias(id) => {
                let Some(size) = self.anchors.get(&id).map(|(_, size)| *size) else {
                    return Err(YamlError::at(line, column, "alias to an unknown anchor"));
                };
                // Count before copying so that an alias bomb stops before it allocates.
                self.bump(size, line, column)?;
                let node = self.anchors.get(&id).map(|(n, _)| n.clone());
                node.ok_or_else(|| YamlError::at(line, column, "alias to an unknown anchor"))
            }
            Event::SequenceStart(anchor, _) => {
                self.bump(1, line, column)?;
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(ev, span, depth + 1)?);
                }
                let node = Node {
                    value: NodeValue::Sequence(items),
                    line,
                    column,
                };
                self.register(anchor, &node);
                Ok(node)
            }
            Event::MappingStart(anchor, _) => {
                self.bump(1, line, column)?;
                let mut entries = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::MappingEnd) {
                        break;
                    }
                    let key = self.node(ev, span, depth + 1)?;
                    let (ev, span) = self.next()?;
                    let value = self.node(ev, span, depth + 1)?;
                    entries.push((key, value));
                }
                let node = Node {
                    value: NodeValue::Mapping(entries),
                    line,
                    column,
                };
                self.register(anchor, &node);
                Ok(node)
            }
            other => Err(YamlError::at(
                line,
                column,
                format!("unexpected YAML event {other:?}"),
            )),
        }
    }
}
