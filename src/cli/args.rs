//! A small flag parser for the author tools. The commands take a handful of flags, so a
//! table of [`Flag`]s is enough and keeps the binary free of a CLI framework.

use std::collections::BTreeMap;

/// One flag a command accepts.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// Long spelling, with the dashes: `--output-dir`. Also the key in [`Parsed`].
    pub long: &'static str,
    /// Optional short spelling: `-p`.
    pub short: Option<&'static str>,
    /// Whether the flag is followed by a value (`--name N` or `--name=N`).
    pub takes_value: bool,
    /// Whether the flag may be given more than once.
    pub repeat: bool,
}

impl Flag {
    pub const fn value(long: &'static str) -> Flag {
        Flag {
            long,
            short: None,
            takes_value: true,
            repeat: false,
        }
    }
    pub const fn switch(long: &'static str) -> Flag {
        Flag {
            long,
            short: None,
            takes_value: false,
            repeat: false,
        }
    }
    pub const fn short(mut self, short: &'static str) -> Flag {
        self.short = Some(short);
        self
    }
    pub const fn repeated(mut self) -> Flag {
        self.repeat = true;
        self
    }
}

/// Positional arguments and flag values, keyed by the flag's long spelling.
#[derive(Debug, Default)]
pub struct Parsed {
    pub positional: Vec<String>,
    values: BTreeMap<&'static str, Vec<String>>,
}

impl Parsed {
    /// The value of a single-use flag.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.values
            .get(long)
            .and_then(|v| v.last())
            .map(String::as_str)
    }
    /// Every value of a repeatable flag, in command-line order.
    pub fn values(&self, long: &str) -> &[String] {
        self.values.get(long).map(Vec::as_slice).unwrap_or(&[])
    }
    /// Whether a switch (or any flag) was given.
    pub fn has(&self, long: &str) -> bool {
        self.values.contains_key(long)
    }
}

/// Parse `args` (after the command words) against `flags`. `--` ends the flags.
/// Errors are one-line messages for the user.
pub fn parse(args: &[String], flags: &[Flag]) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            parsed.positional.extend(iter.by_ref().cloned());
            break;
        }
        // A lone "-" is a positional (conventionally stdin), not a flag.
        if !arg.starts_with('-') || arg == "-" {
            parsed.positional.push(arg.clone());
            continue;
        }
        let (spelling, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let flag = flags
            .iter()
            .find(|f| f.long == spelling || f.short == Some(spelling))
            .ok_or_else(|| format!("unknown flag {spelling}"))?;
        let value = if flag.takes_value {
            match inline {
                Some(v) => v,
                None => iter
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("flag {spelling} needs a value"))?,
            }
        } else if inline.is_some() {
            return Err(format!("flag {spelling} does not take a value"));
        } else {
            String::new()
        };
        let slot = parsed.values.entry(flag.long).or_default();
        if !flag.repeat && !slot.is_empty() {
            return Err(format!("flag {} given more than once", flag.long));
        }
        slot.push(value);
    }
    Ok(parsed)
}

/// Split `KEY=VALUE` (the value may contain `=` and may be empty). `what` names the
/// flag in the error.
pub fn key_value(text: &str, what: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!(
            "{what} {text:?} is not KEY=VALUE; write for example {what} NODE_COUNT=5"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &[Flag] = &[
        Flag::value("--param").short("-p").repeated(),
        Flag::value("--name"),
        Flag::switch("--extended"),
    ];

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_values_and_positionals() {
        let p = parse(
            &strings(&[
                "pkg",
                "-p",
                "A=1",
                "--param=B=2",
                "--name",
                "x",
                "--extended",
            ]),
            FLAGS,
        )
        .unwrap();
        assert_eq!(p.positional, ["pkg"]);
        assert_eq!(p.values("--param"), ["A=1", "B=2"]);
        assert_eq!(p.value("--name"), Some("x"));
        assert!(p.has("--extended"));
        assert!(!p.has("--other"));
    }

    #[test]
    fn errors_name_the_flag() {
        let e = parse(&strings(&["--nope"]), FLAGS).unwrap_err();
        assert_eq!(e, "unknown flag --nope");
        let e = parse(&strings(&["--name"]), FLAGS).unwrap_err();
        assert_eq!(e, "flag --name needs a value");
        let e = parse(&strings(&["--name", "a", "--name", "b"]), FLAGS).unwrap_err();
        assert_eq!(e, "flag --name given more than once");
        let e = parse(&strings(&["--extended=1"]), FLAGS).unwrap_err();
        assert_eq!(e, "flag --extended does not take a value");
    }

    #[test]
    fn double_dash_ends_flags() {
        let p = parse(&strings(&["--", "-p"]), FLAGS).unwrap();
        assert_eq!(p.positional, ["-p"]);
    }

    #[test]
    fn key_value_pairs() {
        assert_eq!(
            key_value("A=b=c", "-p").unwrap(),
            ("A".to_string(), "b=c".to_string())
        );
        assert_eq!(
            key_value("A=", "-p").unwrap(),
            ("A".to_string(), String::new())
        );
        assert!(key_value("=x", "-p").unwrap_err().contains("KEY=VALUE"));
        assert!(key_value("novalue", "-p").is_err());
    }
}
