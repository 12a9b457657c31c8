//! base64 / base32. Decoding errors come back as the text of the error, as in Sprig.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::Reg;
use super::args::{arity, s, string};

pub(super) fn register(m: &mut Reg) {
    m.add("b64enc", |a| {
        arity("b64enc", a, 1)?;
        Ok(s(STANDARD.encode(string("b64enc", &a[0])?.as_bytes())))
    });
    m.add("b64dec", |a| {
        arity("b64dec", a, 1)?;
        let input = string("b64dec", &a[0])?;
        Ok(s(match STANDARD.decode(input.as_bytes()) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                // Go names the offset of the bad symbol, or of the incomplete quantum.
                let at = match e {
                    base64::DecodeError::InvalidByte(o, _)
                    | base64::DecodeError::InvalidLastSymbol(o, _) => o,
                    _ => input.len() / 4 * 4,
                };
                format!("illegal base64 data at input byte {at}")
            }
        }))
    });
    m.add("b32enc", |a| {
        arity("b32enc", a, 1)?;
        Ok(s(
            data_encoding::BASE32.encode(string("b32enc", &a[0])?.as_bytes())
        ))
    });
    m.add("b32dec", |a| {
        arity("b32dec", a, 1)?;
        Ok(s(
            match data_encoding::BASE32.decode(string("b32dec", &a[0])?.as_bytes()) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => format!("illegal base32 data at input byte {}", e.position),
            },
        ))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::r;

    #[test]
    fn round_trips() {
        assert_eq!(
            r(r#"{{ b64enc "hello" }} {{ b64dec "aGVsbG8=" }}"#),
            "aGVsbG8= hello"
        );
        assert_eq!(
            r(r#"{{ b32enc "hello" }} {{ b32dec "NBSWY3DP" }}"#),
            "NBSWY3DP hello"
        );
    }
}
