//! ledgerd: a small ledger JSON-RPC full node for a Bitcoin ZK rollup, with
//! one server loop thread answering every request.
//!
//! ```text
//!  chain sources ──> sync thread (verify, write) ──> LMDB ledger <── server loop (read, answer)
//!  source/ (devnet,     sync/ (l2_pass, da_pass,      ledger/          server/ → routes → rpc/
//!  upstream,           checks.rs)
//!  bitcoin/{rpc,p2p})
//!     └──────────────────────┴──> progress/ (counters) <──────────── read by the server
//! ```
//!
//! # Embedding in tests
//!
//! ledgerd is also a library: another project's test starts a node
//! in-process on a free port, queries it, drives its devnet
//! ([`Node::devnet`]: mine, commit, prove, inject now), and stops it.
//! [`Node::shutdown`] joins the sync and server threads; dropping the
//! [`Node`] does the same.
//!
//! ```
//! use ledgerd::source::devnet::DevnetConfig;
//! use ledgerd::ledger::LedgerRead;
//! use ledgerd::types::Status;
//! use ledgerd::Node;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let node = Node::builder()
//!     .data_dir(dir.path())
//!     .dev(DevnetConfig { prefill: 20, block_ms: 0, ..DevnetConfig::default() })
//!     .bind("127.0.0.1:0")
//!     .start()?;
//!
//! let answer = ureq::post(&node.url())
//!     .send_string(r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}"#)?
//!     .into_string()?;
//! assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":20}"#);
//! assert_eq!(node.ledger().reader()?.head_height()?, 20);
//!
//! // Drive the devnet: a block, its commitment, its proof, now (docs/DEVNET.md).
//! let devnet = node.devnet().expect("a --dev node");
//! let status = |h| node.ledger().reader().and_then(|r| r.status(h));
//! assert_eq!(devnet.mine(1)?, 21);
//! assert_eq!(status(21)?, Some(Status::Trusted));
//! devnet.commit()?;
//! assert_eq!(status(21)?, Some(Status::Finalized));
//! devnet.prove()?;
//! assert_eq!(status(21)?, Some(Status::Proven));
//!
//! node.shutdown();
//! # Ok(())
//! # }
//! ```
//!
//! # Module map
//!
//! - `node`: a running node (ledger + sync thread + server); `Node::builder()`.
//! - [`cmd`]: the commands, one file each (`run`, `serve-readonly`, `import`, `export`, `verify`,
//!   `verify-proof`, `verify-headers`, `rollback`, `config`): its flags, their checks, its run.
//! - [`config`]: flags as `LEDGERD_*` variables and TOML config-file keys, read into a command's
//!   flags; a node's [`config::Config`]. Each subsystem's flags live beside it (`server::args`,
//!   ...), with the headings and value parsers of [`flags`].
//! - [`server`]: the HTTP transport: one tiny_http loop thread, hardened against bad clients;
//!   [`server::framing`] refuses requests whose body length is ambiguous (request smuggling).
//! - [`routes`]: which part answers which HTTP request (JSON-RPC, health, metrics, CORS); its
//!   flags ([`routes::args`]: `/health` limits, CORS).
//! - [`health`], [`metrics`]: `GET /health` and `GET /metrics` for operators;
//!   [`process`]: the `process_*` metrics from `/proc/self`.
//! - [`status_page`]: `GET /` from a browser: one static HTML page that shows the chain at a glance.
//! - [`rpc`]: JSON-RPC 2.0: the envelope, then one module per method family.
//! - [`wire`]: JSON on the wire: [`wire::WireShape`] (ledgerd's or Citrea's answer shapes),
//!   [`wire::write`] for answers, /health and the rest (no intermediate values), [`wire::read`]
//!   for another node's answers read back into records (follower, import, tests);
//!   [`hexstr`]: reading hex strings (every hex input goes through it).
//! - [`headers`]: Bitcoin's header chain by Bitcoin Core's rules (main, testnet4, signet,
//!   regtest): the most-work chain the DA scan follows, stored in the ledger.
//! - [`ledger`]: all LMDB code: tables, codecs, the reader and the writer.
//! - [`source`]: the chain sources, one home each: [`source::devnet`] (the embedded devnet, which
//!   makes blocks), [`source::upstream`] (another node, with failover), [`source::bitcoin`]
//!   (Bitcoin through Bitcoin Core's RPC), [`source::bitcoin::p2p`] (Bitcoin from its P2P network); the
//!   two source traits, the shared JSON-RPC client and back-off.
//! - [`sync`]: the sync thread: the L2 pass, the DA pass; [`sync::devnet`], the devnet's jobs it
//!   runs (the `dev_*` calls and [`Node::devnet`]).
//! - [`progress`]: the counters the sync thread and the sources update and the server reads
//!   (`svc_syncStatus`, `/health`, `/metrics`), below all three.
//! - [`checks`]: the chain-rule checks: where a block, a commitment and a proof are checked
//!   (the sync thread, `ledgerd import`, `ledgerd verify`, proofs and rollback use it).
//! - [`types`]: the records (soft confirmations, commitments, proofs, statuses).
//! - [`proof`]: a batch proof's bytes: the risc0 receipt, its journal against `proofOutput`, the
//!   network's batch-proof image IDs; fake receipts.
//! - [`chain_rules`]: the chain rules per fork (Genesis, Kumquat): hashing, signatures, Merkle roots;
//!   `chain_rules::forks`: which fork applies at which height, and the public networks.
//! - [`jsonl`]: `ledgerd import` / `export`: the ledger as JSON Lines (fixtures for tests, audits).
//! - [`replica`]: `ledgerd serve-readonly`: following a ledger another process writes.
//! - [`rollback`]: `ledgerd rollback`: a ledger taken back to an L2 height or DA slot (also the
//!   devnet's `dev_revert` / `dev_reset`).
//! - [`logs`]: log lines on stderr, as text or JSON (`--log-format`).
//! - [`stop`], [`signals`]: stopping cleanly on Ctrl-C and SIGTERM; [`os`]: thread priority;
//!   [`memory`]: handing the heap back after catch-up; [`clock`]: dates from Unix time;
//!   `errors`: `wrap_errors!`, the `From` impls of errors that wrap others.
#[macro_use]
mod errors;

pub mod chain_rules;
pub mod checks;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod flags;
pub mod headers;
pub mod health;
pub mod hexstr;
pub mod jsonl;
pub mod ledger;
pub mod logs;
pub mod memory;
pub mod metrics;
mod node;
pub mod os;
pub mod process;
pub mod progress;
pub mod proof;
pub mod replica;
pub mod rollback;
pub mod routes;
pub mod rpc;
pub mod server;
pub mod signals;
pub mod source;
pub mod status_page;
pub mod stop;
pub mod sync;
pub mod types;
pub mod wire;

pub use node::{Node, NodeBuilder};

/// The examples of `docs/DEVNET.md`, run as doc-tests.
#[doc = include_str!("../docs/DEVNET.md")]
#[cfg(doctest)]
pub struct DevnetDocExamples;
