//! Repository indexes (`index.yaml`): reading, KUDO's ordering, matching, and writing.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::error::PackageError;
use crate::model::Maintainer;
use crate::versions::cmp_desc;

/// One package version listed in an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub name: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    pub description: Option<String>,
    pub maintainers: Vec<Maintainer>,
    /// Tried in order; may be relative to the index URL.
    pub urls: Vec<String>,
    /// Hex sha256 of the `.tgz`.
    pub digest: Option<String>,
}

/// A parsed `index.yaml`; each name's versions are kept in KUDO's order (newest first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Index {
    pub entries: std::collections::BTreeMap<String, Vec<IndexEntry>>,
    pub generated: Option<String>,
}

/// KUDO's order: appVersion descending, then operatorVersion descending (semantic
/// versions; unparsable ones last).
pub fn sort_entries(entries: &mut [IndexEntry]) {
    entries.sort_by(|a, b| {
        cmp_desc(
            a.app_version.as_deref().unwrap_or(""),
            b.app_version.as_deref().unwrap_or(""),
        )
        .then_with(|| cmp_desc(&a.operator_version, &b.operator_version))
    });
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn index_raw_text(text_in: &str, name: &str) -> Result<Vec<kudo_yaml::Node>, PackageError> {
    kudo_yaml::parse_nodes(text_in).map_err(|e| PackageError::yaml(name, e))
}

/// Parse an index. `source_name` (file or URL) is used in error messages.
pub fn parse_index(text_in: &str, source_name: &str) -> Result<Index, PackageError> {
    let docs = index_raw_text(text_in, source_name)?;
    let Some(root) = docs.first() else {
        return Ok(Index::default());
    };
    let bad = |node: &kudo_yaml::Node, field: &str, msg: String| {
        PackageError::invalid(source_name, Some(node), field, msg)
    };
    if let Some(v) = root.get("apiVersion").and_then(|n| n.as_scalar())
        && v.text != "v1"
    {
        return Err(bad(
            root,
            "apiVersion",
            format!("unsupported index apiVersion {:?}; use v1", v.text),
        ));
    }
    let mut index = Index {
        generated: root
            .get("generated")
            .and_then(|n| n.as_scalar())
            .map(|s| s.text.clone()),
        ..Index::default()
    };
    let Some(entries_node) = root.get("entries") else {
        return Ok(index);
    };
    let Some(pairs) = entries_node.merged_entries() else {
        return Err(bad(
            entries_node,
            "entries",
            "expected a map of operator name to versions".into(),
        ));
    };
    for (key, list) in pairs {
        let name = key.as_scalar().map(|s| s.text.clone()).unwrap_or_default();
        let Some(items) = list.as_sequence() else {
            return Err(bad(
                list,
                &format!("entries.{name}"),
                "expected a list of versions".into(),
            ));
        };
        let mut versions = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let f = format!("entries.{name}[{i}]");
            // Scalars here are read with their literal text (`appVersion: 5.7`).
            let get = |k: &str| {
                item.get(k)
                    .filter(|n| !n.is_null())
                    .and_then(|n| n.as_scalar())
                    .map(|s| s.text.clone())
            };
            let operator_version = get("operatorVersion").ok_or_else(|| {
                bad(
                    item,
                    &format!("{f}.operatorVersion"),
                    "missing operatorVersion".into(),
                )
            })?;
            let urls: Vec<String> = item
                .get("urls")
                .and_then(|n| n.as_sequence())
                .map(|l| {
                    l.iter()
                        .filter_map(|u| u.as_scalar().map(|s| s.text.clone()))
                        .collect()
                })
                .unwrap_or_default();
            if urls.is_empty() {
                return Err(bad(
                    item,
                    &format!("{f}.urls"),
                    "no download URL; add `urls: [...]`".into(),
                ));
            }
            let maintainers = item
                .get("maintainers")
                .and_then(|n| n.to_json().ok())
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|m| Maintainer {
                    name: m.get("name").and_then(text).unwrap_or_default(),
                    email: m.get("email").and_then(text).unwrap_or_default(),
                })
                .collect();
            versions.push(IndexEntry {
                name: get("name").unwrap_or_else(|| name.clone()),
                operator_version,
                app_version: get("appVersion").filter(|s| !s.is_empty()),
                description: get("description"),
                maintainers,
                urls,
                digest: get("digest").map(|d| d.trim_start_matches("sha256:").to_ascii_lowercase()),
            });
        }
        sort_entries(&mut versions);
        index.entries.insert(name, versions);
    }
    Ok(index)
}

impl Index {
    /// Newest entry for `name` matching the optional versions exactly.
    pub fn find(
        &self,
        name: &str,
        app_version: Option<&str>,
        operator_version: Option<&str>,
    ) -> Option<&IndexEntry> {
        self.entries.get(name)?.iter().find(|e| {
            app_version.is_none_or(|a| e.app_version.as_deref() == Some(a))
                && operator_version.is_none_or(|o| e.operator_version == o)
        })
    }

    /// Why [`Index::find`] found nothing, for the error: the versions the index does
    /// hold of `name` (`1.3.2 (app 2.5.1)`, newest first), or that it has no such
    /// package, with the closest name it has when one is a likely typo.
    pub fn why_not_found(&self, name: &str) -> String {
        match self.entries.get(name) {
            Some(versions) if !versions.is_empty() => {
                let listed: Vec<String> = versions
                    .iter()
                    .take(MAX_LISTED_VERSIONS)
                    .map(|e| match &e.app_version {
                        Some(app) => format!("{} (app {app})", e.operator_version),
                        None => e.operator_version.clone(),
                    })
                    .collect();
                let more = versions.len().saturating_sub(MAX_LISTED_VERSIONS);
                let tail = if more > 0 {
                    format!(" and {more} older")
                } else {
                    String::new()
                };
                format!(
                    "it has {name} {}{tail}; without a version the newest is taken",
                    listed.join(", ")
                )
            }
            _ => {
                let closest = self
                    .entries
                    .keys()
                    .map(|k| (strsim::osa_distance(name, k), k))
                    .filter(|(d, k)| *d <= (k.len() / 3).max(1))
                    .min();
                match closest {
                    Some((_, k)) => format!("it has no package {name}; did you mean {k}?"),
                    None => format!("it has no package {name}"),
                }
            }
        }
    }
}

