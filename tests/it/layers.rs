//! Imports run one way. A file of `src/` names (`crate::x::y`, `super::y`)
//! only modules of its own row of docs/DESIGN.md's layer table or of a row
//! below it, and no two files name each other, directly or around a circle
//! of any length (whatever their rows). The table is read from
//! docs/DESIGN.md itself, so the drawing and this check cannot drift apart;
//! a new module fails here until a row places it. Test code (`tests.rs`,
//! `#[cfg(test)]` items) is left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rows of the layer table, top first: module path (`ledger`,
/// `source::bitcoin::p2p`) -> row number. A module's row is that of the longest
/// entry that is it or one of its parents.
fn layer_table(design: &str) -> BTreeMap<String, usize> {
    let section = design
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("docs/DESIGN.md has a \"## Layers\" section");
    let mut rows = BTreeMap::new();
    let mut row = 0;
    for line in section.lines() {
        // Table rows: `| 1 | `main`, `cmd` | what they are |`.
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
            assert!(
                rows.insert(name.to_string(), row).is_none(),
                "`{name}` has two rows in the layer table"
            );
        }
    }
    assert!(
        rows.len() > 10 && row >= 10,
        "docs/DESIGN.md's layer table was not found, or has too few rows: {rows:?}"
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

/// `code` (from [`code_of`]) with every `#[cfg(test)]` item blanked out,
/// newlines kept: the attribute, and the item up to its `;` or the end of
/// its first `{...}` block.
fn without_test_items(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let start = code[..at].chars().count();
        let mut i = start;
        let mut depth = 0usize;
        while i < out.len() {
            let c = out[i];
            match c {
                ';' if depth == 0 => break,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let end = (i + 1).min(out.len());
        for c in out[start..end].iter_mut() {
            if *c != '\n' {
                *c = ' ';
            }
        }
    }
    out.into_iter().collect()
}

/// Where a path starts.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Root {
    /// `crate::`
    Crate,
    /// `super::` (`super::super::` is 2).
    Super(usize),
}

/// Every `crate::` and `super::` path in `code`, with its line: `use`
/// trees expanded (`crate::{a::b, c}` is `a::b` and `c`), the segments as
/// written (items included: resolution keeps the longest module prefix).
fn paths_of(code: &str) -> Vec<(usize, Root, Vec<String>)> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
        let starts = rest.starts_with("crate::") || rest.starts_with("super::");
        let boundary =
            i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':' || chars[i - 1] == '$');
        if !(starts && boundary) {
            i += 1;
            continue;
        }
        let line = chars[..i].iter().filter(|&&c| c == '\n').count() + 1;
        let mut supers = 0;
        let mut j = i;
        let root = if rest.starts_with("crate::") {
            j += 7;
            Root::Crate
        } else {
            while chars[j..].iter().take(7).collect::<String>() == "super::" {
                supers += 1;
                j += 7;
            }
            Root::Super(supers)
        };
        let (trees, end) = use_tree(&chars, j);
        for segments in trees {
            found.push((line, root.clone(), segments));
        }
        i = end.max(i + 1);
    }
    found
}

/// The paths a use tree starting at `at` names, and where it ends.
fn use_tree(c: &[char], mut at: usize) -> (Vec<Vec<String>>, usize) {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let skip_ws = |at: &mut usize| {
        while *at < c.len() && c[*at].is_whitespace() {
            *at += 1;
        }
    };
    let mut prefix = Vec::new();
    loop {
        skip_ws(&mut at);
        if at < c.len() && c[at] == '{' {
            at += 1;
            let mut all = Vec::new();
            loop {
                skip_ws(&mut at);
                if at >= c.len() {
                    return (all, at);
                }
                if c[at] == '}' {
                    at += 1;
                    break;
                }
                if c[at] == ',' {
                    at += 1;
                    continue;
                }
                let (inner, end) = use_tree(c, at);
                for p in inner {
                    let mut full = prefix.clone();
                    full.extend(p);
                    all.push(full);
                }
                if end == at {
                    at += 1;
                } else {
                    at = end;
                }
            }
            return (all, at);
        }
        let start = at;
        while at < c.len() && is_ident(c[at]) {
            at += 1;
        }
        if at == start {
            break;
        }
        prefix.push(c[start..at].iter().collect());
        if c.get(at) == Some(&':') && c.get(at + 1) == Some(&':') {
            at += 2;
            continue;
        }
        break;
    }
    (vec![prefix], at)
}

