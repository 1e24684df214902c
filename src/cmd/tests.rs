use std::path::PathBuf;
use std::time::Duration;

use super::rollback::Rollback;
use super::*;
use crate::chain_rules::{ForkTable, Network};
use crate::config::{env, Config, SourceConfig};
use crate::logs::LogFormat;
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::bitcoin::keys;
use crate::source::bitcoin::rpc::client::Credentials;
use crate::source::devnet::DevnetConfig;
use crate::wire::WireShape;

/// The node `command` runs (it must be a run).
fn node(command: Command) -> Config {
    match command {
        Command::Run(c) => *c,
        other => panic!("expected a run, got {other:?}"),
    }
}

/// What the arguments `args` (after the program name) ask for.
fn parse<S: AsRef<str>>(args: &[S]) -> Result<Command, ConfigError> {
    parse_with_warnings(args.iter().map(|s| s.as_ref().to_string())).0
}

fn try_run(args: &[&str]) -> Result<Config, ConfigError> {
    parse(args).map(node)
}

/// The node `args` resolve to (a refusal fails the test).
fn run(args: &[&str]) -> Config {
    try_run(args).unwrap()
}

/// What `run` of `args` is refused with.
fn refused(args: &[&str]) -> String {
    try_run(args).unwrap_err().0
}

/// The words of `line`, split at spaces (no quoting).
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The command `line` asks for (a refusal fails the test).
fn command(line: &str) -> Command {
    parse(&words(line)).unwrap()
}

/// What the command `line` is refused with.
fn refused_command(line: &str) -> String {
    parse(&words(line)).unwrap_err().0
}

/// [`run`] of the words of `line`.
fn run_line(line: &str) -> Config {
    run(&words(line))
}

/// What `run_line` of `line` is refused with.
fn refused_line(line: &str) -> String {
    refused(&words(line))
}

/// The devnet `c` runs (it must be one).
fn devnet(c: &Config) -> &DevnetConfig {
    c.source.devnet().unwrap()
}

/// The upstream URLs `c` follows (none unless following upstreams).
fn upstreams(c: &Config) -> &[String] {
    match &c.source {
        SourceConfig::Upstream { urls, .. } => urls,
        _ => &[],
    }
}

/// The Bitcoin DA source `c` reads (it must read one).
fn bitcoin(c: &Config) -> &BitcoinConfig {
    match &c.source {
        SourceConfig::Upstream {
            bitcoin: Some(b), ..
        } => b,
        other => panic!("no Bitcoin DA source: {other:?}"),
    }
}

/// `text` written to the file `name` in a new temporary dir (removed with it).
fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path.display().to_string())
}

/// What `ledgerd [sub] --config FILE args` asks for, FILE holding `text`.
fn with_file(sub: Option<&str>, text: &str, args: &[&str]) -> Result<Command, ConfigError> {
    let (_dir, path) = temp_file("ledgerd.toml", text);
    let all: Vec<&str> = sub.into_iter().chain(["--config", &path]).collect();
    parse(&[&all, args].concat())
}

/// The node a config file of `text` and `args` resolve to.
fn run_with_file(text: &str, args: &[&str]) -> Config {
    node(with_file(None, text, args).unwrap())
}

/// What a config file of `text` is refused with.
fn file_refused(text: &str) -> String {
    with_file(None, text, &[]).unwrap_err().0
}

#[test]
fn sequencer_pubkey_reads_hex_as_every_other_input_does() {
    let key = "52f41a5076498d1ae8bdfa57d19e91e3c2c94b6de21985d099cd48cfa7aef174";
    for form in [
        key.to_string(),
        format!("0x{key}"),
        format!("0X{}", key.to_uppercase()),
    ] {
        let c = run(&["--sequencer-pubkey", &form]);
        assert_eq!(
            c.chain.sequencer_pubkey.map(hex::encode).as_deref(),
            Some(key)
        );
    }
    let e = refused(&["--sequencer-pubkey", "0x52f4"]);
    assert!(e.contains("--sequencer-pubkey takes 64 hex digits"), "{e}");
}

#[test]
fn defaults_match_the_documented_ones() {
    let c = run(&[]);
    assert_eq!(c.bind, "127.0.0.1:12346");
    assert_eq!(c.data_dir, PathBuf::from("./ledgerd-data"));
    assert_eq!(
        (c.max_range(), c.max_batch, c.server.max_body),
        (1000, 50, 10 << 20)
    );
    assert_eq!(
        (c.wire, c.sync_concurrency, c.sync_chunk),
        (WireShape::Ledgerd, 8, 100)
    );
    assert_eq!(c.server.idle_timeout, Duration::from_secs(10));
    assert_eq!(c.server.body_timeout, Duration::from_secs(5));
    assert_eq!(c.server.max_requests_per_connection, 1000);
    assert!(!c.allow_missing_tx_bodies);
    assert!(c.source.devnet().is_none());
}

#[test]
fn the_parsers_defaults_are_the_subsystems_own() {
    let c = run(&[]);
    let d = Config::default();
    assert_eq!(
        (&c.bind, &c.data_dir, c.max_batch),
        (&d.bind, &d.data_dir, d.max_batch)
    );
    assert_eq!(
        (c.sync_chunk, c.sync_concurrency),
        (d.sync_chunk, d.sync_concurrency)
    );
    assert_eq!(format!("{:?}", c.server), format!("{:?}", d.server));
    assert_eq!(
        (c.health_max_lag, c.health_max_behind),
        (d.health_max_lag, d.health_max_behind)
    );
    let c = run(&["--dev"]);
    let dev = devnet(&c);
    let d = DevnetConfig::default();
    assert_eq!(
        (dev.seed, dev.prefill, dev.block_ms, dev.proof_bytes),
        (d.seed, d.prefill, d.block_ms, d.proof_bytes)
    );
}

