//! Bitcoin Core's header rules, one function each, over whatever context
//! the caller holds ([`Ancestors`]: the time and bits of the headers below).
//!
//! - [`next_bits`][]: `GetNextWorkRequired` / `CalculateNextWorkRequired`
//!   (`src/pow.cpp`): the retarget every interval with the 4x clamps,
//!   testnet's 20-minute rule and its walk-back, BIP94's period-first bits,
//!   regtest's no-retarget.
//! - [`derive_target`][]: `DeriveTarget` / `CheckProofOfWorkImpl`: a compact
//!   target that is negative, zero, overflowing or above the pow limit is
//!   refused; the hash must be at most the target.
//! - [`median_time_past`][]: `GetMedianTimePast` over the last 11.
//! - [`check_contextual`][]: `ContextualCheckBlockHeader`
//!   (`src/validation.cpp`): bits exactly (as a u32), time above the
//!   median time past, BIP94's timewarp rule at a period's first block, at
//!   most two hours ahead of the clock, the version floors of BIP34/66/65.
//!
//! A rule whose context the caller does not hold (the headers it needs are
//! not there: `verify-headers` with `--start-height`) is reported as not
//! checked, never as passed.

use std::fmt;

use bitcoin::block::Header;
use bitcoin::pow::{CompactTarget, Target};
use bitcoin::BlockHash;

use super::params::{BitcoinNetwork, ChainParams};

/// Core's `MAX_FUTURE_BLOCK_TIME`: two hours.
pub const MAX_FUTURE_BLOCK_TIME: i64 = 2 * 60 * 60;
/// Core's `MAX_TIMEWARP` (BIP94): 600 s.
pub const MAX_TIMEWARP: i64 = 600;
/// Headers in a median time past.
pub const MEDIAN_TIME_SPAN: u64 = 11;

/// What a rule needs of a header below: its time and its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Past {
    pub time: u32,
    pub bits: u32,
}

impl Past {
    pub fn of(header: &Header) -> Past {
        Past {
            time: header.time,
            bits: header.bits.to_consensus(),
        }
    }
}

/// The headers below the one checked, by height (`None`: not held).
pub trait Ancestors {
    fn at(&self, height: u64) -> Option<Past>;

    /// Testnet's walk-back from `prev_height`: the bits of the last header
    /// at or below it that is genesis, a period's first header, or not at
    /// the pow limit (`None`: a header the walk needs is not held). A
    /// holder that tracks this as headers arrive answers without walking.
    fn last_real_bits(&self, prev_height: u64, params: &ChainParams) -> Option<u32> {
        walk_back(self, prev_height, params)
    }
}

/// Testnet's walk-back done header by header (see [`Ancestors::last_real_bits`]).
pub fn walk_back(
    ancestors: &(impl Ancestors + ?Sized),
    prev_height: u64,
    params: &ChainParams,
) -> Option<u32> {
    let interval = params.interval();
    let mut h = prev_height;
    let mut at = ancestors.at(h)?;
    while h > 0 && !h.is_multiple_of(interval) && at.bits == params.pow_limit_bits {
        h -= 1;
        at = ancestors.at(h)?;
    }
    Some(at.bits)
}

/// The bits the walk-back finds from a header of `bits` at `height`: its
/// own when the walk stops there (genesis, a period's first header, or bits
/// other than the pow limit's), else `parent`'s, those it finds from the
/// header below.
pub fn real_bits(height: u64, bits: u32, parent: Option<u32>, params: &ChainParams) -> Option<u32> {
    let stops = height.is_multiple_of(params.interval()) || bits != params.pow_limit_bits;
    stops.then_some(bits).or(parent)
}

