//! Value parsers shared by the subsystems' flags. Each error is the end of a
//! sentence that [`super::parse`] starts with the flag's
//! name (`--max-range takes a non-negative whole number, not "x"`); one that
//! starts with `--` is a whole sentence already.

use std::str::FromStr;

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
