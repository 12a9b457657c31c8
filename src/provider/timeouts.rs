//! The `timeouts` block of `kudo_instance` ([`tfplugin::timeouts`]) with this
//! provider's defaults.

use std::time::Duration;

use tfplugin::{Attr, Diagnostic};

pub use tfplugin::timeouts::{Operation, Timeouts, invalid, parse_duration};

pub const DEFAULT_CREATE: Duration = Duration::from_secs(20 * 60);
pub const DEFAULT_UPDATE: Duration = Duration::from_secs(20 * 60);
pub const DEFAULT_DELETE: Duration = Duration::from_secs(10 * 60);

/// The duration for `operation` from a resource's `timeouts` block, else the default.
pub fn timeout(timeouts: &Attr<Timeouts>, operation: Operation) -> Result<Duration, Diagnostic> {
    let default = match operation {
        Operation::Create => DEFAULT_CREATE,
        Operation::Update => DEFAULT_UPDATE,
        Operation::Delete => DEFAULT_DELETE,
    };
    tfplugin::timeouts::timeout(timeouts, operation, default)
}

/// The block's schema.
pub fn block() -> tfplugin::NestedBlock {
    Timeouts::block(
        "How long each operation may take, as a duration such as `30s`, `10m` or `1h`.",
        [
            "Time allowed for the create (the `deploy` plan and health checks). Default `20m`.",
            "Time allowed for an update (the plan the change triggers). Default `20m`.",
            "Time allowed for the destroy (`cleanup` plan and deletion of every object). Default `10m`.",
        ],
    )
}