/// Each header rule, by Bitcoin Core's reject reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The first header of a chain checked from genesis is the network's
    /// genesis (`verify-headers` without `--start-height`).
    Genesis,
    /// `prev_blockhash` is the hash of the header before it (`bad-prevblk`).
    Link,
    /// The hash is at most the target its bits encode, and the bits encode
    /// a valid target no easier than the pow limit (`high-hash`).
    ProofOfWork,
    /// The bits are exactly what the difficulty rules demand (`bad-diffbits`).
    Bits,
    /// The time is above the median of the previous 11 (`time-too-old`).
    MedianTimePast,
    /// BIP94: a period's first header is not more than 600 s before its
    /// parent (`time-timewarp-attack`).
    Timewarp,
    /// The time is at most two hours ahead of the local clock (`time-too-new`).
    TimeTooNew,
    /// The version floors of BIP34, BIP66, BIP65 (`bad-version`).
    Version,
}

impl Rule {
    /// Every rule, in the order they are checked (and declared).
    pub const ALL: [Rule; 8] = [
        Rule::Genesis,
        Rule::Link,
        Rule::ProofOfWork,
        Rule::Bits,
        Rule::MedianTimePast,
        Rule::Timewarp,
        Rule::TimeTooNew,
        Rule::Version,
    ];

    /// Bitcoin Core's reject reason for this rule (ours for `Genesis`).
    pub fn name(self) -> &'static str {
        match self {
            Rule::Genesis => "genesis",
            Rule::Link => "bad-prevblk",
            Rule::ProofOfWork => "high-hash",
            Rule::Bits => "bad-diffbits",
            Rule::MedianTimePast => "time-too-old",
            Rule::Timewarp => "time-timewarp-attack",
            Rule::TimeTooNew => "time-too-new",
            Rule::Version => "bad-version",
        }
    }

    /// Index in [`Rule::ALL`] (the order they are declared in).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A header that breaks a rule: which, at which height, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderError {
    pub height: u64,
    pub hash: BlockHash,
    pub rule: Rule,
    /// A sentence: what was found and what the rule demands.
    pub detail: String,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "header {} at height {} breaks {} ({}): {}",
            self.hash,
            self.height,
            self.rule,
            self.rule.name(),
            self.detail
        )
    }
}

impl std::error::Error for HeaderError {}

/// Which rules a header was checked by (and passed: a failure is an error
/// instead), and which it was not for lack of context. A rule that does
/// not apply at a height (BIP94's timewarp rule off a period's first
/// header) is in neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    pub passed: u16,
    pub missing: u16,
}

impl Checked {
    pub fn set(&mut self, rule: Rule) {
        self.passed |= 1 << rule.index();
    }
    pub fn lack(&mut self, rule: Rule) {
        self.missing |= 1 << rule.index();
    }
    pub fn has(self, rule: Rule) -> bool {
        self.passed & (1 << rule.index()) != 0
    }
    pub fn lacks(self, rule: Rule) -> bool {
        self.missing & (1 << rule.index()) != 0
    }
}

/// `DeriveTarget`: the target `bits` encode, or `None` when it is negative,
/// zero, overflows 256 bits or is easier than `pow_limit`.
pub fn derive_target(bits: u32, pow_limit: Target) -> Option<Target> {
    let size = bits >> 24;
    let word = bits & 0x007f_ffff;
    let negative = word != 0 && bits & 0x0080_0000 != 0;
    let overflow =
        word != 0 && (size > 34 || (word > 0xff && size > 33) || (word > 0xffff && size > 32));
    if negative || overflow {
        return None;
    }
    let target = Target::from_compact(CompactTarget::from_consensus(bits));
    if target == Target::ZERO || target > pow_limit {
        return None;
    }
    Some(target)
}

/// `CheckProofOfWorkImpl`: `hash` meets the target of `bits`.
pub fn check_pow(hash: BlockHash, bits: u32, params: &ChainParams) -> Result<(), String> {
    check_pow_with(hash, bits, params, params.pow_limit())
}

