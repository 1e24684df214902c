//! The ledger's tables: their LMDB names, their key codecs and their value
//! codecs.
//!
//! One small type per table (in the style of heed's typed databases). Each
//! says its name, which [`Database`] handle it uses, how a key becomes bytes,
//! how to name a key in an error message (`Table`) and what its values are
//! (`ValueTable`; the byte layouts themselves are in [`super::codec`]).
//! Every `meta` entry is a typed `MetaKey`: its name and the type of its
//! value. Reads and writes name the table or the key, never a decoder.
//!
//! Numeric keys (heights, DA slot numbers) are u64 big-endian, so LMDB's byte
//! order is numeric order: the last key of `soft_confirmations` is the head.
//!
//! The block hash index, `sc_by_hash_prefix`, is keyed by the first
//! `HASH_PREFIX_LEN` bytes of the hash, not all 32: the rest of the hash is
//! in the block the entry points to, so storing it again would only make the
//! index twice as big (random 32-byte keys left its pages ~67% full at
//! ~75 B/block). Two hashes that share a prefix (anyone can make such a pair
//! with ~2^32 work) are both kept, as sorted duplicates of one key; a lookup
//! checks each candidate's full hash.

use std::marker::PhantomData;

use lmdb::{Database, DatabaseFlags};

use super::codec::{self, DecodeError};
use crate::chain_rules::ForkTable;
use crate::types::{Hash, SequencerCommitment, Status, VerifiedBatchProof};

/// The database handles of one environment, opened once at `Ledger::open`,
/// each at its table's [`Table::INDEX`] (opaque outside the ledger).
#[derive(Clone, Copy, Debug)]
pub struct Dbs(pub(crate) [Database; ALL.len()]);

impl Dbs {
    /// Every table's name and handle, in the order of [`ALL`].
    pub(crate) fn named(&self) -> [(&'static str, Database); ALL.len()] {
        std::array::from_fn(|i| (ALL[i].0, self.0[i]))
    }
}

/// Every table's name and flags, in the order `Ledger::open` opens them.
pub(crate) const ALL: [(&str, DatabaseFlags); 11] = [
    (SoftConfirmations::NAME, SoftConfirmations::FLAGS),
    (ScByHashPrefix::NAME, ScByHashPrefix::FLAGS),
    (StatusTable::NAME, StatusTable::FLAGS),
    (Commitments::NAME, Commitments::FLAGS),
    (DaSlots::NAME, DaSlots::FLAGS),
    (Proofs::NAME, Proofs::FLAGS),
    (Meta::NAME, Meta::FLAGS),
    (BitcoinHeaders::NAME, BitcoinHeaders::FLAGS),
    (BitcoinChunks::NAME, BitcoinChunks::FLAGS),
    (StatusHeights::NAME, StatusHeights::FLAGS),
    (BitcoinPeers::NAME, BitcoinPeers::FLAGS),
];

/// Where the table `name` is in [`ALL`] (a build error for a table not in it).
const fn index_of(name: &str) -> usize {
    let mut i = 0;
    while !same(ALL[i].0.as_bytes(), name.as_bytes()) {
        i += 1;
    }
    i
}

/// `a == b`, at compile time.
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() && a[i] == b[i] {
        i += 1;
    }
    i == a.len()
}

/// A typed table: its name, its handle and its key codec.
pub(crate) trait Table {
    /// The LMDB database name.
    const NAME: &'static str;
    /// The LMDB flags the table is created with.
    const FLAGS: DatabaseFlags = DatabaseFlags::empty();
    /// Where the table is in [`ALL`] and [`Dbs`].
    const INDEX: usize = index_of(Self::NAME);
    /// What the key is, in Rust.
    type Key: ?Sized;
    /// The encoded key (stack-allocated for fixed-size keys).
    type KeyBytes: AsRef<[u8]>;
    /// The handle of this table.
    fn db(dbs: &Dbs) -> Database {
        dbs.0[Self::INDEX]
    }
    /// The key as stored.
    fn key(key: &Self::Key) -> Self::KeyBytes;
    /// The key as an error message shows it.
    fn show(key: &Self::Key) -> String;
}

