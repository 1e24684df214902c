//! JSON-RPC 2.0 and the contract's "Envelope and transport" rows, over real
//! HTTP against a real `ledgerd --dev` process (a devnet-prefilled LMDB
//! ledger in a temp dir), one row per test.

use crate::common;

use std::io::{BufReader, Write};

use common::{connect, exchange, post, read_answer, rpc, Ledgerd, PREFILL};
use serde_json::{json, Value};

fn call(method: &str, params: Value, id: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

/// Asserts one error object: code, id, and a non-empty `data` string.
fn assert_error(v: &Value, code: i64, id: Value) -> String {
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["message"].is_string(), "{v}");
    assert!(v.get("result").is_none(), "{v}");
    let data = v["error"]["data"]
        .as_str()
        .expect("a data string")
        .to_string();
    assert!(!data.is_empty(), "{v}");
    data
}

#[test]
fn a_single_request_is_answered_as_json_whatever_its_content_type() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let body = call("ledger_getHeadSoftConfirmationHeight", json!([]), json!(1));
    for content_type in ["application/json", "text/plain", ""] {
        let header = if content_type.is_empty() {
            String::new()
        } else {
            format!("Content-Type: {content_type}\r\n")
        };
        let raw = format!(
            "POST /any/path HTTP/1.1\r\nHost: x\r\n{header}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let a = exchange(node.addr, raw.as_bytes());
        assert_eq!(a.status, 200);
        assert_eq!(a.header("Content-Type"), Some("application/json"));
        assert_eq!(a.json(), json!({"jsonrpc":"2.0","id":1,"result":PREFILL}));
    }
}

#[test]
fn a_batch_answers_an_array_in_order_with_ids_matched() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let body = format!(
        "[{},{},{},{}]",
        call(
            "ledger_getHeadSoftConfirmationHeight",
            json!([]),
            json!("a")
        ),
        call("ledger_getSoftConfirmationByNumber", json!([3]), json!(2)),
        call("ledger_nope", json!([]), json!(3)),
        call(
            "ledger_getSoftConfirmationByNumber",
            json!([1]),
            json!(null)
        ),
    );
    let v = rpc(node.addr, body.as_bytes()).json();
    let items = v.as_array().expect("an array");
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], json!({"jsonrpc":"2.0","id":"a","result":PREFILL}));
    assert_eq!(items[1]["id"], 2);
    assert_eq!(items[1]["result"]["l2Height"], 3);
    assert_error(&items[2], -32601, json!(3));
    assert_eq!(items[3]["id"], Value::Null);
    assert_eq!(items[3]["result"]["l2Height"], 1);
}

#[test]
fn an_empty_batch_is_one_invalid_request_object_not_an_array() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let a = rpc(node.addr, b"[]");
    assert_eq!(a.status, 200);
    let data = assert_error(&a.json(), -32600, Value::Null);
    assert!(data.contains("empty"), "{data}");
    // Whitespace inside does not make it different.
    assert_error(&rpc(node.addr, b" [ \n ] ").json(), -32600, Value::Null);
}

#[test]
fn each_invalid_batch_element_gets_its_own_invalid_request() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let good = call("ledger_getHeadSoftConfirmationHeight", json!([]), json!(9));
    let body = format!(
        r#"[1, "x", null, [], {{}}, {{"jsonrpc":"1.0","id":5,"method":"svc_syncStatus"}}, {good}]"#
    );
    let v = rpc(node.addr, body.as_bytes()).json();
    let items = v.as_array().expect("an array");
    assert_eq!(items.len(), 7, "{v}");
    for item in &items[..5] {
        assert_error(item, -32600, Value::Null);
    }
    // A readable id is echoed even when the rest of the element is invalid.
    assert_error(&items[5], -32600, json!(5));
    assert_eq!(items[6], json!({"jsonrpc":"2.0","id":9,"result":PREFILL}));
}

#[test]
fn a_batch_over_max_batch_is_one_batch_too_large_error() {
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&["--max-batch", "3"])
        .start();
    let one = call("ledger_getHeadSoftConfirmationHeight", json!([]), json!(1));
    let at_limit = format!("[{one},{one},{one}]");
    assert_eq!(
        rpc(node.addr, at_limit.as_bytes())
            .json()
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    let over = format!("[{one},{one},{one},{one}]");
    let a = rpc(node.addr, over.as_bytes());
    assert_eq!(a.status, 200);
    let v = a.json();
    assert!(v.is_object(), "one object, not an array: {v}");
    assert_eq!(v["error"]["message"], "The batch request was too large");
    let data = assert_error(&v, -32010, Value::Null);
    assert!(data.contains('3') && data.contains('4'), "{data}");
}

