//! Hostile or damaged input must give an error, never a panic.

use std::path::PathBuf;

const SAMPLES: &[&str] = &[
    "a: 1\nb: [x, {y: z}]\nc: &c\n  d: |\n    text\n  e: 'q'\n<<: *c\nf: \"\\u00e9\"\n",
    "- !!str 1\n- ? complex\n  : key\n- {a: b, c: [1, 2]}\n--- \nplain\n...\n",
];

fn mutations(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for cut in 0..bytes.len() {
        out.push(String::from_utf8_lossy(&bytes[..cut]).into_owned());
    }
    for i in 0..bytes.len() {
        for b in [
            b'[', b'{', b':', b'-', b'&', b'*', b'!', b'|', b'"', b'\'', b'\t', b' ', b'\n', b'#',
            b'%', b'@',
        ] {
            let mut m = bytes.to_vec();
            m[i] = b;
            out.push(String::from_utf8_lossy(&m).into_owned());
        }
    }
    out
}

#[test]
fn mutated_documents_never_panic() {
    let mut texts: Vec<String> = SAMPLES.iter().map(|s| s.to_string()).collect();
    let fixtures = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/fixtures/operators/cowsay/operator.yaml"
    ));
    match std::fs::read_to_string(&fixtures) {
        Ok(t) => texts.push(t),
        Err(_) => eprintln!("skipping fixture sample: {} not found", fixtures.display()),
    }
    let mut errors = 0usize;
    for t in &texts {
        for m in mutations(t) {
            if kudo_yaml::to_json_documents(&m).is_err() {
                errors += 1;
            }
        }
    }
    // The mutations must actually exercise the error paths.
    assert!(errors > 100, "only {errors} mutated inputs failed to parse");
}

#[test]
fn deep_nesting_is_an_error() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let err = kudo_yaml::to_json(&deep).unwrap_err();
    assert!(
        err.message.contains("nested deeper") || err.message.contains("recursion limit"),
        "{err}"
    );
}

/// Broken YAML, table-driven: (what is wrong, text, line the error must name).
/// docs/testing.md ("Bad input, counted") counts the rows.
const BROKEN: &[(&str, &str, usize)] = &[
    ("tab indentation", "a:\n\tb: 1\n", 2),
    ("unclosed flow sequence", "a: 1\nb: [1, 2\n", 3),
    ("unclosed flow mapping", "a: {b: 1\n", 2),
    ("unclosed double quote", "a: 1\nb: \"text\n", 2),
    ("unclosed single quote", "a: 'text\n", 1),
    ("bad escape", "a: 1\nb: \"\\q\"\n", 2),
    ("undefined alias", "a: 1\nb: *nothing\n", 2),
    ("mapping after scalar", "a: 1\n  b: 2\n", 2),
    ("sequence in mapping", "a: 1\n- b\n", 2),
    ("mapping value in plain scalar", "a: b: c\n", 1),
    ("bad indentation of sequence", "a:\n  - 1\n - 2\n", 3),
    ("mismatched brackets", "a: [1, 2}\n", 1),
    ("anchor without node", "a: &\n", 1),
    ("block scalar bad indicator", "a: |x\n  text\n", 1),
    ("flow closing without opening", "a: 1\nb: ]\n", 2),
    ("stray document end", "a: 1\n...\nb\n: c: d\n", 4),
    ("duplicate anchor property", "a: &x &y 1\n", 1),
    ("reserved indicator", "a: 1\nb: @x\n", 2),
    ("complex key unclosed", "? [a\n: b\n", 2),
    (
        "deep nesting",
        "a:\n  b: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
        2,
    ),
];

#[test]
fn every_broken_document_names_its_line() {
    let mut problems = Vec::new();
    for (what, text, line) in BROKEN {
        match kudo_yaml::to_json_documents(text) {
            Ok(v) => problems.push(format!("{what}: parsed as {v:?}")),
            Err(e) if e.line != *line || !e.to_string().starts_with(&format!("line {line},")) => {
                problems.push(format!("{what}: expected line {line}: {e}"))
            }
            Err(_) => {}
        }
    }
    println!("bad_input: {} broken YAML documents", BROKEN.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A key written twice in one mapping: an error at the second, naming the first, at
/// any depth; the same key in different mappings, or a key overriding a merged one, is
/// fine.
#[test]
fn duplicate_keys_are_found_with_both_lines() {
    let check = |text: &str| {
        kudo_yaml::parse_nodes(text)
            .expect("valid YAML")
            .iter()
            .try_for_each(kudo_yaml::Node::check_unique_keys)
    };
    let e = check("name: a\nversion: 1\nname: b\n").unwrap_err();
    assert_eq!((e.line, e.column), (3, 1), "{e}");
    assert!(e.message.contains("\"name\""), "{e}");
    assert!(e.message.contains("first on line 1"), "{e}");
    let nested = check("tasks:\n  - name: a\n    spec: {x: 1, \"x\": 2}\n").unwrap_err();
    assert_eq!(nested.line, 3, "{nested}");
    assert!(nested.message.contains("\"x\""), "{nested}");
    // `y` and `true` are the same key once read as YAML 1.1.
    assert!(check("y: 1\ntrue: 2\n").is_err());
    for fine in [
        "a: 1\nb: {a: 2}\nc: [{a: 3}, {a: 4}]\n",
        "base: &b {a: 1}\nx:\n  <<: *b\n  a: 2\n",
        "a: 1\n---\na: 2\n",
    ] {
        assert!(check(fine).is_ok(), "{fine:?}");
    }
}
