//! The integration tests: one binary, one module per area, the shared harness in [`common`].
//!
//! Each module starts real `ledgerd` processes on 127.0.0.1 (port 0) with their own temporary
//! data dirs; tests that need an outside program (nginx, HAProxy, chromium, bitcoind,
//! prometheus) are `#[ignore = "needs ..."]` and run in CI with `cargo test -- --ignored`.

mod bitcoin_block_checks;
mod bitcoin_discover;
mod bitcoin_follow;
mod bitcoin_headers;
mod bitcoin_inscription;
mod bitcoin_p2p;
mod bitcoin_reorg_recovery;
mod bitcoin_v2;
mod bitcoind_read;
mod browser_cors;
mod browser_status;
mod citrea_dropin;
mod citrea_follow;
mod commitment_gaps;
mod common;
mod configuration;
mod data_dir_lock;
mod devnet_control;
mod devnet_live;
mod devnet_regtest;
mod devnet_snapshot;
mod failover;
mod fixtures;
mod follower;
mod forks;
mod frontier;
mod fuzz_regressions;
mod haproxy_fleet;
mod haproxy_front;
mod hints;
mod hostile;
mod http_framing;
mod layers;
mod log_json;
mod monitoring;
mod nginx_front;
mod ops_http;
mod proof_images;
mod proof_receipts;
mod protocol;
mod readme_examples;
mod readonly;
mod rollback;
mod rpc_http;
mod server_transport;
mod signatures;
mod upstream_identity;
mod upstream_pushback;
mod upstream_tls;
mod verify_cmd;
mod verify_headers;
