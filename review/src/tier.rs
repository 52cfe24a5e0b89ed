//! The risk tier: tasks × acceptance criteria, lifted by sensitive paths.

use std::fmt;

use gate_specs::{InputGlobs, Policy};

use serde::{Deserialize, Serialize};

/// The risk tier.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// One generalist reviewer, cheap model.
    Trivial,
    /// Three specialists, standard model.
    Light,
    /// All specialists on the strong model, an integration reviewer, a model coordinator.
    Full,
}

impl Tier {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trivial => "trivial",
            Self::Light => "light",
            Self::Full => "full",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tier and the one-line reason printed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierDecision {
    /// The tier.
    pub tier: Tier,
    /// e.g. "5 tasks × 25 criteria" or "… ; lifted to full: src/auth/login.rs matches **/auth/**".
    pub reason: String,
}

/// Both counts must land in the same tier: trivial only if both are within
/// trivial's bounds, full only if both exceed light's, light otherwise.
pub fn by_counts(tasks: usize, criteria: usize, policy: &Policy) -> Tier {
    let (t, c) = (tasks as u64, criteria as u64);
    if t <= u64::from(policy.trivial_max_tasks) && c <= u64::from(policy.trivial_max_criteria) {
        Tier::Trivial
    } else if t > u64::from(policy.light_max_tasks) && c > u64::from(policy.light_max_criteria) {
        Tier::Full
    } else {
        Tier::Light
    }
}

/// The tier of a run over `changed` files; `sensitive` are the compiled
/// `[policy] sensitive_paths`.
pub fn decide(
    tasks: usize,
    criteria: usize,
    policy: &Policy,
    sensitive: &InputGlobs,
    changed: &[String],
) -> TierDecision {
    let tier = by_counts(tasks, criteria, policy);
    let mut reason = format!(
        "{tasks} {} × {criteria} {}",
        plural(tasks, "task", "tasks"),
        plural(criteria, "criterion", "criteria")
    );
    if let Some(file) = changed.iter().find(|f| sensitive.is_match(f)) {
        if tier != Tier::Full {
            let glob = sensitive
                .patterns()
                .iter()
                .find(|p| InputGlobs::new(&[p.as_str()]).is_ok_and(|g| g.is_match(file)))
                .map_or("a sensitive path", String::as_str);
            reason = format!("{reason}; lifted to full: {file} matches {glob}");
        }
        return TierDecision {
            tier: Tier::Full,
            reason,
        };
    }
    TierDecision { tier, reason }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_one_tier() {
        let p = Policy::default();
        // Worked examples, and the edges around each bound.
        let cases = [
            (0, 0, Tier::Trivial),
            (1, 5, Tier::Trivial),
            (1, 6, Tier::Light),
            (2, 5, Tier::Light),
            (4, 20, Tier::Light),
            (2, 40, Tier::Light),
            (10, 12, Tier::Light),
            (5, 20, Tier::Light),
            (4, 21, Tier::Light),
            (5, 21, Tier::Full),
            (12, 80, Tier::Full),
        ];
        for (tasks, criteria, want) in cases {
            assert_eq!(by_counts(tasks, criteria, &p), want, "{tasks} × {criteria}");
        }
    }

    #[test]
    fn bounds_come_from_policy() {
        let p = Policy {
            trivial_max_tasks: 2,
            trivial_max_criteria: 10,
            light_max_tasks: 3,
            light_max_criteria: 12,
            ..Policy::default()
        };
        assert_eq!(by_counts(2, 10, &p), Tier::Trivial);
        assert_eq!(by_counts(4, 13, &p), Tier::Full);
        assert_eq!(by_counts(4, 12, &p), Tier::Light);
    }

    #[test]
    fn sensitive_paths_lift_to_full() {
        let p = Policy::default();
        let globs = InputGlobs::new(&p.sensitive_paths).unwrap();
        let changed = vec!["src/cart.rs".to_owned(), "src/auth/login.rs".to_owned()];
        let d = decide(1, 2, &p, &globs, &changed);
        assert_eq!(d.tier, Tier::Full);
        assert_eq!(
            d.reason,
            "1 task × 2 criteria; lifted to full: src/auth/login.rs matches **/auth/**"
        );
        let d = decide(1, 2, &p, &globs, &["src/cart.rs".to_owned()]);
        assert_eq!(d.tier, Tier::Trivial);
        assert_eq!(d.reason, "1 task × 2 criteria");
        let ci = vec![".github/workflows/ci.yml".to_owned()];
        assert_eq!(decide(2, 8, &p, &globs, &ci).tier, Tier::Full);
    }
}
