//! Ledger append throughput under concurrent writers, against a baseline
//! of raw single-row INSERT-and-commit transactions on the same database,
//! for SQLite and PostgreSQL, measured in one run (bench/ledger.sh).
//!
//! A chained append is the ledger's real work: the envelope's sha256 and
//! RFC 6962 leaf hash, the serialised read of the tip, the chain link, and
//! the row. The baseline inserts a row of the same shape (same columns,
//! same unique and secondary indexes, same pre-computed values) into a
//! plain table with no chain, each insert its own committed transaction,
//! with the same durability settings. Envelopes are built before timing.
//!
//! Usage: appendbench DIR [POSTGRES_SERVER_URL] [WRITERS] [SECONDS]
//! (DIR holds the SQLite file; the PostgreSQL part makes a fresh database
//! `gate_bench` on the server and leaves it, ledger schema and baseline
//! table in place, for bench/ledger.sh's ceiling measurement; `-` skips
//! PostgreSQL.)
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use chrono::Utc;
use gate_evidence::Ledger;
use gate_evidence::ledger::{Location, RunEntry};
use serde_json::json;

const ENVELOPE_BYTES: usize = 6 * 1024;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: appendbench DIR [POSTGRES_SERVER_URL|-] [WRITERS] [SECONDS]");
        std::process::exit(2);
    };
    let server = args.next().filter(|s| s != "-");
    let writers: usize = args.next().map_or(16, |n| n.parse().unwrap());
    let seconds: u64 = args.next().map_or(5, |n| n.parse().unwrap());
    let period = Duration::from_secs(seconds);
    std::fs::create_dir_all(&dir).unwrap();

    let sqlite = dir.join("bench.db");
    let _ = std::fs::remove_file(&sqlite);
    let backends: Vec<(&str, Box<dyn Backend>)> = {
        let mut b: Vec<(&str, Box<dyn Backend>)> =
            vec![("sqlite", Box::new(Sqlite { path: sqlite }))];
        if let Some(server) = server {
            b.push(("postgres", Box::new(Postgres::create(&server))));
        }
        b
    };
    println!(
        "{writers} concurrent writers, {seconds} s per measurement, envelopes of {ENVELOPE_BYTES} bytes"
    );
    for (name, backend) in &backends {
        backend.prepare();
        // Interleaved, twice each: both see the same machine and the same
        // database size; the better of each pair counts.
        let mut raw = 0.0f64;
        let mut chained = 0.0f64;
        for round in 0..2 {
            raw = raw.max(measure(writers, period, |w| backend.raw_writer(w, round)));
            chained = chained.max(measure(writers, period, |w| {
                backend.append_writer(w, round)
            }));
        }
        println!(
            "{name:<9} raw insert+commit {raw:>8.0}/s   chained append {chained:>8.0}/s   ratio {:.2}  (target >= 0.50)",
            chained / raw
        );
        backend.check(writers);
    }
}

/// A writer, set up (connected, rows built) and ready to be timed.
type Writer<'a> = Box<dyn FnOnce(&AtomicBool, &AtomicU64) + Send + 'a>;

/// Sets up `writers` writers, then runs them together for `period`;
/// writes per second.
fn measure<'a>(
    writers: usize,
    period: Duration,
    setup: impl Fn(usize) -> Writer<'a> + Sync,
) -> f64 {
    let stop = AtomicBool::new(false);
    let count = AtomicU64::new(0);
    let ready = Arc::new(Barrier::new(writers + 1));
    let elapsed = std::thread::scope(|s| {
        for w in 0..writers {
            let (ready, stop, count, setup) = (Arc::clone(&ready), &stop, &count, &setup);
            s.spawn(move || {
                let work = setup(w);
                ready.wait();
                work(stop, count);
            });
        }
        ready.wait();
        let started = Instant::now();
        std::thread::sleep(period);
        stop.store(true, Ordering::SeqCst);
        started
    });
    count.load(Ordering::SeqCst) as f64 / elapsed.elapsed().as_secs_f64()
}

trait Backend: Sync {
    fn prepare(&self);
    fn raw_writer(&self, w: usize, round: usize) -> Writer<'_>;
    fn location(&self) -> Location;
    fn check(&self, writers: usize);

