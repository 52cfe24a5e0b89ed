//! A digest of the report rows a run's row derives (`run_facts`,
//! `run_models`, `run_roles`), the same whichever store holds them.
//!
//! A report counts those rows, not the wide `runs` row its bundle vouches
//! for, so a report trusts them only while they are what the vouched row
//! derives: each store digests them as it holds them
//! ([`RowStamp::derived`]), and [`expected`]
//! digests what the row derives. Values are tagged by kind (a text `5` is
//! not an integer 5), an integer store's boolean is 0 or 1, a time is the
//! text `ts` writes (microseconds, `Z`), models come in byte order and
//! roles in byte order of their name.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};

use super::entries::{RowStamp, RunEntry};
use super::facts::StoredFacts;

/// One stored value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cell<'a> {
    /// SQL `NULL`.
    Null,
    /// An integer (a boolean is 0 or 1).
    Int(i64),
    /// A floating-point value, by its bits.
    Real(f64),
    /// Text (a time as `ts` writes it).
    Text(&'a str),
    /// Bytes that are not text (only an edited SQLite file holds them).
    Blob(&'a [u8]),
}

impl Cell<'_> {
    fn feed(self, buf: &mut Vec<u8>) {
        match self {
            Cell::Null => buf.push(0),
            Cell::Int(n) => {
                buf.push(1);
                buf.extend_from_slice(&n.to_le_bytes());
            }
            Cell::Real(x) => {
                buf.push(2);
                buf.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            Cell::Text(s) => {
                buf.push(3);
                buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
                buf.extend_from_slice(s.as_bytes());
            }
            Cell::Blob(b) => {
                buf.push(4);
                buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
                buf.extend_from_slice(b);
            }
        }
    }
}

/// Text, or `NULL` when there is none.
pub(crate) fn opt_text(s: Option<&str>) -> Cell<'_> {
    s.map_or(Cell::Null, Cell::Text)
}

/// A time as the stores' report rows hold it.
pub(crate) fn time_text(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The table a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// `run_facts`: one row per run.
    Facts,
    /// `run_models`: one row per model, in byte order.
    Models,
    /// `run_roles`: one row per role, in byte order of the role.
    Roles,
}

/// The digests of the report rows of many runs, as a store reads them:
/// each table's rows in seq order, so one run's rows of a table come
/// together and are hashed as one buffer when the next run's begin.
#[derive(Debug, Default)]
pub(crate) struct Digests {
    parts: [HashMap<u64, [u8; 32]>; 3],
    open: Option<(Table, u64)>,
    buf: Vec<u8>,
}

impl Digests {
    /// Adds one row of `table` of run `seq`.
    pub(crate) fn row(&mut self, table: Table, seq: u64, cells: &[Cell<'_>]) {
        if self.open != Some((table, seq)) {
            self.close();
            self.open = Some((table, seq));
        }
        self.buf.push(0xff);
        for cell in cells {
            cell.feed(&mut self.buf);
        }
    }

    /// Hashes the rows of the run and table being read.
    fn close(&mut self) {
        if let Some((table, seq)) = self.open.take() {
            self.parts[table as usize].insert(seq, *blake3::hash(&self.buf).as_bytes());
            self.buf.clear();
        }
    }

    /// Every row read: ready for [`Digests::of`].
    pub(crate) fn done(mut self) -> Self {
        self.close();
        self
    }

    /// Sets the report-row digest of each of `stamps`.
    pub(crate) fn stamp<'a>(&self, stamps: impl IntoIterator<Item = &'a mut RowStamp>) {
        for stamp in stamps {
            stamp.derived = self.of(stamp.seq);
        }
    }

    /// The runs with any report row, each with its digest.
    pub(crate) fn runs(&self) -> Vec<(u64, [u8; 32])> {
        let mut seqs: Vec<u64> = self.parts.iter().flat_map(|p| p.keys().copied()).collect();
        seqs.sort_unstable();
        seqs.dedup();
        seqs.into_iter().map(|seq| (seq, self.of(seq))).collect()
    }

    /// The digest of run `seq`'s rows (of none, when it has none).
    pub(crate) fn of(&self, seq: u64) -> [u8; 32] {
        let none = blake3::hash(b"");
        let mut h = blake3::Hasher::new();
        h.update(b"gate report rows v1\0");
        for part in &self.parts {
            h.update(part.get(&seq).unwrap_or(none.as_bytes()));
        }
        *h.finalize().as_bytes()
    }
}

/// The digest of the report rows `entry`, stored at `seq`, derives.
pub fn expected(seq: u64, entry: &RunEntry) -> [u8; 32] {
    let f = StoredFacts::from_extra(&entry.extra);
    let int = |n: u64| Cell::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let opt_real = |x: Option<f64>| x.map_or(Cell::Null, Cell::Real);
    let started = time_text(&entry.started_at);
    let seq_cell = Cell::Int(i64::try_from(seq).unwrap_or(i64::MAX));
    let mut d = Digests::default();
    d.row(
        Table::Facts,
        seq,
        &[
            seq_cell,
            Cell::Text(&entry.spec_id),
            Cell::Text(&entry.verdict),
            Cell::Text(&entry.tier),
            Cell::Text(&started),
            opt_text(f.agent.as_deref()),
            opt_text(f.review.as_deref()),
            int(entry.input_tokens),
            int(entry.cached_input_tokens),
            int(entry.output_tokens),
            opt_real(entry.cost_usd),
            int(f.findings),
            int(f.duplicates),
            int(f.resolved),
            int(f.superseded),
            Cell::Int(i64::from(f.unisolated)),
            int(f.criteria_passed),
            int(f.fail_to_pass),
        ],
    );
    let mut models: Vec<&str> = f.models.iter().map(String::as_str).collect();
    models.sort_unstable();
    for m in models {
        d.row(Table::Models, seq, &[seq_cell, Cell::Text(m)]);
    }
    let mut roles: Vec<_> = f.roles.iter().collect();
    roles.sort_unstable_by(|a, b| a.role.cmp(&b.role));
    for r in roles {
        d.row(
            Table::Roles,
            seq,
            &[
                seq_cell,
                Cell::Text(&r.role),
                Cell::Text(&r.model),
                Cell::Text(&r.status),
                int(r.input_tokens),
                int(r.cached_input_tokens),
                int(r.output_tokens),
                opt_real(r.cost_usd),
            ],
        );
    }
    d.done().of(seq)
}

/// The `run_facts` columns, in the order both stores digest them.
pub(crate) const FACTS_COLUMNS: &str = "seq, spec_id, verdict, tier, started_at, agent, review, \
     input_tokens, cached_input_tokens, output_tokens, cost_usd, findings, duplicates, resolved, \
     superseded, unisolated, criteria_passed, fail_to_pass";

/// The `run_roles` columns, in the order both stores digest them.
pub(crate) const ROLES_COLUMNS: &str =
    "seq, role, model, status, input_tokens, cached_input_tokens, output_tokens, cost_usd";
