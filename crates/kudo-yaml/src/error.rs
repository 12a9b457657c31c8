/// A YAML problem at a 1-based line and column of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct YamlError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl YamlError {
    pub(crate) fn at(line: usize, column: usize, message: impl Into<String>) -> Self {
        YamlError {
            line,
            column,
            message: message.into(),
        }
    }
}
