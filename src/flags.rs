//! What every subsystem's flags (`*/args.rs`) share, below all of them:
//! the `--help` headings (which are also a config file's sections) and the
//! value parsers. Each parser's error is the end of a sentence that the
//! configuration starts with the flag's name (`--max-range takes a
//! non-negative whole number, not "x"`); one that starts with `--` is a
//! whole sentence already.

use std::str::FromStr;

/// A configuration that cannot be run: one sentence that names the flag
/// (and the file, line and key, for a config file's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The `--help` headings; a config file's sections are these, lowercase,
/// spaces as `-` (`[chain-source]`).
pub mod heading {
    pub const CHAIN_SOURCE: &str = "Chain source";
    pub const DEVNET: &str = "Devnet";
    pub const BITCOIN: &str = "Bitcoin";
    pub const FOLLOWER: &str = "Follower";
    pub const CHAIN_RULES: &str = "Chain rules";
    pub const LEDGER: &str = "Ledger";
    pub const SERVER: &str = "Server";
    pub const OPERATIONS: &str = "Operations";
    pub const FIXTURES: &str = "Fixtures";
    pub const ROLLBACK: &str = "Rollback";
    pub const HEADERS: &str = "Headers";
    pub const CONFIGURATION: &str = "Configuration";

    /// The config-file section of a heading: `Chain source` -> `chain-source`.
    pub fn section(heading: &str) -> String {
        heading.to_ascii_lowercase().replace(' ', "-")
    }
}

/// A non-negative whole number.
pub fn number<T: FromStr>(value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("takes a non-negative whole number, not {value:?}"))
}

/// A whole number of at least 1.
pub fn at_least_one<T: FromStr + PartialOrd + From<u8>>(value: &str) -> Result<T, String> {
    let n: T = number(value)?;
    if n < T::from(1) {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// A bitcoind RPC URL, `http://HOST:PORT`, without a trailing `/`.
pub fn bitcoind_url(value: &str) -> Result<String, String> {
    let host = value.strip_prefix("http://").unwrap_or("");
    if host.is_empty() || host.starts_with('/') || host.contains(' ') {
        return Err(format!(
            "takes bitcoind's RPC URL, http://HOST:PORT (its -rpcport), not {value:?}"
        ));
    }
    Ok(value.trim_end_matches('/').to_string())
}

/// Whether `url` is an `http://` or `https://` URL with a host.
pub fn is_http_url(url: &str) -> bool {
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or("");
    !(host.is_empty() || host.starts_with('/') || host.contains(' '))
}

/// A switch's value in the environment or a config file: true, false, 1, 0,
/// yes, no, on, off.
pub fn switch() -> clap::builder::BoolishValueParser {
    clap::builder::BoolishValueParser::new()
}
