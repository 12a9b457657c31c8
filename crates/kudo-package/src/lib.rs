//! KUDO operator packages: the model, loading from a folder / `.tgz` / URL / repository
//! index, parameter handling, `verify`, extensions (KEP-9/KEP-12), and the shapes of
//! KUDO's Operator/OperatorVersion objects.
//!
//! The public contract is described in `docs/design/interfaces.md`. Start with
//! [`load`] (any source) or [`Package::load_dir`] (a folder, no extension resolution).

pub mod crd;
mod error;
pub mod extend;
mod fetch;
mod fields;
mod load;
mod model;
mod params;
mod parse;
mod repo;
mod source;
mod tgz;
pub mod verify;
mod versions;

pub use error::{PackageError, ParamError};
pub use fetch::http_get;
pub use load::{Files, MAX_FILES, MAX_TOTAL_BYTES};
pub use model::*;
pub use params::{check_default, check_value, parse_bool};
pub use repo::{Index, IndexEntry, index_dir, parse_index, sort_entries, write_index};
pub use source::{
    LoadContext, Repository, RepositoryProblem, Resolved, SUPPORTED_LOCATIONS, fetch_index, load,
    load_dependency, load_entry, load_unverified, parse_reference, repository_index,
    repository_problems, repository_url_problem, resolve,
};
pub use tgz::{create_tgz, package_from_tgz, read_tgz, sha256_hex, tgz_file_name};
pub use verify::{Finding, Severity, verify, verify_extended, warnings};
pub use versions::parse_lenient as parse_version;
