//! Fuzz target: raw HTTP request bytes -> the framing decision ledgerd makes
//! before reading a body (`ledgerd::server::framing::check`, RFC 9112
//! section 6), with the head split into header lines as tiny_http 0.12
//! splits them (no sockets).
//!
//! Besides "no panic, no abort, no hang": an accepted request has exactly one
//! unambiguous framing and tiny_http frames it the same way; a refused one
//! gets 400 or 501 with a JSON-RPC error body that names the header (the
//! checks are shared with `cargo test`: `tests/it/common/framing_check.rs`).
//! Seeds: `fuzz/seeds/http_framing/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/common/framing_check.rs"]
mod framing_check;

fuzz_target!(|data: &[u8]| {
    let _ = framing_check::check_head(data);
});
