//! What a control plane served on a socket was asked to do, in the terms RBAC grants it: the
//! (API group, resource, verb) of every resource request, subresources as `resource/subresource`
//! (`arocontrolplanes/status`). The least-privilege ClusterRole of `deploy/base` is checked
//! against what a full agent run used. In-process clients (the Azure simulator beside a served
//! control plane) are not recorded: they are not the agent.
//!
//! A write that creates its object is recorded as `create` too, as kube-apiserver authorizes it:
//! a server-side apply of a missing object needs `create` beside `patch` (see [`creation_verb`]).
//!
//! Discovery and other non-resource paths (`/api`, `/apis`, `/openapi/v3`, `/version`) are not
//! recorded: every authenticated identity may read them (`system:discovery`).
//!
//! The set is kept in memory ([`ServerHandle::served`](super::ServerHandle::served)) and, when
//! the control plane has a state directory, rewritten to [`SERVED_FILE`] there whenever it grows,
//! so a test can read what a `control-plane serve` process served while it runs.

use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file in the state directory listing what was served (a JSON array of [`Access`]).
pub const SERVED_FILE: &str = "served-requests.json";

/// One kind of request, as an RBAC rule grants it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Access {
    /// `""` for the core group.
    pub group: String,
    /// The plural, with `/subresource` when one was addressed.
    pub resource: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
}

/// The RBAC verb of a resource request: `named` when the path names one object, `watch` for
/// `?watch=true`. `None` for a method RBAC has no verb for (OPTIONS).
pub fn rbac_verb(method: &Method, named: bool, watch: bool) -> Option<&'static str> {
    Some(match *method {
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => return None,
    })
}

/// The further verb kube-apiserver authorizes a write as once it knows the write creates its
/// object: `create`, beside the request's own `patch` or `update`. A server-side apply (PATCH
/// `application/apply-patch+yaml`) of a missing object creates it, and kube-apiserver checks
/// `create` at that point; a PUT that creates (a kind that allows create-on-update) is checked
/// the same way. The other patch types of a missing object answer 404 and create nothing, and a
/// subresource is never created by a write to it. Both servers answer 201 Created exactly when
/// the write created the object (dry-run or not), so the answer's status decides.
pub fn creation_verb(method: &Method, status: StatusCode) -> Option<&'static str> {
    let creates_on_write = matches!(*method, Method::PATCH | Method::PUT);
    (creates_on_write && status == StatusCode::CREATED).then_some("create")
}

/// The requests served so far (cheap to share: one per served socket).
#[derive(Debug, Default)]
pub struct Served {
    accesses: Mutex<BTreeSet<Access>>,
    file: Option<PathBuf>,
}

/// One resource request, as the router parsed it.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    pub group: &'a str,
    pub plural: &'a str,
    pub subresource: Option<&'a str>,
    pub method: &'a Method,
    pub named: bool,
    pub watch: bool,
}

impl Served {
    /// Records in memory and, when `file` is given, in that file too.
    pub fn new(file: Option<PathBuf>) -> Served {
        Served {
            accesses: Mutex::default(),
            file,
        }
    }

    /// Records `req` as its method's verb asks, when it arrives (a refused request was asked too).
    pub(crate) fn record(&self, req: Request<'_>) {
        if let Some(verb) = rbac_verb(req.method, req.named, req.watch) {
            self.insert(req, verb);
        }
    }

    /// Records what `req` was also authorized as once answered `status` (see [`creation_verb`]).
    pub(crate) fn record_answer(&self, req: Request<'_>, status: StatusCode) {
        if let Some(verb) = creation_verb(req.method, status) {
            self.insert(req, verb);
        }
    }

    fn insert(&self, req: Request<'_>, verb: &str) {
        let resource = match req.subresource {
            Some(sub) => format!("{}/{sub}", req.plural),
            None => req.plural.to_string(),
        };
        let access = Access {
            group: req.group.to_string(),
            resource,
            verb: verb.to_string(),
        };
        let mut set = self.accesses.lock().expect("served lock");
        if !set.insert(access) {
            return;
        }
        if let Some(file) = &self.file
            && let Err(e) = write(file, &set)
        {
            tracing::warn!(file = %file.display(), error = %e, "the served requests could not be written");
        }
    }

    /// Everything served so far, sorted.
    pub fn accesses(&self) -> Vec<Access> {
        let set = self.accesses.lock().expect("served lock");
        set.iter().cloned().collect()
    }
}

/// Replaces `file` with `set` (written aside, then renamed: a reader never sees half of it).
fn write(file: &Path, set: &BTreeSet<Access>) -> std::io::Result<()> {
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(set)?)?;
    std::fs::rename(&tmp, file)
}

