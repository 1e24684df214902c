//! How a connection's bytes become messages: Bitcoin's v1 framing
//! ([`crate::source::bitcoin::p2p::message`]) or BIP324's encrypted v2
//! ([`crate::source::bitcoin::p2p::v2`]), behind one read and one write
//! ([`Transport`]), and which of the two a new connection speaks
//! (`--bitcoin-transport`, [`TransportChoice`]).
//!
//! `auto` (the default) does what Bitcoin Core does: v2 first with a peer
//! that advertises `NODE_P2P_V2` (service bit 11) and with a peer whose
//! services are not known yet (every `--bitcoin-peer`: Core tries v2 first
//! on manual connections), v1 with the others; and when the v2 handshake
//! fails before the peer sent a single byte (a v1-only node reads ledgerd's
//! key as a v1 header with the wrong magic and hangs up), it connects again
//! at once and speaks v1 (Core's `V2Transport::ShouldReconnectV1`). A peer
//! that answered something that is not BIP324 is not retried over v1: it is
//! not a v1 node that misread us. One more case than Core: a peer whose
//! first bytes are the network's magic answered in v1, and is retried so.
//!
//! Every read waits at most until the deadline the caller gives
//! ([`TimedStream`]): the handshake's, or the answer's it waits for.

use std::fmt;
use std::io::{self, BufReader, BufWriter, Read};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bitcoin::p2p::message::NetworkMessage;
use bitcoin::p2p::{Magic, ServiceFlags};
use bitcoin::Network;

use crate::source::bitcoin::p2p::message::{read_message_deferring, write_message, FrameError};
use crate::source::bitcoin::p2p::v2::{self, HandshakeError, Session};

/// `--bitcoin-transport`: which transport new connections speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TransportChoice {
    /// v2 where the peer may speak it, v1 otherwise and as the fallback.
    #[default]
    Auto,
    /// v2 only: a peer that does not speak it is not connected.
    V2,
    /// v1 only.
    V1,
}

impl TransportChoice {
    /// The flag's value parser.
    pub fn parse(value: &str) -> Result<TransportChoice, String> {
        match value {
            "auto" => Ok(TransportChoice::Auto),
            "v2" => Ok(TransportChoice::V2),
            "v1" => Ok(TransportChoice::V1),
            other => Err(format!(
                "takes auto (BIP324's v2 where the peer may speak it, else v1, as Bitcoin Core \
                 does), v2 (encrypted only) or v1 (plain only), not {other:?}"
            )),
        }
    }

    /// Whether a connection to a peer whose services are `services`
    /// (`None`: not known yet, as a `--bitcoin-peer`'s) starts with v2.
    pub fn starts_v2(self, services: Option<ServiceFlags>) -> bool {
        match self {
            TransportChoice::V1 => false,
            TransportChoice::V2 => true,
            TransportChoice::Auto => services.is_none_or(|s| s.has(ServiceFlags::P2P_V2)),
        }
    }
}

impl fmt::Display for TransportChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportChoice::Auto => "auto",
            TransportChoice::V2 => "v2",
            TransportChoice::V1 => "v1",
        })
    }
}

/// The transport a connection speaks, as `/health` and `/metrics` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    V1,
    V2,
}

impl TransportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::V1 => "v1",
            TransportKind::V2 => "v2",
        }
    }
}

/// A socket's read side whose every read waits at most until a deadline,
/// counting the bytes read.
pub struct TimedStream {
    stream: TcpStream,
    deadline: Option<Instant>,
    received: u64,
}

impl Read for TimedStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nothing more came within the bound",
                ));
            }
            self.stream.set_read_timeout(Some(left))?;
        }
        let n = self.stream.read(buf)?;
        self.received += n as u64;
        Ok(n)
    }
}

/// One connection's messages in and out (module docs).
pub struct Transport {
    reader: BufReader<TimedStream>,
    writer: BufWriter<TcpStream>,
    magic: Magic,
    /// `None`: v1.
    v2: Option<Session>,
    /// The checksum of the last block read over v1, not hashed yet
    /// ([`crate::source::bitcoin::p2p::message`]).
    unchecked: Option<[u8; 4]>,
}

/// A connection open, and whether `auto` fell back to v1 on the way.
pub struct Opened {
    pub transport: Transport,
    /// Why the v2 attempt was given up, when it was and v1 was spoken.
    pub fell_back: Option<String>,
}

/// Why a connection could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The TCP connection failed.
    Connect(io::Error),
    /// The v2 handshake failed, and v1 is not tried: why, as a sentence.
    V2(String),
}