#[test]
fn notifications_get_no_response_object() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let note = r#"{"jsonrpc":"2.0","method":"ledger_getHeadSoftConfirmationHeight","params":[]}"#;
    let failing_note = r#"{"jsonrpc":"2.0","method":"ledger_nope"}"#;
    for body in [
        note.to_string(),
        failing_note.to_string(),
        format!("[{note},{failing_note},{note}]"),
    ] {
        let a = rpc(node.addr, body.as_bytes());
        assert_eq!(a.status, 200, "{body}");
        assert_eq!(a.header("Content-Length"), Some("0"), "{body}");
        assert!(a.body.is_empty(), "{body}: {}", a.text());
    }
    // In a mixed batch only the calls with an id are answered.
    let with_id = call("ledger_getHeadSoftConfirmationHeight", json!([]), json!(7));
    let v = rpc(
        node.addr,
        format!("[{note},{with_id},{failing_note}]").as_bytes(),
    )
    .json();
    assert_eq!(v, json!([{"jsonrpc":"2.0","id":7,"result":PREFILL}]));
}

#[test]
fn ids_of_every_json_number_string_and_null_are_echoed_byte_for_byte() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let ids = [
        "0",
        "-7",
        "1.5",
        "-0",
        "-0.0",
        "1e3",
        "2E-5",
        "18446744073709551616",
        "123456789012345678901234567890123456789012",
        "\"\"",
        "\"abc\"",
        "\"☃ ünï 𝄞 €\"",
        r#""esc\"aped\\ \u00e9 \ud834\udd1e \n""#,
        "null",
    ];
    for id in ids {
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"ledger_getHeadSoftConfirmationHeight","params":[],"id":{id}}}"#
        );
        let a = rpc(node.addr, body.as_bytes());
        assert_eq!(
            a.text(),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{PREFILL}}}"#),
            "id {id}"
        );
        // Also in an error answer, and in a batch.
        let bad = format!(r#"{{"jsonrpc":"2.0","method":"nope","id":{id}}}"#);
        let text = rpc(node.addr, format!("[{bad}]").as_bytes()).text();
        assert!(
            text.starts_with(&format!(
                r#"[{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"#
            )),
            "id {id}: {text}"
        );
        let text = rpc(node.addr, bad.as_bytes()).text();
        assert!(
            text.starts_with(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"#
            )),
            "id {id}: {text}"
        );
    }
    // Whitespace around the id is not part of it.
    let body = "{ \"id\" :\n \"a\"\t , \"jsonrpc\":\"2.0\",\"method\":\"ledger_getHeadSoftConfirmationHeight\" }";
    assert_eq!(
        rpc(node.addr, body.as_bytes()).text(),
        format!(r#"{{"jsonrpc":"2.0","id":"a","result":{PREFILL}}}"#)
    );
}

#[test]
fn ids_that_are_objects_arrays_or_booleans_are_invalid_with_id_null() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    for id in ["true", "false", "{}", "[1]", r#"{"a":1}"#] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"svc_syncStatus","id":{id}}}"#);
        let data = assert_error(&rpc(node.addr, body.as_bytes()).json(), -32600, Value::Null);
        assert!(data.contains("`id`"), "{data}");
    }
}

#[test]
fn params_by_position_and_by_name_give_the_same_answers() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let pairs = [
        (
            "ledger_getSoftConfirmationByNumber",
            json!([4]),
            json!({"number": 4}),
        ),
        (
            "ledger_getSoftConfirmationRange",
            json!([2, 3]),
            json!({"start": "2", "end": "0x3"}),
        ),
        (
            "ledger_getSoftConfirmationStatus",
            json!(["0x5"]),
            json!({"number": 5}),
        ),
        (
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            json!([1008]),
            json!({"height": 1008}),
        ),
        (
            "ledger_getVerifiedBatchProofsBySlotHeight",
            json!([1039]),
            json!({"height": 1039}),
        ),
    ];
    for (method, by_position, by_name) in pairs {
        let a = rpc(node.addr, call(method, by_position, json!(1)).as_bytes()).json();
        let b = rpc(node.addr, call(method, by_name, json!(1)).as_bytes()).json();
        assert!(a.get("result").is_some(), "{method}: {a}");
        assert_eq!(a, b, "{method}");
    }
    // A hash by name, taken from the block by number.
    let block = rpc(
        node.addr,
        call("ledger_getSoftConfirmationByNumber", json!([2]), json!(1)).as_bytes(),
    )
    .json();
    let hash = block["result"]["hash"].as_str().expect("hash").to_string();
    let by_hash = rpc(
        node.addr,
        call(
            "ledger_getSoftConfirmationByHash",
            json!({"hash": format!("0x{hash}")}),
            json!(1),
        )
        .as_bytes(),
    )
    .json();
    assert_eq!(by_hash, block);
    // Omitted or empty params, for a method that takes none; extra
    // positional ones, and members the envelope does not know, are ignored.
    for none in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[1,2],"extra":true}"#,
    ] {
        assert_eq!(
            rpc(node.addr, none.as_bytes()).json()["result"],
            PREFILL,
            "{none}"
        );
    }
    let extra = call(
        "ledger_getSoftConfirmationByNumber",
        json!([4, "x", null]),
        json!(1),
    );
    assert_eq!(
        rpc(node.addr, extra.as_bytes()).json()["result"]["l2Height"],
        4
    );
}

