//! The bad-input corpus: each case under `tests/corpus/cases/<NN-name>/` is a small mutation of
//! `examples-repo/` (`case.yaml`: the edits, and what the agent must say). One good run of the
//! example fleet converges first; every case then starts from a copy of that repository and state,
//! commits its mutation and runs the real binary: `validate <repo>` and `run --once` on the
//! embedded control plane (and, for a case that breaks a unit, `plan` first: it must show what the
//! run then does). For each case: the exit code, an error naming the file, the object and
//! what is wrong (on the terminal and in the broken unit's report on the status branch), no panic,
//! nothing of the broken unit applied, the other units converged, nothing deleted. A case marked
//! `gap:` is a known shortfall: it must still fail its checks (so a fix shows up), and its table
//! row says so. The README's `### Bad-input corpus` table is generated from the case files
//! (`CORPUS_BLESS=1 cargo test --test corpus readme` rewrites it).

mod common;

use common::fleet::{Fleet, Output, aro_gitops_in};
use common::git;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// One case, as `case.yaml` writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    category: String,
    /// What the mutation does, in a few words (the README table's column).
    mutation: String,
    /// The unit that breaks; empty when the whole source does (git-level problems).
    #[serde(default)]
    unit: String,
    /// The exit code of `run --once`.
    exit: i32,
    /// The file the error names (relative to the repository).
    file: String,
    /// The object the error names (`Kind/namespace/name`, `Kind/name`), when there is one.
    #[serde(default)]
    object: Option<String>,
    /// The words the error says (the README table's column).
    says: String,
    /// What `run` says instead, when it finds the problem another way than `validate`.
    #[serde(default)]
    run_says: Option<String>,
    /// Units that fail with it by design (both sides of a conflict between units).
    #[serde(default)]
    also: Vec<String>,
    /// Whether `validate <repo>` must fail the same way (true unless the problem needs the live
    /// cluster, the git history or another unit).
    #[serde(default = "yes")]
    validate: bool,
    /// Extra arguments of `run --once`.
    #[serde(default)]
    args: Vec<String>,
    /// The report on the status branch that must name the error, when the unit's cluster is
    /// known (a unit that left git); by default `reports/_units/<unit>.md`.
    #[serde(default)]
    report: Option<String>,
    /// Edits of the repository, in order, then committed.
    steps: Vec<Step>,
    /// A known gap: why the agent falls short (the case must still fail its checks).
    #[serde(default)]
    gap: Option<String>,
}

fn yes() -> bool {
    true
}

fn dev() -> String {
    "clusters/dev".into()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Step {
    /// Replaces the single occurrence of `from` in `file` with `to`.
    Replace {
        file: String,
        from: String,
        to: String,
    },
    /// Writes `file` with `text`.
    Write { file: String, text: String },
    /// Appends `text` to `file`.
    Append { file: String, text: String },
    /// Writes `file` (relative to `unit`, default clusters/dev) with `text` and lists it in the
    /// unit's kustomization resources.
    AddResource {
        #[serde(default = "dev")]
        unit: String,
        file: String,
        text: String,
    },
    /// Adds `items` (YAML list entries, indented by two spaces) to the unit kustomization's own
    /// `patches:` (after its components: they see the cluster's final names).
    Patches {
        #[serde(default = "dev")]
        unit: String,
        items: String,
    },
    /// Copies the case folder's `from` (bytes, e.g. not UTF-8) to `file`.
    Copy { file: String, from: String },
    /// Removes a file or folder.
    Remove(String),
    /// Makes `file` a symbolic link to `target`.
    Symlink { file: String, target: String },
    /// Writes `file` of `bytes` bytes of a YAML comment.
    Large { file: String, bytes: usize },
    /// Adds a submodule entry (a gitlink) at `path`, with its `.gitmodules`.
    Submodule(String),
    /// Copies the unit `from` (a folder under clusters/) to `to`, replacing `from_name` by
    /// `to_name` in its files.
    CopyUnit {
        from: String,
        to: String,
        #[serde(default)]
        rename: BTreeMap<String, String>,
    },
    /// Replaces the repository with an empty git repository (no commit).
    EmptyRepo,
}

const CASES: &str = "tests/corpus/cases";

fn cases() -> Vec<(String, PathBuf, Case)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(CASES);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the corpus folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let id = dir.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(dir.join("case.yaml"))
                .unwrap_or_else(|e| panic!("{id}/case.yaml: {e}"));
            let case: Case =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{id}/case.yaml: {e}"));
            (id, dir, case)
        })
        .collect()
}

