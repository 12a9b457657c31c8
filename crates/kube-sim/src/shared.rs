//! State shared by the HTTP handlers, the admin endpoint and the simulated controllers.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::auth::Tokens;
use crate::containers::ContainerExit;
use crate::exec::ExecFile;
use crate::faults::{FaultRule, RequestStats};
use crate::store::Store;

#[derive(Debug, Clone)]
pub struct Settings {
    pub ready_delay: Duration,
}

pub struct Shared {
    tokens: Mutex<Tokens>,
    /// The message of every request RBAC refused, in order.
    forbidden: Mutex<Vec<String>>,
    store: Mutex<Store>,
    settings: Mutex<Settings>,
    faults: Mutex<Vec<FaultRule>>,
    stats: Mutex<RequestStats>,
    /// Requests by `"<verb> <resource>"` (see [`crate::faults::RequestInfo::key`]).
    counts: Mutex<BTreeMap<String, u64>>,
    exec_files: Mutex<Vec<ExecFile>>,
    container_exits: Mutex<Vec<ContainerExit>>,
}

/// A poisoned lock only means another request panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(
        token: String,
        release: kube_api_versions::Release,
        settings: Settings,
        faults: Vec<FaultRule>,
    ) -> Shared {
        let mut store = Store::new(release);
        crate::controllers::bootstrap(&mut store);
        Shared {
            tokens: Mutex::new(Tokens::new(token)),
            forbidden: Mutex::new(Vec::new()),
            store: Mutex::new(store),
            settings: Mutex::new(settings),
            faults: Mutex::new(faults),
            stats: Mutex::new(RequestStats::default()),
            counts: Mutex::new(BTreeMap::new()),
            exec_files: Mutex::new(Vec::new()),
            container_exits: Mutex::new(Vec::new()),
        }
    }

    pub fn tokens(&self) -> MutexGuard<'_, Tokens> {
        lock(&self.tokens)
    }

    pub fn forbidden(&self) -> MutexGuard<'_, Vec<String>> {
        lock(&self.forbidden)
    }

    pub fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    pub fn settings(&self) -> MutexGuard<'_, Settings> {
        lock(&self.settings)
    }

    pub fn faults(&self) -> MutexGuard<'_, Vec<FaultRule>> {
        lock(&self.faults)
    }

    pub fn stats(&self) -> MutexGuard<'_, RequestStats> {
        lock(&self.stats)
    }

    pub fn counts(&self) -> MutexGuard<'_, BTreeMap<String, u64>> {
        lock(&self.counts)
    }

    pub fn exec_files(&self) -> MutexGuard<'_, Vec<ExecFile>> {
        lock(&self.exec_files)
    }

    pub fn container_exits(&self) -> MutexGuard<'_, Vec<ContainerExit>> {
        lock(&self.container_exits)
    }
}
