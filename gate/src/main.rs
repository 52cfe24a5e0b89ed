//! The `gate` binary: hands the command line to [`gate::run`].

fn main() -> std::process::ExitCode {
    gate::run(std::env::args_os())
}
