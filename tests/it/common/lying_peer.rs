//! A Bitcoin peer that lies, for the P2P source's tests: a `TcpListener` on
//! 127.0.0.1 port 0 speaking Bitcoin's v1 protocol (the `bitcoin` crate's
//! codec, not ledgerd's framing) over a snapshot of a real regtest chain,
//! serving one kind of falsehood ([`Lie`]).
//!
//! It stands for a peer, not for Bitcoin: the honest chain it starts from
//! is a real bitcoind's ([`Snapshot::of`]). Every connection gets a thread;
//! it does the handshake as Bitcoin Core does (version with NODE_NETWORK and
//! NODE_WITNESS, verack), then answers `getheaders` and `getdata` as its lie
//! says, and records every message it is sent ([`LyingPeer::asked`]).
//! Dropping it stops accepting.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bitcoin::block::Header;
use bitcoin::consensus::{deserialize, encode::Decodable, serialize};
use bitcoin::hashes::Hash as _;
use bitcoin::p2p::address::Address;
use bitcoin::p2p::message::{NetworkMessage, RawNetworkMessage};
use bitcoin::p2p::message_blockdata::Inventory;
use bitcoin::p2p::message_network::VersionMessage;
use bitcoin::p2p::{Magic, ServiceFlags};
use bitcoin::pow::CompactTarget;
use bitcoin::{Block, BlockHash};
use serde_json::json;

use super::bitcoind::Bitcoind;

/// A real chain, copied from bitcoind: every header and raw block, genesis first.
#[derive(Clone)]
pub struct Snapshot {
    pub headers: Vec<Header>,
    pub blocks: Vec<Vec<u8>>,
}

impl Snapshot {
    /// The chain `node` has now.
    pub fn of(node: &Bitcoind) -> Snapshot {
        let tip = node.block_count();
        let mut headers = Vec::new();
        let mut blocks = Vec::new();
        for h in 0..=tip {
            let hash = node.block_hash(h);
            let raw = node.call("getblock", json!([hash, 0]));
            let bytes = hex::decode(raw.as_str().unwrap()).unwrap();
            let block: Block = deserialize(&bytes).unwrap();
            headers.push(block.header);
            blocks.push(bytes);
        }
        Snapshot { headers, blocks }
    }

    fn height_of(&self, hash: &BlockHash) -> Option<usize> {
        self.headers.iter().position(|h| h.block_hash() == *hash)
    }

    /// The headers after the first locator hash this chain has (genesis at worst).
    fn after(&self, locator: &[BlockHash]) -> Vec<Header> {
        let from = locator.iter().find_map(|h| self.height_of(h)).unwrap_or(0);
        self.headers[from + 1..]
            .iter()
            .take(2000)
            .copied()
            .collect()
    }
}

/// What the peer lies about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lie {
    /// Nothing: the real headers and blocks (a peer that gossips, see
    /// [`LyingPeer::gossiping`]).
    None,
    /// A fork from `back` blocks below the tip, shorter than the real chain
    /// from there (less work): its chain is the real one up to the fork,
    /// then the fork, answered to `getheaders` as Bitcoin Core answers a
    /// locator; every block is "not found".
    LessWorkFork { back: usize },
    /// The real headers, then more on top whose `bits` are not regtest's
    /// (each meets its own target).
    WrongBits,
    /// The real headers; each block served with its coinbase altered (the
    /// header unchanged, so the Merkle root no longer matches).
    AlteredBlocks,
    /// Nothing at all after the handshake.
    Silent,
    /// The real headers and blocks, but the block at `height` served with
    /// its witnesses stripped (the header and txids unchanged, so its Merkle
    /// root still matches): every witness with `keep_coinbase` false (what
    /// a peer sends for `MSG_BLOCK`), else all but the coinbase's reserved
    /// value (the commitment then no longer matches).
    StrippedWitness { height: usize, keep_coinbase: bool },
}

/// `block` with its witnesses stripped (see [`Lie::StrippedWitness`]).
pub fn strip_witnesses(block: &mut Block, keep_coinbase: bool) {
    let skip = usize::from(keep_coinbase);
    for tx in block.txdata.iter_mut().skip(skip) {
        for input in &mut tx.input {
            input.witness = bitcoin::Witness::new();
        }
    }
}

/// A running lying peer.
pub struct LyingPeer {
    pub addr: String,
    stop: Arc<AtomicBool>,
    /// Messages received over every connection, by command; and
    /// `"stripped"`: blocks sent with their witnesses stripped.
    asked: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for LyingPeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect(&self.addr);
    }
}

impl LyingPeer {
    pub fn start(lie: Lie, chain: Snapshot) -> LyingPeer {
        Self::gossiping(lie, chain, Vec::new())
    }

