//! Hex strings as nodes and people write them: the one place that reads them.
//!
//! Every hex input of ledgerd (RPC params, an upstream's answers, fixtures,
//! flags such as `--sequencer-pubkey`) goes through here, so each accepts the
//! same forms: any case, with or without a `0x` or `0X` prefix. Errors say
//! what is wrong in words ([`HexError`]); callers put the field's name
//! before them. Writing hex is [`crate::wire::write::write_hex`]'s job.

use std::fmt;

/// Why a string is not the hex that was asked for. Displays as the end of a
/// sentence that starts with the field's name: "hash must be 32 bytes, got 2".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// A character that is not a hex digit, at this position (after any 0x).
    NotHex { at: usize, found: char },
    /// An odd number of digits.
    OddLength(usize),
    /// Valid hex of the wrong size: `want` bytes were asked for.
    WrongLength { want: usize, got: usize },
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::NotHex { at, found } => {
                write!(f, "is not hex: {found:?} at position {at}")
            }
            HexError::OddLength(n) => {
                write!(f, "is not hex: it has an odd number of digits ({n})")
            }
            HexError::WrongLength { want, got } => write!(f, "must be {want} bytes, got {got}"),
        }
    }
}

impl std::error::Error for HexError {}

/// Hex digit values by byte; 0xff for a byte that is not a hex digit.
static HEX_VALUE: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// `s` without a leading `0x` or `0X`.
pub fn strip_0x(s: &str) -> &str {
    s.strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s)
}

/// Fails with the position of the first character that is not a hex digit.
fn all_hex(digits: &[u8]) -> Result<(), HexError> {
    match digits.iter().position(|&c| HEX_VALUE[c as usize] == 0xff) {
        None => Ok(()),
        Some(at) => Err(HexError::NotHex {
            at,
            found: digits[at] as char,
        }),
    }
}

/// Decodes hex digit pairs into `out` (as long as `digits` is twice `out`).
pub fn decode_into(digits: &[u8], out: &mut [u8]) -> Result<(), HexError> {
    let mut bad = 0u8;
    for (pair, byte) in digits.chunks_exact(2).zip(out.iter_mut()) {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        bad |= hi | lo;
        *byte = hi << 4 | (lo & 0x0f);
    }
    if bad & 0xf0 == 0 {
        return Ok(());
    }
    all_hex(digits)
}

/// Any number of bytes.
pub fn decode(s: &str) -> Result<Vec<u8>, HexError> {
    let digits = strip_0x(s).as_bytes();
    if !digits.len().is_multiple_of(2) {
        all_hex(digits)?;
        return Err(HexError::OddLength(digits.len()));
    }
    let mut out = vec![0u8; digits.len() / 2];
    decode_into(digits, &mut out)?;
    Ok(out)
}

/// Exactly `N` bytes. Says what is wrong first: a stray character, then the
/// length.
pub fn decode_array<const N: usize>(s: &str) -> Result<[u8; N], HexError> {
    let digits = strip_0x(s).as_bytes();
    if digits.len() != 2 * N {
        all_hex(digits)?;
        if !digits.len().is_multiple_of(2) {
            return Err(HexError::OddLength(digits.len()));
        }
        return Err(HexError::WrongLength {
            want: N,
            got: digits.len() / 2,
        });
    }
    let mut out = [0u8; N];
    decode_into(digits, &mut out)?;
    Ok(out)
}

/// `2 * N` lowercase hex digits into `N` bytes, at compile time (for keys
/// pinned in the source; a typo fails the build).
pub const fn decode_const<const N: usize>(digits: &[u8]) -> [u8; N] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lowercase hex digit"),
        }
    }
    assert!(digits.len() == 2 * N, "wrong number of hex digits");
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = (nibble(digits[2 * i]) << 4) | nibble(digits[2 * i + 1]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_cases_with_or_without_either_prefix() {
        assert_eq!(decode("0x00aBff").unwrap(), vec![0x00, 0xab, 0xff]);
        assert_eq!(decode("0X00aBff").unwrap(), vec![0x00, 0xab, 0xff]);
        assert_eq!(decode("").unwrap(), Vec::<u8>::new());
        assert_eq!(decode_array::<2>("A0b1").unwrap(), [0xa0, 0xb1]);
        assert_eq!(decode_array::<2>("0XA0b1").unwrap(), [0xa0, 0xb1]);
        const KEY: [u8; 2] = decode_const(b"a0b1");
        assert_eq!(KEY, [0xa0, 0xb1]);
    }

    #[test]
    fn says_what_is_wrong_in_words() {
        assert_eq!(
            decode("abc").unwrap_err().to_string(),
            "is not hex: it has an odd number of digits (3)"
        );
        assert_eq!(
            decode("0x12g4").unwrap_err().to_string(),
            "is not hex: 'g' at position 2"
        );
        assert_eq!(
            decode_array::<32>("00ff").unwrap_err().to_string(),
            "must be 32 bytes, got 2"
        );
        // A stray character is named before a wrong length.
        assert_eq!(
            decode_array::<32>("00fz").unwrap_err(),
            HexError::NotHex { at: 3, found: 'z' }
        );
    }
}
