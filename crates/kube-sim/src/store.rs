//! In-memory object store: objects keyed by group/resource/namespace/name, the global
//! resourceVersion counter and the retained event window that watches replay.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::resources::{Registry, ResourceType};

/// Objects are stored once per group/resource, whatever version wrote them (the group is
/// the storage group, see `ResourceType::storage_group`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    pub group: String,
    pub plural: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(rt: &ResourceType, namespace: &str, name: &str) -> ObjKey {
        ObjKey {
            group: rt.storage_group().to_string(),
            plural: rt.plural.clone(),
            namespace: if rt.namespaced {
                namespace.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub key: ObjKey,
    pub kind: EventType,
    pub object: Value,
    /// The state before a modification (selector transitions turn into ADDED/DELETED).
    pub previous: Option<Value>,
}

/// How many past events a watch can resume from before it gets `410 Gone`.
pub const EVENT_WINDOW: usize = 10_000;

pub struct Store {
    pub registry: Registry,
    pub objects: BTreeMap<ObjKey, Value>,
    rv: u64,
    events: VecDeque<Arc<Event>>,
    pub events_tx: broadcast::Sender<Arc<Event>>,
    next_ip: u32,
}

impl Store {
    pub fn new(release: kube_api_versions::Release) -> Store {
        let (events_tx, _) = broadcast::channel(4096);
        Store {
            registry: Registry::new(release),
            objects: BTreeMap::new(),
            rv: 1,
            events: VecDeque::new(),
            events_tx,
            next_ip: 10,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    /// Oldest resourceVersion a watch may start from without `410 Gone`.
    pub fn oldest_resumable_rv(&self) -> u64 {
        self.events.front().map(|e| e.rv - 1).unwrap_or(self.rv)
    }

    pub fn events_since(&self, rv: u64) -> impl Iterator<Item = &Arc<Event>> {
        self.events.iter().filter(move |e| e.rv > rv)
    }

    /// Stores (or removes, for `Deleted`) the object under a fresh resourceVersion and
    /// publishes the event. Returns the object as stored.
    pub fn commit(&mut self, key: ObjKey, mut obj: Value, kind: EventType) -> Value {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let previous = match kind {
            EventType::Deleted => self.objects.remove(&key),
            _ => self.objects.insert(key.clone(), obj.clone()),
        };
        let ev = Arc::new(Event {
            rv: self.rv,
            key,
            kind,
            object: obj.clone(),
            previous: previous.filter(|_| kind == EventType::Modified),
        });
        if self.events.len() >= EVENT_WINDOW {
            self.events.pop_front();
        }
        self.events.push_back(ev.clone());
        // No receivers is normal (nobody watching).
        let _ = self.events_tx.send(ev);
        obj
    }

    /// Forgets all retained events (lets tests provoke `410 Gone`).
    pub fn compact(&mut self) {
        self.events.clear();
    }

    pub fn allocate_cluster_ip(&mut self) -> String {
        let used: std::collections::BTreeSet<String> = self
            .objects
            .iter()
            .filter(|(k, _)| k.group.is_empty() && k.plural == "services")
            .filter_map(|(_, v)| v["spec"]["clusterIP"].as_str().map(str::to_string))
            .collect();
        loop {
            self.next_ip = self.next_ip.wrapping_add(1);
            let n = self.next_ip % (256 * 255);
            let ip = format!("10.96.{}.{}", n / 255, n % 255 + 1);
            if !used.contains(&ip) {
                return ip;
            }
        }
    }

    pub fn namespace(&self, name: &str) -> Option<&Value> {
        self.objects.get(&ObjKey {
            group: String::new(),
            plural: "namespaces".into(),
            namespace: String::new(),
            name: name.into(),
        })
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new(kube_api_versions::CURRENT)
    }
}

/// RFC 3339 UTC timestamp with second precision, as Kubernetes serialises `metav1.Time`.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}