    /// [`LyingPeer::start`] that answers `getaddr` with `gossip` (an
    /// `addrv2` message, as Core answers an inbound peer's `getaddr`).
    pub fn gossiping(lie: Lie, chain: Snapshot, gossip: Vec<std::net::SocketAddr>) -> LyingPeer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(Mutex::new(HashMap::new()));
        let gossip = Arc::new(gossip);
        let chain = Arc::new(chain);
        {
            let (stop, asked, gossip) = (stop.clone(), asked.clone(), gossip.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let (chain, stop, asked) = (chain.clone(), stop.clone(), asked.clone());
                    let gossip = gossip.clone();
                    std::thread::spawn(move || {
                        let _ = serve(stream, lie, &chain, &stop, &asked, &gossip);
                    });
                }
            });
        }
        LyingPeer { addr, stop, asked }
    }

    /// Its address, parsed.
    pub fn socket_addr(&self) -> std::net::SocketAddr {
        self.addr.parse().unwrap()
    }

    /// For another thread: whether it has sent a block stripped of its
    /// witnesses yet.
    pub fn has_stripped(&self) -> impl Fn() -> bool + Send + 'static {
        let asked = self.asked.clone();
        move || {
            asked
                .lock()
                .unwrap()
                .get("stripped")
                .is_some_and(|n| *n > 0)
        }
    }

    /// How many `command` messages (`getheaders`, `getdata`, ...) it was sent.
    pub fn asked(&self, command: &str) -> usize {
        self.asked
            .lock()
            .unwrap()
            .get(command)
            .copied()
            .unwrap_or(0)
    }
}

fn send(stream: &mut TcpStream, message: NetworkMessage) -> std::io::Result<()> {
    stream.write_all(&serialize(&RawNetworkMessage::new(Magic::REGTEST, message)))
}

fn serve(
    stream: TcpStream,
    lie: Lie,
    chain: &Snapshot,
    stop: &AtomicBool,
    asked: &Mutex<HashMap<String, usize>>,
    gossip: &[std::net::SocketAddr],
) -> Result<(), String> {
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let fork = lie_headers(lie, chain);
    // A less-work peer's own chain: the real one up to the fork, then the fork.
    let own: Vec<(BlockHash, Header)> = match lie {
        Lie::LessWorkFork { back } => chain.headers[..chain.headers.len() - back]
            .iter()
            .chain(&fork)
            .map(|h| (h.block_hash(), *h))
            .collect(),
        _ => Vec::new(),
    };
    loop {
        // Blocking reads: the thread ends when the client hangs up. A
        // header without this network's magic (a BIP324 v2 key, say) is hung
        // up on at once, as Bitcoin Core's v1 transport does, never waited on
        // for the payload length its random bytes happen to spell.
        let mut head = [0u8; 24];
        reader.read_exact(&mut head).map_err(|e| e.to_string())?;
        if head[..4] != Magic::REGTEST.to_bytes() {
            return Err("not the regtest magic: hung up".into());
        }
        let len = u32::from_le_bytes([head[16], head[17], head[18], head[19]]) as usize;
        if len > 4_000_000 {
            return Err(format!("a {len}-byte payload announced: hung up"));
        }
        let mut raw = head.to_vec();
        raw.resize(24 + len, 0);
        reader
            .read_exact(&mut raw[24..])
            .map_err(|e| e.to_string())?;
        let message = RawNetworkMessage::consensus_decode(&mut &raw[..])
            .map_err(|e| e.to_string())?
            .into_payload();
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        *asked
            .lock()
            .unwrap()
            .entry(message.cmd().to_string())
            .or_insert(0) += 1;
        let out = match (lie, message) {
            (_, NetworkMessage::Version(theirs)) => {
                let local = writer.local_addr().unwrap();
                let mut v = VersionMessage::new(
                    ServiceFlags::NETWORK | ServiceFlags::WITNESS,
                    0,
                    Address::new(&local, ServiceFlags::NONE),
                    Address::new(&local, ServiceFlags::NONE),
                    theirs.nonce.wrapping_add(1),
                    "/lying-peer:0.1/".into(),
                    chain.headers.len() as i32 - 1,
                );
                v.version = 70016;
                vec![NetworkMessage::Version(v), NetworkMessage::Verack]
            }
            (Lie::Silent, _) => vec![],
            (_, NetworkMessage::GetAddr) if !gossip.is_empty() => {
                vec![NetworkMessage::AddrV2(
                    gossip
                        .iter()
                        .map(|a| bitcoin::p2p::address::AddrV2Message {
                            time: 1_700_000_000,
                            services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
                            addr: match a.ip() {
                                std::net::IpAddr::V4(ip) => bitcoin::p2p::address::AddrV2::Ipv4(ip),
                                std::net::IpAddr::V6(ip) => bitcoin::p2p::address::AddrV2::Ipv6(ip),
                            },
                            port: a.port(),
                        })
                        .collect(),
                )]
            }
            (_, NetworkMessage::Ping(n)) => vec![NetworkMessage::Pong(n)],
            (Lie::LessWorkFork { .. }, NetworkMessage::GetHeaders(m)) => {
                // After the first locator hash on its own chain, as Core answers.
                let from = m
                    .locator_hashes
                    .iter()
                    .find_map(|l| own.iter().position(|(h, _)| h == l))
                    .unwrap_or(0);
                let after = own[from + 1..].iter().take(2000).map(|(_, h)| *h);
                vec![NetworkMessage::Headers(after.collect())]
            }
            (Lie::WrongBits, NetworkMessage::GetHeaders(m)) => {
                let mut h = chain.after(&m.locator_hashes);
                h.extend(fork.iter().copied());
                vec![NetworkMessage::Headers(h)]
            }
            (
                Lie::None | Lie::AlteredBlocks | Lie::StrippedWitness { .. },
                NetworkMessage::GetHeaders(m),
            ) => {
                vec![NetworkMessage::Headers(chain.after(&m.locator_hashes))]
            }
            (Lie::AlteredBlocks, NetworkMessage::GetData(items)) => items
                .iter()
                .map(|item| match item {
                    Inventory::WitnessBlock(h) => match chain.height_of(h) {
                        Some(i) => {
                            let mut block: Block = deserialize(&chain.blocks[i]).unwrap();
                            block.txdata[0].output[0].value += bitcoin::Amount::from_sat(1);
                            NetworkMessage::Block(block)
                        }
                        None => NetworkMessage::NotFound(vec![*item]),
                    },
                    other => NetworkMessage::NotFound(vec![*other]),
                })
                .collect(),
            (
                Lie::StrippedWitness {
                    height,
                    keep_coinbase,
                },
                NetworkMessage::GetData(items),
            ) => items
                .iter()
                .map(|item| match item {
                    Inventory::WitnessBlock(h) => match chain.height_of(h) {
                        Some(i) => {
                            let mut block: Block = deserialize(&chain.blocks[i]).unwrap();
                            if i == height {
                                strip_witnesses(&mut block, keep_coinbase);
                                *asked.lock().unwrap().entry("stripped".into()).or_insert(0) += 1;
                            }
                            NetworkMessage::Block(block)
                        }
                        None => NetworkMessage::NotFound(vec![*item]),
                    },
                    other => NetworkMessage::NotFound(vec![*other]),
                })
                .collect(),
            (Lie::None, NetworkMessage::GetData(items)) => items
                .iter()
                .map(|item| match item {
                    Inventory::WitnessBlock(h) => match chain.height_of(h) {
                        Some(i) => NetworkMessage::Block(deserialize(&chain.blocks[i]).unwrap()),
                        None => NetworkMessage::NotFound(vec![*item]),
                    },
                    other => NetworkMessage::NotFound(vec![*other]),
                })
                .collect(),
            (_, NetworkMessage::GetData(items)) => vec![NetworkMessage::NotFound(items)],
            _ => vec![],
        };
        for m in out {
            send(&mut writer, m).map_err(|e| e.to_string())?;
        }
    }
}