#[test]
fn dev_flags_take_values_in_both_spellings() {
    let c = run_line("--dev --dev-prefill 100 --dev-block-ms=0 --dev-seed 9");
    let d = devnet(&c);
    assert_eq!((d.prefill, d.block_ms, d.seed), (100, 0, 9));
    let c = run(&["run", "--dev", "--dev-seed", "4"]);
    assert_eq!(devnet(&c).seed, 4, "`run` is the default command");
}

#[test]
fn a_flag_given_twice_takes_its_last_value() {
    let c = run(&["--bind", "127.0.0.1:1", "--bind=127.0.0.1:2"]);
    assert_eq!(c.bind, "127.0.0.1:2");
}

#[test]
fn ops_flags_parse_and_check_their_values() {
    let c = run(&[]);
    assert_eq!(c.health_max_lag, Duration::from_secs(60));
    assert_eq!(c.cors_origin, None);
    let c = run_line("--health-max-lag-s 5 --cors-origin http://127.0.0.1:8080");
    assert_eq!(c.health_max_lag, Duration::from_secs(5));
    assert_eq!(c.cors_origin.as_deref(), Some("http://127.0.0.1:8080"));
    assert_eq!(run(&["--cors-origin=*"]).cors_origin, None);
    let e = refused(&["--cors-origin", "explorer.example/x"]);
    assert!(e.starts_with("--cors-origin takes an origin"), "{e}");
    let e = refused(&["--health-max-lag-s", "0"]);
    assert_eq!(e, "--health-max-lag-s must be at least 1");
}

#[test]
fn wire_citrea_serves_20_block_ranges_unless_max_range_says_otherwise() {
    let c = run(&["--wire", "citrea"]);
    assert_eq!((c.wire, c.max_range()), (WireShape::Citrea, 20));
    let c = run(&["--wire=citrea", "--max-range", "50"]);
    assert_eq!(c.max_range(), 50);
    assert_eq!(run(&["--wire", "seed"]).wire, WireShape::Ledgerd);
    let e = refused(&["--wire", "json"]);
    assert!(e.contains("--wire takes ledgerd"), "{e}");
    let c = run_line("--upstream http://x --sync-concurrency 3 --allow-missing-tx-bodies");
    assert_eq!((c.sync_concurrency, c.allow_missing_tx_bodies), (3, true));
    let e = refused(&["--sync-concurrency", "0"]);
    assert!(e.contains("--sync-concurrency takes 1 to 64"), "{e}");
    let e = refused(&["--sync-chunk", "0"]);
    assert_eq!(e, "--sync-chunk must be at least 1");
}

#[test]
fn bad_values_name_the_flag() {
    let e = refused(&["--max-range", "-1"]);
    assert!(e.contains("--max-range"), "{e}");
    let e = refused(&["--max-range", "x"]);
    assert_eq!(
        e,
        "--max-range takes a non-negative whole number, not \"x\""
    );
    let e = refused(&["--dev-prefill", "5"]);
    assert_eq!(e, "--dev-prefill only applies with --dev");
    let e = refused(&["--frobnicate"]);
    assert_eq!(e, "unknown argument \"--frobnicate\"; see ledgerd --help");
    let e = refused(&["--dev", "--upstream", "http://x"]);
    assert!(e.contains("choose one"), "{e}");
    let e = refused(&["--bind"]);
    assert_eq!(e, "--bind needs a value");
}

#[test]
fn upstreams_are_listed_in_order_by_repeating_the_flag_or_a_comma_list() {
    let c = run(&[
        "--upstream",
        "http://a:1",
        "--upstream=http://b:2, https://c:3",
    ]);
    assert_eq!(upstreams(&c), ["http://a:1", "http://b:2", "https://c:3"]);
    assert!(upstreams(&run(&[])).is_empty());
    let e = refused(&["--upstream", "a:1"]);
    assert!(
        e.contains("--upstream takes an http:// or https:// URL"),
        "{e}"
    );
    let e = refused(&["--upstream", "http://a:1,"]);
    assert!(e.contains("not \"\""), "{e}");
    let e = refused(&["--upstream", "http://a:1", "--upstream", "http://a:1"]);
    assert!(e.contains("given twice"), "{e}");
}

#[test]
fn health_max_behind_defaults_to_100_blocks() {
    assert_eq!(run(&[]).health_max_behind, 100);
    assert_eq!(run(&["--health-max-behind", "7"]).health_max_behind, 7);
    let e = refused(&["--health-max-behind", "x"]);
    assert!(e.contains("--health-max-behind"), "{e}");
}

#[test]
fn a_config_file_sets_flags_and_the_command_line_overrides_it() {
    let text = "# ledgerd\n\nbind = \"0.0.0.0:9000\"\nmax-range = 7\ndev = true\n\
                [devnet]\ndev-seed = 3\n[server]\nreuse-port = true\n";
    let c = run_with_file(text, &[]);
    assert_eq!(c.bind, "0.0.0.0:9000");
    assert_eq!(c.max_range(), 7);
    assert_eq!(devnet(&c).seed, 3);
    assert!(c.server.reuse_port);
    let c = run_with_file(text, &["--max-range", "9", "--bind=127.0.0.1:0"]);
    assert_eq!((c.bind.as_str(), c.max_range()), ("127.0.0.1:0", 9));
    assert_eq!(
        devnet(&c).seed,
        3,
        "what the command line leaves alone stays"
    );
    let c = run_with_file("dev = false\n", &[]);
    assert!(c.source.devnet().is_none());
    // One file for every command: keys of other commands are ignored.
    let shared = "data-dir = \"/srv/l\"\nreuse-port = true\nno-verify = true\n";
    assert!(!run_with_file(shared, &[]).read_only);
    let Ok(Command::Import(i)) = with_file(Some("import"), shared, &["f.jsonl"]) else {
        panic!("not an import")
    };
    assert_eq!(
        (i.data_dir.to_str(), i.options.verify),
        (Some("/srv/l"), false)
    );
}

