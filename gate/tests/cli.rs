//! The binary's command-line manners; Cargo builds the binary for these
//! tests, which keeps `target/<profile>/gate` fresh for the end-to-end suite.

use std::process::Command;

fn gate(args: &[&str]) -> std::process::Output {
    #[allow(clippy::disallowed_methods)] // tests drive the real binary
    Command::new(env!("CARGO_BIN_EXE_gate"))
        .args(args)
        .output()
        .expect("run gate")
}

#[test]
fn exit_codes_of_the_command_line() {
    let cases: &[(&[&str], i32)] = &[
        (&["--help"], 0),
        (&["--version"], 0),
        (&["verify", "--help"], 0),
        (&[], 2),
        (&["no-such-command"], 2),
        (&["verify", "--format", "xml"], 2),
        (&["verify", "--workspace", "/no/such/dir"], 2),
    ];
    for (args, want) in cases {
        let out = gate(args);
        assert_eq!(out.status.code(), Some(*want), "gate {args:?}");
    }
}
