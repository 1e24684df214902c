//! Soft confirmations: by number (2), by hash (3), range (4), status (5),
//! head (9) and head height (10).

use super::error::RpcError;
use super::RpcConfig;
use crate::ledger::{LedgerRead, LedgerReader};
use crate::wire;
use crate::wire::WireShape;

/// A soft-confirmation query, parsed from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `ledger_getSoftConfirmationByNumber`
    ByNumber(u64),
    /// `ledger_getSoftConfirmationByHash`
    ByHash(crate::types::Hash),
    /// `ledger_getSoftConfirmationRange`
    Range { start: u64, end: u64 },
    /// `ledger_getSoftConfirmationStatus`
    Status(u64),
    /// `ledger_getHeadSoftConfirmation`
    Head,
    /// `ledger_getHeadSoftConfirmationHeight`
    HeadHeight,
}

impl Request {
    /// Reads the ledger and writes the JSON `result` into `out`, in the
    /// shapes of `config.wire`.
    pub fn apply(
        &self,
        reader: &LedgerReader,
        config: &RpcConfig,
        out: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        let max_range = config.max_range;
        match *self {
            Request::ByNumber(height) => {
                let sc = reader.soft_confirmation(height)?;
                wire::write::write_opt_soft_confirmation(out, sc.as_ref());
            }
            Request::ByHash(hash) => {
                let sc = match reader.height_by_hash(&hash)? {
                    Some(height) => reader.soft_confirmation(height)?,
                    None => None,
                };
                wire::write::write_opt_soft_confirmation(out, sc.as_ref());
            }
            Request::Range { start, end } => {
                if start > end {
                    return Err(RpcError::ledger("start must be <= end"));
                }
                // end - start + 1 > max_range, without overflow at u64::MAX.
                if end - start >= max_range {
                    let what = match config.wire {
                        WireShape::Ledgerd => "range",
                        // Citrea's words.
                        WireShape::Citrea => "batch range",
                    };
                    let why = format!("requested {what} too large. Max: {max_range}");
                    return Err(RpcError::ledger(why));
                }
                let items = reader.soft_confirmation_range(start, end)?;
                // Always end-start+1 items: null at every height not stored.
                let count = (end - start + 1) as usize;
                wire::write::write_list(out, 0..count, |out, i| {
                    wire::write::write_opt_soft_confirmation(
                        out,
                        items.get(i).and_then(Option::as_ref),
                    );
                });
            }
            Request::Status(height) => {
                let not_yet = || {
                    let why = format!("Soft confirmation at height {height} not processed yet.");
                    Err(RpcError::ledger(why))
                };
                if height > reader.head_height()? {
                    return not_yet();
                }
                // Choice: a height at or below the head that holds no status
                // answers `null`, like method 2 on a height not stored. Height 0
                // is the one such height (heights start at 1), so status of 0
                // is `null`: parameters are checked for syntax only, and the
                // not-stored answer stays uniform across methods.
                match (reader.status(height)?, config.wire) {
                    (Some(status), WireShape::Ledgerd) => wire::write::write_status(out, status),
                    (Some(status), WireShape::Citrea) => {
                        wire::write::write_str(out, status.as_lowercase_str())
                    }
                    (None, WireShape::Ledgerd) => wire::write::write_null(out),
                    // Citrea answers every height it does not hold so.
                    (None, WireShape::Citrea) => return not_yet(),
                }
            }
            Request::Head => {
                let head = reader.head_height()?;
                let sc = if head == 0 {
                    None
                } else {
                    reader.soft_confirmation(head)?
                };
                wire::write::write_opt_soft_confirmation(out, sc.as_ref());
            }
            Request::HeadHeight => wire::write::write_u64(out, reader.head_height()?),
        }
        Ok(())
    }
}
