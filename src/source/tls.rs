//! TLS for the URLs ledgerd dials out to (`https://` upstreams, a bitcoind
//! behind a TLS front): rustls with ring as its provider, trusting the
//! system's root store and the certificates of `--upstream-ca`, and the
//! sentences a TLS failure is told in.
//!
//! The system's roots are found by `rustls-native-certs`: `SSL_CERT_FILE` /
//! `SSL_CERT_DIR` when set, else the distribution's bundle
//! (`/etc/ssl/certs/ca-certificates.crt` on Debian and Ubuntu,
//! `/etc/pki/tls/certs/ca-bundle.crt` on Fedora, ...). They are read at the
//! first `https://` request, not at start, and once per process (per CA
//! file). A certificate that does not verify is refused: there is no way
//! around the check.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustls::{CertificateError, ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// The certificates of a PEM file (one or more), or a sentence that says
/// why they cannot be used: for checking `--upstream-ca` at start.
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{shown} cannot be read: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{shown} is not a PEM file of certificates: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "{shown} holds no certificate (-----BEGIN CERTIFICATE----- blocks)"
        ));
    }
    let mut roots = RootCertStore::empty();
    for cert in &certs {
        roots
            .add(cert.clone())
            .map_err(|e| format!("{shown}: a certificate in it cannot be used as a CA: {e}"))?;
    }
    Ok(certs)
}

/// The client config for `https://` URLs: the system's roots, and those of
/// `ca_file`. Built once per CA file and shared.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    type Built = Vec<(Option<PathBuf>, Arc<ClientConfig>)>;
    static BUILT: Mutex<Built> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    let key = ca_file.map(Path::to_path_buf);
    if let Some((_, config)) = built.iter().find(|(k, _)| *k == key) {
        return Ok(config.clone());
    }
    let mut roots = RootCertStore::empty();
    match rustls_native_certs::load_native_certs() {
        Ok(certs) => {
            let (added, ignored) = roots.add_parsable_certificates(certs);
            log::debug!("TLS: {added} roots from the system's store ({ignored} unusable)");
        }
        Err(e) => log::warn!("TLS: the system's root certificates cannot be read: {e}"),
    }
    if let Some(path) = ca_file {
        // Each was added to a store once already: read_ca_file checks that.
        roots.add_parsable_certificates(
            read_ca_file(path).map_err(|e| format!("--upstream-ca {e}"))?,
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let config = Arc::new(config);
    built.push((key, config.clone()));
    Ok(config)
}

/// What went wrong with TLS in `error` (a failed request to `url`), as the
/// end of a sentence, if TLS is what went wrong.
pub fn explain(url: &str, error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let https = url.starts_with("https://");
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        // An io::Error hands out its inner error through get_ref, not source.
        let inner = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        for candidate in [Some(e), inner].into_iter().flatten() {
            if let Some(tls) = candidate.downcast_ref::<rustls::Error>() {
                return Some(tls_sentence(tls, https));
            }
        }
        next = inner.and_then(|i| i.source()).or_else(|| e.source());
    }
    None
}

fn tls_sentence(e: &rustls::Error, https: bool) -> String {
    use rustls::Error::*;
    match e {
        InvalidCertificate(CertificateError::UnknownIssuer) => {
            "its TLS certificate is not signed by a CA this node trusts (unknown issuer), and it \
             was refused: if it is a private CA, give its certificate with --upstream-ca FILE"
                .into()
        }
        InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "its TLS certificate is for another name than the URL's host (name mismatch), and \
              it was refused"
            .into(),
        InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            "its TLS certificate has expired, and it was refused".into()
        }
        InvalidCertificate(
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. },
        ) => "its TLS certificate is not valid yet (check this machine's clock), and it was \
              refused"
            .into(),
        InvalidCertificate(other) => {
            format!("its TLS certificate does not verify ({other:?}), and it was refused")
        }
        InvalidMessage(_) if https => {
            "it does not speak TLS: https:// was given for a port that answers in plain HTTP \
             (use http://)"
                .into()
        }
        other => format!("TLS failed: {other}"),
    }
}

/// Whether an HTTP answer to a plain `http://` request says that the port
/// speaks TLS (nginx's answer to plain HTTP on an `ssl` port).
pub fn plain_http_to_tls_port(status: u16, body: &[u8]) -> bool {
    status == 400
        && String::from_utf8_lossy(body)
            .to_ascii_lowercase()
            .contains("plain http request was sent to https port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_without_certificates_is_refused_with_a_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = read_ca_file(&empty).unwrap_err();
        assert!(e.contains("holds no certificate"), "{e}");
        let e = read_ca_file(&dir.path().join("missing.pem")).unwrap_err();
        assert!(e.contains("cannot be read"), "{e}");
    }

    #[test]
    fn certificate_errors_are_named() {
        let e = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert!(tls_sentence(&e, true).contains("--upstream-ca"));
        let e = rustls::Error::InvalidCertificate(CertificateError::Expired);
        assert!(tls_sentence(&e, true).contains("expired"));
        let e = rustls::Error::InvalidCertificate(CertificateError::NotValidForName);
        assert!(tls_sentence(&e, true).contains("name mismatch"));
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        let s = explain("https://a", &wrapped).unwrap();
        assert!(s.contains("name mismatch"), "{s}");
        let plain = std::io::Error::other("refused");
        assert_eq!(explain("https://a", &plain), None);
    }
}
