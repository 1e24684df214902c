//! HTTP routes: which part of the node answers which request.
//!
//! | request | answer |
//! |---|---|
//! | `POST` (any path) | JSON-RPC ([`crate::rpc`]) |
//! | `GET /health` | [`crate::health`]: 200 or 503 with a small JSON body (`?live`: only whether it is stuck) |
//! | `GET /metrics` | [`crate::metrics`]: the Prometheus text format |
//! | `GET /` asking for HTML (a browser) | [`crate::status_page`]: the status page |
//! | `OPTIONS` (any path) | a CORS preflight answer, 204, allowing the headers it asks for |
//! | anything else (`GET /` from curl too) | 405 |
//!
//! Every answer carries `Access-Control-Allow-Origin` as [`Cors`] says, so a
//! page on another origin (a block explorer) can call the node with `fetch`.
//! `HEAD` is answered as `GET` without the body. This runs on the server's
//! one loop thread, which owns the request counters.
//!
//! A body holding a `dev_*` call ([`crate::rpc::dev`]) is not answered on
//! the loop: it goes to the devnet's sync thread, which answers it once the
//! call's effect is readable, and the loop serves other connections
//! meanwhile ([`Handler::handle_deferrable`]). Its counts come back on a
//! channel and are added before the next request is handled.

pub mod args;

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::health::{Health, SourceKind};
use crate::metrics::{Metrics, Route};
use crate::rpc::{CallOutcome, Rpc, RpcError, Tally};
use crate::server::{Defer, Handler, HttpMethod, HttpRequest, HttpResponse, Stats};
use crate::status_page;
use crate::sync::devnet::{Job, Refuse};

const JSON: &str = "application/json";
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which browser origins may read the node's answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Cors {
    /// Any origin (`Access-Control-Allow-Origin: *`), the default.
    #[default]
    Any,
    /// Only this one (`--cors-origin`, e.g. `https://explorer.example`): it is
    /// echoed to requests that carry it; other origins get no
    /// `Access-Control-Allow-Origin`, so their browsers refuse the answer.
    Origin(String),
}

/// How the calls of a body answered on the sync thread went, and how long
/// the whole body took.
type Tallied = (Vec<(Option<String>, CallOutcome)>, Duration);

/// The node's [`Handler`].
pub struct Routes {
    rpc: Arc<Rpc>,
    health: Health,
    metrics: Metrics,
    cors: Cors,
    stats: Option<Arc<Stats>>,
    /// Counts of bodies answered on the devnet's sync thread.
    tallied_tx: Sender<Tallied>,
    tallied: Receiver<Tallied>,
}

impl Routes {
    /// Routes for `rpc`; `/health` treats the node as having no chain source
    /// (see [`Routes::health`]), CORS allows any origin.
    pub fn new(rpc: Arc<Rpc>) -> Routes {
        let health = health_of(&rpc, SourceKind::None, Duration::from_secs(60));
        let (tallied_tx, tallied) = mpsc::channel();
        Routes {
            rpc,
            health,
            metrics: Metrics::default(),
            cors: Cors::Any,
            stats: None,
            tallied_tx,
            tallied,
        }
    }

    /// Sets what `/health` knows of the chain source, the longest stall it
    /// allows and how many L2 blocks the ledger may be behind the source.
    pub fn health(mut self, source: SourceKind, max_lag: Duration, max_behind: u64) -> Routes {
        self.health = health_of(&self.rpc, source, max_lag).max_behind(max_behind);
        self
    }

    /// Sets which origins may read answers.
    pub fn cors(mut self, cors: Cors) -> Routes {
        self.cors = cors;
        self
    }

    /// Gives `/metrics` the transport's counters (open connections).
    pub fn stats(mut self, stats: Arc<Stats>) -> Routes {
        self.stats = Some(stats);
        self
    }

    fn rpc(&mut self, body: &[u8]) -> HttpResponse {
        let started = Instant::now();
        let body = self
            .rpc
            .handle_tallied(body, &mut self.metrics)
            .unwrap_or_default();
        self.metrics.request(Route::Rpc, started.elapsed());
        HttpResponse::new(200, JSON, body)
    }

    /// Adds the counts of bodies answered on the sync thread since last time.
    fn add_tallied(&mut self) {
        while let Ok((calls, took)) = self.tallied.try_recv() {
            for (method, outcome) in &calls {
                self.metrics.call(method.as_deref(), *outcome);
            }
            self.metrics.request(Route::Rpc, took);
        }
    }

    /// Hands a body with `dev_*` calls to the devnet's sync thread, which
    /// answers it through `defer`; `false` when this node does not take them.
    fn defer_to_devnet(&mut self, request: &HttpRequest<'_>, defer: &mut Defer<'_>) -> bool {
        let Some(control) = self.rpc.dev_control() else {
            return false;
        };
        let started = Instant::now();
        let later = defer.later();
        let mut headers = Vec::with_capacity(2);
        self.allow_origin(request.origin, &mut headers);
        let rpc = self.rpc.clone();
        let body = request.body.to_vec();
        let tallied = self.tallied_tx.clone();
        let job: Job = Box::new(move |exec| {
            let mut calls = Vec::new();
            let answer = rpc.handle_dev(&body, exec, &mut calls);
            let _ = tallied.send((calls, started.elapsed()));
            let answer = HttpResponse::new(200, JSON, answer.unwrap_or_default());
            later.answer(HttpResponse { headers, ..answer });
        });
        if let Err(job) = control.submit(job) {
            // The sync thread has stopped: every call is refused, now.
            job(&mut Refuse);
        }
        true
    }

