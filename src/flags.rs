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
    if !(value.starts_with("http://") && is_http_url(value)) {
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

/// The values a switch takes in the environment or a config file.
pub const SWITCH_VALUES: &str = "true, false, 1, 0, yes, no, on or off";

/// Whether `arg` is a switch: `--flag` alone, or one that also takes
/// `--flag=false` (its default depends on other settings, as
/// `--bitcoin-discover`'s on the network); `true`/`false` in a file.
pub fn is_switch(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), clap::ArgAction::SetTrue)
        || arg
            .get_num_args()
            .is_some_and(|n| n.min_values() == 0 && n.max_values() == 1)
}

/// A switch's value in the environment or a config file: true, false, 1, 0,
/// yes, no, on, off (any case); the error lists them.
pub fn switch(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "y" | "t" => Ok(true),
        "false" | "0" | "no" | "off" | "n" | "f" => Ok(false),
        _ => Err(format!(
            "is a switch: it takes {SWITCH_VALUES}, not {value:?}"
        )),
    }
}

/// The one of `known` closest to `word` by edit distance (letter case
/// aside), when it is close enough to be a slip (a letter or two for a
/// short word, a few for a long one); `None` otherwise: a guess far off
/// helps no one.
pub fn closest<'a, I: IntoIterator<Item = &'a str>>(word: &str, known: I) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 4).clamp(1, 3);
    known
        .into_iter()
        .map(|k| (edit_distance(&word, &k.to_ascii_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// ` (did you mean K?)`, K the one of `known` [`closest`] to `word`; empty
/// when none is close.
pub fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, known)
        .map(|k| format!(" (did you mean {k}?)"))
        .unwrap_or_default()
}

/// Edit distance (optimal string alignment): insertions, deletions,
/// substitutions and swaps of two neighbouring characters (`dve` -> `dev`
/// is one).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: the distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The values of a repeatable flag whose values may be comma lists, each
/// trimmed, in order.
pub fn comma_list(values: &[String]) -> impl Iterator<Item = &str> {
    values.iter().flat_map(|v| v.split(',')).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_suggests_only_a_near_word() {
        let known = [
            "ledger_getSoftConfirmationByNumber",
            "ledger_getSoftConfirmationByHash",
        ];
        assert_eq!(
            closest("ledger_getSoftConfirmationByNumbr", known),
            Some("ledger_getSoftConfirmationByNumber")
        );
        assert_eq!(
            closest("LEDGER_GETSOFTCONFIRMATIONBYHASH", known),
            Some("ledger_getSoftConfirmationByHash")
        );
        assert_eq!(closest("eth_blockNumber", known), None);
        assert_eq!(closest("bnd", ["bind", "dev"]), Some("bind"));
        assert_eq!(closest("xyz", ["bind", "dev"]), None);
        assert_eq!(closest("dve", ["dev", "data-dir"]), Some("dev"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("dve", "dev"), 1);
    }

    #[test]
    fn a_switch_error_lists_the_values_it_takes() {
        assert_eq!(switch("On"), Ok(true));
        assert_eq!(switch("0"), Ok(false));
        let e = switch("").unwrap_err();
        assert!(e.contains("true, false, 1, 0, yes, no, on or off"), "{e}");
    }
}
