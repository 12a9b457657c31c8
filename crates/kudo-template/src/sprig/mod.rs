//! Sprig v2 (Masterminds/sprig 2.22) text functions as KUDO configures them: without
//! `env`, `expandenv`, `base`, `dir`, `clean`, `ext`, `isAbs`, and here also without
//! `getHostByName` (no network access while planning). Go typing is kept where it shows:
//! integer math takes strings and floats through Sprig's casts, typed parameters reject
//! wrong types.

pub(crate) mod args;
mod certs;
mod conv;
mod crypto;
mod dates;
mod defaults;
mod dicts;
mod encoding;
mod json;
mod lists;
mod math;
pub(crate) mod random;
mod reflect;
mod regex;
mod semver;
mod strings;
mod urls;

use std::sync::Arc;

use gotmpl::{FuncMap, Value};

use args::R;

/// Builds the function map.
pub(crate) struct Reg(FuncMap);

impl Reg {
    /// Registers `f` under `name`; every call first checks the render's deadline
    /// ([`random::check_deadline`]), so no loop of function calls runs unbounded.
    pub(crate) fn add(&mut self, name: &str, f: impl Fn(&[Value]) -> R + Send + Sync + 'static) {
        let called = name.to_string();
        self.0.insert(
            name.to_string(),
            Arc::new(move |args: &[Value]| {
                random::check_deadline().map_err(|e| args::fail(&called, e))?;
                f(args)
            }),
        );
    }
}

/// Every function templates can call besides Go's builtins.
pub(crate) fn functions() -> FuncMap {
    let mut r = Reg(FuncMap::new());
    certs::register(&mut r);
    conv::register(&mut r);
    crypto::register(&mut r);
    dates::register(&mut r);
    defaults::register(&mut r);
    dicts::register(&mut r);
    encoding::register(&mut r);
    lists::register(&mut r);
    math::register(&mut r);
    reflect::register(&mut r);
    regex::register(&mut r);
    random::register(&mut r);
    semver::register(&mut r);
    strings::register(&mut r);
    urls::register(&mut r);
    r.add("hello", |_| Ok(args::s("Hello!")));
    r.add("fail", |a| {
        args::arity("fail", a, 1)?;
        Err(args::fail("fail", args::string("fail", &a[0])?))
    });
    // Helm's `required`, which KUDO package authors expect next to `fail`.
    r.add("required", |a| {
        args::arity("required", a, 2)?;
        let msg = args::string("required", &a[0])?;
        match &a[1] {
            Value::Nil => Err(args::fail("required", msg)),
            Value::String(st) if st.is_empty() => Err(args::fail("required", msg)),
            v => Ok(v.clone()),
        }
    });
    r.0
}

#[cfg(test)]
pub(crate) mod test_util {
    use std::collections::BTreeMap;

    use crate::{Vars, render};

    /// Render `text` with string params.
    pub(crate) fn r(text: &str) -> String {
        rp(text, &[])
    }

    pub(crate) fn rp(text: &str, params: &[(&str, &str)]) -> String {
        try_rp(text, params).unwrap_or_else(|e| panic!("render of {text:?} failed: {e}"))
    }

    pub(crate) fn try_rp(
        text: &str,
        params: &[(&str, &str)],
    ) -> Result<String, crate::RenderError> {
        let vars = Vars {
            name: "inst".into(),
            namespace: "ns".into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                .collect::<BTreeMap<_, _>>(),
            ..Vars::default()
        };
        render("t.yaml", text, &vars)
    }

    pub(crate) fn err(text: &str) -> String {
        match try_rp(text, &[]) {
            Ok(out) => panic!("expected {text:?} to fail, got {out:?}"),
            Err(e) => e.to_string(),
        }
    }
}
