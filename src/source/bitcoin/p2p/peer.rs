//! One connection to one Bitcoin peer: the handshake, then requests and
//! their answers, blocking, with a bound on every wait.
//!
//! ledgerd connects out (over v1 or BIP324's v2 transport:
//! [`crate::source::bitcoin::p2p::transport`]) and says little: `version` with protocol 70016, no
//! services and relay off (it wants no transactions announced), then
//! `verack` once the peer's `version` came. While it waits for an answer it
//! answers the peer's `ping` with a `pong` of the same nonce and lets other
//! chatter (`inv`, `addr`, `sendcmpct`, `feefilter`, ...) pass.
//!
//! Every read is bounded ([`PeerOptions::stall`]): a peer that sends nothing
//! for that long, or keeps talking without ever answering what was asked, is
//! stalled and given up; a read cut off in the middle of a message would
//! leave the stream out of step, so a connection is never read again after
//! any error. What each error says about the peer is its
//! [`PeerError::reason`], the `/metrics` label it is dropped under.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bitcoin::block::Header;
use bitcoin::hashes::Hash as _;
use bitcoin::p2p::address::Address;
use bitcoin::p2p::message::NetworkMessage;
use bitcoin::p2p::message_blockdata::{GetHeadersMessage, Inventory};
use bitcoin::p2p::message_network::VersionMessage;
use bitcoin::p2p::{Magic, ServiceFlags};
use bitcoin::BlockHash;

use crate::source::bitcoin::p2p::message::{block_payload, FrameError};
use crate::source::bitcoin::p2p::transport::{self, Transport, TransportChoice, TransportKind};

/// The protocol version ledgerd speaks (Bitcoin Core 22+: `wtxidrelay`, `sendaddrv2`).
pub const PROTOCOL_VERSION: u32 = 70016;

/// The oldest protocol a peer may speak: 70012 (Core 0.12) serves witness blocks and headers-first.
pub const MIN_PEER_VERSION: u32 = 70012;

/// The most headers one `headers` message may carry (Core's `MAX_HEADERS_RESULTS`).
pub const MAX_HEADERS: usize = 2_000;

/// The most addresses kept from one peer between takes (Core's `MAX_ADDR_TO_SEND`).
pub const MAX_ADDR: usize = 1_000;

/// How a connection waits.
#[derive(Clone, Debug)]
pub struct PeerOptions {
    /// The network's magic.
    pub magic: Magic,
    /// Longest wait for the TCP connection.
    pub connect_timeout: Duration,
    /// Longest wait for an answer (the handshake, headers, the next block
    /// asked for): past it the peer is stalled.
    pub stall: Duration,
    /// Ask for addresses (`getaddr`, once, after the handshake) and keep
    /// those the peer sends ([`Peer::take_learned`]).
    pub discover: bool,
    /// `--bitcoin-transport`: v1, v2, or v2 where the peer may speak it.
    pub transport: TransportChoice,
    /// The services the peer is known to offer (`None`: not known, as for
    /// a `--bitcoin-peer`): `auto` starts v2 with a peer of unknown
    /// services or one that advertises `NODE_P2P_V2`.
    pub services: Option<ServiceFlags>,
}

impl PeerOptions {
    pub fn new(magic: Magic) -> Self {
        PeerOptions {
            magic,
            connect_timeout: Duration::from_secs(5),
            stall: Duration::from_secs(20),
            discover: false,
            transport: TransportChoice::Auto,
            services: None,
        }
    }
}

/// Why a peer was given up.
#[derive(Debug)]
pub enum PeerError {
    /// Reading or writing failed, or a message broke the framing rules.
    Frame(FrameError),
    /// It could not be connected to.
    Connect(std::io::Error),
    /// Nothing asked for came within the bound.
    Stalled { waiting_for: &'static str },
    /// It broke the protocol or sent something false; `reason` is the `/metrics` label.
    Misbehaved { reason: &'static str, why: String },
}

impl PeerError {
    /// The `/metrics` label a peer dropped for this error is counted under.
    pub fn reason(&self) -> &'static str {
        match self {
            PeerError::Frame(e) => e.reason(),
            PeerError::Connect(_) => "connection",
            PeerError::Stalled { .. } => "stalled",
            PeerError::Misbehaved { reason, .. } => reason,
        }
    }

    pub fn misbehaved(reason: &'static str, why: impl Into<String>) -> Self {
        PeerError::Misbehaved {
            reason,
            why: why.into(),
        }
    }
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerError::Frame(e) => e.fmt(f),
            PeerError::Connect(e) => write!(f, "it cannot be connected to: {e}"),
            PeerError::Stalled { waiting_for } => {
                write!(f, "it sent no {waiting_for} within the bound (stalled)")
            }
            PeerError::Misbehaved { why, .. } => f.write_str(why),
        }
    }
}

