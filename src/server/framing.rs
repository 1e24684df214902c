//! Request framing (RFC 9112 section 6): where a request's body ends, decided
//! from its headers alone, before any of the body is read.
//!
//! A request whose end two HTTP parsers could place differently is refused,
//! not guessed at: a front (nginx, HAProxy) or a pooling client library that
//! reads it one way while ledgerd reads it another would take the rest of
//! the bytes for a second request (request smuggling). The rules, in the
//! order they are checked:
//!
//! | headers | answer |
//! |---|---|
//! | `Transfer-Encoding` and `Content-Length` together | 400 |
//! | `Transfer-Encoding` in an HTTP/1.0 request | 400 |
//! | `Transfer-Encoding` whose last coding is not `chunked` | 400 (RFC 9112 6.3 item 4) |
//! | `Transfer-Encoding` other than exactly one `chunked` | 501 (a coding ledgerd does not implement) |
//! | more than one `Content-Length` line | 400 |
//! | `Content-Length` not one plain decimal that fits u64 (`abc`, `-1`, `+5`, `1, 2`, empty, 10^23) | 400 |
//!
//! Every refusal closes the connection after the answer (the server loop does
//! that), since nothing after the refused head can be trusted to start a
//! request. What passes is framed the same way by tiny_http: a single
//! `Content-Length` of plain digits is parsed identically, and
//! `Transfer-Encoding: chunked` alone is the one case where tiny_http decodes
//! chunks (it decodes chunks for *any* `Transfer-Encoding` and ignores
//! `Content-Length` when one is present, which is why every other case is
//! refused here).
//!
//! tiny_http hands the headers over with their values trimmed and answers
//! malformed header lines (no colon, whitespace in a name, so also
//! `Content-Length : 5` and folded lines) with its own 400 before they reach
//! this check.

/// How the body of an accepted request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Neither header: no body.
    NoBody,
    /// Exactly one `Content-Length` with this value.
    Length(u64),
    /// `Transfer-Encoding: chunked` alone.
    Chunked,
}

/// Why a request is refused: the HTTP status and the sentence that becomes the
/// JSON-RPC error's `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 400 or 501.
    pub status: u16,
    /// What is wrong and what to send instead.
    pub data: String,
}

impl Refusal {
    fn bad(data: String) -> Refusal {
        Refusal { status: 400, data }
    }

    /// The answer's body: a JSON-RPC error (`-32600`, id null) whose `data`
    /// is [`Refusal::data`].
    pub fn body(&self) -> Vec<u8> {
        let message = if self.status == 501 {
            "Transfer-Encoding not supported"
        } else {
            "Invalid request framing"
        };
        // `-32600`, as the RPC layer's `RpcError::framing`; the data is
        // escaped (it may quote a header value).
        crate::wire::write::error_answer(-32600, message, &self.data)
    }
}

/// Longest part of a header value quoted back in a refusal.
const QUOTE_MAX: usize = 40;

/// `value` as quoted in a refusal: in double quotes, at most [`QUOTE_MAX`]
/// characters, quotes, backslashes and control characters escaped.
fn quote(value: &str) -> String {
    match value.char_indices().nth(QUOTE_MAX) {
        Some((cut, _)) => format!("{:?}...", &value[..cut]),
        None => format!("{value:?}"),
    }
}

