//! The ledger's tables: their LMDB names and how their keys are encoded.
//!
//! One small type per table (in the style of heed's typed databases). Each
//! says its name, which [`Database`] handle it uses, how a key becomes bytes,
//! and how to name a key in an error message. Values are encoded in
//! [`super::codec`].
//!
//! Numeric keys (heights, DA slot numbers) are u64 big-endian, so LMDB's byte
//! order is numeric order: the last key of `soft_confirmations` is the head.

use lmdb::Database;

use crate::types::Hash;

/// The database handles of one environment, opened once at `Ledger::open`
/// (opaque outside the ledger).
#[derive(Clone, Copy, Debug)]
pub struct Dbs {
    pub(crate) soft_confirmations: Database,
    pub(crate) sc_by_hash: Database,
    pub(crate) status: Database,
    pub(crate) commitments: Database,
    pub(crate) da_slots: Database,
    pub(crate) proofs: Database,
    pub(crate) meta: Database,
}

/// Every table name, in the order `Ledger::open` opens them.
pub(crate) const ALL: [&str; 7] = [
    SoftConfirmations::NAME,
    ScByHash::NAME,
    StatusTable::NAME,
    Commitments::NAME,
    DaSlots::NAME,
    Proofs::NAME,
    Meta::NAME,
];

/// A typed table: its name, its handle and its key codec.
pub(crate) trait Table {
    /// The LMDB database name.
    const NAME: &'static str;
    /// What the key is, in Rust.
    type Key: ?Sized;
    /// The encoded key (stack-allocated for fixed-size keys).
    type KeyBytes: AsRef<[u8]>;
    /// The handle of this table.
    fn db(dbs: &Dbs) -> Database;
    /// The key as stored.
    fn key(key: &Self::Key) -> Self::KeyBytes;
    /// The key as an error message shows it.
    fn show(key: &Self::Key) -> String;
}

/// Decodes a u64 big-endian key (as stored in the u64-keyed tables).
pub(crate) fn decode_u64_key(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

macro_rules! u64_table {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $field:ident) => {
        $(#[$doc])*
        pub(crate) struct $ty;
        impl Table for $ty {
            const NAME: &'static str = $name;
            type Key = u64;
            type KeyBytes = [u8; 8];
            fn db(dbs: &Dbs) -> Database {
                dbs.$field
            }
            fn key(key: &u64) -> [u8; 8] {
                key.to_be_bytes()
            }
            fn show(key: &u64) -> String {
                key.to_string()
            }
        }
    };
}

macro_rules! hash_table {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $field:ident) => {
        $(#[$doc])*
        pub(crate) struct $ty;
        impl Table for $ty {
            const NAME: &'static str = $name;
            type Key = Hash;
            type KeyBytes = Hash;
            fn db(dbs: &Dbs) -> Database {
                dbs.$field
            }
            fn key(key: &Hash) -> Hash {
                *key
            }
            fn show(key: &Hash) -> String {
                hex::encode(key)
            }
        }
    };
}

u64_table!(
    /// `soft_confirmations`: L2 height -> encoded soft confirmation.
    SoftConfirmations,
    "soft_confirmations",
    soft_confirmations
);
hash_table!(
    /// `sc_by_hash`: soft-confirmation hash -> L2 height (u64 BE).
    ScByHash,
    "sc_by_hash",
    sc_by_hash
);
u64_table!(
    /// `status`: L2 height -> one status byte.
    StatusTable,
    "status",
    status
);
u64_table!(
    /// `commitments`: DA slot number -> encoded list of the commitments found on it.
    Commitments,
    "commitments",
    commitments
);
hash_table!(
    /// `da_slots`: DA slot hash -> slot number (u64 BE).
    DaSlots,
    "da_slots",
    da_slots
);
u64_table!(
    /// `proofs`: DA slot number -> the latest verified batch proof verified on it.
    Proofs,
    "proofs",
    proofs
);

/// `meta`: short ASCII keys -> values. Fixed keys are the constants below;
/// other modules' free entries live under [`USER_PREFIX`] so they can never
/// overwrite a fixed one.
pub(crate) struct Meta;

impl Table for Meta {
    const NAME: &'static str = "meta";
    type Key = str;
    type KeyBytes = Vec<u8>;
    fn db(dbs: &Dbs) -> Database {
        dbs.meta
    }
    fn key(key: &str) -> Vec<u8> {
        key.as_bytes().to_vec()
    }
    fn show(key: &str) -> String {
        format!("{key:?}")
    }
}

/// Meta: the layout version of this ledger (u64), written at creation.
pub(crate) const META_FORMAT: &str = "format";
/// Meta: genesis state root (32 bytes).
pub(crate) const META_GENESIS_ROOT: &str = "genesis_root";
/// Meta: last scanned L1 height (u64).
pub(crate) const META_LAST_L1: &str = "last_l1";
/// Meta: sequencer public key (32 bytes).
pub(crate) const META_SEQ_PUBKEY: &str = "seq_pubkey";
/// Meta: how many commitments were ever stored (u64).
pub(crate) const META_COMMIT_COUNT: &str = "commit_count";
/// Meta: highest height whose status is >= Finalized (u64).
pub(crate) const META_FINALIZED: &str = "finalized";
/// Meta: highest height whose status is Proven (u64).
pub(crate) const META_PROVEN: &str = "proven";
/// Meta: the highest DA slot a proof was stored on (u64).
pub(crate) const META_LAST_PROOF_SLOT: &str = "last_proof_slot";
/// Meta: the block key: pubKey of the first stored block, never changed;
/// blocks signed by it omit their pubKey (see `codec`).
pub(crate) const META_BLOCK_KEY: &str = "sc_key";
/// Prefix of the free entries of `set_meta_bytes`/`meta_bytes`.
pub(crate) const USER_PREFIX: &str = "user.";

/// The current layout version.
pub(crate) const FORMAT_VERSION: u64 = 1;

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
}
