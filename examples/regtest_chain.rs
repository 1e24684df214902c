//! A regtest chain of N coinbase-only blocks, valid by Bitcoin Core's rules,
//! written as a `blk*.dat`-style file for `bitcoind -loadblock=FILE`
//! (`scripts/bitcoin_headers_sync.sh`): importing blocks is several times
//! faster than mining them one `generatetodescriptor` call at a time.
//!
//! ```text
//! regtest_chain N FILE
//! ```
//!
//! Genesis first, then block h pays nothing to `OP_TRUE`; its coinbase starts with h (BIP34);
//! its time is one second after the one before, starting 3N seconds in the
//! past, so the chain stays behind the clock.

use std::io::Write;

use bitcoin::absolute::LockTime;
use bitcoin::block::{Header, Version};
use bitcoin::blockdata::opcodes::all::OP_PUSHBYTES_0;
use bitcoin::blockdata::script::Builder;
use bitcoin::{
    transaction, Amount, Block, OutPoint, ScriptBuf, Sequence, Transaction, TxIn, TxMerkleNode,
    TxOut, Witness,
};
use ledgerd::headers::{rules, unix_now, BitcoinNetwork};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: regtest_chain N FILE");
        std::process::exit(2);
    }
    let n: u64 = args[1].parse()?;
    let params = BitcoinNetwork::Regtest.params();
    let magic = bitcoin::p2p::Magic::from(BitcoinNetwork::Regtest.network()).to_bytes();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[2])?);
    // The file starts with genesis, as a node's own block files do
    // (bitcoind's import of a fresh datadir expects it first).
    let genesis = bitcoin::blockdata::constants::genesis_block(BitcoinNetwork::Regtest.network());
    let bytes = bitcoin::consensus::serialize(&genesis);
    out.write_all(&magic)?;
    out.write_all(&(bytes.len() as u32).to_le_bytes())?;
    out.write_all(&bytes)?;
    let mut prev = genesis.header;
    let start = (unix_now() - 3 * n as i64) as u32;
    for height in 1..=n {
        let coinbase = Transaction {
            version: transaction::Version::ONE,
            lock_time: LockTime::ZERO,
            input: vec![TxIn {
                previous_output: OutPoint::null(),
                script_sig: Builder::new()
                    .push_int(height as i64)
                    .push_opcode(OP_PUSHBYTES_0)
                    .into_script(),
                sequence: Sequence::MAX,
                witness: Witness::new(),
            }],
            output: vec![TxOut {
                value: Amount::ZERO,
                script_pubkey: ScriptBuf::from_bytes(vec![0x51]),
            }],
        };
        let mut header = Header {
            version: Version::from_consensus(0x2000_0000),
            prev_blockhash: prev.block_hash(),
            merkle_root: TxMerkleNode::from_raw_hash(coinbase.compute_txid().to_raw_hash()),
            time: start + height as u32,
            bits: prev.bits,
            nonce: 0,
        };
        while rules::check_pow(header.block_hash(), params.pow_limit_bits, params).is_err() {
            header.nonce += 1;
        }
        let block = Block {
            header,
            txdata: vec![coinbase],
        };
        let bytes = bitcoin::consensus::serialize(&block);
        out.write_all(&magic)?;
        out.write_all(&(bytes.len() as u32).to_le_bytes())?;
        out.write_all(&bytes)?;
        prev = header;
    }
    out.flush()?;
    eprintln!("{n} regtest blocks in {}", args[2]);
    Ok(())
}
