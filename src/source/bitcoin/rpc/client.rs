//! A blocking client for Bitcoin Core's JSON-RPC interface.
//!
//! One [`BitcoinRpc`] talks to one bitcoind over plain HTTP (keep-alive,
//! several connections when shared between threads). It sends JSON-RPC 2.0
//! requests with positional parameters, the way Bitcoin Core documents them,
//! and JSON-RPC batches (a JSON array of requests, answered by one array) so
//! that a range of blocks costs one round trip instead of one per block.
//!
//! Credentials are a user and password (`-rpcuser`/`-rpcpassword`,
//! `-rpcauth`) or the cookie file bitcoind writes at every start
//! (`<datadir>/<network>/.cookie`). A restarted bitcoind has a new cookie, so
//! the client reads the file again when bitcoind answers 401 and retries once.
//!
//! Errors say which of three things happened ([`RpcError`]): bitcoind could
//! not be reached (try again later), bitcoind refused the call with its own
//! error code (for example -8, a height beyond the tip; -28, still warming
//! up), or the answer was not what Bitcoin Core sends (too large, not JSON,
//! a wrong shape). Nothing here retries on its own except the one cookie
//! re-read: the caller decides how to back off.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bitcoin::{BlockHash, Txid};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::source::rpc_client::{self, PostError, Reply};

/// Bitcoin Core's code for an invalid parameter, which `getblockhash` answers
/// for a height beyond the tip ("Block height out of range").
pub const RPC_INVALID_PARAMETER: i64 = -8;
/// Bitcoin Core's code while it loads its block index ("Loading block
/// index...", "Verifying blocks..."): the server is up but not ready.
pub const RPC_IN_WARMUP: i64 = -28;

/// How the client proves who it is to bitcoind. Its `Debug` shows no password.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// No `Authorization` header (a bitcoind behind a proxy that adds one).
    None,
    /// `-rpcuser`/`-rpcpassword` or an `-rpcauth` entry.
    UserPassword { user: String, password: String },
    /// The `.cookie` file bitcoind writes at start (`__cookie__:<hex>`),
    /// read again whenever bitcoind answers 401.
    CookieFile(PathBuf),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::UserPassword { user, .. } => f
                .debug_struct("UserPassword")
                .field("user", user)
                .field("password", &"********")
                .finish(),
            Credentials::CookieFile(path) => f.debug_tuple("CookieFile").field(path).finish(),
        }
    }
}

/// Limits for every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcOptions {
    /// Time to open a TCP connection.
    pub connect_timeout: Duration,
    /// Time for a whole request, from sending it to the last byte of the answer.
    pub timeout: Duration,
    /// The largest answer body read; a larger one is an error
    /// ([`RpcError::TooLarge`]) and is not buffered. A raw 4 MB block is 8 MB of hex.
    pub max_answer_bytes: usize,
}

impl Default for RpcOptions {
    fn default() -> Self {
        RpcOptions {
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(60),
            max_answer_bytes: 64 << 20,
        }
    }
}

/// Why a call did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RpcError {
    /// No answer: the connection was refused or broke, a timeout passed, or
    /// bitcoind was too busy to take the request (HTTP 503).
    Unreachable { url: String, reason: String },
    /// bitcoind refused the credentials (HTTP 401), also after the cookie
    /// file was read again.
    Unauthorized { url: String },
    /// The cookie file could not be read (bitcoind not started yet, a wrong
    /// path, or a file without `user:password`).
    Cookie { path: PathBuf, reason: String },
    /// bitcoind answered the call with its own error.
    Refused {
        method: String,
        code: i64,
        message: String,
    },
    /// The answer was larger than [`RpcOptions::max_answer_bytes`].
    TooLarge { method: String, limit: usize },
    /// The answer was not what Bitcoin Core sends for this call.
    BadAnswer { method: String, reason: String },
}

impl RpcError {
    pub fn bad(method: &str, reason: impl Into<String>) -> RpcError {
        RpcError::BadAnswer {
            method: method.to_string(),
            reason: reason.into(),
        }
    }

