//! The `ledgerd` binary: parse the command line, start a [`ledgerd::Node`],
//! print `listening on http://HOST:PORT`, wait for Ctrl-C or SIGTERM.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use ledgerd::config::{self, Command};
use ledgerd::node::Node;
use ledgerd::stop::Stop;

fn main() -> ExitCode {
    // First, before any thread starts: signals go to the one thread that waits for them.
    let stop = Arc::new(Stop::new());
    let on_signal = stop.clone();
    ledgerd::signals::on_stop(move || on_signal.stop());

    let logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
            .target(env_logger::Target::Stderr)
            .build();
    let max_level = logger.filter();
    // tiny_http logs every routine accept() timeout as an error: drop just those.
    if log::set_boxed_logger(Box::new(ledgerd::server::QuietAcceptTimeouts::new(logger))).is_ok() {
        log::set_max_level(max_level);
    }

    let config = match config::parse(std::env::args().skip(1)) {
        Ok(Command::Run(config)) => config,
        Ok(Command::Help) => {
            print!("{}", config::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("ledgerd {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
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
