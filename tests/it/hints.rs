//! Mistakes a person makes, and what ledgerd says to them, on the real
//! binary: a slip in a flag, a command, a config key, a `LEDGERD_*`
//! variable or a JSON-RPC method gets the nearest right one; a switch's
//! bad value gets the values it takes; a hash's bad character is shown
//! with its position; an upstream that is a plain web server is named as
//! one; `GET /` names the status page; a bare `ledgerd` with nothing to
//! serve says what to give.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::process::BIN;
use common::Ledgerd;

/// `ledgerd ARGS` with only `env` in its environment: (exit code, stdout, stderr).
fn ledgerd(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run ledgerd");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_slip_in_a_flag_or_a_command_gets_the_nearest_one() {
    let (code, out, err) = ledgerd(&["--dve"], &[]);
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert_eq!(
        err.trim(),
        "ledgerd: unknown argument \"--dve\": did you mean --dev? see ledgerd --help"
    );
    let (code, _, err) = ledgerd(&["export", "--form", "3"], &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown argument \"--form\": did you mean --from? see ledgerd export --help"),
        "{err}"
    );
    let (code, _, err) = ledgerd(&["serv-readonly"], &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown command \"serv-readonly\" (did you mean serve-readonly?)"),
        "{err}"
    );
    // Far from every flag: no guess.
    let (_, _, err) = ledgerd(&["--frobnicate"], &[]);
    assert!(!err.contains("did you mean"), "{err}");
    // A flag of another command points to this command's help.
    let (code, _, err) = ledgerd(&["export", "--bind", "127.0.0.1:0"], &[]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim(),
        "ledgerd: --bind does not apply to `ledgerd export`; see ledgerd export --help"
    );
}

#[test]
fn a_slip_in_a_config_key_or_a_variable_gets_the_nearest_one() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("ledgerd.toml");
    std::fs::write(&conf, "[server]\nbnd = \"127.0.0.1:0\"\n").unwrap();
    let (code, _, err) = ledgerd(&["config", "--config", conf.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("line 2, key bnd: unknown key (did you mean bind?)"),
        "{err}"
    );
    std::fs::write(&conf, "data_dir = \"/tmp/x\"\n").unwrap();
    let (_, _, err) = ledgerd(&["config", "--config", conf.to_str().unwrap()], &[]);
    assert!(err.contains("(did you mean data-dir?)"), "{err}");

    // An unknown LEDGERD_ variable: one warning at start, the command runs.
    let env = [
        ("LEDGERD_DATADIR", "/tmp/x"),
        ("LEDGERD_MAX_BATCH", "3"),
        ("LEDGERD_BITCOIND", "/usr/bin/bitcoind"),
    ];
    let (code, out, err) = ledgerd(&["config"], &env);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("max-batch = 3 # env LEDGERD_MAX_BATCH"),
        "{out}"
    );
    assert_eq!(err.matches("WARN").count(), 1, "{err}");
    assert!(
        err.contains(
            "LEDGERD_DATADIR is set, but no ledgerd setting has that name (did you mean \
             LEDGERD_DATA_DIR?): it is ignored"
        ),
        "{err}"
    );
    assert!(
        !err.contains("LEDGERD_BITCOIND"),
        "a tool's variable: {err}"
    );
}

