//! The bodies of the fuzz targets, in a library so that each `fuzz_targets/*.rs` stays
//! a one-line wrapper and the same code can be driven by anything that has bytes.
//!
//! Every function here must return normally for every input: an `Err` from the code
//! under test is the expected outcome for broken input, a panic, a hang or a memory
//! blow-up is a bug. The few assertions check properties the callers rely on
//! (a value that decodes encodes again, and decodes to itself).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use arbitrary::Arbitrary;
use kudo_package::{Files, Origin, Package};
use tfplugin::{Type, Value};

/// Separates the files in `package_files` inputs; a byte that YAML text never needs.
const FILE_SEPARATOR: u8 = 0;

fn vars() -> kudo_template::Vars {
    let mut params = BTreeMap::new();
    params.insert("NAME".to_string(), serde_json::json!("zk"));
    params.insert("REPLICAS".to_string(), serde_json::json!("3"));
    params.insert("ENABLED".to_string(), serde_json::json!("true"));
    params.insert("LIST".to_string(), serde_json::json!(["a", 1, {"k": "v"}]));
    params.insert(
        "MAP".to_string(),
        serde_json::json!({"key": "value", "n": 2, "nested": {"x": [true]}}),
    );
    let mut pipes = BTreeMap::new();
    pipes.insert("cert".to_string(), "pipe-cert".to_string());
    kudo_template::Vars {
        operator_name: "zookeeper".to_string(),
        name: "zk".to_string(),
        namespace: "default".to_string(),
        operator_version: "0.3.0".to_string(),
        app_version: "3.4.14".to_string(),
        plan_name: "deploy".to_string(),
        phase_name: "zookeeper".to_string(),
        step_name: "deploy".to_string(),
        params,
        pipes,
    }
}

const KEY_GENERATORS: &[&str] = &[
    "genPrivateKey",
    "genCA",
    "genSelfSignedCert",
    "genSignedCert",
];

/// Render `data` as a template; what renders goes through the same splitting and YAML
/// reading as the engine's apply.
pub fn template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // RSA key generation (4096 bits for genPrivateKey, 2048 for certificates) takes
    // seconds unoptimised and instrumented: correct, deterministic and bounded, but
    // every input calling it would count as a hang. Everything else is fuzzed.
    if KEY_GENERATORS.iter().any(|f| text.contains(f)) {
        return;
    }
    if let Ok(out) = kudo_template::render("fuzz.yaml", text, &vars()) {
        for doc in kudo_template::split_documents(&out) {
            let _ = kudo_yaml::to_json_documents(&doc);
        }
    }
}

/// Parse `data` as YAML: nodes, JSON, and the emitter on what converts.
pub fn yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = kudo_yaml::parse_nodes(text);
    if let Ok(docs) = kudo_yaml::to_json_documents(text) {
        for doc in &docs {
            let emitted = kudo_yaml::to_yaml(doc);
            // What we emit we must read back, as the same value: packages that the
            // provider writes (`create_tgz`, state) are read by this same loader.
            match kudo_yaml::to_json(&emitted) {
                Ok(back) => assert!(
                    same_value(&back, doc),
                    "emitted YAML reads back differently:\n{emitted}\n{back:?}\n{doc:?}"
                ),
                Err(e) => panic!("emitted YAML does not parse: {e}\n{emitted}"),
            }
        }
    }
}

/// JSON equality with numbers compared by value: the emitter writes a whole float the
/// way Go's `toYaml` does (through JSON, `2671685606942529000`), which reads back as an
/// integer of the same value.
fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Number(x), J::Number(y)) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// Split `data` at NUL bytes into operator.yaml, params.yaml and one template, then
/// load, verify and compute the parameter defaults as an install does.
pub fn package_files(data: &[u8]) {
    let mut parts = data.splitn(3, |b| *b == FILE_SEPARATOR);
    let mut files = Files::new();
    for name in ["operator.yaml", "params.yaml", "templates/fuzz.yaml"] {
        if let Some(part) = parts.next() {
            files.insert(name.to_string(), part.to_vec());
        }
    }
    check_package_files(&files, "fuzz/");
}

fn check_package_files(files: &Files, label: &str) {
    let Ok(pkg) = Package::from_files(files, label, Origin::Dir(PathBuf::from("fuzz"))) else {
        return;
    };
    exercise_package(&pkg);
}

fn exercise_package(pkg: &Package) {
    let _ = kudo_package::verify(pkg);
    let _ = kudo_package::verify_extended(pkg);
    let _ = pkg.provided_apis();
    if let Ok(effective) = pkg.effective_params(&BTreeMap::new()) {
        let _ = pkg.template_params(&effective);
    }
}

/// `data` as an archive (gzip'd or plain tar), then as a package.
pub fn package_tgz(data: &[u8]) {
    if let Ok(files) = kudo_package::read_tgz(data, "fuzz.tgz") {
        check_package_files(&files, "fuzz.tgz:");
    }
}

