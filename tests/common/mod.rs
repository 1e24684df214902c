//! The one support module of the integration tests (each `tests/*.rs` is its
//! own crate and includes it with `mod common;`): real `ledgerd` processes on
//! 127.0.0.1 port 0 ([`process`]), a raw HTTP/1.1 client on plain sockets
//! that can misbehave on purpose ([`http`]), headless Chromium ([`browser`]), JSON-RPC calls and the checks
//! many tests share ([`rpc`]), the socket-less bytes -> answer path the
//! fuzzer shares ([`rpc_check`]); a proxy that can hold an upstream's
//! blocks back, alter its answers or slow them ([`proxy`]), and a stand-in
//! for a Citrea v0.6 full node written from Citrea's source
//! ([`citrea_upstream`]); a real regtest bitcoind ([`bitcoind`]) and Bitcoin
//! peers that lie ([`lying_peer`]); the one
//! deadline loop, [`wait_until`] ([`wait`]).
#![allow(dead_code)] // each test file uses a different part
#![allow(unused_imports)]

pub mod bitcoind;
pub mod browser;
pub mod citrea_upstream;
pub mod framing_check;
pub mod http;
pub mod lying_peer;
pub mod process;
pub mod proxy;
pub mod rpc;
pub mod rpc_check;
pub mod smuggling;
pub mod wait;

pub use http::{connect, exchange, post, read_answer, rpc, Answer};
pub use process::{
    bounded, devnet_args, free_port, nginx_path, raise_nofile_limit, run, run_to_exit, Ledgerd,
    LedgerdBuilder, PREFILL,
};
pub use rpc::{
    assert_normal_request_fast, call, call_raw, devnet_ledger, every_answer, export, hash32, head,
    post_raw, sync_status, HEAD_HEIGHT,
};
pub use wait::{poll_until, wait_until, wait_until_value};

/// Holds the tests of one file to one at a time. The hostile-client tests
/// each check that a normal request is answered within 100 ms while one bad
/// client does its worst; run side by side, they would measure each other
/// (2,000 connection threads in one test starve another's node of CPU on a
/// 2-core machine), not the node.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
