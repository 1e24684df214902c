//! Method parameters: by position or by name, and the two parameter kinds
//! (heights and hashes) with their accepted spellings.
//!
//! - Heights and slot numbers: a JSON non-negative integer (`7`), a decimal
//!   string (`"7"`) or a hex string (`"0x7"`, `"0X7"`), fitting in u64.
//! - Hashes: 32 bytes as exactly 64 hex digits, with or without `0x`, any case.
//!
//! Anything else is `-32602` with a `data` saying what was wrong and what is
//! accepted. Extra positional parameters are ignored.

use std::collections::HashMap;

use serde_json::value::RawValue;

use super::error::{shorten, RpcError};
use crate::types::Hash;

/// The `params` member of a request, split but not yet interpreted.
#[derive(Debug, Default)]
pub enum Params<'a> {
    /// No `params` member.
    #[default]
    None,
    /// Positional parameters.
    Array(Vec<&'a RawValue>),
    /// Parameters by name.
    Object(HashMap<String, &'a RawValue>),
}

/// Where a parameter is found: its position and its name.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub position: usize,
    pub name: &'static str,
}

impl Slot {
    /// The parameter at `position` in an array, or named `name` in an object.
    pub const fn at(position: usize, name: &'static str) -> Slot {
        Slot { position, name }
    }
}

/// The parameters several methods share.
pub const HEIGHT: Slot = Slot::at(0, "height");
pub const HASH: Slot = Slot::at(0, "hash");
pub const NUMBER: Slot = Slot::at(0, "number");
pub const START: Slot = Slot::at(0, "start");
pub const END: Slot = Slot::at(1, "end");

impl<'a> Params<'a> {
    /// The parameter at `slot`, if given.
    pub fn get(&self, slot: Slot) -> Option<&'a RawValue> {
        match self {
            Params::None => None,
            Params::Array(items) => items.get(slot.position).copied(),
            Params::Object(map) => map.get(slot.name).copied(),
        }
    }

    /// The parameter at `slot`; `-32602` when missing.
    pub fn required(&self, slot: Slot) -> Result<&'a RawValue, RpcError> {
        self.get(slot).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "missing parameter `{}`: pass it at position {} of the params array, \
                 or by name in a params object",
                slot.name, slot.position
            ))
        })
    }

    /// A required height or slot number.
    pub fn height(&self, slot: Slot) -> Result<u64, RpcError> {
        parse_height(slot.name, self.required(slot)?)
    }

    /// A required 32-byte hash.
    pub fn hash(&self, slot: Slot) -> Result<Hash, RpcError> {
        parse_hash(slot.name, self.required(slot)?)
    }
}

fn height_error(name: &str, raw: &str, why: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "`{name}` {why} (got {}); give a non-negative integer that fits in u64, \
         as a JSON number (7), a decimal string (\"7\") or a 0x hex string (\"0x7\")",
        shorten(raw)
    ))
}

/// Reads a height or slot number: `7`, `"7"` or `"0x7"`, fitting in u64.
pub fn parse_height(name: &str, raw: &RawValue) -> Result<u64, RpcError> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => {
            let s: String = serde_json::from_str(text)
                .map_err(|_| height_error(name, text, "is not a valid string"))?;
            let digits = crate::hexstr::strip_0x(&s);
            let radix = if digits.len() < s.len() { 16 } else { 10 };
            let all_digits = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
            if !all_digits {
                return Err(height_error(name, text, "is not a number"));
            }
            u64::from_str_radix(digits, radix).map_err(|_| height_error(name, text, "is too large"))
        }
        Some(b'-') => Err(height_error(name, text, "is negative")),
        Some(b'0'..=b'9') => {
            if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
                return Err(height_error(name, text, "is not an integer"));
            }
            serde_json::from_str::<u64>(text).map_err(|_| height_error(name, text, "is too large"))
        }
        _ => Err(height_error(name, text, "is not a number")),
    }
}

fn hash_error(name: &str, raw: &str, why: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "`{name}` {why} (got {}); give a 32-byte hash as a string of exactly 64 hex digits, \
         with or without 0x",
        shorten(raw)
    ))
}

/// A hash with a character that is not a hex digit: that character and
/// its position (1-based, in the string as sent, `0x` included), not the
/// whole string cut short.
fn bad_digit(name: &str, text: &str, digits: &str) -> RpcError {
    let sent: String = serde_json::from_str(text).unwrap_or_default();
    let prefix = sent.chars().count() - digits.chars().count();
    let Some((i, c)) = digits
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    else {
        return hash_error(name, text, "holds a character that is not a hex digit");
    };
    RpcError::invalid_params(format!(
        "`{name}` holds {c:?}, which is not a hex digit, at character {} of {}; give a 32-byte \
         hash as a string of exactly 64 hex digits, with or without 0x",
        prefix + i + 1,
        sent.chars().count()
    ))
}

/// The text of a JSON string parameter without an optional `0x`/`0X`, for
/// hashes and blobs; the error is the reason, for the caller's sentence.
pub fn hex_text(text: &str) -> Result<String, &'static str> {
    if !text.starts_with('"') {
        return Err("is not a string");
    }
    let s: String = serde_json::from_str(text).map_err(|_| "is not a valid string")?;
    Ok(crate::hexstr::strip_0x(&s).to_string())
}

