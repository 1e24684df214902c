//! The docs' curl examples are a promise: each `$ curl -s localhost:12346 -d '...'`
//! line in README.md or a page under docs/ (but docs/DEVNET.md, whose
//! examples drive a devnet of their own: tests/it/devnet_control.rs), sent to
//! the node the docs name
//! (`ledgerd --dev --dev-prefill 200 --dev-block-ms 0`), gives the answer
//! printed under it (long proof byte arrays are cut there with
//! `…(N more bytes)…`, so those answers are matched around the cut; an empty
//! line is an empty body, as for a notification).

use crate::common;

use common::Ledgerd;

struct Example {
    /// `FILE line N`, for the failure message.
    place: String,
    body: String,
    answer: String,
}

fn examples(file: &str, text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(cmd) = line.strip_prefix("$ curl -s localhost:12346 -d '") else {
            continue;
        };
        let body = cmd
            .strip_suffix('\'')
            .unwrap_or_else(|| panic!("{file} line {}: body ends with a quote", i + 1));
        let answer = lines
            .get(i + 1)
            .unwrap_or_else(|| panic!("{file} line {}: an answer follows", i + 1));
        out.push(Example {
            place: format!("{file} line {}", i + 1),
            body: body.to_string(),
            answer: answer.to_string(),
        });
    }
    out
}

/// Matches `actual` against an answer that may hold one `…(N more bytes)…` cut.
fn matches(expected: &str, actual: &str) -> bool {
    match expected.split_once('…') {
        None => expected == actual,
        Some((before, rest)) => {
            let Some((cut, after)) = rest.split_once('…') else {
                return false;
            };
            let Some(n) = cut
                .strip_prefix('(')
                .and_then(|c| c.strip_suffix(" more bytes)"))
                .and_then(|c| c.parse::<usize>().ok())
            else {
                return false;
            };
            let Some(middle) = actual
                .strip_prefix(before)
                .and_then(|m| m.strip_suffix(after))
            else {
                return false;
            };
            // The cut holds exactly N more comma-separated byte values.
            let bytes: Vec<&str> = middle.split(',').filter(|s| !s.is_empty()).collect();
            bytes.len() == n && bytes.iter().all(|b| b.parse::<u8>().is_ok())
        }
    }
}

/// README.md and every page under docs/, with their curl examples.
fn documented_examples() -> Vec<(String, Vec<Example>)> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut files = vec![String::from("README.md")];
    let mut pages: Vec<String> = std::fs::read_dir(format!("{root}/docs"))
        .expect("docs/ is readable")
        .map(|e| {
            e.expect("docs/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".md"))
        // Its examples change the chain, in order, on a node of their own:
        // tests/it/devnet_control.rs checks them there.
        .filter(|name| name != "DEVNET.md")
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(format!("{root}/{file}"))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            let found = examples(&file, &text);
            (file, found)
        })
        .collect()
}

#[test]
fn every_curl_example_in_the_docs_answers_as_shown() {
    let docs = documented_examples();
    let count = |name: &str| {
        docs.iter()
            .find(|(file, _)| file == name)
            .map_or(0, |(_, found)| found.len())
    };
    assert!(count("README.md") >= 3, "the README shows three calls");
    assert!(count("docs/API.md") >= 30, "docs/API.md shows every method");
    let dir = tempfile::tempdir().expect("temp dir");
    // The docs say their answers come from this devnet.
    let node = Ledgerd::builder().dev(200, 0).data_dir(dir.path()).start();
    let mut wrong = Vec::new();
    for ex in docs.iter().flat_map(|(_, found)| found) {
        let (_, actual) = node.post_raw(&ex.body);
        if !matches(&ex.answer, &actual) {
            wrong.push(format!(
                "{}: curl -d '{}'\n  docs: {:.300}\n  node: {:.300}",
                ex.place, ex.body, ex.answer, actual
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_method_has_an_example_in_the_api_docs() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/API.md"))
        .expect("docs/API.md");
    let found = examples("docs/API.md", &text);
    for method in ledgerd::rpc::METHOD_NAMES {
        let call = format!("\"method\":\"{method}\"");
        assert!(
            found.iter().any(|ex| ex.body.contains(&call)),
            "docs/API.md has no curl example calling {method}"
        );
    }
}

#[test]
fn a_cut_answer_matches_only_with_the_right_number_of_bytes() {
    let expected = "[1,2,…(3 more bytes)…]";
    assert!(matches(expected, "[1,2,3,4,5]"));
    assert!(!matches(expected, "[1,2,3,4]"));
    assert!(!matches(expected, "[1,2,3,4,5,6]"));
    assert!(!matches(expected, "[9,2,3,4,5]"));
}
