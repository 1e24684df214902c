//! Which flags were given on purpose (the command line, the environment or
//! a config file), not left at their defaults: what a command's checks of
//! its flags against each other ask ([`crate::cmd`]).

use std::collections::HashSet;

use clap::parser::ValueSource;

use super::file::FileConfig;

/// The flags set on purpose (command line, environment or config file),
/// not left at their defaults, by long name.
pub struct Given(HashSet<String>);

impl Given {
    pub fn new(
        cmd: &clap::Command,
        matches: &clap::ArgMatches,
        file: Option<&FileConfig>,
    ) -> Given {
        let set = cmd
            .get_arguments()
            .filter_map(|a| {
                let long = a.get_long()?;
                let source = matches.value_source(a.get_id().as_str());
                let from_file = file.and_then(|f| f.get(long)).is_some();
                match source {
                    Some(ValueSource::CommandLine | ValueSource::EnvVariable) => Some(long),
                    Some(ValueSource::DefaultValue) if from_file => Some(long),
                    _ => None,
                }
            })
            .map(str::to_string)
            .collect();
        Given(set)
    }

    /// The first of `A`'s flags (but `except`) that was given, as `--flag`.
    pub fn first_of<A: clap::Args>(&self, except: &str) -> Option<String> {
        A::augment_args(clap::Command::new("flags"))
            .get_arguments()
            .filter_map(|a| a.get_long())
            .find(|l| *l != except && self.0.contains(*l))
            .map(|l| format!("--{l}"))
    }

    /// Whether `--long` was given on purpose.
    pub fn contains(&self, long: &str) -> bool {
        self.0.contains(long)
    }
}