/// A file's module path: `src/ledger/mod.rs` is `ledger`, `src/ledger/read.rs`
/// is `ledger::read`, `src/main.rs` is `main`.
fn module_of(file: &Path, src: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("a file of src/");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    parts
}

/// The row of a module: that of the longest table entry that is it or a
/// parent of it.
fn row_of(module: &[String], rows: &BTreeMap<String, usize>) -> Option<(String, usize)> {
    (1..=module.len()).rev().find_map(|n| {
        let name = module[..n].join("::");
        rows.get(&name).map(|&row| (name, row))
    })
}

/// The non-test files of `src/` (not `lib.rs`, not `tests.rs` and not what
/// a `tests/` directory holds) with their module paths and their code.
fn sources(src: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let rel = f.strip_prefix(src).expect("under src/");
            rel != Path::new("lib.rs")
                && f.file_name().is_some_and(|n| n != "tests.rs")
                && !rel.components().any(|c| c.as_os_str() == "tests")
        })
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("a source file reads");
            let code = without_test_items(&code_of(&text));
            let module = module_of(&f, src);
            (f, module, code)
        })
        .collect()
}

/// Resolves a path named in the file of module `from` to the file of the
/// longest module prefix it names (`crate::ledger::read::X` is the file of
/// `ledger::read`; `crate::config::heading::X`, an inline module, is
/// `config`'s), or `None` for a path outside the crate's files.
fn resolve(
    from: &[String],
    root: &Root,
    segments: &[String],
    files: &BTreeMap<Vec<String>, usize>,
) -> Option<usize> {
    let mut full: Vec<String> = match root {
        Root::Crate => Vec::new(),
        Root::Super(n) => {
            // `super` of `a::b` is `a`, whether `a::b` is a/b.rs or a/b/mod.rs.
            from.len().checked_sub(*n).map(|k| from[..k].to_vec())?
        }
    };
    full.extend(segments.iter().cloned());
    (0..=full.len())
        .rev()
        .find_map(|n| files.get(&full[..n]).copied())
}

struct Graph {
    /// file index -> (target file index -> first line naming it)
    edges: Vec<BTreeMap<usize, usize>>,
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(graph: &Graph) -> Vec<Vec<usize>> {
    struct State<'a> {
        g: &'a Graph,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        let targets: Vec<usize> = s.g.edges[v].keys().copied().collect();
        for w in targets {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                part.push(w);
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.out.push(part);
            }
        }
    }
    let n = graph.edges.len();
    let mut s = State {
        g: graph,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A non-test file of `src/`: its path, its module path, its code.
type Source = (PathBuf, Vec<String>, String);

/// The files, their import graph, and the upward imports by the table.
fn read_src(rows: &BTreeMap<String, usize>) -> (Vec<Source>, Graph, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let files = sources(&src);
    let by_module: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (_, m, _))| (m.clone(), i))
        .collect();
    let mut graph = Graph {
        edges: vec![BTreeMap::new(); files.len()],
    };
    let mut upward = Vec::new();
    for (i, (file, module, code)) in files.iter().enumerate() {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let (own_name, own_row) = row_of(module, rows).unwrap_or_else(|| {
            panic!(
                "{shown} is module `{}`, which docs/DESIGN.md's layer table does not place: \
                 add it to the row it belongs in",
                module.join("::")
            )
        });
        for (line, path_root, segments) in paths_of(code) {
            let Some(target) = resolve(module, &path_root, &segments, &by_module) else {
                continue;
            };
            if target == i {
                continue;
            }
            graph.edges[i].entry(target).or_insert(line);
            let (named, named_row) = row_of(&files[target].1, rows).unwrap_or_else(|| {
                panic!(
                    "{shown}:{line} names `{}`, which the layer table does not place",
                    files[target].1.join("::")
                )
            });
            if named_row < own_row {
                upward.push(format!(
                    "{shown}:{line}: `{own_name}` (row {own_row}) imports `{}`, of `{named}` (row {named_row})",
                    files[target].1.join("::")
                ));
            }
        }
    }
    (files, graph, upward)
}