    fn append_writer(&self, w: usize, round: usize) -> Writer<'_> {
        let mut ledger = Ledger::open(self.location()).unwrap();
        let mut runs = Prebuilt::new(run, 2048, w, round);
        Box::new(move |stop, count| {
            while !stop.load(Ordering::Relaxed) {
                let (entry, envelope) = runs.next_row();
                ledger.append(entry, envelope).unwrap();
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
    }
}

/// One writer's rows, built ahead of the timing in chunks: a writer that
/// outruns a chunk (one with few rivals) builds the next.
struct Prebuilt<T> {
    build: fn(usize, usize, usize) -> T,
    size: usize,
    w: usize,
    round: usize,
    rows: Vec<T>,
    at: usize,
    next: usize,
}

impl<T> Prebuilt<T> {
    /// Writer `w`'s rows for `round`, row `i` made by `build(w, round, i)`,
    /// `size` at a time.
    fn new(build: fn(usize, usize, usize) -> T, size: usize, w: usize, round: usize) -> Self {
        let mut rows = Self {
            build,
            size,
            w,
            round,
            rows: Vec::new(),
            at: 0,
            next: 0,
        };
        rows.refill();
        rows
    }

    fn refill(&mut self) {
        let (build, w, round) = (self.build, self.w, self.round);
        self.rows = (self.next..self.next + self.size)
            .map(|i| build(w, round, i))
            .collect();
        self.next += self.size;
        self.at = 0;
    }

    fn next_row(&mut self) -> &T {
        if self.at == self.rows.len() {
            self.refill();
        }
        self.at += 1;
        &self.rows[self.at - 1]
    }
}

/// The envelope of run `run_id`: distinct bytes of the benchmark's size.
fn envelope(run_id: &str) -> Vec<u8> {
    let mut envelope = vec![b'x'; ENVELOPE_BYTES];
    envelope[..run_id.len()].copy_from_slice(run_id.as_bytes());
    envelope
}

/// A run to append: its entry and envelope.
fn run(w: usize, round: usize, i: usize) -> (RunEntry, Vec<u8>) {
    let run_id = format!("r{round}-w{w:02}-{i:07}");
    (entry(&run_id, w), envelope(&run_id))
}

/// A baseline row: a run's entry with its envelope's sha256 and leaf hash.
fn raw_row(w: usize, round: usize, i: usize) -> (RunEntry, String, String) {
    let run_id = format!("raw{round}-w{w:02}-{i:07}");
    let envelope = envelope(&run_id);
    let sha = gate_evidence::bundle::digest(&envelope);
    let leaf = hex::encode(gate_evidence::merkle::leaf_hash(&envelope));
    (entry(&run_id, w), sha, leaf)
}

fn entry(run_id: &str, w: usize) -> RunEntry {
    let now = Utc::now();
    RunEntry {
        run_id: run_id.to_owned(),
        spec_id: format!("spec-{w}"),
        attempt: 1,
        series: None,
        verdict: "pass".into(),
        tier: "light".into(),
        started_at: now,
        finished_at: now,
        input_tokens: 1000,
        cached_input_tokens: 100,
        output_tokens: 50,
        cost_usd: Some(0.01),
        bundle_path: format!("/var/gate/bundles/{run_id}.dsse.json"),
        extra: json!({"agent": "bench", "models": ["p/m"], "roles": [], "findings": []}),
    }
}

struct Sqlite {
    path: PathBuf,
}

impl Sqlite {
    fn connect(&self) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(&self.path).unwrap();
        c.busy_timeout(Duration::from_secs(30)).unwrap();
        c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c
    }
}

impl Backend for Sqlite {
    fn prepare(&self) {
        drop(Ledger::open(self.location()).unwrap());
        self.connect()
            .execute_batch(
                "CREATE TABLE bench_raw (
                     id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, spec_id TEXT NOT NULL,
                     attempt INTEGER NOT NULL, verdict TEXT NOT NULL, tier TEXT NOT NULL,
                     started_at TEXT NOT NULL, finished_at TEXT NOT NULL,
                     input_tokens INTEGER NOT NULL, cached_input_tokens INTEGER NOT NULL,
                     output_tokens INTEGER NOT NULL, cost_usd REAL, bundle_path TEXT NOT NULL,
                     envelope_sha256 TEXT NOT NULL UNIQUE, leaf_hash TEXT NOT NULL,
                     recorded_at TEXT NOT NULL, extra_json TEXT NOT NULL);
                 CREATE INDEX raw_by_spec ON bench_raw (spec_id, id);
                 CREATE INDEX raw_by_start ON bench_raw (started_at);",
            )
            .unwrap();
    }

    fn location(&self) -> Location {
        Location::Sqlite(self.path.clone())
    }

