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
