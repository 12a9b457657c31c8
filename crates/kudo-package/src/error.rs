use std::path::PathBuf;

/// Everything that can go wrong while reading, resolving or fetching a package.
/// Messages name the file (and line/column where known), the field, and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("{path}: {message}")]
    Io {
        path: PathBuf,
        message: String,
        #[source]
        source: Option<std::io::Error>,
    },
    #[error("{file}:{line}:{column}: invalid YAML: {message}")]
    Yaml {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A field with a wrong or missing value. `line` is 0 when unknown.
    #[error("{}: field `{field}`: {message}", location(file, *line, *column))]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        field: String,
        message: String,
    },
    /// Problems of a package archive (`.tgz`).
    #[error("{archive}: {message}")]
    Archive { archive: String, message: String },
    /// Problems finding or fetching a package through a repository or URL.
    #[error("{source_name}: {message}")]
    Source {
        source_name: String,
        message: String,
    },
    /// No repository's index could be read, so the package was never looked up: a
    /// reachability problem, not a wrong name or version.
    #[error("{wanted}: no repository could be read ({problems}), so it was not looked up")]
    Unreachable { wanted: String, problems: String },
    #[error(
        "package {package}: digest mismatch for {url} from repository {repository}: index says sha256 {expected}, downloaded bytes have {actual}; fix the repository index or republish the package"
    )]
    Digest {
        package: String,
        repository: String,
        url: String,
        expected: String,
        actual: String,
    },
    /// `verify` found errors; each line is one finding (`error: <file>: <message>`).
    #[error("package {package} failed verification:\n{}", .findings.join("\n"))]
    Verify {
        package: String,
        findings: Vec<String>,
    },
}

fn location(file: &str, line: usize, column: usize) -> String {
    if line == 0 {
        file.to_string()
    } else {
        format!("{file}:{line}:{column}")
    }
}

impl PackageError {
    /// True when the package could not be looked up because no repository answered
    /// (what to do is make one reachable, not fix the package or its name).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, PackageError::Unreachable { .. })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        PackageError::Io {
            message: format!("cannot read: {source}"),
            path,
            source: Some(source),
        }
    }

    pub(crate) fn yaml(file: &str, e: kudo_yaml::YamlError) -> Self {
        PackageError::Yaml {
            file: file.to_string(),
            line: e.line,
            column: e.column,
            message: e.message,
        }
    }

    pub(crate) fn invalid(
        file: &str,
        node: Option<&kudo_yaml::Node>,
        field: &str,
        message: impl Into<String>,
    ) -> Self {
        PackageError::Invalid {
            file: file.to_string(),
            line: node.map_or(0, |n| n.line),
            column: node.map_or(0, |n| n.column),
            field: field.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn archive(archive: &str, message: impl Into<String>) -> Self {
        PackageError::Archive {
            archive: archive.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn source(source_name: &str, message: impl Into<String>) -> Self {
        PackageError::Source {
            source_name: source_name.to_string(),
            message: message.into(),
        }
    }
}

/// A problem with one parameter value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter {parameter}: {message}")]
pub struct ParamError {
    pub parameter: String,
    pub message: String,
}