#[test]
fn the_command_lines_upstreams_replace_the_config_files() {
    let text = "upstream = [\"http://a:1\", \"http://b:2\"]\n";
    let c = run_with_file(text, &[]);
    assert_eq!(upstreams(&c), ["http://a:1", "http://b:2"]);
    let c = run_with_file(text, &words("--upstream http://c:3 --upstream http://a:1"));
    assert_eq!(upstreams(&c), ["http://c:3", "http://a:1"]);
}

#[test]
fn config_file_errors_name_the_file_line_and_key() {
    for (text, says) in [
        (
            "bind = \"127.0.0.1:0\"\nmax-range = \"many\"\n",
            "ledgerd.toml line 2, key max-range: --max-range takes a non-negative whole number",
        ),
        (
            "\n\nfrobnicate = 1\n",
            "line 3, key frobnicate: unknown key;",
        ),
        // A slip gets the nearest key.
        (
            "bnd = \"127.0.0.1:0\"\n",
            "line 1, key bnd: unknown key (did you mean bind?)",
        ),
        (
            "[ledger]\ndata_dir = \"d\"\n",
            "line 2, key data_dir: unknown key (did you mean data-dir?)",
        ),
        // A key given twice, in one table or at the top and under its section.
        (
            "dev = true\ndev = false\n",
            "line 2, column 1: not TOML: duplicate key",
        ),
        (
            "dev = true\n[chain-source]\ndev = false\n",
            "line 3, key dev: given twice (first on line 1)",
        ),
        (
            "[server]\nbind = \"127.0.0.1:0\"\n\n[devnet]\nwire = \"citrea\"\n",
            "line 5, key wire: is not a setting of [devnet]; write it under [server]",
        ),
        (
            "[server]\nmax-range 5\n",
            "ledgerd.toml line 2, column 11: not TOML",
        ),
        (
            "dev = \"yes\"\n",
            "key dev: is a switch: write true or false, not \"yes\"",
        ),
        (
            "bind = [\"a\", \"b\"]\n",
            "key bind: takes one value, not a list",
        ),
        ("config = \"x\"\n", "key config: not a setting"),
        ("dev-seed = 4\n", "--dev-seed only applies with --dev"),
    ] {
        let e = file_refused(text);
        assert!(e.contains(says), "{text:?}: {e}");
    }
    let e = refused_command("--config /nonexistent/ledgerd.toml");
    assert!(
        e.contains("config file /nonexistent/ledgerd.toml cannot be read"),
        "{e}"
    );
}

#[test]
fn a_file_that_is_not_toml_is_refused_and_the_old_form_is_read_only_by_convert() {
    // A quote left open: not read as the old form (it was, with a warning).
    let e = file_refused("dev = true\nbind = \"127.0.0.1:18798\n");
    assert!(
        e.contains("ledgerd.toml line 2, column 24: not TOML:"),
        "{e}"
    );
    assert!(
        e.contains("it would read in the older `key = value` form")
            && e.contains("`ledgerd config --convert "),
        "{e}"
    );
    // Not TOML, and not the old form either: no word of it.
    let e = file_refused("[server\nbind = \"x\"\n");
    assert!(e.contains("line 1, column"), "{e}");
    assert!(!e.contains("older"), "{e}");

    let convert = |text: &str| {
        let (_dir, path) = temp_file("old.conf", text);
        parse(&["config", "--convert", &path])
    };
    let text = "# old\nbind = 0.0.0.0:9000\nmax-range = \"7\"\ndev = true\ndev-seed=3\n\
                upstream-less = \n";
    let e = convert(text).unwrap_err().0;
    assert!(e.contains("line 6, key upstream-less: unknown key"), "{e}");
    let text = "bind = 0.0.0.0:9000\nmax-range = \"7\"\ndev = true\ndev-seed=3\n";
    let Ok(Command::PrintConfig(out)) = convert(text) else {
        panic!("not a print")
    };
    // What it prints is TOML that sets the same.
    let c = run_with_file(&out, &[]);
    assert_eq!((c.bind.as_str(), c.max_range()), ("0.0.0.0:9000", 7));
    assert_eq!(devnet(&c).seed, 3);
    let Ok(Command::PrintConfig(out)) = convert("upstream = http://a:1\nupstream = http://b:2\n")
    else {
        panic!("not a print")
    };
    let c = run_with_file(&out, &[]);
    assert_eq!(upstreams(&c), ["http://a:1", "http://b:2"]);
    let e = convert("bind = 127.0.0.1:0\nmax-batch = lots\n")
        .unwrap_err()
        .0;
    assert!(
        e.contains("line 2, key max-batch: --max-batch takes"),
        "{e}"
    );
    let e = convert("[server]\nbind = 1\n").unwrap_err().0;
    assert!(e.contains("line 1: not in the older"), "{e}");
}

/// A follower that reads the DA layer from bitcoind's RPC.
const WITH_RPC: &str = "--upstream=http://u:1 --bitcoin-rpc=http://b:2 --bitcoin-rpc-cookie=c";

/// The credentials `c` gives the devnet's bitcoind.
fn dev_credentials(c: &Config) -> Credentials {
    devnet(c).bitcoin.clone().unwrap().credentials
}

/// bitcoind's credentials `user` and `password`.
fn user_password(user: &str, password: &str) -> Credentials {
    Credentials::UserPassword {
        user: user.into(),
        password: password.into(),
    }
}

