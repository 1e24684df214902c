//! BIP324's v2 transport, the initiator's side: the handshake, then every
//! message an encrypted packet.
//!
//! The `bip324` crate (rust-bitcoin's) holds the cryptography and the
//! handshake's state machine, without I/O: ElligatorSwift keys, the shared
//! secret, the garbage terminators, the packet ciphers (ChaCha20-Poly1305,
//! rekeyed as the BIP says), and the v2 short message IDs over the
//! `bitcoin` crate's `NetworkMessage`. This file does the blocking reads and
//! writes around it, with ledgerd's own bounds: the caller's reader gives up
//! at its deadline, and no packet is allocated before its length, decrypted
//! from its first three bytes, is checked against the 4,000,000-byte cap
//! ([`MAX_PAYLOAD`], as for v1; Core's `MAX_CONTENTS_LEN` is the same cap
//! plus a message type of at most 13 bytes).
//!
//! As BIP324 says:
//! - ledgerd sends its key followed by random garbage (0-4095 bytes), then
//!   its garbage terminator and an empty version packet; no decoys;
//! - the peer's garbage (at most 4095 bytes) is skipped up to its
//!   terminator: none found within that is the end of the handshake;
//! - packets whose header has the ignore bit (0x80) set are decoys, skipped
//!   wherever they come, in the handshake as after it;
//! - a packet that does not authenticate ends the connection: the stream
//!   cannot be read in step after it.

use std::fmt;
use std::io::{self, BufRead, Read, Write};

use bip324::{
    GarbageResult, Handshake, InboundCipher, Initialized, OutboundCipher, PacketType, ReceivedKey,
    Role, VersionResult,
};
use bitcoin::p2p::message::NetworkMessage;
use bitcoin::Network;
use rand::Rng as _;

use crate::source::bitcoin::p2p::message::{block_message, command_name, FrameError, MAX_PAYLOAD};

/// The most garbage either side may send before its terminator (BIP324).
pub const MAX_GARBAGE: usize = 4095;

/// An ElligatorSwift public key's length on the wire.
const KEY_LEN: usize = 64;

/// A garbage terminator's length.
const TERMINATOR_LEN: usize = 16;

/// A packet's encrypted length prefix.
const LENGTH_LEN: usize = 3;

/// The header byte and the authentication tag around a packet's contents.
const OVERHEAD: usize = 1 + 16;

/// The longest contents read: a message type (one byte, or a zero and a
/// 12-byte command) and a payload up to the cap.
pub const MAX_CONTENTS: usize = 1 + 12 + MAX_PAYLOAD;

/// The header bit that marks a decoy packet, to be ignored.
const IGNORE_BIT: u8 = 0x80;

/// Why a v2 handshake did not complete.
#[derive(Debug)]
pub enum HandshakeError {
    /// The connection failed, closed, or the deadline passed.
    Io(io::Error),
    /// The peer's first bytes are the network's magic: it answered in v1.
    AnsweredV1,
    /// The peer sent 4095 bytes of garbage with no terminator.
    NoTerminator,
    /// A packet of the handshake announced contents above [`MAX_CONTENTS`].
    TooLarge(usize),
    /// The crate refused what the peer sent (a packet that does not
    /// authenticate, a key that is not a curve point's encoding).
    Refused(bip324::Error),
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Io(e) => write!(f, "{e}"),
            HandshakeError::AnsweredV1 => f.write_str("it answered in v1"),
            HandshakeError::NoTerminator => write!(
                f,
                "it sent {MAX_GARBAGE} bytes of garbage without the garbage terminator its key \
                 gives"
            ),
            HandshakeError::TooLarge(len) => write!(
                f,
                "it announced a handshake packet of {len} bytes, above the {MAX_CONTENTS}-byte cap"
            ),
            HandshakeError::Refused(bip324::Error::Decryption(_)) => {
                f.write_str("its version packet does not authenticate (not BIP324's ciphers)")
            }
            HandshakeError::Refused(e) => write!(f, "BIP324 refuses what it sent: {e}"),
        }
    }
}

