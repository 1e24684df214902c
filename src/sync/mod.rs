//! The sync thread: pulls from a chain source, verifies, writes the ledger.
pub mod progress;
pub mod source;
