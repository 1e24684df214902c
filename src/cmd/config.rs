//! `ledgerd config [FLAGS]` (and `--print-config` on any command): the
//! configuration `run` would use, as TOML, each value with where it came
//! from. It takes `run`'s flags; the printing is the configuration's own
//! ([`crate::config::print`]), done while the command line is parsed, where
//! the flags' sources are known, and [`super::Command::PrintConfig`]
//! carries the text.