/// Every live object but Events and Leases: `Kind/namespace/name` → its generation.
type Snapshot = BTreeMap<String, Option<i64>>;

fn snapshot(fleet: &Fleet) -> Snapshot {
    fleet.with_client(async move |client| {
        use kube::api::{Api, DynamicObject, ListParams};
        use kube::discovery::{Discovery, verbs};
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .expect("discovery");
        let mut out = Snapshot::new();
        for group in discovery.groups() {
            for (resource, caps) in group.recommended_resources() {
                if ["Event", "Lease"].contains(&resource.kind.as_str())
                    || !caps.supports_operation(verbs::LIST)
                {
                    continue;
                }
                let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
                let Ok(list) = api.list(&ListParams::default()).await else {
                    continue;
                };
                for o in list {
                    let key = format!(
                        "{}/{}/{}",
                        resource.kind,
                        o.metadata.namespace.clone().unwrap_or_default(),
                        o.metadata.name.clone().unwrap_or_default()
                    );
                    out.insert(key, o.metadata.generation);
                }
            }
        }
        out
    })
}

/// The good fleet, converged once: its repository and state are the start of every case.
struct Base {
    fleet: Fleet,
    units: Vec<String>,
    live: Snapshot,
}

/// The fleet name of the base and of every copy (a copy lives at another path: by its URL it would
/// be another fleet).
const FLEET: [&str; 2] = ["--fleet", "corpus"];

fn base() -> Base {
    let (fleet, _) = Fleet::git();
    let out = fleet.aro_gitops(&[&["run", "--once", "--sim-delay", "0s"][..], &FLEET].concat());
    assert_eq!(
        out.code,
        0,
        "the base fleet did not converge:\n{}",
        out.all()
    );
    let live = snapshot(&fleet);
    Base {
        fleet,
        units: vec!["clusters/dev".into(), "clusters/prod".into()],
        live,
    }
}

