//! Interned strings for the parts of an object's identity that repeat across a fleet: API groups,
//! versions, kinds and namespaces. A thousand clusters name a few dozen kinds and a thousand
//! namespaces, yet the agent holds hundreds of thousands of keys (prepared objects, claims,
//! outcomes, live identities): each part is one shared allocation, and a key's copy costs no
//! allocation for them.
//!
//! The table only grows. It holds what the fleet and the cluster name (kinds served, namespaces
//! used), never object names, so it stays as small as the set of kinds and namespaces seen.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, LazyLock, RwLock};

static TABLE: LazyLock<RwLock<HashSet<Arc<str>>>> = LazyLock::new(Default::default);

/// An interned string: compares, orders and hashes as its text does.
#[derive(Clone)]
pub struct Sym(Arc<str>);

impl Sym {
    /// The interned copy of `s`.
    pub fn new(s: &str) -> Sym {
        if let Some(found) = TABLE.read().expect("sym table").get(s) {
            return Sym(found.clone());
        }
        let mut table = TABLE.write().expect("sym table");
        if let Some(found) = table.get(s) {
            return Sym(found.clone());
        }
        let new: Arc<str> = Arc::from(s);
        table.insert(new.clone());
        Sym(new)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Sym {
    fn default() -> Sym {
        Sym::new("")
    }
}

impl Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Sym {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Sym {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq for Sym {
    fn eq(&self, other: &Sym) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl Eq for Sym {}

impl Hash for Sym {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialOrd for Sym {
    fn partial_cmp(&self, other: &Sym) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Sym {
    fn cmp(&self, other: &Sym) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for Sym {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Sym {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Sym {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Sym> for str {
    fn eq(&self, other: &Sym) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Sym> for &str {
    fn eq(&self, other: &Sym) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Sym> for String {
    fn eq(&self, other: &Sym) -> bool {
        self == other.as_str()
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Sym {
        Sym::new(s)
    }
}

impl From<&String> for Sym {
    fn from(s: &String) -> Sym {
        Sym::new(s)
    }
}

impl From<String> for Sym {
    fn from(s: String) -> Sym {
        Sym::new(&s)
    }
}

impl From<Sym> for String {
    fn from(s: Sym) -> String {
        s.as_str().to_string()
    }
}

impl From<&Sym> for String {
    fn from(s: &Sym) -> String {
        s.as_str().to_string()
    }
}

impl Serialize for Sym {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Sym {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sym, D::Error> {
        let s: std::borrow::Cow<'de, str> = Deserialize::deserialize(d)?;
        Ok(Sym::new(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_allocation_per_text_and_compares_as_text() {
        let a = Sym::new("resources.azure.com");
        let b = Sym::from(String::from("resources.azure.com"));
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, b);
        assert_eq!(a, "resources.azure.com");
        assert_eq!("resources.azure.com", a);
        assert!(Sym::new("a") < Sym::new("b"));
        assert_eq!(
            format!("{a} {a:?}"),
            "resources.azure.com \"resources.azure.com\""
        );
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Sym>(&json).unwrap(), a);
    }
}
