//! The fuzzed path (request body bytes -> `Rpc::handle` -> response bytes,
//! no sockets) in `cargo test`: every input the fuzzer ever found
//! (`fuzz/regressions/rpc_body/`), then a short, bounded property test over
//! mutations of the fuzz seeds, with the same checks as the fuzz target.

mod common;

use std::path::Path;

use common::rpc_check::{check_answer, devnet_rpc};

fn files(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.expect("dir entry").path();
            let bytes = std::fs::read(&path).expect("read input");
            (path.display().to_string(), bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_input_the_fuzzer_found_is_answered_with_valid_json() {
    let (rpc, _dir) = devnet_rpc(120);
    let inputs = files("fuzz/regressions/rpc_body");
    assert!(!inputs.is_empty(), "no regression inputs found");
    for (name, bytes) in inputs {
        eprintln!("{name}");
        check_answer(rpc.handle(&bytes).as_deref());
    }
}

#[test]
fn an_id_beyond_a_doubles_range_is_invalid_request_not_echoed() {
    // Found by fuzzing: `1e400` is JSON by the grammar, but serde_json (and
    // so many clients) cannot read an answer that echoes it.
    let (rpc, _dir) = devnet_rpc(5);
    let out = rpc
        .handle(br#"{"jsonrpc":"2.0","id":67e777777777,"method":"ledger_getLastScannedL1Height"}"#)
        .expect("an answer");
    check_answer(Some(&out));
    let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], serde_json::Value::Null);
    // Large but readable numbers are still echoed as written.
    let out = rpc
        .handle(br#"{"jsonrpc":"2.0","id":1e300,"method":"ledger_getLastScannedL1Height"}"#)
        .expect("an answer");
    assert!(
        out.starts_with(br#"{"jsonrpc":"2.0","id":1e300,"result":"#),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

/// xorshift64: a fixed sequence, so a failure is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: [&[u8]; 16] = [
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b"\"",
    b"null",
    b"-0",
    b"1e400",
    b"0x",
    b"\\u0000",
    b"\xff",
    b"18446744073709551616",
    b"\"id\":",
    b"\"params\":",
];

fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 if at < bytes.len() => bytes[at] = rng.next() as u8,
            1 if at < bytes.len() => {
                let end = (at + 1 + rng.below(8)).min(bytes.len());
                bytes.drain(at..end);
            }
            2 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, t.iter().copied());
            }
            _ => {
                let d = b"0123456789"[rng.below(10)];
                bytes.insert(at.min(bytes.len()), d);
            }
        }
    }
}

#[test]
fn mutated_requests_always_get_well_formed_answers() {
    let (rpc, _dir) = devnet_rpc(120);
    let seeds = files("fuzz/seeds/rpc_body");
    assert!(seeds.len() >= 10, "fuzz seeds missing");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut answered = 0;
    for (_, seed) in &seeds {
        // The seeds themselves are valid requests: each gets an answer.
        let out = rpc.handle(seed);
        check_answer(out.as_deref());
        for _ in 0..1500 {
            let mut bytes = seed.clone();
            mutate(&mut rng, &mut bytes);
            let out = rpc.handle(&bytes);
            answered += usize::from(out.is_some());
            check_answer(out.as_deref());
        }
    }
    assert!(
        answered > 1000,
        "only {answered} mutated requests got answers"
    );
}
