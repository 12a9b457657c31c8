//! KUDO's split of a rendered template into manifests.

/// Split on `"\n---"` as KUDO does (the separator line's rest is discarded with it
/// only up to the newline KUDO keeps), dropping documents that are empty or hold
/// only comments and blank lines.
pub fn split_documents(rendered: &str) -> Vec<String> {
    rendered
        .split("\n---")
        .filter(|doc| !is_blank_or_comments(doc))
        .map(str::to_string)
        .collect()
}

fn is_blank_or_comments(doc: &str) -> bool {
    doc.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_drops_empty_and_comment_only() {
        let docs = split_documents("a: 1\n---\n# only a comment\n---\n\n---\nb: 2\n");
        assert_eq!(docs, vec!["a: 1".to_string(), "\nb: 2\n".to_string()]);
    }

    #[test]
    fn leading_separator_and_single_doc() {
        assert_eq!(
            split_documents("---\nkind: A\n"),
            vec!["---\nkind: A\n".to_string()]
        );
        assert_eq!(split_documents("kind: A"), vec!["kind: A".to_string()]);
        assert!(split_documents("").is_empty());
        assert!(split_documents("  \n# x\n").is_empty());
    }
}
