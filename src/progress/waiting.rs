//! What the DA scan waits on: the record a source sent that was refused
//! (a proof whose receipt does not verify, a commitment whose Merkle root
//! does not match), kept while its slot is fetched again and again.
//!
//! A refusal that repeats is logged once per slot and reason, counted on
//! every retry (`ledgerd_sync_verification_failures_total`), and shown by
//! `/health` as `waitingOn` until its slot is applied.

use std::sync::Mutex;

use crate::progress::unix_ms;

/// The refusal the DA scan waits on now, if any.
#[derive(Debug, Default)]
pub struct Waiting {
    current: Mutex<Option<Refusal>>,
}

/// One refused record, and how often it was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The DA slot the scan cannot pass.
    pub slot: u64,
    /// The check that failed (`receipt`, `proof`, `merkle_root`, ...).
    pub check: &'static str,
    /// Why, as logged.
    pub why: String,
    /// How many times it was refused so far (its first refusal included).
    pub retries: u64,
    /// Unix milliseconds of its first refusal.
    pub since_unix_ms: u64,
    /// The reasons already logged for this slot.
    logged: Vec<String>,
}

impl Waiting {
    /// Records that slot `slot` was refused by `check` for `why`. Returns
    /// true the first time this slot is refused for this reason (log it
    /// then), false on a retry that ends the same way.
    pub fn refused(&self, slot: u64, check: &'static str, why: &str) -> bool {
        let Ok(mut current) = self.current.lock() else {
            return true;
        };
        match current.as_mut() {
            Some(r) if r.slot == slot => {
                r.retries += 1;
                if r.why != why {
                    r.why = why.to_string();
                    r.check = check;
                }
                if r.logged.iter().any(|l| l == why) {
                    return false;
                }
                r.logged.push(why.to_string());
                true
            }
            _ => {
                *current = Some(Refusal {
                    slot,
                    check,
                    why: why.to_string(),
                    retries: 1,
                    since_unix_ms: unix_ms(),
                    logged: vec![why.to_string()],
                });
                true
            }
        }
    }

    /// The scan has applied slots up to `slot`: a refusal there is over.
    /// Returns it, if one ended.
    pub fn passed(&self, slot: u64) -> Option<Refusal> {
        let mut current = self.current.lock().ok()?;
        current.take_if(|r| r.slot <= slot)
    }

    /// The refusal waited on now.
    pub fn now(&self) -> Option<Refusal> {
        self.current.lock().ok().and_then(|c| c.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_new_once_per_slot_and_reason_and_ends_when_its_slot_is_passed() {
        let w = Waiting::default();
        assert!(w.refused(7, "receipt", "A"));
        assert!(!w.refused(7, "receipt", "A"));
        assert!(!w.refused(7, "receipt", "A"));
        assert!(w.refused(7, "proof", "B"));
        assert!(!w.refused(7, "receipt", "A"));
        let now = w.now().expect("waiting");
        assert_eq!((now.slot, now.retries, now.check), (7, 5, "receipt"));
        assert_eq!(w.passed(6), None);
        assert!(w.passed(7).is_some());
        assert_eq!(w.now(), None);
        // Another slot starts afresh.
        assert!(w.refused(9, "receipt", "A"));
    }
}
