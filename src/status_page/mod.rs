//! `GET /` from a browser: the status page, one static HTML file
//! (`page.html`, beside this file) compiled into the binary.
//!
//! The page is HTML, CSS and plain JavaScript with nothing to fetch from
//! elsewhere. Its script reads the node the way any client does: batched
//! JSON-RPC `POST`s, `GET /health` and `GET /metrics`, every 1.5 s, at
//! addresses relative to the page (so it works behind a front that serves
//! the node under a path). The node does no work for it beyond those
//! requests: the page is a constant, answered without a ledger read.
//!
//! Only a client that asks for HTML (`Accept: text/html`, as every browser
//! does for a page) gets it; curl, JSON-RPC libraries and anything else keep
//! the JSON-RPC error `GET /` has always answered, so the answer carries
//! `Vary: Accept`.

use crate::server::HttpResponse;

/// The page, as served.
pub const PAGE: &str = include_str!("page.html");

/// Who may run what on the page: its own inline script and style, requests
/// to its own origin only, no frames, forms or plugins.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Whether an `Accept` header asks for HTML: it lists `text/html` (or
/// `application/xhtml+xml`) with a quality above 0. `*/*` alone is not
/// asking for a page: it is what curl sends.
pub fn wants_html(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    accept.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim();
        let html = media.eq_ignore_ascii_case("text/html")
            || media.eq_ignore_ascii_case("application/xhtml+xml");
        let refused = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .or_else(|| p.strip_prefix("Q="))
                .and_then(|q| q.trim().parse::<f64>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        html && !refused
    })
}

/// The answer to `GET /` from a browser.
pub fn response() -> HttpResponse {
    HttpResponse::new(200, "text/html; charset=utf-8", PAGE.as_bytes().to_vec())
        .with("Vary", "Accept")
        // A new binary may serve a new page: revalidate, but the page is
        // small and asked for once per visit.
        .with("Cache-Control", "no-cache")
        .with("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        .with("X-Content-Type-Options", "nosniff")
        .with("Referrer-Policy", "no-referrer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_ask_for_html_and_curl_does_not() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,\
                        image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
        let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert!(wants_html(Some(chromium)));
        assert!(wants_html(Some(firefox)));
        assert!(wants_html(Some("TEXT/HTML")));
        assert!(!wants_html(Some("*/*")), "curl");
        assert!(!wants_html(None));
        assert!(!wants_html(Some("application/json")));
        assert!(!wants_html(Some("text/html;q=0, application/json")));
        assert!(!wants_html(Some("text/htmlx")));
    }

    #[test]
    fn the_page_is_one_small_self_contained_file() {
        assert!(PAGE.starts_with("<!doctype html>"));
        assert!(PAGE.len() < 32 * 1024, "{} bytes", PAGE.len());
        // Nothing is fetched from elsewhere: no absolute URL in a src or href.
        for attr in [
            "src=\"http",
            "href=\"http",
            "src=\"//",
            "href=\"//",
            "@import",
        ] {
            assert!(
                !PAGE.contains(attr),
                "the page loads something from elsewhere: {attr}"
            );
        }
    }
}
