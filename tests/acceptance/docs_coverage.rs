//! Every schema attribute has a description and an entry in the Registry docs, so the
//! docs cannot silently fall behind the provider.

use std::path::Path;

use terraform_provider_kudo::provider::schema;
use tfplugin::{Attribute, Block, Provider, Type};

fn doc(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// Field names of the objects an attribute of type `ty` holds.
fn object_fields(ty: &Type) -> Vec<&str> {
    match ty {
        Type::Object(fields) => fields.keys().map(String::as_str).collect(),
        Type::List(t) | Type::Set(t) | Type::Map(t) => object_fields(t),
        _ => Vec::new(),
    }
}

/// The list item starting with `entry`, with the indented lines that continue it.
fn entry_text(text: &str, entry: &str) -> Option<String> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(entry));
    let first = lines.next()?;
    let indent = first.len() - first.trim_start().len();
    let rest =
        lines.take_while(|l| l.len() - l.trim_start().len() > indent && !l.trim().is_empty());
    Some(
        std::iter::once(first)
            .chain(rest)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Names of attributes and nested blocks that are missing a description or a
/// "- `name`" line in `text`, and object fields that line does not name.
fn missing(block: &Block, text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for a in &block.attributes {
        if a.description.trim().is_empty() {
            out.push(format!("{prefix}{}: no description in the schema", a.name));
        }
        let entry = format!("- `{}`", a.name);
        match entry_text(text, &entry) {
            None => out.push(format!("{prefix}{}: no entry in the docs", a.name)),
            Some(doc) => out.extend(
                object_fields(&a.ty)
                    .into_iter()
                    .filter(|f| !doc.contains(&format!("`{f}`")))
                    .map(|f| format!("{prefix}{}.{f}: not named in the docs entry", a.name)),
            ),
        }
        if let Some(nested) = &a.nested {
            out.extend(missing_nested(
                &nested.attributes,
                text,
                &format!("{prefix}{}.", a.name),
            ));
        }
    }
    for b in &block.blocks {
        if !text.contains(&format!("`{}`", b.type_name)) {
            out.push(format!("{prefix}{}: block not documented", b.type_name));
        }
        out.extend(missing(
            &b.block,
            text,
            &format!("{prefix}{}.", b.type_name),
        ));
    }
    out
}

/// Nested attributes (`kudo_package`'s `parameters`, `plans`, ...) at any depth that
/// have no description, or whose name the page does not mention.
fn missing_nested(attributes: &[Attribute], text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for a in attributes {
        if a.description.trim().is_empty() {
            out.push(format!("{prefix}{}: no description in the schema", a.name));
        }
        if !text.contains(&format!("`{}`", a.name)) {
            out.push(format!("{prefix}{}: not in the docs", a.name));
        }
        if let Some(nested) = &a.nested {
            out.extend(missing_nested(
                &nested.attributes,
                text,
                &format!("{prefix}{}.", a.name),
            ));
        }
    }
    out
}

#[test]
fn every_attribute_is_described_and_documented() {
    let schemas = terraform_provider_kudo::provider::KudoProvider::new().schemas();
    let mut problems = missing(&schemas.provider.block, &doc("docs/index.md"), "provider.");
    for (name, s) in &schemas.resources {
        let text = doc(&format!("docs/resources/{name}.md"));
        assert!(text.contains("## Example Usage"), "{name}: no example");
        assert!(text.contains("## Import"), "{name}: no import section");
        problems.extend(missing(&s.block, &text, &format!("{name}.")));
    }
    for (name, s) in &schemas.data_sources {
        let text = doc(&format!("docs/data-sources/{name}.md"));
        assert!(text.contains("## Example Usage"), "{name}: no example");
        problems.extend(missing(&s.block, &text, &format!("{name}.")));
    }
    // Blocks newer Terraform added: each documents its `config` (or its arguments).
    let newer = [
        ("docs/actions", &schemas.actions),
        ("docs/list-resources", &schemas.lists),
        ("docs/ephemeral-resources", &schemas.ephemerals),
    ];
    for (folder, kinds) in newer {
        for (name, s) in kinds.iter() {
            let text = doc(&format!("{folder}/{name}.md"));
            assert!(text.contains("## Example"), "{name}: no example");
            problems.extend(missing(&s.block, &text, &format!("{name}.")));
        }
    }
    assert!(
        problems.is_empty(),
        "documentation gaps:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_notices_a_gap() {
    let block = schema::instance().block;
    let gaps = missing(&block, "nothing documented here", "kudo_instance.");
    assert!(
        gaps.iter().any(|g| g.contains("kudo_instance.parameters")),
        "{gaps:?}"
    );
    let without_uid =
        "- `objects` (List of Object) each with `api_version`, `kind`, `namespace` and `name`.";
    let gaps = missing(&block, without_uid, "kudo_instance.");
    assert!(
        gaps.iter().any(|g| g.contains("kudo_instance.objects.uid")),
        "{gaps:?}"
    );
    // Nested attributes, at any depth.
    let schemas = terraform_provider_kudo::provider::KudoProvider::new().schemas();
    let package = &schemas.data_sources["kudo_package"].block;
    let gaps = missing(package, "- `parameters` (List of Object)", "kudo_package.");
    assert!(
        gaps.iter()
            .any(|g| g.contains("kudo_package.parameters.trigger")),
        "{gaps:?}"
    );
    assert!(
        gaps.iter()
            .any(|g| g.contains("kudo_package.plans.phases.steps.tasks")),
        "{gaps:?}"
    );
}

#[test]
fn every_function_has_a_page_naming_its_arguments() {
    let functions = terraform_provider_kudo::provider::KudoProvider::new().functions();
    assert!(!functions.is_empty());
    let mut problems = Vec::new();
    for (name, f) in &functions {
        if f.summary.trim().is_empty() || f.description.trim().is_empty() {
            problems.push(format!("{name}: no summary or description"));
        }
        let text = doc(&format!("docs/functions/{name}.md"));
        if !text.contains("## Example Usage") || !text.contains(&format!("provider::kudo::{name}("))
        {
            problems.push(format!("{name}: no example calling it"));
        }
        for p in &f.parameters {
            if p.description.trim().is_empty() {
                problems.push(format!("{name}({}): no description", p.name));
            }
            if !text.contains(&format!("`{}`", p.name)) {
                problems.push(format!("{name}({}): not in the docs page", p.name));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "documentation gaps:\n{}",
        problems.join("\n")
    );
}
