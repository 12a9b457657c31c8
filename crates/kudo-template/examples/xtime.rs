// Temporary timing harness (removed before hand-off).
use std::time::Instant;
fn main() {
    let mut params = std::collections::BTreeMap::new();
    for l in std::fs::read_to_string("/work/shared/fixtures/operators/kafka/params.yaml").unwrap().lines() {
        if let Some(n) = l.trim().strip_prefix("- name: ") { params.insert(n.trim_matches('"').to_string(), serde_json::Value::String("1".into())); }
    }
    let vars = kudo_template::Vars { params, ..Default::default() };
    let text = std::fs::read_to_string("/work/shared/fixtures/operators/kafka/templates/serviceaccount.yaml").unwrap();
    let _ = kudo_template::render("x", &text, &vars);
    let t = Instant::now();
    for _ in 0..2000 { let _ = kudo_template::render("x", &text, &vars); }
    println!("serviceaccount render {:?}", t.elapsed() / 2000);
    let empty = kudo_template::Vars::default();
    let t = Instant::now();
    for _ in 0..2000 { let _ = kudo_template::render("x", "plain text {{ .Name }}", &empty); }
    println!("tiny render no params {:?}", t.elapsed() / 2000);
    let t = Instant::now();
    for _ in 0..2000 { let _ = gotmpl::Template::new("x").missing_key(gotmpl::MissingKey::Error).parse(&text).unwrap(); }
    println!("plain gotmpl parse via Template {:?}", t.elapsed() / 2000);
}
#[allow(dead_code)]
fn unused() {}
