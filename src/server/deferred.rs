//! Deferred answers: a handler may keep a request and answer it later from
//! another thread ([`super::Handler::handle_deferrable`], [`Later`]; the
//! devnet's `dev_*` calls). The loop holds the tiny_http `Request`, serves
//! other connections meanwhile, and writes the answer when it arrives on
//! its channel (with a wake-up). tiny_http queues no other request of that
//! connection meanwhile (one request per connection at a time).

use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Weak};

use super::{json_error, Exchange, HttpResponse, Loop, LoopMsg, Shared};

/// Lets a handler keep the request it is handling and answer it later
/// (see [`super::Handler::handle_deferrable`]).
pub struct Defer<'a> {
    pub(super) tx: &'a Sender<LoopMsg>,
    pub(super) shared: &'a Arc<Shared>,
    pub(super) id: u64,
    pub(super) taken: bool,
}

impl Defer<'_> {
    /// The answer to give later. Take it at most once per request.
    pub fn later(&mut self) -> Later {
        self.taken = true;
        Later {
            id: self.id,
            tx: self.tx.clone(),
            shared: Arc::downgrade(self.shared),
            answered: false,
        }
    }
}

/// An answer the loop waits for without blocking: [`Later::answer`] from
/// any thread sends it to the loop, which writes it. Dropped unanswered, it
/// answers 500 so the client is not left waiting.
pub struct Later {
    id: u64,
    tx: Sender<LoopMsg>,
    shared: Weak<Shared>,
    answered: bool,
}

impl Later {
    /// Gives the loop the answer and wakes it.
    pub fn answer(mut self, response: HttpResponse) {
        self.send(response);
    }

    fn send(&mut self, response: HttpResponse) {
        self.answered = true;
        if self
            .tx
            .send(LoopMsg::Answer {
                id: self.id,
                response,
            })
            .is_ok()
        {
            if let Some(shared) = self.shared.upgrade() {
                shared.wake();
            }
        }
    }
}

impl Drop for Later {
    fn drop(&mut self) {
        if !self.answered {
            self.send(json_error(
                500,
                "Internal error",
                "the request was dropped before it was answered (is the node stopping?); retry",
            ));
        }
    }
}

/// A request kept by the loop until its [`Later`] is answered.
pub(super) struct Deferred {
    pub(super) rq: tiny_http::Request,
    /// Its connection, and what its answer's writing needs to know.
    pub(super) ex: Exchange,
}

impl Loop {
    /// Writes the answer of a deferred request (an unknown id was answered
    /// already, or its request is gone).
    pub(super) fn on_answer(&mut self, id: u64, response: HttpResponse) {
        let Some(d) = self.deferred.remove(&id) else {
            return;
        };
        d.ex.pending.fetch_sub(1, Ordering::AcqRel);
        let close = self.is_last_on_conn(d.ex.peer);
        self.respond(d.rq, response, close, d.ex);
    }
}