/// Reads a 32-byte hash: 64 hex digits, optional `0x`, any case.
pub fn parse_hash(name: &str, raw: &RawValue) -> Result<Hash, RpcError> {
    let text = raw.get();
    let digits = hex_text(text).map_err(|why| hash_error(name, text, why))?;
    if digits.len() != 64 {
        return Err(hash_error(
            name,
            text,
            &format!(
                "has {} characters after any 0x, not 64",
                digits.chars().count()
            ),
        ));
    }
    let mut hash = [0u8; 32];
    hex::decode_to_slice(&digits, &mut hash).map_err(|_| bad_digit(name, text, &digits))?;
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("valid JSON")
    }

    #[test]
    fn heights_in_every_accepted_spelling() {
        let ok: &[(&str, u64)] = &[
            ("7", 7),
            ("0", 0),
            ("\"7\"", 7),
            ("\"007\"", 7),
            ("\"0x7\"", 7),
            ("\"0X7\"", 7),
            ("\"0xfF\"", 255),
            ("18446744073709551615", u64::MAX),
            ("\"18446744073709551615\"", u64::MAX),
            ("\"0xffffffffffffffff\"", u64::MAX),
            ("\"\\u0037\"", 7),
        ];
        for (text, want) in ok {
            assert_eq!(parse_height("number", &raw(text)), Ok(*want), "{text}");
        }
    }

    #[test]
    fn heights_rejected() {
        let bad = [
            "-1",
            "-0",
            "1.5",
            "1.0",
            "1e3",
            "\"abc\"",
            "\"\"",
            "\"0x\"",
            "\"+7\"",
            "\" 7\"",
            "\"-1\"",
            "\"0x-1\"",
            "\"0x+1\"",
            "\"7.0\"",
            "true",
            "null",
            "[7]",
            "{\"a\":7}",
            "18446744073709551616",
            "99999999999999999999999999",
            "\"18446744073709551616\"",
            "\"0x10000000000000000\"",
            "\"٣\"",
        ];
        for text in bad {
            let e = parse_height("number", &raw(text)).expect_err(text);
            assert_eq!(e.code, -32602, "{text}");
            assert!(e.data.contains("`number`"), "{}", e.data);
            assert!(e.data.contains("0x hex"), "{}", e.data);
        }
    }

    #[test]
    fn hashes() {
        let lower = "ab".repeat(32);
        let want = [0xab; 32];
        for text in [
            format!("\"{lower}\""),
            format!("\"0x{lower}\""),
            format!("\"0X{lower}\""),
            format!("\"{}\"", lower.to_uppercase()),
            format!("\"0x{}\"", "aB".repeat(32)),
        ] {
            assert_eq!(parse_hash("hash", &raw(&text)), Ok(want), "{text}");
        }
        for text in [
            format!("\"{}\"", "ab".repeat(31)),
            format!("\"{}\"", "ab".repeat(33)),
            format!("\"0x{}a\"", "ab".repeat(31)),
            format!("\"{}zz\"", "ab".repeat(31)),
            format!("\"0x0x{}\"", "ab".repeat(31)),
            format!("\"{}é\"", "a".repeat(62)),
            "\"\"".to_string(),
            "7".to_string(),
            "null".to_string(),
            format!("[\"{lower}\"]"),
        ] {
            let e = parse_hash("hash", &raw(&text)).expect_err(&text);
            assert_eq!(e.code, -32602, "{text}");
            assert!(e.data.contains("64 hex digits"), "{}", e.data);
        }
    }

    #[test]
    fn a_bad_character_in_a_hash_is_shown_with_its_position() {
        let text = format!("\"0x{}zb\"", "ab".repeat(31));
        let e = parse_hash("hash", &raw(&text)).expect_err(&text);
        assert_eq!(e.code, -32602);
        assert!(
            e.data
                .starts_with("`hash` holds 'z', which is not a hex digit, at character 65 of 66;"),
            "{}",
            e.data
        );
        assert!(e.data.contains("64 hex digits"), "{}", e.data);
    }

    #[test]
    fn by_position_or_name() {
        let arr: Vec<&RawValue> = serde_json::from_str("[1, \"0x2\", 99]").expect("json");
        let p = Params::Array(arr);
        assert_eq!(p.height(START), Ok(1));
        assert_eq!(p.height(END), Ok(2));
        let map: HashMap<String, &RawValue> =
            serde_json::from_str("{\"end\": 5, \"start\": \"3\"}").expect("json");
        let p = Params::Object(map);
        assert_eq!((p.height(START), p.height(END)), (Ok(3), Ok(5)));
        let arr: Vec<&RawValue> = serde_json::from_str("[1]").expect("json");
        let e = Params::Array(arr).height(END).expect_err("missing");
        assert_eq!(e.code, -32602);
        assert!(e.data.contains("missing parameter `end`"));
        assert_eq!(Params::None.height(START).map_err(|e| e.code), Err(-32602));
    }
}
