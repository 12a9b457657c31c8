//! `typeOf`, `typeIs`, `typeIsLike`, `kindOf`, `kindIs`, `deepEqual` with Go's names
//! for the types template values have (`string`, `int`, `float64`, `bool`,
//! `[]interface {}`, `map[string]interface {}`).

use gotmpl::Value;

use super::Reg;
use super::args::{arity, s, string};
use crate::gofmt::{kind_name, type_name};

pub(super) fn register(m: &mut Reg) {
    m.add("typeOf", |a| {
        arity("typeOf", a, 1)?;
        Ok(s(type_name(&a[0])))
    });
    m.add("kindOf", |a| {
        arity("kindOf", a, 1)?;
        Ok(s(kind_name(&a[0])))
    });
    m.add("typeIs", |a| {
        arity("typeIs", a, 2)?;
        Ok(Value::Bool(*string("typeIs", &a[0])? == *type_name(&a[1])))
    });
    m.add("typeIsLike", |a| {
        arity("typeIsLike", a, 2)?;
        let target = string("typeIsLike", &a[0])?;
        let t = type_name(&a[1]);
        Ok(Value::Bool(*target == *t || *target == *format!("*{t}")))
    });
    m.add("kindIs", |a| {
        arity("kindIs", a, 2)?;
        Ok(Value::Bool(*string("kindIs", &a[0])? == *kind_name(&a[1])))
    });
    m.add("deepEqual", |a| {
        arity("deepEqual", a, 2)?;
        Ok(Value::Bool(super::lists::deep_equal(&a[0], &a[1])))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{r, rp};

    #[test]
    fn go_type_names() {
        assert_eq!(
            r(
                r#"{{ typeOf 1 }} {{ typeOf "a" }} {{ typeOf 1.5 }} {{ typeOf (list) }} {{ typeOf (dict) }} {{ typeOf true }}"#
            ),
            "int string float64 []interface {} map[string]interface {} bool"
        );
        assert_eq!(
            r(
                r#"{{ kindOf 1 }} {{ kindOf (list) }} {{ kindOf (dict) }} {{ kindIs "string" "a" }} {{ typeIs "int" 2 }}"#
            ),
            "int slice map true true"
        );
        assert_eq!(rp(r#"{{ kindOf .Params.N }}"#, &[("N", "3")]), "string");
        assert_eq!(
            r(r#"{{ deepEqual (list 1 2) (list 1 2) }} {{ deepEqual 1 1.0 }}"#),
            "true false"
        );
    }
}