    /// Adds the CORS headers an answer to `origin` carries.
    fn allow_origin(&self, origin: Option<&str>, headers: &mut Vec<(&'static str, String)>) {
        match &self.cors {
            Cors::Any => headers.push(("Access-Control-Allow-Origin", "*".to_string())),
            Cors::Origin(allowed) => {
                if origin == Some(allowed.as_str()) {
                    headers.push(("Access-Control-Allow-Origin", allowed.clone()));
                }
                // The answer depends on the Origin header: caches must know.
                headers.push(("Vary", "Origin".to_string()));
            }
        }
    }
}

/// `/health` over `rpc`'s ledger and progress.
fn health_of(rpc: &Rpc, source: SourceKind, max_lag: Duration) -> Health {
    Health::new(
        rpc.ledger().clone(),
        rpc.progress().clone(),
        source,
        max_lag,
    )
}

fn method_not_allowed() -> HttpResponse {
    let error = RpcError::invalid_request(
        "send JSON-RPC requests with HTTP POST; GET serves / (the status page, to a browser: \
         Accept: text/html), /health and /metrics",
    );
    HttpResponse::new(405, JSON, error.body()).with("Allow", "POST, OPTIONS")
}

/// The answer to a CORS preflight: the headers it asks for
/// (`Access-Control-Request-Headers`) are allowed, as Citrea's node allows
/// any header (`tower_http`'s `allow_headers(Any)`). They are echoed, not
/// answered `*`: browsers never let `*` cover `Authorization`. A list that
/// is not header names is not echoed (`Content-Type` alone is allowed).
fn preflight(requested: Option<&str>) -> HttpResponse {
    let names = |s: &str| {
        s.split(',').all(|name| {
            let name = name.trim();
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.!#$%&'*+^`|~".contains(&b))
        })
    };
    let allowed = match requested.map(str::trim) {
        Some(list) if list.len() <= 1024 && names(list) => list,
        _ => "Content-Type",
    };
    HttpResponse::new(204, "text/plain", Vec::new())
        .with("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
        .with("Access-Control-Allow-Headers", allowed)
        .with("Access-Control-Max-Age", "86400")
        // The answer depends on what was asked: caches must know.
        .with("Vary", "Access-Control-Request-Headers")
}

impl Handler for Routes {
    fn handle_deferrable(
        &mut self,
        request: &HttpRequest<'_>,
        defer: &mut Defer<'_>,
    ) -> Option<HttpResponse> {
        if request.method == HttpMethod::Post
            && self.rpc.defers(request.body)
            && self.defer_to_devnet(request, defer)
        {
            return None;
        }
        Some(self.handle(request))
    }

    fn handle(&mut self, request: &HttpRequest<'_>) -> HttpResponse {
        self.add_tallied();
        let (path, query) = request.path.split_once('?').unwrap_or((request.path, ""));
        let get = matches!(request.method, HttpMethod::Get | HttpMethod::Head);
        let mut response = match request.method {
            // Counted (and timed) inside.
            HttpMethod::Post => self.rpc(request.body),
            HttpMethod::Options => {
                self.metrics.request(Route::Preflight, Duration::ZERO);
                preflight(request.request_headers)
            }
            _ if get && path == "/health" => {
                self.metrics.request(Route::Health, Duration::ZERO);
                let live = query
                    .split('&')
                    .any(|p| p == "live" || p.starts_with("live="));
                let report = if live {
                    self.health.check_live()
                } else {
                    self.health.check()
                };
                HttpResponse::new(report.status, JSON, report.body)
                    .with("Cache-Control", "no-store")
            }
            _ if get && path == "/metrics" => {
                // Counted first, so a scrape sees itself.
                self.metrics.request(Route::Metrics, Duration::ZERO);
                let (progress, ledger) = (self.rpc.progress(), self.rpc.ledger());
                let body = self.metrics.render(progress, self.stats.as_deref(), ledger);
                HttpResponse::new(200, PROMETHEUS, body).with("Cache-Control", "no-store")
            }
            _ if get && path == "/" && status_page::wants_html(request.accept) => {
                self.metrics.request(Route::Page, Duration::ZERO);
                status_page::response()
            }
            _ => {
                self.metrics.request(Route::Other, Duration::ZERO);
                match method_not_allowed() {
                    // A browser gets the status page here: caches must know.
                    answer if get && path == "/" => answer.with("Vary", "Accept"),
                    answer => answer,
                }
            }
        };
        self.allow_origin(request.origin, &mut response.headers);
        response
    }

    fn too_large(&mut self, limit: usize) -> HttpResponse {
        self.metrics.call(None, CallOutcome::Error(-32007));
        self.metrics.request(Route::Other, Duration::ZERO);
        let mut response = HttpResponse::new(413, JSON, RpcError::too_big(limit).body());
        // The request's Origin is not known here: only `*` can be sent.
        if self.cors == Cors::Any {
            self.allow_origin(None, &mut response.headers);
        }
        response
    }
}
