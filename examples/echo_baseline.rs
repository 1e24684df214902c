//! The plain tiny_http loop (`recv()` -> `respond()` inline) answering a
//! constant ~600-byte JSON-RPC response: the throughput baseline for
//! `ledgerd::server`. TCP_NODELAY is set on the listener like ours.
//!
//! `cargo run --release --example echo_baseline -- --bind 127.0.0.1:0`

use std::net::TcpListener;
use std::sync::Arc;

fn answer() -> String {
    let hash = "ab".repeat(32);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"l2Height":123456,"daSlotHeight":654321,"daSlotHash":"{hash}","daSlotTxsCommitment":"{hash}","hash":"{hash}","prevHash":"{hash}","stateRoot":"{hash}","l1FeeRate":1000000000,"timestamp":1700000000,"txs":[],"depositData":[]}}}}"#
    );
    body
}

fn main() {
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    ledgerd::signals::on_stop(move || {
        let _ = stop_tx.send(());
    });
    let mut bind = "127.0.0.1:8545".to_string();
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
            other => {
                eprintln!("unknown flag {other}");
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
    println!("listening on http://{addr}");
    let body = answer();
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