/// `cp -a from to`: the repository with its `.git`, the state with its store.
fn copy_all(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// A copy of the base fleet in its own tempdir.
fn copy_of(base: &Base) -> (tempfile::TempDir, Fleet) {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_all(&base.fleet.repo, &dir.path().join("repo"));
    copy_all(&base.fleet.state, &dir.path().join("state"));
    let fleet = Fleet::at(dir.path().join("repo"), dir.path().join("state"));
    (dir, fleet)
}

fn apply(fleet: &Fleet, case_dir: &Path, step: &Step) {
    match step {
        Step::Replace { file, from, to } => fleet.replace(file, from, to),
        Step::Write { file, text } => fleet.write(file, text),
        Step::Append { file, text } => {
            let old = fleet.read(file);
            fleet.write(file, &format!("{old}{text}"));
        }
        Step::AddResource { unit, file, text } => {
            fleet.write(&format!("{unit}/{file}"), text);
            fleet.add_resource(unit, file);
        }
        Step::Patches { unit, items } => fleet.add_patches(unit, items),
        Step::Copy { file, from } => {
            let bytes = std::fs::read(case_dir.join(from)).expect("the case's file");
            std::fs::write(fleet.repo.join(file), bytes).expect("write");
        }
        Step::Remove(path) => fleet.remove(path),
        Step::Symlink { file, target } => {
            let path = fleet.repo.join(file);
            let _ = std::fs::remove_file(&path);
            std::os::unix::fs::symlink(target, &path).expect("a symlink");
        }
        Step::Large { file, bytes } => {
            let line = "# padding padding padding padding padding padding padding padding\n";
            let text = line.repeat(bytes / line.len() + 1);
            fleet.write(
                file,
                &format!("{text}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"),
            );
        }
        Step::Submodule(path) => {
            let sha = git::git(&fleet.repo, &["rev-parse", "HEAD"]);
            git::git(
                &fleet.repo,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("160000,{sha},{path}"),
                ],
            );
            fleet.write(
                ".gitmodules",
                &format!("[submodule \"x\"]\n\tpath = {path}\n\turl = https://example.com/x.git\n"),
            );
        }
        Step::CopyUnit { from, to, rename } => {
            git::copy_dir(&fleet.repo.join(from), &fleet.repo.join(to));
            for entry in std::fs::read_dir(fleet.repo.join(to)).expect("the copy") {
                let path = entry.expect("an entry").path();
                let mut text = std::fs::read_to_string(&path).expect("a text file");
                for (a, b) in rename {
                    text = text.replace(a.as_str(), b);
                }
                std::fs::write(&path, text).expect("write");
            }
        }
        Step::EmptyRepo => {
            std::fs::remove_dir_all(&fleet.repo).expect("remove the repository");
            std::fs::create_dir_all(&fleet.repo).expect("an empty folder");
            git::git(&fleet.repo, &["init", "-q"]);
        }
    }
}

/// Whether some line of `text` names `file` (any line when `None`) and `case`'s object, and says
/// `says`, within a block of four lines starting there. A Secret's message may be withheld.
fn names_it(text: &str, case: &Case, file: Option<&str>, says: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let secret = case
        .object
        .as_deref()
        .is_some_and(|o| o.starts_with("Secret/"));
    (0..lines.len()).any(|i| {
        let block = lines[i..(i + 4).min(lines.len())].join(" ");
        file.is_none_or(|f| lines[i].contains(f))
            && case.object.as_deref().is_none_or(|o| block.contains(o))
            && (block.contains(says) || (secret && block.contains("withheld")))
    })
}

/// The report of `unit` on the status branch (`reports/_units/<unit>.md`), if any.
fn unit_report(fleet: &Fleet, unit: &str) -> Option<String> {
    fleet.report(&format!("reports/_units/{}.md", unit.replace('/', "_")))
}

