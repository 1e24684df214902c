//! A real regtest bitcoind for the tests that need Bitcoin: built by
//! `scripts/bitcoind/build.sh`, found through `$LEDGERD_BITCOIND` or the
//! script's cache, started on a temp `-datadir` and a free `-rpcport` with
//! cookie authentication, driven over JSON-RPC (mine, invalidate, send), and
//! killed, stopped or restarted on the same datadir. Dropping it kills it;
//! its temp dir goes with it.
//!
//! The calls here use their own small JSON-RPC path (ureq + serde_json, the
//! cookie read at every call), independent of `ledgerd::source::bitcoin`,
//! the client under test.
//!
//! A test that needs bitcoind is `#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]`
//! and fails, with the command to run, when the binary is missing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bitcoin::secp256k1::{Secp256k1, SecretKey};
use bitcoin::{Address, CompressedPublicKey, Network};
use serde_json::{json, Value};

/// The `libbitcoinkernel-sys` version scripts/bitcoind/build.sh builds from;
/// keep it equal to the script's `VERSION`.
pub const BITCOIND_CRATE_VERSION: &str = "0.4.1";

/// The bitcoind binary: `$LEDGERD_BITCOIND`, else the build script's cache
/// (`${LEDGERD_TOOLS_DIR:-$HOME/.cache/ledgerd-tools}/bitcoind-<version>/bin/bitcoind`).
/// Panics, naming the command that builds it, when there is none.
pub fn bitcoind_path() -> PathBuf {
    let path = match std::env::var_os("LEDGERD_BITCOIND") {
        Some(p) => PathBuf::from(p),
        None => {
            let tools = std::env::var_os("LEDGERD_TOOLS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache/ledgerd-tools")
                });
            tools.join(format!("bitcoind-{BITCOIND_CRATE_VERSION}/bin/bitcoind"))
        }
    };
    assert!(
        path.is_file(),
        "bitcoind not found at {}: build it with scripts/bitcoind/build.sh (or set \
         LEDGERD_BITCOIND to a bitcoind binary)",
        path.display()
    );
    path
}

/// A running regtest bitcoind.
pub struct Bitcoind {
    child: Option<Child>,
    /// Holds `datadir/` and `stderr.log`.
    pub dir: tempfile::TempDir,
    pub datadir: PathBuf,
    pub rpc_port: u16,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// With [`Bitcoind::start_with`] and `p2p`: the port bitcoind's P2P
    /// listens on, on 127.0.0.1 (`-listen=1 -bind=127.0.0.1:PORT`).
    pub p2p_port: Option<u16>,
    options: BitcoindOptions,
    agent: ureq::Agent,
}

/// How a [`Bitcoind`] runs.
#[derive(Clone, Copy, Debug)]
pub struct BitcoindOptions {
    /// `-txindex=1` (the default: what `--bitcoin-rpc` once needed).
    pub txindex: bool,
    /// Listen for P2P connections on 127.0.0.1 (`--bitcoin-peer`), else `-listen=0`.
    pub p2p: bool,
    /// `-v2transport=1` (Core's default since 27: BIP324 offered and
    /// accepted), else `-v2transport=0` (v1 only).
    pub v2transport: bool,
}

impl Default for BitcoindOptions {
    fn default() -> Self {
        BitcoindOptions {
            txindex: true,
            p2p: false,
            v2transport: true,
        }
    }
}

/// bitcoind's answer to a call it refused: its error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: i64,
    pub message: String,
}

impl Bitcoind {
    /// Starts a fresh regtest node and waits until its RPC answers.
    pub fn start() -> Bitcoind {
        Bitcoind::start_with(BitcoindOptions::default())
    }

    /// [`Bitcoind::start`] with these options.
    pub fn start_with(options: BitcoindOptions) -> Bitcoind {
        let dir = tempfile::tempdir().expect("temp dir");
        let datadir = dir.path().join("datadir");
        std::fs::create_dir(&datadir).expect("datadir");
        let mut node = Bitcoind {
            child: None,
            dir,
            datadir,
            rpc_port: 0,
            url: String::new(),
            p2p_port: None,
            options,
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build(),
        };
        // A free port can be taken between our probe and bitcoind's bind:
        // on that failure, try another.
        for attempt in 0.. {
            node.rpc_port = free_port();
            node.url = format!("http://127.0.0.1:{}", node.rpc_port);
            node.p2p_port = options.p2p.then(free_port);
            match node.spawn() {
                Ok(()) => break,
                Err(log) if attempt < 5 && log.contains("bind") => continue,
                Err(log) => panic!("bitcoind did not start:\n{log}"),
            }
        }
        node
    }

    /// `<datadir>/regtest/.cookie`, written by bitcoind at every start.
    pub fn cookie_path(&self) -> PathBuf {
        self.datadir.join("regtest/.cookie")
    }

