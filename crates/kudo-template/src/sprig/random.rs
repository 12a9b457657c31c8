//! Deterministic stand-ins for Sprig's random and clock functions.
//!
//! Decision: every value these functions produce is derived from
//! SHA-256(seed, template name, call index), where the seed defaults to
//! "<namespace>/<instance name>" (see `RenderOptions`). Re-rendering the same instance
//! and template gives the same bytes, so `terraform plan` stays empty, while two
//! instances or two calls get different values. `now` is a fixed time per render.
//! The render context lives in a thread-local for the duration of one `render` call:
//! gotmpl calls functions synchronously on the rendering thread, and the function map
//! is shared between renders.

use std::cell::RefCell;

use gotmpl::TemplateError;
use sha2::{Digest, Sha256};

use super::Reg;
use super::args::{arity, check_size, int, s, string};

struct Ctx {
    seed: Vec<u8>,
    counter: u64,
    now: i64,
    /// RSA keys this render generated (see [`charge_rsa_key`]).
    rsa_keys: u32,
    /// When the render stops being allowed to call functions (see [`check_deadline`]).
    deadline: std::time::Instant,
}

thread_local! {
    static CTX: RefCell<Vec<Ctx>> = const { RefCell::new(Vec::new()) };
}

/// Active while a template renders; restores the outer context (nested renders) on drop.
pub(crate) struct RenderContext(());

impl RenderContext {
    pub(crate) fn enter(seed: &str, template: &str, now: i64) -> RenderContext {
        let mut material = Vec::with_capacity(seed.len() + template.len() + 1);
        material.extend_from_slice(seed.as_bytes());
        material.push(0);
        material.extend_from_slice(template.as_bytes());
        CTX.with(|c| {
            c.borrow_mut().push(Ctx {
                seed: material,
                counter: 0,
                now,
                rsa_keys: 0,
                deadline: std::time::Instant::now() + RENDER_DEADLINE,
            })
        });
        RenderContext(())
    }
}

