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
