//! `ledgerd::server` answering the same constant ~600-byte JSON-RPC response
//! as `echo_baseline`, for the throughput comparison.
//!
//! `cargo run --release --example echo_server -- --bind 127.0.0.1:0`

use ledgerd::server::{Handler, HttpRequest, HttpResponse, Server, ServerConfig};

struct Constant(Vec<u8>);

impl Handler for Constant {
    fn handle(&mut self, _: &HttpRequest<'_>) -> HttpResponse {
        HttpResponse {
            status: 200,
            content_type: "application/json",
            body: self.0.clone(),
            headers: Vec::new(),
        }
    }

    fn too_large(&mut self, limit: usize) -> HttpResponse {
        HttpResponse {
            status: 413,
            content_type: "application/json",
            body: format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32007,"message":"Request is too big","data":"limit {limit}"}}}}"#).into_bytes(),
            headers: Vec::new(),
        }
    }
}

fn main() {
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    ledgerd::signals::on_stop(move || {
        let _ = stop_tx.send(());
    });
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let mut bind = "127.0.0.1:8545".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--bind", Some(v)) => bind = v,
            _ => {
                eprintln!("usage: echo_server [--bind ADDR]");
                std::process::exit(2);
            }
        }
    }
    let server = match Server::bind(&bind, ServerConfig::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let stopper = server.stopper();
    std::thread::spawn(move || {
        if stop_rx.recv().is_ok() {
            stopper.stop();
        }
    });
    println!("listening on http://{}", server.local_addr());
    let hash = "ab".repeat(32);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"l2Height":123456,"daSlotHeight":654321,"daSlotHash":"{hash}","daSlotTxsCommitment":"{hash}","hash":"{hash}","prevHash":"{hash}","stateRoot":"{hash}","l1FeeRate":1000000000,"timestamp":1700000000,"txs":[],"depositData":[]}}}}"#
    );
    if let Err(e) = server.run(&mut Constant(body.into_bytes())) {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
