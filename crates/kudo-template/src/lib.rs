//! KUDO template rendering: Go `text/template` (through `gotmpl`) with Sprig v2 text
//! functions minus the ones KUDO removes, plus `toYaml`, run with `missingkey=error`.
//!
//! Determinism: KUDO renders on every reconcile, and this provider renders on every
//! Terraform plan, so functions that would normally read the clock or a random source
//! (`now`, `rand*`, `uuidv4`, `shuffle`, `encryptAES`'s IV, `genPrivateKey`) draw
//! instead from a per-render source seeded from the instance (namespace + name), the
//! template name and the order of the calls. The same instance and template therefore
//! render the same bytes on every plan, and two instances get different values. `now`
//! is fixed per render: by default the Unix epoch, or [`RenderOptions::now`] when a
//! caller keeps a stable timestamp (for example the instance's creation time). See
//! `sprig::random`.
//!
//! Known differences from Go that gotmpl's value model imposes: floats print in Rust's
//! form inside `{{ }}` and `printf` (`1e+08` in Go, `100000000` here); Sprig's typed
//! results (`[]int` from `until`, `int64` from `add`) report `typeOf` as
//! `[]interface {}` / `int`; `set`/`unset`/`merge` do not mutate their argument.

mod blocks;
mod check;
mod data;
mod error;
mod gofmt;
mod split;
mod sprig;
mod toyaml;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::LazyLock;

use gotmpl::parse::Parser;
use gotmpl::{MissingKey, Template};

pub use error::RenderError;
pub use split::split_documents;

/// The variables KUDO gives every template.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vars {
    pub operator_name: String,
    pub name: String,
    pub namespace: String,
    pub operator_version: String,
    pub app_version: String,
    pub plan_name: String,
    pub phase_name: String,
    pub step_name: String,
    /// Strings, except `array`/`map` parameters which arrive decoded.
    pub params: BTreeMap<String, serde_json::Value>,
    pub pipes: BTreeMap<String, String>,
}

/// Knobs that do not change what KUDO would render but make the non-deterministic
/// Sprig functions stable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Seconds since the Unix epoch returned by `now` (default 0).
    pub now: Option<i64>,
    /// Seed for `rand*`, `uuidv4`, `shuffle`, `encryptAES`'s IV and `genPrivateKey`
    /// (default: "<namespace>/<instance name>"). The default is public knowledge, so
    /// anything those functions make (passwords, keys) is guessable; callers that let
    /// templates generate secrets should pass a random value kept per instance (for
    /// example in Terraform state).
    pub seed: Option<String>,
}

/// Render one template with KUDO's function set and `missingkey=error`.
///
/// Errors carry the template name and, when known, a 1-based line and byte column:
/// parse errors, calls to functions that do not exist (rejected before executing, as
/// Go does), unbalanced `{{if}}`/`{{end}}`, and execution errors mapped back to the
/// first action that can have raised them (a missing `.Params.X` names `X`).
pub fn render(template_name: &str, text: &str, vars: &Vars) -> Result<String, RenderError> {
    render_with(template_name, text, vars, &RenderOptions::default())
}

/// [`render`] with explicit determinism options.
pub fn render_with(
    template_name: &str,
    text: &str,
    vars: &Vars,
    options: &RenderOptions,
) -> Result<String, RenderError> {
    let tmpl = prepared(template_name, text)?;
    let seed = options
        .seed
        .clone()
        .unwrap_or_else(|| format!("{}/{}", vars.namespace, vars.name));
    let _ctx = sprig::random::RenderContext::enter(&seed, template_name, options.now.unwrap_or(0));

    let data = data::cached_vars_value(vars);
    let mut out = BoundedOutput::default();
    tmpl.execute_template_fmt(&mut out, template_name, &data)
        .map(|()| out.text.clone())
        .map_err(|e| {
            if out.exceeded {
                return RenderError::new(
                    template_name,
                    None,
                    None,
                    format!(
                        "renders more than {MAX_OUTPUT_BYTES} bytes; a template renders Kubernetes objects, which are limited to about 1.5 MiB"
                    ),
                );
            }
            tracing::debug!(template = template_name, error = %e, "template execution failed");
            // The file's own body first, then its {{define}}s.
            let mut trees: Vec<&gotmpl::parse::ListNode> =
                tmpl.lookup(template_name).into_iter().collect();
            trees.extend(
                tmpl.templates()
                    .into_iter()
                    .filter(|n| *n != template_name)
                    .filter_map(|n| tmpl.lookup(n)),
            );
            check::locate_exec_error(template_name, text, &trees, e)
        })
}

/// Everything that can be known about a template without rendering it: it parses,
/// its blocks are closed, and every function it calls exists (also in branches a
/// render would skip). The same checks [`render`] makes first, so `package verify`
/// and a plan refuse the same templates with the same message.
pub fn check(template_name: &str, text: &str) -> Result<(), RenderError> {
    prepared(template_name, text).map(drop)
}

