//! The README's curl examples are a promise: each `$ curl ... -d '...'` line
//! in a console block, sent to the node the README names, gives the answer
//! printed under it (long proof byte arrays are cut there with
//! `…(N more bytes)…`, so those answers are matched around the cut).

mod common;

use common::{devnet_args, Ledgerd};

struct Example {
    body: String,
    answer: String,
}

fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(cmd) = line.strip_prefix("$ curl -s localhost:12346 -d '") else {
            continue;
        };
        let body = cmd
            .strip_suffix('\'')
            .unwrap_or_else(|| panic!("README line {}: body ends with a quote", i + 1));
        let answer = lines
            .get(i + 1)
            .unwrap_or_else(|| panic!("README line {}: an answer follows", i + 1));
        out.push(Example {
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

#[test]
fn every_curl_example_in_the_readme_answers_as_shown() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let examples = examples(&readme);
    assert!(examples.len() >= 20, "{} examples", examples.len());
    let dir = tempfile::tempdir().expect("temp dir");
    // The README says its answers come from this devnet.
    let node = Ledgerd::start_in(dir.path(), &devnet_args(200, 0));
    let mut wrong = Vec::new();
    for ex in &examples {
        let (_, actual) = node.post_raw(&ex.body);
        if !matches(&ex.answer, &actual) {
            wrong.push(format!(
                "curl -d '{}'\n  README: {:.300}\n  node:   {:.300}",
                ex.body, ex.answer, actual
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_cut_answer_matches_only_with_the_right_number_of_bytes() {
    let expected = "[1,2,…(3 more bytes)…]";
    assert!(matches(expected, "[1,2,3,4,5]"));
    assert!(!matches(expected, "[1,2,3,4]"));
    assert!(!matches(expected, "[1,2,3,4,5,6]"));
    assert!(!matches(expected, "[9,2,3,4,5]"));
}