/// Runs one case; returns what went wrong (empty when it behaves).
fn check(base: &Base, dir: &Path, case: &Case) -> Vec<String> {
    let (_tmp, fleet) = copy_of(base);
    for step in &case.steps {
        apply(&fleet, dir, step);
    }
    if !case.steps.iter().any(|s| matches!(s, Step::EmptyRepo)) {
        git::git(&fleet.repo, &["add", "-A"]);
        git::git(
            &fleet.repo,
            &["commit", "-q", "--allow-empty", "-m", "the mutation"],
        );
    }
    let mut problems = Vec::new();
    let mut no_panic = |what: &str, out: &Output| {
        if out.stderr.contains("panicked at") || out.code == 101 {
            problems.push(format!("{what} panicked"));
        }
    };

    if case.validate {
        let out = validate(&fleet);
        no_panic("validate", &out);
        if out.code == 0 || !out.stderr.contains("error") {
            problems.push(format!("validate did not fail (exit {})", out.code));
        }
        if !names_it(&out.all(), case, Some(&case.file), &case.says) {
            problems
                .push("validate's error does not name the file, the object and the words".into());
        }
        if !problems.is_empty() {
            problems.push(out.all());
        }
    }

    if !case.unit.is_empty() && case.args.is_empty() {
        problems.extend(plan_problems(&fleet, case, &base.units));
    }

    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "60s"];
    args.extend(FLEET);
    args.extend(case.args.iter().map(String::as_str));
    let out = fleet.aro_gitops(&args);
    let mut run_problems = Vec::new();
    if out.stderr.contains("panicked at") || out.code == 101 {
        run_problems.push("run panicked".to_string());
    }
    if out.code != case.exit {
        run_problems.push(format!("run exited {}, not {}", out.code, case.exit));
    }
    let says = case.run_says.as_deref().unwrap_or(&case.says);
    if std::env::var_os("CORPUS_SHOW").is_some() {
        let line = out
            .all()
            .lines()
            .find(|l| l.contains(&case.file) && l.contains(says))
            .map(str::to_string);
        eprintln!("SHOW {}: {}", case.mutation, line.unwrap_or_default());
    }
    if !names_it(&out.all(), case, Some(&case.file), says) {
        run_problems.push("run's error does not name the file, the object and the words".into());
    }
    if !case.unit.is_empty() {
        if !out.all().contains(&format!("{}: Failed", case.unit)) {
            run_problems.push(format!("{} is not reported Failed", case.unit));
        }
        // The unit's own report need not repeat the unit's folder.
        let file = (case.file != case.unit).then_some(case.file.as_str());
        let report = match &case.report {
            Some(path) => fleet.report(path),
            None => unit_report(&fleet, &case.unit),
        };
        match report {
            Some(report) if names_it(&report, case, file, says) => {}
            Some(report) => run_problems.push(format!(
                "the report of {} does not name the file, the object and the words:\n{report}",
                case.unit
            )),
            None => run_problems.push(format!("no report of {} committed", case.unit)),
        }
        for also in &case.also {
            if !out.all().contains(&format!("{also}: Failed")) {
                run_problems.push(format!("{also} is not reported Failed"));
            }
        }
        let fails = |u: &String| *u == case.unit || case.also.contains(u);
        for other in base.units.iter().filter(|u| !fails(u)) {
            if !out.stdout.contains(&format!("{other}: Converged")) {
                run_problems.push(format!("{other} did not converge"));
            }
        }
    }
    if !run_problems.is_empty() {
        run_problems.push(out.all());
    }
    problems.extend(run_problems);

    // Nothing deleted, nothing created, nothing changed: the broken unit applied nothing and the
    // others were converged already. The agent's own bookkeeping (its namespace) and the Secrets
    // the simulator writes (kubeconfigs) may change.
    let live = snapshot(&fleet);
    let own = |key: &str| key.contains("/aro-gitops-system/");
    for (key, generation) in &base.live {
        match live.get(key) {
            None => problems.push(format!("{key} was deleted")),
            Some(_) if own(key) || key.starts_with("Secret/") => {}
            Some(g) if g != generation => problems.push(format!(
                "{key} changed (generation {generation:?} -> {g:?})"
            )),
            Some(_) => {}
        }
    }
    for key in live
        .keys()
        .filter(|k| !base.live.contains_key(*k) && !own(k))
    {
        problems.push(format!("{key} was created"));
    }
    problems
}

/// A plan shows what the run then does: the broken unit fails (in the plan, with an error) and
/// nothing else changes. Returns what differs.
fn plan_problems(fleet: &Fleet, case: &Case, units: &[String]) -> Vec<String> {
    let out = fleet.aro_gitops(&[&["plan", "--color", "never", "-o", "json"][..], &FLEET].concat());
    let Ok(plan) = serde_json::from_str::<serde_json::Value>(&out.stdout) else {
        return vec![format!("plan printed no JSON preview:\n{}", out.all())];
    };
    let mut problems = Vec::new();
    for unit in units {
        let Some(c) = plan["clusters"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["unit"] == unit.as_str()))
        else {
            problems.push(format!("the plan has no {unit}"));
            continue;
        };
        let errors = c["errors"].as_array().map_or(0, Vec::len);
        let counts = &c["counts"];
        let writes: u64 = ["create", "update", "delete", "adopted"]
            .iter()
            .map(|k| counts[k].as_u64().unwrap_or(0))
            .sum();
        let fails = *unit == case.unit || case.also.contains(unit);
        if fails && errors == 0 {
            problems.push(format!(
                "the plan shows no error for {unit}, which the run fails"
            ));
        }
        if !fails && (errors > 0 || writes > 0) {
            problems.push(format!(
                "the plan shows {errors} errors and {writes} writes for {unit}, which the run leaves as it is"
            ));
        }
    }
    if !problems.is_empty() {
        problems.push(out.all());
    }
    problems
}

