//! Where the JSON-RPC part of a request's time goes, without HTTP: times
//! `Rpc::handle` on a real ledger and each of its stages on its own
//! (envelope parse, read transaction, LMDB lookup, decode, JSON writing).
//! Single-threaded, warm page cache, random heights. Run it under
//! `valgrind --tool=callgrind` for instruction counts.
//!
//! `cargo run --release --example rpc_micro -- DATA_DIR [ITERATIONS]`

use std::sync::Arc;
use std::time::Instant;

use ledgerd::ledger::{Ledger, LedgerRead, OpenOptions};
use ledgerd::progress::Progress;
use ledgerd::rpc::{Rpc, RpcConfig};

/// A small xorshift: random heights without a crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn time(label: &str, iters: u64, mut f: impl FnMut(u64)) {
    let start = Instant::now();
    for i in 0..iters {
        f(i);
    }
    let ns = start.elapsed().as_nanos() as f64 / iters as f64;
    println!("{label:<44} {ns:>9.0} ns");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or("usage: rpc_micro DATA_DIR [ITERATIONS]")?;
    let iters: u64 = match args.next() {
        Some(n) => n.parse()?,
        None => 200_000,
    };
    // A map just over the file (valgrind cannot map the default 1 TiB).
    let file = std::fs::metadata(std::path::Path::new(&dir).join("data.mdb"))?.len();
    let opts = OpenOptions {
        read_only: true,
        map_size: (file as usize).next_power_of_two(),
        ..OpenOptions::default()
    };
    let ledger = Arc::new(Ledger::open(dir.as_ref(), &opts)?);
    let head = ledger.reader()?.head_height()?;
    if head == 0 {
        return Err("the ledger is empty".into());
    }
    let rpc = Rpc::new(
        ledger.clone(),
        Arc::new(Progress::default()),
        RpcConfig::default(),
    );
    let bodies: Vec<String> = {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        (0..4096)
            .map(|_| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":[{}]}}"#,
                    rng.below(head) + 1
                )
            })
            .collect()
    };
    let body = |i: u64| bodies[(i % 4096) as usize].as_bytes();
    println!("{head} blocks, {iters} iterations per line, ns per call:");
    let mut bytes = 0usize;
    time("Rpc::handle getSoftConfirmationByNumber", iters, |i| {
        bytes += rpc.handle(body(i)).map_or(0, |b| b.len());
    });
    let ranges: Vec<String> = {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        (0..256)
            .map(|_| {
                let start = rng.below(head.saturating_sub(99).max(1)) + 1;
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[{start},{}]}}"#,
                    start + 99
                )
            })
            .collect()
    };
    time(
        "Rpc::handle getSoftConfirmationRange of 100",
        iters / 100,
        |i| {
            std::hint::black_box(rpc.handle(ranges[(i % 256) as usize].as_bytes()));
        },
    );
    time("  envelope::parse", iters, |i| {
        std::hint::black_box(ledgerd::rpc::envelope::parse(body(i), 50));
    });
    time("  read transaction (begin + end)", iters, |_| {
        std::hint::black_box(ledger.reader().ok());
    });
    let reader = ledger.reader()?;
    let mut rng = Rng(7);
    time("  soft_confirmation(h): LMDB get + decode", iters, |_| {
        std::hint::black_box(reader.soft_confirmation(rng.below(head) + 1).ok());
    });
    time("  hash_at(h): LMDB get, no decode", iters, |_| {
        std::hint::black_box(reader.hash_at(rng.below(head) + 1).ok());
    });
    let sc = reader
        .soft_confirmation(head / 2 + 1)?
        .ok_or("no block at head/2")?;
    let mut out = Vec::new();
    time("  wire::write::write_soft_confirmation", iters, |_| {
        out.clear();
        ledgerd::wire::write::write_soft_confirmation(&mut out, &sc);
    });
    time("  allocate + free a 2 KiB Vec", iters, |_| {
        std::hint::black_box(Vec::<u8>::with_capacity(2048));
    });
    println!("(average answer {} bytes)", bytes as u64 / iters);
    Ok(())
}
