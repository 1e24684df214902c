//! The configuration as an operator meets it, on the real binary: every
//! setting by flag, `LEDGERD_*` variable and TOML key, flag over variable
//! over file over default; the help, docs/OPERATIONS.md and the parser
//! naming the same flags; a password kept off the command line, the logs
//! and `/health`.

use crate::common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use clap::CommandFactory;
use common::process::BIN;
use common::{call_raw, Ledgerd};
use ledgerd::cmd::Cli;
use ledgerd::config::env::{env_name, prepare, NOT_SETTINGS};
use ledgerd::flags::heading;

/// The commands and their settings (long names), as the parser has them.
fn parser() -> Vec<(String, Vec<clap::Arg>)> {
    let cmd = prepare(Cli::command());
    cmd.get_subcommands()
        .map(|s| {
            let args = s
                .get_arguments()
                .filter(|a| a.get_long().is_some_and(|l| !NOT_SETTINGS.contains(&l)))
                .cloned()
                .collect();
            (s.get_name().to_string(), args)
        })
        .collect()
}

/// `ledgerd ARGS` with only `env` (and PATH) in its environment.
fn ledgerd(args: &[&str], env: &[(String, String)]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .output()
        .expect("run ledgerd");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The flags at the start of `--help`'s option lines.
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-h, ")
                .or(l.strip_prefix("-V, "))
                .unwrap_or(l);
            let flag = l.strip_prefix("--")?;
            Some(flag.split([' ', ',', '[']).next()?.to_string())
        })
        .collect()
}

#[test]
fn the_help_the_docs_and_the_parser_name_the_same_flags() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/OPERATIONS.md"))
        .expect("docs/OPERATIONS.md");
    // The flag table: | `--flag VALUE` | `LEDGERD_FLAG` | `[section] key` | default | meaning |
    let mut documented = BTreeSet::new();
    for row in docs.lines().filter(|l| l.starts_with("| `--")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let flag = cells[0].trim_start_matches("| `--");
        let flag = flag.split([' ', '`']).next().unwrap().to_string();
        if !NOT_SETTINGS.contains(&flag.as_str()) {
            assert_eq!(cells[1], format!("`{}`", env_name(&flag)), "{row}");
        }
        documented.insert(flag);
    }
    let mut parsed = BTreeSet::new();
    let mut helped = BTreeSet::new();
    let (ok, top, _) = ledgerd(&["--help"], &[]);
    assert!(ok);
    helped.extend(flags_in_help(&top));
    for (name, args) in parser() {
        let (ok, help, err) = ledgerd(&[&name, "--help"], &[]);
        assert!(ok, "{name} --help: {err}");
        let in_help = flags_in_help(&help);
        for arg in &args {
            let long = arg.get_long().unwrap().to_string();
            assert!(
                in_help.contains(&long),
                "`ledgerd {name} --help` lacks --{long}"
            );
            // Its TOML key, under its heading's section.
            let section = heading::section(arg.get_help_heading().unwrap_or(""));
            let row = docs
                .lines()
                .find(|l| l.starts_with(&format!("| `--{long}")))
                .unwrap_or_else(|| panic!("docs/OPERATIONS.md has no row for --{long}"));
            assert!(row.contains(&format!("`[{section}] {long}`")), "{row}");
            parsed.insert(long);
        }
        helped.extend(in_help);
    }
    for meta in ["help", "version", "config", "print-config", "convert"] {
        parsed.insert(meta.to_string());
    }
    assert_eq!(
        documented, parsed,
        "docs/OPERATIONS.md's flag table and the parser"
    );
    assert_eq!(helped, parsed, "--help and the parser");

    // Each command's row of flags: | `ledgerd NAME` | `--a` `--b` ... |, as its --help lists them.
    let mut rows = 0;
    for row in docs.lines().filter(|l| l.starts_with("| `ledgerd ")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        if cells.len() < 2 || !cells[1].starts_with("`--") {
            continue;
        }
        let name = cells[0]
            .trim_start_matches("| `ledgerd ")
            .trim_end_matches('`');
        let documented: BTreeSet<String> = cells[1]
            .trim_end_matches(" |")
            .split_whitespace()
            .map(|f| f.trim_matches('`').trim_start_matches("--").to_string())
            .collect();
        let (ok, help, err) = ledgerd(&[name, "--help"], &[]);
        assert!(ok, "{name}: {err}");
        let mut in_help = flags_in_help(&help);
        in_help.remove("help");
        assert_eq!(
            documented, in_help,
            "docs/OPERATIONS.md's flags of `ledgerd {name}` and its --help"
        );
        rows += 1;
    }
    assert_eq!(rows, parser().len(), "a row of flags for every command");
}

