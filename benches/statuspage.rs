//! Status page benchmark (issue 16, "How it is measured"): time to first byte and page size at
//! 2,000 clusters. A synthetic snapshot of 2,000 units (29 objects each, the chain's ten steps,
//! one unit in ten failed with errors) is fed through the real [`Feed`], served by the real router
//! over loopback, and fetched with plain HTTP/1.1 requests: each page 20 times, the time to the
//! first byte of the response and to its last, and its size.
//!
//! Run with `cargo bench --bench statuspage` (options after `--`: `--clusters N`, `--rounds N`).
//! Asserted: every HTML page's first byte within 100 ms (p95) and its size within 1 MB.

use aro_gitops::object::ObjectKey;
use aro_gitops::report::{
    AzureMode, ObjectAction, ObjectOutcome, Standing, UnitError, UnitOutcome,
};
use aro_gitops::statuspage::{DESCRIPTION, Feed};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const KINDS: [&str; 6] = [
    "ResourceGroup",
    "VirtualNetwork",
    "VirtualNetworksSubnet",
    "NetworkSecurityGroup",
    "HcpOpenShiftCluster",
    "HcpOpenShiftClustersNodePool",
];

fn outcome(i: usize) -> UnitOutcome {
    let namespace = format!("aro-c{i:04}");
    let cluster = ObjectKey {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        kind: "Cluster".into(),
        namespace: Some(namespace.as_str().into()),
        name: format!("c{i:04}"),
    };
    let failed = i.is_multiple_of(10);
    let objects = (0..29)
        .map(|j| ObjectOutcome {
            key: ObjectKey {
                group: "example.azure.com".into(),
                version: "v1".into(),
                kind: KINDS[j % KINDS.len()].into(),
                namespace: Some(namespace.as_str().into()),
                name: format!("c{i:04}-object-{j}"),
            },
            action: if failed && j == 28 {
                ObjectAction::Failed
            } else {
                ObjectAction::Unchanged
            },
            ready: !(failed && j == 28),
            reason: None,
            message: None,
        })
        .collect();
    UnitOutcome {
        held: None,
        rendered_at: None,
        unit: format!("clusters/c{i:04}"),
        standing: Standing::unknown(Some(&cluster)),
        cluster: Some(cluster),
        revision: "4f1c2a9be07d55c3a1f0e9d8c7b6a5f4e3d2c1b0".into(),
        stale_source: None,
        azure: AzureMode::Simulated,
        objects,
        errors: if failed {
            vec![UnitError::new(
                None,
                Some(format!("clusters/c{i:04}/cluster-params.yaml").into()),
                "the subnet 10.0.0.0/24 overlaps the subnet of another cluster in the same virtual network; pick another range".into(),
            )]
        } else {
            vec![]
        },
    }
}

/// One GET: time to first byte, total time, body size (bytes after the head).
fn get(addr: &str, path: &str) -> (Duration, Duration, usize) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let started = Instant::now();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .expect("request");
    let mut first = [0u8; 1];
    stream.read_exact(&mut first).expect("a first byte");
    let ttfb = started.elapsed();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the response");
    let total = started.elapsed();
    let text = String::from_utf8_lossy(&rest);
    assert!(
        first[0] == b'H' && text.starts_with("TTP/1.1 200"),
        "{path}: {}",
        &text[..text.len().min(200)]
    );
    let body = text.split_once("\r\n\r\n").map_or(0, |(_, b)| b.len());
    (ttfb, total, body)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut clusters = 2_000;
    let mut rounds = 20;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--clusters" => {
                clusters = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--clusters N")
            }
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            _ => {} // `cargo bench` passes `--bench`
        }
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let feed = Feed::default();
    let started = Instant::now();
    let outcomes: Vec<UnitOutcome> = (0..clusters).map(outcome).collect();
    feed.units(&outcomes);
    feed.annotate(
        outcomes
            .iter()
            .map(|o| {
                let description = format!("{} team <b>cluster</b> in westeurope", o.unit);
                (
                    o.unit.clone(),
                    BTreeMap::from([(DESCRIPTION.to_string(), description)]),
                )
            })
            .collect(),
    );
    let fed = started.elapsed();
    let server = runtime
        .block_on(aro_gitops::statuspage::serve(
            feed.clone(),
            "127.0.0.1:0".parse().unwrap(),
        ))
        .expect("serve");
    let addr = server.addr.to_string();
    println!(
        "status page at {clusters} clusters ({rounds} requests each; snapshot fed in {}):\n",
        ms(fed)
    );
    println!("| page | first byte p50 | first byte p95 | whole page p50 | size |");
    println!("|---|---|---|---|---|");
    let one = format!("/clusters/aro-c{:04}/c{:04}", clusters / 2, clusters / 2);
    let pages = [
        ("/", true),
        ("/?page=10", true),
        ("/?phase=Failed", true),
        ("/?q=c1234", true),
        (one.as_str(), true),
        ("/api/status", false),
    ];
    let mut failures = Vec::new();
    for (path, html) in pages {
        let mut ttfbs = Vec::new();
        let mut totals = Vec::new();
        let mut size = 0;
        for _ in 0..rounds {
            let (ttfb, total, body) = get(&addr, path);
            ttfbs.push(ttfb);
            totals.push(total);
            size = body;
        }
        ttfbs.sort();
        totals.sort();
        let p95 = ttfbs[(ttfbs.len() * 95 / 100).min(ttfbs.len() - 1)];
        println!(
            "| `{path}` | {} | {} | {} | {:.1} KB |",
            ms(ttfbs[ttfbs.len() / 2]),
            ms(p95),
            ms(totals[totals.len() / 2]),
            size as f64 / 1024.0
        );
        if html && p95 > Duration::from_millis(100) {
            failures.push(format!("{path}: first byte p95 {} > 100 ms", ms(p95)));
        }
        if html && size > 1_000_000 {
            failures.push(format!("{path}: {size} bytes > 1 MB"));
        }
    }
    drop(server);
    assert!(failures.is_empty(), "not met:\n{}", failures.join("\n"));
}