#[test]
fn dev_bitcoin_rpc_takes_one_set_of_the_shared_bitcoind_credentials() {
    let c = run_line(
        "--dev --dev-bitcoin-rpc http://127.0.0.1:18443/ --bitcoin-rpc-cookie /d/regtest/.cookie",
    );
    let b = devnet(&c).bitcoin.clone().unwrap();
    assert_eq!(b.url, "http://127.0.0.1:18443");
    assert_eq!(
        b.credentials,
        Credentials::CookieFile("/d/regtest/.cookie".into())
    );
    let c = run_line(
        "--dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-user=u --bitcoin-rpc-password=p",
    );
    assert_eq!(dev_credentials(&c), user_password("u", "p"));
    let e = refused(&["--dev", "--dev-bitcoin-rpc", "http://h:1"]);
    assert!(e.contains("needs bitcoind's credentials"), "{e}");
    let e = refused_line("--dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-user=u");
    assert!(e.contains("needs --bitcoin-rpc-password"), "{e}");
    let e = refused_line(
        "--dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-cookie=c --bitcoin-rpc-user=u \
         --bitcoin-rpc-password=p",
    );
    assert!(e.contains("give one"), "{e}");
    let e = refused(&["--dev", "--dev-bitcoin-rpc", "127.0.0.1:1"]);
    assert!(
        e.contains("--dev-bitcoin-rpc takes bitcoind's RPC URL, http://HOST:PORT"),
        "{e}"
    );
    let e = refused(&["--dev", "--bitcoin-rpc-cookie", "c"]);
    assert!(e.contains("or --dev-bitcoin-rpc"), "{e}");
    let e = refused(&["--dev-bitcoin-rpc", "http://h:1"]);
    assert!(e.contains("only applies with --dev"), "{e}");
}

#[test]
fn the_password_can_come_from_a_file_and_not_also_from_the_flag() {
    let (_dir, file) = temp_file("pw", "s3cret\n");
    let c = run_line(&format!(
        "--dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-user=u --bitcoin-rpc-password-file {file}"
    ));
    let credentials = dev_credentials(&c);
    assert_eq!(credentials, user_password("u", "s3cret"));
    assert!(
        !format!("{credentials:?}").contains("s3cret"),
        "Debug masks it"
    );
    let e = refused_line(&format!(
        "--dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-user=u --bitcoin-rpc-password=p \
         --bitcoin-rpc-password-file {file}"
    ));
    assert!(e.contains("give one"), "{e}");
    let e = refused_line(
        "--dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-user=u \
         --bitcoin-rpc-password-file=/nonexistent/pw",
    );
    assert!(
        e.contains("--bitcoin-rpc-password-file /nonexistent/pw cannot be read"),
        "{e}"
    );
}

#[test]
fn bitcoin_rpc_reads_the_da_layer_beside_an_upstream_with_the_networks_da_keys() {
    let c =
        run_line("--upstream http://u:1 --bitcoin-rpc http://b:2 --bitcoin-rpc-cookie /d/.cookie");
    let b = bitcoin(&c);
    assert_eq!(b.url.as_deref(), Some("http://b:2"));
    assert_eq!(b.credentials, Credentials::CookieFile("/d/.cookie".into()));
    assert_eq!(b.finality_depth, 30);
    // No --network: Citrea's regtest keys, which the devnet signs with.
    assert_eq!(b.sequencer_key.to_string(), keys::REGTEST.sequencer);
    assert_eq!(b.prover_key.to_string(), keys::REGTEST.prover);
    assert_eq!(upstreams(&c), ["http://u:1"]);

    let other = keys::DEVNET.prover;
    let c = run_line(&format!(
        "--network testnet --upstream=http://u:1 --bitcoin-rpc=http://b:2 --bitcoin-rpc-user=u \
         --bitcoin-rpc-password=p --bitcoin-finality-depth=1 --prover-da-pubkey {other}"
    ));
    let b = bitcoin(&c);
    assert_eq!(b.finality_depth, 1);
    assert_eq!(b.sequencer_key.to_string(), keys::TESTNET.sequencer);
    assert_eq!(b.prover_key.to_string(), other);

    let e = refused(&["--bitcoin-rpc", "http://b:2", "--bitcoin-rpc-cookie", "c"]);
    assert!(e.contains("give --upstream URL too"), "{e}");
    let e = refused(&["--upstream", "http://u:1", "--bitcoin-rpc", "http://b:2"]);
    assert!(e.contains("needs bitcoind's credentials"), "{e}");
    let e = refused(&["--upstream", "http://u:1", "--bitcoin-finality-depth", "3"]);
    assert!(e.contains("only applies with --bitcoin-rpc"), "{e}");
    let e = refused(&["--bitcoin-finality-depth", "0"]);
    assert!(e.contains("at least 1"), "{e}");
    // --bitcoin-transport: auto by default, only with peers.
    use crate::source::bitcoin::p2p::transport::TransportChoice;
    let peer = ["--upstream", "http://u:1", "--bitcoin-peer", "h:1"];
    let b = |c: &Config| bitcoin(c).transport;
    assert_eq!(b(&run(&peer)), TransportChoice::Auto);
    let v1 = run(&[&peer[..], &["--bitcoin-transport", "v1"]].concat());
    assert_eq!(b(&v1), TransportChoice::V1);
    let e = refused_line(&format!("{WITH_RPC} --bitcoin-transport=v2"));
    assert!(e.contains("only applies with --bitcoin-peer"), "{e}");
    let e = refused(&[&peer[..], &["--bitcoin-transport", "v3"]].concat());
    assert!(e.contains("takes auto"), "{e}");
    let e = refused(&["--sequencer-da-pubkey", "02ab"]);
    assert!(e.contains("66 hex digits"), "{e}");
    let e = refused_line(&format!("--network=mainnet {WITH_RPC}"));
    assert!(e.contains("has no DA keys"), "{e}");
}