/// Three values `arg` takes, different from each other and its default.
fn values(arg: &clap::Arg) -> [String; 3] {
    let families: [[&str; 3]; 13] = [
        ["3", "4", "5"],
        ["testnet", "devnet", "mainnet"],
        ["citrea", "seed", "ledgerd"],
        ["http://a:1", "http://b:2", "http://c:3"],
        [
            "52f41a5076498d1ae8bdfa57d19e91e3c2c94b6de21985d099cd48cfa7aef174",
            "4682a70af1d3fae53a5a26b682e2e75f7a1de21ad5fc8d61794ca889880d39d1",
            "92c5f7b9205a71b792b99c372c49d4d5256bb0d4a6db095520586d4330a15503",
        ],
        [
            "02588d202afcc1ee4ab5254c7847ec25b9a135bbda0f2bc69ee1a714749fd77dc9",
            "03eedab888e45f3bdc3ec9918c491c11e5cf7af0a91f38b97fbc1e135ae4056601",
            ledgerd::source::bitcoin::keys::TESTNET.sequencer,
        ],
        ["*", "http://a:1", "https://b"],
        [
            "kumquat=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "kumquat=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
            "genesis=cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
        ],
        ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"],
        ["main", "signet", "testnet4"],
        ["json", "text", "json"],
        ["v1", "v2", "v1"],
        [
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/upstream_ca.pem"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/upstream_ca_2.pem"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/upstream_ca_3.pem"),
        ],
    ];
    let long = arg.get_long().unwrap();
    let takes = |v: &str| {
        clap::Command::new("x")
            .no_binary_name(true)
            .arg(arg.clone())
            .try_get_matches_from([format!("--{long}={v}")])
            .is_ok()
    };
    families
        .iter()
        .find(|f| f.iter().all(|v| takes(v)))
        .unwrap_or_else(|| panic!("no sample values for --{:?}", arg.get_long()))
        .map(String::from)
}

fn is_switch(arg: &clap::Arg) -> bool {
    ledgerd::flags::is_switch(arg)
}