    /// Starts bitcoind on this datadir and port, and waits for its RPC. On
    /// failure: the end of its logs.
    fn spawn(&mut self) -> Result<(), String> {
        assert!(self.child.is_none(), "bitcoind is already running");
        let stderr = std::fs::File::create(self.dir.path().join("stderr.log")).expect("log");
        let child = Command::new(bitcoind_path())
            .args([
                "-regtest",
                if self.options.txindex {
                    "-txindex=1"
                } else {
                    "-txindex=0"
                },
                "-server",
                "-printtoconsole=0",
                "-rpcbind=127.0.0.1",
                "-rpcallowip=127.0.0.1",
                // Room for the tests' and benchmarks' requests in flight.
                "-rpcthreads=8",
                "-rpcworkqueue=256",
            ])
            .arg(format!("-datadir={}", self.datadir.display()))
            .arg(format!("-rpcport={}", self.rpc_port))
            .arg(format!(
                "-v2transport={}",
                u8::from(self.options.v2transport)
            ))
            .args(match self.p2p_port {
                Some(port) => vec!["-listen=1".to_string(), format!("-bind=127.0.0.1:{port}")],
                None => vec!["-listen=0".to_string()],
            })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bitcoind_path().display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(format!("bitcoind exited ({status}):\n{}", self.logs()));
            }
            match self.try_call("getblockcount", json!([])) {
                Ok(_) => return Ok(()),
                // -28: warming up; connection errors and a missing cookie: not up yet.
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => {
                    self.kill9();
                    return Err(format!(
                        "bitcoind's RPC did not answer in 60 s ({e:?}):\n{}",
                        self.logs()
                    ));
                }
            }
        }
    }

    /// `127.0.0.1:PORT` of its P2P listener (started with `p2p`).
    pub fn p2p_addr(&self) -> String {
        format!(
            "127.0.0.1:{}",
            self.p2p_port.expect("bitcoind was started without p2p")
        )
    }

    /// The end of bitcoind's stderr and debug.log, for failure messages.
    pub fn logs(&self) -> String {
        let tail = |path: &Path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        format!(
            "--- stderr\n{}\n--- debug.log\n{}",
            tail(&self.dir.path().join("stderr.log")),
            tail(&self.datadir.join("regtest/debug.log"))
        )
    }

    /// Kills bitcoind at once (SIGKILL): no clean shutdown, the cookie file stays.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts bitcoind again on the same datadir and port (after
    /// [`Bitcoind::kill9`] or [`Bitcoind::stop`]); it writes a new cookie.
    pub fn restart(&mut self) {
        self.kill9();
        if let Err(log) = self.spawn() {
            panic!("bitcoind did not restart on port {}:\n{log}", self.rpc_port);
        }
    }

    /// One JSON-RPC call; `Err` with bitcoind's code and message when it refuses.
    pub fn try_call(&self, method: &str, params: Value) -> Result<Value, Refused> {
        let cookie = std::fs::read_to_string(self.cookie_path()).map_err(|e| Refused {
            code: 0,
            message: format!("no cookie yet: {e}"),
        })?;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        // ureq sends a URL's user and password as basic auth; a cookie is
        // `__cookie__:<hex>`, nothing to escape.
        let url = self
            .url
            .replacen("http://", &format!("http://{}@", cookie.trim()), 1);
        let answer = match self.agent.post(&url).send_string(&body.to_string()) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => {
                return Err(Refused {
                    code: 0,
                    message: format!("no answer: {e}"),
                })
            }
        };
        let mut text = String::new();
        answer
            .into_reader()
            .read_to_string(&mut text)
            .map_err(|e| Refused {
                code: 0,
                message: format!("the answer broke off: {e}"),
            })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| Refused {
            code: 0,
            message: format!("not JSON ({e}): {text}"),
        })?;
        match value.get("error") {
            Some(e) if !e.is_null() => Err(Refused {
                code: e["code"].as_i64().unwrap_or(0),
                message: e["message"].as_str().unwrap_or("").to_string(),
            }),
            _ => Ok(value["result"].clone()),
        }
    }

    /// [`Bitcoind::try_call`], panicking on a refusal.
    pub fn call(&self, method: &str, params: Value) -> Value {
        self.try_call(method, params.clone())
            .unwrap_or_else(|e| panic!("bitcoind refused {method} {params}: {e:?}"))
    }

    pub fn block_count(&self) -> u64 {
        self.call("getblockcount", json!([]))
            .as_u64()
            .expect("a height")
    }

    pub fn block_hash(&self, height: u64) -> String {
        self.call("getblockhash", json!([height]))
            .as_str()
            .expect("a hash")
            .to_string()
    }

    /// `generatetoaddress n address`: the new blocks' hashes.
    pub fn generate_to_address(&self, n: u64, address: &str) -> Vec<String> {
        serde_json::from_value(self.call("generatetoaddress", json!([n, address])))
            .expect("a list of hashes")
    }

    /// Mines `n` blocks paying [`burn_address`].
    pub fn mine(&self, n: u64) -> Vec<String> {
        self.generate_to_address(n, &burn_address().to_string())
    }

    /// Makes bitcoind write its block index and chain state to disk
    /// (`gettxoutsetinfo none` flushes them): without it, a
    /// [`Bitcoind::kill9`] loses the blocks mined since its last periodic
    /// flush, and the restarted node has a lower tip.
    pub fn flush(&self) {
        self.call("gettxoutsetinfo", json!(["none"]));
    }

    /// `invalidateblock hash`: the block and its descendants leave the active chain.
    pub fn invalidate_block(&self, hash: &str) {
        self.call("invalidateblock", json!([hash]));
    }
}

impl Drop for Bitcoind {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A regtest P2WPKH address of a fixed key nobody spends from.
pub fn burn_address() -> Address {
    let secp = Secp256k1::signing_only();
    let key = SecretKey::from_slice(&[0x42; 32]).expect("a valid key");
    let public = CompressedPublicKey(key.public_key(&secp));
    Address::p2wpkh(&public, Network::Regtest)
}

/// A port nobody listened on a moment ago (bind port 0, release it).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}
