//! Chain sources that read another system directly: so far Bitcoin Core
//! ([`bitcoind`]), the DA (layer-1) chain Citrea publishes to.
pub mod bitcoind;
