//! The fuzzed paths in `cargo test`, no sockets, with the same checks as the
//! fuzz targets:
//! - request body bytes -> `Rpc::handle` -> response bytes: every input the
//!   fuzzer ever found (`fuzz/regressions/rpc_body/`), then a short, bounded
//!   property test over mutations of the fuzz seeds;
//! - request head -> framing decision (`fuzz/seeds/http_framing/`, the
//!   ambiguous requests of RFC 9112 section 6 and honest ones): each seed,
//!   then mutations of them. `tests/it/http_framing.rs` sends the same seeds to
//!   a real ledgerd over sockets.

use crate::common;

use std::path::Path;

use common::framing_check::check_head;
use common::rpc_check::{check_answer, devnet_rpc};
use ledgerd::server::framing::Framing;

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

/// Tokens that matter to framing, spliced into mutated heads.
const FRAMING_TOKENS: [&[u8]; 14] = [
    b"\r\nContent-Length: 5",
    b"\r\nTransfer-Encoding: chunked",
    b"\r\ncontent-length:",
    b"\r\ntransfer-encoding:",
    b",",
    b" ",
    b"\t",
    b"+",
    b"-",
    b"chunked",
    b"gzip",
    b"18446744073709551616",
    b"HTTP/1.0",
    b"\r\nExpect: 100-continue",
];

#[test]
fn every_framing_seed_is_decided_as_its_name_says() {
    let seeds = files("fuzz/seeds/http_framing");
    assert!(seeds.len() >= 20, "framing seeds missing");
    for (path, raw) in &seeds {
        let name = Path::new(path).file_name().unwrap().to_str().unwrap();
        let verdict = check_head(raw);
        eprintln!("{name}: {verdict:?}");
        match verdict {
            None => assert!(
                name.contains("space-before-colon") || name.contains("folded"),
                "{name}: tiny_http refuses it before ledgerd sees it"
            ),
            Some(Ok(f)) => assert!(name.starts_with("ok-"), "{name} accepted as {f:?}"),
            Some(Err(r)) => assert!(!name.starts_with("ok-"), "{name} refused: {r:?}"),
        }
    }
}

#[test]
fn mutated_request_heads_are_decided_soundly() {
    let seeds = files("fuzz/seeds/http_framing");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for (_, seed) in &seeds {
        let head_end = seed
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a seed has a whole head");
        for _ in 0..400 {
            let mut head = seed[..head_end].to_vec();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(head.len() + 1);
                match rng.below(3) {
                    0 if at < head.len() => {
                        let end = (at + 1 + rng.below(6)).min(head.len());
                        head.drain(at..end);
                    }
                    1 => {
                        let d = b"0123456789"[rng.below(10)];
                        head.insert(at, d);
                    }
                    _ => {
                        let t = FRAMING_TOKENS[rng.below(FRAMING_TOKENS.len())];
                        head.splice(at..at, t.iter().copied());
                    }
                }
            }
            head.extend_from_slice(&seed[head_end..]);
            match check_head(&head) {
                Some(Ok(Framing::NoBody)) | None => {}
                Some(Ok(_)) => accepted += 1,
                Some(Err(_)) => refused += 1,
            }
        }
    }
    assert!(
        accepted > 500 && refused > 500,
        "mutations reached too few cases: {accepted} accepted, {refused} refused"
    );
}
