use super::*;
use crate::statuspage::{DESCRIPTION, Feed};
use std::collections::BTreeMap;

const HOSTILE: &str = "<script>alert(\"x\")</script>&'<img src=x onerror=alert(1)>";

use crate::statuspage::feed::tests::outcome_in as outcome;

fn fleet(n: usize, failed_every: usize) -> Feed {
    let feed = Feed::default();
    let outcomes: Vec<_> = (0..n)
        .map(|i| {
            let errors: &[&str] = if i % failed_every == 0 {
                &["the subnet overlaps"]
            } else {
                &[]
            };
            outcome(
                &format!("clusters/c{i:04}"),
                "fleet",
                &format!("c{i:04}"),
                errors,
            )
        })
        .collect();
    feed.units(&outcomes);
    feed
}

#[test]
fn escape_leaves_no_markup_from_hostile_text() {
    let out = escape(HOSTILE);
    assert_eq!(
        out,
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;&lt;img src=x onerror=alert(1)&gt;"
    );
    assert!(!out.contains(['<', '>', '"', '\'']));
    assert!(matches!(escape("plain-name_1"), Cow::Borrowed(_)));
    assert_eq!(
        text("password=hunter2 <b>"),
        "password=[redacted] &lt;b&gt;"
    );
}

#[test]
fn the_index_follows_the_contract_and_escapes_names_annotations_and_errors() {
    let feed = Feed::default();
    feed.units(&[
        outcome("clusters/dev", "aro-dev", "dev", &[]),
        outcome("clusters/bad\"><script>", "aro-x", "x", &[HOSTILE]),
    ]);
    let annotations = BTreeMap::from([(DESCRIPTION.to_string(), HOSTILE.to_string())]);
    feed.annotate(BTreeMap::from([("clusters/dev".to_string(), annotations)]));
    let s = feed.snapshot();
    let page = layout(
        "t",
        s.generation,
        &header(&s),
        &index(&s, &Query::default(), 0),
    );
    assert!(page.contains(&format!("<body data-generation=\"{}\">", s.generation)));
    assert!(
        page.contains("data-cluster=\"aro-dev/dev\" data-phase=\"Converged\""),
        "{page}"
    );
    assert!(page.contains("data-unit=\"clusters/dev\""));
    assert!(page.contains("<span class=\"phase\">Failed</span>"));
    assert!(
        page.contains("<div class=\"description\">&lt;script&gt;alert("),
        "{page}"
    );
    assert!(page.contains("data-unit=\"clusters/bad&quot;&gt;&lt;script&gt;\""));
    // The only script is the page's own.
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(page.contains("<script src=\"/assets/status.js\" defer></script>"));
    assert!(!page.contains("<img"));
    // Failed first.
    let failed = page.find("data-phase=\"Failed\"").unwrap();
    assert!(failed < page.find("data-cluster=\"aro-dev/dev\"").unwrap());
}

#[test]
fn the_cluster_page_escapes_annotations_and_history() {
    let feed = Feed::default();
    feed.units(&[outcome("clusters/dev", "aro-dev", "dev", &[HOSTILE])]);
    let annotations = BTreeMap::from([
        (DESCRIPTION.to_string(), HOSTILE.to_string()),
        (HOSTILE.to_string(), "v".to_string()),
    ]);
    feed.annotate(BTreeMap::from([("clusters/dev".to_string(), annotations)]));
    let s = feed.snapshot();
    let unit = s.cluster("aro-dev", "dev").unwrap();
    let history = vec![super::super::HistoryEntry {
        commit: "abcdef0123456789".into(),
        time: 0,
        summary: HOSTILE.into(),
        phase: Some("Failed".into()),
        revision: Some("0123".into()),
        step: Some("1/10".into()),
    }];
    let main = super::super::cluster::page(unit, Ok(&history), 90);
    assert!(
        !main.contains("<script") && !main.contains("<img"),
        "{main}"
    );
    assert!(main.contains("<p class=\"description\">&lt;script&gt;"));
    assert!(main.contains("<code>abcdef012345</code>"));
    assert!(main.contains("1m ago"));
    let broken = super::super::cluster::page(unit, Err(HOSTILE.into()), 0);
    assert!(!broken.contains("<script"));
}

#[test]
fn the_chain_shows_done_current_and_blocked_steps() {
    let mut c = crate::report::chain(&[], None);
    c.step = 3;
    for s in &mut c.steps {
        s.done = s.step < 3;
        s.state = if s.done {
            StepState::Done
        } else {
            StepState::Waiting
        };
    }
    let html = chain(&c, false);
    assert_eq!(html.matches("class=\"step done\"").count(), 2, "{html}");
    assert_eq!(html.matches("class=\"step current\"").count(), 1);
    c.steps[2].state = StepState::Failed;
    assert!(chain(&c, true).contains("class=\"step blocked\""));
}

#[test]
fn pages_and_filters_keep_a_large_fleet_small() {
    let feed = fleet(2_000, 10);
    let s = feed.snapshot();
    let (first, total, page) = select(&s, &Query::default());
    assert_eq!((first.len(), total, page), (PAGE_SIZE, 2_000, 1));
    assert!(
        first.iter().all(|u| u.phase == "Failed"),
        "200 failed first"
    );
    let html = index(&s, &Query::default(), 0);
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
    assert!(html.contains("href=\"/?page=2\""));
    let last = Query {
        page: Some(99),
        ..Query::default()
    };
    let (units, _, page) = select(&s, &last);
    assert_eq!((units.len(), page), (PAGE_SIZE, 20));
    let q = Query {
        q: Some("C0042".into()),
        ..Query::default()
    };
    let (units, total, _) = select(&s, &q);
    assert_eq!((units.len(), total), (1, 1));
    let failed = Query {
        phase: Some("Failed".into()),
        page: Some(2),
        ..Query::default()
    };
    let (units, total, page) = select(&s, &failed);
    assert_eq!((units.len(), total, page), (100, 200, 2));
    assert!(index(&s, &failed, 0).contains("href=\"/?page=1&amp;phase=Failed\""));
}