/// The made-up headers of a lie: a shorter fork, or headers with wrong bits
/// on top of the tip. Each meets the target of its own bits.
fn lie_headers(lie: Lie, chain: &Snapshot) -> Vec<Header> {
    let (parent, count, bits) = match lie {
        Lie::LessWorkFork { back } => {
            let at = chain.headers.len() - 1 - back;
            // Shorter than the real chain above `at`, same difficulty.
            (at, back.saturating_sub(2).max(1), 0x207f_ffff)
        }
        // Harder than regtest's one permitted bits: more work claimed.
        Lie::WrongBits => (chain.headers.len() - 1, 5, 0x2000_ffff),
        _ => return vec![],
    };
    let mut prev = chain.headers[parent];
    let mut out = Vec::new();
    for i in 0..count {
        let mut h = Header {
            version: prev.version,
            prev_blockhash: prev.block_hash(),
            merkle_root: bitcoin::TxMerkleNode::from_byte_array([0x5a; 32]),
            time: prev.time + 1 + i as u32,
            bits: CompactTarget::from_consensus(bits),
            nonce: 0,
        };
        while h.validate_pow(h.target()).is_err() {
            h.nonce += 1;
        }
        out.push(h);
        prev = h;
    }
    out
}

/// A TCP forwarder on 127.0.0.1 port 0 to a real peer that refuses (accepts
/// and closes) every connection until opened ([`LateForward::open`] or
/// `opens_when` turning true), then passes bytes both ways: the honest peer
/// a follower can reach only once something has happened.
pub struct LateForward {
    pub addr: String,
    open: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Drop for LateForward {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(&self.addr);
    }
}

impl LateForward {
    pub fn start(target: &str, opens_when: impl Fn() -> bool + Send + 'static) -> LateForward {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let open = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let target = target.to_string();
        {
            let (open, stop) = (open.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(client) = stream else { continue };
                    if !open.load(Ordering::Relaxed) && opens_when() {
                        open.store(true, Ordering::Relaxed);
                    }
                    if !open.load(Ordering::Relaxed) {
                        drop(client);
                        continue;
                    }
                    let Ok(server) = TcpStream::connect(&target) else {
                        continue;
                    };
                    for (mut from, mut to) in [
                        (client.try_clone().unwrap(), server.try_clone().unwrap()),
                        (server, client),
                    ] {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(std::net::Shutdown::Both);
                        });
                    }
                }
            });
        }
        LateForward { addr, open, stop }
    }

    /// Whether it forwards now.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }
}
