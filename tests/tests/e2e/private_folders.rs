//! Items see the private `/tmp`, `/var/tmp` and `HOME` of others only along
//! `after`: a check relays a data file through them, and a criterion sees
//! the copies only when it runs after that check; two criteria after one
//! check and one service each start from a copy of the check's and reach
//! the service's socket, and never see what the other wrote. As root (the
//! eBPF tracer) and as an unprivileged user (`strace`).

use std::path::Path;

use gate_tests::{TestEnv, item, status_of};
use serde_json::Value;

use super::sandbox::{As, gate_as};

/// The relay: `relay` copies the data file into `/tmp`, `/var/tmp` and the
/// home, then leaves a mark in the workspace (which every item shares);
/// `reads`, `after` what `after` names, waits for the mark, then says which
/// copy it saw holding `ok` and fails unless it saw all three; `other`
/// keeps a series going when it fails.
fn relay_spec(after: &str) -> String {
    format!(
        r#"
[spec]
id = "relay"
[policy]
builtin_parse = false
[sandbox]
mode = "required"
[[check]]
id = "relay"
run = 'for d in /tmp /var/tmp "$HOME"; do cp data/value.txt "$d/relay.txt" || exit 1; done; touch relayed'
[[task]]
id = "t"
paths = ["data/**"]
[[task.criterion]]
id = "reads"
text = "the relayed value holds"
run = '''for i in $(seq 300); do [ -e relayed ] && break; sleep 0.1; done; fail=0; for f in /tmp/relay.txt /var/tmp/relay.txt "$HOME/relay.txt"; do if [ "$(cat "$f" 2>/dev/null)" = ok ]; then echo "saw $f"; else echo "no $f"; fail=1; fi; done; exit $fail'''
after = [{after}]
[[task.criterion]]
id = "other"
text = "other holds"
run = "grep -qx yes data/other.txt"
"#
    )
}

/// One workspace with the relay spec, run as `who`.
struct Relay {
    env: TestEnv,
    who: As,
    outside: tempfile::TempDir,
    bin_dir: tempfile::TempDir,
}

impl Relay {
    fn new(who: As, after: &str) -> Self {
        Self::with_spec(who, &relay_spec(after))
    }

    fn with_spec(who: As, spec: &str) -> Self {
        let env = TestEnv::new();
        env.write("gate.toml", spec);
        env.write("data/value.txt", "ok\n");
        env.write("data/other.txt", "yes\n");
        // Outside /tmp, which the sandbox replaces: the state and a home
        // the gate's user owns.
        let outside = tempfile::Builder::new()
            .prefix("gate-relay-")
            .tempdir_in("/var/tmp")
            .unwrap();
        std::fs::create_dir_all(outside.path().join("home")).unwrap();
        Self {
            env,
            who,
            outside,
            bin_dir: tempfile::tempdir().unwrap(),
        }
    }