#[test]
fn an_empty_switch_variable_is_refused_with_the_values_it_takes() {
    let (code, out, err) = ledgerd(&["config"], &[("LEDGERD_DEV", "")]);
    assert_eq!((code, out.as_str()), (Some(2), ""), "{err}");
    assert_eq!(
        err.trim(),
        "ledgerd: LEDGERD_DEV: --dev is a switch: it takes true, false, 1, 0, yes, no, on or \
         off, not \"\""
    );
    let (code, out, err) = ledgerd(&["config"], &[("LEDGERD_DEV", "on")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("dev = true # env LEDGERD_DEV"), "{out}");
}

#[test]
fn a_slip_in_a_method_gets_the_nearest_one_and_a_dev_node_lists_its_dev_methods() {
    let node = Ledgerd::builder().dev(3, 0).start();
    let e = node.error("ledger_getSoftConfirmationByNumbr", "[1]");
    assert_eq!(e["code"], -32601);
    let data = e["data"].as_str().unwrap();
    assert!(
        data.starts_with(
            "no method named \"ledger_getSoftConfirmationByNumbr\" (did you mean \
             \"ledger_getSoftConfirmationByNumber\"?); known methods: "
        ),
        "{data}"
    );
    let e = node.error("dev_nope", "[]");
    let data = e["data"].as_str().unwrap();
    assert!(data.contains(", dev_mine, dev_setBlockInterval,"), "{data}");
    assert!(data.ends_with(", dev_revert, dev_reset"), "{data}");
    let e = node.error("dev_snapshto", "[]");
    let data = e["data"].as_str().unwrap();
    assert!(data.contains("(did you mean \"dev_snapshot\"?)"), "{data}");
    // Far from every name: no guess.
    let e = node.error("eth_blockNumber", "[]");
    assert!(!e["data"].as_str().unwrap().contains("did you mean"), "{e}");

    // A node without --dev knows no dev_ method to list.
    let stored = tempfile::tempdir().unwrap();
    drop(node);
    let plain = Ledgerd::builder().data_dir(stored.path()).start();
    let e = plain.error("ledger_getHeadSoftConfirmatonHeight", "[]");
    let data = e["data"].as_str().unwrap();
    assert!(
        data.contains("did you mean \"ledger_getHeadSoftConfirmationHeight\"?"),
        "{data}"
    );
    assert!(!data.contains("dev_"), "{data}");
}

#[test]
fn a_hash_with_a_bad_character_shows_it_and_its_position() {
    let node = Ledgerd::builder().dev(3, 0).start();
    let hash = format!("0x{}g1", "ab".repeat(31));
    let e = node.error("ledger_getSoftConfirmationByHash", &format!("[\"{hash}\"]"));
    assert_eq!(e["code"], -32602);
    assert_eq!(
        e["data"],
        "`hash` holds 'g', which is not a hex digit, at character 65 of 66; give a 32-byte \
         hash as a string of exactly 64 hex digits, with or without 0x"
    );
}

#[test]
fn get_slash_from_curl_names_the_status_page_too() {
    let node = Ledgerd::builder().dev(3, 0).start();
    let a = common::http::request(node.addr, "GET", "/", &[("Accept", "*/*")], "");
    assert_eq!(a.status, 405);
    let data = a.json()["error"]["data"].as_str().unwrap().to_string();
    assert!(
        data.contains(
            "GET serves / (the status page, to a browser: Accept: text/html), /health and /metrics"
        ),
        "{data}"
    );
}

/// A plain web server on 127.0.0.1 that answers every request `501 Not
/// Implemented` with an HTML page, as `python3 -m http.server` does a POST.
fn plain_web_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            // The whole request first: a close with its body still unread
            // would send a reset, which the node rightly logs as unreachable.
            read_request(&mut s);
            let body = "<html><body><h1>Error response</h1><p>Error code: 501</p></body></html>";
            let _ = write!(
                s,
                "HTTP/1.1 501 Unsupported method ('POST')\r\nContent-Type: text/html\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            // Then drain until the client closes, for the same reason.
            let _ = s.shutdown(std::net::Shutdown::Write);
            let _ = std::io::copy(&mut s, &mut std::io::sink());
        }
    });
    format!("http://{addr}")
}

/// Reads one HTTP request: its headers and the Content-Length bytes of body
/// after them (what a read timeout leaves is what came).
fn read_request(s: &mut impl Read) {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                return;
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn an_upstream_that_answers_an_http_error_is_logged_as_what_it_was() {
    let web = plain_web_server();
    let node = Ledgerd::builder().args(&["--upstream", &web]).start();
    let log_path = node.dir.path().join("stderr.log");
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until
        && !std::fs::read_to_string(&log_path)
            .unwrap_or_default()
            .contains("status 501")
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, log) = node.stop();
    assert!(
        log.contains(&format!(
            "upstream {web} answered with an HTTP error, status 501: its answer is not JSON-RPC, \
             so the URL may name a web server, not a Citrea node or a ledgerd: check its port"
        )),
        "{log}"
    );
    assert!(!log.contains("cannot be reached"), "{log}");
}

#[test]
fn a_bare_ledgerd_with_nothing_to_serve_says_what_to_give() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("ledgerd-data");
    // From a directory with no ledger: the default ./ledgerd-data.
    let mut child = Command::new(BIN)
        .args(["--bind", "127.0.0.1:0"])
        .current_dir(tmp.path())
        .env_remove("LEDGERD_DATA_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It exits at once; one that serves instead is stopped and fails here.
    let until = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let served = child.try_wait().unwrap().is_none();
    if served {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!served, "a bare ledgerd served: {err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(
        err.trim(),
        "ledgerd: no chain source and no ledger at ./ledgerd-data: nothing to serve; give --dev \
         (a local devnet) or --upstream URL (follow a Citrea node or another ledgerd), or \
         --data-dir DIR of a ledger written before"
    );
    assert!(!data.exists(), "no data dir was made");

    // A data dir that exists is served as it is.
    let dev = Ledgerd::builder().dev(4, 0).data_dir(&data).start();
    drop(dev);
    let stored = Ledgerd::builder().data_dir(&data).start();
    assert_eq!(
        common::call(&stored.url, "ledger_getHeadSoftConfirmationHeight", "[]"),
        4
    );
}
