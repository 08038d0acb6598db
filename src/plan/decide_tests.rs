//! The decision core as data: the facts of one object in, the question or the step out.

use super::*;
use serde_json::json;

fn key(kind: &str, name: &str) -> ObjectKey {
    ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: kind.into(),
        namespace: Some("ns".into()),
        name: name.into(),
    }
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"}, "data": data})
}

/// The facts of a plain object of git, nothing live, nothing recorded, every answer given.
fn facts<'a>(key: &'a ObjectKey, object: &'a Value) -> Facts<'a> {
    Facts {
        key,
        unit: "clusters/a",
        fleet: "",
        object,
        owned: false,
        unreadable: None,
        deleting_owner: None,
        blockers: &[],
        live: None,
        recorded: None,
        at_applied_revision: false,
        self_heal: false,
        gate: None,
        prerequisites: Some(Ok(())),
        azure: None,
        read_whole: false,
    }
}

fn step(f: &Facts) -> Step {
    match decide_object(f) {
        Verdict::Act(s) => *s,
        Verdict::Ask(q) => panic!("asked {q:?}"),
    }
}

/// `live` as the agent left it: its body marked, with field ownership, as applied.
fn applied(desired: &Value, unit: &str) -> (Value, String) {
    let body = ownership::mark(desired.clone(), unit, "");
    let digest = body_digest(&body);
    let mut live = body.clone();
    live["metadata"]["managedFields"] = json!([{"manager": crate::marks::FIELD_MANAGER,
        "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {}}}}]);
    (live, digest)
}

const MANAGED: Decision = Decision {
    provenance: Provenance::Created,
    policy: Policy::Manage,
    if_exists: false,
};

#[test]
fn a_new_object_is_created_with_the_units_mark() {
    let k = key("ConfigMap", "c");
    let o = config_map("c", json!({"a": "1"}));
    let s = step(&facts(&k, &o));
    assert_eq!(s.verb, Verb::Create);
    assert_eq!(s.decision, Some(MANAGED));
    assert!(
        s.record_first,
        "a decision nobody recorded is recorded before the create"
    );
    let body = s.body.unwrap();
    assert_eq!(ownership::owner(&body), Some("clusters/a"));
    assert_eq!(s.digest, Some(body_digest(&body)));
}

#[test]
fn questions_come_in_the_order_a_pass_answers_them() {
    let k = key("ConfigMap", "c");
    let o = config_map("c", json!({"a": "1"}));
    let mut f = facts(&k, &o);
    f.owned = true;
    f.prerequisites = None;
    assert_eq!(decide_object(&f), Verdict::Ask(Question::Gate));
    let gate = Gate::Open(o.clone());
    f.gate = Some(&gate);
    assert_eq!(decide_object(&f), Verdict::Ask(Question::Prerequisites));
    f.prerequisites = Some(Err("FinalizerNotAdded"));
    let s = step(&f);
    assert_eq!(
        (s.verb, s.reason.as_deref()),
        (Verb::Fail, Some("FinalizerNotAdded"))
    );
}

#[test]
fn what_cannot_be_read_or_is_being_deleted_is_not_applied() {
    let k = key("Widget", "w");
    let o = config_map("w", json!({}));
    let mut f = facts(&k, &o);
    f.unreadable = Some(&Unreadable::NotServed);
    let s = step(&f);
    assert_eq!(
        (s.verb, s.reason.as_deref()),
        (Verb::Fail, Some("UnknownKind"))
    );
    assert!(s.error.unwrap().contains("serves no kind Widget in v1"));
    let broken = Unreadable::ReadFailed("forbidden".into());
    f.unreadable = Some(&broken);
    assert!(
        step(&f)
            .error
            .unwrap()
            .ends_with("could not be read: forbidden")
    );

    let owner = key("AROControlPlane", "cp");
    let mut f = facts(&k, &o);
    f.deleting_owner = Some(&owner);
    let s = step(&f);
    assert_eq!(s.verb, Verb::Deleting { owner });
    assert!(s.reason.unwrap().contains("is being deleted"));
}

#[test]
fn an_owner_hold_waits_or_fails_and_dependencies_block() {
    let k = key("ConfigMap", "c");
    let o = config_map("c", json!({}));
    let on = vec![key("AROCluster", "a")];
    let mut f = facts(&k, &o);
    f.owned = true;
    let hold = Gate::Held(Hold {
        on: on.clone(),
        reason: "InfrastructureNotReady".into(),
        message: String::new(),
        needs_person: false,
    });
    f.gate = Some(&hold);
    let s = step(&f);
    assert_eq!(s.verb, Verb::Hold { on: on.clone() });
    assert_eq!(s.reason.as_deref(), Some("InfrastructureNotReady"));
    assert_eq!(s.message, None, "an empty message is none");
    let refused = Gate::Held(Hold {
        on: vec![],
        reason: "NodePolicyViolation".into(),
        message: "too many nodes".into(),
        needs_person: true,
    });
    f.gate = Some(&refused);
    assert_eq!(step(&f).verb, Verb::Fail, "only a person lifts it");
    let failed = Gate::Failed("InvalidSpec");
    f.gate = Some(&failed);
    assert_eq!(step(&f).reason.as_deref(), Some("InvalidSpec"));

    let mut f = facts(&k, &o);
    f.blockers = &on;
    assert_eq!(step(&f).verb, Verb::Hold { on });
}

#[test]
fn if_exists_asks_azure_and_adopts_what_exists() {
    let k = key("ResourceGroup", "rg");
    let mut o = config_map("rg", json!({}));
    o["metadata"]["annotations"] =
        json!({crate::validate::RECONCILE_POLICY_IF_EXISTS: "detach-on-delete"});
    let mut f = facts(&k, &o);
    assert_eq!(decide_object(&f), Verdict::Ask(Question::AzureExists));
    let exists = Ok(true);
    f.azure = Some(&exists);
    let s = step(&f);
    assert_eq!(s.verb, Verb::Create);
    let d = s.decision.unwrap();
    assert_eq!(
        (d.provenance, d.policy),
        (Provenance::Adopted, Policy::DetachOnDelete)
    );
    assert!(s.record_first);
    assert!(
        !s.adopted,
        "not live: created over the existing Azure resource"
    );
    let unknown = Err("no Azure view".to_string());
    f.azure = Some(&unknown);
    let s = step(&f);
    assert_eq!(
        (s.verb, s.reason.as_deref()),
        (Verb::Fail, Some("AdoptionUndecided"))
    );
    assert!(s.error.unwrap().contains("no Azure view"));
    // A decision recorded earlier is never taken again: Azure is not asked.
    let mut f = facts(&k, &o);
    f.recorded = Some(Recorded {
        decision: MANAGED,
        applied: None,
    });
    let s = step(&f);
    assert_eq!((s.decision, s.record_first), (Some(MANAGED), false));
}

#[test]
fn skip_reads_and_never_writes() {
    let k = key("ConfigMap", "c");
    let mut o = config_map("c", json!({}));
    o["metadata"]["annotations"] = json!({crate::validate::RECONCILE_POLICY: "skip"});
    let live = o.clone();
    let f = facts(&k, &o);
    let s = step(&f);
    assert_eq!((s.verb, s.body), (Verb::Skip, None));
    assert_eq!(
        s.message.as_deref(),
        Some("reconcile-policy skip: not created")
    );
    let mut f = facts(&k, &o);
    f.live = Some(&live);
    assert_eq!(step(&f).verb, Verb::Skip);
    // The one write that puts `skip` on a live object that does not carry it yet.
    let mut unmarked = live.clone();
    unmarked["metadata"]["annotations"] = json!({});
    unmarked["metadata"]["managedFields"] = json!([]);
    f.live = Some(&unmarked);
    assert_eq!(step(&f).verb, Verb::Update);
}

#[test]
fn live_and_never_recorded_is_adopted() {
    let k = key("ConfigMap", "c");
    let o = config_map("c", json!({"a": "1"}));
    let mut live = o.clone();
    live["metadata"]["managedFields"] = json!([]);
    let mut f = facts(&k, &o);
    f.live = Some(&live);
    let s = step(&f);
    assert!(s.adopted);
    assert_eq!(s.decision.unwrap().provenance, Provenance::Adopted);
    assert_eq!(s.verb, Verb::Update, "the ownership mark is written");
}

#[test]
fn unchanged_in_git_and_changed_live_is_drift() {
    let k = key("ConfigMap", "c");
    let o = config_map("c", json!({"a": "1"}));
    let (live, digest) = applied(&o, "clusters/a");
    let mut f = facts(&k, &o);
    f.recorded = Some(Recorded {
        decision: MANAGED,
        applied: Some(&digest),
    });
    f.live = Some(&live);
    assert_eq!(step(&f).verb, Verb::Unchanged);
    let mut changed_live = live.clone();
    changed_live["data"]["a"] = json!("2");
    f.live = Some(&changed_live);
    let s = step(&f);
    assert_eq!(s.verb, Verb::Drifted);
    assert_eq!(s.drift[0].path, "data.a");
    assert!(s.message.unwrap().contains("--self-heal"));
    assert_eq!(s.body, None, "drift is reported, not written");
    f.self_heal = true;
    let s = step(&f);
    assert_eq!((s.verb, s.drift.len()), (Verb::Update, 1));
    // Changed in git: an update, not drift.
    let changed = config_map("c", json!({"a": "3"}));
    f.object = &changed;
    f.self_heal = false;
    let s = step(&f);
    assert_eq!((s.verb, s.drift.len()), (Verb::Update, 0));
}

#[test]
fn a_cached_copy_is_read_whole_before_it_is_written() {
    let k = key("ConfigMap", "c");
    let o = config_map("c", json!({"a": "1"}));
    let cached = config_map("c", json!({"a": "0"}));
    let mut f = facts(&k, &o);
    f.live = Some(&cached);
    assert_eq!(decide_object(&f), Verdict::Ask(Question::WholeObject));
    f.read_whole = true;
    assert_eq!(step(&f).verb, Verb::Update);
}

/// A view answering from data: every object of git, one ask each.
struct Data {
    keys: Vec<ObjectKey>,
    objects: Vec<Value>,
    asked: Vec<(usize, Question)>,
    gate: Option<Gate>,
}

impl UnitView for Data {
    fn facts(&self, i: usize) -> Facts<'_> {
        let mut f = facts(&self.keys[i], &self.objects[i]);
        f.owned = i == 1;
        f.gate = self.gate.as_ref();
        f
    }

    fn answer(&mut self, i: usize, question: Question) {
        self.asked.push((i, question));
        self.gate = Some(Gate::Open(self.objects[i].clone()));
    }
}

#[test]
fn a_unit_is_decided_in_its_order_asking_each_question_once() {
    let mut view = Data {
        keys: vec![key("ConfigMap", "a"), key("ConfigMap", "b")],
        objects: vec![config_map("a", json!({})), config_map("b", json!({}))],
        asked: vec![],
        gate: None,
    };
    let steps = decide_unit(&[1, 0], &mut view);
    let order: Vec<(usize, Verb)> = steps.into_iter().map(|(i, s)| (i, s.verb)).collect();
    assert_eq!(order, vec![(1, Verb::Create), (0, Verb::Create)]);
    assert_eq!(view.asked, vec![(1, Question::Gate)]);
}