fn design_rows() -> BTreeMap<String, usize> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(root.join("docs/DESIGN.md")).expect("docs/DESIGN.md");
    layer_table(&design)
}

#[test]
fn no_module_imports_a_module_of_a_row_above_its_own() {
    let (_, _, upward) = read_src(&design_rows());
    assert!(
        upward.is_empty(),
        "imports that run up a layer (docs/DESIGN.md, \"Layers\"):\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other_around_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (files, graph, _) = read_src(&design_rows());
    let mut report = Vec::new();
    for circle in circles(&graph) {
        let members: BTreeSet<usize> = circle.iter().copied().collect();
        report.push(format!("a circle of {} files:", circle.len()));
        for &a in &circle {
            for (&b, &line) in &graph.edges[a] {
                if members.contains(&b) {
                    report.push(format!(
                        "  {}:{line} names {}",
                        files[a]
                            .0
                            .strip_prefix(root)
                            .unwrap_or(&files[a].0)
                            .display(),
                        files[b]
                            .0
                            .strip_prefix(root)
                            .unwrap_or(&files[b].0)
                            .display()
                    ));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "files that import each other (break each circle: move what both need below both):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_import_reader_finds_paths_in_code_and_groups_and_not_in_comments_or_tests() {
    let code = without_test_items(&code_of(
        "use crate::ledger::X; // crate::sync\n/// [`crate::server`]\n\
         let s = \"//\"; let q = '\"'; crate::rpc::f();\nuse crate::{proof::{Y, z::W}, types};\n\
         /* crate::node */ let r = r#\"\"// crate::devnet\"#; use super::super::a::B;\n\
         #[cfg(test)]\nmod tests {\n use crate::node::N;\n}\nuse super::c;",
    ));
    let found: Vec<(usize, Root, String)> = paths_of(&code)
        .into_iter()
        .map(|(l, r, s)| (l, r, s.join("::")))
        .collect();
    assert_eq!(
        found,
        vec![
            (1, Root::Crate, "ledger::X".to_string()),
            (3, Root::Crate, "rpc::f".to_string()),
            (4, Root::Crate, "proof::Y".to_string()),
            (4, Root::Crate, "proof::z::W".to_string()),
            (4, Root::Crate, "types".to_string()),
            (5, Root::Super(2), "a::B".to_string()),
            (10, Root::Super(1), "c".to_string()),
        ]
    );
}

#[test]
fn a_circle_of_three_files_is_found_and_a_chain_is_not() {
    let edges = |list: &[(usize, usize)]| {
        let mut e = vec![BTreeMap::new(); 5];
        for &(a, b) in list {
            e[a].insert(b, 1);
        }
        Graph { edges: e }
    };
    assert_eq!(
        circles(&edges(&[(0, 1), (1, 2), (2, 3)])),
        Vec::<Vec<usize>>::new()
    );
    assert_eq!(
        circles(&edges(&[(0, 1), (1, 2), (2, 0), (3, 4)])),
        vec![vec![0, 1, 2]]
    );
    assert_eq!(circles(&edges(&[(3, 4), (4, 3)])), vec![vec![3, 4]]);
}
