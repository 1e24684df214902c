//! Fuzz target: raw HTTP request body bytes -> JSON-RPC response bytes,
//! through the envelope and every method layer (`Rpc::handle`), against a
//! real LMDB ledger prefilled by the embedded devnet (no sockets).
//!
//! Besides "no panic, no abort, no hang", every answer must be JSON that
//! serde_json reads back, shaped as JSON-RPC 2.0 responses (the checks are
//! shared with `cargo test`: `tests/it/common/rpc_check.rs`).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/common/rpc_check.rs"]
mod rpc_check;

fn rpc() -> &'static ledgerd::rpc::Rpc {
    static FIXTURE: OnceLock<(ledgerd::rpc::Rpc, tempfile::TempDir)> = OnceLock::new();
    &FIXTURE.get_or_init(|| rpc_check::devnet_rpc(120)).0
}

fuzz_target!(|data: &[u8]| {
    rpc_check::check_answer(rpc().handle(data).as_deref());
});
