//! HTTP routes: which part of the node answers which request.
//!
//! `POST` (any path) is JSON-RPC ([`crate::rpc`]); `GET /health` and
//! `GET /metrics` are plain HTTP; any other `GET` answers 405. This runs on
//! the server's one loop thread.

use std::sync::Arc;

use crate::rpc::Rpc;
use crate::server::{Handler, HttpMethod, HttpRequest, HttpResponse};

const JSON: &str = "application/json";

/// The node's [`Handler`].
pub struct Routes {
    rpc: Arc<Rpc>,
}

impl Routes {
    pub fn new(rpc: Arc<Rpc>) -> Routes {
        Routes { rpc }
    }
}

fn method_not_allowed() -> HttpResponse {
    HttpResponse {
        status: 405,
        content_type: JSON,
        body: br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"send JSON-RPC requests with HTTP POST; GET serves only /health and /metrics"}}"#.to_vec(),
        headers: vec![("Allow", "POST".to_string())],
    }
}

impl Handler for Routes {
    fn handle(&mut self, request: &HttpRequest<'_>) -> HttpResponse {
        match request.method {
            HttpMethod::Post => {
                let body = self.rpc.handle(request.body).unwrap_or_default();
                HttpResponse {
                    status: 200,
                    content_type: JSON,
                    body,
                    headers: Vec::new(),
                }
            }
            _ => method_not_allowed(),
        }
    }

    fn too_large(&mut self, limit: usize) -> HttpResponse {
        HttpResponse {
            status: 413,
            content_type: JSON,
            body: Rpc::too_large_body(limit),
            headers: Vec::new(),
        }
    }
}
