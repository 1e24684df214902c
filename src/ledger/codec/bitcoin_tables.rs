//! The byte layouts of the Bitcoin tables: a stored header, an address book's
//! key (a peer's address) and entry.

use super::DecodeError;

/// A `bitcoin_headers` value: the 80-byte header as Bitcoin encodes it,
/// then the chainwork, 32 bytes big-endian.
pub fn encode_bitcoin_header(v: &crate::ledger::StoredHeader) -> [u8; 112] {
    let mut out = [0u8; 112];
    let header = bitcoin::consensus::serialize(&v.header);
    out[..80].copy_from_slice(&header);
    out[80..].copy_from_slice(&v.chainwork.to_be_bytes());
    out
}

/// The inverse of [`encode_bitcoin_header`]; the height is the key's.
pub fn decode_bitcoin_header(bytes: &[u8]) -> Result<crate::ledger::StoredHeader, DecodeError> {
    if bytes.len() != 112 {
        return Err(DecodeError::HeaderEntryLength(bytes.len()));
    }
    let header: bitcoin::block::Header =
        bitcoin::consensus::deserialize(&bytes[..80]).map_err(DecodeError::Header)?;
    let work = <[u8; 32]>::try_from(&bytes[80..]).unwrap_or_default();
    Ok(crate::ledger::StoredHeader {
        height: 0,
        header,
        chainwork: bitcoin::pow::Work::from_be_bytes(work),
    })
}

/// A peer's address as the `bitcoin_peers` key: its IP as 16 bytes (an
/// IPv4 address IPv4-mapped, `::ffff:a.b.c.d`), then its port (u16 BE).
pub fn encode_peer_addr(addr: &std::net::SocketAddr) -> [u8; 18] {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        std::net::IpAddr::V6(v6) => v6,
    };
    let mut out = [0u8; 18];
    out[..16].copy_from_slice(&ip.octets());
    out[16..].copy_from_slice(&addr.port().to_be_bytes());
    out
}

/// The inverse of [`encode_peer_addr`] (`None`: not 18 bytes).
pub fn decode_peer_addr(bytes: &[u8]) -> Option<std::net::SocketAddr> {
    let bytes: [u8; 18] = bytes.try_into().ok()?;
    let ip = <[u8; 16]>::try_from(&bytes[..16]).ok()?;
    // An IPv4-mapped address is the IPv4 address it maps.
    let ip = std::net::Ipv6Addr::from(ip).to_canonical();
    Some(std::net::SocketAddr::new(
        ip,
        u16::from_be_bytes([bytes[16], bytes[17]]),
    ))
}

/// An address book entry, 38 bytes: source (1), ban reason (1), failures
/// (u32 BE), then last success, last attempt and banned-until (Unix
/// seconds, u64 BE each; 0: never), then the services (u64 BE; layout 8:
/// 7's entries were the first 30 bytes, see `migrate.rs`).
pub fn encode_book_entry(v: &crate::ledger::BookEntry) -> [u8; BOOK_ENTRY_BYTES] {
    let mut out = [0u8; BOOK_ENTRY_BYTES];
    out[0] = v.source;
    out[1] = v.ban_reason;
    out[2..6].copy_from_slice(&v.failures.to_be_bytes());
    out[6..14].copy_from_slice(&v.last_success.to_be_bytes());
    out[14..22].copy_from_slice(&v.last_attempt.to_be_bytes());
    out[22..30].copy_from_slice(&v.banned_until.to_be_bytes());
    out[30..38].copy_from_slice(&v.services.to_be_bytes());
    out
}

/// The length of an address book entry.
pub const BOOK_ENTRY_BYTES: usize = 38;

/// The inverse of [`encode_book_entry`].
pub fn decode_book_entry(bytes: &[u8]) -> Result<crate::ledger::BookEntry, DecodeError> {
    let b: [u8; BOOK_ENTRY_BYTES] = bytes
        .try_into()
        .map_err(|_| DecodeError::BookEntryLength(bytes.len()))?;
    let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or_default());
    Ok(crate::ledger::BookEntry {
        source: b[0],
        ban_reason: b[1],
        failures: u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
        last_success: u64_at(6),
        last_attempt: u64_at(14),
        banned_until: u64_at(22),
        services: u64_at(30),
    })
}
