//! The apply stage: the agent's only way to read and write live state, through `kube::Client`.
//!
//! [`Cluster`] resolves kinds through discovery (so an object of a kind the cluster does not
//! serve fails with a clear error), reads live objects, and writes with server-side apply under
//! the agent's field managers. Every request is counted.

pub mod azure_view;
pub mod client;
mod counting;
mod echoes;
pub mod inventory;
pub mod live_index;
pub mod retry;

pub use azure_view::AzureView;
pub use counting::{CountLayer, RequestCounter, VERBS};
pub use echoes::Echoes;

use crate::object::{ObjectKey, join_api_version};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "{key}: the cluster serves no kind {kind} in {api_version} (is its CustomResourceDefinition installed?)"
    )]
    UnknownKind {
        key: ObjectKey,
        kind: String,
        api_version: String,
    },
    #[error("{key}: {verb} failed: {}", api_message(source))]
    Api {
        key: ObjectKey,
        verb: &'static str,
        source: Box<kube::Error>,
    },
    #[error("discovery of {api_version} failed: {source}")]
    Discovery {
        api_version: String,
        source: Box<kube::Error>,
    },
    #[error("cannot connect to the cluster: {0}")]
    Connect(String),
}

/// What the API server said, in its own words (its message, reason and code), never the client
/// library's Debug dump of the whole Status.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let mut text = status.message.trim().to_string();
            if text.is_empty() {
                text = "the API server refused the request".to_string();
            }
            match (status.reason.as_str(), status.code) {
                ("", 0) => text,
                ("", code) => format!("{text} (HTTP {code})"),
                (reason, 0) => format!("{text} ({reason})"),
                (reason, code) => format!("{text} ({reason}, HTTP {code})"),
            }
        }
        other => other.to_string(),
    }
}

impl ApplyError {
    /// The API server refused the write because the object changed since it was read (409).
    pub fn is_conflict(&self) -> bool {
        matches!(self, ApplyError::Api { source, .. } if matches!(source.as_ref(), kube::Error::Api(s) if s.code == 409))
    }
}

/// A served kind: how to address it.
#[derive(Debug, Clone)]
pub struct Kind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Live state, as the agent reaches it.
pub struct Cluster {
    client: kube::Client,
    counter: RequestCounter,
    kinds: Mutex<HashMap<String, HashMap<String, Kind>>>,
    echoes: Echoes,
}