    /// `gate verify --format json` with `args`; its exit code and document.
    fn verify(&self, args: &[&str]) -> (Option<i32>, Value) {
        let owned: [&Path; 2] = [self.env.path(), self.outside.path()];
        let run = || {
            gate_as(self.who, self.bin_dir.path(), &owned)
                .args(["verify", "--offline", "--format", "json"])
                .args(args)
                .current_dir(self.env.path())
                .env("HOME", self.outside.path().join("home"))
                .env("GATE_STATE_DIR", self.outside.path().join("state"))
                .output()
                .unwrap()
        };
        let mut out = run();
        // The copy of the binary `nobody` runs may still be open for
        // writing in a child another test thread forked meanwhile.
        for _ in 0..5 {
            if !String::from_utf8_lossy(&out.stderr).contains("Text file busy") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            out = run();
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "{:?}: not JSON ({e}):\n{stdout}\n{}",
                self.who,
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(doc["isolation"]["kind"], "bwrap", "{:?}: {doc:#}", self.who);
        let tracer = match self.who {
            As::Root if ebpf_runs() => "ebpf",
            As::Root | As::Nobody => "strace",
        };
        assert_eq!(doc["isolation"]["tracer"], tracer, "{:?}", self.who);
        (out.status.code(), doc)
    }
}

/// What `reads` said it saw.
fn said(doc: &Value) -> String {
    item(doc, "reads").map_or_else(String::new, |r| {
        r["output_tail"].as_str().unwrap_or_default().to_owned()
    })
}

/// What `reads` says when it saw none of the copies holding `ok`.
fn nothing(relay: &Relay) -> String {
    let home = relay.outside.path().join("home/relay.txt");
    format!(
        "no /tmp/relay.txt\nno /var/tmp/relay.txt\nno {}\n",
        home.display()
    )
}

/// Whether the eBPF tracer runs here: root, `clang`, a kernel with BTF.
fn ebpf_runs() -> bool {
    nix::unistd::geteuid().is_root()
        && Path::new("/usr/bin/clang").is_file()
        && Path::new("/sys/kernel/btf/vmlinux").is_file()
}

/// Who the gate runs as here: root and `nobody` when the tests run as
/// root, else the tests' own user (`As::Root` runs the gate as it is).
fn runners() -> Vec<As> {
    if nix::unistd::geteuid().is_root() {
        vec![As::Root, As::Nobody]
    } else {
        vec![As::Root]
    }
}

/// A criterion nothing orders after the check never sees what the check
/// left in `/tmp`, `/var/tmp` or `HOME`: it fails on the first attempt and
/// under `--full`, and a retry that changes the data file cannot carry it.
#[test]
fn an_item_not_after_a_check_never_sees_its_tmp_or_home() {
    for who in runners() {
        let relay = Relay::new(who, "");
        let (code, doc) = relay.verify(&[]);
        assert_eq!(code, Some(1), "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "relay"), "passed", "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "reads"), "failed", "{who:?}: {doc:#}");
        assert!(
            said(&doc).starts_with(&nothing(&relay)),
            "{who:?}: {}",
            said(&doc)
        );

        // Attempt 2 changes the data file: the check runs again, and the
        // criterion is not carried.
        relay.env.write("data/value.txt", "changed\n");
        let (code, doc) = relay.verify(&[]);
        assert_eq!(code, Some(1), "{who:?}: {doc:#}");
        assert_eq!(doc["attempt"], 2, "{who:?}");
        assert_eq!(status_of(&doc, "relay"), "passed", "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "reads"), "failed", "{who:?}: {doc:#}");

        // Everything run from scratch: the same.
        let relay = Relay::new(who, "");
        let (code, doc) = relay.verify(&["--full"]);
        assert_eq!(code, Some(1), "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "reads"), "failed", "{who:?}: {doc:#}");
        assert!(
            said(&doc).starts_with(&nothing(&relay)),
            "{who:?}: {}",
            said(&doc)
        );
    }
}

/// A criterion `after` the check sees what the check left in `/tmp`,
/// `/var/tmp` and `HOME`, and what it read there decides its result.
#[test]
fn an_item_after_a_check_sees_its_tmp_and_home() {
    for who in runners() {
        let relay = Relay::new(who, "\"relay\"");
        let (code, doc) = relay.verify(&[]);
        assert_eq!(code, Some(0), "{who:?}: {doc:#}");
        // It passes only when it saw all three copies hold `ok`.
        assert_eq!(status_of(&doc, "reads"), "passed", "{who:?}: {doc:#}");
        let home = relay.outside.path().join("home/relay.txt");
        // Nothing of the items' is left in the gate's user's own home.
        assert!(!home.exists(), "{who:?}: the home's copy is the host's");

        // The relayed value decides: a changed data file fails it.
        relay.env.write("data/value.txt", "changed\n");
        let (code, doc) = relay.verify(&["--full"]);
        assert_eq!(code, Some(1), "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "reads"), "failed", "{who:?}: {doc:#}");
        assert!(
            said(&doc).starts_with(&nothing(&relay)),
            "{who:?}: {}",
            said(&doc)
        );
        assert_eq!(status_of(&doc, "relay"), "passed", "{who:?}: {doc:#}");

        // A retry that changes the data file runs the check again, and
        // the criterion after it is not carried past the change.
        let relay = Relay::new(who, "\"relay\"");
        relay.env.write("data/other.txt", "no\n");
        let (code, doc) = relay.verify(&[]);
        assert_eq!(code, Some(1), "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "reads"), "passed", "{who:?}: {doc:#}");
        relay.env.write("data/other.txt", "yes\n");
        relay.env.write("data/value.txt", "changed\n");
        let (code, doc) = relay.verify(&[]);
        assert_eq!(code, Some(1), "{who:?}: {doc:#}");
        assert_eq!(doc["attempt"], 2, "{who:?}");
        assert_eq!(status_of(&doc, "relay"), "passed", "{who:?}: {doc:#}");
        assert_eq!(status_of(&doc, "reads"), "failed", "{who:?}: {doc:#}");
    }
}

/// A build check, a service listening on a socket in its `/tmp`, and two
/// criteria after both: each finds the check's artefacts and reaches the
/// service, and what the first plants in its `/tmp` and home (a
/// `usercustomize.py` would do) the second never sees, though it waits
/// until the first has planted it.
const SIBLINGS: &str = r#"
[spec]
id = "siblings"
[policy]
builtin_parse = false
[sandbox]
mode = "required"
[[check]]
id = "build"
run = 'echo built > /tmp/artefact && mkdir -p "$HOME/.cache" && echo cached > "$HOME/.cache/entry"'
[[check]]
id = "db"
run = '''exec python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
s.bind('/tmp/db.sock')
s.listen(8)
print('listening', flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b'pong')
    c.close()
"'''
starts = { within_s = 20, ready_log = "listening" }
[[task]]
id = "t"
paths = ["data/**"]
[[task.criterion]]
id = "plants"
text = "it reaches the build and the service, and plants"
run = '''test "$(cat /tmp/artefact)" = built && test "$(cat "$HOME/.cache/entry")" = cached && python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/tmp/db.sock'); assert s.recv(4) == b'pong'" && echo planted > /tmp/planted && echo planted > "$HOME/.cache/planted" && echo planted >> /tmp/artefact && touch planted-mark'''
after = ["build", "db"]
[[task.criterion]]
id = "sibling"
text = "it reaches the build and the service, and nothing its sibling planted"
run = '''for i in $(seq 100); do [ -e planted-mark ] && break; sleep 0.1; done; test -e planted-mark || { echo "no mark"; exit 1; }; test "$(cat /tmp/artefact)" = built && test "$(cat "$HOME/.cache/entry")" = cached && python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/tmp/db.sock'); assert s.recv(4) == b'pong'" && for f in /tmp/planted "$HOME/.cache/planted"; do if [ -e "$f" ]; then echo "saw $f"; exit 1; fi; done'''
after = ["build", "db"]
"#;

#[test]
fn items_after_one_check_each_start_from_a_copy_of_its_folders() {
    for who in runners() {
        let run = Relay::with_spec(who, SIBLINGS);
        let (code, doc) = run.verify(&[]);
        for id in ["build", "db", "plants", "sibling"] {
            assert_eq!(status_of(&doc, id), "passed", "{who:?} {id}: {doc:#}");
        }
        assert_eq!(code, Some(0), "{who:?}: {doc:#}");
    }
}

/// On the base as on the change: a criterion after a check sees the `/tmp`
/// the check left in the base run's first stage, one after nothing does
/// not. Both are pass-to-pass, so both run on the base, and each passes
/// there only if its folders are as on the change.
#[test]
fn a_base_runs_items_see_tmp_along_after_across_its_stages() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "relay-base"
[policy]
builtin_parse = false
[[check]]
id = "relay"
run = "cp src/value.txt /tmp/relay.txt"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "relayed"
text = "the check's copy is there"
run = "test -s /tmp/relay.txt"
after = ["relay"]
expect = "pass-to-pass"
[[task.criterion]]
id = "unrelayed"
text = "no copy of a check's is there"
run = "test ! -e /tmp/relay.txt"
expect = "pass-to-pass"
"#,
    );
    env.write(".gitignore", ".gate/\n");
    env.write("src/value.txt", "old\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write("src/value.txt", "new\n");
    let out = env
        .gate(&["verify", "--base", "main", "--offline", "--format", "json"])
        .run();
    let doc = out.json();
    assert_eq!(doc["isolation"]["kind"], "bwrap", "{doc:#}");
    for id in ["relayed", "unrelayed"] {
        let c = item(&doc, id).unwrap();
        assert_eq!(c["status"], "passed", "{id}: {c:#}");
        assert_eq!(c["base_status"]["status"], "passed", "{id}: {c:#}");
    }
    out.assert_exit(0);
}