/// A TOML value.
fn toml(arg: &clap::Arg, v: &str) -> String {
    if is_switch(arg) || v.bytes().all(|b| b.is_ascii_digit()) {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

/// `ledgerd NAME [FILE] --print-config`'s line for each setting.
fn printed(
    name: &str,
    flags: &[String],
    env: &[(String, String)],
    file: Option<&str>,
) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledgerd.toml");
    let mut args: Vec<String> = vec![name.to_string()];
    if matches!(name, "import" | "verify" | "verify-proof") {
        args.push("-".into());
    }
    if let Some(text) = file {
        std::fs::write(&path, text).unwrap();
        args.extend(["--config".into(), path.display().to_string()]);
    }
    args.extend(flags.iter().cloned());
    args.push("--print-config".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out, err) = ledgerd(&args, env);
    assert!(ok, "{args:?}: {err}");
    assert!(!out.contains("hunter"), "a password printed:\n{out}");
    out.lines().map(str::to_string).collect()
}

#[test]
fn every_setting_comes_from_a_flag_a_variable_or_the_file_in_that_order() {
    for (name, args) in parser() {
        // value[0] in the file, value[1] in the environment, value[2] on the command line.
        let mut file = String::new();
        let mut env = Vec::new();
        let mut flags = Vec::new();
        for arg in &args {
            let long = arg.get_long().unwrap();
            let v = if is_switch(arg) {
                ["false", "true", ""].map(String::from)
            } else if long.contains("password") && !long.ends_with("file") {
                ["hunter0", "hunter1", "hunter2"].map(String::from)
            } else {
                values(arg)
            };
            file.push_str(&format!("{long} = {}\n", toml(arg, &v[0])));
            env.push((env_name(long), v[1].clone()));
            flags.push(if is_switch(arg) {
                format!("--{long}")
            } else {
                format!("--{long}={}", v[2])
            });
        }
        let line_of = |lines: &[String], long: &str| {
            lines
                .iter()
                .find(|l| {
                    l.starts_with(&format!("{long} = "))
                        || l.starts_with(&format!("# {long} = (a secret, not printed) # "))
                })
                .cloned()
                .unwrap_or_else(|| panic!("{name}: no line for {long} in {lines:#?}"))
        };
        let only_file = printed(&name, &[], &[], Some(&file));
        let only_env = printed(&name, &[], &env, None);
        let only_flags = printed(&name, &flags, &[], None);
        let file_env = printed(&name, &[], &env, Some(&file));
        let all = printed(&name, &flags, &env, Some(&file));
        for arg in &args {
            let long = arg.get_long().unwrap();
            let var = env_name(long);
            let f = line_of(&only_file, long);
            assert!(f.contains("# file "), "{name}: {f}");
            let e = line_of(&only_env, long);
            assert!(e.ends_with(&format!("# env {var}")), "{name}: {e}");
            let c = line_of(&only_flags, long);
            assert!(c.ends_with(&format!("# flag --{long}")), "{name}: {c}");
            assert!(
                line_of(&file_env, long).ends_with(&format!("# env {var}")),
                "{name} {long}: the variable wins over the file"
            );
            assert!(
                line_of(&all, long).ends_with(&format!("# flag --{long}")),
                "{name} {long}: the flag wins over both"
            );
            if !long.contains("password") || long.ends_with("file") {
                let v = if is_switch(arg) {
                    "true".to_string()
                } else {
                    values(arg)[1].clone()
                };
                assert!(
                    line_of(&file_env, long).contains(&v),
                    "{name}: the variable's value: {}",
                    line_of(&file_env, long)
                );
            }
        }
    }
}

#[test]
fn a_node_takes_each_setting_from_the_flag_else_the_variable_else_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("from-file");
    let conf = tmp.path().join("ledgerd.toml");
    std::fs::write(
        &conf,
        format!(
            "[chain-source]\ndev = true\n[devnet]\ndev-prefill = 30\ndev-block-ms = 0\n\
             [ledger]\ndata-dir = {:?}\n[server]\nmax-range = 5\nmax-batch = 2\n",
            data.display().to_string()
        ),
    )
    .unwrap();
    let node = Ledgerd::builder()
        .data_dir_from_args()
        .env("LEDGERD_CONFIG", conf.to_str().unwrap())
        .env("LEDGERD_MAX_RANGE", "7")
        .env("LEDGERD_MAX_BATCH", "1")
        .args(&["--max-batch", "3"])
        .start();
    assert!(
        data.join("data.mdb").exists(),
        "the data dir came from the file"
    );
    let range = |to: u64| {
        call_raw(
            &node.url,
            "ledger_getSoftConfirmationRange",
            &format!("[1,{to}]"),
        )
    };
    assert!(
        !range(7).contains("\"error\""),
        "max-range 7 from the variable, over the file's 5"
    );
    assert!(range(8).contains("\"error\""), "{}", range(8));
    let batch = |n: usize| {
        let one = r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}"#;
        let body = format!("[{}]", vec![one; n].join(","));
        common::http::request(node.addr, "POST", "/", &[], &body).text()
    };
    assert!(
        !batch(3).contains("-32600") && batch(3).matches("\"result\":30").count() == 3,
        "{}",
        batch(3)
    );
    assert!(
        batch(4).contains("\"error\""),
        "max-batch 3 from the flag: {}",
        batch(4)
    );
}

#[test]
fn a_file_that_is_not_toml_is_refused_and_config_convert_reads_the_old_form() {
    let tmp = tempfile::tempdir().unwrap();
    // The issue's file: a quote left open. It was read as the old form,
    // with a warning, and the node failed later on a bind address with a quote.
    let broken = tmp.path().join("c9.toml");
    std::fs::write(&broken, "dev = true\nbind = \"127.0.0.1:18798\n").unwrap();
    let (ok, out, err) = ledgerd(&["config", "--config", broken.to_str().unwrap()], &[]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(
        err.contains(&format!(
            "config file {} line 2, column 24: not TOML: ",
            broken.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`ledgerd config --convert {} > new.toml`",
            broken.display()
        )),
        "{err}"
    );
    assert!(!err.contains("WARN"), "{err}");
    // A key given twice.
    let twice = tmp.path().join("twice.toml");
    std::fs::write(&twice, "dev = true\nmax-range = 4\ndev = true\n").unwrap();
    let (ok, _, err) = ledgerd(&["--config", twice.to_str().unwrap()], &[]);
    assert!(!ok);
    assert!(
        err.contains("line 3, column 1: not TOML: duplicate key"),
        "{err}"
    );

    // The old form, converted by the command the sentence names.
    let old = tmp.path().join("ledgerd.conf");
    std::fs::write(
        &old,
        "# old form\ndev = true\nmax-range = 4\nbind = 127.0.0.1:0\n",
    )
    .unwrap();
    let (ok, _, err) = ledgerd(&["config", "--config", old.to_str().unwrap()], &[]);
    assert!(!ok && err.contains("it would read in the older"), "{err}");
    let (ok, toml, err) = ledgerd(&["config", "--convert", old.to_str().unwrap()], &[]);
    assert!(ok, "{err}");
    assert!(err.is_empty(), "{err}");
    assert!(toml.contains("max-range = 4 # file "), "{toml}");
    assert!(toml.contains("bind = \"127.0.0.1:0\" # file "), "{toml}");
    let new = tmp.path().join("new.toml");
    std::fs::write(&new, &toml).unwrap();
    let (ok, again, err) = ledgerd(&["config", "--config", new.to_str().unwrap()], &[]);
    assert!(ok, "{err}");
    assert_eq!(settings(&again), settings(&toml));
}

/// The `key = value` lines of `ledgerd config`'s output, without their
/// source comments.
fn settings(printed: &str) -> Vec<String> {
    printed
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" = "))
        .map(|l| {
            l.rsplit_once(" # ")
                .map_or(l, |(setting, _)| setting)
                .to_string()
        })
        .collect()
}

