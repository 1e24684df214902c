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

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use crate::ledger::{Frontier, FrontierMark, FrontierRead, Ledger, LedgerRead};
use crate::progress::{unix_ms, Progress};

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

/// Appends `,"name":v` to a JSON object being written.
fn num_after(body: &mut Vec<u8>, name: &str, v: u64) {
    body.extend_from_slice(b",\"");
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(b"\":");
    crate::wire::write::write_u64(body, v);
}

/// Appends `,"{what}L1Height":n,"{what}Time":t` (`null`s before the first).
fn write_mark(body: &mut Vec<u8>, what: &str, mark: Option<FrontierMark>) {
    for (field, v) in [
        ("L1Height", mark.map(|m| m.l1_height)),
        ("Time", mark.map(|m| m.stored_unix_s)),
    ] {
        body.extend_from_slice(b",\"");
        body.extend_from_slice(what.as_bytes());
        body.extend_from_slice(field.as_bytes());
        body.extend_from_slice(b"\":");
        match v {
            Some(v) => crate::wire::write::write_u64(body, v),
            None => crate::wire::write::write_null(body),
        }
    }
}

/// Appends `,"batchProofImages":{..}`: who chose the images proofs are
/// held to (`network`, `devnet`, `--batch-proof-image`, or null: not
/// pinned), and the image ID of each fork where one is fixed (null where
/// not), so a follower of this node can pin the same ones.
fn write_images(body: &mut Vec<u8>, rules: &crate::proof::ProofRules) {
    use crate::chain_rules::Fork;
    use crate::proof::Images;
    body.extend_from_slice(b",\"batchProofImages\":{\"pinnedBy\":");
    match rules.images {
        Images::Network(n, _) => crate::wire::write::write_str(body, &format!("--network {n}")),
        Images::Devnet => crate::wire::write::write_str(body, "devnet"),
        Images::Pinned(_) => {
            crate::wire::write::write_str(body, crate::proof::image_ids::BATCH_PROOF_IMAGE)
        }
        Images::Unpinned => crate::wire::write::write_null(body),
    }
    let fixed = rules.fixed_images();
    for fork in [Fork::Genesis, Fork::Kumquat] {
        body.extend_from_slice(b",\"");
        body.extend_from_slice(crate::proof::image_ids::fork_word(fork).as_bytes());
        body.extend_from_slice(b"\":");
        match fixed.iter().find(|(f, _)| *f == fork) {
            Some((_, image)) => crate::wire::write::write_str(body, &hex::encode(image.id)),
            None => crate::wire::write::write_null(body),
        }
    }
    body.push(b'}');
}