/// Whether `v` is a plain decimal `Content-Length` (1*DIGIT, RFC 9110 8.6)
/// that fits u64.
fn plain_decimal(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// Decides the framing of a request from its header lines, `(name, value)`
/// with values trimmed as tiny_http hands them over. `http_1_0`: the request
/// line says HTTP/1.0 (or older).
///
/// Costs one pass over the headers and no allocation for a well-framed request.
pub fn check<'a>(
    http_1_0: bool,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Framing, Refusal> {
    let mut lengths = 0usize;
    let mut length: Option<&str> = None;
    let mut encodings = 0usize;
    let mut encoding: (&str, &str) = ("", "");
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("Content-Length") {
            lengths += 1;
            length.get_or_insert(value);
        } else if name.eq_ignore_ascii_case("Transfer-Encoding") {
            if encodings == 0 {
                encoding.0 = value;
            }
            encodings += 1;
            encoding.1 = value;
        }
    }
    if encodings > 0 {
        if lengths > 0 {
            return Err(Refusal::bad(
                "the request has both Transfer-Encoding and Content-Length, so its body length \
                 is ambiguous; send only one of them"
                    .into(),
            ));
        }
        if http_1_0 {
            return Err(Refusal::bad(
                "Transfer-Encoding is not allowed in an HTTP/1.0 request; send Content-Length \
                 or use HTTP/1.1"
                    .into(),
            ));
        }
        let (first, last_line) = encoding;
        if encodings == 1 && first.eq_ignore_ascii_case("chunked") {
            return Ok(Framing::Chunked);
        }
        // Codings apply in order, the lines' too: only the last one tells
        // where the body ends (RFC 9112 6.3).
        let last = last_line.rsplit(',').next().unwrap_or("").trim();
        if !last.eq_ignore_ascii_case("chunked") {
            let what = if encodings == 1 {
                format!("Transfer-Encoding {} does", quote(first))
            } else {
                format!("the {encodings} Transfer-Encoding headers do")
            };
            return Err(Refusal::bad(format!(
                "{what} not end with chunked, so the body length cannot be determined; send \
                 Transfer-Encoding: chunked or Content-Length"
            )));
        }
        let what = if encodings == 1 {
            format!("Transfer-Encoding {} is", quote(first))
        } else {
            format!("{encodings} Transfer-Encoding headers are")
        };
        return Err(Refusal {
            status: 501,
            data: format!(
                "{what} not supported: ledgerd decodes only one Transfer-Encoding: chunked; send \
                 that or Content-Length"
            ),
        });
    }
    match (lengths, length) {
        (_, None) => Ok(Framing::NoBody),
        (1, Some(v)) => match plain_decimal(v) {
            Some(n) => Ok(Framing::Length(n)),
            None => Err(Refusal::bad(format!(
                "Content-Length {} is not a plain decimal number of bytes (digits only, at \
                 most 18446744073709551615)",
                quote(v)
            ))),
        },
        (n, _) => Err(Refusal::bad(format!(
            "the request has {n} Content-Length headers; send exactly one"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CL: &str = "Content-Length";
    const TE: &str = "Transfer-Encoding";

    fn of(headers: &[(&str, &str)]) -> Result<Framing, Refusal> {
        check(false, headers.iter().copied())
    }

    fn status(headers: &[(&str, &str)]) -> u16 {
        match of(headers) {
            Ok(f) => panic!("{headers:?} accepted as {f:?}"),
            Err(r) => r.status,
        }
    }

    #[test]
    fn plain_requests_are_framed_as_tiny_http_frames_them() {
        assert_eq!(of(&[("Host", "x")]), Ok(Framing::NoBody));
        assert_eq!(of(&[("content-length", "0")]), Ok(Framing::Length(0)));
        assert_eq!(of(&[(CL, "0042")]), Ok(Framing::Length(42)));
        assert_eq!(
            of(&[(CL, "18446744073709551615")]),
            Ok(Framing::Length(u64::MAX))
        );
        assert_eq!(
            of(&[("transfer-encoding", "Chunked")]),
            Ok(Framing::Chunked)
        );
    }

    #[test]
    fn every_ambiguous_content_length_is_400() {
        for v in [
            "abc",
            "-1",
            "+5",
            "1, 2",
            "5, 5",
            "",
            "1 2",
            "0x10",
            "100000000000000000000000",
            "18446744073709551616",
            "5\t",
        ] {
            let r = of(&[(CL, v)]).expect_err(v);
            assert_eq!(r.status, 400, "{v:?}");
            assert!(r.data.contains("Content-Length"), "{v:?}: {}", r.data);
        }
        let r = of(&[(CL, "0"), (CL, "110")]).unwrap_err();
        assert_eq!(r.status, 400);
        assert!(r.data.contains("2 Content-Length headers"), "{}", r.data);
        // Equal values too: one line, one number.
        assert_eq!(status(&[(CL, "5"), ("content-length", "5")]), 400);
    }

    #[test]
    fn transfer_encoding_with_content_length_is_400_whatever_the_order() {
        for h in [
            [(TE, "chunked"), (CL, "4")],
            [(CL, "4"), (TE, "chunked")],
            [(CL, "abc"), (TE, "gzip")],
        ] {
            let r = of(&h).unwrap_err();
            assert_eq!(r.status, 400, "{h:?}");
            assert!(r.data.contains("both"), "{}", r.data);
        }
    }

    #[test]
    fn a_transfer_encoding_other_than_exactly_chunked_is_refused() {
        // The body's end cannot be found: 400.
        for v in [
            "gzip",
            "identity",
            "chunked, gzip",
            "",
            "chunked;x=1",
            "xchunked",
        ] {
            assert_eq!(status(&[(TE, v)]), 400, "{v:?}");
        }
        // It can, but ledgerd does not decode the other codings: 501.
        for v in ["gzip, chunked", "chunked, chunked", "gzip,chunked"] {
            assert_eq!(status(&[(TE, v)]), 501, "{v:?}");
        }
        assert_eq!(status(&[(TE, "chunked"), (TE, "chunked")]), 501);
        assert_eq!(status(&[(TE, "gzip"), (TE, "chunked")]), 501);
        assert_eq!(status(&[(TE, "chunked"), (TE, "gzip")]), 400);
        assert_eq!(check(true, [(TE, "chunked")]).unwrap_err().status, 400);
    }

    #[test]
    fn refusal_bodies_are_json_rpc_errors_even_for_hostile_values() {
        let r = of(&[(CL, "\"}\\\u{1}abc")]).unwrap_err();
        let v: serde_json::Value = serde_json::from_slice(&r.body()).unwrap();
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["id"], serde_json::Value::Null);
        let data = v["error"]["data"].as_str().unwrap();
        assert!(data.contains(r#""\"}\\\u{1}abc""#), "{data}");
        let long = "9".repeat(500);
        let r = of(&[(CL, &long)]).unwrap_err();
        assert!(r.data.len() < 200, "{}", r.data);
    }
}
