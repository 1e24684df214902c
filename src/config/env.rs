//! Every flag's `LEDGERD_*` variable, by one rule ([`env_name`]), given to
//! a command's flags by [`prepare`].

/// Flags that are no setting: no variable, no config-file key.
pub const NOT_SETTINGS: [&str; 5] = ["help", "version", "config", "print-config", "convert"];

/// `LEDGERD_*` variables that are not settings but the project's scripts'
/// and tests' own (which ledgerd, which bitcoind): no warning for them.
const TOOLS_VARIABLES: [&str; 3] = ["LEDGERD_BIN", "LEDGERD_BITCOIND", "LEDGERD_TOOLS_DIR"];

/// A warning for each `LEDGERD_*` variable in the environment that no flag
/// of `cmd` (or its subcommands) reads, with the nearest one that is.
pub fn unknown_variables(cmd: &clap::Command) -> Vec<String> {
    let known: Vec<String> = all_args(cmd)
        .filter_map(|a| variable_of(a.get_long()?))
        .collect();
    // In order, once each.
    let names: std::collections::BTreeSet<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("LEDGERD_"))
        .filter(|k| !known.contains(k) && !TOOLS_VARIABLES.contains(&k.as_str()))
        .collect();
    names
        .into_iter()
        .map(|name| {
            let near = crate::flags::did_you_mean(&name, known.iter().map(String::as_str));
            format!("{name} is set, but no ledgerd setting has that name{near}: it is ignored")
        })
        .collect()
}

/// Every flag of `cmd` and its subcommands.
pub fn all_args(cmd: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    std::iter::once(cmd)
        .chain(cmd.get_subcommands())
        .flat_map(|c| c.get_arguments())
}

/// The variable that sets `--flag`: `LEDGERD_FLAG` (`--data-dir`: `LEDGERD_DATA_DIR`).
pub fn env_name(long: &str) -> String {
    format!("LEDGERD_{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// The variable of `--long`: every setting's, and `--config`'s (`LEDGERD_CONFIG`).
fn variable_of(long: &str) -> Option<String> {
    (!NOT_SETTINGS.contains(&long) || long == "config").then(|| env_name(long))
}

/// Gives every setting of `cmd` and its subcommands its variable, lets a
/// flag given twice take its last value (as the command line overrides a
/// config file's key) and a number value start with `-` (to be refused
/// by its parser in words that name the flag).
pub fn prepare(cmd: clap::Command) -> clap::Command {
    with_env(cmd, true).mut_subcommands(|c| with_env(c, true))
}

/// [`prepare`] for a command line that names its command: the flags of
/// the bare form (`ledgerd [FLAGS]`, which is `run`) read no variables, so
/// that a variable of `run` does not count for `import`.
pub fn prepare_for_command(cmd: clap::Command) -> clap::Command {
    with_env(cmd, false).mut_subcommands(|c| with_env(c, true))
}

fn with_env(cmd: clap::Command, env: bool) -> clap::Command {
    cmd.args_override_self(true)
        .allow_negative_numbers(true)
        .mut_args(|a| match a.get_long().and_then(variable_of) {
            Some(name) if env => a.env(name),
            _ => a,
        })
}
