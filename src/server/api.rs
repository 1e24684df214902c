//! What a caller of the server sees: its limits ([`ServerConfig`]), a request
//! and an answer ([`HttpRequest`], [`HttpResponse`]), the [`Handler`] that
//! turns one into the other, the counters ([`Stats`]) and why it could not
//! start ([`ServerError`]). The loop that serves them is in mod.rs.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Duration;

use super::args;
use super::deferred::Defer;
#[cfg(doc)]
use super::deferred::Later;

/// Transport limits.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest accepted request body (default 10 MiB).
    pub max_body: usize,
    /// Concurrent connections; a new connection over it is answered 503 and closed (default 100).
    pub max_connections: usize,
    /// Keep-alive idle time and per-read timeout (default 10 s).
    pub idle_timeout: Duration,
    /// The whole body must arrive within this (default 5 s).
    pub body_timeout: Duration,
    /// Longest time spent writing one response off the loop (default 10 s).
    pub write_timeout: Duration,
    /// After this many requests a keep-alive connection is closed (default 1000).
    pub max_requests_per_connection: u32,
    /// Set SO_REUSEPORT before binding, so several processes share one port
    /// and the kernel spreads connections over them (default false).
    pub reuse_port: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body: args::DEFAULT_MAX_BODY,
            max_connections: args::DEFAULT_MAX_CONNECTIONS,
            idle_timeout: Duration::from_millis(args::DEFAULT_IDLE_TIMEOUT_MS),
            body_timeout: Duration::from_millis(args::DEFAULT_BODY_TIMEOUT_MS),
            write_timeout: Duration::from_millis(args::DEFAULT_WRITE_TIMEOUT_MS),
            max_requests_per_connection: args::DEFAULT_MAX_REQUESTS_PER_CONNECTION,
            reuse_port: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
    Options,
    Head,
    Other,
}

impl HttpMethod {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Head => "HEAD",
            HttpMethod::Other => "OTHER",
        }
    }
}

#[derive(Debug)]
pub struct HttpRequest<'a> {
    pub method: HttpMethod,
    pub path: &'a str,
    pub body: &'a [u8],
    pub origin: Option<&'a str>,
    /// The `Accept` header: which answer types the client takes (a browser
    /// lists `text/html`).
    pub accept: Option<&'a str>,
    /// A CORS preflight's `Access-Control-Request-Headers`: the headers the
    /// browser's request will carry.
    pub request_headers: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl HttpResponse {
    /// An answer without headers of its own.
    pub fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> HttpResponse {
        HttpResponse {
            status,
            content_type,
            body,
            headers: Vec::new(),
        }
    }

    /// The answer with one more header.
    pub fn with(mut self, name: &'static str, value: &str) -> HttpResponse {
        self.headers.push((name, value.to_string()));
        self
    }
}

pub trait Handler {
    fn handle(&mut self, request: &HttpRequest<'_>) -> HttpResponse;
    /// The answer for a body over max_body (the handler writes the JSON-RPC -32007 error; status must be 413).
    fn too_large(&mut self, limit: usize) -> HttpResponse;
    /// [`Handler::handle`], or `None` after taking [`Defer::later`]: the
    /// request is then answered when that [`Later`] is, from any thread,
    /// while the loop serves other connections.
    fn handle_deferrable(
        &mut self,
        request: &HttpRequest<'_>,
        _defer: &mut Defer<'_>,
    ) -> Option<HttpResponse> {
        Some(self.handle(request))
    }
}

/// Counters shared with other threads (metrics).
#[derive(Debug, Default)]
pub struct Stats {
    /// Open client connections: distinct peers of sockets bound to our address,
    /// from a /proc/self/fd scan at most 10 ms old under load (500 ms when idle).
    pub open_connections: AtomicUsize,
    /// Requests received.
    pub requests: AtomicU64,
    /// Times tiny_http's accept thread ended and a new server was built.
    pub accept_restarts: AtomicU64,
    /// Connections whose tiny_http objects were leaked to avoid a huge drain.
    pub leaked_connections: AtomicUsize,
    /// Throw-away connections opened to get a stranded connection a tiny_http
    /// worker (see `STRANDED_AFTER`).
    pub pool_kicks: AtomicU64,
}

#[derive(Debug)]
pub enum ServerError {
    /// The address could not be bound or configured.
    Listen {
        addr: String,
        source: std::io::Error,
    },
    /// tiny_http could not start on the listener.
    Start(String),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Listen { addr, source } => {
                let why = match source.kind() {
                    std::io::ErrorKind::AddrInUse => "address in use".to_string(),
                    std::io::ErrorKind::AddrNotAvailable => "address not available".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => source.to_string(),
                };
                write!(f, "cannot listen on {addr}: {why}")
            }
            ServerError::Start(why) => write!(f, "cannot start the HTTP server: {why}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Listen { source, .. } => Some(source),
            ServerError::Start(_) => None,
        }
    }
}
