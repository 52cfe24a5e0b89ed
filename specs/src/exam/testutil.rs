//! An in-memory [`Tree`] for the tables of each ecosystem.

use super::model::{Exam, ExamKind, Tree};
use std::collections::BTreeMap;

/// Files by path.
pub(crate) struct Mem(pub(crate) BTreeMap<String, Vec<u8>>);

impl Mem {
    pub(crate) fn new(files: &[(&str, &str)]) -> Self {
        Self(
            files
                .iter()
                .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
                .collect(),
        )
    }
}

impl Tree for Mem {
    fn read(&self, path: &str) -> Option<Vec<u8>> {
        self.0.get(path).cloned()
    }

    fn files_under(&self, dir: &str) -> Vec<String> {
        self.0
            .keys()
            .filter(|p| dir.is_empty() || p.starts_with(&format!("{dir}/")))
            .cloned()
            .collect()
    }
}

/// The exam's file paths (script entries as `path#key`).
pub(crate) fn files(exam: &Exam) -> Vec<String> {
    exam.files
        .iter()
        .map(|f| match &f.kind {
            ExamKind::File => f.path.clone(),
            ExamKind::PackageCode => format!("{}#code", f.path),
            ExamKind::ScriptEntry { key } => format!("{}#{key}", f.path),
        })
        .collect()
}

/// The exam's config paths (with `#section`).
pub(crate) fn configs(exam: &Exam) -> Vec<String> {
    exam.configs
        .iter()
        .map(|c| match &c.section {
            None => c.path.clone(),
            Some(s) => format!("{}#{s}", c.path),
        })
        .collect()
}