#[test]
fn what_ledgerd_config_prints_gives_the_same_settings_fed_back() {
    for (name, args) in parser() {
        // Every setting from the environment (a password too).
        let mut env = Vec::new();
        for arg in &args {
            let long = arg.get_long().unwrap();
            let v = if is_switch(arg) {
                "true".to_string()
            } else if long.contains("password") && !long.ends_with("file") {
                "hunter1".to_string()
            } else {
                values(arg)[1].clone()
            };
            env.push((env_name(long), v));
        }
        let first = printed(&name, &[], &env, None).join("\n");
        let again = printed(&name, &[], &[], Some(&first)).join("\n");
        let want = settings(&first);
        assert_eq!(settings(&again), want, "ledgerd {name}: fed back");
        assert_eq!(
            want.len() + usize::from(first.contains("# bitcoin-rpc-password = (a secret")),
            args.len(),
            "ledgerd {name}: every setting printed:\n{first}"
        );
        if args
            .iter()
            .any(|a| a.get_long() == Some("bitcoin-rpc-password"))
        {
            assert!(
                first.contains(
                    "\n# bitcoin-rpc-password = (a secret, not printed) # env \
                     LEDGERD_BITCOIN_RPC_PASSWORD\n"
                ),
                "{name}: {first}"
            );
            assert!(!first.contains("********"), "{first}");
        }
    }
}

#[test]
fn a_password_from_the_environment_or_a_file_stays_off_the_command_line_logs_and_health() {
    let secret = "hunter2-never-shown";
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("rpc-password");
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    // A bitcoind that is not there: the follower starts and keeps retrying.
    let closed = common::free_port();
    let by_file = [
        "--bitcoin-rpc-password-file".to_string(),
        file.display().to_string(),
    ];
    for (env, extra) in [(Some(secret), &[][..]), (None, &by_file[..])] {
        let mut b = Ledgerd::builder().log("debug").args(&[
            "--upstream".to_string(),
            format!("http://127.0.0.1:{closed}"),
            "--bitcoin-rpc".into(),
            format!("http://127.0.0.1:{closed}"),
            "--bitcoin-rpc-user".into(),
            "ledgerd".into(),
        ]);
        b = b.args(extra);
        if let Some(p) = env {
            b = b.env("LEDGERD_BITCOIN_RPC_PASSWORD", p);
        }
        let node = b.start();
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", node.pid())).unwrap();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(cmdline.contains("--bitcoin-rpc-user ledgerd"), "{cmdline}");
        assert!(!cmdline.contains(secret), "{cmdline}");
        let health = common::http::request(node.addr, "GET", "/health", &[], "").text();
        assert!(health.contains("\"status\""), "{health}");
        assert!(!health.contains(secret), "{health}");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (_, log) = node.stop();
        assert!(log.contains("following"), "{log}");
        assert!(!log.contains(secret), "{log}");
    }
    let env = [(
        "LEDGERD_BITCOIN_RPC_PASSWORD".to_string(),
        secret.to_string(),
    )];
    let (ok, out, err) = ledgerd(&["config"], &env);
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "\n# bitcoin-rpc-password = (a secret, not printed) # env LEDGERD_BITCOIN_RPC_PASSWORD\n"
        ),
        "{out}"
    );
    assert!(!out.contains("\nbitcoin-rpc-password = "), "{out}");
    assert!(!out.contains(secret), "{out}");
    let (_, help, _) = ledgerd(&["--help"], &env);
    assert!(!help.contains(secret), "{help}");
}

