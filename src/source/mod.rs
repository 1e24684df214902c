//! Chain sources that are not another rollup node: for now Bitcoin itself, the DA (layer-1) chain.
//!
//! - [`bitcoind`]: Citrea's transactions on Bitcoin: finding them in a block, checking who signed
//!   them, decoding their bodies, and building them for the devnet.
pub mod bitcoind;