/// Reads a [`SERVED_FILE`].
pub fn read(file: &Path) -> std::io::Result<Vec<Access>> {
    let bytes = std::fs::read(file)?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_named_as_rbac_names_them() {
        let v = |m: Method, named, watch| rbac_verb(&m, named, watch);
        assert_eq!(v(Method::GET, true, false), Some("get"));
        assert_eq!(v(Method::GET, false, false), Some("list"));
        assert_eq!(v(Method::GET, false, true), Some("watch"));
        assert_eq!(v(Method::HEAD, true, false), Some("get"));
        assert_eq!(v(Method::POST, false, false), Some("create"));
        assert_eq!(v(Method::PUT, true, false), Some("update"));
        assert_eq!(v(Method::PATCH, true, false), Some("patch"));
        assert_eq!(v(Method::DELETE, true, false), Some("delete"));
        assert_eq!(v(Method::DELETE, false, false), Some("deletecollection"));
        assert_eq!(v(Method::OPTIONS, true, false), None);
    }

    #[test]
    fn a_write_that_creates_its_object_is_also_create() {
        let v = |m: Method, status: StatusCode| creation_verb(&m, status);
        // Server-side apply (or a PUT) of a missing object: kube-apiserver checks `create`.
        assert_eq!(v(Method::PATCH, StatusCode::CREATED), Some("create"));
        assert_eq!(v(Method::PUT, StatusCode::CREATED), Some("create"));
        // Of an existing object: `patch` or `update` only.
        assert_eq!(v(Method::PATCH, StatusCode::OK), None);
        assert_eq!(v(Method::PUT, StatusCode::OK), None);
        // A merge patch of a missing object creates nothing.
        assert_eq!(v(Method::PATCH, StatusCode::NOT_FOUND), None);
        // POST is `create` by its method already; reads and deletes never create.
        assert_eq!(v(Method::POST, StatusCode::CREATED), None);
        assert_eq!(v(Method::GET, StatusCode::OK), None);
        assert_eq!(v(Method::DELETE, StatusCode::OK), None);
    }

    #[test]
    fn subresources_are_recorded_as_resource_slash_subresource_and_written_once_grown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(SERVED_FILE);
        let served = Served::new(Some(file.clone()));
        let req = |plural, subresource, method| Request {
            group: "controlplane.cluster.x-k8s.io",
            plural,
            subresource,
            method,
            named: true,
            watch: false,
        };
        served.record(req("arocontrolplanes", Some("status"), &Method::PATCH));
        served.record(req("arocontrolplanes", Some("status"), &Method::PATCH));
        served.record(req("arocontrolplanes", None, &Method::GET));
        let want = vec![
            Access {
                group: "controlplane.cluster.x-k8s.io".into(),
                resource: "arocontrolplanes".into(),
                verb: "get".into(),
            },
            Access {
                group: "controlplane.cluster.x-k8s.io".into(),
                resource: "arocontrolplanes/status".into(),
                verb: "patch".into(),
            },
        ];
        assert_eq!(served.accesses(), want);
        assert_eq!(read(&file).unwrap(), want);
    }

    #[tokio::test]
    async fn the_socket_records_its_clients_and_in_process_clients_are_not_recorded() {
        use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
        let dir = tempfile::tempdir().unwrap();
        let mut config = crate::controlplane::Config::new(dir.path());
        config.preload_crds = false;
        let cp = crate::controlplane::ControlPlane::open(config).unwrap();
        let handle = cp
            .spawn("127.0.0.1:0".parse().unwrap(), false)
            .await
            .unwrap();
        let in_process: kube::Api<ConfigMap> = kube::Api::all(cp.client());
        in_process.list(&Default::default()).await.unwrap();
        assert!(handle.served().is_empty(), "{:?}", handle.served());
        let socket = handle.client().unwrap();
        kube::Api::<ConfigMap>::all(socket.clone())
            .list(&Default::default())
            .await
            .unwrap();
        kube::Api::<Namespace>::all(socket)
            .get("default")
            .await
            .unwrap();
        let got: Vec<(String, String, String)> = handle
            .served()
            .into_iter()
            .map(|a| (a.group, a.resource, a.verb))
            .collect();
        let t = |r: &str, v: &str| (String::new(), r.to_string(), v.to_string());
        assert_eq!(got, vec![t("configmaps", "list"), t("namespaces", "get")]);
        assert_eq!(read(&dir.path().join(SERVED_FILE)).unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_server_side_apply_that_creates_is_recorded_as_create_too() {
        use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
        use kube::api::{Patch, PatchParams};
        let dir = tempfile::tempdir().unwrap();
        let mut config = crate::controlplane::Config::new(dir.path());
        config.preload_crds = false;
        let cp = crate::controlplane::ControlPlane::open(config).unwrap();
        let handle = cp
            .spawn("127.0.0.1:0".parse().unwrap(), false)
            .await
            .unwrap();
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(handle.client().unwrap(), "default");
        let verbs = || -> Vec<String> {
            handle
                .served()
                .into_iter()
                .filter(|a| a.resource == "configmaps")
                .map(|a| a.verb)
                .collect()
        };
        // A merge patch of a missing object answers 404 and creates nothing.
        let merge = api
            .patch(
                "inv",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({})),
            )
            .await;
        assert!(
            matches!(merge, Err(kube::Error::Api(ref s)) if s.code == 404),
            "{merge:?}"
        );
        assert_eq!(verbs(), ["patch"]);
        // An apply of a missing object creates it: patch and create.
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "inv", "namespace": "default"}, "data": {"a": "1"}});
        let pp = PatchParams::apply("t").force();
        api.patch("inv", &pp, &Patch::Apply(&cm)).await.unwrap();
        assert_eq!(verbs(), ["create", "patch"]);
        // An apply of an object that exists is a patch only.
        let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "default", "labels": {"a": "1"}}});
        kube::Api::<Namespace>::all(handle.client().unwrap())
            .patch("default", &pp, &Patch::Apply(&ns))
            .await
            .unwrap();
        let namespaces: Vec<String> = handle
            .served()
            .into_iter()
            .filter(|a| a.resource == "namespaces")
            .map(|a| a.verb)
            .collect();
        assert_eq!(namespaces, ["patch"]);
    }
}
