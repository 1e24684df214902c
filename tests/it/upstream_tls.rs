//! Following an upstream over TLS: a real nginx (`listen ... ssl`) in front
//! of a devnet ledgerd, with certificates made in the test by a CA made in
//! the test (rcgen): a follower with `--upstream-ca` catches up over
//! `https://` and answers as its upstream; without the CA, with a
//! certificate for another name, or an expired one, it stores nothing and
//! says why in its log and in `/health`; `http://` to the TLS port and
//! `https://` to a plain port each say which. The same nginx gzips answers:
//! a follower through a gzip front decodes them.
//!
//! They need nginx, so they are `#[ignore]`d: `.ci/install` installs it and
//! `.ci/run` runs them with `--include-ignored`.

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{
    every_answer, free_port, nginx_path, poll_until, wait_until, wait_until_value, Ledgerd,
};
use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair, SanType};

/// The upstream's height: a devnet of this many blocks, mining none.
const HEAD: u64 = 40;

/// A CA and the server certificates it signed, as PEM files in `dir`.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("pki dir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "ledgerd test CA");
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).expect("write ca.pem");
        let sign = |name: &str, sans: Vec<SanType>, expired: bool| {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
            params.subject_alt_names = sans;
            params.distinguished_name.push(DnType::CommonName, name);
            if expired {
                params.not_before = rcgen::date_time_ymd(2020, 1, 1);
                params.not_after = rcgen::date_time_ymd(2020, 1, 2);
            }
            let cert: Certificate = params.signed_by(&key, &ca, &ca_key).expect("sign");
            std::fs::write(dir.path().join(format!("{name}.pem")), cert.pem()).expect("write");
            std::fs::write(dir.path().join(format!("{name}.key")), key.serialize_pem())
                .expect("write key");
        };
        let localhost = || {
            vec![
                SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
                SanType::DnsName("localhost".try_into().expect("a DNS name")),
            ]
        };
        sign("good", localhost(), false);
        sign(
            "other-name",
            vec![SanType::DnsName(
                "other.example".try_into().expect("a DNS name"),
            )],
            false,
        );
        sign("expired", localhost(), true);
        Pki { dir }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }
}