/// A value every setting takes, and what else it needs (TOML: '' quotes a string).
fn sample(flag: &str) -> (&'static str, &'static str) {
    let with_rpc =
        "upstream = 'http://u:1'\nbitcoin-rpc = 'http://b:2'\nbitcoin-rpc-cookie = 'c'\n";
    let dev_rpc = "dev = true\ndev-bitcoin-rpc = 'http://127.0.0.1:1'\n";
    let with_peer = "upstream = 'http://u:1'\nbitcoin-peer = ['127.0.0.1:18444']\n";
    let user = "bitcoin-rpc-user = 'u'\ndev = true\ndev-bitcoin-rpc = 'http://h:1'\n";
    let password = "bitcoin-rpc-password = 'p'\ndev = true\ndev-bitcoin-rpc = 'http://h:1'\n";
    let ca = concat!(
        "'",
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/upstream_ca.pem'"
    );
    let cargo_toml = concat!("'", env!("CARGO_MANIFEST_DIR"), "/Cargo.toml'");
    match flag {
        "bind" => ("'127.0.0.1:0'", ""),
        "data-dir" => ("'/tmp/x'", ""),
        "upstream" => ("['http://127.0.0.1:1']", ""),
        "upstream-ca" => (ca, "upstream = 'https://127.0.0.1:1'\n"),
        "upstream-max-rps" => ("5", "upstream = 'http://127.0.0.1:1'\n"),
        "sequencer-pubkey" => (
            "'92c5f7b9205a71b792b99c372c49d4d5256bb0d4a6db095520586d4330a15503'",
            "",
        ),
        "network" => ("'testnet'", ""),
        "cors-origin" => ("'http://127.0.0.1:8080'", ""),
        "wire" => ("'citrea'", ""),
        "batch-proof-image" => (
            "['kumquat=50757c7c24e165267d92794e59aca4e57758f3ac87cd20c512894aed4b87d4ff']",
            "",
        ),
        "to-l2" | "to-l1" => ("5", "data-dir = '/tmp/x'\n"),
        "log-format" => ("'json'", ""),
        "bitcoin-peer" => ("['127.0.0.1:18444']", "upstream = 'http://u:1'\n"),
        "bitcoin-p2p" => ("true", "upstream = 'http://u:1'\nnetwork = 'testnet'\n"),
        "bitcoin-dns-seed" => (
            "['localhost']",
            "upstream = 'http://u:1'\nnetwork = 'testnet'\nbitcoin-p2p = true\n",
        ),
        "bitcoin-discover" => ("true", with_peer),
        "bitcoin-max-peers" => ("5", with_peer),
        "bitcoin-transport" => ("'v1'", with_peer),
        "bitcoin-chain" => ("'testnet4'", with_rpc),
        "dry-run" => ("true", "data-dir = '/tmp/x'\nto-l2 = 5\n"),
        "dev-bitcoin-rpc" => (
            "'http://127.0.0.1:1'",
            "dev = true\nbitcoin-rpc-cookie = 'c'\n",
        ),
        "bitcoin-rpc" => (
            "'http://127.0.0.1:1'",
            "upstream = 'http://u:1'\nbitcoin-rpc-cookie = 'c'\n",
        ),
        "bitcoin-rpc-user" => ("'u'", password),
        "bitcoin-rpc-password" => ("'p'", user),
        "bitcoin-rpc-password-file" => (cargo_toml, user),
        "bitcoin-rpc-cookie" => ("'c'", dev_rpc),
        "bitcoin-finality-depth" => ("5", with_rpc),
        // Citrea testnet's DA keys: the defaults (regtest's) would change nothing.
        "sequencer-da-pubkey" => (
            "'03015a7c4d2cc1c771198686e2ebef6fe7004f4136d61f6225b061d1bb9b821b9b'",
            with_rpc,
        ),
        "prover-da-pubkey" => (
            "'0357d255ab93638a2d880787ebaadfefdfc9bb51a26b4a37e5d588e04e54c60a42'",
            with_rpc,
        ),
        f if f.starts_with("dev-") => ("5", "dev = true\n"),
        _ => ("5", ""),
    }
}

/// Every setting of every command: the command, the flag, its long name.
fn settings(cmd: &clap::Command) -> Vec<(&clap::Command, &clap::Arg, &str)> {
    cmd.get_subcommands()
        .flat_map(|sub| sub.get_arguments().map(move |a| (sub, a)))
        .filter_map(|(sub, a)| Some((sub, a, a.get_long()?)))
        .filter(|(_, _, long)| !env::NOT_SETTINGS.contains(long))
        .collect()
}

/// The FILE argument `ledgerd {sub}` needs, if any.
fn file_arg(sub: &str) -> &'static [&'static str] {
    match sub {
        "import" | "verify" | "verify-proof" | "verify-headers" => &["f"],
        _ => &[],
    }
}

/// What `--{long}` of `ledgerd {sub}` is set to in a test file, and the
/// other settings it needs: a switch is set by `true`, a value by its
/// sample; a rollback needs its target and its data dir whatever else is set.
fn sample_setting(sub: &str, arg: &clap::Arg) -> (&'static str, &'static str) {
    let long = arg.get_long().unwrap_or_default();
    let (value, needs) = sample(long);
    let value = match arg.get_action() {
        clap::ArgAction::SetTrue => "true",
        _ => value,
    };
    let needs = match (sub, long) {
        ("rollback", "data-dir") => "to-l2 = 5\n",
        ("rollback", "to-l2" | "to-l1" | "dry-run") => needs,
        ("rollback", _) => "data-dir = '/tmp/x'\nto-l2 = 5\n",
        _ => needs,
    };
    (value, needs)
}