#[test]
fn a_bad_value_in_a_variable_names_the_variable() {
    let env = [("LEDGERD_MAX_BATCH".to_string(), "lots".to_string())];
    let (ok, out, err) = ledgerd(&["--dev"], &env);
    assert!(!ok && out.is_empty());
    assert_eq!(
        err.trim(),
        "ledgerd: LEDGERD_MAX_BATCH: --max-batch takes a non-negative whole number, not \"lots\""
    );
    // The command line wins, so the variable is not read.
    let (ok, out, err) = ledgerd(&["config", "--max-batch", "4"], &env);
    assert!(ok, "{err}");
    assert!(out.contains("max-batch = 4 # flag --max-batch"), "{out}");
    // A command without the flag does not read its variable.
    let (ok, out, err) = ledgerd(&["export", "--print-config"], &env);
    assert!(ok, "{err}");
    assert!(!out.contains("max-batch"), "{out}");
}

/// A command's help, its flags (settings and the configuration's own),
/// and `ledgerd NAME [FILE]` to put before flags.
fn command_line(name: &str) -> Vec<String> {
    let mut args = vec![name.to_string()];
    if matches!(
        name,
        "import" | "verify" | "verify-proof" | "verify-headers"
    ) {
        args.push("-".into());
    }
    args
}

#[test]
fn each_command_takes_the_flags_its_help_shows_and_refuses_the_others_with_a_pointer() {
    let (ok, top, _) = ledgerd(&["--help"], &[]);
    assert!(ok);
    let top_flags = flags_in_help(&top);
    let top_cmd = prepare(Cli::command());
    let arg_of = |long: &str| {
        std::iter::once(&top_cmd)
            .chain(top_cmd.get_subcommands())
            .flat_map(|c| c.get_arguments())
            .find(|a| a.get_long() == Some(long))
            .cloned()
            .unwrap_or_else(|| panic!("no --{long} in the parser"))
    };
    // `--flag` (a switch) or `--flag=VALUE`.
    let given = |arg: &clap::Arg| {
        let long = arg.get_long().unwrap();
        if is_switch(arg) {
            format!("--{long}")
        } else {
            format!("--{long}={}", values(arg)[0])
        }
    };
    let mut refused = 0;
    for (name, _) in parser() {
        let (ok, help, err) = ledgerd(&[&name, "--help"], &[]);
        assert!(ok, "{err}");
        let in_help = flags_in_help(&help);
        for long in in_help
            .iter()
            .filter(|l| !NOT_SETTINGS.contains(&l.as_str()))
        {
            // Taken: the configuration says it came from the command line.
            let arg = arg_of(long);
            let mut args = command_line(&name);
            args.extend([given(&arg), "--print-config".into()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (ok, out, err) = ledgerd(&args, &[]);
            assert!(ok, "ledgerd {args:?}: {err}");
            assert!(
                out.lines()
                    .any(|l| l.contains(" = ") && l.ends_with(&format!("# flag --{long}"))),
                "ledgerd {args:?}:\n{out}"
            );
        }
        for long in top_flags
            .difference(&in_help)
            .filter(|l| !NOT_SETTINGS.contains(&l.as_str()))
        {
            let arg = arg_of(long);
            let mut args = command_line(&name);
            args.push(given(&arg));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (ok, out, err) = ledgerd(&args, &[]);
            assert!(!ok && out.is_empty(), "ledgerd {args:?} took --{long}");
            assert_eq!(
                err.trim(),
                format!("ledgerd: --{long} does not apply to `ledgerd {name}`; see ledgerd {name} --help"),
                "ledgerd {args:?}"
            );
            refused += 1;
        }
    }
    assert!(refused > 100, "{refused} flags refused over the commands");
    // serve-readonly: no chain source, no chain rules, no devnet, Bitcoin or follower flags.
    let (_, help, _) = ledgerd(&["serve-readonly", "--help"], &[]);
    for absent in [
        "--dev ",
        "--upstream ",
        "--network",
        "--sync-chunk",
        "--bitcoin-rpc",
        "--ephemeral",
    ] {
        assert!(
            !help.contains(absent),
            "serve-readonly --help shows {absent}:\n{help}"
        );
    }
    // verify-headers takes no --network: its help does not send you to one.
    let (_, help, _) = ledgerd(&["verify-headers", "--help"], &[]);
    assert!(!help.contains("--network"), "{help}");
}