/// One entry of a package folder built by [`package_dir`].
#[derive(Debug, Arbitrary)]
pub enum Entry {
    File {
        path: Vec<Name>,
        content: Vec<u8>,
    },
    Dir {
        path: Vec<Name>,
    },
    /// A symbolic link; `target` is written as given (relative, possibly with `..`).
    Symlink {
        path: Vec<Name>,
        target: String,
    },
    /// A hard link to the entry at this index (if it is a file by then).
    HardLink {
        path: Vec<Name>,
        to: u8,
    },
}

/// A path component, drawn mostly from the names a package uses so that the fuzzer
/// reaches the loader's interesting paths quickly.
#[derive(Debug, Arbitrary)]
pub enum Name {
    Operator,
    Params,
    Templates,
    Yaml(u8),
    Other(String),
}

impl Name {
    fn text(&self) -> String {
        match self {
            Name::Operator => "operator.yaml".to_string(),
            Name::Params => "params.yaml".to_string(),
            Name::Templates => "templates".to_string(),
            Name::Yaml(n) => format!("t{n}.yaml"),
            Name::Other(s) => s.clone(),
        }
    }
}

#[derive(Debug, Arbitrary)]
pub struct Tree {
    pub entries: Vec<Entry>,
}

/// A relative path inside the package folder, or `None` for a name that could leave
/// it (the harness must never write outside its temporary folder).
fn inside(root: &Path, path: &[Name]) -> Option<PathBuf> {
    if path.is_empty() || path.len() > 64 {
        return None;
    }
    let mut out = root.to_path_buf();
    for name in path {
        let text = name.text();
        let rel = Path::new(&text);
        let mut comps = rel.components();
        match (comps.next(), comps.next()) {
            (Some(Component::Normal(c)), None) if c.len() < 200 => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

/// Build `tree` in a temporary folder and load it as a package.
pub fn package_dir(tree: &Tree) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path();
    let mut made: Vec<Option<PathBuf>> = Vec::new();
    for entry in &tree.entries {
        let created = match entry {
            Entry::File { path, content } => inside(root, path).filter(|p| {
                p.parent()
                    .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
                    && std::fs::write(p, content).is_ok()
            }),
            Entry::Dir { path } => {
                inside(root, path).filter(|p| std::fs::create_dir_all(p).is_ok())
            }
            Entry::Symlink { path, target } => inside(root, path).filter(|p| {
                !target.contains('\0')
                    && p.parent()
                        .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
                    && std::os::unix::fs::symlink(target, p).is_ok()
            }),
            Entry::HardLink { path, to } => {
                let source = made.get(usize::from(*to)).cloned().flatten();
                match (source, inside(root, path)) {
                    (Some(src), Some(p)) if src.is_file() => Some(p).filter(|p| {
                        p.parent()
                            .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
                            && std::fs::hard_link(&src, p).is_ok()
                    }),
                    _ => None,
                }
            }
        };
        made.push(created);
    }
    if let Ok(pkg) = Package::load_dir(root) {
        exercise_package(&pkg);
    }
}

/// Types tried when the input does not start with a type of its own.
fn fixed_type(selector: u8) -> Type {
    let object = Type::object([
        ("name", Type::String),
        ("count", Type::Number),
        ("enabled", Type::Bool),
        ("values", Type::map(Type::String)),
        ("any", Type::Dynamic),
    ]);
    match selector % 8 {
        0 => Type::Dynamic,
        1 => object.clone(),
        2 => Type::list(object),
        3 => Type::set(Type::String),
        4 => Type::Tuple(vec![Type::Number, Type::Dynamic, Type::set(Type::Number)]),
        5 => Type::map(Type::Dynamic),
        6 => Type::Number,
        _ => Type::list(Type::list(Type::Dynamic)),
    }
}

/// The first byte chooses the type: odd reads a cty type JSON up to the first NUL,
/// even picks a fixed one. The rest is decoded as msgpack and as JSON; what decodes
/// is encoded again and must decode to the same value.
pub fn codec(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (ty, value) = if selector % 2 == 1 {
        let Some(nul) = rest.iter().position(|b| *b == 0) else {
            return;
        };
        let Ok(ty) = Type::from_json_bytes(&rest[..nul]) else {
            return;
        };
        (ty, &rest[nul + 1..])
    } else {
        (fixed_type(selector / 2), rest)
    };
    let _ = ty.to_json_bytes();
    if let Ok(v) = Value::from_msgpack(value, &ty) {
        let encoded = v
            .to_msgpack(&ty)
            .unwrap_or_else(|e| panic!("decoded msgpack value does not encode: {e}: {v:?}"));
        let again = Value::from_msgpack(&encoded, &ty)
            .unwrap_or_else(|e| panic!("encoded msgpack does not decode: {e}: {v:?}"));
        assert_eq!(again, v, "msgpack round trip changed the value");
        let _ = v.to_json(&ty);
    }
    if let Ok(v) = Value::from_json_bytes(value, &ty) {
        if let Ok(json) = v.to_json(&ty) {
            let again = Value::from_json(&json, &ty)
                .unwrap_or_else(|e| panic!("encoded JSON does not decode: {e}: {json}"));
            assert_eq!(again, v, "JSON round trip changed the value");
        }
        let _ = v.to_msgpack(&ty);
    }
}
