//! Integer and float math. Integer functions return int64 and accept anything
//! `toInt64` accepts ("3", 2.9, true); `until`/`untilStep` take Go `int` parameters.

use gotmpl::{TemplateError, Value};

use super::Reg;
use super::args::{MAX_LIST_ITEMS, arity, arity_min, fail, int};
use super::conv::{to_float64, to_int64};

pub(crate) fn until_step(
    name: &str,
    start: i64,
    stop: i64,
    step: i64,
) -> Result<Vec<Value>, TemplateError> {
    let counts_down = stop < start;
    if step == 0 || (step > 0) == counts_down {
        return Ok(Vec::new());
    }
    // Items = ceil(|stop - start| / |step|), in i128 so no i64 range overflows.
    let span = (i128::from(stop) - i128::from(start)).unsigned_abs();
    let stride = i128::from(step).unsigned_abs();
    let items = span.div_ceil(stride);
    if items > MAX_LIST_ITEMS as u128 {
        return Err(fail(
            name,
            format!(
                "the list would have {items} items, more than the {MAX_LIST_ITEMS} a template function may produce"
            ),
        ));
    }
    let mut v = Vec::new();
    let mut i = start;
    while (counts_down && i > stop) || (!counts_down && i < stop) {
        v.push(Value::Int(i));
        // Go wraps around at the end of int64 and would loop on; the count above
        // already bounds the list, so stop where the next item would not fit.
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(v)
}

pub(super) fn register(m: &mut Reg) {
    m.add("add1", |a| {
        arity("add1", a, 1)?;
        Ok(Value::Int(to_int64(&a[0]).wrapping_add(1)))
    });
    m.add("add", |a| {
        Ok(Value::Int(
            a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
        ))
    });
    m.add("sub", |a| {
        arity("sub", a, 2)?;
        Ok(Value::Int(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
    });
    m.add("mul", |a| {
        arity_min("mul", a, 1)?;
        Ok(Value::Int(
            a.iter().fold(1i64, |acc, v| acc.wrapping_mul(to_int64(v))),
        ))
    });
    m.add("div", |a| {
        arity("div", a, 2)?;
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err(fail("div", "runtime error: integer divide by zero"));
        }
        Ok(Value::Int(to_int64(&a[0]).wrapping_div(d)))
    });
    m.add("mod", |a| {
        arity("mod", a, 2)?;
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err(fail("mod", "runtime error: integer divide by zero"));
        }
        Ok(Value::Int(to_int64(&a[0]).wrapping_rem(d)))
    });
    for name in ["max", "biggest"] {
        m.add(name, move |a| {
            arity_min(name, a, 1)?;
            Ok(Value::Int(a.iter().map(to_int64).fold(i64::MIN, i64::max)))
        });
    }
    m.add("min", |a| {
        arity_min("min", a, 1)?;
        Ok(Value::Int(a.iter().map(to_int64).fold(i64::MAX, i64::min)))
    });
    m.add("floor", |a| {
        arity("floor", a, 1)?;
        Ok(Value::Float(to_float64(&a[0]).floor()))
    });
    m.add("ceil", |a| {
        arity("ceil", a, 1)?;
        Ok(Value::Float(to_float64(&a[0]).ceil()))
    });
    m.add("round", |a| {
        arity_min("round", a, 2)?;
        if a.len() > 3 {
            return Err(fail("round", "wrong number of args for round: want 2 or 3"));
        }
        let places = int("round", &a[1])? as f64;
        let round_on = match a.get(2) {
            Some(Value::Float(f)) => *f,
            Some(Value::Int(i)) => *i as f64,
            Some(other) => {
                return Err(fail(
                    "round",
                    format!(
                        "wrong type for value; expected float64; got {}",
                        crate::gofmt::type_name(other)
                    ),
                ));
            }
            None => 0.5,
        };
        let pow = 10f64.powf(places);
        let digit = pow * to_float64(&a[0]);
        let frac = digit.fract();
        let rounded = if frac >= round_on {
            digit.ceil()
        } else {
            digit.floor()
        };
        Ok(Value::Float(rounded / pow))
    });
    m.add("until", |a| {
        arity("until", a, 1)?;
        let count = int("until", &a[0])?;
        let step = if count < 0 { -1 } else { 1 };
        Ok(Value::List(until_step("until", 0, count, step)?.into()))
    });
    m.add("untilStep", |a| {
        arity("untilStep", a, 3)?;
        let (start, stop, step) = (
            int("untilStep", &a[0])?,
            int("untilStep", &a[1])?,
            int("untilStep", &a[2])?,
        );
        Ok(Value::List(
            until_step("untilStep", start, stop, step)?.into(),
        ))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r, rp};

    /// Found by fuzzing: `untilStep` near the end of int64 overflowed `i += step`
    /// (a panic with overflow checks, an endless loop filling memory without).
    #[test]
    fn until_step_stops_at_the_end_of_int64() {
        let list = super::until_step("untilStep", i64::MAX - 5, i64::MAX, 4).expect("small list");
        assert_eq!(list.len(), 2);
        let list = super::until_step("untilStep", i64::MIN + 5, i64::MIN, -4).expect("small list");
        assert_eq!(list.len(), 2);
        assert!(super::until_step("untilStep", i64::MIN, i64::MAX, 1).is_err());
        assert!(
            super::until_step("untilStep", 0, 10, 0)
                .expect("empty")
                .is_empty()
        );
    }

    #[test]
    fn integer_math_casts_like_sprig_v2() {
        assert_eq!(r(r#"{{ add "1" 2.0 }}"#), "3");
        assert_eq!(r(r#"{{ add 1 2 3 }}"#), "6");
        assert_eq!(r(r#"{{ add "1.5" 1 }}"#), "1");
        assert_eq!(r(r#"{{ add1 "41" }}"#), "42");
        assert_eq!(r(r#"{{ sub 10 "4" }}"#), "6");
        assert_eq!(r(r#"{{ mul 2 "3" 4.9 }}"#), "24");
        assert_eq!(r(r#"{{ div 7 2 }}"#), "3");
        assert_eq!(r(r#"{{ mod -7 3 }}"#), "-1");
        assert_eq!(
            r(r#"{{ max 1 "9" 3 }} {{ min 4 "x" 2 }} {{ biggest 3 5 }}"#),
            "9 0 5"
        );
        assert_eq!(r(r#"{{ add true 1 }}"#), "2");
        assert!(err(r#"{{ div 1 0 }}"#).contains("divide by zero"));
    }

    #[test]
    fn int_conversions() {
        assert_eq!(r(r#"{{ int "3" }}"#), "3");
        assert_eq!(r(r#"{{ int "3.7" }}"#), "0");
        assert_eq!(r(r#"{{ int 3.7 }}"#), "3");
        assert_eq!(r(r#"{{ int64 "-12" }}"#), "-12");
        assert_eq!(r(r#"{{ float64 "1.5" }}"#), "1.5");
        assert_eq!(r(r#"{{ atoi "12" }}"#), "12");
        assert_eq!(r(r#"{{ toDecimal "0755" }}"#), "493");
        assert_eq!(
            rp(
                r#"{{ if lt (int .Params.N) 3 }}small{{ end }}"#,
                &[("N", "2")]
            ),
            "small"
        );
    }

    #[test]
    fn float_math() {
        assert_eq!(r(r#"{{ floor "1.7" }} {{ ceil 1.2 }}"#), "1 2");
        assert_eq!(r(r#"{{ round 3.14159 2 }}"#), "3.14");
        assert_eq!(r(r#"{{ round "2.5" 0 }}"#), "3");
        assert_eq!(r(r#"{{ round 2.5 0 0.6 }}"#), "2");
    }

    #[test]
    fn sequences() {
        assert_eq!(r(r#"{{ until 3 }}"#), "[0 1 2]");
        assert_eq!(r(r#"{{ until -2 }}"#), "[0 -1]");
        assert_eq!(r(r#"{{ untilStep 1 10 3 }}"#), "[1 4 7]");
        assert_eq!(r(r#"{{ untilStep 5 0 -2 }}"#), "[5 3 1]");
        assert_eq!(r(r#"{{ untilStep 0 5 0 }}"#), "[]");
        assert!(err(r#"{{ until "3" }}"#).contains("expected int"));
        assert_eq!(
            r(r#"{{ range $i, $v := until 2 }}{{ add $v 10 }},{{ end }}"#),
            "10,11,"
        );
    }
}