#[test]
fn every_setting_of_every_command_is_a_config_file_key_and_a_variable() {
    let cmd = env::prepare(<Cli as clap::CommandFactory>::command());
    let mut seen = 0;
    for (sub, arg, long) in settings(&cmd) {
        assert_eq!(
            arg.get_env().and_then(|e| e.to_str()),
            Some(env::env_name(long).as_str()),
            "--{long}'s variable"
        );
        let name = sub.get_name();
        let (value, needs) = sample_setting(name, arg);
        let text = format!("{long} = {value}\n{needs}");
        let args = file_arg(name);
        let printed = match with_file(Some(name), &text, &[args, &["--print-config"]].concat()) {
            Ok(Command::PrintConfig(text)) => text,
            other => panic!("{name} --{long}: {other:?}"),
        };
        // A secret's line is a comment that names where it is set.
        let line = printed
            .lines()
            .find(|l| {
                l.starts_with(&format!("{long} = "))
                    || l.starts_with(&format!("# {long} = (a secret, not printed) # file "))
            })
            .unwrap_or_else(|| panic!("{name} --{long}:\n{printed}"));
        assert!(line.contains("file "), "{name} --{long}: {line}");
        // And the command takes it so set (the cross-flag checks pass).
        if name == "serve-readonly" {
            continue; // it refuses a chain source's flags, by design
        }
        let taken = with_file(Some(name), &text, args);
        assert!(taken.is_ok(), "{name} --{long}: {taken:?}");
        seen += 1;
    }
    assert!(seen > 60, "{seen} settings over the commands");
}

