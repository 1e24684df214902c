//! `--upstream` (`[chain-source]` in a config file): the nodes a follower
//! follows, the first preferred.

use std::path::PathBuf;

use crate::flags::heading;
use crate::flags::is_http_url;

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::CHAIN_SOURCE)]
pub struct UpstreamArgs {
    /// Follow another node's L2 chain and DA view over JSON-RPC; give it again (or a comma list) for fallbacks, the first preferred
    #[arg(long, value_name = "URL", value_parser = urls)]
    pub upstream: Vec<String>,
    /// With --upstream: trust the CA certificates in this PEM file too, beside the system's roots, for https:// upstreams
    #[arg(long, value_name = "FILE", value_parser = ca_file)]
    pub upstream_ca: Option<PathBuf>,
    /// With --upstream: start at most N requests per second at each upstream (for public endpoints that ask for it; default unlimited)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub upstream_max_rps: Option<u32>,
}

impl UpstreamArgs {
    /// Every URL once, in order (the flag's values may be comma lists).
    pub fn urls(&self) -> Result<Vec<String>, String> {
        let mut list: Vec<String> = Vec::new();
        for url in crate::flags::comma_list(&self.upstream) {
            if list.iter().any(|u| u == url) {
                return Err(format!(
                    "--upstream {url} is given twice; each upstream once, the preferred first"
                ));
            }
            list.push(url.to_string());
        }
        Ok(list)
    }
}

/// `--upstream-ca FILE`: a PEM file of at least one usable certificate.
fn ca_file(value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    crate::source::tls::read_ca_file(&path)?;
    Ok(path)
}

/// One `--upstream` value: a URL or a comma list of them.
fn urls(value: &str) -> Result<String, String> {
    match value.split(',').map(str::trim).find(|u| !is_http_url(u)) {
        Some(bad) => Err(format!(
            "takes an http:// or https:// URL of a node's JSON-RPC (several as a comma list, \
             or the flag again), not {bad:?}"
        )),
        None => Ok(value.to_string()),
    }
}