/// Parsed and checked templates of this thread, by name and text. A plan renders the
/// same file for several tasks, plans and instances, and parsing is most of the cost of
/// a render; executing takes the template by reference, so one parse serves them all.
/// Keyed by name (looked up without copying anything); packages that share a file name
/// (`service.yaml`) keep one entry each under it, told apart by their text. Only
/// templates that parse and pass the checks are kept. Bounded: a long-lived provider
/// process forgets everything when it holds more than [`PREPARED_MAX`] templates.
#[derive(Default)]
struct Prepared {
    by_name: HashMap<String, Vec<PreparedText>>,
    count: usize,
}

/// One template text and its parsed form.
type PreparedText = (Box<str>, Rc<Template>);

const PREPARED_MAX: usize = 1024;

thread_local! {
    static PREPARED: RefCell<Prepared> = RefCell::new(Prepared::default());
}

fn prepared(template_name: &str, text: &str) -> Result<Rc<Template>, RenderError> {
    let known = PREPARED.with(|p| {
        p.borrow()
            .by_name
            .get(template_name)
            .and_then(|texts| texts.iter().find(|(t, _)| **t == *text))
            .map(|(_, tmpl)| tmpl.clone())
    });
    if let Some(t) = known {
        return Ok(t);
    }
    let (tree, defines) = Parser::with_name(Some(template_name), text, "{{", "}}")
        .and_then(|p| p.parse())
        .map_err(|e| RenderError::from_parse(template_name, text, e))?;

    if let Some((line, message)) = blocks::block_error(text) {
        return Err(RenderError::new(template_name, Some(line), None, message));
    }
    check::undefined_functions(template_name, text, &tree, &defines, &FUNCTION_NAMES)?;

    let mut tmpl = PROTOTYPE.clone();
    for d in defines {
        tmpl = tmpl.add_parse_tree(&d.name, d.body);
    }
    // The body goes in last so a `{{define}}` of the file's own name cannot replace it,
    // as in Go where the file's top level wins.
    tmpl = tmpl.add_parse_tree(template_name, tree);
    let tmpl = Rc::new(tmpl);
    PREPARED.with(|p| {
        let mut p = p.borrow_mut();
        if p.count >= PREPARED_MAX {
            *p = Prepared::default();
        }
        p.count += 1;
        p.by_name
            .entry(template_name.to_string())
            .or_default()
            .push((text.into(), tmpl.clone()));
    });
    Ok(tmpl)
}

/// The most a single template may render. Without a bound, a loop such as
/// `{{ range until 1000000 }}{{ repeat 1000000 "x" }}{{ end }}` fills memory long before
/// anything could be applied.
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// Range iterations per render (gotmpl's default is 10 million). Nested ranges
/// multiply, and a million iterations is far beyond any package's template while a
/// budget of ten million can keep a plan busy for many seconds.
const MAX_RANGE_ITERATIONS: u64 = 1_000_000;

/// Rendered text, refusing to grow beyond [`MAX_OUTPUT_BYTES`].
#[derive(Default)]
struct BoundedOutput {
    text: String,
    exceeded: bool,
}

impl std::fmt::Write for BoundedOutput {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len().saturating_add(s.len()) > MAX_OUTPUT_BYTES {
            self.exceeded = true;
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// Names every template may call: Go's builtins, the Sprig set KUDO keeps, `toYaml`.
static FUNCTION_NAMES: LazyLock<std::collections::BTreeSet<String>> = LazyLock::new(|| {
    let mut names: std::collections::BTreeSet<String> =
        GO_BUILTINS.iter().map(|s| s.to_string()).collect();
    names.extend(sprig::functions().keys().cloned());
    names
});

/// Built once: cloning shares the function map instead of rebuilding ~200 closures
/// for every render.
static PROTOTYPE: LazyLock<Template> = LazyLock::new(|| {
    Template::new("")
        .missing_key(MissingKey::Error)
        .max_range_iters(MAX_RANGE_ITERATIONS)
        .funcs(sprig::functions())
});

/// The Sprig/KUDO function names available to templates (for author tooling).
pub fn function_names() -> Vec<String> {
    FUNCTION_NAMES.iter().cloned().collect()
}

/// Go's predefined template functions (text/template `builtins`).
const GO_BUILTINS: &[&str] = &[
    "and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
    "println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// `check` finds what render finds before executing, without values: an unknown
    /// function in a branch that would never run, a block never closed.
    #[test]
    fn check_needs_no_values() {
        assert!(check("a.yaml", "name: {{ .Params.ANY }}").is_ok());
        let e = check("a.yaml", "a\n{{ if false }}{{ nosuchfunc }}{{ end }}").unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (Some(2), "function \"nosuchfunc\" not defined")
        );
        let e = check("a.yaml", "a\n{{ range .X }}\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    /// Two packages may both have a `service.yaml`: the parsed templates are kept by
    /// name and text, so each renders its own text, also when they alternate.
    #[test]
    fn templates_of_one_name_and_different_texts_render_their_own_text() {
        let vars = Vars::default();
        for _ in 0..2 {
            assert_eq!(
                render("service.yaml", "a: 1", &vars).ok().as_deref(),
                Some("a: 1")
            );
            assert_eq!(
                render("service.yaml", "b: 2", &vars).ok().as_deref(),
                Some("b: 2")
            );
        }
    }
}