/// A table whose values decode on their own: every table but
/// `soft_confirmations`, whose values may omit the block's pubKey (the
/// block key in `meta`; see `codec::decode_soft_confirmation`).
pub(crate) trait ValueTable: Table {
    /// What a value is, in Rust.
    type Value;
    /// The value as stored.
    fn encode(value: &Self::Value) -> Vec<u8>;
    /// The value from its stored bytes.
    fn decode(bytes: &[u8]) -> Result<Self::Value, DecodeError>;
}

macro_rules! values {
    ($table:ty, $value:ty, $encode:expr, $decode:expr) => {
        impl ValueTable for $table {
            type Value = $value;
            fn encode(value: &$value) -> Vec<u8> {
                let encode: fn(&$value) -> _ = $encode;
                encode(value).to_vec()
            }
            fn decode(bytes: &[u8]) -> Result<$value, DecodeError> {
                $decode(bytes)
            }
        }
    };
}

/// Decodes a u64 big-endian key (as stored in the u64-keyed tables).
pub(crate) fn decode_u64_key(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

/// A key type's codec, for the tables keyed by it: u64s big-endian (so
/// LMDB's byte order is numeric order), hashes as they are.
pub(crate) trait KeyCodec: Sized {
    /// The stored key, of a fixed size.
    type Bytes: AsRef<[u8]>;
    fn bytes(&self) -> Self::Bytes;
    fn show(&self) -> String;
    /// The key from its stored bytes (`None`: not a key of this type).
    fn from_bytes(bytes: &[u8]) -> Option<Self>;
}

impl KeyCodec for u64 {
    type Bytes = [u8; 8];
    fn bytes(&self) -> [u8; 8] {
        self.to_be_bytes()
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn from_bytes(bytes: &[u8]) -> Option<u64> {
        decode_u64_key(bytes)
    }
}

impl KeyCodec for Hash {
    type Bytes = Hash;
    fn bytes(&self) -> Hash {
        *self
    }
    fn show(&self) -> String {
        hex::encode(self)
    }
    fn from_bytes(bytes: &[u8]) -> Option<Hash> {
        bytes.try_into().ok()
    }
}

/// A peer's address: its IP (16 bytes, an IPv4 address IPv4-mapped) and
/// port (u16 BE), see [`codec::encode_peer_addr`].
impl KeyCodec for std::net::SocketAddr {
    type Bytes = [u8; 18];
    fn bytes(&self) -> [u8; 18] {
        codec::encode_peer_addr(self)
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        codec::decode_peer_addr(bytes)
    }
}

/// A frontier entry's key: one byte (1 committed, 2 proven) then the DA
/// slot as u64 BE, so one frontier's entries are in slot order.
impl KeyCodec for (Frontier, u64) {
    type Bytes = [u8; 9];
    fn bytes(&self) -> [u8; 9] {
        let mut k = [0u8; 9];
        k[0] = self.0.byte();
        k[1..].copy_from_slice(&self.1.to_be_bytes());
        k
    }
    fn show(&self) -> String {
        format!("{} at L1 height {}", self.0.name(), self.1)
    }
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (&first, slot) = bytes.split_first()?;
        let which = [Frontier::Committed, Frontier::Proven]
            .into_iter()
            .find(|f| f.byte() == first)?;
        Some((which, decode_u64_key(slot)?))
    }
}

/// A table keyed by a [`KeyCodec`] type (and, given a value type with its
/// codec, its [`ValueTable`] impl, as `values!` writes it).
macro_rules! table {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $key:ty, $($value:tt)+) => {
        table!($(#[$doc])* $ty, $name, $key);
        values!($ty, $($value)+);
    };
    ($(#[$doc:meta])* $ty:ident, $name:literal, $key:ty) => {
        $(#[$doc])*
        pub(crate) struct $ty;
        impl Table for $ty {
            const NAME: &'static str = $name;
            type Key = $key;
            type KeyBytes = <$key as KeyCodec>::Bytes;
            fn key(key: &$key) -> Self::KeyBytes {
                key.bytes()
            }
            fn show(key: &$key) -> String {
                KeyCodec::show(key)
            }
        }
    };
}

table!(
    /// `soft_confirmations`: L2 height -> encoded soft confirmation.
    SoftConfirmations,
    "soft_confirmations",
    u64
);

/// How many leading bytes of a block hash key `sc_by_hash_prefix`.
pub(crate) const HASH_PREFIX_LEN: usize = 8;

/// `sc_by_hash_prefix`: the first [`HASH_PREFIX_LEN`] bytes of a
/// soft-confirmation hash -> L2 height (u64 BE), sorted duplicates of fixed
/// size (`DUP_SORT | DUP_FIXED`): every height whose block hash starts with
/// the prefix. Only candidates: the block at the height has the full hash.
pub(crate) struct ScByHashPrefix;

impl Table for ScByHashPrefix {
    const NAME: &'static str = "sc_by_hash_prefix";
    const FLAGS: DatabaseFlags = DatabaseFlags::DUP_SORT.union(DatabaseFlags::DUP_FIXED);
    type Key = Hash;
    type KeyBytes = [u8; HASH_PREFIX_LEN];
    fn key(key: &Hash) -> [u8; HASH_PREFIX_LEN] {
        let mut prefix = [0u8; HASH_PREFIX_LEN];
        prefix.copy_from_slice(&key[..HASH_PREFIX_LEN]);
        prefix
    }
    fn show(key: &Hash) -> String {
        hex::encode(key)
    }
}
table!(
    /// `status`: L2 height -> one status byte.
    StatusTable,
    "status",
    u64,
    Status,
    |v| codec::encode_status(*v),
    codec::decode_status
);
table!(
    /// `commitments`: DA slot number -> encoded list of the commitments found on it.
    Commitments,
    "commitments",
    u64,
    Vec<SequencerCommitment>,
    |v| codec::encode_commitments(v),
    codec::decode_commitments
);
table!(
    /// `da_slots`: DA slot hash -> slot number (u64 BE).
    DaSlots,
    "da_slots",
    Hash,
    u64,
    |v| codec::encode_u64(*v),
    codec::decode_u64
);
table!(
    /// `proofs`: DA slot number -> encoded list of every batch proof verified
    /// on it, in the order they were verified.
    Proofs,
    "proofs",
    u64,
    Vec<VerifiedBatchProof>,
    |v| codec::encode_proofs(v),
    codec::decode_proofs
);

table!(
    /// `bitcoin_headers`: Bitcoin height -> the best chain's header there
    /// (80 bytes) and the chain's total work up to it (32 bytes, big-endian).
    BitcoinHeaders,
    "bitcoin_headers",
    u64,
    super::StoredHeader,
    |v| codec::encode_bitcoin_header(v),
    codec::decode_bitcoin_header
);

table!(
    /// `bitcoin_chunks`: a proof chunk's txid (raw byte order) -> the Bitcoin
    /// height it was found at (u64 BE) and the raw transaction, kept after the
    /// aggregate that names it is applied (a rollback may need it again).
    BitcoinChunks,
    "bitcoin_chunks",
    Hash,
    (u64, Vec<u8>),
    |v| {
        let mut out = Vec::with_capacity(8 + v.1.len());
        out.extend_from_slice(&v.0.to_be_bytes());
        out.extend_from_slice(&v.1);
        out
    },
    |bytes: &[u8]| {
        if bytes.len() < 8 {
            return Err(DecodeError::ChunkEntryLength(bytes.len()));
        }
        let height = decode_u64_key(&bytes[..8]).unwrap_or_default();
        Ok((height, bytes[8..].to_vec()))
    }
);

table!(
    /// `bitcoin_peers`: the address book of Bitcoin peers: the peer's IP (16
    /// bytes, an IPv4 address IPv4-mapped) and port (u16 BE) -> where it came
    /// from, its failures, last success, last attempt, ban and services
    /// ([`codec::encode_book_entry`], 38 bytes).
    BitcoinPeers,
    "bitcoin_peers",
    std::net::SocketAddr,
    super::BookEntry,
    |v| codec::encode_book_entry(v),
    codec::decode_book_entry
);

/// Which frontier: the committed one (heights Finalized or Proven) or the
/// proven one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frontier {
    Committed,
    Proven,
}

impl Frontier {
    /// The key's first byte (the status byte of `Status::Finalized` and
    /// `Status::Proven`).
    pub(crate) fn byte(self) -> u8 {
        match self {
            Frontier::Committed => 1,
            Frontier::Proven => 2,
        }
    }

    /// The name metrics and `/health` use: `finalized` or `proven`.
    pub fn name(self) -> &'static str {
        match self {
            Frontier::Committed => "finalized",
            Frontier::Proven => "proven",
        }
    }
}

table!(
    /// `status_heights`: (frontier, DA slot number) -> where the frontier stood
    /// once that slot was applied (see `frontier.rs`): key one byte (1
    /// committed, 2 proven) then the slot as u64 BE, so one frontier's entries
    /// are in slot order; value the L2 height, the commitment index and the
    /// Unix second it was stored, each u64 BE.
    StatusHeights,
    "status_heights",
    (Frontier, u64),
    (u64, u64, u64),
    |v| codec::encode_frontier_mark(*v),
    codec::decode_frontier_mark
);
values!(
    ScByHashPrefix,
    u64,
    |v| codec::encode_u64(*v),
    codec::decode_u64
);

/// `meta`: short ASCII keys -> values. Fixed keys are the constants below;
/// other modules' free entries live under [`USER_PREFIX`] so they can never
/// overwrite a fixed one.
pub(crate) struct Meta;

impl Table for Meta {
    const NAME: &'static str = "meta";
    type Key = str;
    type KeyBytes = Vec<u8>;
    fn key(key: &str) -> Vec<u8> {
        key.as_bytes().to_vec()
    }
    fn show(key: &str) -> String {
        format!("{key:?}")
    }
}

/// A typed `meta` entry: its name, and the type of its value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MetaKey<V> {
    pub(crate) name: &'static str,
    value: PhantomData<fn() -> V>,
}

impl<V> MetaKey<V> {
    const fn new(name: &'static str) -> MetaKey<V> {
        MetaKey {
            name,
            value: PhantomData,
        }
    }
}

/// A type a `meta` entry holds, and its bytes.
pub(crate) trait MetaValue: Sized {
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;
}

/// u64 big-endian.
impl MetaValue for u64 {
    fn encode(&self) -> Vec<u8> {
        codec::encode_u64(*self).to_vec()
    }
    fn decode(bytes: &[u8]) -> Result<u64, DecodeError> {
        codec::decode_u64(bytes)
    }
}

/// 32 raw bytes (a hash, a key).
impl MetaValue for Hash {
    fn encode(&self) -> Vec<u8> {
        self.to_vec()
    }
    fn decode(bytes: &[u8]) -> Result<Hash, DecodeError> {
        codec::decode_hash(bytes)
    }
}

/// A version byte 1, then the Kumquat height as u64 big-endian.
impl MetaValue for ForkTable {
    fn encode(&self) -> Vec<u8> {
        codec::encode_fork_table(self).to_vec()
    }
    fn decode(bytes: &[u8]) -> Result<ForkTable, DecodeError> {
        codec::decode_fork_table(bytes)
    }
}

/// Meta: the layout version of this ledger, written at creation.
pub(crate) const META_FORMAT: MetaKey<u64> = MetaKey::new("format");
/// Meta: genesis state root.
pub(crate) const META_GENESIS_ROOT: MetaKey<Hash> = MetaKey::new("genesis_root");
/// Meta: last scanned L1 height.
pub(crate) const META_LAST_L1: MetaKey<u64> = MetaKey::new("last_l1");
/// Meta: sequencer public key.
pub(crate) const META_SEQ_PUBKEY: MetaKey<Hash> = MetaKey::new("seq_pubkey");
/// Meta: how many commitments were ever stored.
pub(crate) const META_COMMIT_COUNT: MetaKey<u64> = MetaKey::new("commit_count");
/// Meta: highest height whose status is >= Finalized.
pub(crate) const META_FINALIZED: MetaKey<u64> = MetaKey::new("finalized");
/// Meta: highest height whose status is Proven.
pub(crate) const META_PROVEN: MetaKey<u64> = MetaKey::new("proven");
/// Meta: the highest DA slot a proof was stored on.
pub(crate) const META_LAST_PROOF_SLOT: MetaKey<u64> = MetaKey::new("last_proof_slot");
/// Meta: the block key: pubKey of the first stored block, never changed;
/// blocks signed by it omit their pubKey (see `codec`).
pub(crate) const META_BLOCK_KEY: MetaKey<Hash> = MetaKey::new("sc_key");
/// Meta: the fork table the chain was verified by.
pub(crate) const META_FORK_TABLE: MetaKey<ForkTable> = MetaKey::new("forks");
/// Prefix of the free entries of `set_meta_bytes`/`meta_bytes`.
pub(crate) const USER_PREFIX: &str = "user.";
/// Meta: how many stored blocks were accepted without their transaction
/// bodies (`--allow-missing-tx-bodies`). Under [`USER_PREFIX`], where it
/// has always been.
pub(crate) const META_WITHOUT_BODIES: MetaKey<u64> = MetaKey::new("user.blocks_without_bodies");
/// Meta: the seed of the devnet chain this data dir holds.
pub(crate) const META_DEVNET_SEED: MetaKey<u64> = MetaKey::new("user.devnet_seed");

/// The current layout version. 2: the block hash index is
/// `sc_by_hash_prefix` (8-byte prefix keys, duplicates) instead of
/// `sc_by_hash` (32-byte keys). 3: a `proofs` value is the list of every
/// proof verified on the slot, not the latest one alone. 4: the
/// `bitcoin_headers` table (created empty by the upgrade). 5: the
/// `bitcoin_chunks` table (created empty by the upgrade). 6: the frontier
/// index `status_heights`. 7: the address book `bitcoin_peers` (created
/// empty by the upgrade). 8: an address book entry holds the peer's
/// services (8 bytes more; the upgrade writes 0, not known).
pub(crate) const FORMAT_VERSION: u64 = 8;

/// The layout version whose address book entries hold services.
pub(crate) const BOOK_SERVICES_VERSION: u64 = 8;

/// The layout version that added the frontier index `status_heights`
/// (`migrate.rs` builds it for older ones).
pub(crate) const FRONTIER_INDEX_VERSION: u64 = 6;

/// The oldest layout version `Ledger::open` upgrades in place (see
/// `migrate.rs`); older ones are refused.
pub(crate) const OLDEST_MIGRATED: u64 = 2;

/// Tables of older layouts, by name: a data dir holding one of them (and no
/// current layout version) was written by an older ledgerd.
pub(crate) const OLD_TABLES: [&str; 1] = ["sc_by_hash"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_keys_sort_in_numeric_order() {
        let mut keys: Vec<[u8; 8]> = [256u64, 1, u64::MAX, 255, 0]
            .iter()
            .map(SoftConfirmations::key)
            .collect();
        keys.sort();
        let back: Vec<u64> = keys.iter().filter_map(|k| decode_u64_key(k)).collect();
        assert_eq!(back, vec![0, 1, 255, 256, u64::MAX]);
        assert_eq!(decode_u64_key(&[1, 2, 3]), None);
    }

    #[test]
    fn hash_index_keys_are_the_first_eight_bytes_of_the_hash() {
        let hash: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(ScByHashPrefix::key(&hash), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(ScByHashPrefix::show(&hash), hex::encode(hash));
        assert!(ScByHashPrefix::FLAGS.contains(DatabaseFlags::DUP_SORT | DatabaseFlags::DUP_FIXED));
        assert!(SoftConfirmations::FLAGS.is_empty());
    }
}
