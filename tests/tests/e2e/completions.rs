//! `gate completions SHELL` and `gate man`: generated from the command
//! line, loaded by the real shells, every command in them and no hidden one.

use std::path::Path;
use std::process::Command;

use gate_tests::TestEnv;

/// The commands `gate … --help` lists (the `help` pseudo-command aside),
/// each as its path of words, nested ones included.
fn commands(ws: &TestEnv, path: &[String]) -> Vec<Vec<String>> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let out = ws.gate(&args).run();
    out.assert_exit(0);
    let mut found = Vec::new();
    let mut inside = false;
    for line in out.stdout.lines() {
        if line.starts_with("Commands:") {
            inside = true;
            continue;
        }
        if inside && !line.starts_with("  ") {
            break;
        }
        // A command's line starts with two spaces and its name; wrapped
        // descriptions are indented further.
        if inside && !line.starts_with("   ") {
            let name = line.split_whitespace().next().unwrap_or_default();
            if !name.is_empty() && name != "help" {
                let mut sub = path.to_vec();
                sub.push(name.to_owned());
                found.push(sub.clone());
                found.extend(commands(ws, &sub));
            }
        }
    }
    found
}

/// Whether `tool` runs here.
fn present(tool: &str) -> bool {
    #[allow(clippy::disallowed_methods)] // only asks for the tool's version
    let ran = Command::new(tool).arg("--version").output();
    ran.is_ok()
}

/// Whether the suite must have a tool (in CI, which installs it).
fn required_in_ci(tool: &str) -> bool {
    let present = present(tool);
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        present || !ci,
        "{tool} is missing and CI is set: scripts/test installs it"
    );
    present
}

fn run(program: &str, args: &[&str], file: &Path) -> std::process::Output {
    #[allow(clippy::disallowed_methods)] // the real shells load the scripts
    Command::new(program)
        .args(args)
        .env("GATE_COMPLETION_FILE", file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

#[test]
fn every_shell_gets_every_command_and_its_script_loads() {
    let ws = TestEnv::new();
    let all = commands(&ws, &[]);
    let top: Vec<&str> = all
        .iter()
        .filter(|p| p.len() == 1)
        .map(|p| p[0].as_str())
        .collect();
    for expected in [
        "verify",
        "doctor",
        "completions",
        "man",
        "ledger",
        "evidence",
    ] {
        assert!(
            top.contains(&expected),
            "`gate --help` lists no {expected}: {top:?}"
        );
    }
    assert!(
        all.iter().any(|p| p == &["ledger", "verify"]),
        "nested commands are listed: {all:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = ws.gate(&["completions", shell]).run();
        out.assert_exit(0);
        let script = &out.stdout;
        for path in &all {
            let name = path.last().unwrap();
            assert!(
                script.contains(name.as_str()),
                "{shell}: no `{}`",
                path.join(" ")
            );
        }
        assert!(
            !script.contains("sandbox-helper"),
            "{shell}: the hidden helper command is offered"
        );
        let file = dir.path().join(format!("gate.{shell}"));
        std::fs::write(&file, script).unwrap();
        let file_arg = file.to_str().unwrap();
        match shell {
            "bash" => {
                let out = run("bash", &["-n", file_arg], &file);
                assert!(out.status.success(), "bash -n: {out:?}");
                // Loaded for real: the function is defined and registered.
                let out = run(
                    "bash",
                    &["-c", "source \"$GATE_COMPLETION_FILE\" && complete -p gate"],
                    &file,
                );
                assert!(out.status.success(), "bash cannot load it: {out:?}");
                let registered = String::from_utf8_lossy(&out.stdout);
                assert!(
                    registered.contains("-F _gate") && registered.trim_end().ends_with(" gate"),
                    "{registered}"
                );
            }
            "zsh" if required_in_ci("zsh") => {
                let out = run("zsh", &["-n", file_arg], &file);
                assert!(out.status.success(), "zsh -n: {out:?}");
                let home = tempfile::tempdir().unwrap();
                let load = format!(
                    "autoload -Uz compinit && compinit -u -d {}/zcompdump && source \"$GATE_COMPLETION_FILE\" && (( $+functions[_gate] ))",
                    home.path().display()
                );
                let out = run("zsh", &["-f", "-c", &load], &file);
                assert!(out.status.success(), "zsh cannot load it: {out:?}");
            }
            "fish" if present("fish") => {
                let out = run("fish", &["--no-execute", file_arg], &file);
                assert!(out.status.success(), "fish --no-execute: {out:?}");
            }
            _ => {}
        }
    }
}

#[test]
fn the_man_pages_cover_every_command_and_render() {
    let ws = TestEnv::new();
    let all = commands(&ws, &[]);
    let out = ws.gate(&["man"]).run();
    out.assert_exit(0);
    assert!(out.stdout.contains(".TH gate 1"), "{}", out.stdout);
    for path in all.iter().filter(|p| p.len() == 1) {
        assert!(
            out.stdout
                .contains(&format!("gate\\-{}(1)", path[0].replace('-', "\\-"))),
            "gate(1) does not list {}",
            path[0]
        );
    }
    assert!(
        !out.stdout.contains("sandbox"),
        "gate(1) names the hidden helper"
    );
    let groff = present("groff");
    for path in &all {
        let mut args = vec!["man"];
        args.extend(path.iter().map(String::as_str));
        let out = ws.gate(&args).run();
        out.assert_exit(0);
        let title = format!(".TH gate-{} 1", path.join("-"));
        assert!(
            out.stdout.contains(&title),
            "{}: {}",
            path.join(" "),
            out.stdout
        );
        if groff {
            // Rendered by the real formatter, warnings on, none raised.
            let page = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(page.path(), &out.stdout).unwrap();
            #[allow(clippy::disallowed_methods)] // the real formatter renders the page
            let rendered = Command::new("groff")
                .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
                .arg(page.path())
                .output()
                .unwrap();
            assert!(
                rendered.status.success() && rendered.stderr.is_empty(),
                "groff on `gate man {}`: {}",
                path.join(" "),
                String::from_utf8_lossy(&rendered.stderr)
            );
        }
    }
    // Hidden or unknown: refused, with where to look.
    ws.gate(&["man", "sandbox-helper"])
        .run()
        .assert_exit(2)
        .stderr_has("not a command");
}
