//! The embedded devnet as a node runs it: the chain source itself lives
//! with the other sources ([`crate::source::devnet`], re-exported here), and
//! [`control`] drives it through the sync thread (`dev_*` calls,
//! [`crate::Node::devnet`]), on the side that runs the sync thread.

pub mod control;

pub use crate::source::devnet::*;

#[cfg(test)]
mod tests;
