//! Who reviews: the panel of roles by risk tier.

use crate::review::context::FileClass;
use crate::review::prompts::Prompt;
use crate::role::Role;
use crate::tier::Tier;

/// One seat on the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seat {
    /// The role (for routing, remits and findings).
    pub role: Role,
    /// Its instructions.
    pub prompt: Prompt,
}

/// The reviewers a tier puts to work: trivial has one generalist; light has
/// quality, security, and docs if a doc file changed, else performance; full
/// has quality, security, performance, integration, and docs if a doc file
/// changed. The judge, the rules reviewer and the coordinator are added by
/// the review where they apply.
pub fn reviewers(tier: Tier, changed_classes: &[FileClass]) -> Vec<Seat> {
    let docs_changed = changed_classes.contains(&FileClass::Docs);
    let seat = |role| Seat {
        role,
        prompt: Prompt::Role(role),
    };
    match tier {
        Tier::Trivial => vec![Seat {
            role: Role::Quality,
            prompt: Prompt::Generalist,
        }],
        Tier::Light => vec![
            seat(Role::Quality),
            seat(Role::Security),
            seat(if docs_changed {
                Role::Docs
            } else {
                Role::Performance
            }),
        ],
        Tier::Full => {
            let mut seats = vec![
                seat(Role::Quality),
                seat(Role::Security),
                seat(Role::Performance),
                seat(Role::Integration),
            ];
            if docs_changed {
                seats.push(seat(Role::Docs));
            }
            seats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_by_tier() {
        use FileClass::{Code, Docs, Manifest};
        let roles = |tier, classes: &[FileClass]| -> Vec<&str> {
            reviewers(tier, classes)
                .iter()
                .map(|s| s.role.as_str())
                .collect()
        };
        let cases: &[(Tier, &[FileClass], &[&str])] = &[
            (Tier::Trivial, &[Code, Docs], &["quality"]),
            (
                Tier::Light,
                &[Code],
                &["quality", "security", "performance"],
            ),
            (Tier::Light, &[Code, Docs], &["quality", "security", "docs"]),
            (
                Tier::Light,
                &[Manifest],
                &["quality", "security", "performance"],
            ),
            (
                Tier::Full,
                &[Code],
                &["quality", "security", "performance", "integration"],
            ),
            (
                Tier::Full,
                &[Code, Docs],
                &["quality", "security", "performance", "integration", "docs"],
            ),
        ];
        for (tier, classes, want) in cases {
            assert_eq!(roles(*tier, classes), *want, "{tier} {classes:?}");
        }
        assert_eq!(reviewers(Tier::Trivial, &[])[0].prompt, Prompt::Generalist);
    }
}
