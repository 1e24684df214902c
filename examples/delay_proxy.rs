//! A TCP proxy that delays every request by a fixed time, to measure a
//! follower against an upstream that is a network away (used by
//! `scripts/catchup.sh` with `DELAY_MS`).
//!
//! `delay_proxy UPSTREAM_HOST:PORT DELAY_MS`
//!
//! Listens on 127.0.0.1 on a free port and prints `listening on
//! http://HOST:PORT` first. Each client connection gets its own connection
//! to the upstream; every byte from the client is passed on DELAY_MS after
//! it arrived (a latency, like a network's: bytes in flight do not wait for
//! each other), answers are passed back at once. Runs until killed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Copies `from` to `to`, each chunk `delay` after it was read.
fn pass(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        for (due, bytes) in rx {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if tx
            .send((Instant::now() + delay, buf[..n].to_vec()))
            .is_err()
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(upstream), Some(delay)) = (args.get(1), args.get(2).and_then(|d| d.parse().ok()))
    else {
        eprintln!("usage: delay_proxy UPSTREAM_HOST:PORT DELAY_MS");
        std::process::exit(2);
    };
    let delay = Duration::from_millis(delay);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a local address");
    println!("listening on http://{addr}");
    let _ = std::io::stdout().flush();
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(upstream.as_str()) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        std::thread::spawn(move || pass(client, server, delay));
        std::thread::spawn(move || pass(s2, c2, Duration::ZERO));
    }
}
