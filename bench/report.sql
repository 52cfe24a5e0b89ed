-- The aggregates of `gate report --format json` (no filter), computed by
-- the sqlite3 command-line tool over the same ledger: the baseline of
-- bench/report.sh, which also checks that both give the same numbers.
--
-- Definitions as in gate/src/eval/scorecard.rs: approved = verdict pass,
-- failed = verdict fail; a run's outcome is its latest outcome (by id),
-- except that an override counts as fine unless an outcome recorded after
-- it says otherwise; percentiles are nearest-rank; Wilson at z = 1.96.
-- Each statement prints one JSON array tagged with its query name `q`.
.mode json
PRAGMA temp_store = MEMORY;

-- Latest outcome and latest override per run, keyed for the joins below.
CREATE TEMP TABLE lo (run_id TEXT PRIMARY KEY, broken INTEGER NOT NULL, at TEXT NOT NULL);
INSERT INTO lo SELECT o.run_id, o.broken, o.recorded_at FROM outcomes o
WHERE o.id IN (SELECT MAX(id) FROM outcomes GROUP BY run_id);
CREATE TEMP TABLE lv (run_id TEXT PRIMARY KEY, at TEXT NOT NULL);
INSERT INTO lv SELECT run_id, MAX(recorded_at) FROM overrides GROUP BY run_id;

CREATE TEMP TABLE eff (seq INTEGER PRIMARY KEY, outcome INTEGER NOT NULL, overridden INTEGER NOT NULL);
INSERT INTO eff
SELECT r.seq,
    CASE WHEN lo.run_id IS NOT NULL AND (lv.at IS NULL OR lo.at > lv.at)
         THEN CASE WHEN lo.broken = 1 THEN 1 ELSE 2 END
         ELSE 2 END,
    lv.at IS NOT NULL
FROM (SELECT run_id FROM lo UNION SELECT run_id FROM lv) ids
JOIN runs r ON r.run_id = ids.run_id
LEFT JOIN lo ON lo.run_id = ids.run_id
LEFT JOIN lv ON lv.run_id = ids.run_id;

-- One row per run: its facts, its ISO week and its outcome (0 unknown,
-- 1 broken, 2 fine), materialized once for the scans below.
CREATE TEMP TABLE st (seq INTEGER PRIMARY KEY, spec_id TEXT, verdict TEXT, tier TEXT, agent TEXT,
    review TEXT, week TEXT, cost_usd REAL, input_tokens INTEGER, cached_input_tokens INTEGER,
    findings INTEGER, duplicates INTEGER, resolved INTEGER, superseded INTEGER,
    outcome INTEGER, overridden INTEGER);
INSERT INTO st
SELECT f.seq, f.spec_id, f.verdict, f.tier, f.agent, f.review,
    printf('%s-W%02d', strftime('%Y', thursday), (CAST(strftime('%j', thursday) AS INTEGER) - 1) / 7 + 1),
    f.cost_usd, f.input_tokens, f.cached_input_tokens, f.findings, f.duplicates, f.resolved,
    f.superseded, COALESCE(e.outcome, 0), COALESCE(e.overridden, 0)
FROM (SELECT *, date(substr(started_at, 1, 10), '-3 days', 'weekday 4') AS thursday FROM run_facts) f
LEFT JOIN eff e ON e.seq = f.seq;

-- Wilson 95% bounds of k of n, as columns low and high.
CREATE TEMP VIEW z AS SELECT 1.959963984540054 AS z;

SELECT 'total' AS q, runs, approved_broken, approved_with_outcome, approved - approved_with_outcome AS approved_unknown,
    failed_fine, failed_with_outcome, failed - failed_with_outcome AS failed_unknown,
    overridden * 1.0 / runs AS override_rate, escalated * 1.0 / runs AS escalation_rate,
    did_not_run * 1.0 / runs AS did_not_run_rate,
    approved_broken * 1.0 / approved_with_outcome AS fp_rate,
    (p + z*z/(2*n) - z*sqrt(p*(1-p)/n + z*z/(4*n*n))) / (1 + z*z/n) AS fp_low,
    (p + z*z/(2*n) + z*sqrt(p*(1-p)/n + z*z/(4*n*n))) / (1 + z*z/n) AS fp_high,
    failed_fine * 1.0 / failed_with_outcome AS ff_rate,
    resolved, superseded, duplicates, published, cost_total, input_total,
    cached_total * 1.0 / input_total AS cached_input_share