    fn raw_writer(&self, w: usize, round: usize) -> Writer<'_> {
        let mut rows = Prebuilt::new(raw_row, 16 * 1024, w, round);
        let c = self.connect();
        Box::new(move |stop, count| {
            let mut stmt = c
                .prepare_cached(
                    "INSERT INTO bench_raw (run_id, spec_id, attempt, verdict, tier, started_at, \
                 finished_at, input_tokens, cached_input_tokens, output_tokens, cost_usd, \
                 bundle_path, envelope_sha256, leaf_hash, recorded_at, extra_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                )
                .unwrap();
            let ts = |t: &chrono::DateTime<Utc>| t.to_rfc3339();
            while !stop.load(Ordering::Relaxed) {
                let (e, sha, leaf) = rows.next_row();
                stmt.execute(rusqlite::params![
                    e.run_id,
                    e.spec_id,
                    e.attempt,
                    e.verdict,
                    e.tier,
                    ts(&e.started_at),
                    ts(&e.finished_at),
                    e.input_tokens,
                    e.cached_input_tokens,
                    e.output_tokens,
                    e.cost_usd,
                    e.bundle_path,
                    sha,
                    leaf,
                    ts(&Utc::now()),
                    e.extra.to_string(),
                ])
                .unwrap();
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    fn check(&self, _writers: usize) {
        check_chain(&self.location());
    }
}

struct Postgres {
    url: String,
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

impl Postgres {
    fn create(server: &str) -> Self {
        let name = "gate_bench";
        block_on(async {
            let c = connect(server).await;
            c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await
                .unwrap();
            c.batch_execute(&format!("CREATE DATABASE {name}"))
                .await
                .unwrap();
        });
        let (head, query) = server
            .split_once('?')
            .map_or((server, None), |(h, q)| (h, Some(q)));
        let (scheme, rest) = head.split_once("://").unwrap();
        let authority = rest.split('/').next().unwrap();
        let mut url = format!("{scheme}://{authority}/{name}");
        if let Some(q) = query {
            url = format!("{url}?{q}");
        }
        Self { url }
    }
}

impl Backend for Postgres {
    fn prepare(&self) {
        drop(Ledger::open(self.location()).unwrap());
        block_on(async {
            connect(&self.url)
                .await
                .batch_execute(
                    "CREATE TABLE bench_raw (
                         id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL UNIQUE,
                         spec_id TEXT NOT NULL, attempt BIGINT NOT NULL, verdict TEXT NOT NULL,
                         tier TEXT NOT NULL, started_at TIMESTAMPTZ NOT NULL,
                         finished_at TIMESTAMPTZ NOT NULL, input_tokens BIGINT NOT NULL,
                         cached_input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL,
                         cost_usd DOUBLE PRECISION, bundle_path TEXT NOT NULL,
                         envelope_sha256 TEXT NOT NULL UNIQUE, leaf_hash TEXT NOT NULL,
                         recorded_at TIMESTAMPTZ NOT NULL, extra_json JSON NOT NULL);
                     CREATE INDEX raw_by_spec ON bench_raw (spec_id, id);
                     CREATE INDEX raw_by_start ON bench_raw (started_at);",
                )
                .await
                .unwrap();
        });
    }

    fn location(&self) -> Location {
        Location::Postgres(self.url.clone())
    }

    fn raw_writer(&self, w: usize, round: usize) -> Writer<'_> {
        let mut rows = Prebuilt::new(raw_row, 16 * 1024, w, round);
        // One runtime and connection per writer, one block_on per insert:
        // the same shape of call as the ledger's.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(connect(&self.url));
        let stmt = rt
            .block_on(client.prepare(
                "INSERT INTO bench_raw (run_id, spec_id, attempt, verdict, tier, started_at, \
                 finished_at, input_tokens, cached_input_tokens, output_tokens, cost_usd, \
                 bundle_path, envelope_sha256, leaf_hash, recorded_at, extra_json) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
            ))
            .unwrap();
        Box::new(move |stop, count| {
            while !stop.load(Ordering::Relaxed) {
                let (e, sha, leaf) = rows.next_row();
                let big = |n: u64| i64::try_from(n).unwrap();
                rt.block_on(client.execute(
                    &stmt,
                    &[
                        &e.run_id,
                        &e.spec_id,
                        &i64::from(e.attempt),
                        &e.verdict,
                        &e.tier,
                        &e.started_at,
                        &e.finished_at,
                        &big(e.input_tokens),
                        &big(e.cached_input_tokens),
                        &big(e.output_tokens),
                        &e.cost_usd,
                        &e.bundle_path,
                        sha,
                        leaf,
                        &Utc::now(),
                        &e.extra,
                    ],
                ))
                .unwrap();
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    fn check(&self, _writers: usize) {
        check_chain(&self.location());
    }
}

/// The appends made one chain: contiguous seqs, each linked to the last.
fn check_chain(location: &Location) {
    let ledger = Ledger::open(location.clone()).unwrap();
    let rows = ledger.rows().unwrap();
    let mut prev: Option<&str> = None;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.seq, i as u64 + 1, "seq gap");
        assert_eq!(
            row.prev_sha256.as_deref(),
            prev,
            "chain broken at {}",
            row.seq
        );
        prev = Some(&row.envelope_sha256);
    }
    println!(
        "          {} appended rows form one unbroken chain",
        rows.len()
    );
}