impl std::error::Error for PeerError {}

impl From<FrameError> for PeerError {
    fn from(e: FrameError) -> Self {
        // A read that timed out: nothing came in time.
        match e.reason() {
            "stalled" => PeerError::Stalled {
                waiting_for: "message",
            },
            _ => PeerError::Frame(e),
        }
    }
}

impl From<std::io::Error> for PeerError {
    fn from(e: std::io::Error) -> Self {
        PeerError::from(FrameError::Io(e))
    }
}

/// A connected peer, past the handshake.
pub struct Peer {
    addr: SocketAddr,
    transport: Transport,
    options: PeerOptions,
    /// Addresses from its `addr`/`addrv2` not taken yet (at most [`MAX_ADDR`]).
    learned: Vec<(SocketAddr, ServiceFlags)>,
    /// Why `--bitcoin-transport auto` gave up v2 for v1 on this connection, if it did.
    pub fell_back: Option<String>,
    /// The height the peer said it had in its `version`.
    pub start_height: i32,
    /// Its user agent, as it said.
    pub user_agent: String,
    /// The services its `version` offered.
    pub services: ServiceFlags,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer").field("addr", &self.addr).finish()
    }
}

impl Peer {
    /// Connects to `host:port` and does the handshake.
    pub fn connect(addr: &str, options: PeerOptions) -> Result<Peer, PeerError> {
        let resolved = addr
            .to_socket_addrs()
            .map_err(PeerError::Connect)?
            .next()
            .ok_or_else(|| {
                PeerError::Connect(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{addr} resolves to no address"),
                ))
            })?;
        let opened = transport::open(
            &resolved,
            options.magic,
            options.transport,
            options.services,
            options.connect_timeout,
            options.stall,
        )
        .map_err(|e| match e {
            transport::OpenError::Connect(io) => PeerError::Connect(io),
            transport::OpenError::V2(why) => PeerError::misbehaved("protocol", why),
        })?;
        let mut peer = Peer {
            addr: resolved,
            transport: opened.transport,
            fell_back: opened.fell_back,
            options,
            learned: Vec::new(),
            start_height: 0,
            user_agent: String::new(),
            services: ServiceFlags::NONE,
        };
        peer.handshake()?;
        Ok(peer)
    }

    /// The peer's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The transport this connection speaks.
    pub fn transport(&self) -> TransportKind {
        self.transport.kind()
    }

    fn handshake(&mut self) -> Result<(), PeerError> {
        let nonce = {
            let t = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            t ^ (u64::from(std::process::id()) << 32)
        };
        let local = self
            .transport
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let mut version = VersionMessage::new(
            ServiceFlags::NONE,
            crate::headers::unix_now(),
            Address::new(&self.addr, ServiceFlags::NONE),
            Address::new(&local, ServiceFlags::NONE),
            nonce,
            format!("/ledgerd:{}/", env!("CARGO_PKG_VERSION")),
            0,
        );
        version.version = PROTOCOL_VERSION;
        version.relay = false;
        self.send(NetworkMessage::Version(version))?;
        let deadline = Instant::now() + self.options.stall;
        let (mut got_version, mut got_verack) = (false, false);
        while !(got_version && got_verack) {
            match self.read(deadline, "version and verack")? {
                NetworkMessage::Version(theirs) => {
                    let second = got_version.then(|| "it sent a second version message".into());
                    if let Some(why) = second.or_else(|| refused(&theirs, nonce)) {
                        return Err(PeerError::misbehaved("protocol", why));
                    }
                    self.start_height = theirs.start_height;
                    self.user_agent = theirs.user_agent;
                    self.services = theirs.services;
                    got_version = true;
                    // BIP155, before verack as Core sends it.
                    self.send(NetworkMessage::SendAddrV2)?;
                    self.send(NetworkMessage::Verack)?;
                }
                NetworkMessage::Verack => got_verack = true,
                _ => {}
            }
        }
        if self.options.discover {
            self.send(NetworkMessage::GetAddr)?;
        }
        Ok(())
    }

    /// The addresses its `addr`/`addrv2` messages gave since the last call
    /// (IPv4 and IPv6 only).
    pub fn take_learned(&mut self) -> Vec<(SocketAddr, ServiceFlags)> {
        std::mem::take(&mut self.learned)
    }

    fn keep_addrs(&mut self, addrs: impl Iterator<Item = (SocketAddr, ServiceFlags)>) {
        let room = MAX_ADDR.saturating_sub(self.learned.len());
        self.learned.extend(addrs.take(room));
    }

    /// Sends one message.
    pub fn send(&mut self, message: NetworkMessage) -> Result<(), PeerError> {
        self.transport.write(message)?;
        Ok(())
    }

    /// The next message that is not a ping (answered here) by `deadline`.
    fn read(
        &mut self,
        deadline: Instant,
        waiting_for: &'static str,
    ) -> Result<NetworkMessage, PeerError> {
        loop {
            if deadline <= Instant::now() {
                return Err(PeerError::Stalled { waiting_for });
            }
            let message = self.transport.read(deadline).map_err(|e| match e.into() {
                PeerError::Stalled { .. } => PeerError::Stalled { waiting_for },
                other => other,
            })?;
            match message {
                NetworkMessage::Ping(nonce) => self.send(NetworkMessage::Pong(nonce))?,
                NetworkMessage::Addr(list) if self.options.discover => self.keep_addrs(
                    list.iter()
                        .filter_map(|(_, a)| Some((a.socket_addr().ok()?, a.services))),
                ),
                NetworkMessage::AddrV2(list) if self.options.discover => self.keep_addrs(
                    list.iter()
                        .filter_map(|a| Some((a.socket_addr().ok()?, a.services))),
                ),
                other => return Ok(other),
            }
        }
    }

    /// `getheaders` with `locator` (newest first, at most 101 hashes); the
    /// peer's answer: the headers that follow the first locator hash on its
    /// chain, at most [`MAX_HEADERS`], empty when it has none after them.
    pub fn get_headers(&mut self, locator: Vec<BlockHash>) -> Result<Vec<Header>, PeerError> {
        let mut message = GetHeadersMessage::new(locator, BlockHash::all_zeros());
        message.version = PROTOCOL_VERSION;
        self.send(NetworkMessage::GetHeaders(message))?;
        let deadline = Instant::now() + self.options.stall;
        loop {
            match self.read(deadline, "headers")? {
                NetworkMessage::Headers(headers) if headers.len() > MAX_HEADERS => {
                    let n = headers.len();
                    let why =
                        format!("it sent {n} headers in one message, more than {MAX_HEADERS}");
                    return Err(PeerError::misbehaved("oversized", why));
                }
                NetworkMessage::Headers(headers) => return Ok(headers),
                NetworkMessage::Unknown { command, .. } if command.as_ref() == "block" => {
                    let why = "it sent a block nobody asked for";
                    return Err(PeerError::misbehaved("protocol", why));
                }
                _ => {}
            }
        }
    }

    /// `getdata` for the witness blocks `hashes` (their answers come through
    /// [`Peer::next_block`]).
    pub fn request_blocks(&mut self, hashes: &[BlockHash]) -> Result<(), PeerError> {
        let inventory = hashes.iter().map(|h| Inventory::WitnessBlock(*h)).collect();
        self.send(NetworkMessage::GetData(inventory))
    }

    /// The next block the peer sends, its bytes as they came (checked by
    /// [`crate::source::bitcoin::block::parse_block`]), and over v1 its
    /// message checksum, not hashed yet
    /// ([`crate::source::bitcoin::p2p::message`]). A `notfound` for a
    /// block is an error (`not_found`): the peer does not have what was asked.
    pub fn next_block(&mut self) -> Result<(Vec<u8>, Option<[u8; 4]>), PeerError> {
        let deadline = Instant::now() + self.options.stall;
        loop {
            match block_payload(self.read(deadline, "block")?) {
                Ok(raw) => return Ok((raw, self.transport.block_checksum())),
                Err(other) => {
                    if let NetworkMessage::NotFound(items) = *other {
                        if let Some(Inventory::WitnessBlock(h) | Inventory::Block(h)) =
                            items.first()
                        {
                            return Err(PeerError::misbehaved(
                                "not_found",
                                format!("it does not have block {h}"),
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// Why a peer's `version` is refused, if it is: ourselves (our own
/// `nonce`), too old a protocol, or no witness blocks served.
fn refused(theirs: &VersionMessage, nonce: u64) -> Option<String> {
    if theirs.nonce == nonce {
        Some("it is ourselves".into())
    } else if theirs.version < MIN_PEER_VERSION {
        let version = theirs.version;
        Some(format!(
            "it speaks protocol {version}, older than {MIN_PEER_VERSION}"
        ))
    } else if !theirs.services.has(ServiceFlags::WITNESS) {
        Some("it serves no witness blocks (no NODE_WITNESS service)".into())
    } else {
        None
    }
}

#[cfg(test)]
mod wire_tests {
    //! One `Peer` against a stand-in peer on a local socket that speaks the
    //! protocol as Bitcoin Core does, or breaks it on purpose.
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    use super::*;
    use crate::source::bitcoin::p2p::message::{
        read_message_deferring, write_message, MAX_PAYLOAD,
    };

    /// What the stand-in does after reading our version.
    #[derive(Clone, Copy)]
    enum Then {
        /// version (NETWORK | WITNESS) and verack; then a ping and the headers asked for.
        Honest,
        /// version without NODE_WITNESS.
        NoWitness,
        /// handshake, then a message announcing a payload over the cap.
        Oversized,
        /// handshake, then nothing.
        Silent,
    }

    fn stand_in(then: Then) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut r = s.try_clone().unwrap();
            let send = |s: &mut TcpStream, m| write_message(s, Magic::REGTEST, m).unwrap();
            let read = |r: &mut TcpStream| read_message_deferring(r, Magic::REGTEST).unwrap().0;
            let NetworkMessage::Version(ours) = read(&mut r) else {
                panic!("not a version first")
            };
            assert_eq!(ours.version, PROTOCOL_VERSION);
            assert_eq!(ours.services, ServiceFlags::NONE);
            assert!(!ours.relay);
            let services = match then {
                Then::NoWitness => ServiceFlags::NETWORK,
                _ => ServiceFlags::NETWORK | ServiceFlags::WITNESS,
            };
            let local = s.local_addr().unwrap();
            let mut v = VersionMessage::new(
                services,
                0,
                Address::new(&local, ServiceFlags::NONE),
                Address::new(&local, ServiceFlags::NONE),
                1,
                "/stand-in/".into(),
                7,
            );
            v.version = PROTOCOL_VERSION;
            send(&mut s, NetworkMessage::Version(v));
            send(&mut s, NetworkMessage::Verack);
            match then {
                Then::Honest => {
                    assert_eq!(read(&mut r), NetworkMessage::SendAddrV2);
                    assert_eq!(read(&mut r), NetworkMessage::Verack);
                    let NetworkMessage::GetHeaders(m) = read(&mut r) else {
                        panic!("not a getheaders")
                    };
                    send(&mut s, NetworkMessage::Ping(42));
                    assert_eq!(read(&mut r), NetworkMessage::Pong(42));
                    let genesis =
                        bitcoin::blockdata::constants::genesis_block(bitcoin::Network::Regtest);
                    assert_eq!(m.locator_hashes, vec![genesis.block_hash()]);
                    send(&mut s, NetworkMessage::Headers(vec![genesis.header]));
                }
                Then::Oversized => {
                    let mut raw = Vec::new();
                    write_message(&mut raw, Magic::REGTEST, NetworkMessage::Headers(vec![]))
                        .unwrap();
                    raw[16..20].copy_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
                    s.write_all(&raw).unwrap();
                }
                Then::NoWitness | Then::Silent => {}
            }
            // Hold the connection open until the peer hangs up.
            while read_message_deferring(&mut r, Magic::REGTEST).is_ok() {}
        });
        addr
    }

    fn options() -> PeerOptions {
        PeerOptions {
            stall: Duration::from_millis(500),
            // The stand-in speaks v1 only, and accepts one connection.
            transport: TransportChoice::V1,
            ..PeerOptions::new(Magic::REGTEST)
        }
    }

    #[test]
    fn the_handshake_then_headers_with_a_ping_answered_while_waiting() {
        let mut peer = Peer::connect(&stand_in(Then::Honest), options()).unwrap();
        assert_eq!(peer.start_height, 7);
        assert_eq!(peer.user_agent, "/stand-in/");
        let genesis = bitcoin::blockdata::constants::genesis_block(bitcoin::Network::Regtest);
        let headers = peer.get_headers(vec![genesis.block_hash()]).unwrap();
        assert_eq!(headers, vec![genesis.header]);
    }

    #[test]
    fn a_peer_without_witness_blocks_is_refused_at_the_handshake() {
        let err = Peer::connect(&stand_in(Then::NoWitness), options()).unwrap_err();
        assert_eq!(err.reason(), "protocol", "{err}");
        assert!(err.to_string().contains("NODE_WITNESS"), "{err}");
    }

    #[test]
    fn a_message_over_the_cap_drops_the_peer_as_oversized() {
        let mut peer = Peer::connect(&stand_in(Then::Oversized), options()).unwrap();
        let err = peer.get_headers(vec![BlockHash::all_zeros()]).unwrap_err();
        assert_eq!(err.reason(), "oversized", "{err}");
    }

    #[test]
    fn a_peer_that_answers_nothing_is_stalled_within_the_bound() {
        let mut peer = Peer::connect(&stand_in(Then::Silent), options()).unwrap();
        let started = Instant::now();
        let err = peer.get_headers(vec![BlockHash::all_zeros()]).unwrap_err();
        assert_eq!(err.reason(), "stalled", "{err}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(450) && took < Duration::from_secs(5),
            "{took:?}"
        );
    }
}
