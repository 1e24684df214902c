//! Bitcoin's v1 P2P framing, read with a cap.
//!
//! A message is a 24-byte header (network magic, a 12-byte command, the
//! payload's length as a u32, the first four bytes of the payload's double
//! SHA-256) and then the payload. [`read_message_deferring`] reads the
//! header, refuses another network's magic and any length above
//! [`MAX_PAYLOAD`] (Bitcoin Core's own limit, 4,000,000 bytes) before it
//! allocates anything, then reads exactly the payload, checks its checksum and only then decodes it with the
//! `bitcoin` crate's codec. So a peer cannot make ledgerd allocate more than
//! the cap, and the stream never loses its place: either a whole message is
//! read or the connection is given up.
//!
//! Blocks, the bulk of what is read, are not decoded here: their payload is
//! handed on as it came, as `NetworkMessage::Unknown { command: "block" }`
//! ([`block_payload`]), for [`crate::source::bitcoin::block::parse_block`]
//! to walk over its bytes once, with no owned `bitcoin::Block` built.
//!
//! A block's checksum is not hashed as it is read ([`read_message_deferring`]
//! hands it on, unchecked): the block is then checked against the header it
//! was asked by, and that check covers every byte of it (the header by its
//! hash, each transaction's stripped bytes by the Merkle root, its witnesses
//! by the coinbase's witness commitment; the encoding is canonical, so no
//! other bytes pass). The checksum would be a fourth SHA-256 pass over the
//! block telling nothing more; it is hashed only when the block fails its
//! check ([`checksum_matches`]), to tell bytes damaged on the way (a bad
//! checksum: `malformed`, as before) from a block the peer made wrong
//! (`bad_block`). Bitcoin Core hashes it first; a block whose checksum is
//! wrong but whose every byte is the header's is used here, where Core would
//! drop the message and ask again.

use std::fmt;
use std::io::{self, Read, Write};

use bitcoin::consensus::encode::{self, Decodable};
use bitcoin::hashes::{sha256d, Hash as _};
use bitcoin::p2p::message::{CommandString, NetworkMessage, RawNetworkMessage};
use bitcoin::p2p::Magic;

/// The largest payload read: Bitcoin Core's `MAX_PROTOCOL_MESSAGE_LENGTH`.
pub const MAX_PAYLOAD: usize = 4_000_000;

/// The length of a message header.
pub const HEADER_LEN: usize = 24;

/// Why a message could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The connection failed, closed, or timed out (mid-message included).
    Io(io::Error),
    /// The header names another network.
    WrongMagic { got: [u8; 4] },
    /// The payload would be longer than [`MAX_PAYLOAD`].
    TooLarge { command: String, len: u32 },
    /// The payload does not hash to the header's checksum.
    Checksum { command: String },
    /// The payload does not decode as its command says.
    Malformed { command: String, reason: String },
}

impl FrameError {
    /// A `command` message of `len` bytes, above the cap.
    pub fn too_large(command: impl Into<String>, len: usize) -> FrameError {
        let command = command.into();
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        FrameError::TooLarge { command, len }
    }

    /// A `command` message that does not decode, and why.
    pub fn malformed(command: impl Into<String>, reason: impl ToString) -> FrameError {
        let (command, reason) = (command.into(), reason.to_string());
        FrameError::Malformed { command, reason }
    }