impl Cluster {
    pub fn new(client: kube::Client, counter: RequestCounter) -> Self {
        Cluster {
            client,
            counter,
            kinds: Mutex::new(HashMap::new()),
            echoes: Echoes::default(),
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The agent's own writes, for the watches to tell their echoes.
    pub fn echoes(&self) -> &Echoes {
        &self.echoes
    }

    pub fn counter(&self) -> &RequestCounter {
        &self.counter
    }

    /// How `group/version` `kind` is served, or `None` when it is not. Discovery of each
    /// group/version is cached; a miss is looked up again (a CRD may have been installed since).
    pub async fn kind(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Option<Kind>, ApplyError> {
        let api_version = join_api_version(group, version);
        if let Some(k) = self
            .kinds
            .lock()
            .expect("kinds lock")
            .get(&api_version)
            .and_then(|m| m.get(kind))
        {
            return Ok(Some(k.clone()));
        }
        let list = if group.is_empty() {
            self.client.list_core_api_resources(version).await
        } else {
            self.client.list_api_group_resources(&api_version).await
        };
        let list = match list {
            Ok(l) => l,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(e) => {
                return Err(ApplyError::Discovery {
                    api_version,
                    source: Box::new(e),
                });
            }
        };
        let mut served = HashMap::new();
        for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
            let resource = ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                api_version: api_version.clone(),
                kind: r.kind.clone(),
                plural: r.name.clone(),
            };
            served.insert(
                r.kind.clone(),
                Kind {
                    resource,
                    namespaced: r.namespaced,
                },
            );
        }
        let found = served.get(kind).cloned();
        self.kinds
            .lock()
            .expect("kinds lock")
            .insert(api_version, served);
        Ok(found)
    }

    /// The served kind of `key`, or the error saying the cluster does not serve it.
    async fn served(&self, key: &ObjectKey) -> Result<Kind, ApplyError> {
        self.kind(&key.group, &key.version, &key.kind)
            .await?
            .ok_or_else(|| ApplyError::UnknownKind {
                key: key.clone(),
                kind: key.kind.to_string(),
                api_version: key.api_version(),
            })
    }

    async fn api_for(&self, key: &ObjectKey) -> Result<Api<DynamicObject>, ApplyError> {
        let kind = self.served(key).await?;
        Ok(match (&key.namespace, kind.namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            (None, true) => Api::default_namespaced_with(self.client.clone(), &kind.resource),
            (_, false) => Api::all_with(self.client.clone(), &kind.resource),
        })
    }

    /// The live object, or `None`.
    pub async fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ApplyError> {
        let api = self.api_for(key).await?;
        let obj = api.get_opt(&key.name).await.map_err(|e| ApplyError::Api {
            key: key.clone(),
            verb: "get",
            source: Box::new(e),
        })?;
        Ok(obj.map(|o| serde_json::to_value(o).expect("objects serialise")))
    }

    /// Every live object of a kind in a namespace (one LIST).
    pub async fn list(
        &self,
        key: &ObjectKey,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, ApplyError> {
        let namespace = (key.namespace.as_deref())
            .unwrap_or_else(|| self.client.default_namespace())
            .to_string();
        list_parsed(self, key, Some(&namespace), label_selector).await
    }

    /// LIST of a kind in every namespace (one request, however many namespaces a fleet has).
    pub async fn list_all(
        &self,
        key: &ObjectKey,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, ApplyError> {
        list_parsed(self, key, None, label_selector).await
    }

    /// Deletes `key` (dependents go by background garbage collection). `Ok(false)`: it was
    /// already gone.
    pub async fn delete(&self, key: &ObjectKey) -> Result<bool, ApplyError> {
        let api = self.api_for(key).await?;
        match api
            .delete(&key.name, &kube::api::DeleteParams::background())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(ApplyError::Api {
                key: key.clone(),
                verb: "delete",
                source: Box::new(e),
            }),
        }
    }

    pub async fn apply(
        &self,
        key: &ObjectKey,
        obj: &Value,
        manager: &str,
    ) -> Result<Value, ApplyError> {
        self.server_side_apply(key, obj, manager, false).await
    }

    /// A server-side apply of `obj` as `manager` with `dryRun=All`: the server validates and
    /// admits it as it would the write, and stores nothing.
    pub async fn dry_run_apply(
        &self,
        key: &ObjectKey,
        obj: &Value,
        manager: &str,
    ) -> Result<Value, ApplyError> {
        let api = self.api_for(key).await?;
        let pp = PatchParams::apply(manager).force().dry_run();
        let out = api
            .patch(&key.name, &pp, &Patch::Apply(obj))
            .await
            .map_err(|e| ApplyError::Api {
                key: key.clone(),
                verb: "dry-run apply",
                source: Box::new(e),
            })?;
        Ok(serde_json::to_value(out).expect("objects serialise"))
    }

    /// Server-side apply of `obj`'s status as `manager`.
    pub async fn apply_status(
        &self,
        key: &ObjectKey,
        obj: &Value,
        manager: &str,
    ) -> Result<Value, ApplyError> {
        self.server_side_apply(key, obj, manager, true).await
    }

    /// A JSON merge patch of `key` as `manager`, for the edits server-side apply cannot make
    /// safely (a finalizer released under a `resourceVersion` precondition: the patch fails with a
    /// conflict rather than drop a finalizer added meanwhile, and never recreates a gone object).
    /// `Ok(None)`: the object is gone.
    pub async fn merge_patch(
        &self,
        key: &ObjectKey,
        body: &Value,
        manager: &str,
    ) -> Result<Option<Value>, ApplyError> {
        let api = self.api_for(key).await?;
        let pp = PatchParams {
            field_manager: Some(manager.to_string()),
            ..Default::default()
        };
        match api.patch(&key.name, &pp, &Patch::Merge(body)).await {
            Ok(o) => {
                let written = serde_json::to_value(o).expect("objects serialise");
                self.echoes.record(&written);
                Ok(Some(written))
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(ApplyError::Api {
                key: key.clone(),
                verb: "patch",
                source: Box::new(e),
            }),
        }
    }

    /// The one server-side apply of the agent: forced (git wins), to the object or its status.
    async fn server_side_apply(
        &self,
        key: &ObjectKey,
        obj: &Value,
        manager: &str,
        status: bool,
    ) -> Result<Value, ApplyError> {
        let api = self.api_for(key).await?;
        let pp = PatchParams::apply(manager).force();
        let patch = Patch::Apply(obj);
        let (out, verb) = if status {
            (
                api.patch_status(&key.name, &pp, &patch).await,
                "status apply",
            )
        } else {
            (api.patch(&key.name, &pp, &patch).await, "apply")
        };
        let out = out.map_err(|e| ApplyError::Api {
            key: key.clone(),
            verb,
            source: Box::new(e),
        })?;
        let written = serde_json::to_value(out).expect("objects serialise");
        self.echoes.record(&written);
        Ok(written)
    }
}

/// Items per page of a LIST (kubectl's page size): a large kind is read in pages, so neither side
/// holds one response of every object at once.
pub const LIST_PAGE_SIZE: u32 = 500;

/// A LIST response read without parsing its items: each stays the server's JSON text.
#[derive(serde::Deserialize)]
struct RawList {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(default)]
    items: Option<Vec<Box<RawValue>>>,
}

#[derive(Default, serde::Deserialize)]
struct RawListMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

/// Parses one raw LIST item; servers may leave `apiVersion` and `kind` out of list items, so they
/// are filled in from the kind listed.
pub fn parse_item(raw: &RawValue, kind: &ApiResource) -> Option<Value> {
    let mut obj: Value = serde_json::from_str(raw.get()).ok()?;
    let map = obj.as_object_mut()?;
    if !map.contains_key("apiVersion") {
        map.insert("apiVersion".into(), Value::String(kind.api_version.clone()));
    }
    if !map.contains_key("kind") {
        map.insert("kind".into(), Value::String(kind.kind.clone()));
    }
    Some(obj)
}

impl Cluster {
    /// Every object of `key`'s kind, in `namespace` or (with `None`) in every namespace, page by
    /// page ([`LIST_PAGE_SIZE`]), each item as the server's JSON text, with the kind as served.
    pub async fn list_raw(
        &self,
        key: &ObjectKey,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<(ApiResource, Vec<Box<RawValue>>), ApplyError> {
        use kube::Resource;
        let kind = self.served(key).await?;
        let path = match namespace {
            Some(ns) if kind.namespaced => DynamicObject::url_path(&kind.resource, Some(ns)),
            _ => DynamicObject::url_path(&kind.resource, None),
        };
        let request = kube::core::Request::new(path);
        let failed = |e: kube::Error| ApplyError::Api {
            key: key.clone(),
            verb: "list",
            source: Box::new(e),
        };
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(LIST_PAGE_SIZE);
            if let Some(sel) = label_selector {
                lp = lp.labels(sel);
            }
            if let Some(t) = token.take() {
                lp = lp.continue_token(&t);
            }
            let req = request
                .list(&lp)
                .map_err(|e| failed(kube::Error::BuildRequest(e)))?;
            let page: RawList = self.client.request(req).await.map_err(failed)?;
            items.extend(page.items.unwrap_or_default());
            match page.metadata.continue_ {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => break,
            }
        }
        Ok((kind.resource, items))
    }
}

/// One LIST of `key`'s kind in `namespace` (`None`: every namespace), the items as JSON.
async fn list_parsed(
    cluster: &Cluster,
    key: &ObjectKey,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Value>, ApplyError> {
    let (kind, raw) = cluster.list_raw(key, namespace, label_selector).await?;
    Ok(raw.iter().filter_map(|r| parse_item(r, &kind)).collect())
}