#[test]
fn print_config_says_where_each_value_came_from_and_never_prints_the_password() {
    let text = "[server]\nbind = \"127.0.0.1:0\"\n";
    let flags = "--max-batch 7 --dev --dev-bitcoin-rpc=http://h:1 --bitcoin-rpc-user=u \
                 --bitcoin-rpc-password=hunter2";
    let Ok(Command::PrintConfig(out)) = with_file(Some("config"), text, &words(flags)) else {
        panic!("not a print")
    };
    assert!(
        out.contains("\n[server]\nbind = \"127.0.0.1:0\" # file "),
        "{out}"
    );
    assert!(out.contains("max-batch = 7 # flag --max-batch\n"), "{out}");
    assert!(
        out.contains("\n# max-connections = 100 # default\n"),
        "{out}"
    );
    assert!(out.contains("dev = true # flag --dev\n"), "{out}");
    assert!(
        out.contains(
            "\n# bitcoin-rpc-password = (a secret, not printed) # flag --bitcoin-rpc-password\n"
        ),
        "{out}"
    );
    assert!(!out.contains("********"), "{out}");
    assert!(out.contains("# network: not set\n"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    // What it prints is a config file that sets the same (the password aside).
    let printed: Vec<&str> = out.lines().filter(|l| !l.contains("bitcoin")).collect();
    let again = run_with_file(&printed.join("\n"), &[]);
    assert_eq!((again.bind.as_str(), again.max_batch), ("127.0.0.1:0", 7));
    assert!(again.source.devnet().is_some());
}

#[test]
fn network_and_kumquat_height_make_the_fork_table_and_the_key() {
    let c = run(&[]).chain;
    assert_eq!(c.forks(), ForkTable::KUMQUAT_ONLY);
    assert_eq!(c.sequencer_key(), None);
    assert_eq!(c.sequencer_key_name(), "key of the first block");
    let c = run_line("--upstream http://x --network testnet").chain;
    assert_eq!(c.forks(), ForkTable::kumquat_from(5_546_000));
    assert_eq!(c.sequencer_key(), Network::Testnet.sequencer_key());
    assert_eq!(c.sequencer_key_name(), "testnet key");
    // --kumquat-height and --sequencer-pubkey override the network's.
    let key = "92c5f7b9205a71b792b99c372c49d4d5256bb0d4a6db095520586d4330a15503";
    let c = run_line(&format!(
        "--network=devnet --kumquat-height 7 --sequencer-pubkey {key}"
    ))
    .chain;
    assert_eq!(c.forks(), ForkTable::kumquat_from(7));
    assert_eq!(c.sequencer_key().map(hex::encode).as_deref(), Some(key));
    assert_eq!(c.sequencer_key_name(), "--sequencer-pubkey key");
    // Mainnet: Kumquat from 0, and no key in v0.6.2: the first block's.
    let c = run(&["--network", "mainnet"]).chain;
    assert_eq!(
        (c.forks(), c.sequencer_key()),
        (ForkTable::KUMQUAT_ONLY, None)
    );
    let c = run(&["--dev", "--kumquat-height", "50"]).chain;
    assert_eq!(c.forks().fork_at(49), crate::chain_rules::Fork::Genesis);
    let e = refused(&["--network", "signet"]);
    assert!(e.contains("--network: unknown network \"signet\""), "{e}");
    let e = refused(&["--dev", "--network", "testnet"]);
    assert!(e.contains("--kumquat-height"), "{e}");
    let e = refused(&["--kumquat-height", "x"]);
    assert!(e.contains("--kumquat-height takes"), "{e}");
}

#[test]
fn import_and_verify_take_the_chain_rule_flags() {
    let Command::Import(i) = command("import f.jsonl --network testnet") else {
        panic!("not an import")
    };
    assert_eq!(i.options.forks, ForkTable::kumquat_from(5_546_000));
    assert_eq!(i.options.sequencer_pubkey, Network::Testnet.sequencer_key());
    let Command::Verify(v) = command("verify --kumquat-height 3 -") else {
        panic!("not a verify")
    };
    assert_eq!(v.file, PathBuf::from("-"));
    assert_eq!(
        (v.options.forks, v.options.sequencer_key),
        (ForkTable::kumquat_from(3), None)
    );
    let e = refused_command("verify");
    assert!(e.contains("verify needs a FILE"), "{e}");
    let e = refused_command("verify a b");
    assert!(e.contains("verify takes one FILE"), "{e}");
    let e = refused_command("verify - --no-verify");
    assert!(
        e.contains("--no-verify does not apply to `ledgerd verify`"),
        "{e}"
    );
}

#[test]
fn subcommands_take_their_own_flags() {
    let Command::Import(i) = command("import - --no-verify --data-dir d") else {
        panic!("not an import")
    };
    assert_eq!(
        (i.file.to_str(), i.options.verify, i.data_dir.to_str()),
        (Some("-"), false, Some("d"))
    );
    let Command::Export(x) = command("export --to 9") else {
        panic!("not an export")
    };
    assert_eq!((x.from, x.to), (1, Some(9)));
    let c = node(command("serve-readonly --reuse-port"));
    assert!(c.read_only && c.server.reuse_port && c.source.devnet().is_none());
    let e = refused_command("serve --dev");
    assert!(e.contains("unknown command \"serve\""), "{e}");
    let e = refused_command("--from 3");
    assert!(e.contains("--from does not apply to `ledgerd run`"), "{e}");
    let e = refused_command("export --dev");
    assert!(
        e.contains("--dev does not apply to `ledgerd export`"),
        "{e}"
    );
}

#[test]
fn help_and_version_are_commands_of_their_own() {
    let Command::Help(text) = command("--help") else {
        panic!("not help")
    };
    for part in [
        "Chain source:",
        "Devnet:",
        "Server:",
        "--data-dir <DIR>",
        "[default: 127.0.0.1:12346]",
        "[env: LEDGERD_BIND=]",
        "serve-readonly",
    ] {
        assert!(text.contains(part), "{part}:\n{text}");
    }
    assert!(matches!(command("-V"), Command::Version));
}

#[test]
fn batch_proof_image_pins_a_chain_without_a_name_and_the_devnet_and_a_network_keep_their_own() {
    use crate::proof::image_ids::{TESTNET_BATCH_0, TESTNET_BATCH_1};
    use crate::proof::Images;
    let k = format!("kumquat={}", hex::encode(TESTNET_BATCH_1));
    let g = format!("genesis={}", hex::encode(TESTNET_BATCH_0));
    let c = run(&["--upstream", "http://x"]);
    assert_eq!(c.receipt_rules().images, Images::Unpinned);
    let c = run(&["--upstream", "http://x", "--batch-proof-image", &k]);
    let pins = c.batch_proof_images;
    assert_eq!((pins.kumquat, pins.genesis), (Some(TESTNET_BATCH_1), None));
    assert_eq!(c.receipt_rules().images, Images::Pinned(pins));
    let c = run_line(&format!(
        "--upstream http://x --batch-proof-image {k} --batch-proof-image={g}"
    ));
    assert_eq!(c.batch_proof_images.genesis, Some(TESTNET_BATCH_0));
    // A comma list (as the variable gives it) pins both too.
    let c = run_line(&format!("--upstream http://x --batch-proof-image {k},{g}"));
    assert_eq!(
        (c.batch_proof_images.kumquat, c.batch_proof_images.genesis),
        (Some(TESTNET_BATCH_1), Some(TESTNET_BATCH_0))
    );
    assert_eq!(run(&["--dev"]).receipt_rules().images, Images::Devnet);
    let e = refused(&["--dev", "--batch-proof-image", &k]);
    assert!(e.contains("the devnet's proofs claim its own image"), "{e}");
    // A network's own image may be repeated, not contradicted; nightly
    // has none, so a pin fills it.
    assert!(try_run(&["--network", "testnet", "--batch-proof-image", &k]).is_ok());
    let e = refused(&["--network", "devnet", "--batch-proof-image", &k]);
    assert!(e.contains("--network devnet pins its own"), "{e}");
    let c = run(&["--network", "nightly", "--batch-proof-image", &k]);
    assert!(matches!(c.receipt_rules().images, Images::Network(_, p) if p.kumquat.is_some()));
    let e = refused(&["--batch-proof-image", "kumquat=12"]);
    assert!(e.contains("64 hex digits"), "{e}");
    let other = format!("kumquat={}", hex::encode(TESTNET_BATCH_0));
    let e = refused(&["--batch-proof-image", &k, "--batch-proof-image", &other]);
    assert!(e.contains("pins the kumquat image twice"), "{e}");
    let Command::VerifyProof(v) = command(&format!("verify-proof --batch-proof-image {k} -"))
    else {
        panic!("verify-proof")
    };
    assert_eq!(v.options.rules.images, Images::Pinned(pins));
}

#[test]
fn rollback_takes_one_target_and_a_data_dir() {
    let Command::Rollback(r) = command("rollback --data-dir /d --to-l2 100 --dry-run") else {
        panic!("expected a rollback")
    };
    assert_eq!(
        r,
        Rollback {
            data_dir: PathBuf::from("/d"),
            to: crate::rollback::Target::L2(100),
            dry_run: true
        }
    );
    let Command::Rollback(r) = command("rollback --data-dir=/d --to-l1=7") else {
        panic!("expected a rollback")
    };
    assert_eq!((r.to, r.dry_run), (crate::rollback::Target::L1(7), false));
    let e = refused_command("rollback --data-dir /d");
    assert!(e.contains("needs a target"), "{e}");
    let e = refused_command("rollback --data-dir /d --to-l2 1 --to-l1 2");
    assert!(e.contains("not both"), "{e}");
    let e = refused_command("rollback --to-l2 1");
    assert!(e.contains("needs --data-dir"), "{e}");
    let e = refused_command("--to-l2 1");
    assert!(e.contains("does not apply to `ledgerd run`"), "{e}");
}

#[test]
fn ephemeral_runs_without_a_data_dir() {
    let c = run(&["--dev", "--ephemeral"]);
    assert!(c.ephemeral);
    assert!(!run(&["--dev"]).ephemeral);
    let e = refused(&["--dev", "--ephemeral", "--data-dir", "/d"]);
    assert!(e.contains("drop --data-dir"), "{e}");
    let e = refused_command("serve-readonly --ephemeral");
    assert!(e.contains("does not apply"), "{e}");
}

#[test]
fn bitcoin_chain_defaults_to_the_networks_and_applies_with_bitcoin_rpc() {
    use crate::headers::BitcoinNetwork;
    let chain_of = |extra: &str| bitcoin(&run_line(&format!("{WITH_RPC} {extra}"))).chain;
    assert_eq!(chain_of(""), BitcoinNetwork::Regtest);
    assert_eq!(chain_of("--network testnet"), BitcoinNetwork::Testnet4);
    assert_eq!(chain_of("--network devnet"), BitcoinNetwork::Signet);
    let given = chain_of("--network testnet --bitcoin-chain signet");
    assert_eq!(given, BitcoinNetwork::Signet);
    let e = refused_line(&format!("{WITH_RPC} --bitcoin-chain testnet3"));
    assert!(e.contains("main, testnet4, signet or regtest"), "{e}");
    let e = refused(&["--upstream", "http://u:1", "--bitcoin-chain", "main"]);
    assert!(e.contains("only applies with --bitcoin-rpc"), "{e}");
}

#[test]
fn verify_headers_takes_a_file_a_chain_and_a_start_height() {
    use crate::headers::BitcoinNetwork;
    let line = "verify-headers --bitcoin-chain main --start-height 40310 h.txt";
    let Command::VerifyHeaders(a) = command(line) else {
        panic!("not a verify-headers")
    };
    assert_eq!(a.chain, BitcoinNetwork::Main);
    assert_eq!(a.start_height, Some(40310));
    assert_eq!(a.file, PathBuf::from("h.txt"));
    let e = refused_command("verify-headers");
    assert!(e.contains("verify-headers needs a FILE"), "{e}");
    let e = refused(&["--start-height", "5"]);
    assert!(e.contains("does not apply"), "{e}");
}

#[test]
fn bitcoin_peer_is_repeatable_needs_no_credentials_and_takes_host_and_port() {
    use crate::source::bitcoin::rpc::client::Credentials;
    let c = run_line(
        "--upstream http://u:1 --bitcoin-peer 127.0.0.1:18444 \
         --bitcoin-peer=node.example:8333 --bitcoin-finality-depth=1",
    );
    let b = bitcoin(&c);
    assert_eq!(b.url, None);
    assert_eq!(b.peers, ["127.0.0.1:18444", "node.example:8333"]);
    assert_eq!(b.credentials, Credentials::None);
    assert_eq!(b.finality_depth, 1);
    // A comma list, as the variable gives it.
    let c = run_line("--upstream=http://u:1 --bitcoin-peer=127.0.0.1:18444,node.example:8333");
    assert_eq!(bitcoin(&c).peers, ["127.0.0.1:18444", "node.example:8333"]);
    // Beside bitcoind's RPC too.
    let c = run_line(&format!("{WITH_RPC} --bitcoin-peer=127.0.0.1:18444"));
    let b = bitcoin(&c);
    assert_eq!((b.url.as_deref(), b.peers.len()), (Some("http://b:2"), 1));

    for bad in [
        "127.0.0.1",
        "http://127.0.0.1:18444",
        ":18444",
        "h:0",
        "h:x",
    ] {
        let e = refused(&["--upstream=http://u:1", "--bitcoin-peer", bad]);
        assert!(e.contains("HOST:PORT"), "{bad}: {e}");
    }
    let e = refused(&["--bitcoin-peer", "127.0.0.1:18444"]);
    assert!(e.contains("--bitcoin-peer reads the DA layer"), "{e}");
    let e = refused_line("--upstream=http://u:1 --bitcoin-peer=h:1 --bitcoin-rpc-cookie=c");
    assert!(e.contains("only apply with --bitcoin-rpc"), "{e}");
}

#[test]
fn bitcoin_discover_follows_the_network_unless_given_either_way_on_the_command_line() {
    let peer = "--upstream=http://u:1 --bitcoin-peer=127.0.0.1:18444";
    let discover = |extra: &str| bitcoin(&run_line(&format!("{peer} {extra}"))).discover;
    assert!(discover("--network=testnet"));
    assert!(!discover(""), "regtest's default");
    for (given, want) in [
        ("--bitcoin-discover", true),
        ("--bitcoin-discover=true", true),
        ("--bitcoin-discover=false", false),
        ("--bitcoin-discover=off", false),
    ] {
        assert_eq!(
            discover(&format!("--network=testnet {given}")),
            want,
            "{given}"
        );
        assert_eq!(discover(given), want, "{given} on regtest");
    }
    // `=` is needed: the next word is never taken as its value.
    let e = refused_line(&format!("{peer} --bitcoin-discover false"));
    assert!(e.contains("'false'"), "{e}");
    let e = refused_line(&format!("{peer} --bitcoin-discover=maybe"));
    assert!(e.contains("is a switch"), "{e}");
}

#[test]
fn log_format_is_text_unless_json_is_asked_for() {
    assert_eq!(run(&[]).log_format, LogFormat::Text);
    assert_eq!(run(&["--log-format", "json"]).log_format, LogFormat::Json);
    assert_eq!(run(&["--log-format=text"]).log_format, LogFormat::Text);
    let e = refused(&["--log-format", "yaml"]);
    assert!(e.contains("--log-format takes text or json"), "{e}");
}

/// Each flag a command takes reaches what it does: the command resolved
/// with the flag (and what it needs) is not the one resolved without it.
#[test]
fn every_flag_a_command_takes_changes_what_it_does() {
    let cmd = env::prepare(<Cli as clap::CommandFactory>::command());
    let mut seen = 0;
    for (sub, arg, long) in settings(&cmd) {
        let name = sub.get_name();
        if name == "config" {
            continue; // it takes run's flags, and prints them
        }
        let (value, needs) = sample_setting(name, arg);
        let resolved = |text: &str| format!("{:?}", with_file(Some(name), text, file_arg(name)));
        let without = resolved(needs);
        let with = resolved(&format!("{long} = {value}\n{needs}"));
        assert!(
            !with.starts_with("Err"),
            "`ledgerd {name}` refuses --{long} = {value}: {with}"
        );
        assert_ne!(
            with, without,
            "`ledgerd {name}` takes --{long} but does nothing with it"
        );
        seen += 1;
    }
    assert!(seen > 60, "{seen} flags over the commands");
}
