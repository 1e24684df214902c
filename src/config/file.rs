//! A config file (`--config FILE`, `LEDGERD_CONFIG`): TOML whose keys are
//! the flags without `--`, at the top or under the section named for the
//! flag's `--help` heading:
//!
//! ```toml
//! data-dir = "/var/lib/ledgerd"
//! [chain-source]
//! upstream = ["http://10.0.0.5:12345", "http://10.0.0.6:12345"]
//! [server]
//! bind = "0.0.0.0:12346"
//! ```
//!
//! Its values become the flags' defaults ([`FileConfig::apply`]), so the
//! environment and the command line override them. A file that is not
//! TOML, a key given twice, an unknown key (with the nearest known one) or
//! a value its flag does not take is an error naming the file, line and
//! key. A file of the older `key = value` lines is refused like any other
//! that is not TOML, the sentence naming the command that converts it
//! (`ledgerd config --convert OLD`, [`read_old_form`]).

use std::path::{Path, PathBuf};

use super::env::NOT_SETTINGS;
use crate::flags::{heading, ConfigError};

/// Whether `arg` takes `value`: its own parser, on a command of it alone.
fn check_value(arg: &clap::Arg, value: &str) -> Result<(), clap::Error> {
    let long = arg.get_long().unwrap_or_default();
    clap::Command::new("ledgerd")
        .no_binary_name(true)
        .arg(arg.clone())
        .try_get_matches_from([format!("--{long}={value}")])
        .map(drop)
}

/// A config file's settings, in the order written.
#[derive(Clone, Debug)]
pub struct FileConfig {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
}

/// One key of a config file.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The flag without `--`.
    pub key: String,
    /// The section it stands under (`None`: the top).
    pub section: Option<String>,
    /// The values as the flag would take them (several for a list).
    pub values: Vec<String>,
    /// Whether the file wrote a list, a `true`/`false`, or neither.
    pub shape: Shape,
    /// 1-based.
    pub line: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    One,
    Switch,
    List,
}

/// The command that converts a file of the older form to TOML.
pub const CONVERT: &str = "ledgerd config --convert";

fn read_text(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| {
        ConfigError(format!(
            "config file {} cannot be read: {e}",
            path.display()
        ))
    })
}

/// Reads `path`, a TOML file. One that is not TOML is refused, naming the
/// line and column; when it reads as the older `key = value` form, the
/// sentence says so and names [`CONVERT`] (nothing is guessed).
pub fn read(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = read_text(path)?;
    let at = |line: usize, key: &str, what: &str| at(path, line, key, what);
    let entries = match toml_edit::Document::parse(text.as_str()) {
        Ok(doc) => toml_entries(&text, doc.as_table(), &at)?,
        Err(toml_error) => {
            let offset = toml_error.span().map_or(0, |s| s.start);
            let (line, column) = (line_of(&text, offset), column_of(&text, offset));
            let why = toml_error.message().trim().trim_end_matches('.');
            let old_form = match legacy_entries(&text) {
                Some(_) => format!(
                    "; it would read in the older `key = value` form, which ledgerd no longer \
                     reads: if that is what it is, convert it with `{CONVERT} {} > new.toml` \
                     and check what it prints",
                    path.display()
                ),
                None => String::new(),
            };
            return Err(ConfigError(format!(
                "config file {} line {line}, column {column}: not TOML: {why}{old_form}",
                path.display()
            )));
        }
    };
    Ok(FileConfig {
        path: path.to_path_buf(),
        entries,
    })
}

/// Reads `path` in the older form, `key = value` lines with unquoted
/// values (`ledgerd config --convert OLD`): what it says, to be printed as
/// TOML.
pub fn read_old_form(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = read_text(path)?;
    let entries = legacy_entries(&text).ok_or_else(|| {
        let line = text
            .lines()
            .position(|l| legacy_line(l.trim()).is_none())
            .map_or(1, |i| i + 1);
        at(
            path,
            line,
            "",
            "not in the older `key = value` form (each line a key, =, a value; # comments)",
        )
    })?;
    Ok(FileConfig {
        path: path.to_path_buf(),
        entries,
    })
}

/// "config file F line N, key K: what".
fn at(path: &Path, line: usize, key: &str, what: &str) -> ConfigError {
    ConfigError(if key.is_empty() {
        format!("config file {} line {line}: {what}", path.display())
    } else {
        format!(
            "config file {} line {line}, key {key}: {what}",
            path.display()
        )
    })
}

/// 1-based, in characters.
fn column_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    text[start..offset].chars().count() + 1
}

fn line_of(text: &str, offset: usize) -> usize {
    text.bytes().take(offset).filter(|&b| b == b'\n').count() + 1
}

fn toml_entries(
    text: &str,
    top: &toml_edit::Table,
    at: &dyn Fn(usize, &str, &str) -> ConfigError,
) -> Result<Vec<Entry>, ConfigError> {
    let mut entries = Vec::new();
    let line = |table: &toml_edit::Table, key: &str| {
        table
            .key(key)
            .and_then(|k| k.span())
            .map_or(1, |s| line_of(text, s.start))
    };
    for (key, item) in top.iter() {
        match item {
            toml_edit::Item::Table(section) => {
                for (k, v) in section.iter() {
                    let value = v.as_value().ok_or_else(|| {
                        at(
                            line(section, k),
                            k,
                            "sections do not nest; write `key = value`",
                        )
                    })?;
                    entries.push(entry(k, Some(key), value, line(section, k), at)?);
                }
            }
            toml_edit::Item::Value(v) => entries.push(entry(key, None, v, line(top, key), at)?),
            _ => {
                return Err(at(
                    line(top, key),
                    key,
                    "is not `key = value` or a [section]",
                ))
            }
        }
    }
    // A key at the top and again under its section: one setting said twice.
    for (i, e) in entries.iter().enumerate() {
        if let Some(first) = entries[..i].iter().find(|f| f.key == e.key) {
            return Err(at(
                e.line,
                &e.key,
                &format!(
                    "given twice (first on line {}): a setting is given once; keep the one you \
                     mean",
                    first.line
                ),
            ));
        }
    }
    Ok(entries)
}

