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

use crate::source::bitcoin::p2p::message::{read_message, write_message, FrameError};
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
    pub const ALL: [TransportKind; 2] = [TransportKind::V1, TransportKind::V2];

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

impl TimedStream {
    fn new(stream: TcpStream) -> TimedStream {
        TimedStream {
            stream,
            deadline: None,
            received: 0,
        }
    }
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
    /// The v2 handshake failed; `answered`: the peer had sent something.
    V2 {
        error: HandshakeError,
        answered: bool,
        choice: TransportChoice,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Connect(e) => write!(f, "it cannot be connected to: {e}"),
            OpenError::V2 {
                error: HandshakeError::AnsweredV1,
                choice: TransportChoice::V2,
                ..
            }
            | OpenError::V2 {
                answered: false,
                choice: TransportChoice::V2,
                ..
            } => write!(
                f,
                "it does not speak BIP324's v2 transport (the v2 handshake got no answer: \
                 {}): it speaks only v1 (Bitcoin Core before 26, or started with \
                 -v2transport=0); --bitcoin-transport v2 connects to v2 peers only: give auto \
                 to speak v1 with it",
                self.detail()
            ),
            OpenError::V2 { .. } => write!(
                f,
                "its answer to the v2 (BIP324) handshake is not BIP324: {}; a v1 node would \
                 have hung up without a word, so it is not tried over v1 (--bitcoin-transport \
                 v1 would speak only v1 with every peer)",
                self.detail()
            ),
        }
    }
}

impl OpenError {
    fn detail(&self) -> String {
        match self {
            OpenError::Connect(e) => e.to_string(),
            OpenError::V2 { error, .. } => error.to_string(),
        }
    }
}

impl std::error::Error for OpenError {}

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
        Ok((
            BufReader::with_capacity(64 * 1024, TimedStream::new(stream)),
            writer,
        ))
    };
    let v1 = |(reader, writer)| Transport {
        reader,
        writer,
        magic,
        v2: None,
    };
    if !choice.starts_v2(services) {
        let parts = connect().map_err(OpenError::Connect)?;
        return Ok(Opened {
            transport: v1(parts),
            fell_back: None,
        });
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
                transport: Transport {
                    reader,
                    writer,
                    magic,
                    v2: Some(session),
                },
                fell_back: None,
            })
        }
        Err(e) => e,
    };
    let answered = reader.get_ref().received > 0;
    let silent_hang_up = !answered && error.is_io();
    let retry_v1 = choice == TransportChoice::Auto
        && (silent_hang_up || matches!(error, HandshakeError::AnsweredV1));
    if !retry_v1 {
        return Err(OpenError::V2 {
            error,
            answered,
            choice,
        });
    }
    drop((reader, writer));
    let why = format!("the v2 (BIP324) handshake got no answer ({error})");
    let parts = connect().map_err(OpenError::Connect)?;
    Ok(Opened {
        transport: v1(parts),
        fell_back: Some(why),
    })
}

impl Transport {
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
        match &mut self.v2 {
            Some(session) => session.read(&mut self.reader),
            None => read_message(&mut self.reader, self.magic),
        }
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
        for c in [TransportChoice::Auto, TransportChoice::V2, TransportChoice::V1] {
            assert_eq!(TransportChoice::parse(&c.to_string()), Ok(c));
        }
        assert!(TransportChoice::parse("v3").unwrap_err().contains("auto"));
    }
}
