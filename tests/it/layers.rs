//! Imports run one way: a module of `src/` names (`crate::x`) only modules of
//! its own row of docs/DESIGN.md's layer table or of a row below it. The
//! table is read from docs/DESIGN.md itself, so the drawing and this check
//! cannot drift apart; a new top-level module fails here until it has a row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rows of the layer table, top first: module name -> row number.
fn layer_table(design: &str) -> BTreeMap<String, usize> {
    let section = design
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("docs/DESIGN.md has a \"## Layers\" section");
    let mut rows = BTreeMap::new();
    let mut row = 0;
    for line in section.lines() {
        // Table rows: `| 1 | `main`, `config` | what they are |`.
        let Some(rest) = line.strip_prefix('|') else {
            continue;
        };
        let mut cells = rest.split('|');
        let (Some(n), Some(modules)) = (cells.next(), cells.next()) else {
            continue;
        };
        if n.trim().parse::<usize>().is_err() {
            continue;
        }
        row += 1;
        assert_eq!(
            n.trim(),
            row.to_string(),
            "the layer table's rows are numbered 1, 2, ..."
        );
        for name in modules.split('`').skip(1).step_by(2) {
            rows.insert(name.to_string(), row);
        }
    }
    assert!(
        rows.len() > 10,
        "docs/DESIGN.md's layer table was not found: {rows:?}"
    );
    rows
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ reads") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of `text` without its comments (line, doc and block comments),
/// and of what its string literals hold (raw strings too), newlines kept so
/// that positions keep their line numbers; a `//` inside a string or a char
/// literal is not a comment.
fn code_of(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let blank = |c: char| if c == '\n' { c } else { ' ' };
    while i < c.len() {
        let next = c.get(i + 1).copied();
        match c[i] {
            '/' if next == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                i += 2;
                while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                    if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                i += 2;
                continue;
            }
            'r' if (i == 0 || !ident(c[i - 1])) && matches!(next, Some('#' | '"')) => {
                // A raw string: r"...", r#"..."#, ...
                let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
                if c.get(i + 1 + hashes) == Some(&'"') {
                    let end: String = std::iter::once('"')
                        .chain(std::iter::repeat_n('#', hashes))
                        .collect();
                    let body: String = c[i..].iter().collect();
                    let len = body[2 + hashes..]
                        .find(&end)
                        .map_or(body.len(), |at| 2 + hashes + at + end.len());
                    out.extend(body[..len].chars().map(blank));
                    i += body[..len].chars().count();
                    continue;
                }
            }
            '"' => {
                out.push('"');
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        out.push(' ');
                        i += 1;
                    }
                    if let Some(&ch) = c.get(i) {
                        out.push(blank(ch));
                    }
                    i += 1;
                }
                out.push('"');
                i += 1;
                continue;
            }
            '\'' => {
                // A char literal ('"', '\'', '\n'); else a lifetime.
                let len = if next == Some('\\') {
                    c[i + 2..].iter().position(|&q| q == '\'').map(|p| p + 3)
                } else if c.get(i + 2) == Some(&'\'') {
                    Some(3)
                } else {
                    None
                };
                if let Some(len) = len {
                    out.extend(&c[i..(i + len).min(c.len())]);
                    i += len;
                    continue;
                }
            }
            _ => {}
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// The top-level modules `code` names with `crate::`, with their line
/// numbers (`crate::{a, b::c}` names `a` and `b`).
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start => {
                        start = false;
                        found.push((line, ident(&group[i..])));
                    }
                    _ => {}
                }
            }
        } else {
            found.push((line, ident(rest)));
        }
    }
    found
}

/// The row a file of `src/` is in: its top-level module's, except that the
/// flags a subsystem defines beside itself (`args.rs`, parsed into the
/// configuration) are in `config`'s row.
fn row_of(file: &Path, src: &Path, rows: &BTreeMap<String, usize>) -> Option<(String, usize)> {
    let relative = file.strip_prefix(src).ok()?;
    let top = relative.components().next()?.as_os_str().to_str()?;
    let top = top.strip_suffix(".rs").unwrap_or(top);
    if top == "lib" {
        return None;
    }
    let name = if file.file_name().is_some_and(|n| n == "args.rs") {
        "config"
    } else {
        top
    };
    let row = *rows.get(name).unwrap_or_else(|| {
        panic!(
            "src/{} is in module `{top}`, which docs/DESIGN.md's layer table does not place: \
             add it to the row it belongs in",
            relative.display()
        )
    });
    Some((top.to_string(), row))
}

#[test]
fn no_module_imports_a_module_of_a_row_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(root.join("docs/DESIGN.md")).expect("docs/DESIGN.md");
    let rows = layer_table(&design);
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut upward = Vec::new();
    for file in &files {
        let Some((top, row)) = row_of(file, &src, &rows) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file reads");
        for (line, named) in crate_paths(&code_of(&text)) {
            if named == top {
                continue;
            }
            let Some(&named_row) = rows.get(&named) else {
                panic!(
                    "{}:{line} names crate::{named}, which docs/DESIGN.md's layer table does not place",
                    file.display()
                );
            };
            if named_row < row {
                upward.push(format!(
                    "{}:{line}: `{top}` (row {row}) imports crate::{named} (row {named_row})",
                    file.strip_prefix(root).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up a layer (docs/DESIGN.md, \"Layers\"):\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_import_reader_finds_paths_in_code_and_groups_and_not_in_comments() {
    let code = code_of(
        "use crate::ledger::X; // crate::sync\n/// [`crate::server`]\n\
         let s = \"//\"; let q = '\"'; crate::rpc::f();\nuse crate::{proof::Y, types};\n\
         /* crate::node */ let r = r#\"\"// crate::devnet\"#;",
    );
    assert_eq!(
        crate_paths(&code),
        vec![
            (1, "ledger".to_string()),
            (3, "rpc".to_string()),
            (4, "proof".to_string()),
            (4, "types".to_string()),
        ]
    );
}