fn validate(fleet: &Fleet) -> Output {
    aro_gitops_in(Path::new("."), &["validate", fleet.repo.to_str().unwrap()])
}

/// How many cases run at once (each runs the binary, which is mostly waiting on its own I/O).
const WORKERS: usize = 4;

#[test]
fn corpus() {
    let started = std::time::Instant::now();
    let only = std::env::var("CORPUS_ONLY").ok();
    let all: Vec<_> = cases()
        .into_iter()
        .filter(|(id, _, _)| {
            // CORPUS_ONLY: one or more parts of case ids, comma-separated.
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|part| id.contains(part)))
        })
        .collect();
    let base = Arc::new(base());
    let queue = Arc::new(Mutex::new(all));
    let results = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (base, queue, results) = (base.clone(), queue.clone(), results.clone());
            std::thread::spawn(move || {
                loop {
                    let Some((id, dir, case)) = queue.lock().unwrap().pop() else {
                        return;
                    };
                    let problems = std::panic::catch_unwind(|| check(&base, &dir, &case))
                        .unwrap_or_else(|e| {
                            let what = e
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            vec![format!("the case's test panicked: {what}")]
                        });
                    eprintln!(
                        "{id}: {}",
                        if problems.is_empty() { "ok" } else { "FAILED" }
                    );
                    results
                        .lock()
                        .unwrap()
                        .push((id, case.gap.is_some(), problems));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort();
    let mut failures = Vec::new();
    for (id, gap, problems) in &results {
        match (gap, problems.is_empty()) {
            (false, false) => failures.push(format!("{id}:\n  {}", problems.join("\n  "))),
            (true, true) => failures.push(format!("{id}: marked as a gap, but it behaves now")),
            (true, false) => eprintln!("{id}: known gap: {}", problems[0]),
            (false, true) => {}
        }
    }
    eprintln!(
        "corpus: {} cases in {:.0?}",
        results.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The README's table, from the case files.
fn table() -> String {
    let mut out = String::from(
        "| id | category | mutation | exit | the error says |\n|---|---|---|---|---|\n",
    );
    for (id, _, case) in cases() {
        let mutation = match case.also.as_slice() {
            [] => case.mutation.clone(),
            also => format!("{} ({} fails too)", case.mutation, also.join(", ")),
        };
        let says = match &case.gap {
            Some(gap) => format!("{} — **known gap:** {gap}", code(&case.says)),
            None => code(&case.says),
        };
        out.push_str(&format!(
            "| {id} | {} | {} | {} | {says} |\n",
            case.category,
            mutation.replace('|', "\\|"),
            case.exit
        ));
    }
    out
}

fn code(s: &str) -> String {
    format!("`{}`", s.replace('|', "\\|").replace('`', "'"))
}

const BEGIN: &str = "<!-- corpus table: generated by tests/corpus.rs -->\n";
const END: &str = "<!-- end of corpus table -->\n";

#[test]
fn readme_table_is_in_sync() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README");
    let (head, rest) = readme.split_once(BEGIN).expect("the table's start marker");
    let (_, tail) = rest.split_once(END).expect("the table's end marker");
    let want = format!("{head}{BEGIN}{}{END}{tail}", table());
    if std::env::var_os("CORPUS_BLESS").is_some() {
        std::fs::write(&path, want).expect("write README");
        return;
    }
    assert!(
        readme == want,
        "the README's corpus table is out of date: CORPUS_BLESS=1 cargo test --test corpus readme"
    );
    let n = cases().len();
    assert!(n >= 60, "{n} cases");
}