#[test]
fn ago_says_how_long() {
    assert_eq!(ago(100, 95), "5s ago");
    assert_eq!(ago(7_200, 0), "2h ago");
    assert_eq!(ago(0, 10), "0s ago");
}

#[test]
fn no_secret_value_reaches_the_page_or_the_json() {
    let secret = "s3cr3t-status-page-value";
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "pull", "namespace": "aro-dev"},
        "stringData": {"token": secret},
    });
    crate::redact::learn([&object]);
    let feed = Feed::default();
    let message = format!("the API server refused {secret}");
    feed.units(&[outcome("clusters/dev", "aro-dev", "dev", &[&message])]);
    let annotations = BTreeMap::from([(DESCRIPTION.to_string(), format!("token {secret}"))]);
    feed.annotate(BTreeMap::from([("clusters/dev".to_string(), annotations)]));
    let s = feed.snapshot();
    let unit = s.cluster("aro-dev", "dev").unwrap();
    let pages = [
        index(&s, &Query::default(), 0),
        super::super::cluster::page(unit, Ok(&[]), 0),
        s.to_json().to_string(),
    ];
    for page in pages {
        assert!(!page.contains(secret), "{page}");
        assert!(page.contains("[redacted]"), "{page}");
    }
}

#[test]
fn a_standby_says_whose_report_it_shows_and_from_which_commit() {
    let feed = Feed::default();
    let report = crate::report::build(&outcome("clusters/dev", "aro-dev", "dev", &[]));
    let published = crate::statuspage::Published {
        commit: "fedcba9876543210fedcba9876543210fedcba98".into(),
        time: 1_700_000_000,
        reports: vec![report],
    };
    feed.leader(None, Some("host-a".into()));
    let s = feed.snapshot();
    assert!(
        header(&s).contains("the leader <b class=\"holder\">host-a</b> has published no report"),
        "{}",
        header(&s)
    );
    feed.leader(Some(published), Some("host-a_<b>1</b>".into()));
    let s = feed.snapshot();
    let head = header(&s);
    assert!(
        head.contains("data-leader-commit=\"fedcba9876543210fedcba9876543210fedcba98\""),
        "{head}"
    );
    assert!(
        head.contains(
            "this is the leader <b class=\"holder\">host-a_&lt;b&gt;1&lt;/b&gt;</b>'s report"
        ),
        "{head}"
    );
    assert!(head.contains("<code>fedcba987654</code>"), "{head}");
    assert!(head.contains("2023-11-14T22:13:20Z"), "{head}");
    let main = index(&s, &Query::default(), 0);
    assert!(main.contains("data-cluster=\"aro-dev/dev\""), "{main}");
    assert!(s.to_json().contains("\"leader\":{\"commit\":\"fedcba98"));
    // Its own outcomes take over once it leads.
    feed.unit(&outcome("clusters/dev", "aro-dev", "dev", &["broken"]));
    let s = feed.snapshot();
    assert!(s.leader.is_none() && !header(&s).contains("stands by"));
}

#[test]
fn a_unit_without_a_cluster_links_to_its_page_with_what_it_renders() {
    let feed = Feed::default();
    let mut broken = outcome(
        "clusters/new one",
        "aro-x",
        "x",
        &["/spec/location: not offered"],
    );
    broken.cluster = None;
    feed.units(&[broken]);
    let objects = vec![crate::statuspage::RenderedObject {
        api_version: "cluster.x-k8s.io/v1beta1".into(),
        kind: "Cluster".into(),
        namespace: Some("aro-x".into()),
        name: "x".into(),
        file: "clusters/new one/cluster.yaml".into(),
    }];
    feed.rendered(BTreeMap::from([(
        "clusters/new one".to_string(),
        Some(objects.clone()),
    )]));
    let s = feed.snapshot();
    let main = index(&s, &Query::default(), 0);
    assert!(
        main.contains(
            "<a class=\"name muted\" href=\"/units/clusters/new%20one\">no cluster known</a>"
        ),
        "{main}"
    );
    let unit = s.unit("clusters/new one").expect("the unit");
    assert_eq!(unit.rendered, objects);
    let page = super::super::cluster::page(unit, Ok(&[]), 0);
    assert!(
        page.contains("No cluster of this unit is known yet"),
        "{page}"
    );
    assert!(page.contains("<h3>Rendered objects</h3>"), "{page}");
    assert!(page.contains("<td>aro-x/x</td>"), "{page}");
    assert!(page.contains("/spec/location: not offered"), "{page}");
    // Prepared at last: no rendered objects any more.
    feed.rendered(BTreeMap::from([("clusters/new one".to_string(), None)]));
    assert!(
        feed.snapshot()
            .unit("clusters/new one")
            .unwrap()
            .rendered
            .is_empty()
    );
    assert_eq!(unit_href("clusters/a/b"), "/units/clusters/a/b");
}