#[test]
fn broken_json_and_non_utf8_are_parse_errors_with_id_null() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let bodies: [&[u8]; 13] = [
        b"{",
        br#"{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus""#,
        br#"{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus"} trailing"#,
        b"[1,]",
        b"\xff\xfe{}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"svc_\xc3\x28\"}",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\",\"id\":1}",
        b"",
        b"   ",
        br#"{"jsonrpc":"2.0",}"#,
        b"[1,2",
        b"nul",
        b"{} {}",
    ];
    for body in bodies {
        let a = rpc(node.addr, body);
        assert_eq!(a.status, 200, "{body:?}");
        assert_error(&a.json(), -32700, Value::Null);
        assert_eq!(a.json()["error"]["message"], "Parse error");
    }
}

#[test]
fn json_that_is_not_an_object_or_array_is_invalid_request() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    for body in ["1", "\"x\"", "null", "true", "-2.5", " 2.5 "] {
        let v = rpc(node.addr, body.as_bytes()).json();
        assert_error(&v, -32600, Value::Null);
        assert_eq!(v["error"]["message"], "Invalid request", "{body}");
    }
}

#[test]
fn wrong_jsonrpc_non_string_method_and_bad_params_are_invalid_request() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let cases = [
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"svc_syncStatus"}"#,
            "jsonrpc",
        ),
        (
            r#"{"jsonrpc":2.0,"id":1,"method":"svc_syncStatus"}"#,
            "jsonrpc",
        ),
        (r#"{"id":1,"method":"svc_syncStatus"}"#, "jsonrpc"),
        (r#"{"jsonrpc":"2.0","id":1,"method":1}"#, "method"),
        (r#"{"jsonrpc":"2.0","id":1,"method":null}"#, "method"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":["svc_syncStatus"]}"#,
            "method",
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, "method"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","params":"x"}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","params":1}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","params":null}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","params":true}"#,
            "params",
        ),
    ];
    for (body, member) in cases {
        // A readable id is echoed.
        let data = assert_error(&rpc(node.addr, body.as_bytes()).json(), -32600, json!(1));
        assert!(data.contains(member), "{body}: {data}");
    }
    let v = rpc(
        node.addr,
        br#"{"jsonrpc":null,"id":1,"method":"svc_syncStatus"}"#,
    )
    .json();
    assert_error(&v, -32600, json!(1));
    // Invalid requests are answered even without an id (id null).
    let v = rpc(node.addr, br#"{"jsonrpc":"2.0","method":1}"#).json();
    assert_error(&v, -32600, Value::Null);
    // Duplicate members: malformed, so no id is trusted.
    let v = rpc(
        node.addr,
        br#"{"jsonrpc":"2.0","method":"a","method":"b","id":1}"#,
    )
    .json();
    assert_error(&v, -32600, Value::Null);
}

#[test]
fn unknown_method_is_method_not_found_and_bad_params_invalid_params() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let v = rpc(
        node.addr,
        call("ledger_nope", json!([]), json!(1)).as_bytes(),
    )
    .json();
    let data = assert_error(&v, -32601, json!(1));
    assert_eq!(v["error"]["message"], "Method not found");
    assert!(
        data.contains("ledger_nope") && data.contains("svc_syncStatus"),
        "{data}"
    );
    let v = rpc(
        node.addr,
        call("ledger_getSoftConfirmationByNumber", json!([-1]), json!(1)).as_bytes(),
    )
    .json();
    assert_error(&v, -32602, json!(1));
}

#[test]
fn get_and_other_http_methods_answer_405() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    for raw in [
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /some/path HTTP/1.1\r\nHost: x\r\n\r\n",
        "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        "DELETE / HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let a = exchange(node.addr, raw.as_bytes());
        assert_eq!(a.status, 405, "{raw}");
        assert!(
            a.header("Allow").is_some_and(|v| v.contains("POST")),
            "{raw}"
        );
    }
}

#[test]
fn keep_alive_and_pipelined_requests_are_answered_in_order() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let mut s = connect(node.addr);
    let mut pipelined = Vec::new();
    for i in 1..=5 {
        pipelined.extend(post(
            call("ledger_getSoftConfirmationByNumber", json!([i]), json!(i)).as_bytes(),
        ));
    }
    s.write_all(&pipelined).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 1..=5 {
        let v = read_answer(&mut r).expect("answer").json();
        assert_eq!(
            (v["id"].clone(), v["result"]["l2Height"].clone()),
            (json!(i), json!(i))
        );
    }
}

#[test]
fn a_body_over_max_body_is_413_with_request_too_big() {
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&["--max-body", "2000"])
        .start();
    let pad = "x".repeat(3000);
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","pad":"{pad}"}}"#);
    let a = rpc(node.addr, body.as_bytes());
    assert_eq!(a.status, 413);
    assert_eq!(a.header("Content-Type"), Some("application/json"));
    let v = a.json();
    assert_eq!(v["error"]["message"], "Request is too big");
    let data = assert_error(&v, -32007, Value::Null);
    assert!(
        data.contains("2000") && data.contains("--max-body"),
        "{data}"
    );
    // Just under the limit is answered normally.
    let ok = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","pad":"{}"}}"#,
        "x".repeat(1900)
    );
    assert_eq!(rpc(node.addr, ok.as_bytes()).status, 200);
}
