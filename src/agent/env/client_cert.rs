//! The client certificate of a kubeconfig, checked before the agent's TLS stack sees it: rustls
//! takes only X.509 v3 certificates, where kubectl (Go's TLS) also takes v1 ones, which some
//! hand-made PKIs still issue. rustls's own words for it ("invalid private key: invalid peer
//! certificate: UnsupportedCertVersion") name neither the certificate nor the fix; the error here
//! names both.

use base64::Engine;
use std::path::Path;

/// The X.509 version (1, 2 or 3) of a DER certificate, `None` when it is not one.
pub fn x509_version(der: &[u8]) -> Option<u8> {
    let (tag, cert, _) = tlv(der)?;
    let (tag_tbs, tbs, _) = tlv(cert)?;
    if tag != 0x30 || tag_tbs != 0x30 {
        return None;
    }
    // tbsCertificate: `version [0] EXPLICIT INTEGER DEFAULT v1`, then the serial number.
    let (first, version, _) = tlv(tbs)?;
    if first != 0xa0 {
        return Some(1);
    }
    match tlv(version)? {
        (0x02, [v @ 0..=2], _) => Some(v + 1),
        _ => None,
    }
}

/// One DER tag-length-value: its tag, its contents and what follows.
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, b| (l << 8) | *b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The certificates of a PEM text, as DER.
fn pem_certificates(pem: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let body = &rest[start + "-----BEGIN CERTIFICATE-----".len()..];
        let Some(end) = body.find("-----END CERTIFICATE-----") else {
            break;
        };
        let b64: String = body[..end].split_whitespace().collect();
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) {
            out.push(der);
        }
        rest = &body[end..];
    }
    out
}

/// Where a kubeconfig user's client certificate is, in the kubeconfig's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// `client-certificate-data` (base64 of the PEM text).
    Data(String),
    /// `client-certificate` (a PEM file).
    File(String),
}

impl CertSource {
    /// Of a user entry, if it has a client certificate.
    pub fn of(auth: &kube::config::AuthInfo) -> Option<CertSource> {
        if let Some(data) = &auth.client_certificate_data {
            return Some(CertSource::Data(data.clone()));
        }
        auth.client_certificate.clone().map(CertSource::File)
    }

    fn describe(&self) -> String {
        match self {
            CertSource::Data(_) => "client-certificate-data".to_string(),
            CertSource::File(path) => format!("client-certificate {path}"),
        }
    }

    /// The PEM text, `None` when it cannot be read (kube says why when it loads it).
    pub fn read(&self) -> Option<String> {
        match self {
            CertSource::Data(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok()),
            CertSource::File(path) => std::fs::read_to_string(path).ok(),
        }
    }
}

/// Refuses a client certificate the agent's TLS stack cannot use (the first one of `pem`, the
/// client's own): an X.509 v1 or v2 certificate, naming the kubeconfig, its user entry and
/// where the certificate is, and how to issue one that works.
pub fn check(
    kubeconfig: &Path,
    user: Option<&str>,
    source: &CertSource,
    pem: &str,
) -> Result<(), String> {
    let Some(version) = pem_certificates(pem).first().and_then(|d| x509_version(d)) else {
        return Ok(()); // not a certificate this can read: kube's loading says what is wrong
    };
    if version == 3 {
        return Ok(());
    }
    Err(format!(
        "--kubeconfig {}: the client certificate of user {} ({}) is an X.509 v{version} \
         certificate, which the agent's TLS stack (rustls) cannot use (kubectl accepts it); \
         reissue it as an X.509 v3 certificate, as kubeadm issues them (for example \
         `kubeadm kubeconfig user`, or `openssl x509 -req` with `-extfile` naming \
         keyUsage=digitalSignature,keyEncipherment and extendedKeyUsage=clientAuth), signed by \
         the same CA and for the same subject",
        kubeconfig.display(),
        user.map_or_else(|| "(none)".to_string(), |u| format!("{u:?}")),
        source.describe(),
    ))
}

/// The user entry the current context of `kc` names.
pub fn current_user(kc: &kube::config::Kubeconfig) -> Option<String> {
    let current = kc.current_context.as_deref()?;
    kc.contexts
        .iter()
        .find(|c| c.name == current)?
        .context
        .as_ref()?
        .user
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A self-signed client certificate made by the openssl CLI: X.509 v1 (`x509 -req` without
    /// extensions) or v3 (with them). Returns the PEM text of the certificate and of its key.
    fn openssl_cert(dir: &Path, v3: bool) -> (String, String) {
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("the openssl CLI");
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "k.pem",
        ]);
        run(&[
            "req",
            "-new",
            "-key",
            "k.pem",
            "-subj",
            "/CN=admin/O=system:masters",
            "-out",
            "r.csr",
        ]);
        std::fs::write(dir.join("ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        let mut args = vec![
            "x509", "-req", "-in", "r.csr", "-signkey", "k.pem", "-days", "1", "-out", "c.pem",
        ];
        if v3 {
            args.extend(["-extfile", "ext"]);
        }
        run(&args);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        (read("c.pem"), read("k.pem"))
    }

    #[test]
    fn the_version_is_read_from_the_der() {
        let dir = tempfile::tempdir().unwrap();
        let (v1, _) = openssl_cert(dir.path(), false);
        let (v3, _) = openssl_cert(dir.path(), true);
        assert_eq!(x509_version(&pem_certificates(&v1)[0]), Some(1));
        assert_eq!(x509_version(&pem_certificates(&v3)[0]), Some(3));
        assert_eq!(x509_version(b"not a certificate"), None);
        assert_eq!(x509_version(&[0x30, 0x82, 0xff]), None);
    }

    #[test]
    fn a_v1_certificate_is_named_with_its_kubeconfig_and_user() {
        let dir = tempfile::tempdir().unwrap();
        let (v1, _) = openssl_cert(dir.path(), false);
        let source = CertSource::File("/k/admin.crt".to_string());
        let e = check(
            Path::new("/k/admin.kubeconfig"),
            Some("admin"),
            &source,
            &v1,
        )
        .unwrap_err();
        for needle in [
            "--kubeconfig /k/admin.kubeconfig",
            "user \"admin\"",
            "client-certificate /k/admin.crt",
            "X.509 v1 certificate",
            "rustls",
            "reissue it as an X.509 v3 certificate, as kubeadm issues them",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let (v3, _) = openssl_cert(dir.path(), true);
        assert_eq!(check(Path::new("/k"), None, &source, &v3), Ok(()));
        assert_eq!(check(Path::new("/k"), None, &source, "garbage"), Ok(()));
    }

    #[tokio::test]
    async fn connecting_with_a_v1_certificate_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = openssl_cert(dir.path(), false);
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let kubeconfig = dir.path().join("v1.kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n\
                 clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n\
                 contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: old-admin\n\
                 users:\n- name: old-admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&cert),
                b64(&key)
            ),
        )
        .unwrap();
        let target = crate::agent::env::target::LiveTarget::Kubeconfig(kubeconfig.clone());
        let Err(e) = crate::agent::env::target::connect(&target).await else {
            panic!("a v1 client certificate was taken");
        };
        let e = e.to_string();
        assert!(
            e.contains(&format!("--kubeconfig {}", kubeconfig.display())),
            "{e}"
        );
        assert!(
            e.contains("user \"old-admin\" (client-certificate-data) is an X.509 v1"),
            "{e}"
        );
        assert!(!e.contains("UnsupportedCertVersion"), "{e}");
    }
}
