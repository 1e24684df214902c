//! `ledgerd config` / `--print-config`: the effective configuration as
//! TOML, grouped in the sections a config file takes, each value followed
//! by where it came from (defaults commented out, so that the output read
//! as a config file sets what was set: fed back with `--config`, it gives
//! the same settings). A secret (a flag whose variable `--help` hides) is
//! never printed, not even masked: its line is a comment naming where it
//! comes from, to be set there again.

use std::fmt::Write;

use clap::parser::ValueSource;

use super::env::{env_name, NOT_SETTINGS};
use super::file::FileConfig;
use crate::flags::heading;

/// The configuration `cmd` parsed into `matches`, as TOML.
pub fn effective(
    cmd: &clap::Command,
    matches: &clap::ArgMatches,
    file: Option<&FileConfig>,
) -> String {
    let mut out = format!(
        "# ledgerd {}: the effective configuration (flag > environment > config file > default)\n",
        cmd.get_name()
    );
    let mut sections: Vec<(String, Vec<&clap::Arg>)> = Vec::new();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if NOT_SETTINGS.contains(&long) {
            continue;
        }
        let section = heading::section(arg.get_help_heading().unwrap_or(""));
        match sections.iter_mut().find(|(s, _)| *s == section) {
            Some((_, args)) => args.push(arg),
            None => sections.push((section, vec![arg])),
        }
    }
    for (section, args) in sections {
        let _ = write!(out, "\n[{section}]\n");
        for arg in args {
            out.push_str(&line(arg, matches, file));
        }
    }
    out
}

/// `key = value # source`, or `# key: not set`.
fn line(arg: &clap::Arg, matches: &clap::ArgMatches, file: Option<&FileConfig>) -> String {
    let long = arg.get_long().unwrap_or_default();
    let id = arg.get_id().as_str();
    let raw: Vec<String> = matches
        .get_raw(id)
        .map(|v| v.map(|s| s.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let entry = file.and_then(|f| Some((f, f.get(long)?)));
    let source = match (matches.value_source(id), entry) {
        (Some(ValueSource::CommandLine), _) => format!("flag --{long}"),
        (Some(ValueSource::EnvVariable), _) => format!("env {}", env_name(long)),
        (Some(ValueSource::DefaultValue), Some((f, e))) => {
            format!("file {} line {}", f.path.display(), e.line)
        }
        (Some(ValueSource::DefaultValue), None) => "default".to_string(),
        _ => return format!("# {long}: not set\n"),
    };
    if arg.is_hide_env_values_set() {
        // Commented out, its source named: set it there again (a variable
        // or a `--{long}-file` keeps it off the command line).
        return match source.as_str() {
            "default" => format!("# {long}: not set\n"),
            _ => format!("# {long} = (a secret, not printed) # {source}\n"),
        };
    }
    let value = |v: &String| {
        if crate::flags::is_switch(arg) {
            matches
                .get_one::<bool>(id)
                .copied()
                .unwrap_or(false)
                .to_string()
        } else if !v.is_empty() && v.len() < 19 && v.bytes().all(|b| b.is_ascii_digit()) {
            v.clone()
        } else {
            quote(v)
        }
    };
    let value = if matches!(arg.get_action(), clap::ArgAction::Append) {
        format!("[{}]", raw.iter().map(value).collect::<Vec<_>>().join(", "))
    } else {
        raw.last().map(value).unwrap_or_default()
    };
    // A default is shown commented out: the output, as a config file, sets
    // what was set, and no more.
    let comment = if source == "default" { "# " } else { "" };
    format!("{comment}{long} = {value} # {source}\n")
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
