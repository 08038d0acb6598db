//! Live state as previews and drift read it: one LIST per kind across namespaces (paged), every
//! item kept as the server's JSON text, which is a fraction of a parsed tree's size, and parsed
//! only when it is compared. A 1,000-cluster fleet's live objects then cost tens of megabytes
//! instead of the better part of a gigabyte.

use super::inventory::Identity;
use super::{ApplyError, Cluster, parse_item};
use crate::object::{ObjectKey, Sym};
use kube::api::ApiResource;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::{BTreeMap, HashMap};

/// The identity fields of a list item, read without building the rest.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    metadata: HeadMeta<'a>,
}

#[derive(serde::Deserialize)]
struct HeadMeta<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<std::borrow::Cow<'a, str>>,
}

/// Live objects of the kinds listed so far, by identity.
#[derive(Default)]
pub struct LiveIndex {
    /// `(group, kind)` → how it was served (`None`: the cluster does not serve it).
    kinds: BTreeMap<(Sym, Sym), Option<ApiResource>>,
    /// Identity → (index into `served`, the item's JSON text).
    objects: HashMap<Identity, (usize, Box<RawValue>)>,
    served: Vec<ApiResource>,
    /// `(group, kind)` → why its LIST failed: nothing can be said of its objects.
    failed: BTreeMap<(Sym, Sym), String>,
}

impl LiveIndex {
    /// Whether `key`'s kind has been listed (served or not), or its LIST has failed.
    pub fn has_kind(&self, key: &ObjectKey) -> bool {
        let gk = (key.group.clone(), key.kind.clone());
        self.kinds.contains_key(&gk) || self.failed.contains_key(&gk)
    }

    /// Why the LIST of `key`'s kind failed, when it did.
    pub fn failure(&self, key: &ObjectKey) -> Option<&str> {
        self.failed
            .get(&(key.group.clone(), key.kind.clone()))
            .map(String::as_str)
    }

    /// LISTs, once each, the kinds `keys` name that are not listed yet. Kinds the cluster does not
    /// serve hold nothing; other failures are remembered ([`LiveIndex::failure`]) and returned.
    pub async fn read(
        &mut self,
        cluster: &Cluster,
        keys: impl IntoIterator<Item = ObjectKey>,
    ) -> Vec<ApplyError> {
        let mut wanted: BTreeMap<(Sym, Sym), ObjectKey> = BTreeMap::new();
        for k in keys {
            let gk = (k.group.clone(), k.kind.clone());
            if !self.kinds.contains_key(&gk) && !self.failed.contains_key(&gk) {
                wanted.entry(gk).or_insert(k);
            }
        }
        let mut errors = Vec::new();
        for (gk, key) in wanted {
            match cluster.list_raw(&key, None, None).await {
                Ok((kind, items)) => {
                    self.insert(&key, kind.clone(), items);
                    self.kinds.insert(gk, Some(kind));
                }
                Err(ApplyError::UnknownKind { .. }) => {
                    self.kinds.insert(gk, None);
                }
                Err(e) => {
                    self.failed.insert(gk, e.to_string());
                    errors.push(e);
                }
            }
        }
        errors
    }

    fn insert(&mut self, key: &ObjectKey, kind: ApiResource, items: Vec<Box<RawValue>>) {
        let at = self.served.len();
        self.served.push(kind);
        for raw in items {
            let Ok(head) = serde_json::from_str::<Head>(raw.get()) else {
                continue;
            };
            let id = Identity {
                group: key.group.clone(),
                kind: key.kind.clone(),
                namespace: head.metadata.namespace.map(|n| Sym::new(&n)),
                name: head.metadata.name.into_owned(),
            };
            self.objects.insert(id, (at, raw));
        }
    }

    /// The live object, parsed now (each call parses again: callers keep what they need).
    pub fn get(&self, id: &Identity) -> Option<Value> {
        let (at, raw) = self.objects.get(id)?;
        parse_item(raw, &self.served[*at])
    }

    pub fn contains(&self, id: &Identity) -> bool {
        self.objects.contains_key(id)
    }

    /// The live objects of `group`/`kind` in `namespace`, parsed.
    pub fn select<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
    ) -> impl Iterator<Item = Value> + 'a {
        self.objects.iter().filter_map(move |(id, (at, raw))| {
            (id.group == group && id.kind == kind && id.namespace.as_deref() == Some(namespace))
                .then(|| parse_item(raw, &self.served[*at]))
                .flatten()
        })
    }

    /// The identities of every object held.
    pub fn identities(&self) -> impl Iterator<Item = &Identity> {
        self.objects.keys()
    }

    /// How many objects are held.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(group: &str, kind: &str) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: "v1".into(),
            api_version: if group.is_empty() {
                "v1".into()
            } else {
                format!("{group}/v1")
            },
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        }
    }

    fn key(group: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: ns.map(Into::into),
            name: name.into(),
        }
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn items_are_found_by_identity_and_get_their_kind_filled_in() {
        let mut live = LiveIndex::default();
        let k = key("", "ConfigMap", Some("a"), "x");
        live.insert(
            &k,
            resource("", "ConfigMap"),
            vec![
                raw(r#"{"metadata":{"name":"x","namespace":"a"},"data":{"k":"v"}}"#),
                raw(r#"{"metadata":{"name":"y","namespace":"b"}}"#),
                raw(r#"{"not an object": true}"#),
            ],
        );
        assert_eq!(live.len(), 2);
        let x = live.get(&Identity::from(&k)).unwrap();
        assert_eq!(x["apiVersion"], "v1");
        assert_eq!(x["kind"], "ConfigMap");
        assert_eq!(x["data"]["k"], "v");
        assert!(
            live.get(&Identity::from(&key("", "ConfigMap", Some("b"), "x")))
                .is_none()
        );
        let in_b: Vec<Value> = live.select("", "ConfigMap", "b").collect();
        assert_eq!(in_b.len(), 1);
        assert_eq!(in_b[0]["metadata"]["name"], "y");
    }

    #[test]
    fn an_item_keeps_the_api_version_it_was_served_with() {
        let mut live = LiveIndex::default();
        let k = key("example.com", "Thing", None, "t");
        live.insert(
            &k,
            resource("example.com", "Thing"),
            vec![raw(
                r#"{"apiVersion":"example.com/v2","kind":"Thing","metadata":{"name":"t"}}"#,
            )],
        );
        assert_eq!(
            live.get(&Identity::from(&k)).unwrap()["apiVersion"],
            "example.com/v2"
        );
    }
}