/// nginx before one ledgerd: a TLS server per certificate, and a plain one
/// that gzips, each on its own port.
struct Front {
    nginx: Child,
    _prefix: tempfile::TempDir,
    tls: Vec<(&'static str, SocketAddr)>,
    plain_gzip: SocketAddr,
}

impl Front {
    fn start(pki: &Pki, upstream: SocketAddr) -> Front {
        assert!(
            nginx_path().exists(),
            "{} is missing: these tests run nginx as a TLS front (`apt-get install nginx`, as \
             .ci/install does)",
            nginx_path().display()
        );
        let prefix = tempfile::tempdir().expect("nginx prefix");
        let p = prefix.path().display();
        // SAFETY: geteuid has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 {
            "user root;"
        } else {
            ""
        };
        let proxy = format!(
            "location / {{ proxy_pass http://{upstream}; proxy_http_version 1.1; \
             proxy_set_header Connection \"\"; }}\n\
             gzip on; gzip_types application/json; gzip_min_length 0; gzip_proxied any;"
        );
        let mut servers = String::new();
        let mut tls = Vec::new();
        for name in ["good", "other-name", "expired"] {
            let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
            servers.push_str(&format!(
                "server {{ listen {addr} ssl; ssl_certificate {}; ssl_certificate_key {}; {proxy} }}\n",
                pki.path(&format!("{name}.pem")).display(),
                pki.path(&format!("{name}.key")).display(),
            ));
            tls.push((name, addr));
        }
        let plain_gzip: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        servers.push_str(&format!("server {{ listen {plain_gzip}; {proxy} }}\n"));
        let conf = format!(
            "{user}\ndaemon off;\nworker_processes 1;\npid {p}/nginx.pid;\nerror_log stderr warn;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n access_log off;\n client_body_temp_path {p}/body;\n proxy_temp_path {p}/proxy;\n \
             fastcgi_temp_path {p}/fastcgi;\n uwsgi_temp_path {p}/uwsgi;\n scgi_temp_path {p}/scgi;\n\
             {servers}}}\n"
        );
        let conf_path = prefix.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let log_path = prefix.path().join("nginx.stderr");
        let log = std::fs::File::create(&log_path).expect("log");
        let nginx = Command::new(nginx_path())
            .arg("-p")
            .arg(prefix.path())
            .arg("-c")
            .arg(&conf_path)
            .args(["-e", "stderr"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start nginx");
        let mut front = Front {
            nginx,
            _prefix: prefix,
            tls,
            plain_gzip,
        };
        for addr in front
            .tls
            .iter()
            .map(|(_, a)| *a)
            .chain([plain_gzip])
            .collect::<Vec<_>>()
        {
            common::process::wait_accepting(&mut front.nginx, "nginx", addr, &log_path);
        }
        front
    }

    fn tls(&self, name: &str) -> SocketAddr {
        self.tls
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| *a)
            .expect("a TLS server of that name")
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        common::process::terminate(&mut self.nginx, Duration::from_secs(3));
    }
}

fn upstream() -> Ledgerd {
    Ledgerd::builder().dev(HEAD, 0).start()
}

fn follower(url: &str, ca: Option<&Path>) -> Ledgerd {
    let mut b = Ledgerd::builder().args(&["--upstream", url]);
    if let Some(ca) = ca {
        b = b.arg("--upstream-ca").arg(ca);
    }
    b.log("info").start()
}

/// What a node answers about its chain, but for its sync status (a
/// follower's names its upstream's head, an upstream's its own).
fn chain_answers(url: &str) -> Vec<(String, String)> {
    every_answer(url)
        .into_iter()
        .filter(|(call, _)| !call.contains("yncStatus"))
        .collect()
}

/// Waits until the follower answers every call as the upstream does (its
/// DA scan may trail its head by a poll); panics naming the first call
/// answered otherwise.
fn assert_answers_as(follower: &Ledgerd, upstream: &Ledgerd) {
    let theirs = chain_answers(&upstream.url);
    let ours = poll_until(
        Duration::from_secs(20),
        || chain_answers(&follower.url),
        |ours| *ours == theirs,
    )
    .unwrap_or_else(|ours| {
        let first = ours.iter().zip(&theirs).find(|(a, b)| a != b);
        panic!("the follower answers otherwise: {first:?}")
    });
    assert_eq!(ours.len(), theirs.len());
}

/// Waits until `node`'s `/health` is 503 with a problem that contains
/// `words`; returns the problem.
fn refused_with(node: &Ledgerd, words: &str) -> String {
    let (status, body) = wait_until_value(
        Duration::from_secs(10),
        &format!("/health to be 503 naming {words:?}"),
        || node.health(),
        |(status, body)| {
            *status == 503 && body["problem"].as_str().is_some_and(|p| p.contains(words))
        },
    );
    assert_eq!(status, 503);
    assert_eq!(body["reason"], "unreached", "{body}");
    assert_eq!(body["sourceReachable"], false, "{body}");
    assert_eq!(node.head(), 0, "nothing is stored from a refused upstream");
    let log = node.stderr();
    assert!(log.contains(words), "the log names it too:\n{log}");
    body["problem"].as_str().unwrap_or_default().to_string()
}

#[test]
#[ignore = "needs nginx"]
fn a_follower_over_https_with_the_ca_catches_up_and_answers_as_its_upstream() {
    let pki = Pki::new();
    let up = upstream();
    let front = Front::start(&pki, up.addr);
    let url = format!("https://{}", front.tls("good"));
    let f = follower(&url, Some(&pki.path("ca.pem")));
    wait_until(
        Duration::from_secs(30),
        "the follower to reach the head",
        || f.head() == HEAD,
    );
    assert_answers_as(&f, &up);
    let (status, body) = wait_until_value(
        Duration::from_secs(10),
        "/health 200",
        || f.health(),
        |(s, _)| *s == 200,
    );
    assert_eq!(status, 200);
    assert_eq!(body["upstream"], url.as_str(), "{body}");
    assert!(body.get("sourceProblem").is_none(), "{body}");
}

#[test]
#[ignore = "needs nginx"]
fn certificates_that_do_not_verify_are_refused_and_named_and_nothing_is_stored() {
    let pki = Pki::new();
    let up = upstream();
    let front = Front::start(&pki, up.addr);
    let ca = pki.path("ca.pem");
    // No CA: the system's roots do not know the test's.
    let good = format!("https://{}", front.tls("good"));
    let unknown = follower(&good, None);
    let why = refused_with(&unknown, "unknown issuer");
    assert!(why.contains("--upstream-ca"), "{why}");
    let wrong = follower(&format!("https://{}", front.tls("other-name")), Some(&ca));
    refused_with(&wrong, "name mismatch");
    let expired = follower(&format!("https://{}", front.tls("expired")), Some(&ca));
    refused_with(&expired, "has expired");
    // Still refused a while later: there is no fallback to trusting it.
    std::thread::sleep(Duration::from_secs(1));
    for node in [&unknown, &wrong, &expired] {
        assert_eq!(node.head(), 0);
        assert_eq!(node.health().0, 503);
    }
}

#[test]
#[ignore = "needs nginx"]
fn http_to_a_tls_port_and_https_to_a_plain_port_each_say_which() {
    let pki = Pki::new();
    let up = upstream();
    let front = Front::start(&pki, up.addr);
    let plain_to_tls = follower(&format!("http://{}", front.tls("good")), None);
    refused_with(
        &plain_to_tls,
        "http:// was given for a port that answers only TLS",
    );
    // nginx's plain server answers a TLS hello at once, in plain HTTP.
    let tls_to_plain = follower(
        &format!("https://{}", front.plain_gzip),
        Some(&pki.path("ca.pem")),
    );
    refused_with(
        &tls_to_plain,
        "https:// was given for a port that answers in plain HTTP",
    );
}

#[test]
#[ignore = "needs nginx"]
fn a_follower_decodes_the_gzip_answers_of_a_front() {
    let pki = Pki::new();
    let up = upstream();
    let front = Front::start(&pki, up.addr);
    // The front does compress: a range answer asked with gzip comes back gzip.
    let range =
        r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[1,40]}"#;
    let raw = common::exchange(
        front.plain_gzip,
        format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept-Encoding: \
             gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{range}",
            range.len()
        )
        .as_bytes(),
    );
    assert_eq!(raw.status, 200);
    assert_eq!(
        raw.header("content-encoding"),
        Some("gzip"),
        "{:?}",
        raw.headers
    );
    let f = follower(&format!("http://{}", front.plain_gzip), None);
    wait_until(
        Duration::from_secs(30),
        "the follower to reach the head",
        || f.head() == HEAD,
    );
    assert_answers_as(&f, &up);
}