    fn refused(method: &str, e: rpc_client::ErrorObject) -> RpcError {
        RpcError::Refused {
            method: method.to_string(),
            code: e.code,
            message: e.message,
        }
    }

    /// bitcoind said the height is beyond its tip (`getblockhash`, -8).
    pub fn is_height_out_of_range(&self) -> bool {
        matches!(self, RpcError::Refused { code, .. } if *code == RPC_INVALID_PARAMETER)
    }

    /// bitcoind is up but still loading (-28).
    pub fn is_warming_up(&self) -> bool {
        matches!(self, RpcError::Refused { code, .. } if *code == RPC_IN_WARMUP)
    }

    /// bitcoind's error code, when it refused the call.
    pub fn code(&self) -> Option<i64> {
        match self {
            RpcError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Worth asking again later unchanged: bitcoind down, restarting, busy or
    /// warming up (a restarted bitcoind writes its cookie a moment after it
    /// starts listening, so a missing cookie is transient too).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            RpcError::Unreachable { .. } | RpcError::Cookie { .. } | RpcError::Unauthorized { .. }
        ) || self.is_warming_up()
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Unreachable { url, reason } => {
                write!(f, "bitcoind at {url} did not answer: {reason}")
            }
            RpcError::Unauthorized { url } => write!(
                f,
                "bitcoind at {url} refused our credentials (HTTP 401): check the RPC user and \
                 password, or that the cookie file is the one this bitcoind writes"
            ),
            RpcError::Cookie { path, reason } => write!(
                f,
                "cannot read bitcoind's cookie file {}: {reason}",
                path.display()
            ),
            RpcError::Refused {
                method,
                code,
                message,
            } => write!(f, "bitcoind refused {method} with error {code}: {message}"),
            RpcError::TooLarge { method, limit } => write!(
                f,
                "bitcoind's answer to {method} is larger than the {limit}-byte limit"
            ),
            RpcError::BadAnswer { method, reason } => write!(
                f,
                "bitcoind's answer to {method} is not understood: {reason}"
            ),
        }
    }
}

impl std::error::Error for RpcError {}

/// A blocking Bitcoin Core JSON-RPC client; share it between threads by
/// reference (`&BitcoinRpc` is `Send`).
pub struct BitcoinRpc {
    /// The HTTP side; its `Authorization` header is built from the
    /// credentials (for a cookie: from the file as last read).
    client: rpc_client::Client,
    credentials: Credentials,
    /// [`RpcOptions::timeout`].
    timeout: Duration,
    next_id: AtomicU64,
}

impl BitcoinRpc {
    /// A client for `url` (`http://HOST:PORT`, the `-rpcport`). Nothing is
    /// sent yet; a cookie file is read at the first call.
    pub fn new(url: &str, credentials: Credentials, options: RpcOptions) -> BitcoinRpc {
        let client = rpc_client::Client::new(
            url.trim_end_matches('/'),
            options.connect_timeout,
            options.max_answer_bytes as u64,
            None,
        );
        if let Credentials::UserPassword { user, password } = &credentials {
            client.set_authorization(basic_auth(&format!("{user}:{password}")));
        }
        BitcoinRpc {
            client,
            credentials,
            timeout: options.timeout,
            next_id: AtomicU64::new(1),
        }
    }

    /// The URL calls go to.
    pub fn url(&self) -> &str {
        self.client.url()
    }

