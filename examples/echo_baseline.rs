//! The plain tiny_http loop (`recv()` -> `respond()` inline) answering a
//! constant JSON-RPC response: the throughput baseline for `ledgerd::server`
//! (the HTTP-layer limit of our stack). TCP_NODELAY is set on the listener
//! like ours.
//!
//! `--body-bytes N` pads the answer (a soft-confirmation-shaped object whose
//! `txs` holds one hex string) to N bytes, so it can match the average size
//! of a real `ledger_getSoftConfirmationByNumber` answer; `scripts/bench.sh`
//! measures that size and passes it. The default, 1,150 bytes, is about the
//! average on a devnet ledger.
//!
//! `cargo run --release --example echo_baseline -- --bind 127.0.0.1:0 [--body-bytes N]`

use std::net::TcpListener;
use std::sync::Arc;

/// The answer, padded to `size` bytes when it is longer than the unpadded
/// object (the padding is an even-length hex string in `txs`).
fn answer(size: usize) -> String {
    let hash = "ab".repeat(32);
    let sig = "cd".repeat(64);
    let with_tx = |tx: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"l2Height":123456,"daSlotHeight":654321,"daSlotHash":"{hash}","daSlotTxsCommitment":"{hash}","hash":"{hash}","prevHash":"{hash}","txs":[{tx}],"stateRoot":"{hash}","softConfirmationSignature":"{sig}","pubKey":"{hash}","depositData":[],"l1FeeRate":1000000000,"timestamp":1700000000}}}}"#
        )
    };
    let bare = with_tx("").len();
    // `"` + hex + `"` adds 2 + an even number of bytes.
    match size.checked_sub(bare + 2) {
        Some(room) => with_tx(&format!("\"{}\"", "0f".repeat(room / 2))),
        None => with_tx(""),
    }
}

fn main() {
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    ledgerd::signals::on_stop(move || {
        let _ = stop_tx.send(());
    });
    let mut bind = "127.0.0.1:8545".to_string();
    let mut body_bytes: usize = 1150;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bind" => match args.next() {
                Some(v) => bind = v,
                None => {
                    eprintln!("--bind needs an address");
                    std::process::exit(2);
                }
            },
            "--body-bytes" => match args.next().map(|v| v.parse::<usize>()) {
                Some(Ok(n)) => body_bytes = n,
                _ => {
                    eprintln!("--body-bytes needs a whole number of bytes");
                    std::process::exit(2);
                }
            },
            other => {
                eprintln!("unknown flag {other} (flags: --bind ADDR, --body-bytes N)");
                std::process::exit(2);
            }
        }
    }
    let listener = match TcpListener::bind(&bind) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on {bind}: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = ledgerd::server::set_nodelay_on_listener(&listener) {
        eprintln!("cannot set TCP_NODELAY: {e}");
        std::process::exit(1);
    }
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cannot read the bound address: {e}");
            std::process::exit(1);
        }
    };
    let server = match tiny_http::Server::from_listener(listener, None) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("cannot start the HTTP server: {e}");
            std::process::exit(1);
        }
    };
    let waker = server.clone();
    std::thread::spawn(move || {
        if stop_rx.recv().is_ok() {
            waker.unblock();
        }
    });
    let body = answer(body_bytes);
    println!("listening on http://{addr}");
    let content_type =
        tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
            .expect("static header");
    loop {
        let rq = match server.recv() {
            Ok(rq) => rq,
            Err(_) => break, // unblocked by the signal thread
        };
        let resp =
            tiny_http::Response::from_string(body.as_str()).with_header(content_type.clone());
        let _ = rq.respond(resp);
    }
}