/// [`check_pow`] with the network's pow limit already decoded.
fn check_pow_with(
    hash: BlockHash,
    bits: u32,
    params: &ChainParams,
    pow_limit: Target,
) -> Result<(), String> {
    match derive_target(bits, pow_limit) {
        None => Err(format!(
            "bits {bits:#010x} encode no valid target for {} (negative, zero, overflowing or \
             easier than the pow limit {:#010x})",
            params.chain, params.pow_limit_bits
        )),
        Some(target) if !target.is_met_by(hash) => Err(format!(
            "the hash is above the target its bits {bits:#010x} encode"
        )),
        Some(_) => Ok(()),
    }
}

/// `GetNextWorkRequired` for the header at `prev_height + 1` whose time is
/// `time`: the bits it must carry, or `None` when `ancestors` lacks a header
/// the rule needs.
pub fn next_bits(
    params: &ChainParams,
    prev_height: u64,
    time: u32,
    ancestors: &impl Ancestors,
) -> Option<u32> {
    let interval = params.interval();
    let height = prev_height + 1;
    let prev = ancestors.at(prev_height)?;
    if !height.is_multiple_of(interval) {
        if params.allow_min_difficulty {
            // Testnet: a header more than 20 minutes after its parent must
            // carry the pow limit.
            if i64::from(time) > i64::from(prev.time) + params.target_spacing * 2 {
                return Some(params.pow_limit_bits);
            }
            // Else the last bits that were not the pow limit's, stopping at
            // a period's first header or genesis.
            return ancestors.last_real_bits(prev_height, params);
        }
        return Some(prev.bits);
    }
    // A retarget: the period's first header is `interval - 1` below the last.
    let first = ancestors.at(height - interval)?;
    Some(calculate_next_bits(params, prev, first))
}

/// `CalculateNextWorkRequired`: the retarget from the period's `first` and
/// `last` headers (BIP94: starting from `first`'s bits, else `last`'s).
pub fn calculate_next_bits(params: &ChainParams, last: Past, first: Past) -> u32 {
    if params.no_retargeting {
        return last.bits;
    }
    let timespan = i64::from(last.time) - i64::from(first.time);
    let base = if params.enforce_bip94 {
        first.bits
    } else {
        last.bits
    };
    retarget(params, base, timespan)
}

/// `base`'s target times `timespan` (clamped to a quarter and four times
/// the target timespan) over the target timespan, capped at the pow limit.
pub fn retarget(params: &ChainParams, base: u32, timespan: i64) -> u32 {
    let timespan = timespan.clamp(params.target_timespan / 4, params.target_timespan * 4);
    let consensus = bitcoin::consensus::Params::new(params.chain.network());
    // The bitcoin crate's retarget is Core's arithmetic (256-bit multiply and
    // divide, capped at the pow limit) for chains whose target timespan it
    // knows as Core does: all but regtest, which never retargets.
    debug_assert!(
        params.chain == BitcoinNetwork::Regtest
            || consensus.pow_target_timespan == params.target_timespan as u64
    );
    CompactTarget::from_next_work_required(
        CompactTarget::from_consensus(base),
        timespan as u64,
        &consensus,
    )
    .to_consensus()
}

/// `GetMedianTimePast` of the header at `prev_height`: the median time of
/// it and the up to 10 before it; `None` when one of them is not held.
pub fn median_time_past(prev_height: u64, ancestors: &impl Ancestors) -> Option<i64> {
    let n = MEDIAN_TIME_SPAN.min(prev_height + 1);
    let mut times = [0u32; MEDIAN_TIME_SPAN as usize];
    for i in 0..n {
        times[i as usize] = ancestors.at(prev_height - i)?.time;
    }
    let times = &mut times[..n as usize];
    times.sort_unstable();
    Some(i64::from(times[times.len() / 2]))
}

