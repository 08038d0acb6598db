//! Control-plane benchmark: LIST of 10,000 objects of one kind, 1,000 sequential server-side
//! applies and 2,000 creates from 16 concurrent writers, all over a loopback socket with kube-rs, plus the same LIST by `kubectl get` as a
//! yardstick. Run with `cargo bench --bench controlplane`; results go to stdout as Markdown.
//!
//! Sizes grow (1k, 5k, 10k objects) so the table shows how LIST scales; applies are timed in two
//! halves so a slowdown as the store grows shows up as a ratio.

use aro_gitops::controlplane::{Config, ControlPlane};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn config_map(i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:05}"), "labels": {"bench": "list", "shard": (i % 10).to_string()}},
        "data": {"a": "alpha", "b": format!("value-{i}"), "c": "x".repeat(200)}
    }))
    .expect("valid ConfigMap")
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = Config::new(dir.path());
    config.preload_crds = false;
    let cp = ControlPlane::open(config).expect("control plane opens");
    let server = cp
        .spawn("127.0.0.1:0".parse().unwrap(), false)
        .await
        .expect("serves");
    let client = server.client().expect("client");
    let kubeconfig = dir.path().join("kubeconfig");
    aro_gitops::controlplane::kubeconfig::write(&kubeconfig, &server.url()).unwrap();

    let nss: Api<Namespace> = Api::all(client.clone());
    for ns in ["bench", "applies"] {
        nss.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    }

    println!("| measurement | result |");
    println!("|---|---|");

    // 1,000 sequential server-side applies (each a durable commit), in two halves.
    let applies: Api<ConfigMap> = Api::namespaced(client.clone(), "applies");
    let pp = PatchParams::apply("bench").force();
    let mut halves = Vec::new();
    let total = Instant::now();
    for half in 0..2 {
        let start = Instant::now();
        for i in half * 500..(half + 1) * 500 {
            applies
                .patch(&format!("cm-{i:05}"), &pp, &Patch::Apply(config_map(i)))
                .await
                .unwrap();
        }
        halves.push(start.elapsed());
    }
    let total = total.elapsed();
    println!(
        "| 1,000 sequential server-side applies (create) | {} total, {:.2} ms/apply |",
        ms(total),
        total.as_secs_f64() * 1000.0 / 1000.0
    );
    println!(
        "| ... first 500 / last 500 | {} / {} (ratio {:.2}) |",
        ms(halves[0]),
        ms(halves[1]),
        halves[1].as_secs_f64() / halves[0].as_secs_f64()
    );
    let start = Instant::now();
    for i in 0..1000 {
        let mut cm = config_map(i);
        cm.data
            .as_mut()
            .unwrap()
            .insert("b".into(), format!("changed-{i}"));
        applies
            .patch(&format!("cm-{i:05}"), &pp, &Patch::Apply(cm))
            .await
            .unwrap();
    }
    let updates = start.elapsed();
    println!(
        "| 1,000 sequential server-side applies (update) | {} total, {:.2} ms/apply |",
        ms(updates),
        updates.as_secs_f64()
    );

    // 2,000 creates from 16 concurrent writers: what group commit buys (many writes, one sync).
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "concurrent"}})).unwrap(),
    )
    .await
    .unwrap();
    let writers = 16;
    let per_writer = 125;
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), "concurrent");
            tokio::spawn(async move {
                for i in 0..per_writer {
                    api.create(&PostParams::default(), &config_map(w * per_writer + i))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let concurrent = start.elapsed();
    println!(
        "| 2,000 creates from {writers} concurrent writers | {} total, {:.0} writes/s |",
        ms(concurrent),
        (writers * per_writer) as f64 / concurrent.as_secs_f64()
    );

    // LIST at growing sizes.
    let bench: Api<ConfigMap> = Api::namespaced(client.clone(), "bench");
    let mut created = 0;
    for size in [1_000usize, 5_000, 10_000] {
        while created < size {
            bench
                .create(&PostParams::default(), &config_map(created))
                .await
                .unwrap();
            created += 1;
        }
        let mut typed = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            let list = bench.list(&ListParams::default()).await.unwrap();
            typed.push(start.elapsed());
            assert_eq!(list.items.len(), size);
        }
        let mut raw = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            let req = http::Request::get("/api/v1/namespaces/bench/configmaps")
                .body(Vec::new())
                .unwrap();
            let text = client.request_text(req).await.unwrap();
            raw.push(start.elapsed());
            assert!(text.len() > size * 100);
        }
        let mut kubectl = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            let out = std::process::Command::new("kubectl")
                .args([
                    "--kubeconfig",
                    kubeconfig.to_str().unwrap(),
                    "get",
                    "configmaps",
                    "-n",
                    "bench",
                    "-o",
                    "json",
                ])
                .output()
                .expect("kubectl runs");
            kubectl.push(start.elapsed());
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        println!(
            "| LIST {size} ConfigMaps: raw bytes / kube-rs typed / `kubectl get -o json` (median) | {} / {} / {} |",
            ms(median(raw)),
            ms(median(typed)),
            ms(median(kubectl))
        );
    }
    println!(
        "| peak RSS of the benchmark process (server + client) | {:.0} MB |",
        peak_rss_mb()
    );
}