/// Connects to `addr` and agrees on a transport as `choice` says for a peer
/// whose services are `services` (module docs). The TCP connection waits at
/// most `connect_timeout`, the v2 handshake at most `stall`.
pub fn open(
    addr: &SocketAddr,
    magic: Magic,
    choice: TransportChoice,
    services: Option<ServiceFlags>,
    connect_timeout: Duration,
    stall: Duration,
) -> Result<Opened, OpenError> {
    let connect = || -> io::Result<(BufReader<TimedStream>, BufWriter<TcpStream>)> {
        let stream = TcpStream::connect_timeout(addr, connect_timeout)?;
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(stall))?;
        let writer = BufWriter::new(stream.try_clone()?);
        let timed = TimedStream {
            stream,
            deadline: None,
            received: 0,
        };
        Ok((BufReader::with_capacity(64 * 1024, timed), writer))
    };
    let v1 = |fell_back| {
        let (reader, writer) = connect().map_err(OpenError::Connect)?;
        let transport = Transport::new(reader, writer, magic, None);
        Ok(Opened {
            transport,
            fell_back,
        })
    };
    if !choice.starts_v2(services) {
        return v1(None);
    }
    let (mut reader, mut writer) = connect().map_err(OpenError::Connect)?;
    let network = Network::from_magic(magic).ok_or_else(|| {
        OpenError::Connect(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("magic {magic} is no network BIP324 knows"),
        ))
    })?;
    reader.get_mut().deadline = Some(Instant::now() + stall);
    let error = match v2::handshake(&mut reader, &mut writer, network) {
        Ok(session) => {
            return Ok(Opened {
                transport: Transport::new(reader, writer, magic, Some(session)),
                fell_back: None,
            })
        }
        Err(e) => e,
    };
    let answered = reader.get_ref().received > 0;
    let answered_v1 = matches!(error, HandshakeError::AnsweredV1);
    if choice == TransportChoice::V2 && (!answered || answered_v1) {
        return Err(OpenError::V2(format!(
            "it does not speak BIP324's v2 transport (the v2 handshake got no answer: {error}): \
             it speaks only v1 (Bitcoin Core before 26, or started with -v2transport=0); \
             --bitcoin-transport v2 connects to v2 peers only: give auto to speak v1 with it"
        )));
    }
    // A read or write that failed, rather than bytes that are not BIP324.
    let silent_hang_up = !answered && matches!(error, HandshakeError::Io(_));
    if choice != TransportChoice::Auto || !(silent_hang_up || answered_v1) {
        return Err(OpenError::V2(format!(
            "its answer to the v2 (BIP324) handshake is not BIP324: {error}; a v1 node would \
             have hung up without a word, so it is not tried over v1 (--bitcoin-transport v1 \
             would speak only v1 with every peer)"
        )));
    }
    drop((reader, writer));
    v1(Some(format!(
        "the v2 (BIP324) handshake got no answer ({error})"
    )))
}

impl Transport {
    fn new(
        reader: BufReader<TimedStream>,
        writer: BufWriter<TcpStream>,
        magic: Magic,
        v2: Option<Session>,
    ) -> Transport {
        Transport {
            reader,
            writer,
            magic,
            v2,
            unchecked: None,
        }
    }

    /// Which transport this connection speaks.
    pub fn kind(&self) -> TransportKind {
        match self.v2 {
            Some(_) => TransportKind::V2,
            None => TransportKind::V1,
        }
    }

