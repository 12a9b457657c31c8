//! Medians and ranges of repeated measurements.

use std::fmt;
use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub struct Sample(Vec<Duration>);

impl Sample {
    pub fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `i`-th measurement, in the order they were taken.
    pub fn nth(&self, i: usize) -> Duration {
        self.0.get(i).copied().unwrap_or_default()
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut v = self.0.clone();
        v.sort();
        v
    }

    pub fn median(&self) -> Duration {
        let v = self.sorted();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }

    pub fn min(&self) -> Duration {
        self.sorted().first().copied().unwrap_or_default()
    }

    pub fn max(&self) -> Duration {
        self.sorted().last().copied().unwrap_or_default()
    }
}

/// Milliseconds with one decimal, the unit of every table here.
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (min {}, max {}, {} runs)",
            ms(self.median()),
            ms(self.min()),
            ms(self.max()),
            self.0.len()
        )
    }
}
