//! The `ledgerd` binary: parse the command line and run the command
//! ([`ledgerd::cmd`]: one file per command).

use std::process::ExitCode;
use std::sync::Arc;

use ledgerd::cmd::{self, Command};
use ledgerd::stop::Stop;

fn main() -> ExitCode {
    // Before any thread starts: the allocator's arenas and thresholds.
    ledgerd::memory::configure();
    // First, before any thread starts: signals go to the one thread that waits for them.
    let stop = Arc::new(Stop::new());
    let on_signal = stop.clone();
    ledgerd::signals::on_stop(move || on_signal.stop());

    let (command, warnings) = cmd::parse_with_warnings(std::env::args().skip(1));
    // Text, or JSON lines for a node started with --log-format json; then
    // what the configuration had to say (an old-form config file).
    ledgerd::logs::init(match &command {
        Ok(Command::Run(config)) => config.log_format,
        _ => ledgerd::logs::LogFormat::Text,
    });
    for warning in warnings {
        log::warn!("{warning}");
    }
    match command {
        Ok(command) => command.execute(stop),
        Err(e) => {
            eprintln!("ledgerd: {e}");
            ExitCode::from(2)
        }
    }
}
