// Temporary cross-check harness (removed before hand-off).
use std::io::Read;
fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).ok();
    let params: std::collections::BTreeMap<String, serde_json::Value> =
        serde_json::from_str(r#"{"N":"3","T":"true","L":[1.0,"a",2.5],"M":{"b":1.0,"a":"x"}}"#)
            .unwrap();
    let vars = kudo_template::Vars {
        params,
        ..Default::default()
    };
    for src in input.trim_end_matches('\n').split("\n=====\n") {
        match kudo_template::render("t", src, &vars) {
            Ok(s) => print!("{s}\x00"),
            Err(e) => print!("ERR: {e}\x00"),
        }
    }
}
