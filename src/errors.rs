//! What every error type shares: [`wrap_errors!`], the `From` impls that
//! let `?` lift an inner error into the variant that wraps it as it is.
//!
//! Declared first in `lib.rs` with `#[macro_use]`, so every module can use it.

/// `impl From<Inner> for Outer` for each `Variant(Inner)` listed: the
/// variant holds the inner error unchanged.
///
/// ```text
/// wrap_errors!(NodeError {
///     Ledger(LedgerError),
///     Sync(SyncError),
/// });
/// ```
macro_rules! wrap_errors {
    ($outer:ident { $($variant:ident($inner:ty)),+ $(,)? }) => {
        $(
            impl From<$inner> for $outer {
                fn from(e: $inner) -> Self {
                    $outer::$variant(e)
                }
            }
        )+
    };
}