impl Drop for RenderContext {
    fn drop(&mut self) {
        CTX.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// The longest one template may spend rendering. Output size, range iterations and key
/// generation have limits of their own; this bounds the rest (a loop of costly hash or
/// password functions), checked at every function call. Far beyond any real package,
/// which renders in milliseconds.
pub const RENDER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Fails once the render has run past [`RENDER_DEADLINE`].
pub(crate) fn check_deadline() -> Result<(), String> {
    CTX.with(|c| match c.borrow().last() {
        Some(ctx) if std::time::Instant::now() > ctx.deadline => Err(format!(
            "this template has rendered for more than {}s, the limit for one template; it calls functions too often (a long range over costly functions?)",
            RENDER_DEADLINE.as_secs()
        )),
        _ => Ok(()),
    })
}

#[cfg(test)]
pub(crate) fn expire_deadline() {
    CTX.with(|c| {
        if let Some(ctx) = c.borrow_mut().last_mut() {
            ctx.deadline = std::time::Instant::now() - std::time::Duration::from_secs(1);
        }
    });
}

/// RSA keys one render may generate. Generating one takes seconds of CPU, and a plan
/// renders every template at least once, so the output and iteration limits alone let
/// `{{ range until 60 }}{{ genPrivateKey "rsa" }}{{ end }}` hold a plan for minutes.
/// No KUDO package generates more than one or two.
pub const MAX_RSA_KEYS_PER_RENDER: u32 = 4;

/// Counts one RSA key against this render's budget; the error names the limit.
pub(crate) fn charge_rsa_key() -> Result<(), String> {
    CTX.with(|c| {
        let mut stack = c.borrow_mut();
        let Some(ctx) = stack.last_mut() else {
            return Ok(());
        };
        ctx.rsa_keys += 1;
        match ctx.rsa_keys > MAX_RSA_KEYS_PER_RENDER {
            true => Err(format!(
                "this template generates more than {MAX_RSA_KEYS_PER_RENDER} RSA keys in one render, the limit (each key costs seconds of CPU on every plan); generate fewer, use ecdsa, or pass keys in as parameters"
            )),
            false => Ok(()),
        }
    })
}

/// `n` bytes for one function call; each call advances the call index.
pub(crate) fn bytes(n: usize) -> Vec<u8> {
    CTX.with(|c| {
        let mut stack = c.borrow_mut();
        let (seed, call) = match stack.last_mut() {
            Some(ctx) => {
                ctx.counter += 1;
                (ctx.seed.clone(), ctx.counter)
            }
            None => (Vec::new(), 0),
        };
        let mut out = Vec::with_capacity(n);
        let mut block = 0u64;
        while out.len() < n {
            let mut h = Sha256::new();
            h.update(&seed);
            h.update(call.to_be_bytes());
            h.update(block.to_be_bytes());
            out.extend_from_slice(&h.finalize());
            block += 1;
        }
        out.truncate(n);
        out
    })
}

/// The render's fixed "current time", seconds since the epoch.
pub(crate) fn now() -> i64 {
    CTX.with(|c| c.borrow().last().map_or(0, |ctx| ctx.now))
}

/// Uniform index below `n` from a byte stream (rejection sampling keeps it unbiased).
fn pick(stream: &mut impl Iterator<Item = u8>, n: usize) -> usize {
    let limit = 256 - (256 % n);
    loop {
        match stream.next() {
            Some(b) if (b as usize) < limit => return b as usize % n,
            Some(_) => continue,
            None => return 0,
        }
    }
}

fn random_string(name: &str, count: i64, alphabet: &[u8]) -> Result<String, TemplateError> {
    let count = usize::try_from(count).unwrap_or(0);
    check_size(name, count)?;
    // Rejection can discard bytes: ask for plenty.
    let mut stream = bytes(count * 2 + 64)
        .into_iter()
        .chain(std::iter::repeat_with(|| 0));
    Ok((0..count)
        .map(|_| alphabet[pick(&mut stream, alphabet.len())] as char)
        .collect())
}

pub(crate) fn uuid_v4() -> String {
    let mut b = bytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const DIGITS: &[u8] = b"0123456789";

pub(super) fn register(m: &mut Reg) {
    m.add("randAlphaNum", |a| {
        arity("randAlphaNum", a, 1)?;
        let alphabet = [ALPHA, DIGITS].concat();
        Ok(s(random_string(
            "randAlphaNum",
            int("randAlphaNum", &a[0])?,
            &alphabet,
        )?))
    });
    m.add("randAlpha", |a| {
        arity("randAlpha", a, 1)?;
        Ok(s(random_string(
            "randAlpha",
            int("randAlpha", &a[0])?,
            ALPHA,
        )?))
    });
    m.add("randNumeric", |a| {
        arity("randNumeric", a, 1)?;
        Ok(s(random_string(
            "randNumeric",
            int("randNumeric", &a[0])?,
            DIGITS,
        )?))
    });
    m.add("randAscii", |a| {
        arity("randAscii", a, 1)?;
        let printable: Vec<u8> = (32u8..=126).collect();
        Ok(s(random_string(
            "randAscii",
            int("randAscii", &a[0])?,
            &printable,
        )?))
    });
    m.add("uuidv4", |a| {
        arity("uuidv4", a, 0)?;
        Ok(s(uuid_v4()))
    });
    m.add("shuffle", |a| {
        arity("shuffle", a, 1)?;
        let mut chars: Vec<char> = string("shuffle", &a[0])?.chars().collect();
        let mut stream = bytes(chars.len() * 2 + 64)
            .into_iter()
            .chain(std::iter::repeat_with(|| 0));
        for i in (1..chars.len()).rev() {
            let j = if i < 256 { pick(&mut stream, i + 1) } else { i };
            chars.swap(i, j);
        }
        Ok(s(chars.into_iter().collect::<String>()))
    });
}

#[cfg(test)]
mod tests {
    use super::{MAX_RSA_KEYS_PER_RENDER, RenderContext, charge_rsa_key};

    #[test]
    fn a_render_past_its_deadline_fails_at_the_next_function_call() {
        let _ctx = RenderContext::enter("seed", "slow.yaml", 0);
        assert!(super::check_deadline().is_ok());
        super::expire_deadline();
        let e = super::check_deadline().expect_err("past the deadline");
        assert!(e.contains("more than 20s"), "{e}");
    }

    // Counted before any key is made, so the test needs no key generation.
    #[test]
    fn rsa_keys_beyond_the_limit_of_one_render_are_refused() {
        let ctx = RenderContext::enter("seed", "keys.yaml", 0);
        for _ in 0..MAX_RSA_KEYS_PER_RENDER {
            assert!(charge_rsa_key().is_ok());
        }
        let e = charge_rsa_key().expect_err("one key too many");
        assert!(e.contains("more than 4 RSA keys"), "{e}");
        drop(ctx);
        // The next render has its own budget.
        let _next = RenderContext::enter("seed", "keys.yaml", 0);
        assert!(charge_rsa_key().is_ok());
    }
    use std::collections::BTreeMap;

    use crate::{RenderOptions, Vars, render, render_with};

    fn vars(name: &str) -> Vars {
        Vars {
            name: name.into(),
            namespace: "ns".into(),
            params: BTreeMap::new(),
            ..Vars::default()
        }
    }

    #[test]
    fn random_functions_are_stable_per_instance_and_template() {
        let t = r#"{{ randAlphaNum 12 }} {{ randAlpha 5 }} {{ randNumeric 4 }} {{ randAscii 3 }} {{ uuidv4 }} {{ shuffle "abcdef" }}"#;
        let a1 = render("t.yaml", t, &vars("a")).unwrap_or_default();
        let a2 = render("t.yaml", t, &vars("a")).unwrap_or_default();
        let b = render("t.yaml", t, &vars("b")).unwrap_or_default();
        let other_template = render("u.yaml", t, &vars("a")).unwrap_or_default();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, other_template);
        let parts: Vec<&str> = a1.split(' ').collect();
        assert_eq!(parts[0].len(), 12);
        assert!(parts[0].chars().all(|c| c.is_ascii_alphanumeric()));
        assert!(parts[1].chars().all(|c| c.is_ascii_alphabetic()));
        assert!(parts[2].chars().all(|c| c.is_ascii_digit()));
        assert_eq!(parts[4].len(), 36);
        assert_eq!(&parts[4][14..15], "4");
        let mut shuffled: Vec<char> = parts[5].chars().collect();
        shuffled.sort();
        assert_eq!(shuffled.into_iter().collect::<String>(), "abcdef");
    }

    #[test]
    fn two_calls_differ_and_seed_option_changes_values() {
        let out = render("t.yaml", "{{ uuidv4 }} {{ uuidv4 }}", &vars("a")).unwrap_or_default();
        let (x, y) = out.split_once(' ').unwrap_or_default();
        assert_ne!(x, y);
        let opts = RenderOptions {
            seed: Some("other".into()),
            now: None,
        };
        let seeded = render_with("t.yaml", "{{ uuidv4 }} {{ uuidv4 }}", &vars("a"), &opts)
            .unwrap_or_default();
        assert_ne!(out, seeded);
    }
}
