//! `GET /health`: whether this node is fit to serve, for load balancers and
//! systemd watchdogs.
//!
//! The answer is 200 with a small JSON body while the node is healthy, and
//! 503 with the same body (plus a `reason` word and a `problem` sentence) when
//!
//! - the ledger cannot be read (a read transaction fails): `reason` `ledger`;
//! - the sync thread has stalled for longer than `--health-max-lag-s`:
//!   the source has not answered for that long (`unreachable`), or it has
//!   reported heads the ledger does not hold yet and no new block or DA slot
//!   has been stored for that long (`stalled`), or the sync thread has
//!   neither asked the source anything nor stored anything for that long
//!   (`silent`); or
//! - every upstream of a follower serves another chain than the data dir's
//!   (`other_chain`: the problem says what differs; see docs/FOLLOWING.md,
//!   "The right chain"); or
//! - the chain source has not answered once since start (`unreached`: an
//!   upstream that cannot be reached, or whose TLS certificate was refused;
//!   the problem names why); or
//! - a follower's L2 head is more than `--health-max-behind` blocks below
//!   the newest head its upstreams reported (`behind`): a node catching up from
//!   far behind, or one whose upstream stopped serving blocks, is taken out
//!   of a load balancer's rotation until it is within that many blocks, so
//!   clients reading through the balancer never see the head go far back.
//!
//! `GET /health?live` leaves out `behind`: it answers whether the node is
//! stuck (for a watchdog that restarts it), not whether it is fit to serve.
//!
//! "No new blocks exist" is not a stall: a devnet with `--dev-block-ms 0`, a
//! quiet upstream, or a stored ledger served without a source stay healthy.
//! A follower's answer names the upstream in use (`upstream`): a source is
//! named by its kind (`source`) and, when it has an address, by a member of
//! that kind's name. Every answer says how long the node has run
//! (`uptimeSeconds`, whole seconds) and its `version` (the status page shows
//! both).
//!
//! ```text
//! {"status":"ok","l2Head":200,"l2SourceHead":200,"l2Behind":0,"l1Scanned":1099,
//!  "l1SourceHead":1099,"l2Finalized":192,"l2Proven":160,"lastCommitmentL1Height":1096,
//!  "lastCommitmentTime":1764184000,"lastProofL1Height":1095,"lastProofTime":1764184000,
//!  "secondsSinceLastBlock":0.4,"blocksWithoutBodies":0,"syncing":false,
//!  "source":"upstream","sourceReachable":true,"upstream":"http://10.0.0.5:8545",
//!  "uptimeSeconds":3600,"version":"0.1.0"}
//! {"status":"unhealthy",...,"reason":"behind","problem":"the ledger's L2 head 4100 is 900
//!  blocks behind the source's head 5000 (limit 100)"}
//! ```
//!
//! The finality frontier ([`crate::ledger::FrontierRead`]): `l2Finalized` and
//! `l2Proven` are the highest heights a stored commitment and a verified
//! proof cover (0 before the first), `lastCommitmentL1Height` and
//! `lastProofL1Height` the DA slots that last moved them, and
//! `lastCommitmentTime` / `lastProofTime` when this node stored those (Unix
//! seconds); the four are `null` before the first. An alert on "no new
//! proof for 30 minutes" reads the time.
//!
//! `blocksWithoutBodies` counts the stored blocks that were accepted without
//! their transaction bodies (`--allow-missing-tx-bodies`; always 0 without it).
//! With a chain source, `batchProofImages` says which batch-proof images
//! proofs are held to (a devnet's, for its followers to pin) and
//! `proofsOnUnpinnedImages` counts those accepted with none pinned;
//! `waitingOn` names the refused record the DA scan waits on, if any;
//! `sourceProblem` why the last request to the source failed, while it fails;
//! `refusedUpstreams` the follower's upstreams refused for serving another
//! chain, each with what differs (`{"URL":"..."}`), once there is one.

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use crate::chain_rules::Fork;
use crate::ledger::{Frontier, FrontierRead, Ledger, LedgerRead};
use crate::progress::{unix_ms, HeaderProgress, Progress};
use crate::proof::{image_ids, Images, ProofRules};
use crate::wire::write::{key, write_null, write_str};