FROM (SELECT *, approved_broken * 1.0 / approved_with_outcome AS p, approved_with_outcome AS n
      FROM (SELECT COUNT(*) AS runs,
        SUM(verdict = 'pass') AS approved,
        SUM(verdict = 'pass' AND outcome = 1) AS approved_broken,
        SUM(verdict = 'pass' AND outcome > 0) AS approved_with_outcome,
        SUM(verdict = 'fail') AS failed,
        SUM(verdict = 'fail' AND outcome = 2) AS failed_fine,
        SUM(verdict = 'fail' AND outcome > 0) AS failed_with_outcome,
        SUM(overridden) AS overridden,
        SUM(verdict = 'escalate') AS escalated,
        SUM(review = 'did_not_run') AS did_not_run,
        SUM(resolved) AS resolved, SUM(superseded) AS superseded, SUM(duplicates) AS duplicates,
        SUM(findings + duplicates) AS published,
        TOTAL(cost_usd) AS cost_total, SUM(input_tokens) AS input_total,
        SUM(cached_input_tokens) AS cached_total
      FROM st)),
     z;

SELECT 'cost' AS q,
    MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN cost_usd END) AS median,
    MAX(CASE WHEN rn = (n * 90 + 99) / 100 THEN cost_usd END) AS p90
FROM (SELECT cost_usd, ROW_NUMBER() OVER (ORDER BY cost_usd) AS rn, COUNT(*) OVER () AS n
      FROM st WHERE cost_usd IS NOT NULL);

SELECT 'input_tokens' AS q,
    MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN input_tokens END) AS median,
    MAX(CASE WHEN rn = (n * 90 + 99) / 100 THEN input_tokens END) AS p90
FROM (SELECT input_tokens, ROW_NUMBER() OVER (ORDER BY input_tokens) AS rn, COUNT(*) OVER () AS n
      FROM st);

SELECT 'dismissed' AS q, COUNT(*) AS n FROM (
    SELECT DISTINCT f.spec_id, d.finding_id FROM dismissals d
    JOIN runs r ON r.run_id = d.run_id JOIN st f ON f.seq = r.seq);

SELECT 'open' AS q, SUM(MAX(f.findings - (
        SELECT COUNT(DISTINCT d.finding_id) FROM dismissals d JOIN runs r ON r.run_id = d.run_id
        WHERE r.seq = l.seq), 0)) AS n
FROM (SELECT spec_id, MAX(seq) AS seq FROM st GROUP BY spec_id) l
JOIN st f ON f.seq = l.seq;

-- Breakdowns: runs, and the false-pass rate with its interval, per key.
SELECT q, key, runs, k * 1.0 / n AS rate,
    (k * 1.0 / n + z*z/(2*n) - z*sqrt((k * 1.0 / n)*(1 - k * 1.0 / n)/n + z*z/(4*n*n))) / (1 + z*z/n) AS low,
    (k * 1.0 / n + z*z/(2*n) + z*sqrt((k * 1.0 / n)*(1 - k * 1.0 / n)/n + z*z/(4*n*n))) / (1 + z*z/n) AS high
FROM (
    SELECT 'tier' AS q, tier AS key, COUNT(*) AS runs,
        SUM(verdict = 'pass' AND outcome = 1) AS k, SUM(verdict = 'pass' AND outcome > 0) AS n
    FROM st GROUP BY tier
    UNION ALL
    SELECT 'spec', spec_id, COUNT(*), SUM(verdict = 'pass' AND outcome = 1), SUM(verdict = 'pass' AND outcome > 0)
    FROM st GROUP BY spec_id
    UNION ALL
    SELECT 'agent', agent, COUNT(*), SUM(verdict = 'pass' AND outcome = 1), SUM(verdict = 'pass' AND outcome > 0)
    FROM st WHERE agent IS NOT NULL GROUP BY agent
    UNION ALL
    SELECT 'week', week, COUNT(*), SUM(verdict = 'pass' AND outcome = 1), SUM(verdict = 'pass' AND outcome > 0)
    FROM st GROUP BY week
    UNION ALL
    SELECT 'model', m.model, COUNT(*), SUM(s.verdict = 'pass' AND s.outcome = 1), SUM(s.verdict = 'pass' AND s.outcome > 0)
    FROM run_models m JOIN st s ON s.seq = m.seq GROUP BY m.model
    UNION ALL
    SELECT 'role', o.role, COUNT(*), SUM(s.verdict = 'pass' AND s.outcome = 1), SUM(s.verdict = 'pass' AND s.outcome > 0)
    FROM run_roles o JOIN st s ON s.seq = o.seq GROUP BY o.role
), z;
