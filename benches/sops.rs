//! SOPS decryption benchmark (issue 16): what decrypting one SOPS file per cluster adds to a plan.
//! Run with `cargo bench --bench sops` (`-- --clusters N`, default 1,000; `-- --rounds R`,
//! default 3); results go to stdout as Markdown.
//!
//! Two fleets from `aro-gitops-fleetgen --pull-secret`, identical but for one thing: each cluster's
//! Secret is plain text in one and SOPS-encrypted (age, `encrypted_regex: ^(data|stringData)$`)
//! in the other. Each becomes a git repository with one cluster changed in a second commit. Then
//! `aro-gitops plan --base HEAD~1 --head HEAD --decryption-key-file KEY -o json` on both, side by
//! side, alternating: base renders (and so decrypts) every unit. One cold run each (fresh state
//! directory: the clone included), then `rounds` warm runs each (mirrors and checkouts left);
//! the medians are compared. The encrypted fleet is also planned without the key (ciphertext
//! digests stand in).
//!
//! Target (issue 16): decrypting 1,000 SOPS files adds at most 10% to a 1,000-cluster plan.

mod common;

use age::secrecy::ExposeSecret;
use common::{Measured, git, mb, ms, run_measured, yes};
use std::path::{Path, PathBuf};
use std::time::Duration;

const TARGET_OVERHEAD: f64 = 0.10;

struct Options {
    clusters: usize,
    rounds: usize,
}

fn options(args: &[String]) -> Options {
    let mut o = Options {
        clusters: 1000,
        rounds: 3,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--clusters" => o.clusters = it.next().and_then(|n| n.parse().ok()).unwrap_or(1000),
            "--rounds" => o.rounds = it.next().and_then(|n| n.parse().ok()).unwrap_or(3).max(1),
            _ => {} // `--bench` and anything cargo adds are ignored
        }
    }
    o
}

/// One cluster's location annotation changed in a new commit: head renders that unit only.
fn change_one_cluster(repo: &Path) {
    let mut clusters: Vec<PathBuf> = std::fs::read_dir(repo.join("clusters"))
        .expect("clusters/")
        .map(|e| e.expect("entry").path())
        .collect();
    clusters.sort();
    let file = clusters[0].join("patches/annotations.yaml");
    let text = std::fs::read_to_string(&file).expect("the annotations patch");
    let changed = text.replacen(
        "fleet.example.com/location: ",
        "fleet.example.com/location: moved-",
        1,
    );
    assert_ne!(
        text,
        changed,
        "{} has a location annotation",
        file.display()
    );
    std::fs::write(&file, changed).expect("write");
    git(repo, &["commit", "-qam", "one cluster changed"]);
}

fn plan(repo: &Path, state: &Path, key: Option<&Path>) -> Measured {
    let mut args: Vec<String> = [
        "--log", "warn", "plan", "--base", "HEAD~1", "--head", "HEAD", "-o", "json",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["--repo".into(), repo.display().to_string()]);
    args.extend(["--state".into(), state.display().to_string()]);
    if let Some(k) = key {
        args.extend(["--decryption-key-file".into(), k.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let m = run_measured(common::ARO_GITOPS, &args, true);
    assert!(
        matches!(m.code, Some(0 | 2)),
        "plan of {} failed: {}",
        repo.display(),
        common::log_tail(&m.stderr, 20)
    );
    m
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let o = options(&args);
    let work = std::env::temp_dir().join(format!("aro-gitops-sops-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");

    let identity = age::x25519::Identity::generate();
    let key = work.join("age.key");
    std::fs::write(&key, identity.to_string().expose_secret()).expect("key file");
    let recipient = identity.to_public().to_string();

    eprintln!(
        "sops bench: generating two fleets of {} clusters...",
        o.clusters
    );
    let plain = work.join("plain");
    let encrypted = work.join("encrypted");
    common::generate_fleet_with(o.clusters, &["--pull-secret"], &plain);
    common::generate_fleet_with(
        o.clusters,
        &["--pull-secret", "--sops-recipient", &recipient],
        &encrypted,
    );
    change_one_cluster(&plain);
    change_one_cluster(&encrypted);

    let (plain_state, enc_state, digest_state) = (
        work.join("state-plain"),
        work.join("state-encrypted"),
        work.join("state-digests"),
    );
    eprintln!("sops bench: cold plans...");
    let plain_cold = plan(&plain, &plain_state, Some(&key));
    let enc_cold = plan(&encrypted, &enc_state, Some(&key));
    let digest_cold = plan(&encrypted, &digest_state, None);
    let (mut p, mut e, mut d) = (vec![], vec![], vec![]);
    let (mut p_rss, mut e_rss) = (None, None);
    for round in 0..o.rounds {
        eprintln!("sops bench: warm round {}/{}...", round + 1, o.rounds);
        let a = plan(&plain, &plain_state, Some(&key));
        let b = plan(&encrypted, &enc_state, Some(&key));
        let c = plan(&encrypted, &digest_state, None);
        p.push(a.wall);
        e.push(b.wall);
        d.push(c.wall);
        p_rss = p_rss.max(a.peak_rss_mb.map(|v| v as u64));
        e_rss = e_rss.max(b.peak_rss_mb.map(|v| v as u64));
    }
    let (pm, em, dm) = (median(p), median(e), median(d));
    let overhead = em.as_secs_f64() / pm.as_secs_f64() - 1.0;
    let cold_overhead = enc_cold.wall.as_secs_f64() / plain_cold.wall.as_secs_f64() - 1.0;

    println!(
        "## SOPS decryption in a plan: {} clusters, one SOPS file each\n",
        o.clusters
    );
    println!(
        "`plan --base HEAD~1 --head HEAD -o json` (base renders every unit), one cluster changed; warm: median of {} runs on the state left, cold: a fresh state directory.\n",
        o.rounds
    );
    println!("| fleet | warm (median) | cold | peak RSS (warm) |");
    println!("|---|---|---|---|");
    println!(
        "| plain-text Secrets, with `--decryption-key-file` | {} | {} | {} |",
        ms(pm),
        ms(plain_cold.wall),
        mb(p_rss.map(|v| v as f64))
    );
    println!(
        "| SOPS-encrypted Secrets, decrypted | {} | {} | {} |",
        ms(em),
        ms(enc_cold.wall),
        mb(e_rss.map(|v| v as f64))
    );
    println!(
        "| SOPS-encrypted Secrets, no key (ciphertext digests) | {} | {} | |",
        ms(dm),
        ms(digest_cold.wall)
    );
    println!(
        "\nDecryption adds {:+.1}% warm ({:+.1}% cold); target at most {:.0}%: {}",
        overhead * 100.0,
        cold_overhead * 100.0,
        TARGET_OVERHEAD * 100.0,
        yes(overhead <= TARGET_OVERHEAD)
    );
    let _ = std::fs::remove_dir_all(&work);
}