/// Where the node's blocks come from (what `/health` reports as `source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// `--dev`: the embedded devnet.
    Devnet,
    /// `--upstream URL`: another node; with `bitcoind`, the DA layer comes
    /// from Bitcoin Core (`--bitcoin-rpc`), named as `"bitcoind"`.
    Upstream { bitcoind: bool },
    /// Neither: the stored ledger is served as it is.
    None,
}

impl SourceKind {
    fn name(self) -> &'static str {
        match self {
            SourceKind::Devnet => "devnet",
            SourceKind::Upstream { .. } => "upstream",
            SourceKind::None => "none",
        }
    }
}

/// The `/health` body being written: a JSON object whose member names are
/// trusted ASCII literals, each member after a comma unless it is the
/// first of its object or array.
struct Body(Vec<u8>);

impl Body {
    /// Starts a value: after a comma unless it is the first of its object or array.
    fn next(&mut self) -> &mut Vec<u8> {
        if !matches!(self.0.last(), Some(b'{' | b'[')) {
            self.0.push(b',');
        }
        &mut self.0
    }

    /// Starts member `name`; its value follows.
    fn key(&mut self, name: &str) -> &mut Vec<u8> {
        let out = self.next();
        key(out, name);
        out
    }

    /// A number or a boolean.
    fn val(&mut self, name: &str, v: impl Display) {
        let _ = write!(self.key(name), "{v}");
    }

    /// A number or a boolean, or `null`.
    fn opt(&mut self, name: &str, v: Option<impl Display>) {
        match v {
            Some(v) => self.val(name, v),
            None => write_null(self.key(name)),
        }
    }

    fn str(&mut self, name: &str, v: &str) {
        write_str(self.key(name), v);
    }

    /// A string, or `null`.
    fn opt_str(&mut self, name: &str, v: Option<&str>) {
        match v {
            Some(v) => self.str(name, v),
            None => write_null(self.key(name)),
        }
    }

    /// A string member, only when there is one.
    fn some_str(&mut self, name: &str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(name, v);
        }
    }
}

/// `"batchProofImages":{..}`: who chose the images proofs are held to
/// (`network`, `devnet`, `--batch-proof-image`, or null: not pinned), and
/// the image ID of each fork where one is fixed (null where not), so a
/// follower of this node can pin the same ones.
fn write_images(b: &mut Body, rules: &ProofRules) {
    let pinned_by = match rules.images {
        Images::Network(n, _) => Some(format!("--network {n}")),
        Images::Devnet => Some("devnet".to_string()),
        Images::Pinned(_) => Some(image_ids::BATCH_PROOF_IMAGE.to_string()),
        Images::Unpinned => None,
    };
    b.key("batchProofImages").push(b'{');
    b.opt_str("pinnedBy", pinned_by.as_deref());
    let fixed = rules.fixed_images();
    for fork in [Fork::Genesis, Fork::Kumquat] {
        let id = fixed.iter().find(|(f, _)| *f == fork);
        let id = id.map(|(_, image)| hex::encode(image.id));
        b.opt_str(image_ids::fork_word(fork), id.as_deref());
    }
    b.0.push(b'}');
}

/// `"bitcoinHeaders":{...}`: the verified header chain the scan follows.
fn write_headers(b: &mut Body, h: &HeaderProgress) {
    let (Some(chain), Some(tip)) = (h.chain.get(), h.tip()) else {
        return;
    };
    b.key("bitcoinHeaders").push(b'{');
    b.str("chain", chain);
    b.val("height", h.height.load(Relaxed));
    b.str("hash", &tip.hash);
    b.str("chainwork", &tip.chainwork);
    b.val("minimumChainworkMet", h.min_work_met.load(Relaxed));
    b.val("verified", h.verified.load(Relaxed));
    b.0.push(b'}');
}