fn entry(
    key: &str,
    section: Option<&str>,
    value: &toml_edit::Value,
    line: usize,
    at: &dyn Fn(usize, &str, &str) -> ConfigError,
) -> Result<Entry, ConfigError> {
    use toml_edit::Value;
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.value().clone()),
        Value::Integer(i) => Some(i.value().to_string()),
        Value::Boolean(b) => Some(b.value().to_string()),
        _ => None,
    };
    let (values, shape) = match value {
        Value::Array(list) => (
            list.iter().map(scalar).collect::<Option<Vec<_>>>(),
            Shape::List,
        ),
        Value::Boolean(b) => (Some(vec![b.value().to_string()]), Shape::Switch),
        v => (scalar(v).map(|s| vec![s]), Shape::One),
    };
    let values = values.ok_or_else(|| {
        at(
            line,
            key,
            "takes a string, a whole number, true/false or a list of them",
        )
    })?;
    Ok(Entry {
        key: key.to_string(),
        section: section.map(str::to_string),
        values,
        shape,
        line,
    })
}

/// The older form: `key = value` lines, `#` comment lines, values maybe in
/// double quotes. `None` unless every line is one of those.
fn legacy_entries(text: &str) -> Option<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = legacy_line(line)?;
        let shape = match value {
            "true" | "false" => Shape::Switch,
            _ => Shape::One,
        };
        // A key given again: another value of a list flag (--upstream), else the last wins.
        match entries.iter_mut().find(|e| e.key == key) {
            Some(e) => {
                e.values.push(value.to_string());
                e.shape = Shape::List;
                e.line = i + 1;
            }
            None => entries.push(Entry {
                key: key.to_string(),
                section: None,
                values: vec![value.to_string()],
                shape,
                line: i + 1,
            }),
        }
    }
    Some(entries)
}

/// One `key = value` line of the older form: the key and the value
/// (without its double quotes).
fn legacy_line(line: &str) -> Option<(&str, &str)> {
    if line.is_empty() || line.starts_with('#') {
        return Some(("", ""));
    }
    let (key, value) = line.split_once('=')?;
    let (key, value) = (key.trim(), value.trim());
    if key.is_empty() || key.contains([' ', '[', '"']) {
        return None;
    }
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    Some((key, value))
}

impl FileConfig {
    /// The entry for `--long`, if the file sets it.
    pub fn get(&self, long: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == long)
    }

    /// Checks every key and value against the flags of every command, then
    /// makes the values the defaults of the flags they set (keys of other
    /// commands are fine: one file serves a node, its replicas and
    /// import/export).
    pub fn apply(&self, mut cmd: clap::Command) -> Result<clap::Command, ConfigError> {
        let at = |e: &Entry, what: &str| at(&self.path, e.line, &e.key, what);
        for e in &self.entries {
            let owner = std::iter::once(&cmd)
                .chain(cmd.get_subcommands())
                .find_map(|c| Some((c, c.get_arguments().find(|a| a.get_long() == Some(&e.key))?)));
            let Some((owner, arg)) = owner.filter(|_| !NOT_SETTINGS.contains(&e.key.as_str()))
            else {
                let why = if NOT_SETTINGS.contains(&e.key.as_str()) {
                    "not a setting; keys are the flags without --, such as data-dir".to_string()
                } else {
                    let keys = super::env::all_args(&cmd)
                        .filter_map(|a| a.get_long())
                        .filter(|l| !NOT_SETTINGS.contains(l));
                    let near = crate::flags::did_you_mean(&e.key.replace('_', "-"), keys);
                    format!("unknown key{near}; keys are the flags of ledgerd --help without --")
                };
                return Err(at(e, &why));
            };
            let section = heading::section(arg.get_help_heading().unwrap_or(""));
            if let Some(s) = e.section.as_deref().filter(|s| *s != section) {
                return Err(at(
                    e,
                    &format!("is not a setting of [{s}]; write it under [{section}] or at the top"),
                ));
            }
            let switch = crate::flags::is_switch(arg);
            let list = matches!(arg.get_action(), clap::ArgAction::Append);
            match e.shape {
                Shape::One if switch => {
                    return Err(at(
                        e,
                        &format!("is a switch: write true or false, not {:?}", e.values[0]),
                    ))
                }
                Shape::List if !list => return Err(at(e, "takes one value, not a list")),
                _ => {}
            }
            if !switch {
                for v in &e.values {
                    check_value(arg, v)
                        .map_err(|err| at(e, &ConfigError::from_clap(&err, "run", owner).0))?;
                }
            }
            let id = arg.get_id().clone();
            let values = e.values.clone();
            let set = move |c: clap::Command| {
                c.mut_args(|a| {
                    if a.get_id() == &id {
                        a.default_values(values.clone())
                    } else {
                        a
                    }
                })
            };
            cmd = set.clone()(cmd).mut_subcommands(set);
        }
        Ok(cmd)
    }
}
