//! Which criteria run against a mutant: those whose reads on the
//! unmutated run include its file, with the reads of the checks they run
//! after (a criterion that runs a build's output read the source through
//! the build). A criterion with no trace, or an incomplete one, runs
//! against every mutant of its task's files.

use std::collections::{BTreeMap, BTreeSet};

use gate_harness::ItemResult;
use gate_specs::{InputGlobs, Spec};

use crate::plan::Plan;

/// What each criterion was seen to read.
pub(super) struct Scope {
    /// Workspace paths each traced criterion (with its checks) read.
    read: BTreeMap<String, Reads>,
    /// Criteria with no complete trace, with why, and their task's `paths`.
    untraced: BTreeMap<String, (String, Option<InputGlobs>)>,
}

/// Paths read, and relative names read where the folder was unknown.
#[derive(Default)]
struct Reads {
    paths: BTreeSet<String>,
    suffixes: BTreeSet<String>,
}

impl Reads {
    fn has(&self, file: &str) -> bool {
        self.paths.contains(file)
            || self
                .suffixes
                .iter()
                .any(|s| file == s || file.ends_with(&format!("/{s}")))
    }
}

impl Scope {
    /// Reads `criteria`'s traces (and those of the checks each runs after)
    /// from the unmutated run's `results`.
    pub(super) fn of(
        spec: &Spec,
        plan: &Plan,
        criteria: &BTreeSet<String>,
        results: &std::collections::HashMap<String, ItemResult>,
    ) -> Self {
        let mut read = BTreeMap::new();
        let mut untraced = BTreeMap::new();
        for id in criteria {
            let mut reads = Reads::default();
            let mut missing = None;
            for item in super::runs::with_after(plan, &BTreeSet::from([id.clone()])) {
                match results.get(&item).and_then(|r| r.observed.as_deref()) {
                    Some(seen) => {
                        if let Some(why) = &seen.incomplete {
                            missing
                                .get_or_insert_with(|| format!("its trace is incomplete: {why}"));
                        }
                        reads.paths.extend(seen.paths.iter().cloned());
                        reads.suffixes.extend(seen.suffixes.iter().cloned());
                    }
                    None if results.get(&item).is_some_and(|r| r.observed.is_none()) => {
                        missing.get_or_insert_with(|| "what it read was not traced".to_owned());
                    }
                    None => {}
                }
            }
            match missing {
                Some(why) => {
                    let paths = spec
                        .criteria()
                        .find(|(_, c)| &c.id == id)
                        .and_then(|(t, _)| InputGlobs::new(&t.paths).ok());
                    untraced.insert(id.clone(), (why, paths));
                }
                None => {
                    read.insert(id.clone(), reads);
                }
            }
        }
        Self { read, untraced }
    }

    /// The criteria that run against a mutant of `file`.
    pub(super) fn criteria_for(&self, file: &str) -> BTreeSet<String> {
        let traced = self
            .read
            .iter()
            .filter(|(_, r)| r.has(file))
            .map(|(id, _)| id);
        let untraced = self
            .untraced
            .iter()
            .filter(|(_, (_, paths))| paths.as_ref().is_some_and(|p| p.is_match(file)))
            .map(|(id, _)| id);
        traced.chain(untraced).cloned().collect()
    }

    /// The criteria run without a trace to scope them, with why.
    pub(super) fn untraced(&self) -> BTreeMap<String, String> {
        self.untraced
            .iter()
            .map(|(id, (why, _))| (id.clone(), why.clone()))
            .collect()
    }
}
