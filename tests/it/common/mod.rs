//! The one support module of the integration tests (a module of the one test
//! binary, `tests/it/main.rs`, as every test file is): real `ledgerd` processes on
//! 127.0.0.1 port 0 ([`process`]), a raw HTTP/1.1 client on plain sockets
//! that can misbehave on purpose ([`http`]), headless Chromium ([`browser`]), JSON-RPC calls and the checks
//! many tests share ([`rpc`]), the socket-less bytes -> answer path the
//! fuzzer shares ([`rpc_check`]); a proxy that can hold an upstream's
//! blocks back, alter its answers or slow them ([`proxy`]), and a stand-in
//! for a Citrea v0.6 full node written from Citrea's source
//! ([`citrea_upstream`]); a real regtest bitcoind ([`bitcoind`]), ledgerd
//! on it (a devnet writing to it, a follower reading it: [`regtest`]) and
//! Bitcoin peers that lie ([`lying_peer`]); the one deadline loop,
//! [`wait_until_value`] ([`wait`]).

pub mod bitcoind;
pub mod browser;
pub mod citrea_upstream;
pub mod framing_check;
pub mod http;
pub mod lying_peer;
pub mod process;
pub mod proxy;
pub mod regtest;
pub mod rpc;
pub mod rpc_check;
pub mod smuggling;
pub mod wait;

pub use http::{connect, exchange, post, read_answer, rpc, Answer};
pub use process::{
    bounded, free_port, nginx_path, raise_nofile_limit, run, run_to_exit, Ledgerd, PREFILL,
};
pub use rpc::{
    assert_normal_request_fast, call, call_raw, devnet_ledger, every_answer, export, hash32, head,
    post_raw, statuses, sync_status, HEAD_HEIGHT,
};
pub use wait::{poll_until, wait_until, wait_until_value};

/// The machine, as the tests share it: every node a test starts with
/// [`LedgerdBuilder::start`] holds a share of it, and a test that measures
/// time takes it alone with [`one_at_a_time`]. The hostile-client tests each
/// check that a normal request is answered within 100 ms while one bad client
/// does its worst; run beside another test (2,000 connection threads, a
/// catch-up of thousands of blocks) on a 2-core machine, they would measure
/// that test, not the node. In one test binary, the tests of every file run
/// side by side, so this gate keeps the timing tests apart from all of them.
struct Gate {
    state: std::sync::Mutex<GateState>,
    turn: std::sync::Condvar,
}

#[derive(Default)]
struct GateState {
    /// The thread of the timing test that holds the machine alone.
    alone: Option<std::thread::ThreadId>,
    /// Nodes of other tests running now.
    shares: usize,
}

static GATE: Gate = Gate {
    state: std::sync::Mutex::new(GateState {
        alone: None,
        shares: 0,
    }),
    turn: std::sync::Condvar::new(),
};

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(
        &self,
        guard: std::sync::MutexGuard<'a, GateState>,
    ) -> std::sync::MutexGuard<'a, GateState> {
        self.turn
            .wait(guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The machine held alone by a timing test, until dropped.
pub struct Alone(());

impl Drop for Alone {
    fn drop(&mut self) {
        GATE.lock().alone = None;
        GATE.turn.notify_all();
    }
}

/// A node's share of the machine, until the node is dropped.
pub struct Share(());

impl Drop for Share {
    fn drop(&mut self) {
        GATE.lock().shares -= 1;
        GATE.turn.notify_all();
    }
}

/// Takes the machine alone for a test that measures time: waits until no
/// other test's node runs, and holds new ones back until dropped. Take it
/// before starting this test's own nodes.
pub fn one_at_a_time() -> Alone {
    let mut state = GATE.lock();
    while state.alone.is_some() || state.shares > 0 {
        state = GATE.wait(state);
    }
    state.alone = Some(std::thread::current().id());
    Alone(())
}

/// A share of the machine for a new node: waits while a timing test holds
/// it alone (`None` for that test's own nodes).
pub fn share() -> Option<Share> {
    let me = std::thread::current().id();
    let mut state = GATE.lock();
    if state.alone == Some(me) {
        return None;
    }
    while state.alone.is_some() {
        state = GATE.wait(state);
    }
    state.shares += 1;
    Some(Share(()))
}
