//! Typed access to YAML node fields with errors that name the file, field and position.

use kudo_yaml::{Node, NodeValue, Resolved};

use crate::error::PackageError;

/// A node inside a named file, with the dotted path that led to it.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub file: &'a str,
    pub node: &'a Node,
}

impl<'a> At<'a> {
    pub fn new(file: &'a str, node: &'a Node) -> Self {
        At { file, node }
    }

    pub fn err(&self, field: &str, message: impl Into<String>) -> PackageError {
        PackageError::invalid(self.file, Some(self.node), field, message)
    }

    /// A present, non-null child.
    pub fn get(&self, key: &str) -> Option<At<'a>> {
        self.node
            .get(key)
            .filter(|n| !n.is_null())
            .map(|node| At::new(self.file, node))
    }

    pub fn expect_mapping(&self, field: &str) -> Result<(), PackageError> {
        match self.node.value {
            NodeValue::Mapping(_) => Ok(()),
            _ => Err(self.err(field, "expected a mapping (`key: value` lines)")),
        }
    }

    /// Any scalar as its literal text (`appVersion: 5.7` reads "5.7").
    pub fn text(&self, field: &str) -> Result<String, PackageError> {
        match &self.node.value {
            NodeValue::Scalar(s) => Ok(s.text.clone()),
            _ => Err(self.err(
                field,
                "expected a single value (string), found a list or mapping",
            )),
        }
    }

    pub fn opt_text(&self, key: &str, field: &str) -> Result<Option<String>, PackageError> {
        self.get(key).map(|n| n.text(field)).transpose()
    }

    pub fn text_or_empty(&self, key: &str, field: &str) -> Result<String, PackageError> {
        Ok(self.opt_text(key, field)?.unwrap_or_default())
    }

    pub fn opt_bool(&self, key: &str, field: &str) -> Result<Option<bool>, PackageError> {
        let Some(n) = self.get(key) else {
            return Ok(None);
        };
        match n.node.as_scalar().map(|s| s.resolve()) {
            Some(Resolved::Bool(b)) => Ok(Some(b)),
            _ => Err(n.err(field, "expected true or false")),
        }
    }

    pub fn list(&self, key: &str, field: &str) -> Result<Vec<At<'a>>, PackageError> {
        let Some(n) = self.get(key) else {
            return Ok(Vec::new());
        };
        match n.node.as_sequence() {
            Some(items) => Ok(items.iter().map(|i| At::new(self.file, i)).collect()),
            None => Err(n.err(field, "expected a list (`- item` lines)")),
        }
    }

    pub fn string_list(&self, key: &str, field: &str) -> Result<Vec<String>, PackageError> {
        self.list(key, field)?
            .iter()
            .enumerate()
            .map(|(i, n)| n.text(&format!("{field}[{i}]")))
            .collect()
    }

    /// Mapping entries with string keys, in source order.
    pub fn entries(&self, field: &str) -> Result<Vec<(String, At<'a>)>, PackageError> {
        let Some(entries) = self.node.merged_entries() else {
            return Err(self.err(field, "expected a mapping (`name: ...` entries)"));
        };
        entries
            .into_iter()
            .map(|(k, v)| {
                let key = At::new(self.file, k).text(field)?;
                Ok((key, At::new(self.file, v)))
            })
            .collect()
    }
}