impl std::error::Error for HandshakeError {}

wrap_errors!(HandshakeError {
    Io(io::Error),
});

impl From<bip324::Error> for HandshakeError {
    fn from(e: bip324::Error) -> Self {
        match e {
            bip324::Error::V1Protocol => HandshakeError::AnsweredV1,
            bip324::Error::NoGarbageTerminator => HandshakeError::NoTerminator,
            other => HandshakeError::Refused(other),
        }
    }
}

/// An established v2 session: the two packet ciphers.
pub struct Session {
    inbound: InboundCipher,
    outbound: OutboundCipher,
}

/// Does the initiator's handshake on `network` over `reader` and `writer`
/// (module docs). Every read is bounded by the reader itself.
pub fn handshake(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
    network: Network,
) -> Result<Session, HandshakeError> {
    let ours = Handshake::<Initialized>::new(network, Role::Initiator)?;
    let mut rng = rand::thread_rng();
    let mut garbage = vec![0u8; rng.gen_range(0..=MAX_GARBAGE)];
    rng.fill(&mut garbage[..]);
    let mut key = vec![0u8; Handshake::<Initialized>::send_key_len(Some(&garbage))];
    let ours = ours.send_key(Some(&garbage), &mut key)?;
    writer.write_all(&key)?;
    writer.flush()?;

    let mut theirs = [0u8; KEY_LEN];
    reader.read_exact(&mut theirs)?;
    let ours = ours.receive_key(theirs)?;
    let mut version = vec![0u8; Handshake::<ReceivedKey>::send_version_len(None)];
    let ours = ours.send_version(&mut version, None)?;
    writer.write_all(&version)?;
    writer.flush()?;

    // Their garbage, then their terminator: read a byte at a time (from the
    // buffer), so nothing past the terminator is taken out of the reader.
    let mut their_garbage = vec![0u8; TERMINATOR_LEN];
    reader.read_exact(&mut their_garbage)?;
    let mut ours = ours;
    let (mut ours, consumed) = loop {
        match ours.receive_garbage(&their_garbage)? {
            GarbageResult::FoundGarbage {
                handshake,
                consumed_bytes,
            } => break (handshake, consumed_bytes),
            GarbageResult::NeedMoreData(waiting) => {
                ours = waiting;
                let mut byte = [0u8; 1];
                reader.read_exact(&mut byte)?;
                their_garbage.push(byte[0]);
            }
        }
    };
    if consumed != their_garbage.len() {
        // Read a byte at a time, the terminator ends the buffer.
        return Err(HandshakeError::NoTerminator);
    }
    // Decoys, then their version packet (its contents are ignored: reserved
    // for later versions).
    loop {
        let mut length = [0u8; LENGTH_LEN];
        reader.read_exact(&mut length)?;
        let len = ours.decrypt_packet_len(length)?;
        if len - OVERHEAD > MAX_CONTENTS {
            return Err(HandshakeError::TooLarge(len - OVERHEAD));
        }
        let mut packet = vec![0u8; len];
        reader.read_exact(&mut packet)?;
        match ours.receive_version(&mut packet)? {
            VersionResult::Complete { cipher } => {
                let (inbound, outbound) = cipher.into_split();
                return Ok(Session { inbound, outbound });
            }
            VersionResult::Decoy(next) => ours = next,
        }
    }
}

