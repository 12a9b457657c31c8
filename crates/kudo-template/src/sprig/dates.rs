//! Date functions. A time value is carried as the text Go prints for a `time.Time`
//! ("2006-01-02 15:04:05 +0000 UTC"), so `{{ now }}` prints as in Go and the date
//! functions read it back. `now` is the render's fixed time (see `random`). Only UTC is
//! known: a named zone (no time-zone database here) falls back to UTC, as Sprig does
//! for zones it cannot load.

use gotmpl::Value;

use super::Reg;
use super::args::{arity, fail, s, string};
use super::random::now;

/// Seconds and nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Time {
    secs: i64,
    nanos: u32,
}

fn days_to_civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn civil_to_days(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Go's `Time.Format` for a UTC time.
pub(crate) fn format(t: Time, layout: &str) -> String {
    let days = t.secs.div_euclid(86_400);
    let sod = t.secs.rem_euclid(86_400);
    let (y, mo, d) = days_to_civil(days);
    let (h, mi, sec) = (sod / 3600, (sod % 3600) / 60, sod % 60);
    let wd = (days + 4).rem_euclid(7) as usize;
    let yday = days - civil_to_days(y, 1, 1) + 1;
    let mut out = String::new();
    let mut rest = layout;
    // Longest tokens first where one is a prefix of another.
    const TOKENS: &[&str] = &[
        "January",
        "Jan",
        "Monday",
        "Mon",
        "MST",
        "2006",
        "-07:00:00",
        "-0700",
        "-07:00",
        "-07",
        "Z07:00:00",
        "Z0700",
        "Z07:00",
        "Z07",
        "002",
        "01",
        "02",
        "_2",
        "03",
        "04",
        "05",
        "06",
        "15",
        "1",
        "2",
        "3",
        "4",
        "5",
        "PM",
        "pm",
    ];
    while !rest.is_empty() {
        if let Some(frac) = fraction_token(rest) {
            let digits = frac.len() - 1;
            let all = format!("{:09}", t.nanos);
            let mut f = all[..digits.min(9)].to_string();
            if frac.as_bytes()[1] == b'9' {
                f = f.trim_end_matches('0').to_string();
                if !f.is_empty() {
                    out.push('.');
                    out.push_str(&f);
                }
            } else {
                out.push(frac.as_bytes()[0] as char);
                out.push_str(&f);
            }
            rest = &rest[frac.len()..];
            continue;
        }
        let Some(tok) = TOKENS.iter().find(|tk| rest.starts_with(**tk)) else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let h12 = if h % 12 == 0 { 12 } else { h % 12 };
        let piece = match *tok {
            "January" => MONTHS[mo as usize - 1].to_string(),
            "Jan" => MONTHS[mo as usize - 1][..3].to_string(),
            "Monday" => DAYS[wd].to_string(),
            "Mon" => DAYS[wd][..3].to_string(),
            "MST" => "UTC".into(),
            "2006" => format!("{y:04}"),
            "06" => format!("{:02}", y.rem_euclid(100)),
            "-07:00:00" => "+00:00:00".into(),
            "-0700" => "+0000".into(),
            "-07:00" => "+00:00".into(),
            "-07" => "+00".into(),
            "Z07:00:00" | "Z0700" | "Z07:00" | "Z07" => "Z".into(),
            "002" => format!("{yday:03}"),
            "01" => format!("{mo:02}"),
            "1" => mo.to_string(),
            "02" => format!("{d:02}"),
            "_2" => format!("{d:>2}"),
            "2" => d.to_string(),
            "15" => format!("{h:02}"),
            "03" => format!("{h12:02}"),
            "3" => h12.to_string(),
            "04" => format!("{mi:02}"),
            "4" => mi.to_string(),
            "05" => format!("{sec:02}"),
            "5" => sec.to_string(),
            "PM" => if h >= 12 { "PM" } else { "AM" }.into(),
            "pm" => if h >= 12 { "pm" } else { "am" }.into(),
            other => other.to_string(),
        };
        out.push_str(&piece);
        rest = &rest[tok.len()..];
    }
    out
}

/// ".000" / ",999" style fractional seconds, only when followed by a non-digit.
fn fraction_token(rest: &str) -> Option<&str> {
    let b = rest.as_bytes();
    if b.len() < 2 || !(b[0] == b'.' || b[0] == b',') || !(b[1] == b'0' || b[1] == b'9') {
        return None;
    }
    let n = b[1..].iter().take_while(|c| **c == b[1]).count();
    if b.get(1 + n).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some(&rest[..1 + n])
}

/// Go's `time.Time.String()` for UTC.
pub(crate) fn time_string(t: Time) -> String {
    format(t, "2006-01-02 15:04:05.999999999 -0700 MST")
}

/// Read back a time we printed, or a Unix timestamp; anything else means "now".
fn time_arg(v: &Value) -> Time {
    match v {
        Value::Int(i) => Time { secs: *i, nanos: 0 },
        Value::String(st) => parse(st, "2006-01-02 15:04:05.999999999 -0700 MST").unwrap_or(Time {
            secs: now(),
            nanos: 0,
        }),
        _ => Time {
            secs: now(),
            nanos: 0,
        },
    }
}

/// Go's `time.Parse` for numeric layouts (years, months, days, hours, minutes,
/// seconds, fractions, numeric or Z offsets, "UTC"/"MST" zone names).
pub(crate) fn parse(value: &str, layout: &str) -> Option<Time> {
    let (mut y, mut mo, mut d, mut h, mut mi, mut sec, mut nanos, mut off) =
        (1i64, 1u32, 1u32, 0i64, 0i64, 0i64, 0u32, 0i64);
    let mut pm: Option<bool> = None;
    let mut v = value;
    let mut l = layout;
    let num = |v: &mut &str, min: usize, max: usize| -> Option<i64> {
        let n = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
        if n < min {
            return None;
        }
        let out = v[..n].parse().ok();
        *v = &v[n..];
        out
    };
    while !l.is_empty() {
        if l.starts_with(".999")
            || l.starts_with(".000")
            || l.starts_with(",999")
            || l.starts_with(",000")
        {
            let n = l[1..]
                .bytes()
                .take_while(|c| *c == b'9' || *c == b'0')
                .count();
            l = &l[1 + n..];
            if let Some(rest) = v.strip_prefix(['.', ',']) {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let mut f = rest[..digits].to_string();
                f.truncate(9);
                while f.len() < 9 {
                    f.push('0');
                }
                nanos = f.parse().ok()?;
                v = &rest[digits..];
            }
            continue;
        }
        let tokens: &[(&str, u8)] = &[
            ("2006", b'Y'),
            ("-07:00", b'z'),
            ("-0700", b'z'),
            ("Z07:00", b'Z'),
            ("Z0700", b'Z'),
            ("MST", b'T'),
            ("01", b'M'),
            ("02", b'D'),
            ("_2", b'D'),
            ("15", b'h'),
            ("03", b'H'),
            ("04", b'm'),
            ("05", b's'),
            ("06", b'y'),
            ("PM", b'P'),
            ("1", b'M'),
            ("2", b'D'),
            ("3", b'H'),
            ("4", b'm'),
            ("5", b's'),
        ];
        if let Some((tok, kind)) = tokens.iter().find(|(t, _)| l.starts_with(*t)) {
            l = &l[tok.len()..];
            match kind {
                b'Y' => y = num(&mut v, 4, 4)?,
                b'y' => y = 2000 + num(&mut v, 2, 2)?,
                b'M' => mo = u32::try_from(num(&mut v, 1, 2)?).ok()?,
                b'D' => {
                    v = v.trim_start_matches(' ');
                    d = u32::try_from(num(&mut v, 1, 2)?).ok()?;
                }
                b'h' | b'H' => h = num(&mut v, 1, 2)?,
                b'm' => mi = num(&mut v, 1, 2)?,
                b's' => {
                    sec = num(&mut v, 1, 2)?;
                    // Go accepts a fraction after seconds even when the layout has none.
                    if !l.starts_with(['.', ','])
                        && let Some(rest) = v.strip_prefix('.')
                    {
                        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                        let mut f = rest[..digits].to_string();
                        f.truncate(9);
                        while f.len() < 9 {
                            f.push('0');
                        }
                        nanos = f.parse().ok()?;
                        v = &rest[digits..];
                    }
                }
                b'P' => {
                    pm = Some(v.starts_with("PM"));
                    v = v.get(2..)?;
                }
                b'T' => {
                    let n = v.bytes().take_while(u8::is_ascii_uppercase).count();
                    if n < 3 {
                        return None;
                    }
                    v = &v[n..];
                }
                b'Z' | b'z' => {
                    if *kind == b'Z'
                        && let Some(rest) = v.strip_prefix('Z')
                    {
                        v = rest;
                        continue;
                    }
                    let sign = match v.as_bytes().first()? {
                        b'+' => 1,
                        b'-' => -1,
                        _ => return None,
                    };
                    v = &v[1..];
                    let oh = num(&mut v, 2, 2)?;
                    v = v.strip_prefix(':').unwrap_or(v);
                    let om = num(&mut v, 2, 2)?;
                    off = sign * (oh * 3600 + om * 60);
                }
                _ => return None,
            }
            continue;
        }
        let c = l.chars().next()?;
        v = v.strip_prefix(c)?;
        l = &l[c.len_utf8()..];
    }
    if !v.is_empty()
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || sec > 60
    {
        return None;
    }
    if let Some(p) = pm {
        h = (h % 12) + if p { 12 } else { 0 };
    }
    let secs = civil_to_days(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - off;
    Some(Time { secs, nanos })
}

/// Go's `time.ParseDuration` in nanoseconds.
fn parse_duration(st: &str) -> Option<i128> {
    let (neg, mut rest) = match st.as_bytes().first()? {
        b'-' => (true, &st[1..]),
        b'+' => (false, &st[1..]),
        _ => (false, st),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        if n == 0 {
            return None;
        }
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .bytes()
            .take_while(|c| !c.is_ascii_digit() && *c != b'.')
            .count();
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += value * unit;
    }
    Some(if neg { -(total as i128) } else { total as i128 })
}

/// Go's `Duration.String()` for whole seconds.
fn duration_string(secs: i64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let sign = if secs < 0 { "-" } else { "" };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, (a % 3600) / 60, a % 60);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

pub(super) fn register(m: &mut Reg) {
    m.add("now", |a| {
        arity("now", a, 0)?;
        Ok(s(time_string(Time {
            secs: now(),
            nanos: 0,
        })))
    });
    m.add("date", |a| {
        arity("date", a, 2)?;
        Ok(s(format(time_arg(&a[1]), &string("date", &a[0])?)))
    });
    for name in ["dateInZone", "date_in_zone"] {
        m.add(name, move |a| {
            arity(name, a, 3)?;
            string(name, &a[2])?;
            Ok(s(format(time_arg(&a[1]), &string(name, &a[0])?)))
        });
    }
    m.add("htmlDate", |a| {
        arity("htmlDate", a, 1)?;
        Ok(s(format(time_arg(&a[0]), "2006-01-02")))
    });
    m.add("htmlDateInZone", |a| {
        arity("htmlDateInZone", a, 2)?;
        string("htmlDateInZone", &a[1])?;
        Ok(s(format(time_arg(&a[0]), "2006-01-02")))
    });
    for name in ["dateModify", "date_modify"] {
        m.add(name, move |a| {
            arity(name, a, 2)?;
            let t = time_arg(&a[1]);
            let Some(d) = parse_duration(&string(name, &a[0])?) else {
                return Ok(s(time_string(t)));
            };
            let total = i128::from(t.secs) * 1_000_000_000 + i128::from(t.nanos) + d;
            let secs = i64::try_from(total.div_euclid(1_000_000_000))
                .map_err(|_| fail(name, "time out of range"))?;
            let nanos = u32::try_from(total.rem_euclid(1_000_000_000)).unwrap_or(0);
            Ok(s(time_string(Time { secs, nanos })))
        });
    }
    m.add("toDate", |a| {
        arity("toDate", a, 2)?;
        let t = parse(&string("toDate", &a[1])?, &string("toDate", &a[0])?).unwrap_or(Time {
            secs: -62_135_596_800,
            nanos: 0,
        });
        Ok(s(time_string(t)))
    });
    m.add("unixEpoch", |a| {
        arity("unixEpoch", a, 1)?;
        Ok(s(time_arg(&a[0]).secs.to_string()))
    });
    m.add("ago", |a| {
        arity("ago", a, 1)?;
        Ok(s(duration_string(now() - time_arg(&a[0]).secs)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sprig::test_util::r;

    #[test]
    fn go_layouts() {
        let t = Time {
            secs: 1_700_000_000,
            nanos: 120_000_000,
        };
        assert_eq!(
            format(t, "2006-01-02T15:04:05Z07:00"),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            format(t, "Mon Jan _2 3:04PM 2006 .000 .999 002"),
            "Tue Nov 14 10:13PM 2023 .120 .12 318"
        );
        assert_eq!(time_string(t), "2023-11-14 22:13:20.12 +0000 UTC");
        assert_eq!(
            parse(
                "2023-11-14 22:13:20.12 +0000 UTC",
                "2006-01-02 15:04:05.999999999 -0700 MST"
            ),
            Some(t)
        );
        assert_eq!(
            parse("2023-11-15T00:13:20+02:00", "2006-01-02T15:04:05Z07:00").map(|x| x.secs),
            Some(1_700_000_000)
        );
    }

    #[test]
    fn date_functions_use_the_fixed_now() {
        assert_eq!(r("{{ now }}"), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(
            r(r#"{{ now | date "2006-01-02" }} {{ htmlDate now }} {{ unixEpoch now }}"#),
            "1970-01-01 1970-01-01 0"
        );
        assert_eq!(r(r#"{{ date "15:04" 3600 }}"#), "01:00");
        assert_eq!(
            r(r#"{{ now | dateModify "1.5h" | date "15:04" }}"#),
            "01:30"
        );
        assert_eq!(
            r(r#"{{ toDate "2006-01-02" "2017-12-31" | date "02/01/2006" }}"#),
            "31/12/2017"
        );
        assert_eq!(r(r#"{{ ago -3661 }}"#), "1h1m1s");
        assert_eq!(
            r(r#"{{ dateInZone "2006-01-02 MST" 0 "UTC" }}"#),
            "1970-01-01 UTC"
        );
    }
}
