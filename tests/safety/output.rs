//! See `tests/safety.rs`: what people see. No secret value in any output (case 4), each failed
//! unit's errors where the user looks (case 7), no host fact in a path message (case 12), and a
//! command line that behaves in a pipe (case 13).
#[allow(unused_imports)]
use super::*;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

/// The identity file every unit renders (base/fleet).
const IDENTITY: &str = "base/fleet/identity.yaml";

/// The binary with `args`, as a user runs it in a pipe: no `NO_COLOR`, the default log level, no
/// user git config.
fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aro-gitops"));
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("ARO_GITOPS_LOG")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null());
    c
}

/// Runs `command(args)` to the end.
fn run(args: &[&str]) -> Output {
    let out = command(args).output().expect("aro-gitops runs");
    Output {
        args: args.iter().map(|a| a.to_string()).collect(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `aro-gitops validate <repo>`.
fn validate(repo: &Path) -> Output {
    run(&["validate", repo.to_str().expect("UTF-8 path")])
}

/// No ANSI escape anywhere in what a command printed into a pipe.
fn assert_no_ansi(out: &Output) {
    assert!(
        !out.stdout.contains('\x1b') && !out.stderr.contains('\x1b'),
        "ANSI escapes off a terminal:\n{}",
        out.all()
    );
}

/// `git log -p` of every ref of `repo` except the user's own `main` history: what the agent wrote.
fn agent_history(repo: &Path) -> String {
    let refs = git::git(repo, &["for-each-ref", "--format=%(refname)"]);
    let mut text = String::new();
    for r in refs.lines().filter(|r| *r != "refs/heads/main") {
        text.push_str(&git::git(
            repo,
            &["log", "-p", r, "--not", "refs/heads/main"],
        ));
    }
    text
}

#[test]
fn case_04_secret_value_never_copied_into_plans_reports_logs_or_history() {
    const SECRET: &str = "Zq8-distinctive-client-secret-4711";
    let (fleet, _) = Fleet::git();
    fleet.replace(
        IDENTITY,
        "  clientID:",
        &format!("  clientSecret: {SECRET}\n  clientID:"),
    );
    fleet.commit("a secret where a Secret reference belongs");
    let said = "/spec/clientSecret: expected an object (a Secret reference), got a string";

    for format in ["markdown", "json", "text"] {
        let out = fleet.plan(&["-o", format]);
        assert_eq!(out.code, 1, "{}", out.all());
        assert!(
            !out.all().contains(SECRET),
            "plan -o {format}:\n{}",
            out.all()
        );
        assert!(
            out.stdout.contains(said),
            "plan -o {format}:\n{}",
            out.all()
        );
    }

    let out = validate(&fleet.repo);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(!out.all().contains(SECRET), "{}", out.all());
    // Named where it is written: file:line:column, then the object.
    let line = fleet
        .read(IDENTITY)
        .lines()
        .position(|l| l.starts_with("  clientSecret:"))
        .expect("the field")
        + 1;
    let block = format!(
        "error: clusters/dev failed (1 error):\n  {IDENTITY}:{line}:3: AzureClusterIdentity/aro-dev/aro-identity: {said}\n"
    );
    assert!(out.stdout.contains(&block), "{block}\nin\n{}", out.all());

    let out = fleet.aro_gitops(&[
        "run",
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "300s",
        "--log",
        "debug",
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(!out.all().contains(SECRET), "run --once:\n{}", out.all());
    assert!(out.stdout.contains(said), "{}", out.all());

    let report = fleet
        .report("reports/_units/clusters_dev.md")
        .expect("the failed unit's report is committed");
    assert!(report.contains(said), "{report}");
    let history = agent_history(&fleet.repo);
    assert!(history.contains(said), "the reports are in the history");
    assert!(
        !history.contains(SECRET),
        "the secret is in the agent's commits"
    );
}

#[test]
fn case_07_errors_where_the_user_looks() {
    let (fleet, _) = Fleet::git();
    let params = "clusters/dev/cluster-params.yaml";
    let lines = fleet.read(params).lines().count();
    fleet.write(
        params,
        &format!("{}broken: [1, 2\nnext: key\n", fleet.read(params)),
    );
    fleet.commit("broken YAML in dev");
    let out = run(&[
        "run",
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "300s",
        "--repo",
        fleet.repo.to_str().unwrap(),
        "--state",
        fleet.state.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert_no_ansi(&out);
    // One block: the unit, then file:line:column and what is wrong.
    let block = "error: clusters/dev failed (1 error):\n";
    let at = format!("  {params}:{}:", lines + 2);
    let start = out
        .stdout
        .find(block)
        .unwrap_or_else(|| panic!("no failure block:\n{}", out.all()));
    let detail = out.stdout[start + block.len()..].lines().next().unwrap();
    assert!(detail.starts_with(&at), "{detail:?} at {at:?}");
    assert!(detail.contains(": invalid YAML: "), "{detail}");
    // In the log too, with its fields.
    assert!(
        out.stderr.contains("unit failed")
            && out.stderr.contains(&format!("{params}:{}:", lines + 2)),
        "{}",
        out.all()
    );
    // The same text in the report.
    let report = fleet
        .report("reports/_units/clusters_dev.md")
        .expect("report");
    let message = detail.trim_start().split_once(": ").unwrap().1;
    assert!(report.contains(message), "{message:?} in\n{report}");

    // Failed units first in the summary: break prod, mend dev.
    fleet.write(
        params,
        &fleet.read(params).replace("broken: [1, 2\nnext: key\n", ""),
    );
    let prod = "clusters/prod/cluster-params.yaml";
    fleet.write(prod, &format!("{}oops: [\n", fleet.read(prod)));
    fleet.commit("broken YAML in prod");
    let out = fleet.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", "300s"]);
    assert_eq!(out.code, 1, "{}", out.all());
    let table: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("UNIT "))
        .collect();
    assert!(
        table
            .get(1)
            .is_some_and(|l| l.starts_with("clusters/prod ") && l.contains(" Failed "))
            && table.get(2).is_some_and(|l| l.starts_with("clusters/dev ")),
        "{}",
        out.all()
    );

    // A duplicate key: no library hint.
    fleet.write(
        "clusters/dev/dup.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
    );
    fleet.add_resource(DEV, "dup.yaml");
    let out = validate(&fleet.repo);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("clusters/dev/dup.yaml:5:3: invalid YAML: the key `name` appears twice"),
        "{}",
        out.all()
    );
    for hint in ["DuplicateKeyPolicy", "Options", "{ ", "Some("] {
        assert!(!out.all().contains(hint), "{hint:?} in {}", out.all());
    }
    assert_no_ansi(&out);

    // A local --repo path that does not exist.
    let missing = fleet.state.join("no-such-repository");
    let out = run(&[
        "plan",
        "--repo",
        missing.to_str().unwrap(),
        "--state",
        fleet.state.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stderr.contains(&format!(
            "repository path {} does not exist",
            missing.display()
        )),
        "{}",
        out.all()
    );
    assert!(!out.all().contains("unsupported URL protocol"));
}

#[test]
fn case_07_a_document_too_large_is_said_in_words() {
    let (fleet, _) = Fleet::git();
    let many = format!("[{}]\n", vec!["1"; 300_000].join(","));
    fleet.write("clusters/dev/huge.yaml", &format!("items: {many}"));
    fleet.add_resource(DEV, "huge.yaml");
    let out = validate(&fleet.repo);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("invalid YAML: the YAML document is too large: more than"),
        "{}",
        out.all()
    );
    assert!(!out.all().contains("Nodes {"), "{}", out.all());
}

#[test]
fn case_12_paths_do_not_leak_host_facts() {
    let (fleet, first) = Fleet::git();
    let outside = "resolves outside the repository";
    let state = fleet.state.to_str().unwrap().to_string();
    let entries = [
        "/etc/hostname",
        "/etc/no-such-file-aro-gitops",
        "../../../../../../../../../../etc/hostname",
        "../../../../../../../../../../etc/no-such-file-aro-gitops",
    ];
    for (i, entry) in entries.iter().enumerate() {
        let kustomization = format!("{DEV}/kustomization.yaml");
        fleet.checkout(&first, &kustomization);
        fleet.add_resource(DEV, entry);
        fleet.commit(&format!("entry {i}"));
        let out = fleet.plan(&["-o", "markdown"]);
        assert_eq!(out.code, 1, "{}", out.all());
        let errors: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.starts_with("| `clusters/dev"))
            .collect();
        assert_eq!(errors.len(), 1, "{entry}: {}", out.all());
        assert!(
            errors[0].contains(outside) && !errors[0].contains("does not exist"),
            "{entry}: {}",
            errors[0]
        );
        assert!(
            !out.stdout
                .lines()
                .any(|l| l.starts_with("| `") && l.contains(&state)),
            "{entry}: a host path in {}",
            out.stdout
        );
    }
    // Files a generator reads: the same answer whether the file exists or not.
    let kustomization = format!("{DEV}/kustomization.yaml");
    let mut said = Vec::new();
    for file in [
        "../../../../../../../../etc/hostname",
        "../../../../../../../../etc/nope-x",
    ] {
        fleet.checkout(&first, &kustomization);
        let text = fleet.read(&kustomization);
        fleet.write(
            &kustomization,
            &format!("{text}configMapGenerator:\n  - name: leak\n    files:\n      - {file}\n"),
        );
        let out = validate(&fleet.repo);
        assert_ne!(out.code, 0, "{}", out.all());
        assert!(!out.all().contains("does not exist") && !out.all().contains("not found"));
        said.push(out.stdout.replace(file, "FILE"));
    }
    assert_eq!(said[0], said[1]);
    assert!(
        said[0].contains("is not in or below the kustomization folder"),
        "{}",
        said[0]
    );
}

#[test]
fn case_13_cli_hygiene() {
    // A closed standard output ends `validate` quietly. Its first unit's error block is larger
    // than a pipe holds (an identity with thousands of unknown fields), so the write meets the
    // closed pipe whatever the timing.
    let (fleet, _) = Fleet::git();
    let fields: String = (0..12_000).map(|i| format!("  f{i:05}: x\n")).collect();
    fleet.replace(
        IDENTITY,
        "  type: WorkloadIdentity\n",
        &format!("  type: WorkloadIdentity\n{fields}"),
    );
    let mut child = command(&["validate", fleet.repo.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aro-gitops runs");
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    reader.read_line(&mut first).expect("one line");
    assert!(first.starts_with("error: clusters/dev failed"), "{first}");
    drop(reader);
    let out = child.wait_with_output().expect("validate ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked")
            && !stderr.contains("Broken pipe")
            && !stderr.contains("error"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(141), "ends as cat does: {stderr}");

    // A repository without units.
    let empty = tempfile::tempdir().expect("tempdir");
    std::fs::write(empty.path().join("README.md"), "nothing here\n").unwrap();
    let out = validate(empty.path());
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(out.stderr.contains("no units found"), "{}", out.all());
    assert!(!out.stdout.contains(": ok"), "{}", out.all());

    // No colours off a terminal, with the default log level.
    let out = run(&[
        "plan",
        "--repo",
        fleet.repo.to_str().unwrap(),
        "--state",
        fleet.state.to_str().unwrap(),
    ]);
    assert!(out.stderr.contains("INFO"), "{}", out.all());
    assert_no_ansi(&out);
}

#[test]
fn case_04_generated_secret_values_never_shown() {
    const VALUE: &str = "Gx7-generated-password-0815";
    let encoded = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(VALUE)
    };
    let (fleet, first) = Fleet::git();
    let kustomization = format!("{DEV}/kustomization.yaml");
    let text = fleet.read(&kustomization);
    fleet.write(
        &kustomization,
        &format!("{text}secretGenerator:\n  - name: db\n    literals:\n      - password={VALUE}\n"),
    );
    let head = fleet.commit("a generated Secret");
    let seen = |out: &Output| {
        let all = out.all();
        assert!(
            !all.contains(VALUE) && !all.contains(&encoded),
            "{:?}: the generated value is shown:\n{all}",
            out.args
        );
    };
    for format in ["markdown", "json", "text"] {
        seen(&fleet.plan_revs(&first, &head, &["-o", format]));
        seen(&fleet.plan(&["-o", format]));
    }
    let out = fleet.aro_gitops(&[
        "run",
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "300s",
        "--log",
        "debug",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    seen(&out);
    seen(&fleet.aro_gitops(&["drift", "-o", "json", "--log", "debug"]));
    let history = agent_history(&fleet.repo);
    assert!(!history.contains(VALUE) && !history.contains(&encoded));
}
