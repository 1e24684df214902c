//! `ledgerd verify-headers`: a file of Bitcoin headers checked by the
//! network's rules, as far as the file holds the context each rule needs.
//!
//! The file is raw 80-byte headers back to back, or hex text with one
//! header per line (detected: raw bytes are never all hex digits and line
//! ends). Without a start height the first header must be the network's
//! genesis. Each header is checked as it is read, with the last
//! `interval` headers held in a ring (the context of a retarget, a testnet
//! walk-back and the median time past); nothing is allocated per header.
//!
//! A rule whose context the file does not hold (the first headers after a
//! `--start-height`: their parent, the 11 headers of a median time past,
//! a retarget's period start) is counted as not checked for that header:
//! neither passed nor failed. The first header that fails a rule ends the
//! check.

use std::fmt;

use bitcoin::block::Header;
use bitcoin::hashes::{sha256d, Hash as _};
use bitcoin::BlockHash;

use super::params::{BitcoinNetwork, ChainParams};
use super::rules::{self, Ancestors, Checked, HeaderError, Past, Rule};

/// How the file's headers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// 80-byte headers back to back.
    Raw,
    /// Hex, one header per line.
    Hex,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Raw => "raw 80-byte headers",
            Format::Hex => "hex, one header per line",
        })
    }
}

/// Why a file cannot be read as headers (before any rule).
#[derive(Debug, PartialEq, Eq)]
pub enum InputError {
    /// Raw bytes whose length is no multiple of 80.
    RawLength(usize),
    /// A hex line that is not 160 hex digits.
    BadLine { line: usize, reason: String },
    /// No header at all.
    Empty,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::RawLength(n) => write!(
                f,
                "the file is {n} bytes of binary, which is no whole number of 80-byte headers"
            ),
            InputError::BadLine { line, reason } => write!(
                f,
                "line {line} is no header: {reason} (a hex file holds one header per line, 160 hex digits)"
            ),
            InputError::Empty => f.write_str("the file holds no header"),
        }
    }
}

impl std::error::Error for InputError {}

/// Which format `bytes` are in: hex when the first 4 KiB are hex digits
/// and line ends (a raw header has zero bytes in its hashes long before);
/// a hex file with a bad character further on is refused at its line.
pub fn detect(bytes: &[u8]) -> Format {
    let text = bytes[..bytes.len().min(4096)]
        .iter()
        .all(|b| b.is_ascii_hexdigit() || b.is_ascii_whitespace());
    if text && !bytes.is_empty() {
        Format::Hex
    } else {
        Format::Raw
    }
}

