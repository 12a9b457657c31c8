/// Where in a plan we are; carried into logs, errors and object annotations.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub plan: String,
    pub phase: String,
    pub step: String,
}