    /// The `/metrics` reason a peer is dropped for, when this is the peer's fault.
    pub fn reason(&self) -> &'static str {
        match self {
            FrameError::Io(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                "stalled"
            }
            FrameError::Io(_) => "connection",
            FrameError::WrongMagic { .. } => "wrong_network",
            FrameError::TooLarge { .. } => "oversized",
            FrameError::Checksum { .. } | FrameError::Malformed { .. } => "malformed",
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "the connection failed: {e}"),
            FrameError::WrongMagic { got } => write!(
                f,
                "it speaks another Bitcoin network (magic {})",
                hex::encode(got)
            ),
            FrameError::TooLarge { command, len } => write!(
                f,
                "it announced a {command:?} message of {len} bytes, above the {MAX_PAYLOAD}-byte cap"
            ),
            FrameError::Checksum { command } => {
                write!(f, "its {command:?} message does not match its checksum")
            }
            FrameError::Malformed { command, reason } => {
                write!(f, "its {command:?} message does not decode: {reason}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

wrap_errors!(FrameError {
    Io(io::Error),
});

/// A command's name from its 12 bytes (up to 12 ASCII bytes, NUL-padded),
/// as a v1 header and a v2 packet spell it out.
pub fn command_name(raw: &[u8]) -> String {
    let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

/// Whether `payload` hashes to the checksum `sum` (the first four bytes of
/// its double SHA-256).
pub fn checksum_matches(payload: &[u8], sum: [u8; 4]) -> bool {
    sha256d::Hash::hash(payload).as_byte_array()[..4] == sum
}

/// Reads one whole message of network `magic` (module docs); a block's
/// payload is handed on with its checksum not hashed yet: `Some(checksum)`
/// with a block, `None` with every other message (checked here).
pub fn read_message_deferring(
    r: &mut impl Read,
    magic: Magic,
) -> Result<(NetworkMessage, Option<[u8; 4]>), FrameError> {
    let mut header = [0u8; HEADER_LEN];
    r.read_exact(&mut header)?;
    if header[..4] != magic.to_bytes() {
        return Err(FrameError::WrongMagic {
            got: [header[0], header[1], header[2], header[3]],
        });
    }
    let command = command_name(&header[4..16]);
    let len = u32::from_le_bytes([header[16], header[17], header[18], header[19]]);
    if len as usize > MAX_PAYLOAD {
        return Err(FrameError::TooLarge { command, len });
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload)?;
    let sum = [header[20], header[21], header[22], header[23]];
    if command == "block" {
        // The hot path: the payload itself, neither copied, decoded nor
        // hashed here (module docs).
        return Ok((block_message(payload)?, Some(sum)));
    }
    if !checksum_matches(&payload, sum) {
        return Err(FrameError::Checksum { command });
    }
    let malformed = |e: encode::Error| FrameError::malformed(&command, e);
    let mut whole = (&header[..]).chain(&payload[..]);
    let raw =
        RawNetworkMessage::consensus_decode_from_finite_reader(&mut whole).map_err(malformed)?;
    Ok((raw.into_payload(), None))
}

/// A block's payload as the message handed on (module docs), for either
/// transport.
pub fn block_message(payload: Vec<u8>) -> Result<NetworkMessage, FrameError> {
    let command =
        CommandString::try_from_static("block").map_err(|e| FrameError::malformed("block", e))?;
    Ok(NetworkMessage::Unknown { command, payload })
}

/// A block's payload, when `message` is one (module docs).
pub fn block_payload(message: NetworkMessage) -> Result<Vec<u8>, Box<NetworkMessage>> {
    match message {
        NetworkMessage::Unknown { command, payload } if command.as_ref() == "block" => Ok(payload),
        other => Err(Box::new(other)),
    }
}

/// Writes one message of network `magic`.
pub fn write_message(w: &mut impl Write, magic: Magic, message: NetworkMessage) -> io::Result<()> {
    let bytes = bitcoin::consensus::serialize(&RawNetworkMessage::new(magic, message));
    w.write_all(&bytes)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitcoin::consensus::serialize;

    fn framed(message: NetworkMessage) -> Vec<u8> {
        serialize(&RawNetworkMessage::new(Magic::REGTEST, message))
    }

    /// The first message of `wire`, read as regtest's.
    fn read(mut wire: &[u8]) -> Result<NetworkMessage, FrameError> {
        read_message_deferring(&mut wire, Magic::REGTEST).map(|(message, _)| message)
    }

    /// [`read_message_deferring`] of `wire` as regtest's: the block's payload
    /// and checksum.
    fn deferred(mut wire: &[u8]) -> (Vec<u8>, [u8; 4]) {
        let (got, sum) = read_message_deferring(&mut wire, Magic::REGTEST).unwrap();
        (block_payload(got).unwrap(), sum.unwrap())
    }

    #[test]
    fn a_written_message_reads_back_whole() {
        let mut wire = Vec::new();
        write_message(&mut wire, Magic::REGTEST, NetworkMessage::Ping(7)).unwrap();
        write_message(&mut wire, Magic::REGTEST, NetworkMessage::Verack).unwrap();
        let mut r = &wire[..];
        let mut next = || read_message_deferring(&mut r, Magic::REGTEST).unwrap().0;
        assert_eq!(next(), NetworkMessage::Ping(7));
        assert_eq!(next(), NetworkMessage::Verack);
        assert!(r.is_empty());
    }

    #[test]
    fn a_block_is_handed_on_as_its_payload() {
        let genesis = bitcoin::blockdata::constants::genesis_block(bitcoin::Network::Regtest);
        let wire = framed(NetworkMessage::Block(genesis.clone()));
        let got = read(&wire).unwrap();
        assert_eq!(block_payload(got).unwrap(), serialize(&genesis));
    }

    #[test]
    fn a_length_above_the_cap_is_refused_before_anything_is_read() {
        let mut wire = framed(NetworkMessage::Ping(1));
        wire[16..20].copy_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
        // No payload follows: the error must come from the header alone.
        wire.truncate(HEADER_LEN);
        let err = read(&wire).unwrap_err();
        assert!(
            matches!(err, FrameError::TooLarge { len, .. } if len == 4_000_001),
            "{err}"
        );
        assert_eq!(err.reason(), "oversized");
    }

    #[test]
    fn another_networks_magic_is_refused() {
        let mut wire = framed(NetworkMessage::Verack);
        wire[..4].copy_from_slice(&Magic::BITCOIN.to_bytes());
        let err = read(&wire).unwrap_err();
        assert_eq!(err.reason(), "wrong_network", "{err}");
    }

    #[test]
    fn a_bad_checksum_or_a_payload_that_does_not_decode_is_malformed() {
        let mut wire = framed(NetworkMessage::Ping(1));
        wire[HEADER_LEN] ^= 1;
        let err = read(&wire).unwrap_err();
        assert!(matches!(err, FrameError::Checksum { .. }), "{err}");

        // A ping whose payload is 3 bytes (it takes 8), with a right checksum.
        let payload = [1u8, 2, 3];
        let mut wire = framed(NetworkMessage::Ping(1));
        wire.truncate(HEADER_LEN);
        wire[16..20].copy_from_slice(&3u32.to_le_bytes());
        wire[20..24].copy_from_slice(&sha256d::Hash::hash(&payload).as_byte_array()[..4]);
        wire.extend_from_slice(&payload);
        let err = read(&wire).unwrap_err();
        assert!(matches!(err, FrameError::Malformed { .. }), "{err}");
        assert_eq!(err.reason(), "malformed");
    }

    #[test]
    fn a_blocks_checksum_is_handed_on_unchecked_and_every_other_checked_as_read() {
        let genesis = bitcoin::blockdata::constants::genesis_block(bitcoin::Network::Regtest);
        let mut wire = framed(NetworkMessage::Block(genesis.clone()));
        let (payload, sum) = deferred(&wire);
        assert!(checksum_matches(&payload, sum));
        wire[HEADER_LEN + 100] ^= 1;
        let (payload, sum) = deferred(&wire);
        assert!(!checksum_matches(&payload, sum));
        let damaged = read(&wire).unwrap();
        assert!(
            matches!(damaged, NetworkMessage::Unknown { .. }),
            "{damaged:?}"
        );
        // Every other message is checked as it is read.
        let mut wire = framed(NetworkMessage::Ping(1));
        wire[HEADER_LEN] ^= 1;
        let err = read(&wire).unwrap_err();
        assert!(matches!(err, FrameError::Checksum { .. }), "{err}");
    }

    #[test]
    fn a_message_cut_short_is_an_io_error() {
        let wire = framed(NetworkMessage::Ping(1));
        let err = read(&wire[..wire.len() - 1]).unwrap_err();
        assert!(matches!(err, FrameError::Io(_)), "{err}");
    }
}