impl Session {
    /// Reads the next message, skipping decoys (module docs).
    pub fn read(&mut self, reader: &mut impl Read) -> Result<NetworkMessage, FrameError> {
        loop {
            let mut length = [0u8; LENGTH_LEN];
            reader.read_exact(&mut length)?;
            let len = self.inbound.decrypt_packet_len(length);
            let contents_len = len - OVERHEAD;
            if contents_len > MAX_CONTENTS {
                return Err(FrameError::too_large("(encrypted)", contents_len));
            }
            let mut packet = vec![0u8; len];
            reader.read_exact(&mut packet)?;
            let (_, plain) = self
                .inbound
                .decrypt_in_place(&mut packet, None)
                .map_err(|e| {
                    let why = format!("the packet does not authenticate ({e})");
                    FrameError::malformed("(encrypted)", why)
                })?;
            let (header, contents) = plain
                .split_first()
                .ok_or_else(|| FrameError::malformed("(encrypted)", "an empty packet"))?;
            if header & IGNORE_BIT != 0 {
                continue;
            }
            let Some(at) = block_at(contents) else {
                return decode(contents);
            };
            // A block: its payload moved to the front of the packet's own
            // buffer and handed on, not copied into a new one.
            let (from, to) = (1 + at, plain.len());
            if to - from > MAX_PAYLOAD {
                return Err(FrameError::too_large("block", to - from));
            }
            packet.copy_within(from..to, 0);
            packet.truncate(to - from);
            return block_message(packet);
        }
    }

    /// Writes one message as one packet.
    pub fn write(&mut self, writer: &mut impl Write, message: NetworkMessage) -> io::Result<()> {
        let contents = bip324::serde::serialize(message);
        let packet = self
            .outbound
            .encrypt_to_vec(&contents, PacketType::Genuine, None);
        writer.write_all(&packet)?;
        writer.flush()
    }
}

/// Where a block's payload starts in a genuine packet's contents, when they
/// are a block (BIP324's short ID 2, or the command spelled out): handed on
/// as its payload, as over v1 (`message.rs`), walked once, never decoded
/// into an owned block.
fn block_at(contents: &[u8]) -> Option<usize> {
    match contents {
        [2, ..] => Some(1),
        [0, command @ ..] if command.len() >= 12 && command[..12] == *b"block\0\0\0\0\0\0\0" => {
            Some(13)
        }
        _ => None,
    }
}

/// A genuine packet's contents as a message, when they are not a block
/// ([`Session::read`] hands those on): a short message ID, or a zero and a
/// 12-byte command, then the payload (at most [`MAX_PAYLOAD`]).
fn decode(contents: &[u8]) -> Result<NetworkMessage, FrameError> {
    let (command, payload_len) = match contents {
        [0, rest @ ..] if rest.len() >= 12 => (command_name(&rest[..12]), rest.len() - 12),
        [id, rest @ ..] if *id != 0 => (format!("short ID {id}"), rest.len()),
        _ => {
            let command = match contents {
                [] => "(none)",
                _ => "(cut short)",
            };
            let why = "the packet is too short for its message type";
            return Err(FrameError::malformed(command, why));
        }
    };
    if payload_len > MAX_PAYLOAD {
        return Err(FrameError::too_large(command, payload_len));
    }
    bip324::serde::deserialize(contents).map_err(|e| FrameError::malformed(command, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_decode_by_short_id_or_command_and_short_ones_are_malformed_not_a_panic() {
        let ping = bip324::serde::serialize(NetworkMessage::Ping(9));
        assert_eq!(ping[0], 18, "ping's short ID");
        assert_eq!(decode(&ping).unwrap(), NetworkMessage::Ping(9));
        let verack = bip324::serde::serialize(NetworkMessage::Verack);
        assert_eq!(verack.len(), 13);
        assert_eq!(decode(&verack).unwrap(), NetworkMessage::Verack);
        for short in [&[][..], &[0u8][..], &[0u8, b'v', b'e'][..]] {
            let err = decode(short).unwrap_err();
            assert_eq!(err.reason(), "malformed", "{err}");
        }
        let err = decode(&[200u8, 1, 2]).unwrap_err();
        assert_eq!(err.reason(), "malformed", "{err}");
    }

    #[test]
    fn a_payload_above_the_cap_is_refused() {
        let mut contents = vec![2u8];
        contents.resize(1 + MAX_PAYLOAD + 1, 0);
        let err = decode(&contents).unwrap_err();
        assert_eq!(err.reason(), "oversized", "{err}");
    }
}