/// How many versions a "not found" error lists before "and N older".
const MAX_LISTED_VERSIONS: usize = 5;

fn entry_json(e: &IndexEntry) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(e.name));
    m.insert("operatorVersion".into(), json!(e.operator_version));
    if let Some(a) = &e.app_version {
        m.insert("appVersion".into(), json!(a));
    }
    if let Some(d) = &e.description
        && !d.is_empty()
    {
        m.insert("description".into(), json!(d));
    }
    if !e.maintainers.is_empty() {
        let list: Vec<Value> = e
            .maintainers
            .iter()
            .map(|x| json!({"name": x.name, "email": x.email}))
            .collect();
        m.insert("maintainers".into(), Value::Array(list));
    }
    m.insert("urls".into(), json!(e.urls));
    if let Some(d) = &e.digest {
        m.insert("digest".into(), json!(d));
    }
    Value::Object(m)
}

/// Render an index as YAML.
pub fn write_index(index: &Index) -> String {
    let entries: Map<String, Value> = index
        .entries
        .iter()
        .map(|(k, list)| {
            (
                k.clone(),
                Value::Array(list.iter().map(entry_json).collect()),
            )
        })
        .collect();
    let mut root = Map::new();
    root.insert("apiVersion".into(), json!("v1"));
    root.insert("entries".into(), Value::Object(entries));
    if let Some(g) = &index.generated {
        root.insert("generated".into(), json!(g));
    }
    kudo_yaml::to_yaml(&Value::Object(root))
}

/// Build `index.yaml` for every `*.tgz` in `dir`. URLs are `<base_url>/<file>` or the
/// bare file name (relative to the index) without a base URL.
pub fn index_dir(dir: &Path, base_url: Option<&str>) -> Result<String, PackageError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| PackageError::io(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tgz"))
        .collect();
    files.sort();
    let mut index = Index {
        generated: Some(now_rfc3339()),
        ..Index::default()
    };
    for path in files {
        let bytes = std::fs::read(&path).map_err(|e| PackageError::io(&path, e))?;
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let pkg = crate::tgz::package_from_tgz(
            &bytes,
            &path.display().to_string(),
            crate::model::Origin::Memory,
        )?;
        let url = match base_url {
            Some(b) => format!("{}/{}", b.trim_end_matches('/'), file_name),
            None => file_name,
        };
        let op = pkg.operator;
        index
            .entries
            .entry(op.name.clone())
            .or_default()
            .push(IndexEntry {
                name: op.name,
                operator_version: op.operator_version,
                app_version: op.app_version,
                description: Some(op.description).filter(|d| !d.is_empty()),
                maintainers: op.maintainers,
                urls: vec![url],
                digest: Some(crate::tgz::sha256_hex(&bytes)),
            });
    }
    for list in index.entries.values_mut() {
        sort_entries(list);
    }
    Ok(write_index(&index))
}

/// UTC now as RFC 3339 (the index `generated` field) without a date-time dependency.
fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (proleptic Gregorian), Howard Hinnant's well-known algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(app: Option<&str>, ov: &str) -> IndexEntry {
        IndexEntry {
            name: "x".into(),
            operator_version: ov.into(),
            app_version: app.map(str::to_string),
            description: None,
            maintainers: vec![],
            urls: vec!["u".into()],
            digest: None,
        }
    }

    #[test]
    fn kudo_sort_order() {
        let mut v = vec![
            e(Some("1.0.0"), "0.1.0"),
            e(Some("junk"), "9.9.9"),
            e(Some("2.0.0"), "0.1.0"),
            e(Some("2.0.0"), "0.10.0"),
            e(Some("2.0.0"), "0.9.0"),
        ];
        sort_entries(&mut v);
        let got: Vec<_> = v
            .iter()
            .map(|x| {
                format!(
                    "{}/{}",
                    x.app_version.as_deref().unwrap_or(""),
                    x.operator_version
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "2.0.0/0.10.0",
                "2.0.0/0.9.0",
                "2.0.0/0.1.0",
                "1.0.0/0.1.0",
                "junk/9.9.9"
            ]
        );
    }

    #[test]
    fn parse_and_find() {
        let text = "apiVersion: v1\nentries:\n  mysql:\n  - name: mysql\n    operatorVersion: 0.1.0\n    appVersion: 5.7\n    urls: [a.tgz]\n    digest: ABC\n  - name: mysql\n    operatorVersion: 0.2.0\n    appVersion: 5.7\n    urls: [b.tgz]\ngenerated: 2020-01-01T00:00:00Z\n";
        let idx = parse_index(text, "index.yaml").unwrap();
        assert_eq!(
            idx.find("mysql", None, None).unwrap().operator_version,
            "0.2.0"
        );
        let old = idx.find("mysql", Some("5.7"), Some("0.1.0")).unwrap();
        assert_eq!(old.digest.as_deref(), Some("abc"));
        assert!(idx.find("mysql", Some("8.0"), None).is_none());
        let again = parse_index(&write_index(&idx), "again").unwrap();
        assert_eq!(again, idx);
    }

    #[test]
    fn rfc3339_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20"));
    }
}