/// `CheckProofOfWork` (`pow_limit`: the network's, decoded), then above
/// genesis [`check_contextual`]: what the header at `height` is checked by
/// once it links to the header below it. The rules it could check.
pub fn check_header(
    params: &ChainParams,
    pow_limit: Target,
    height: u64,
    header: &Header,
    hash: BlockHash,
    ancestors: &impl Ancestors,
    now: i64,
) -> Result<Checked, HeaderError> {
    let bits = header.bits.to_consensus();
    check_pow_with(hash, bits, params, pow_limit).map_err(|detail| HeaderError {
        height,
        hash,
        rule: Rule::ProofOfWork,
        detail,
    })?;
    let mut checked = match height.checked_sub(1) {
        Some(prev_height) => check_contextual(params, prev_height, header, hash, ancestors, now)?,
        None => Checked::default(),
    };
    checked.set(Rule::ProofOfWork);
    Ok(checked)
}

/// `ContextualCheckBlockHeader` (after the link and proof-of-work checks):
/// the header at `prev_height + 1` against the headers below it and the
/// clock `now` (Unix seconds). The rules it could check; a rule whose
/// context is missing is in [`Checked::missing`].
pub fn check_contextual(
    params: &ChainParams,
    prev_height: u64,
    header: &Header,
    hash: BlockHash,
    ancestors: &impl Ancestors,
    now: i64,
) -> Result<Checked, HeaderError> {
    let height = prev_height + 1;
    let mut checked = Checked::default();
    let fail = |rule: Rule, detail: String| HeaderError {
        height,
        hash,
        rule,
        detail,
    };
    let bits = header.bits.to_consensus();
    let time = header.time;
    match next_bits(params, prev_height, time, ancestors) {
        Some(want) if bits != want => {
            return Err(fail(
                Rule::Bits,
                format!(
                    "its bits are {bits:#010x}, the difficulty rules of {} demand {want:#010x}",
                    params.chain
                ),
            ))
        }
        Some(_) => checked.set(Rule::Bits),
        None => checked.lack(Rule::Bits),
    }
    match median_time_past(prev_height, ancestors) {
        Some(mtp) if i64::from(time) <= mtp => {
            return Err(fail(
                Rule::MedianTimePast,
                format!("its time {time} is not above the median time past {mtp} of the 11 headers before it"),
            ))
        }
        Some(_) => checked.set(Rule::MedianTimePast),
        None => checked.lack(Rule::MedianTimePast),
    }
    if params.enforce_bip94 && height.is_multiple_of(params.interval()) {
        match ancestors.at(prev_height) {
            Some(prev) if i64::from(time) < i64::from(prev.time) - MAX_TIMEWARP => {
                return Err(fail(
                    Rule::Timewarp,
                    format!(
                        "it opens a difficulty period with time {time}, more than {MAX_TIMEWARP} s \
                         before its parent's {} (BIP94)",
                        prev.time
                    ),
                ))
            }
            Some(_) => checked.set(Rule::Timewarp),
            None => checked.lack(Rule::Timewarp),
        }
    }
    if i64::from(time) > now + MAX_FUTURE_BLOCK_TIME {
        return Err(fail(
            Rule::TimeTooNew,
            format!("its time {time} is more than two hours ahead of the local clock ({now})"),
        ));
    }
    checked.set(Rule::TimeTooNew);
    check_version(params, height, header.version.to_consensus())
        .map_err(|detail| fail(Rule::Version, detail))?;
    checked.set(Rule::Version);
    Ok(checked)
}

/// The version floors: at least 2 from BIP34's height, 3 from BIP66's, 4
/// from BIP65's (`DeploymentActiveAfter` of the buried deployments).
pub fn check_version(params: &ChainParams, height: u64, version: i32) -> Result<(), String> {
    let floor = [
        (params.bip34_height, 2, "BIP34"),
        (params.bip66_height, 3, "BIP66"),
        (params.bip65_height, 4, "BIP65"),
    ];
    for (from, min, bip) in floor {
        if height >= from && version < min {
            return Err(format!(
                "its version {version:#010x} is below {min}, which {bip} demands from height {from} on {}",
                params.chain
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