/// Calls `each` with every header's 80 bytes, in order.
pub fn for_each_header(
    bytes: &[u8],
    format: Format,
    mut each: impl FnMut(&[u8; 80]) -> bool,
) -> Result<(), InputError> {
    match format {
        Format::Raw => {
            if !bytes.len().is_multiple_of(80) {
                return Err(InputError::RawLength(bytes.len()));
            }
            for raw in bytes.as_chunks::<80>().0 {
                if !each(raw) {
                    break;
                }
            }
        }
        Format::Hex => {
            let mut at = 0;
            let mut i = 0;
            while at < bytes.len() {
                i += 1;
                // Most lines are 160 digits and a line end: no scan needed.
                let end = match bytes.get(at + 160) {
                    Some(b'\n') => at + 160,
                    _ => bytes[at..]
                        .iter()
                        .position(|b| *b == b'\n')
                        .map_or(bytes.len(), |p| at + p),
                };
                let line = bytes[at..end].trim_ascii();
                at = end + 1;
                if line.is_empty() {
                    continue;
                }
                let mut raw = [0u8; 80];
                decode_hex_80(line, &mut raw)
                    .map_err(|reason| InputError::BadLine { line: i, reason })?;
                if !each(&raw) {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// One header's 160 hex digits into its 80 bytes.
fn decode_hex_80(line: &[u8], out: &mut [u8; 80]) -> Result<(), String> {
    if line.len() != 160 {
        return Err(format!("it has {} characters", line.len()));
    }
    crate::hexstr::decode_into(line, out).map_err(|e| match e {
        crate::hexstr::HexError::NotHex { at, .. } => {
            format!("character {} is not a hex digit", at + 1)
        }
        other => other.to_string(),
    })
}

/// A header from its 80 bytes as Bitcoin encodes them.
pub fn header_from_bytes(raw: &[u8; 80]) -> Header {
    let u32_at = |i: usize| u32::from_le_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
    let hash_at = |i: usize| <[u8; 32]>::try_from(&raw[i..i + 32]).unwrap_or_default();
    Header {
        version: bitcoin::block::Version::from_consensus(u32_at(0) as i32),
        prev_blockhash: BlockHash::from_byte_array(hash_at(4)),
        merkle_root: bitcoin::TxMerkleNode::from_byte_array(hash_at(36)),
        time: u32_at(68),
        bits: bitcoin::CompactTarget::from_consensus(u32_at(72)),
        nonce: u32_at(76),
    }
}

/// A header's 80 bytes as Bitcoin encodes them.
pub fn header_bytes(header: &Header) -> [u8; 80] {
    let mut raw = [0u8; 80];
    raw[0..4].copy_from_slice(&header.version.to_consensus().to_le_bytes());
    raw[4..36].copy_from_slice(header.prev_blockhash.as_byte_array());
    raw[36..68].copy_from_slice(header.merkle_root.as_byte_array());
    raw[68..72].copy_from_slice(&header.time.to_le_bytes());
    raw[72..76].copy_from_slice(&header.bits.to_consensus().to_le_bytes());
    raw[76..80].copy_from_slice(&header.nonce.to_le_bytes());
    raw
}

/// A header's hash, from its 80 bytes hashed at once (the `bitcoin` crate's
/// `block_hash` feeds the hash engine field by field, several times slower).
pub fn header_hash(header: &Header) -> BlockHash {
    BlockHash::from_raw_hash(sha256d::Hash::hash(&header_bytes(header)))
}

/// Headers checked one after another (see the module docs).
pub struct Verifier {
    params: &'static ChainParams,
    start: u64,
    /// The next header's height.
    next: u64,
    /// The last headers' time and bits, by `height & RING_MASK`.
    ring: Vec<Past>,
    /// The last header read that is genesis, a period's first or not at
    /// the pow limit: where testnet's walk-back from the newest stops.
    last_real: Option<u32>,
    pow_limit: bitcoin::pow::Target,
    last_hash: Option<BlockHash>,
    now: i64,
    /// Per rule (by `Rule::index`): headers checked, headers not checked.
    pub passed: [u64; Rule::ALL.len()],
    pub not_checked: [u64; Rule::ALL.len()],
}

impl Verifier {
    /// Checks headers from `start_height` (`None`: genesis) by `chain`'s
    /// rules; `now` is the clock for the two-hour rule.
    pub fn new(chain: BitcoinNetwork, start_height: Option<u64>, now: i64) -> Verifier {
        let params = chain.params();
        let start = start_height.unwrap_or(0);
        Verifier {
            last_real: None,
            pow_limit: params.pow_limit(),
            params,
            start,
            next: start,
            ring: vec![Past { time: 0, bits: 0 }; RING_MASK as usize + 1],
            last_hash: None,
            now,
            passed: [0; Rule::ALL.len()],
            not_checked: [0; Rule::ALL.len()],
        }
    }

    /// Headers checked so far.
    pub fn count(&self) -> u64 {
        self.next - self.start
    }

    /// The height of the next header.
    pub fn next_height(&self) -> u64 {
        self.next
    }

    /// Checks the next header (its 80 bytes as stored).
    pub fn push(&mut self, raw: &[u8; 80]) -> Result<(), HeaderError> {
        let height = self.next;
        let hash = BlockHash::from_raw_hash(sha256d::Hash::hash(raw));
        let header = header_from_bytes(raw);
        let fail = |rule: Rule, detail: String| HeaderError {
            height,
            hash,
            rule,
            detail,
        };
        let mut checked = Checked::default();
        if height == 0 {
            let want = self.params.genesis_block_hash();
            if hash != want {
                return Err(fail(
                    Rule::Genesis,
                    format!(
                        "the first header is not {}'s genesis {want}",
                        self.params.chain
                    ),
                ));
            }
            checked.set(Rule::Genesis);
        }
        match self.last_hash {
            Some(prev) if header.prev_blockhash != prev => {
                return Err(fail(
                    Rule::Link,
                    format!(
                        "its parent is {}, but the header before it in the file is {prev}",
                        header.prev_blockhash
                    ),
                ))
            }
            Some(_) => checked.set(Rule::Link),
            None if height > 0 => checked.lack(Rule::Link),
            None => {}
        }
        let (params, pow_limit) = (self.params, self.pow_limit);
        let rest = rules::check_header(params, pow_limit, height, &header, hash, &*self, self.now)?;
        checked.passed |= rest.passed;
        checked.missing |= rest.missing;
        for rule in Rule::ALL {
            if checked.has(rule) {
                self.passed[rule.index()] += 1;
            } else if checked.lacks(rule) {
                self.not_checked[rule.index()] += 1;
            }
        }
        let past = Past::of(&header);
        self.ring[(height & RING_MASK) as usize] = past;
        self.last_real = rules::real_bits(height, past.bits, self.last_real, self.params);
        self.last_hash = Some(hash);
        self.next += 1;
        Ok(())
    }

    /// Rule checks made (and passed).
    pub fn checks(&self) -> u64 {
        self.passed.iter().sum()
    }
}

/// Ring slots, a power of two above every network's retarget interval.
const RING_MASK: u64 = 4095;

impl Ancestors for Verifier {
    fn at(&self, height: u64) -> Option<Past> {
        if height < self.start || height >= self.next || self.next - height > RING_MASK + 1 {
            return None;
        }
        Some(self.ring[(height & RING_MASK) as usize])
    }

    fn last_real_bits(&self, prev_height: u64, params: &ChainParams) -> Option<u32> {
        if prev_height + 1 == self.next && std::ptr::eq(params, self.params) {
            // Tracked as headers arrived: where the walk would stop.
            return self.last_real;
        }
        rules::walk_back(self, prev_height, params)
    }
}

/// What a whole file gave.
pub struct Outcome {
    pub format: Format,
    pub verifier: Verifier,
    /// The first failure, if any (the check stopped there).
    pub failure: Option<HeaderError>,
}

impl Outcome {
    /// Whether every check made passed.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.verifier;
        let chain = v.params.chain;
        if v.count() == 0 {
            write!(f, "no header of {chain} checked ({})", self.format)?;
        } else {
            write!(
                f,
                "{} headers of {chain} (heights {}..={}, {}): {} rule checks passed",
                v.count(),
                v.start,
                v.next - 1,
                self.format,
                v.checks()
            )?;
        }
        for rule in Rule::ALL {
            let (p, n) = (v.passed[rule.index()], v.not_checked[rule.index()]);
            if p > 0 || n > 0 {
                write!(f, "\n  {:<21} {p:>9} passed", rule.name())?;
                if n > 0 {
                    write!(f, ", {n} not checked (the file lacks the headers it needs)")?;
                }
            }
        }
        if let Some(e) = &self.failure {
            write!(
                f,
                "\nFAILED at height {}: {} ({}): {}",
                e.height,
                rule_sentence(e.rule),
                e.rule.name(),
                e.detail
            )?;
            write!(f, "\n  header {}", e.hash)?;
        }
        Ok(())
    }
}

/// A rule in words.
pub fn rule_sentence(rule: Rule) -> &'static str {
    match rule {
        Rule::Genesis => "the first header is the network's genesis",
        Rule::Link => "each header names the one before it as its parent",
        Rule::ProofOfWork => "the hash meets the target the bits encode",
        Rule::Bits => "the bits are exactly what the difficulty rules demand",
        Rule::MedianTimePast => "the time is above the median of the 11 before it",
        Rule::Timewarp => "a period's first header is at most 600 s before its parent (BIP94)",
        Rule::TimeTooNew => "the time is at most two hours ahead of the local clock",
        Rule::Version => "the version meets BIP34/66/65's floors",
    }
}

/// Checks the headers in `bytes` (format detected) by `chain`'s rules from
/// `start_height` (`None`: genesis).
pub fn verify_bytes(
    bytes: &[u8],
    chain: BitcoinNetwork,
    start_height: Option<u64>,
    now: i64,
) -> Result<Outcome, InputError> {
    let format = detect(bytes);
    let mut verifier = Verifier::new(chain, start_height, now);
    let mut failure = None;
    for_each_header(bytes, format, |raw| match verifier.push(raw) {
        Ok(()) => true,
        Err(e) => {
            failure = Some(e);
            false
        }
    })?;
    if verifier.count() == 0 && failure.is_none() {
        return Err(InputError::Empty);
    }
    Ok(Outcome {
        format,
        verifier,
        failure,
    })
}
