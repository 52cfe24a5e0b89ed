//! The review roles, and which of them each tier can use.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::tier::Tier;

/// A review role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Real bugs, swallowed errors, broken contracts.
    Quality,
    /// Exploitable issues only.
    Security,
    /// Concrete regressions on realistic input.
    Performance,
    /// Docs that contradict the code; stale agent instructions.
    Docs,
    /// How the tasks fit together.
    Integration,
    /// Model-judged acceptance criteria.
    Judge,
    /// Dedupes, re-categorises and filters findings on the full tier.
    Coordinator,
    /// House rules.
    Rules,
}

impl Role {
    /// Every role, in routing-table order.
    pub const ALL: [Role; 8] = [
        Role::Quality,
        Role::Security,
        Role::Performance,
        Role::Docs,
        Role::Integration,
        Role::Judge,
        Role::Coordinator,
        Role::Rules,
    ];

    /// The name used in files, headers and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Quality => "quality",
            Self::Security => "security",
            Self::Performance => "performance",
            Self::Docs => "docs",
            Self::Integration => "integration",
            Self::Judge => "judge",
            Self::Coordinator => "coordinator",
            Self::Rules => "rules",
        }
    }

    /// The roles a tier can put to work (so a routing table must route them).
    pub fn for_tier(tier: Tier) -> &'static [Role] {
        match tier {
            Tier::Trivial => &[Role::Quality, Role::Judge, Role::Rules],
            Tier::Light => &[
                Role::Quality,
                Role::Security,
                Role::Performance,
                Role::Docs,
                Role::Judge,
                Role::Rules,
            ],
            Tier::Full => &Role::ALL,
        }
    }

    /// Order for breaking ties between duplicate findings of equal severity.
    pub fn tie_rank(self) -> u8 {
        match self {
            Self::Security => 0,
            Self::Quality => 1,
            Self::Performance => 2,
            Self::Integration => 3,
            Self::Docs => 4,
            Self::Rules => 5,
            Self::Judge => 6,
            Self::Coordinator => 7,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role `{s}`"))
    }
}

impl FromStr for Tier {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trivial" => Ok(Tier::Trivial),
            "light" => Ok(Tier::Light),
            "full" => Ok(Tier::Full),
            _ => Err(format!("unknown tier `{s}`")),
        }
    }
}
