//! Malformed and invalid specs: every error's kind and exact place.

#![allow(clippy::too_many_lines, reason = "a table of cases reads best whole")]

use std::path::Path;

use gate_specs::{Format, SpecErrorKind, parse_str};

/// What one error must be.
#[derive(Debug)]
enum Want {
    /// Exactly this kind.
    Is(SpecErrorKind),
    /// A `Syntax` error whose message holds this text.
    Syntax(&'static str),
}

struct Case {
    name: &'static str,
    format: Format,
    text: &'static str,
    /// Every error, in order: line, column, what.
    want: Vec<(usize, usize, Want)>,
}

fn toml(name: &'static str, text: &'static str, want: Vec<(usize, usize, Want)>) -> Case {
    Case {
        name,
        format: Format::Toml,
        text,
        want,
    }
}

fn json(name: &'static str, text: &'static str, want: Vec<(usize, usize, Want)>) -> Case {
    Case {
        name,
        format: Format::Json,
        text,
        want,
    }
}

fn unknown(key: &str) -> Want {
    Want::Is(SpecErrorKind::UnknownKey {
        key: key.into(),
        suggestion: None,
    })
}

fn missing(key: &str) -> Want {
    Want::Is(SpecErrorKind::MissingKey(key.into()))
}

fn dup(id: &str) -> Want {
    Want::Is(SpecErrorKind::DuplicateId(id.into()))
}

fn no_check(name: &str) -> Want {
    Want::Is(SpecErrorKind::UnknownAfter {
        name: name.into(),
        expected: "a check",
        suggestion: None,
    })
}

fn no_task(name: &str) -> Want {
    Want::Is(SpecErrorKind::UnknownAfter {
        name: name.into(),
        expected: "a task",
        suggestion: None,
    })
}

fn cycle(graph: &'static str, path: &[&str]) -> Want {
    Want::Is(SpecErrorKind::Cycle {
        graph,
        path: path.iter().map(|s| (*s).to_owned()).collect(),
    })
}

fn escape(path: &str) -> Want {
    Want::Is(SpecErrorKind::PathEscape(path.into()))
}

fn range(key: &str, reason: &str) -> Want {
    Want::Is(SpecErrorKind::OutOfRange {
        key: key.into(),
        reason: reason.into(),
    })
}

fn is(kind: SpecErrorKind) -> Want {
    Want::Is(kind)
}

fn cases() -> Vec<Case> {
    vec![
        // --- TOML syntax -------------------------------------------------
        toml(
            "unclosed table header",
            "[spec\nid = \"s\"\n",
            vec![(1, 6, Want::Syntax("unclosed table"))],
        ),
        toml(
            "value missing",
            "[spec]\nid =\n",
            vec![(2, 5, Want::Syntax("expected"))],
        ),
        toml(
            "duplicate key",
            "[spec]\nid = \"a\"\nid = \"b\"\n",
            vec![(3, 1, Want::Syntax("duplicate key"))],
        ),
        toml(
            // The column counts characters: `é` is two bytes.
            "unterminated string after a wide character",
            "[spec]\nid = \"é\nsummary = \"x\"\n",
            vec![(2, 8, Want::Syntax("string"))],
        ),
        // --- unknown keys ------------------------------------------------
        toml(
            "unknown top-level key",
            "[spec]\nid = \"s\"\n\n[checks]\nid = \"x\"\n",
            vec![(4, 2, unknown("checks"))],
        ),
        toml(
            "unknown key in [spec]",
            "[spec]\nid = \"s\"\n  owner = \"me\"\n",
            vec![(3, 3, unknown("owner"))],
        ),
        toml(
            "unknown key in [[check]]",
            "[spec]\nid = \"s\"\n\n[[check]]\nid = \"a\"\nrun = \"b\"\ncommand = \"c\"\n",
            vec![(7, 1, unknown("command"))],
        ),
        toml(
            "unknown key in a starts inline table",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"b\"\nstarts = { within_s = 5, ready_tpc = \"h:1\" }\n",
            vec![(6, 26, unknown("ready_tpc"))],
        ),
        toml(
            "unknown key in [[task.criterion]]",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\njudge = \"model\"\nweight = 2\n",
            vec![(9, 1, unknown("weight"))],
        ),
        toml(
            "unknown key in [policy]",
            "[spec]\nid = \"s\"\n\n[policy]\njudge_threshold = 0.9\nmax_tokens = 10\n",
            vec![(6, 1, unknown("max_tokens"))],
        ),
        toml(
            "unknown key in tests",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\ntests = { report = \"r.xml\", junit = true }\n",
            vec![(5, 29, unknown("junit"))],
        ),
        toml(
            "unknown key as a dotted key",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"b\"\nstarts.ready = \"x\"\n",
            vec![(6, 8, unknown("ready"))],
        ),
        toml(
            "unknown key in a [task.tests] table",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[task.tests]\nrun = \"x\"\n  bogus = 1\n",
            vec![(7, 3, unknown("bogus"))],
        ),
        toml(
            "unknown key with CRLF line ends",
            "[spec]\r\nid = \"s\"\r\n\tbad = 1\r\n",
            vec![(3, 2, unknown("bad"))],
        ),
        // --- missing keys and types --------------------------------------
        toml(
            "no [spec] at all",
            "\n[[check]]\nid = \"a\"\nrun = \"b\"\n",
            vec![(1, 1, missing("spec"))],
        ),
        toml(
            "missing spec.id",
            "[spec]\nsummary = \"x\"\n",
            vec![(1, 1, missing("id"))],
        ),
        toml(
            "missing check run",
            "[spec]\nid = \"s\"\n\n[[check]]\nid = \"a\"\n",
            vec![(4, 1, missing("run"))],
        ),
        toml(
            "missing criterion text",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\nrun = \"x\"\n",
            vec![(5, 1, missing("text"))],
        ),
        toml(
            "timeout as a string",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"b\"\ntimeout_s = \"ten\"\n",
            vec![(
                6,
                13,
                Want::Syntax(
                    "`check[0].timeout_s`: invalid type: string \"ten\", expected a whole number",
                ),
            )],
        ),
        toml(
            "after as a string",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"b\"\nafter = \"build\"\n",
            vec![(
                6,
                9,
                Want::Syntax("`check[0].after`: invalid type: string \"build\", expected an array"),
            )],
        ),
        toml(
            "negative timeout",
            "[spec]\nid = \"s\"\n[policy]\ncheck_timeout_s = -5\n",
            vec![(4, 19, Want::Syntax("`policy.check_timeout_s`"))],
        ),
        toml(
            "unknown on_review_unavailable",
            "[spec]\nid = \"s\"\n[policy]\non_review_unavailable = \"maybe\"\n",
            vec![(
                4,
                25,
                Want::Syntax("`policy.on_review_unavailable`: unknown variant `maybe`"),
            )],
        ),
        toml(
            "unknown tier in on_review_unavailable",
            "[spec]\nid = \"s\"\n[policy]\non_review_unavailable = { ful = \"pass\" }\n",
            vec![(4, 1, unknown("ful"))],
        ),
        toml(
            "unknown value of on_review_unavailable by tier",
            "[spec]\nid = \"s\"\n[policy]\non_review_unavailable = { full = \"maybe\" }\n",
            vec![(4, 25, Want::Syntax("unknown variant `maybe`"))],
        ),
        // --- ids ---------------------------------------------------------
        toml(
            "two checks with one id",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"build\"\nrun = \"a\"\n[[check]]\nid = \"build\"\nrun = \"b\"\n",
            vec![(7, 6, dup("build"))],
        ),
        toml(
            "a check and a criterion with one id",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"x\"\nrun = \"a\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"x\"\ntext = \"t\"\nrun = \"b\"\n",
            vec![(9, 6, dup("x"))],
        ),
        toml(
            "a task named like another task's tests",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"x\"\ntests = { run = \"make test\" }\n[[task]]\nid = \"x.tests\"\n",
            vec![(7, 6, dup("x.tests"))],
        ),
        toml(
            "a check named like a later task's tests",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"x.tests\"\nrun = \"a\"\n[[task]]\nid = \"x\"\ntests = { run = \"make test\" }\n",
            vec![(8, 1, dup("x.tests"))],
        ),
        toml(
            "ids with bad characters, a reserved id",
            "[spec]\nid = \"my spec\"\n[[check]]\nid = \"\"\nrun = \"a\"\n[[check]]\nid = \"builtin.secrets\"\nrun = \"b\"\n",
            vec![
                (2, 6, is(SpecErrorKind::InvalidId("my spec".into()))),
                (4, 6, is(SpecErrorKind::InvalidId(String::new()))),
                (
                    7,
                    6,
                    is(SpecErrorKind::ReservedId("builtin.secrets".into())),
                ),
            ],
        ),
        // --- after -------------------------------------------------------
        toml(
            "check after an unknown check",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"x\"\n[[check]]\nid = \"b\"\nrun = \"y\"\nafter = [\"a\", \"nope\"]\n",
            vec![(9, 15, no_check("nope"))],
        ),
        toml(
            "criterion after a task, task after a check",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"build\"\nrun = \"x\"\n[[task]]\nid = \"t\"\nafter = [\"build\"]\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"y\"\nafter = [\"build\", \"t\"]\n[[task]]\nid = \"u\"\nafter = [\"t\"]\n",
            vec![(8, 10, no_task("build")), (13, 19, no_check("t"))],
        ),
        toml(
            "after a task without tests is not after its tests",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[check]]\nid = \"c\"\nrun = \"x\"\nafter = [\"t.tests\"]\n",
            vec![(8, 10, no_check("t.tests"))],
        ),
        toml(
            "task tests after an unknown check",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"install\"\nrun = \"npm ci\"\n[[task]]\nid = \"t\"\ntests = { run = \"npm test\", after = [\"instal\"] }\n",
            vec![(8, 38, no_check("instal"))],
        ),
        toml(
            "task tests and a check after each other",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"install\"\nrun = \"npm ci\"\nafter = [\"t.tests\"]\n[[task]]\nid = \"t\"\ntests = { run = \"npm test\", after = [\"install\"] }\n",
            vec![(4, 6, cycle("check", &["install", "t.tests", "install"]))],
        ),
        // --- cycles ------------------------------------------------------
        toml(
            "two checks in a cycle",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"cart\"\nrun = \"x\"\nafter = [\"prices\"]\n[[check]]\nid = \"prices\"\nrun = \"y\"\nafter = [\"cart\"]\n",
            vec![(4, 6, cycle("check", &["cart", "prices", "cart"]))],
        ),
        toml(
            "three checks in a cycle",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"x\"\nafter = [\"c\"]\n[[check]]\nid = \"b\"\nrun = \"y\"\nafter = [\"a\"]\n[[check]]\nid = \"c\"\nrun = \"z\"\nafter = [\"b\"]\n",
            vec![(4, 6, cycle("check", &["a", "c", "b", "a"]))],
        ),
        toml(
            "a check after itself",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"ok\"\nrun = \"w\"\n[[check]]\nid = \"loop\"\nrun = \"x\"\nafter = [\"ok\", \"loop\"]\n",
            vec![(7, 6, cycle("check", &["loop", "loop"]))],
        ),
        toml(
            "two tasks in a cycle",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"cart\"\nafter = [\"prices\"]\n[[task]]\nid = \"prices\"\nafter = [\"cart\"]\n",
            vec![(4, 6, cycle("task", &["cart", "prices", "cart"]))],
        ),
        toml(
            "three tasks in a cycle, and one after itself",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"a\"\nafter = [\"b\"]\n[[task]]\nid = \"b\"\nafter = [\"c\"]\n[[task]]\nid = \"c\"\nafter = [\"a\"]\n[[task]]\nid = \"d\"\nafter = [\"d\"]\n",
            vec![
                (4, 6, cycle("task", &["a", "b", "c", "a"])),
                (13, 6, cycle("task", &["d", "d"])),
            ],
        ),
        // --- globs and paths ---------------------------------------------
        toml(
            "a glob that does not compile",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"x\"\ninputs = [\"src/**\", \"src/[a\"]\n",
            vec![(
                6,
                21,
                is(SpecErrorKind::BadGlob {
                    glob: "src/[a".into(),
                    reason: "unclosed character class; missing ']'".into(),
                }),
            )],
        ),
        toml(
            "`..` in inputs",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\njudge = \"model\"\ninputs = [\"src/../../etc/*\"]\n",
            vec![(9, 11, escape("src/../../etc/*"))],
        ),
        toml(
            "absolute paths",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\npaths = [\"/etc/**\", 'C:\\src\\**', '\\\\server\\x', \"~/x\"]\n",
            vec![
                (5, 10, escape("/etc/**")),
                (5, 21, escape("C:\\src\\**")),
                (5, 34, escape("\\\\server\\x")),
                (5, 48, escape("~/x")),
            ],
        ),
        toml(
            "tests report outside the workspace",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[task.tests]\nreport = \"../reports/t.xml\"\n",
            vec![(6, 10, escape("../reports/t.xml"))],
        ),
        toml(
            "sensitive paths",
            "[spec]\nid = \"s\"\n[policy]\nsensitive_paths = [\n  \"**/auth/**\",\n  \"{src,/etc}/**\",\n  \"a/[\",\n]\n",
            vec![
                (6, 3, escape("{src,/etc}/**")),
                (
                    7,
                    3,
                    is(SpecErrorKind::BadGlob {
                        glob: "a/[".into(),
                        reason: "unclosed character class; missing ']'".into(),
                    }),
                ),
            ],
        ),
        // --- deciders, tests, probes -------------------------------------
        toml(
            "both run and judge",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"y\"\njudge = \"model\"\n",
            vec![(9, 1, is(SpecErrorKind::RunAndJudge("c".into())))],
        ),
        toml(
            "neither run nor judge",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\n",
            vec![(6, 1, is(SpecErrorKind::NoDecider("c".into())))],
        ),
        toml(
            "a human judge",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\njudge = \"human\"\n",
            vec![(8, 9, is(SpecErrorKind::BadJudge("human".into())))],
        ),
        toml(
            "tests with report and run, and with neither",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\ntests = { report = \"r.xml\", run = \"make test\" }\n[[task]]\nid = \"u\"\ntests = { timeout_s = 5 }\n",
            vec![
                (5, 9, is(SpecErrorKind::BadTests("t".into()))),
                (8, 9, is(SpecErrorKind::BadTests("u".into()))),
            ],
        ),
        toml(
            "two probes",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"web\"\nrun = \"x\"\nstarts = { ready_tcp = \"127.0.0.1:80\", ready_log = \"up\" }\n",
            vec![(6, 10, is(SpecErrorKind::ManyProbes("web".into())))],
        ),
        toml(
            "bad probes and a zero window",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"x\"\nstarts = { ready_tcp = \"localhost\", within_s = 0 }\n[[check]]\nid = \"b\"\nrun = \"y\"\nstarts = { ready_http = \"ftp://x\" }\n",
            vec![
                (
                    6,
                    24,
                    is(SpecErrorKind::BadProbe {
                        key: "ready_tcp".into(),
                        reason: "must be `host:port` with a port from 1 to 65535, not `localhost`"
                            .into(),
                    }),
                ),
                (6, 48, range("within_s", "must be at least 1")),
                (
                    10,
                    25,
                    is(SpecErrorKind::BadProbe {
                        key: "ready_http".into(),
                        reason: "must be an `http://` or `https://` URL with a host, not `ftp://x`"
                            .into(),
                    }),
                ),
            ],
        ),
        toml(
            "threshold above 1",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\njudge = \"model\"\nthreshold = 1.5\n",
            vec![(
                9,
                13,
                range("threshold", "must be between 0 and 1, not 1.5"),
            )],
        ),
        toml(
            "empty commands and zero timeouts",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"  \"\ntimeout_s = 0\n[[task]]\nid = \"t\"\ntests = { run = \"\" }\n",
            vec![
                (5, 7, is(SpecErrorKind::EmptyCommand("a".into()))),
                (6, 13, range("timeout_s", "must be at least 1")),
                (9, 17, is(SpecErrorKind::EmptyCommand("t.tests".into()))),
            ],
        ),
        // --- policy ------------------------------------------------------
        toml(
            "policy shares out of range",
            "[spec]\nid = \"s\"\n[policy]\njudge_threshold = 1.2\nconfidence_floor = -0.1\nmin_coverage = 0.5\n",
            vec![
                (
                    4,
                    19,
                    range("judge_threshold", "must be between 0 and 1, not 1.2"),
                ),
                (
                    5,
                    20,
                    range("confidence_floor", "must be between 0 and 1, not -0.1"),
                ),
            ],
        ),
        toml(
            "a mutation score out of range",
            "[spec]\nid = \"s\"\n[policy]\nmutants = { min_score = 1.5 }\n",
            vec![(
                4,
                25,
                range("mutants.min_score", "must be between 0 and 1, not 1.5"),
            )],
        ),
        toml(
            "policy bounds inverted",
            "[spec]\nid = \"s\"\n[policy]\ntrivial_max_tasks = 5\nlight_max_criteria = 3\n",
            vec![
                (
                    4,
                    21,
                    range(
                        "trivial_max_tasks",
                        "(5) must not exceed `light_max_tasks` (4)",
                    ),
                ),
                (
                    5,
                    22,
                    range(
                        "trivial_max_criteria",
                        "(5) must not exceed `light_max_criteria` (3)",
                    ),
                ),
            ],
        ),
        toml(
            "policy floors",
            "[spec]\nid = \"s\"\n[policy]\nmax_attempts = 0\noutput_cap_bytes = 1023\nreview_timeout_s = 0\n",
            vec![
                (4, 16, range("max_attempts", "must be at least 1")),
                (5, 20, range("output_cap_bytes", "must be at least 1024")),
                (6, 20, range("review_timeout_s", "must be at least 1")),
            ],
        ),
        toml(
            "unknown role in role_timeout_s",
            "[spec]\nid = \"s\"\n[policy.role_timeout_s]\nquality = 600\nqualty = 600\njudge = 0\n",
            vec![
                (
                    5,
                    1,
                    is(SpecErrorKind::UnknownRole {
                        role: "qualty".into(),
                        suggestion: None,
                    }),
                ),
                (6, 9, range("role_timeout_s.judge", "must be at least 1")),
            ],
        ),
        // --- builtin_exclude -----------------------------------------------
        toml(
            "builtin_exclude names an unknown check",
            "[spec]\nid = \"s\"\n[policy]\nbuiltin_exclude = { parse = [\"a/**\"], lint = [\"b\"] }\n",
            vec![(4, 39, unknown("lint"))],
        ),
        toml(
            "builtin_exclude is neither a list nor a table",
            "[spec]\nid = \"s\"\n[policy]\nbuiltin_exclude = \"fixtures/**\"\n",
            vec![(
                4,
                19,
                Want::Syntax(
                    "`policy.builtin_exclude`: invalid type: string \"fixtures/**\", expected a list of globs, or a table of them by built-in check",
                ),
            )],
        ),
        toml(
            "builtin_exclude globs are checked where they are written",
            "[spec]\nid = \"s\"\n[policy.builtin_exclude]\nall = [\"../x\"]\nsecrets = [\"k/[a\"]\n",
            vec![
                (4, 8, escape("../x")),
                (
                    5,
                    12,
                    is(SpecErrorKind::BadGlob {
                        glob: "k/[a".into(),
                        reason: "unclosed character class; missing ']'".into(),
                    }),
                ),
            ],
        ),
        // --- pages ---------------------------------------------------------
        toml(
            "unknown key in [[page]]",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"serve\"\nrun = \"x\"\n[[page]]\nid = \"home\"\nurl = \"http://127.0.0.1:8080/\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\nwidth = 800\n",
            vec![(11, 1, unknown("width"))],
        ),
        toml(
            "page without url",
            "[spec]\nid = \"s\"\n[[page]]\nid = \"home\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\n",
            vec![(3, 1, missing("url"))],
        ),
        toml(
            "page off the workspace's server, unknown after, bad glob",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"serve\"\nrun = \"x\"\n[[page]]\nid = \"home\"\nurl = \"https://example.com/\"\nfiles = [\"web/[a\", \"../x\"]\nafter = [\"server\"]\n",
            vec![
                (
                    8,
                    7,
                    is(SpecErrorKind::PageUrl("https://example.com/".into())),
                ),
                (
                    9,
                    10,
                    is(SpecErrorKind::BadGlob {
                        glob: "web/[a".into(),
                        reason: "unclosed character class; missing ']'".into(),
                    }),
                ),
                (9, 20, escape("../x")),
                (10, 10, no_check("server")),
            ],
        ),
        toml(
            "page ids share the namespace; empty files and after",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"home\"\nrun = \"x\"\n[[page]]\nid = \"home\"\nurl = \"http://localhost:3000\"\nfiles = []\nafter = []\n[[page]]\nid = \"builtin.x\"\nurl = \"http://localhost:3000\"\nfiles = [\"a\"]\nafter = [\"home\"]\n",
            vec![
                (7, 6, dup("home")),
                (
                    9,
                    9,
                    is(SpecErrorKind::PageNeeds {
                        page: "home".into(),
                        key: "files",
                        hint: "give the globs whose change makes the page worth looking at",
                    }),
                ),
                (
                    10,
                    9,
                    is(SpecErrorKind::PageNeeds {
                        page: "home".into(),
                        key: "after",
                        hint: "name the check that starts the page's server",
                    }),
                ),
                (12, 6, is(SpecErrorKind::ReservedId("builtin.x".into()))),
            ],
        ),
        toml(
            "page headers and cookies name environment variables",
            "[spec]\nid = \"s\"\n[[check]]\nid = \"serve\"\nrun = \"x\"\n[[page]]\nid = \"home\"\nurl = \"http://[::1]:8080/\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\ntimeout_s = 0\nheaders = { Authorization = \"Bearer abc\", \"X Y\" = \"OK_VAR\" }\ncookies = { session = \"APP_SESSION\", sid = \"1SID\" }\n",
            vec![
                (11, 13, range("timeout_s", "must be at least 1")),
                (
                    12,
                    29,
                    is(SpecErrorKind::BadEnvName {
                        key: "headers.Authorization".into(),
                        name: "Bearer abc".into(),
                    }),
                ),
                (
                    12,
                    43,
                    is(SpecErrorKind::BadName {
                        table: "headers",
                        name: "X Y".into(),
                        what: "header",
                    }),
                ),
                (
                    13,
                    44,
                    is(SpecErrorKind::BadEnvName {
                        key: "cookies.sid".into(),
                        name: "1SID".into(),
                    }),
                ),
            ],
        ),
        json(
            "json page on a remote host",
            "{\"spec\": {\"id\": \"s\"}, \"check\": [{\"id\": \"serve\", \"run\": \"x\"}],\n \"page\": [{\"id\": \"p\", \"url\": \"http://10.0.0.1/\", \"files\": [\"a\"], \"after\": [\"serve\"]}]}",
            vec![(2, 30, is(SpecErrorKind::PageUrl("http://10.0.0.1/".into())))],
        ),
        // --- every problem, in file order --------------------------------
        toml(
            "all problems are kept and sorted",
            "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\nafter = [\"ghost\"]\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\n[[check]]\nid = \"c\"\nrun = \"y\"\nafter = [\"c\"]\n[policy]\nmin_coverage = 2.0\n",
            vec![
                (5, 10, no_task("ghost")),
                (6, 1, is(SpecErrorKind::NoDecider("c".into()))),
                (10, 6, dup("c")),
                (10, 6, cycle("check", &["c", "c"])),
                (
                    14,
                    16,
                    range("min_coverage", "must be between 0 and 1, not 2"),
                ),
            ],
        ),
        // --- JSON --------------------------------------------------------
        json(
            "json trailing comma",
            "{\"spec\": {\"id\": \"s\",}}",
            vec![(1, 21, Want::Syntax("trailing comma"))],
        ),
        json(
            "json cut short",
            "{\"spec\": {\"id\": \"s\"}",
            vec![(1, 20, Want::Syntax("EOF"))],
        ),
        json("json empty", "", vec![(1, 1, Want::Syntax("EOF"))]),
        json(
            "json repeated key",
            "{\"spec\": {\"id\": \"s\",\n  \"id\": \"t\"}}",
            vec![(2, 3, Want::Syntax("duplicate key `id`"))],
        ),
        json(
            "json check as an object",
            "{\"spec\": {\"id\": \"s\"},\n \"check\":   {\"id\": \"a\"}}",
            vec![(
                2,
                13,
                Want::Syntax("`check`: invalid type: map, expected an array"),
            )],
        ),
        json(
            "json negative timeout",
            "{\"spec\": {\"id\": \"s\"}, \"policy\": {\"role_timeout_s\": {\"docs\": -1}}}",
            vec![(
                1,
                61,
                Want::Syntax("`policy.role_timeout_s.docs`: invalid value: integer `-1`"),
            )],
        ),
        json(
            "json unknown key in spec",
            "{\n  \"spec\": {\"id\": \"s\", \"owner\": \"me\"}\n}",
            vec![(2, 23, unknown("owner"))],
        ),
        json(
            "json unknown key in starts",
            "{\"spec\": {\"id\": \"s\"},\n \"check\": [{\"id\": \"a\", \"run\": \"b\",\n   \"starts\": {\"wïthin\": 1}}]}",
            vec![(3, 15, unknown("wïthin"))],
        ),
        json(
            "json missing spec.id",
            "{\n  \"spec\": {\n    \"summary\": \"x\"\n  }\n}",
            vec![(2, 11, missing("id"))],
        ),
        json(
            "json timeout as a string",
            "{\"spec\": {\"id\": \"s\"},\n \"check\": [{\"id\": \"a\", \"run\": \"b\", \"timeout_s\": \"ten\"}]}",
            vec![(
                2,
                49,
                Want::Syntax("`check[0].timeout_s`: invalid type: string \"ten\""),
            )],
        ),
        json(
            "json duplicate ids and a cycle",
            "{\"spec\": {\"id\": \"s\"},\n \"check\": [\n  {\"id\": \"a\", \"run\": \"x\", \"after\": [\"b\"]},\n  {\"id\": \"b\", \"run\": \"y\", \"after\": [\"a\"]},\n  {\"id\": \"a\", \"run\": \"z\"}\n ]}",
            vec![(3, 10, cycle("check", &["a", "b", "a"])), (5, 10, dup("a"))],
        ),
        json(
            "json path escape and unknown after",
            "{\"spec\": {\"id\": \"s\"},\n \"task\": [{\"id\": \"t\", \"paths\": [\"src/**\", \"../x\"],\n  \"criterion\": [{\"id\": \"c\", \"text\": \"x\", \"judge\": \"model\", \"after\": [\"nope\"]}]}]}",
            vec![(2, 43, escape("../x")), (3, 70, no_check("nope"))],
        ),
    ]
}

/// A kind without its "did you mean" (the cases above are about places;
/// suggestions have a test of their own).
fn plain(kind: &SpecErrorKind) -> SpecErrorKind {
    match kind.clone() {
        SpecErrorKind::UnknownKey { key, .. } => SpecErrorKind::UnknownKey {
            key,
            suggestion: None,
        },
        SpecErrorKind::UnknownAfter { name, expected, .. } => SpecErrorKind::UnknownAfter {
            name,
            expected,
            suggestion: None,
        },
        SpecErrorKind::UnknownRole { role, .. } => SpecErrorKind::UnknownRole {
            role,
            suggestion: None,
        },
        other => other,
    }
}

/// Three typos, reported in one run, each with what it was meant to be,
/// in file order; the rest of the file still validated.
#[test]
fn every_problem_of_a_file_at_once() {
    let text = r#"[spec]
id = "s"
sumary = "typo one"

[[check]]
id = "build"
run = "make"

[[task]]
id = "likes"
tittle = "typo two"
tests = "pytest tests/test_likes.py"

[[task.criterion]]
id = "likes-e2e"
txt = "liking twice counts once"
run = "./e2e.sh"
after = ["biuld"]
"#;
    let errors = parse_str(text, Path::new("gate.toml"), Format::Toml).unwrap_err();
    let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        got,
        [
            "gate.toml:3:1: unknown key `sumary`; did you mean `summary`?",
            "gate.toml:11:1: unknown key `tittle`; did you mean `title`?",
            "gate.toml:12:9: `task[0].tests`: invalid type: string \"pytest tests/test_likes.py\", \
             expected a table; write `tests = { run = \"pytest tests/test_likes.py\" }` (or \
             `{ report = \"reports/junit.xml\" }`)",
            "gate.toml:16:1: unknown key `txt`; did you mean `text`?",
            "gate.toml:18:10: `after` names `biuld`, which is not a check; did you mean `build`?",
        ],
        "{errors}"
    );
}

/// The same in a JSON spec, and a cap on how many are shown.
#[test]
fn json_problems_at_once_and_a_cap() {
    let text = "{\"spec\": {\"id\": \"s\", \"sumary\": \"x\"},\n \"task\": [{\"id\": \"t\", \"afer\": [\"a\"], \"tests\": \"make test\"}]}";
    let errors = parse_str(text, Path::new("gate.json"), Format::Json).unwrap_err();
    let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(got.len(), 3, "{errors}");
    assert!(got[0].contains("did you mean `summary`"), "{errors}");
    assert!(got[1].contains("did you mean `after`"), "{errors}");
    assert!(
        got[2].contains("\"tests\": {\"run\": \"make test\"}"),
        "{errors}"
    );

    let many: Vec<String> = (0..30).map(|i| format!("bogus{i} = 1")).collect();
    let many = many.join("\n");
    let text = format!("[spec]\nid = \"s\"\n{many}\n");
    let errors = parse_str(&text, Path::new("gate.toml"), Format::Toml).unwrap_err();
    let got: Vec<&gate_specs::SpecError> = errors.iter().collect();
    assert_eq!(got.len(), gate_specs::MAX_ERRORS + 1);
    assert_eq!(got[0].line, 3, "in file order");
    assert_eq!(
        got.last().unwrap().kind,
        SpecErrorKind::More(30 - gate_specs::MAX_ERRORS)
    );
}

#[test]
fn invalid_specs() {
    let cases = cases();
    assert!(cases.len() >= 30);
    assert!(cases.iter().filter(|c| c.format == Format::Json).count() >= 5);
    let mut failures = Vec::new();
    for case in &cases {
        let file = match case.format {
            Format::Toml => Path::new("gate.toml"),
            Format::Json => Path::new("gate.json"),
        };
        let Err(errors) = parse_str(case.text, file, case.format) else {
            failures.push(format!("{}: parsed, but should not", case.name));
            continue;
        };
        let got: Vec<_> = errors.iter().collect();
        let fits = got.len() == case.want.len()
            && got.iter().zip(&case.want).all(|(e, (line, column, want))| {
                e.file == file
                    && e.line == *line
                    && e.column == *column
                    && match want {
                        Want::Is(kind) => plain(&e.kind) == *kind,
                        Want::Syntax(part) => {
                            matches!(&e.kind, SpecErrorKind::Syntax(m) if m.contains(part))
                        }
                    }
            });
        if !fits {
            failures.push(format!(
                "{}:\n  got:  {:?}\n  want: {:?}",
                case.name,
                got.iter()
                    .map(|e| (e.line, e.column, &e.kind))
                    .collect::<Vec<_>>(),
                case.want
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn messages_name_file_line_and_column() {
    let text = "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"x\"\nafter = [\"a\"]\n";
    let errors = parse_str(text, Path::new("specs/gate.toml"), Format::Toml).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "specs/gate.toml:4:6: check graph has a cycle: a -> a"
    );
}

#[test]
fn unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.toml");
    let errors = gate_specs::load(&path).unwrap_err();
    let e = errors.iter().next().unwrap();
    assert_eq!((e.line, e.column), (0, 0));
    assert!(matches!(e.kind, SpecErrorKind::Read(_)));
    assert_eq!(e.file, path);
    // A problem with the whole file has no line and column to show.
    assert!(
        errors
            .to_string()
            .starts_with(&format!("{}: cannot read the spec: ", path.display())),
        "{errors}"
    );
}

#[test]
fn nesting_past_the_parsers_limit_is_the_whole_files_error() {
    // toml stops a dotted key past its depth limit without saying where.
    let dotted = format!(
        "[spec]\nid = \"s\"\n[policy]\n{} = 1\n",
        ["a"; 200].join(".")
    );
    let errors = parse_str(&dotted, Path::new("gate.toml"), Format::Toml).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "gate.toml: keys or values nested deeper than the TOML parser allows"
    );
}

#[test]
fn bytes_that_are_not_utf8_are_placed_not_replaced() {
    // (what, file bytes, line, column in characters, the first bad byte)
    let cases: [(&str, Vec<u8>, usize, usize, u8); 4] = [
        (
            "Latin-1 in a value",
            b"[spec]\nid = \"a\"\nsummary = \"caf\xe9\"\n".to_vec(),
            3,
            15,
            0xE9,
        ),
        (
            "after multi-byte characters on the same line",
            [
                "[spec]\nsummary = \"\u{221a}\u{e9}\u{1F600}".as_bytes(),
                b"\xff",
            ]
            .concat(),
            2,
            15,
            0xFF,
        ),
        (
            "a lone continuation byte first",
            b"\x80[spec]\n".to_vec(),
            1,
            1,
            0x80,
        ),
        (
            "a sequence cut off at the end",
            b"[spec]\r\nid = \"\xe2\x82".to_vec(),
            2,
            7,
            0xE2,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, bytes, line, column, byte) in cases {
        let path = dir.path().join("gate.toml");
        std::fs::write(&path, &bytes).unwrap();
        let errors = gate_specs::load(&path).unwrap_err();
        let e = errors.iter().next().unwrap();
        assert_eq!(
            (e.line, e.column, &e.kind),
            (line, column, &SpecErrorKind::NotUtf8 { byte }),
            "{what}"
        );
        assert_eq!(
            errors.to_string(),
            format!(
                "{}:{line}:{column}: not UTF-8 (byte 0x{byte:02X}): TOML and JSON files must be UTF-8 text",
                path.display()
            ),
            "{what}"
        );
    }
}

#[test]
fn a_byte_order_mark_is_ignored_and_positions_skip_it() {
    // (file, text after the mark, Ok or the error's line:column)
    let cases: [(&str, &str, Result<(), &str>); 4] = [
        ("gate.toml", "[spec]\nid = \"a\"\n", Ok(())),
        ("gate.json", "{\"spec\": {\"id\": \"a\"}}", Ok(())),
        ("gate.json", "{\"spec\": {\"id\": }}", Err("1:17")),
        (
            "gate.toml",
            "[spec]\nid = \"a\"\nsummary = \"caf\u{e9}\n",
            Err("3:16"),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, text, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, [&b"\xEF\xBB\xBF"[..], text.as_bytes()].concat()).unwrap();
        let got = gate_specs::load(&path)
            .map(|_| ())
            .map_err(|e| e.to_string());
        match (got, want) {
            (Ok(()), Ok(())) => {}
            (Err(e), Err(at)) => {
                let place = format!("{}:{at}:", path.display());
                assert!(e.starts_with(&place), "{name} {text:?}: {e}");
            }
            (got, want) => panic!("{name} {text:?}: got {got:?}, want {want:?}"),
        }
    }
}
