"""Rust source templates: a module header and the blocks a synthetic file is assembled from."""

from __future__ import annotations

RS_HEADER = """//! @Domain@ @purpose@.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum @Ent@Error {
    #[error("@ent@ {0} not found")]
    NotFound(String),
    #[error("invalid @ent@: {0}")]
    Invalid(String),
    #[error("upstream timed out after {0:?}")]
    Timeout(Duration),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct @Ent@ {
    pub id: String,
    pub @text@: String,
    pub @num@: i64,
    pub @group@: String,
    pub status: Status,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Active,
    Failed,
    Done,
}
"""

RS_BLOCKS = [
    """
impl @Ent@ {
    /// Checks the invariants the API relies on.
    pub fn validate(&self) -> Result<(), @Ent@Error> {
        if self.@text@.trim().is_empty() {
            return Err(@Ent@Error::Invalid("@text@ is required".into()));
        }
        if self.@num@ < 0 {
            return Err(@Ent@Error::Invalid(format!("@num@ must be >= 0, got {}", self.@num@)));
        }
        Ok(())
    }
}
""",
    """
/// Sums `@num@` per `@group@`, skipping failed records.
pub fn totals_by_@group@(items: &[@Ent@]) -> BTreeMap<String, i64> {
    let mut totals = BTreeMap::new();
    for item in items.iter().filter(|i| i.status != Status::Failed) {
        *totals.entry(item.@group@.clone()).or_insert(0) += item.@num@;
    }
    totals
}
""",
    """
pub struct Cache {
    ttl: Duration,
    items: BTreeMap<String, (Instant, @Ent@)>,
}

impl Cache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, items: BTreeMap::new() }
    }

    pub fn get(&mut self, key: &str) -> Option<&@Ent@> {
        // @cjk_comment@
        let expired = match self.items.get(key) {
            Some((at, _)) => at.elapsed() > self.ttl,
            None => return None,
        };
        if expired {
            self.items.remove(key);
            return None;
        }
        self.items.get(key).map(|(_, v)| v)
    }

    pub fn put(&mut self, key: String, value: @Ent@) {
        self.items.insert(key, (Instant::now(), value));
    }
}
""",
    """
pub fn @verb@_with_retry<F, T>(mut op: F, attempts: u32) -> Result<T, @Ent@Error>
where
    F: FnMut() -> Result<T, @Ent@Error>,
{
    let mut delay = Duration::from_millis(200);
    let mut last = None;
    for _ in 0..attempts {
        match op() {
            Ok(v) => return Ok(v),
            Err(e @ @Ent@Error::Timeout(_)) => {
                last = Some(e);
                std::thread::sleep(delay);
                delay *= 2;
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(@Ent@Error::Timeout(delay)))
}
""",
]