    /// Calls `method` with `params` (a JSON array's elements) and decodes its
    /// result as `T`.
    pub fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &[serde_json::Value],
    ) -> Result<T, RpcError> {
        let params_json = serde_json::Value::from(params.to_vec()).to_string();
        let answers = self.batch(method, std::iter::once(params_json), |raw| {
            serde_json::from_str::<T>(raw.get()).map_err(|e| e.to_string())
        })?;
        only(method, answers)
    }

    /// Sends one JSON-RPC batch: `method` once per element of `params` (each
    /// the JSON text of a parameter array), in one HTTP request, and decodes
    /// each result with `decode`: the results in the order of `params`, or
    /// the error of the request as a whole, else of the first refused call.
    pub fn batch<T>(
        &self,
        method: &str,
        params: impl IntoIterator<Item = String>,
        decode: impl Fn(&RawValue) -> Result<T, String>,
    ) -> Result<Vec<T>, RpcError> {
        let params: Vec<String> = params.into_iter().collect();
        if params.is_empty() {
            return Ok(Vec::new());
        }
        let count = params.len() as u64;
        // Ids unique across threads sharing the client.
        let first_id = self.next_id.fetch_add(count, Ordering::Relaxed);
        let body = rpc_client::batch(first_id, params.iter().map(|p| (method, p.as_str())));
        let bytes = self.post(method, body.as_bytes())?;
        let bad = |reason: String| RpcError::bad(method, reason);
        let replies: Vec<Reply> = match serde_json::from_slice(&bytes) {
            Ok(r) => r,
            Err(_) => {
                // A request bitcoind could not parse at all is answered
                // with a single error object, not an array.
                return match serde_json::from_slice::<Reply>(&bytes) {
                    Ok(Reply { error: Some(e), .. }) => Err(RpcError::refused(method, e)),
                    _ => Err(bad(format!(
                        "not a JSON-RPC batch answer: {}",
                        excerpt(&bytes)
                    ))),
                };
            }
        };
        if replies.len() as u64 != count {
            return Err(bad(format!(
                "{} answers to a batch of {count} calls",
                replies.len()
            )));
        }
        // Bitcoin Core answers a batch in request order; match by id anyway.
        let ordered = rpc_client::by_id(replies, first_id, count as usize).map_err(bad)?;
        ordered
            .into_iter()
            .map(|reply| match (reply.error, reply.result) {
                (Some(e), _) => Err(RpcError::refused(method, e)),
                (None, Some(raw)) => decode(raw).map_err(&bad),
                (None, None) => Err(bad("an answer with neither result nor error".into())),
            })
            .collect()
    }

    /// POSTs `body`, re-reading the cookie and retrying once on 401, and
    /// returns the answer body (whatever the HTTP status, since Bitcoin Core
    /// puts its JSON-RPC errors in the body).
    fn post(&self, method: &str, body: &[u8]) -> Result<Vec<u8>, RpcError> {
        let cookie = matches!(self.credentials, Credentials::CookieFile(_));
        let fresh_cookie = cookie && !self.client.has_authorization();
        if fresh_cookie {
            self.reload_cookie()?;
        }
        let post = || self.client.post(body, self.timeout).map_err(|f| f.error);
        let mut answer = post();
        if cookie && !fresh_cookie && matches!(answer, Err(PostError::Status { code: 401, .. })) {
            self.reload_cookie()?;
            answer = post();
        }
        let url = || self.client.url().to_string();
        match answer {
            Ok(answer) => Ok(answer),
            Err(PostError::Status { code: 401, .. }) => Err(RpcError::Unauthorized { url: url() }),
            Err(PostError::Status { code: 503, body }) => Err(RpcError::Unreachable {
                url: url(),
                reason: format!("HTTP 503 (busy or starting): {}", excerpt(&body)),
            }),
            // 404 for an unknown method, 500 for legacy errors: the body
            // still holds the JSON-RPC error; if it does not, batch_raw
            // says so with this status in mind.
            Err(PostError::Status { code, body }) if body.is_empty() => Err(RpcError::bad(
                method,
                format!("HTTP {code} with an empty body"),
            )),
            Err(PostError::Status { body, .. }) => Ok(body),
            Err(PostError::TooLarge { limit }) => Err(RpcError::TooLarge {
                method: method.to_string(),
                limit: limit as usize,
            }),
            Err(PostError::Transport(reason) | PostError::Tls(reason)) => {
                Err(RpcError::Unreachable { url: url(), reason })
            }
            Err(PostError::Broken(e)) => Err(RpcError::Unreachable {
                url: url(),
                reason: format!("the answer to {method} broke off: {e}"),
            }),
        }
    }

    fn reload_cookie(&self) -> Result<(), RpcError> {
        let Credentials::CookieFile(path) = &self.credentials else {
            return Ok(());
        };
        self.client
            .set_authorization(basic_auth(&read_cookie(path)?));
        log::debug!("bitcoind cookie read from {}", path.display());
        Ok(())
    }

    // ---- the calls ledgerd makes ----

    /// `getblockcount`: the height of the tip.
    pub fn get_block_count(&self) -> Result<u64, RpcError> {
        self.call("getblockcount", &[])
    }

    /// `getblockhash height`: the hash of the active chain's block at
    /// `height` (refused with -8 beyond the tip).
    pub fn get_block_hash(&self, height: u64) -> Result<BlockHash, RpcError> {
        let text: String = self.call("getblockhash", &[height.into()])?;
        parse_hash("getblockhash", &text)
    }

    /// `getblockhash` for every height of `heights`, in one batch; the first
    /// refused height's error (e.g. -8 beyond the tip) if any is refused.
    pub fn get_block_hashes(
        &self,
        heights: std::ops::Range<u64>,
    ) -> Result<Vec<BlockHash>, RpcError> {
        self.batch("getblockhash", heights.map(|h| format!("[{h}]")), |raw| {
            let text: &str = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
            parse_display_hex::<BlockHash>(text)
        })
    }

    /// `getblock hash 0`: the serialized block (the cheapest form: no
    /// per-transaction JSON, parsed and checked locally by the caller).
    pub fn get_raw_block(&self, hash: &BlockHash) -> Result<Vec<u8>, RpcError> {
        only("getblock", self.get_raw_blocks(std::slice::from_ref(hash))?)
    }

    /// `getblock hash 0` for each hash, in one batch, in the order given.
    pub fn get_raw_blocks(&self, hashes: &[BlockHash]) -> Result<Vec<Vec<u8>>, RpcError> {
        self.batch(
            "getblock",
            hashes.iter().map(|h| format!(r#"["{h}",0]"#)),
            decode_hex_string,
        )
    }

    /// `getblockheader hash false` for each hash, in one batch, in the order
    /// given: the headers decoded (their hashes are the caller's to check).
    pub fn get_block_headers(
        &self,
        hashes: &[BlockHash],
    ) -> Result<Vec<bitcoin::block::Header>, RpcError> {
        self.batch(
            "getblockheader",
            hashes.iter().map(|h| format!(r#"["{h}",false]"#)),
            |raw| {
                let bytes = decode_hex_string(raw)?;
                bitcoin::consensus::deserialize::<bitcoin::block::Header>(&bytes)
                    .map_err(|e| format!("not an 80-byte header: {e}"))
            },
        )
    }

    /// `getblockchaininfo`'s `chain`: `main`, `test`, `testnet4`, `signet`
    /// or `regtest`.
    pub fn get_chain_name(&self) -> Result<String, RpcError> {
        #[derive(serde::Deserialize)]
        struct Info {
            chain: String,
        }
        let info: Info = self.call("getblockchaininfo", &[])?;
        Ok(info.chain)
    }

    /// `sendrawtransaction hex`: the txid bitcoind accepted the transaction under.
    pub fn send_raw_transaction(&self, tx: &[u8]) -> Result<Txid, RpcError> {
        let text: String = self.call("sendrawtransaction", &[hex::encode(tx).into()])?;
        parse_display_hex::<Txid>(&text)
            .map_err(|reason| RpcError::bad("sendrawtransaction", reason))
    }

    /// `generatetoaddress n address` (regtest): the hashes of the new blocks.
    pub fn generate_to_address(&self, n: u64, address: &str) -> Result<Vec<BlockHash>, RpcError> {
        let texts: Vec<String> = self.call("generatetoaddress", &[n.into(), address.into()])?;
        texts
            .iter()
            .map(|t| parse_hash("generatetoaddress", t))
            .collect()
    }

    /// `generateblock address [txs]` (regtest): one block paying `address`
    /// holding exactly `txs` (raw transactions or txids from the mempool,
    /// as hex), in that order.
    pub fn generate_block(&self, address: &str, txs: &[String]) -> Result<BlockHash, RpcError> {
        #[derive(serde::Deserialize)]
        struct Generated {
            hash: String,
        }
        let answer: Generated = self.call("generateblock", &[address.into(), txs.into()])?;
        parse_hash("generateblock", &answer.hash)
    }
}

/// The answer of a batch of one call.
fn only<T>(method: &str, mut answers: Vec<T>) -> Result<T, RpcError> {
    answers
        .pop()
        .ok_or_else(|| RpcError::bad(method, "an empty batch answer"))
}

/// A hash or txid as bitcoind prints it (byte-reversed hex).
fn parse_display_hex<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: fmt::Display,
{
    text.parse::<T>()
        .map_err(|e| format!("{text:?} is not a 32-byte hash: {e}"))
}

fn parse_hash(method: &str, text: &str) -> Result<BlockHash, RpcError> {
    parse_display_hex::<BlockHash>(text).map_err(|reason| RpcError::bad(method, reason))
}

fn decode_hex_string(raw: &RawValue) -> Result<Vec<u8>, String> {
    let text: &str = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    hex::decode(text).map_err(|e| format!("not hex: {e}"))
}

/// The `user:password` line of a cookie file, without its line end.
pub fn read_cookie(path: &Path) -> Result<String, RpcError> {
    let refused = |reason: String| RpcError::Cookie {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| refused(e.to_string()))?;
    let line = text.lines().next().unwrap_or("").trim();
    if !line.contains(':') {
        return Err(refused("the file does not hold `user:password`".into()));
    }
    Ok(line.to_string())
}

/// `Basic <base64(user:password)>` (RFC 7617, standard base64 with padding).
fn basic_auth(user_password: &str) -> String {
    format!("Basic {}", STANDARD.encode(user_password))
}

/// The start of an answer, for error messages.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    if bytes.len() > 200 {
        format!("{text}...")
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(basic_auth(plain), format!("Basic {encoded}"), "{plain:?}");
        }
        // RFC 7617's example.
        assert_eq!(
            basic_auth("Aladdin:open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }

    #[test]
    fn cookie_file_is_read_without_its_line_end_and_must_hold_a_colon() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".cookie");
        std::fs::write(&path, "__cookie__:abc123\n").unwrap();
        assert_eq!(read_cookie(&path).unwrap(), "__cookie__:abc123");
        std::fs::write(&path, "no colon here").unwrap();
        assert!(matches!(read_cookie(&path), Err(RpcError::Cookie { .. })));
        let missing = dir.path().join("missing");
        let err = read_cookie(&missing).unwrap_err();
        assert!(err.to_string().contains("cookie file"), "{err}");
        assert!(err.is_transient());
    }

    #[test]
    fn a_closed_port_is_unreachable_not_refused() {
        // A port just freed: nothing listens on it.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let rpc = BitcoinRpc::new(&url, Credentials::None, RpcOptions::default());
        let err = rpc.get_block_count().unwrap_err();
        assert!(matches!(err, RpcError::Unreachable { .. }), "{err:?}");
        assert!(err.is_transient());
        assert_eq!(err.code(), None);
    }

    #[test]
    fn error_codes_are_classified() {
        let refused = |code| RpcError::Refused {
            method: "getblockhash".into(),
            code,
            message: "x".into(),
        };
        assert!(refused(-8).is_height_out_of_range());
        assert!(!refused(-8).is_transient());
        assert!(refused(-28).is_warming_up());
        assert!(refused(-28).is_transient());
        assert!(!refused(-5).is_height_out_of_range());
    }
}