    /// The local end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.writer.get_ref().local_addr()
    }

    /// The next message, read whole by `deadline` (or an error: a
    /// connection is never read again after one).
    pub fn read(&mut self, deadline: Instant) -> Result<NetworkMessage, FrameError> {
        self.reader.get_mut().deadline = Some(deadline);
        self.unchecked = None;
        match &mut self.v2 {
            Some(session) => session.read(&mut self.reader),
            None => {
                let (message, unchecked) = read_message_deferring(&mut self.reader, self.magic)?;
                self.unchecked = unchecked;
                Ok(message)
            }
        }
    }

    /// The checksum of the block [`Transport::read`] just returned, when it
    /// came over v1 and was not hashed yet (`None` over v2: its packet
    /// authenticated every byte).
    pub fn block_checksum(&self) -> Option<[u8; 4]> {
        self.unchecked
    }

    /// Sends one message.
    pub fn write(&mut self, message: NetworkMessage) -> io::Result<()> {
        match &mut self.v2 {
            Some(session) => session.write(&mut self.writer, message),
            None => write_message(&mut self.writer, self.magic, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_starts_v2_with_a_peer_of_unknown_services_or_one_that_advertises_it() {
        let auto = TransportChoice::Auto;
        assert!(auto.starts_v2(None));
        assert!(auto.starts_v2(Some(ServiceFlags::NETWORK | ServiceFlags::P2P_V2)));
        assert!(!auto.starts_v2(Some(ServiceFlags::NETWORK | ServiceFlags::WITNESS)));
        assert!(TransportChoice::V2.starts_v2(Some(ServiceFlags::NONE)));
        assert!(!TransportChoice::V1.starts_v2(None));
        for c in [auto, TransportChoice::V2, TransportChoice::V1] {
            assert_eq!(TransportChoice::parse(&c.to_string()), Ok(c));
        }
        assert!(TransportChoice::parse("v3").unwrap_err().contains("auto"));
    }
}

#[cfg(test)]
mod wire_tests {
    //! [`open`] against stand-ins on a local socket: a v2 responder (the
    //! `bip324` crate's own, with garbage and decoys), a v1-only node that
    //! hangs up on a v2 key, and one that says nothing.
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::mpsc;

    use bip324::{InboundCipher, OutboundCipher, PacketType, Role};

    use super::*;
    use crate::source::bitcoin::p2p::v2::MAX_CONTENTS;

    const STALL: Duration = Duration::from_millis(500);

    fn open_to(addr: &str, choice: TransportChoice) -> Result<Opened, OpenError> {
        let addr: SocketAddr = addr.parse().unwrap();
        open(&addr, Magic::REGTEST, choice, None, STALL, STALL)
    }

    /// A listener whose every connection `serve` handles on its thread.
    fn stand_in(serve: impl Fn(TcpStream) + Send + 'static) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for s in listener.incoming().map_while(Result::ok) {
                serve(s);
            }
        });
        addr
    }

    /// The responder's handshake: 4095 bytes of garbage and two decoys first.
    fn respond(s: &TcpStream) -> (InboundCipher, OutboundCipher, impl Read) {
        let garbage = Some(vec![7u8; v2::MAX_GARBAGE]);
        let decoys = Some(vec![vec![1u8; 10], vec![]]);
        let reader = BufReader::new(s.try_clone().unwrap());
        let mut writer = s.try_clone().unwrap();
        bip324::io::handshake(
            Network::Regtest,
            Role::Responder,
            garbage,
            decoys,
            reader,
            &mut writer,
        )
        .unwrap()
    }

    fn packet(out: &mut OutboundCipher, m: NetworkMessage, kind: PacketType) -> Vec<u8> {
        out.encrypt_to_vec(&bip324::serde::serialize(m), kind, None)
    }

    #[test]
    fn a_v2_peer_with_garbage_and_decoys_is_spoken_to_in_v2_both_ways() {
        let (tx, rx) = mpsc::channel();
        let addr = stand_in(move |mut s| {
            let (mut inbound, mut out, mut r) = respond(&s);
            let decoy = packet(&mut out, NetworkMessage::Verack, PacketType::Decoy);
            let ping = packet(&mut out, NetworkMessage::Ping(5), PacketType::Genuine);
            s.write_all(&[decoy, ping].concat()).unwrap();
            let mut len = [0u8; 3];
            r.read_exact(&mut len).unwrap();
            let mut p = vec![0u8; inbound.decrypt_packet_len(len)];
            r.read_exact(&mut p).unwrap();
            let (_, plain) = inbound.decrypt_to_vec(&p, None).unwrap();
            tx.send(bip324::serde::deserialize(&plain[1..]).unwrap())
                .unwrap();
        });
        let mut t = open_to(&addr, TransportChoice::Auto).unwrap().transport;
        assert_eq!(t.kind(), TransportKind::V2);
        let deadline = Instant::now() + STALL;
        assert_eq!(t.read(deadline).unwrap(), NetworkMessage::Ping(5));
        t.write(NetworkMessage::Pong(5)).unwrap();
        assert_eq!(rx.recv().unwrap(), NetworkMessage::Pong(5));
    }

    #[test]
    fn a_packet_announced_above_the_cap_is_refused_from_its_length_alone() {
        let addr = stand_in(|mut s| {
            let (_, mut out, mut r) = respond(&s);
            let big = out.encrypt_to_vec(&vec![0u8; MAX_CONTENTS + 1], PacketType::Genuine, None);
            s.write_all(&big[..3]).unwrap();
            let _ = r.read(&mut [0u8; 1]);
        });
        let mut t = open_to(&addr, TransportChoice::V2).unwrap().transport;
        let err = t.read(Instant::now() + STALL).unwrap_err();
        assert_eq!(err.reason(), "oversized", "{err}");
    }

    /// A v1-only node: reads a header's worth, sees the wrong magic, hangs up.
    fn v1_only(mut s: TcpStream) {
        let mut header = [0u8; 24];
        if s.read_exact(&mut header).is_ok() && header[..4] == Magic::REGTEST.to_bytes() {
            let mut sink = [0u8; 1024];
            while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
        }
    }

    #[test]
    fn auto_speaks_v1_after_a_silent_hang_up_and_v2_only_says_why_it_does_not() {
        let addr = stand_in(v1_only);
        let opened = open_to(&addr, TransportChoice::Auto).unwrap();
        assert_eq!(opened.transport.kind(), TransportKind::V1);
        assert!(opened.fell_back.unwrap().contains("got no answer"));
        let err = open_to(&addr, TransportChoice::V2).err().unwrap();
        assert!(
            format!("{err:?}").contains("does not speak BIP324"),
            "{err:?}"
        );
        let v1 = open_to(&addr, TransportChoice::V1).unwrap();
        assert_eq!(
            (v1.transport.kind(), v1.fell_back),
            (TransportKind::V1, None)
        );
    }

    #[test]
    fn a_peer_that_says_nothing_costs_the_bound_not_more() {
        let addr = stand_in(|mut s| {
            let _ = s.read(&mut [0u8; 1]);
            std::thread::sleep(STALL * 4);
        });
        let started = Instant::now();
        let err = open_to(&addr, TransportChoice::V2).err().unwrap();
        assert!(format!("{err:?}").contains("does not speak"), "{err:?}");
        assert!(started.elapsed() < STALL * 3, "{:?}", started.elapsed());
    }
}
