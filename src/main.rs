//! The `ledgerd` binary: parse the command line, start a [`ledgerd::Node`],
//! print `listening on http://HOST:PORT`, wait for Ctrl-C or SIGTERM; or run
//! `import` / `export` ([`ledgerd::jsonl`]) or `verify`
//! ([`ledgerd::verify_cmd`]) and exit.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use ledgerd::config::{self, Command};
use ledgerd::node::Node;
use ledgerd::stop::Stop;

fn main() -> ExitCode {
    // Before any thread starts: the allocator's arenas and thresholds.
    ledgerd::memory::configure();
    // First, before any thread starts: signals go to the one thread that waits for them.
    let stop = Arc::new(Stop::new());
    let on_signal = stop.clone();
    ledgerd::signals::on_stop(move || on_signal.stop());

    let (command, warnings) = config::parse_with_warnings(std::env::args().skip(1));
    // Text, or JSON lines for a node started with --log-format json; then
    // what the configuration had to say (an old-form config file).
    ledgerd::logs::init(match &command {
        Ok(Command::Run(config)) => config.log_format,
        _ => config::LogFormat::Text,
    });
    for warning in warnings {
        log::warn!("{warning}");
    }

    let config = match command {
        Ok(Command::Run(config)) => config,
        Ok(Command::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::PrintConfig(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("ledgerd {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Import(args)) => return import(&args),
        Ok(Command::Export(args)) => return export(&args),
        Ok(Command::Verify(args)) => return verify(&args),
        Ok(Command::VerifyProof(args)) => return verify_proof(&args),
        Ok(Command::Rollback(args)) => return rollback(&args),
        Ok(Command::VerifyHeaders(args)) => return verify_headers(&args),
        Err(e) => {
            eprintln!("ledgerd: {e}");
            return ExitCode::from(2);
        }
    };

    let node = match Node::builder()
        .config(*config)
        .stop_signal(stop.clone())
        .start()
    {
        Ok(node) => node,
        Err(ledgerd::node::NodeError::Stopped) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ledgerd: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout();
    if writeln!(out, "listening on {}", node.url())
        .and_then(|_| out.flush())
        .is_err()
    {
        // Nobody reads stdout: keep serving anyway.
    }
    while !stop.sleep(std::time::Duration::from_secs(3600)) {}
    log::info!("stopping");
    node.shutdown();
    ExitCode::SUCCESS
}

/// `ledgerd import FILE`: all of it or nothing; exit 1 with the bad lines.
fn import(args: &config::ImportArgs) -> ExitCode {
    use ledgerd::jsonl::{self, ImportOptions};
    use ledgerd::ledger::{Ledger, OpenOptions};
    let name = args.file.display().to_string();
    let input: Box<dyn std::io::BufRead> = if name == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(&args.file) {
            Ok(f) => Box::new(std::io::BufReader::new(f)),
            Err(e) => {
                eprintln!("ledgerd import: cannot open {name}: {e}");
                return ExitCode::from(1);
            }
        }
    };
    let ledger = match Ledger::open(&args.data_dir, &OpenOptions::default()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ledgerd import: {e}");
            return ExitCode::from(1);
        }
    };
    let options = ImportOptions {
        verify: args.verify,
        forks: args.forks,
        sequencer_pubkey: args.sequencer_pubkey,
        receipts: args.receipts,
    };
    match jsonl::import(&ledger, input, options) {
        Ok(report) => {
            println!("{report} in {}", args.data_dir.display());
            if args.verify && report.proofs > 0 && !args.receipts.images_pinned() {
                eprintln!(
                    "ledgerd import: note: batch-proof images are not pinned (no --network, no \
                     {flag}): the {} proofs were verified against the images their receipts \
                     claim; pin them with {flag} FORK=HEX",
                    report.proofs,
                    flag = ledgerd::proof::image_ids::BATCH_PROOF_IMAGE
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ledgerd import: {name}: {e}");
            ExitCode::from(1)
        }
    }
}

/// `ledgerd rollback`: the report on stdout; exit 1 with a sentence when
/// refused (a running node) or failed (nothing written).
fn rollback(args: &config::RollbackArgs) -> ExitCode {
    use ledgerd::rollback::{self, Target};
    let target = match args.to {
        config::RollbackTo::L2(h) => Target::L2(h),
        config::RollbackTo::L1(s) => Target::L1(s),
    };
    match rollback::run(&args.data_dir, target, args.dry_run) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ledgerd rollback: {e}");
            ExitCode::from(1)
        }
    }
}

/// `ledgerd export`: the fixture on stdout, from one read snapshot.
fn export(args: &config::ExportArgs) -> ExitCode {
    use ledgerd::ledger::{Ledger, OpenOptions};
    let open = OpenOptions {
        read_only: true,
        ..OpenOptions::default()
    };
    let ledger = match Ledger::open(&args.data_dir, &open) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ledgerd export: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout().lock();
    match ledgerd::jsonl::export(&ledger, args.from, args.to, &mut out) {
        Ok(r) => {
            log::info!(
                "exported heights {}..={}: {} records",
                r.from,
                r.to,
                r.records
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ledgerd export: {e}");
            ExitCode::from(1)
        }
    }
}

/// `ledgerd verify FILE`: one line per block on stdout; exit 0 only when
/// every block passed, 1 when one failed, 2 when the input cannot be read.
fn verify(args: &config::VerifyArgs) -> ExitCode {
    use ledgerd::verify_cmd::{self, VerifyOptions};
    let name = args.file.display();
    let text = match read_input("verify", &args.file).and_then(|bytes| {
        String::from_utf8(bytes).map_err(|_| {
            eprintln!("ledgerd verify: cannot read {name}: stream did not contain valid UTF-8");
            ExitCode::from(2)
        })
    }) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let options = VerifyOptions {
        forks: args.forks,
        sequencer_key: args.sequencer_key,
        sequencer_key_name: args.sequencer_key_name.clone(),
    };
    let mut out = std::io::stdout().lock();
    match verify_cmd::run(&text, &options, &mut out) {
        Ok(summary) => {
            eprintln!("ledgerd verify: {name}: {summary}");
            if summary.all_passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("ledgerd verify: {name}: {e}");
            ExitCode::from(2)
        }
    }
}

/// `ledgerd verify-proof FILE`: the report on stdout; exit 0 only when every
/// proof would be accepted, 1 when one would not, 2 when the input cannot be read.
fn verify_proof(args: &config::VerifyProofArgs) -> ExitCode {
    use ledgerd::verify_proof_cmd::{self, VerifyProofOptions};
    let name = args.file.display();
    let bytes = match read_input("verify-proof", &args.file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let options = VerifyProofOptions {
        rules: args.receipts,
        forks: args.forks,
    };
    let mut out = std::io::stdout().lock();
    match verify_proof_cmd::run(&bytes, &options, &mut out) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(refused) => {
            eprintln!("ledgerd verify-proof: {name}: {refused} proof(s) refused");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("ledgerd verify-proof: {name}: {e}");
            ExitCode::from(2)
        }
    }
}

/// `ledgerd verify-headers FILE`: the report on stdout; exit 0 only when
/// every check made passed, 1 when a header failed one, 2 when the input
/// cannot be read.
fn verify_headers(args: &config::VerifyHeadersArgs) -> ExitCode {
    use ledgerd::headers::{unix_now, verify};
    let name = args.file.display();
    let bytes = match read_input("verify-headers", &args.file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let started = std::time::Instant::now();
    match verify::verify_bytes(&bytes, args.chain, args.start_height, unix_now()) {
        Ok(outcome) => {
            let secs = started.elapsed().as_secs_f64();
            println!("{outcome}");
            let count = outcome.verifier.count();
            eprintln!(
                "ledgerd verify-headers: {name}: {count} headers in {:.3} s ({:.0} headers/s)",
                secs,
                count as f64 / secs.max(1e-9)
            );
            if outcome.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("ledgerd verify-headers: {name}: {e}");
            ExitCode::from(2)
        }
    }
}

/// The bytes of a command's input FILE (`-`: stdin); when it cannot be
/// read, the one line that says so on stderr and exit status 2.
fn read_input(command: &str, file: &std::path::Path) -> Result<Vec<u8>, ExitCode> {
    let read = if file == std::path::Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes).map(|_| bytes)
    } else {
        std::fs::read(file)
    };
    read.map_err(|e| {
        eprintln!("ledgerd {command}: cannot read {}: {e}", file.display());
        ExitCode::from(2)
    })
}