/// `"bitcoinHeaders":{...}`: the verified header chain the scan follows.
fn write_headers(body: &mut Vec<u8>, h: &crate::progress::HeaderProgress) {
    let (Some(chain), Some(tip)) = (h.chain.get(), h.tip()) else {
        return;
    };
    body.extend_from_slice(b",\"bitcoinHeaders\":{\"chain\":");
    crate::wire::write::write_str(body, chain);
    num_after(body, "height", h.height.load(Relaxed));
    body.extend_from_slice(b",\"hash\":");
    crate::wire::write::write_str(body, &tip.hash);
    body.extend_from_slice(b",\"chainwork\":");
    crate::wire::write::write_str(body, &tip.chainwork);
    body.extend_from_slice(b",\"minimumChainworkMet\":");
    body.extend_from_slice(if h.min_work_met.load(Relaxed) {
        b"true"
    } else {
        b"false"
    });
    num_after(body, "verified", h.verified.load(Relaxed));
    body.push(b'}');
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
        let (l2_head, l1_scanned, fake_proofs, unpinned_proofs, frontier, mut problem) =
            match ledger {
                Ok((h, s, f, u, m)) => (h, s, f, u, m, None),
                Err(e) => (
                    p.l2_synced.load(Relaxed),
                    p.l1_synced.load(Relaxed),
                    0,
                    0,
                    [None, None],
                    Some(("ledger", format!("the ledger cannot be read: {e}"))),
                ),
            };
        let waiting = p.waiting.now();
        let l2_source = p.l2_source_head.load(Relaxed);
        let l1_source = p.l1_source_head.load(Relaxed);
        let has_source = self.source != SourceKind::None;
        let reachable = p.source_reachable.load(Relaxed);
        let syncing = has_source && p.is_behind();
        let last_block = p.last_block_unix_ms.load(Relaxed);
        let lag_s = self.max_lag_ms as f64 / 1000.0;

        let bitcoin = &p.bitcoin;
        let reads_bitcoin = matches!(self.source, SourceKind::Upstream { bitcoind: true });
        if let (None, true, Some(reorg)) = (&problem, reads_bitcoin, bitcoin.reorg()) {
            problem = Some(("reorg", reorg));
        }
        if problem.is_none() && reads_bitcoin && bitcoin.is_down() {
            let ok_at = bitcoin.ok_unix_ms.load(Relaxed).max(self.started_ms);
            let down = now.saturating_sub(ok_at);
            if down > self.max_lag_ms {
                let (reason, who) = if bitcoin.peers.any() && bitcoin.rpc.any() {
                    ("bitcoin", "neither bitcoind nor any Bitcoin peer has")
                } else if bitcoin.peers.any() {
                    ("bitcoin_peers", "no Bitcoin peer has")
                } else {
                    ("bitcoind", "bitcoind has not")
                };
                problem = Some((
                    reason,
                    format!(
                        "{who} answered for {:.1} s (limit {lag_s} s): {}",
                        down as f64 / 1000.0,
                        bitcoin.problem().unwrap_or_default()
                    ),
                ));
            }
        }
        let source_problem = p.source_problem();
        if let (None, Some(why)) = (&problem, p.every_upstream_refused()) {
            problem = Some(("other_chain", why));
        }
        if problem.is_none() && has_source && p.source_ok_unix_ms.load(Relaxed) == 0 {
            // Nothing is known of the chain until the source answers once.
            problem = Some((
                "unreached",
                match &source_problem {
                    Some(why) => format!("the chain source has not answered since start: {why}"),
                    None => "the chain source has not answered since start (asking)".to_string(),
                },
            ));
        }
        if problem.is_none() && has_source {
            let ok_at = p.source_ok_unix_ms.load(Relaxed).max(self.started_ms);
            let behind_since = p.behind_since_unix_ms.load(Relaxed);
            let last_progress = last_block.max(p.last_slot_unix_ms.load(Relaxed));
            if !reachable && now.saturating_sub(ok_at) > self.max_lag_ms {
                problem = Some((
                    "unreachable",
                    format!(
                        "the chain source has not answered for {:.1} s (limit {lag_s} s)",
                        now.saturating_sub(ok_at) as f64 / 1000.0
                    ),
                ));
            } else if behind_since != 0 {
                let stuck = now.saturating_sub(behind_since.max(last_progress));
                if stuck > self.max_lag_ms {
                    let on = waiting.as_ref().map_or(String::new(), |w| {
                        format!("; the DA scan waits on slot {}: {}", w.slot, w.why)
                    });
                    problem = Some((
                        "stalled",
                        format!(
                            "the sync thread stalled: the source is ahead (L2 {l2_source}, L1 {l1_source}) \
                             and nothing new was stored for {:.1} s (limit {lag_s} s){on}",
                            stuck as f64 / 1000.0
                        ),
                    ));
                }
            }
            // A live sync thread asks the source for its head at least every
            // few seconds, or stores something: silence means it is stuck.
            let quiet = now.saturating_sub(ok_at.max(last_progress));
            if problem.is_none() && quiet > self.max_lag_ms {
                problem = Some((
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
            if problem.is_none() && !live && follower && behind > self.max_behind {
                problem = Some((
                    "behind",
                    format!(
                        "the ledger's L2 head {l2_head} is {behind} blocks behind the source's head \
                         {l2_source} (limit {})",
                        self.max_behind
                    ),
                ));
            }
        }

        let mut body = Vec::with_capacity(320);
        body.extend_from_slice(b"{\"status\":");
        body.extend_from_slice(if problem.is_some() {
            b"\"unhealthy\""
        } else {
            b"\"ok\""
        });
        let mut num = |name: &str, v: u64| {
            body.extend_from_slice(b",\"");
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(b"\":");
            crate::wire::write::write_u64(&mut body, v);
        };
        num("l2Head", l2_head);
        num("l2SourceHead", l2_source);
        num("l2Behind", l2_source.saturating_sub(l2_head));
        num("l1Scanned", l1_scanned);
        num("l1SourceHead", l1_source);
        let [committed, proven] = frontier;
        num("l2Finalized", committed.map_or(0, |m| m.l2_height));
        num("l2Proven", proven.map_or(0, |m| m.l2_height));
        write_mark(&mut body, "lastCommitment", committed);
        write_mark(&mut body, "lastProof", proven);
        body.extend_from_slice(b",\"secondsSinceLastBlock\":");
        if last_block == 0 {
            crate::wire::write::write_null(&mut body);
        } else {
            let ms = now.saturating_sub(last_block);
            body.extend_from_slice(format!("{}.{:03}", ms / 1000, ms % 1000).as_bytes());
        }
        num_after(
            &mut body,
            "blocksWithoutBodies",
            p.blocks_without_bodies.load(Relaxed),
        );
        num_after(&mut body, "proofsOnFakeReceipts", fake_proofs);
        if let Some(rules) = p.proof_rules.get() {
            write_images(&mut body, rules);
            num_after(&mut body, "proofsOnUnpinnedImages", unpinned_proofs);
        }
        if let Some(w) = &waiting {
            body.extend_from_slice(b",\"waitingOn\":{\"slot\":");
            crate::wire::write::write_u64(&mut body, w.slot);
            body.extend_from_slice(b",\"check\":");
            crate::wire::write::write_str(&mut body, w.check);
            body.extend_from_slice(b",\"why\":");
            crate::wire::write::write_str(&mut body, &w.why);
            num_after(&mut body, "refusals", w.retries);
            num_after(
                &mut body,
                "sinceSeconds",
                now.saturating_sub(w.since_unix_ms) / 1000,
            );
            body.push(b'}');
        }
        body.extend_from_slice(b",\"syncing\":");
        body.extend_from_slice(if syncing { b"true" } else { b"false" });
        body.extend_from_slice(b",\"source\":\"");
        body.extend_from_slice(self.source.name().as_bytes());
        body.extend_from_slice(b"\",\"sourceReachable\":");
        if has_source {
            body.extend_from_slice(if reachable { b"true" } else { b"false" });
        } else {
            crate::wire::write::write_null(&mut body);
        }
        if let Some(upstream) = p.upstream() {
            body.extend_from_slice(b",\"upstream\":");
            crate::wire::write::write_str(&mut body, upstream);
        }
        if let Some(why) = source_problem
            .as_deref()
            .filter(|_| has_source && !reachable)
        {
            body.extend_from_slice(b",\"sourceProblem\":");
            crate::wire::write::write_str(&mut body, why);
        }
        let refused = p.refused_upstreams();
        if !refused.is_empty() {
            body.extend_from_slice(b",\"refusedUpstreams\":{");
            for (i, (url, why)) in refused.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                crate::wire::write::write_str(&mut body, url);
                body.push(b':');
                crate::wire::write::write_str(&mut body, why);
            }
            body.push(b'}');
        }
        if reads_bitcoin && bitcoin.peers.any() {
            let peers = bitcoin.peers.shown();
            num_after(
                &mut body,
                "bitcoinPeersConnected",
                peers.iter().filter(|p| p.connected).count() as u64,
            );
            num_after(
                &mut body,
                "bitcoinPeersBehind",
                peers.iter().filter(|p| p.connected && p.behind).count() as u64,
            );
            body.extend_from_slice(b",\"bitcoinPeers\":[");
            for (i, peer) in peers.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                body.extend_from_slice(b"{\"addr\":");
                crate::wire::write::write_str(&mut body, &peer.addr);
                body.extend_from_slice(b",\"source\":");
                crate::wire::write::write_str(&mut body, peer.source);
                body.extend_from_slice(b",\"connected\":");
                body.extend_from_slice(if peer.connected { b"true" } else { b"false" });
                body.extend_from_slice(b",\"behind\":");
                body.extend_from_slice(if peer.behind { b"true" } else { b"false" });
                num_after(&mut body, "blocksFetched", peer.blocks_fetched);
                if let Some(transport) = peer.transport {
                    body.extend_from_slice(b",\"transport\":");
                    crate::wire::write::write_str(&mut body, transport);
                }
                if let Some(why) = &peer.problem {
                    body.extend_from_slice(b",\"problem\":");
                    crate::wire::write::write_str(&mut body, why);
                }
                body.push(b'}');
            }
            body.push(b']');
            if let Some(why) = bitcoin.problem() {
                body.extend_from_slice(b",\"bitcoinProblem\":");
                crate::wire::write::write_str(&mut body, &why);
            }
            // bitcoind's RPC beside the peers.
            let rpc = &bitcoin.rpc;
            if let Some(url) = rpc.url.get() {
                body.extend_from_slice(b",\"bitcoind\":");
                crate::wire::write::write_str(&mut body, url);
                body.extend_from_slice(b",\"bitcoindReachable\":");
                body.extend_from_slice(if rpc.reachable.load(Relaxed) {
                    b"true"
                } else {
                    b"false"
                });
                body.extend_from_slice(b",\"bitcoindBehind\":");
                body.extend_from_slice(if rpc.behind.load(Relaxed) {
                    b"true"
                } else {
                    b"false"
                });
                num_after(
                    &mut body,
                    "bitcoindBlocksFetched",
                    rpc.blocks_fetched.load(Relaxed),
                );
                if let Some(why) = rpc.problem() {
                    body.extend_from_slice(b",\"bitcoindProblem\":");
                    crate::wire::write::write_str(&mut body, &why);
                }
            }
        } else if let (true, Some(url)) = (reads_bitcoin, bitcoin.url.get()) {
            body.extend_from_slice(b",\"bitcoind\":");
            crate::wire::write::write_str(&mut body, url);
            body.extend_from_slice(b",\"bitcoindReachable\":");
            body.extend_from_slice(if bitcoin.is_down() { b"false" } else { b"true" });
            if let Some(why) = bitcoin.problem() {
                body.extend_from_slice(b",\"bitcoindProblem\":");
                crate::wire::write::write_str(&mut body, &why);
            }
        }
        if reads_bitcoin {
            write_headers(&mut body, &bitcoin.headers);
        }
        num_after(
            &mut body,
            "uptimeSeconds",
            now.saturating_sub(self.started_ms) / 1000,
        );
        body.extend_from_slice(b",\"version\":\"");
        body.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        body.push(b'"');
        if let Some((reason, problem)) = &problem {
            body.extend_from_slice(b",\"reason\":\"");
            body.extend_from_slice(reason.as_bytes());
            body.extend_from_slice(b"\",\"problem\":");
            crate::wire::write::write_str(&mut body, problem);
        }
        body.push(b'}');
        Report {
            status: if problem.is_some() { 503 } else { 200 },
            body,
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

    fn text(r: &Report) -> String {
        String::from_utf8(r.body.clone()).unwrap()
    }

    #[test]
    fn a_ledger_without_a_source_is_healthy_however_old() {
        let (mut h, _p, _d) = health(SourceKind::None, 1000);
        h.started_ms -= 3_600_000;
        let r = h.check();
        assert_eq!(r.status, 200, "{}", text(&r));
        assert!(text(&r).contains(r#""sourceReachable":null"#));
        assert!(text(&r).contains(r#""secondsSinceLastBlock":null"#));
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
        let r = h.check();
        assert_eq!(r.status, 200, "{}", text(&r));
        assert!(text(&r).contains(r#""syncing":false"#));
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
        let r = h.check();
        assert_eq!(r.status, 503, "{}", text(&r));
        assert!(text(&r).contains("stalled"), "{}", text(&r));
        assert!(text(&r).contains(r#""reason":"stalled""#), "{}", text(&r));
        // Still behind, but blocks keep arriving: catching up, not stalled.
        p.stored_l2(4, 4);
        let r = h.check();
        assert_eq!(r.status, 200, "{}", text(&r));
        assert!(text(&r).contains(r#""syncing":true"#));
    }

    #[test]
    fn a_sync_thread_that_stopped_asking_the_source_is_a_stall() {
        let (mut h, p, _d) = health(SourceKind::Devnet, 1000);
        h.started_ms -= 3_600_000;
        p.source_reachable.store(true, Relaxed);
        p.source_ok_unix_ms.store(unix_ms() - 5_000, Relaxed);
        let r = h.check();
        assert_eq!(r.status, 503, "{}", text(&r));
        assert!(text(&r).contains("neither reached"), "{}", text(&r));
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
        let r = h.check();
        assert_eq!(r.status, 200, "10 behind is within the limit: {}", text(&r));
        assert!(text(&r).contains(r#""l2Behind":10"#), "{}", text(&r));
        p.l2_source_head.store(11, Relaxed);
        let r = h.check();
        assert_eq!(r.status, 503, "{}", text(&r));
        assert!(text(&r).contains(r#""reason":"behind""#), "{}", text(&r));
        assert!(
            text(&r).contains("L2 head 0 is 11 blocks behind the source's head 11 (limit 10)"),
            "{}",
            text(&r)
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
        let (h, p, _d) = health(SourceKind::Upstream { bitcoind: false }, 60_000);
        let _ = p
            .upstream_urls
            .set(vec!["http://a:1".into(), "http://b:2".into()]);
        p.upstream_in_use.store(1, Relaxed);
        assert!(text(&h.check()).contains(r#""upstream":"http://b:2""#));
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
        let (h, p, _dir) = health(SourceKind::Upstream { bitcoind: false }, 60_000);
        let _ = p
            .upstream_urls
            .set(vec!["http://a:1".into(), "http://b:2".into()]);
        p.source_ok();
        p.upstream_refused(1, "its block 1 is 01, the data dir's is 02".into());
        let r = h.check();
        assert_eq!(r.status, 200, "{}", text(&r));
        assert!(
            text(&r).contains(
                r#""refusedUpstreams":{"http://b:2":"its block 1 is 01, the data dir's is 02"}"#
            ),
            "{}",
            text(&r)
        );
        p.upstream_refused(
            0,
            "its genesis state root is 03, the data dir's is 04".into(),
        );
        let r = h.check();
        assert_eq!(r.status, 503);
        assert!(
            text(&r).contains(r#""reason":"other_chain""#),
            "{}",
            text(&r)
        );
        assert!(
            text(&r).contains("upstream http://a:1 serves another chain: its genesis"),
            "{}",
            text(&r)
        );
    }

    #[test]
    fn an_unreachable_source_is_a_stall_only_after_the_limit() {
        let (mut h, p, _d) = health(SourceKind::Upstream { bitcoind: false }, 1000);
        // Never reached since start: nothing is known of the chain yet.
        let r = h.check();
        assert_eq!(r.status, 503, "just started: {}", text(&r));
        assert!(
            text(&r).contains("\"reason\":\"unreached\""),
            "{}",
            text(&r)
        );
        p.source_failed("upstream http://a:1 cannot be reached: refused".into());
        let r = h.check();
        assert!(
            text(&r).contains("since start: upstream http://a:1 cannot be reached"),
            "{}",
            text(&r)
        );
        assert!(text(&r).contains("\"sourceProblem\""), "{}", text(&r));
        // Reached once, then lost: a stall only after the limit.
        p.source_ok();
        assert_eq!(h.check().status, 200);
        p.source_failed("refused".into());
        assert_eq!(h.check().status, 200, "lost a moment ago");
        h.started_ms -= 5_000;
        p.source_ok_unix_ms.store(unix_ms() - 5_000, Relaxed);
        let r = h.check();
        assert_eq!(r.status, 503, "{}", text(&r));
        assert!(text(&r).contains("has not answered"), "{}", text(&r));
        p.source_ok();
        assert_eq!(h.check().status, 200);
    }
}