/// The health check: reads the ledger and the sync progress on each call.
pub struct Health {
    ledger: Arc<Ledger>,
    progress: Arc<Progress>,
    source: SourceKind,
    max_lag_ms: u64,
    /// `--health-max-behind`: most L2 blocks the ledger may be below the
    /// source's head (`u64::MAX`: no limit).
    max_behind: u64,
    /// When this node started (Unix ms): the clocks count from here when
    /// nothing has happened yet.
    started_ms: u64,
}

/// One health answer: the HTTP status and the JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Health {
    pub fn new(
        ledger: Arc<Ledger>,
        progress: Arc<Progress>,
        source: SourceKind,
        max_lag: Duration,
    ) -> Health {
        Health {
            ledger,
            progress,
            source,
            max_lag_ms: max_lag.as_millis().min(u64::MAX as u128) as u64,
            max_behind: u64::MAX,
            started_ms: unix_ms(),
        }
    }

    /// A follower is also unhealthy while its L2 head is more than `blocks`
    /// below the newest head its upstreams reported.
    pub fn max_behind(mut self, blocks: u64) -> Health {
        self.max_behind = blocks;
        self
    }

    /// Checks the node now: whether it is fit to serve clients
    /// (`GET /health`, for load balancers).
    pub fn check(&self) -> Report {
        self.report(false)
    }

    /// Checks only that the node is not stuck (`GET /health?live`, for
    /// watchdogs): a follower catching up from far behind is alive, and
    /// restarting it would not help.
    pub fn check_live(&self) -> Report {
        self.report(true)
    }

    fn report(&self, live: bool) -> Report {
        let now = unix_ms();
        let p = &self.progress;
        let ledger = self.ledger.reader().and_then(|r| {
            Ok((
                r.head_height()?,
                r.last_scanned_l1()?,
                crate::proof::fake_proofs_stored(&r)?,
                crate::proof::unpinned_proofs_stored(&r)?,
                [
                    r.frontier(Frontier::Committed)?,
                    r.frontier(Frontier::Proven)?,
                ],
            ))
        });
        let (read, ledger_error) = match ledger {
            Ok(read) => (read, None),
            Err(e) => {
                let heads = (p.l2_synced.load(Relaxed), p.l1_synced.load(Relaxed));
                ((heads.0, heads.1, 0, 0, [None, None]), Some(e))
            }
        };
        let (l2_head, l1_scanned, fake_proofs, unpinned_proofs, [committed, proven]) = read;
        let waiting = p.waiting.now();
        let l2_source = p.l2_source_head.load(Relaxed);
        let l1_source = p.l1_source_head.load(Relaxed);
        let has_source = self.source != SourceKind::None;
        let reachable = p.source_reachable.load(Relaxed);
        let last_block = p.last_block_unix_ms.load(Relaxed);
        let lag_s = self.max_lag_ms as f64 / 1000.0;
        let bitcoin = &p.bitcoin;
        let reads_bitcoin = matches!(self.source, SourceKind::Upstream { bitcoind: true });
        let source_problem = p.source_problem.get();

        let problem = 'problem: {
            if let Some(e) = ledger_error {
                break 'problem Some(("ledger", format!("the ledger cannot be read: {e}")));
            }
            if let (true, Some(reorg)) = (reads_bitcoin, bitcoin.reorg.get()) {
                break 'problem Some(("reorg", reorg));
            }
            let ok_at = bitcoin.ok_unix_ms.load(Relaxed).max(self.started_ms);
            let down = now.saturating_sub(ok_at);
            if reads_bitcoin && bitcoin.is_down() && down > self.max_lag_ms {
                let (reason, who) = if bitcoin.peers.any() && bitcoin.rpc.any() {
                    ("bitcoin", "neither bitcoind nor any Bitcoin peer has")
                } else if bitcoin.peers.any() {
                    ("bitcoin_peers", "no Bitcoin peer has")
                } else {
                    ("bitcoind", "bitcoind has not")
                };
                break 'problem Some((
                    reason,
                    format!(
                        "{who} answered for {:.1} s (limit {lag_s} s): {}",
                        down as f64 / 1000.0,
                        bitcoin.problem.get().unwrap_or_default()
                    ),
                ));
            }
            if let Some(why) = p.every_upstream_refused() {
                break 'problem Some(("other_chain", why));
            }
            if !has_source {
                break 'problem None;
            }
            if p.source_ok_unix_ms.load(Relaxed) == 0 {
                // Nothing is known of the chain until the source answers once.
                let why = match &source_problem {
                    Some(why) => format!(": {why}"),
                    None => " (asking)".to_string(),
                };
                let what = format!("the chain source has not answered since start{why}");
                break 'problem Some(("unreached", what));
            }
            let ok_at = p.source_ok_unix_ms.load(Relaxed).max(self.started_ms);
            let behind_since = p.behind_since_unix_ms.load(Relaxed);
            let last_progress = last_block.max(p.last_slot_unix_ms.load(Relaxed));
            let unanswered = now.saturating_sub(ok_at);
            if !reachable && unanswered > self.max_lag_ms {
                break 'problem Some((
                    "unreachable",
                    format!(
                        "the chain source has not answered for {:.1} s (limit {lag_s} s)",
                        unanswered as f64 / 1000.0
                    ),
                ));
            }
            let stuck = now.saturating_sub(behind_since.max(last_progress));
            if behind_since != 0 && stuck > self.max_lag_ms {
                let on = waiting.as_ref().map_or(String::new(), |w| {
                    format!("; the DA scan waits on slot {}: {}", w.slot, w.why)
                });
                break 'problem Some((
                    "stalled",
                    format!(
                        "the sync thread stalled: the source is ahead (L2 {l2_source}, L1 {l1_source}) \
                         and nothing new was stored for {:.1} s (limit {lag_s} s){on}",
                        stuck as f64 / 1000.0
                    ),
                ));
            }
            // A live sync thread asks the source for its head at least every
            // few seconds, or stores something: silence means it is stuck.
            let quiet = now.saturating_sub(ok_at.max(last_progress));
            if quiet > self.max_lag_ms {
                break 'problem Some((
                    "silent",
                    format!(
                        "the sync thread has neither reached the source nor stored anything for \
                         {:.1} s (limit {lag_s} s)",
                        quiet as f64 / 1000.0
                    ),
                ));
            }
            // Last, so that a stuck node says so: behind is not stuck. A
            // follower only: the devnet's head is this node's own, and its
            // sync thread commits every 100 ms however fast blocks come.
            let behind = l2_source.saturating_sub(l2_head);
            let follower = matches!(self.source, SourceKind::Upstream { .. });
            (!live && follower && behind > self.max_behind).then(|| {
                let most = self.max_behind;
                let why = format!(
                    "the ledger's L2 head {l2_head} is {behind} blocks behind the source's head \
                     {l2_source} (limit {most})"
                );
                ("behind", why)
            })
        };

        let mut b = Body(Vec::with_capacity(320));
        b.0.push(b'{');
        b.str("status", if problem.is_some() { "unhealthy" } else { "ok" });
        b.val("l2Head", l2_head);
        b.val("l2SourceHead", l2_source);
        b.val("l2Behind", l2_source.saturating_sub(l2_head));
        b.val("l1Scanned", l1_scanned);
        b.val("l1SourceHead", l1_source);
        b.val("l2Finalized", committed.map_or(0, |m| m.l2_height));
        b.val("l2Proven", proven.map_or(0, |m| m.l2_height));
        b.opt("lastCommitmentL1Height", committed.map(|m| m.l1_height));
        b.opt("lastCommitmentTime", committed.map(|m| m.stored_unix_s));
        b.opt("lastProofL1Height", proven.map(|m| m.l1_height));
        b.opt("lastProofTime", proven.map(|m| m.stored_unix_s));
        let since_block = now.saturating_sub(last_block);
        b.opt(
            "secondsSinceLastBlock",
            (last_block != 0).then(|| format!("{}.{:03}", since_block / 1000, since_block % 1000)),
        );
        b.val("blocksWithoutBodies", p.blocks_without_bodies.load(Relaxed));
        b.val("proofsOnFakeReceipts", fake_proofs);
        if let Some(rules) = p.proof_rules.get() {
            write_images(&mut b, rules);
            b.val("proofsOnUnpinnedImages", unpinned_proofs);
        }
        if let Some(w) = &waiting {
            b.key("waitingOn").push(b'{');
            b.val("slot", w.slot);
            b.str("check", w.check);
            b.str("why", &w.why);
            b.val("refusals", w.retries);
            b.val("sinceSeconds", now.saturating_sub(w.since_unix_ms) / 1000);
            b.0.push(b'}');
        }
        b.val("syncing", has_source && p.is_behind());
        b.str("source", self.source.name());
        b.opt("sourceReachable", has_source.then_some(reachable));
        b.some_str("upstream", p.upstream());
        let source_problem = source_problem.filter(|_| has_source && !reachable);
        b.some_str("sourceProblem", source_problem.as_deref());
        let refused = p.refused_upstreams();
        if !refused.is_empty() {
            b.key("refusedUpstreams").push(b'{');
            for (url, why) in &refused {
                write_str(b.next(), url);
                b.0.push(b':');
                write_str(&mut b.0, why);
            }
            b.0.push(b'}');
        }
        if reads_bitcoin && bitcoin.peers.any() {
            let peers = bitcoin.peers.shown();
            let connected = peers.iter().filter(|p| p.connected);
            b.val("bitcoinPeersConnected", connected.clone().count());
            b.val("bitcoinPeersBehind", connected.filter(|p| p.behind).count());
            b.key("bitcoinPeers").push(b'[');
            for peer in &peers {
                b.next().push(b'{');
                b.str("addr", &peer.addr);
                b.str("source", peer.source);
                b.val("connected", peer.connected);
                b.val("behind", peer.behind);
                b.val("blocksFetched", peer.blocks_fetched);
                b.some_str("transport", peer.transport);
                b.some_str("problem", peer.problem.as_deref());
                b.0.push(b'}');
            }
            b.0.push(b']');
            b.some_str("bitcoinProblem", bitcoin.problem.get().as_deref());
            // bitcoind's RPC beside the peers.
            let rpc = &bitcoin.rpc;
            if let Some(url) = rpc.url.get() {
                b.str("bitcoind", url);
                b.val("bitcoindReachable", rpc.reachable.load(Relaxed));
                b.val("bitcoindBehind", rpc.behind.load(Relaxed));
                b.val("bitcoindBlocksFetched", rpc.blocks_fetched.load(Relaxed));
                b.some_str("bitcoindProblem", rpc.problem().as_deref());
            }
        } else if let (true, Some(url)) = (reads_bitcoin, bitcoin.url.get()) {
            b.str("bitcoind", url);
            b.val("bitcoindReachable", !bitcoin.is_down());
            b.some_str("bitcoindProblem", bitcoin.problem.get().as_deref());
        }
        if reads_bitcoin {
            write_headers(&mut b, &bitcoin.headers);
        }
        b.val("uptimeSeconds", now.saturating_sub(self.started_ms) / 1000);
        b.str("version", env!("CARGO_PKG_VERSION"));
        if let Some((reason, problem)) = &problem {
            b.str("reason", reason);
            b.str("problem", problem);
        }
        b.0.push(b'}');
        Report {
            status: if problem.is_some() { 503 } else { 200 },
            body: b.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::OpenOptions;

    fn health(source: SourceKind, lag_ms: u64) -> (Health, Arc<Progress>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default()).unwrap());
        let progress = Arc::new(Progress::default());
        let h = Health::new(
            ledger,
            progress.clone(),
            source,
            Duration::from_millis(lag_ms),
        );
        (h, progress, dir)
    }

    /// The report once the source last answered 5 s ago.
    fn answered_5_s_ago(h: &Health, p: &Progress) -> (u16, String) {
        p.source_ok_unix_ms.store(unix_ms() - 5_000, Relaxed);
        said(h.check())
    }

    /// A follower of `http://a:1` and `http://b:2`, its limit 60 s.
    fn follower_of_two() -> (Health, Arc<Progress>, tempfile::TempDir) {
        let (h, p, dir) = health(SourceKind::Upstream { bitcoind: false }, 60_000);
        let _ = p
            .upstream_urls
            .set(vec!["http://a:1".into(), "http://b:2".into()]);
        (h, p, dir)
    }

    /// A report's status and body.
    fn said(r: Report) -> (u16, String) {
        (r.status, String::from_utf8(r.body).unwrap())
    }

    #[test]
    fn a_ledger_without_a_source_is_healthy_however_old() {
        let (mut h, _p, _d) = health(SourceKind::None, 1000);
        h.started_ms -= 3_600_000;
        let (status, t) = said(h.check());
        assert_eq!(status, 200, "{t}");
        assert!(t.contains(r#""sourceReachable":null"#));
        assert!(t.contains(r#""secondsSinceLastBlock":null"#));
    }

    #[test]
    fn a_caught_up_source_with_no_new_blocks_is_not_a_stall() {
        let (mut h, p, _d) = health(SourceKind::Devnet, 1000);
        h.started_ms -= 3_600_000;
        p.l2_source_head.store(5, Relaxed);
        p.stored_l2(5, 5);
        p.last_block_unix_ms.store(unix_ms() - 3_600_000, Relaxed);
        p.source_ok();
        p.note_behind();
        let (status, t) = said(h.check());
        assert_eq!(status, 200, "{t}");
        assert!(t.contains(r#""syncing":false"#));
    }

    #[test]
    fn behind_with_nothing_stored_for_longer_than_the_limit_is_a_stall() {
        let (mut h, p, _d) = health(SourceKind::Upstream { bitcoind: false }, 1000);
        h.started_ms -= 3_600_000;
        p.source_ok();
        p.l2_source_head.store(10, Relaxed);
        p.note_behind();
        assert_eq!(h.check().status, 200, "just fell behind");
        p.behind_since_unix_ms.store(unix_ms() - 5_000, Relaxed);
        let (status, t) = said(h.check());
        assert_eq!(status, 503, "{t}");
        assert!(t.contains("stalled"), "{t}");
        assert!(t.contains(r#""reason":"stalled""#), "{t}");
        // Still behind, but blocks keep arriving: catching up, not stalled.
        p.stored_l2(4, 4);
        let (status, t) = said(h.check());
        assert_eq!(status, 200, "{t}");
        assert!(t.contains(r#""syncing":true"#));
    }

    #[test]
    fn a_sync_thread_that_stopped_asking_the_source_is_a_stall() {
        let (mut h, p, _d) = health(SourceKind::Devnet, 1000);
        h.started_ms -= 3_600_000;
        p.source_reachable.store(true, Relaxed);
        let (status, t) = answered_5_s_ago(&h, &p);
        assert_eq!(status, 503, "{t}");
        assert!(t.contains("neither reached"), "{t}");
        p.source_ok();
        assert_eq!(h.check().status, 200);
    }

    #[test]
    fn more_than_max_behind_blocks_below_the_source_is_unhealthy_and_says_so() {
        // The ledger is empty (head 0): the source's head is how far behind it is.
        let (h, p, _d) = health(SourceKind::Upstream { bitcoind: false }, 60_000);
        let h = h.max_behind(10);
        p.source_ok();
        p.l2_source_head.store(10, Relaxed);
        p.note_behind();
        let (status, t) = said(h.check());
        assert_eq!(status, 200, "10 behind is within the limit: {t}");
        assert!(t.contains(r#""l2Behind":10"#), "{t}");
        p.l2_source_head.store(11, Relaxed);
        let (status, t) = said(h.check());
        assert_eq!(status, 503, "{t}");
        assert!(t.contains(r#""reason":"behind""#), "{t}");
        assert!(
            t.contains("L2 head 0 is 11 blocks behind the source's head 11 (limit 10)"),
            "{t}"
        );
        // Behind is not stuck: a watchdog's liveness check passes.
        assert_eq!(h.check_live().status, 200);
        // Without the limit (the default of `Health::new`), only stalls count.
        let (h, p, _d) = health(SourceKind::Upstream { bitcoind: false }, 60_000);
        p.source_ok();
        p.l2_source_head.store(5_000, Relaxed);
        assert_eq!(h.check().status, 200);
        // The devnet is never behind itself.
        let (h, p, _d) = health(SourceKind::Devnet, 60_000);
        let h = h.max_behind(10);
        p.source_ok();
        p.l2_source_head.store(5_000, Relaxed);
        assert_eq!(h.check().status, 200);
    }

    #[test]
    fn a_follower_names_the_upstream_in_use() {
        let (h, p, _d) = follower_of_two();
        p.upstream_in_use.store(1, Relaxed);
        assert!(said(h.check()).1.contains(r#""upstream":"http://b:2""#));
    }

    #[test]
    fn every_answer_says_how_long_the_node_has_run_and_its_version() {
        let (mut h, _p, _d) = health(SourceKind::Devnet, 60_000);
        h.started_ms -= 3_723_400;
        let v: serde_json::Value = serde_json::from_slice(&h.check().body).unwrap();
        assert_eq!(v["uptimeSeconds"], 3723, "{v}");
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{v}");
    }

    #[test]
    fn a_follower_whose_every_upstream_serves_another_chain_is_unhealthy_and_says_what_differs() {
        let (h, p, _dir) = follower_of_two();
        p.source_ok();
        p.upstream_refused(1, "its block 1 is 01, the data dir's is 02".into());
        let (status, t) = said(h.check());
        assert_eq!(status, 200, "{t}");
        assert!(
            t.contains(
                r#""refusedUpstreams":{"http://b:2":"its block 1 is 01, the data dir's is 02"}"#
            ),
            "{t}"
        );
        p.upstream_refused(
            0,
            "its genesis state root is 03, the data dir's is 04".into(),
        );
        let (status, t) = said(h.check());
        assert_eq!(status, 503);
        assert!(t.contains(r#""reason":"other_chain""#), "{t}");
        assert!(
            t.contains("upstream http://a:1 serves another chain: its genesis"),
            "{t}"
        );
    }

    #[test]
    fn an_unreachable_source_is_a_stall_only_after_the_limit() {
        let (mut h, p, _d) = health(SourceKind::Upstream { bitcoind: false }, 1000);
        // Never reached since start: nothing is known of the chain yet.
        let (status, t) = said(h.check());
        assert_eq!(status, 503, "just started: {t}");
        assert!(t.contains("\"reason\":\"unreached\""), "{t}");
        p.source_failed("upstream http://a:1 cannot be reached: refused".into());
        let (_, t) = said(h.check());
        assert!(
            t.contains("since start: upstream http://a:1 cannot be reached"),
            "{t}"
        );
        assert!(t.contains("\"sourceProblem\""), "{t}");
        // Reached once, then lost: a stall only after the limit.
        p.source_ok();
        assert_eq!(h.check().status, 200);
        p.source_failed("refused".into());
        assert_eq!(h.check().status, 200, "lost a moment ago");
        h.started_ms -= 5_000;
        let (status, t) = answered_5_s_ago(&h, &p);
        assert_eq!(status, 503, "{t}");
        assert!(t.contains("has not answered"), "{t}");
        p.source_ok();
        assert_eq!(h.check().status, 200);
    }
}
