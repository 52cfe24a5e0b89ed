//! A package installer's launch script: what pip, uv and distlib write
//! into a virtual environment's `bin/` for a console entry point
//! (`.venv/bin/pytest`). Its body can only import one name and call it, so
//! it runs nothing of its own; the interpreter on its first line is what
//! must be vouched for.
//!
//! The shapes are matched line by line, not by an exact template: the
//! installers differ in quotes and in how they trim `argv[0]`, and a line
//! outside the known ones (anything that could act) makes the file an
//! ordinary script.

use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;

/// The interpreter a launch script names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Launch {
    /// An absolute path (`#!/work/.venv/bin/python3`).
    Path(PathBuf),
    /// A name `env` finds on `PATH` (`#!/usr/bin/env python3`).
    Name(String),
}

/// The lines a launch script's body may hold, besides comments and blank
/// lines. Anything else is not a launch script.
static BODY: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^import (re|sys)$",
        r"^from [A-Za-z_][\w.]* import [A-Za-z_]\w*$",
        r#"^if __name__ == ('__main__'|"__main__"):$"#,
        r#"^\s+sys\.argv\[0\] = re\.sub\(r('\(-script\\\.pyw\|\\\.exe\)\?\$'|"\(-script\\\.pyw\|\\\.exe\)\?\$"), (''|""), sys\.argv\[0\]\)$"#,
        r#"^\s+(if|elif) sys\.argv\[0\]\.endswith\(("-script\.pyw"|'-script\.pyw'|"\.exe"|'\.exe')\):$"#,
        r"^\s+sys\.argv\[0\] = sys\.argv\[0\]\[:-(11|4)\]$",
        r"^\s+sys\.exit\([A-Za-z_]\w*(\.[A-Za-z_]\w*)*\(\)\)$",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// distlib's form for an interpreter path too long for a `#!` line:
/// `/bin/sh` re-runs the file with it.
static TRAMPOLINE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"^'''exec' "(/[^"]+)" "\$0" "\$@"$"#).ok());

/// The interpreter `script` launches, when `script` is a launch script.
pub(super) fn launched_by(script: &[u8]) -> Option<Launch> {
    let text = std::str::from_utf8(script).ok()?;
    let mut lines = text.lines();
    let shebang = lines.next()?.strip_prefix("#!")?.trim();
    let mut launch = shebang_launch(shebang)?;
    let mut body: Vec<&str> = lines.collect();
    if shebang == "/bin/sh" {
        let exec = TRAMPOLINE.as_ref()?.captures(body.first()?)?;
        launch = Launch::Path(PathBuf::from(exec.get(1)?.as_str()));
        if body.get(1) != Some(&"' '''") {
            return None;
        }
        body.drain(..2);
    }
    let mut calls = 0;
    for line in body {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !BODY.iter().any(|r| r.is_match(line)) {
            return None;
        }
        calls += usize::from(trimmed.starts_with("sys.exit("));
    }
    (calls == 1).then_some(launch)
}

/// What a `#!` line names: a path, or `env` and a name.
fn shebang_launch(shebang: &str) -> Option<Launch> {
    let mut words = shebang.split_whitespace();
    let program = words.next()?;
    if !program.starts_with('/') {
        return None;
    }
    let rest: Vec<&str> = words.collect();
    // Only the system's own `env`: one elsewhere is a program of its own.
    if program == "/usr/bin/env" || program == "/bin/env" {
        return match rest.as_slice() {
            [name] if !name.starts_with('-') && !name.contains('/') => {
                Some(Launch::Name((*name).to_owned()))
            }
            _ => None,
        };
    }
    // `python -E`-style flags change nothing a launcher runs; `-c` or
    // `-m` would.
    rest.iter()
        .all(|w| w.len() > 1 && w.starts_with('-') && w[1..].chars().all(|c| "EsIuBS".contains(c)))
        .then(|| Launch::Path(PathBuf::from(program)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIP: &str = "#!/w/.venv/bin/python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n\
        from pytest import console_main\nif __name__ == \"__main__\":\n    \
        sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    \
        sys.exit(console_main())\n";

    const DISTLIB: &str = "#!/w/.venv/bin/python\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n\
        from flake8.main.cli import main\nif __name__ == '__main__':\n    \
        sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    \
        sys.exit(main())\n";

    const UV: &str = "#!/w/.venv/bin/python\n# -*- coding: utf-8 -*-\nimport sys\n\
        from pytest import console_main\nif __name__ == \"__main__\":\n    \
        if sys.argv[0].endswith(\"-script.pyw\"):\n        sys.argv[0] = sys.argv[0][:-11]\n    \
        elif sys.argv[0].endswith(\".exe\"):\n        sys.argv[0] = sys.argv[0][:-4]\n    \
        sys.exit(console_main())\n";

    const LONG: &str = "#!/bin/sh\n'''exec' \"/very/long/.venv/bin/python3\" \"$0\" \"$@\"\n' '''\n\
        # -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom pytest import console_main\n\
        if __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    \
        sys.exit(console_main())\n";

    #[test]
    fn launch_scripts_are_told_from_scripts() {
        let path = |p: &str| Some(Launch::Path(PathBuf::from(p)));
        let cases: &[(&str, String, Option<Launch>)] = &[
            ("pip", PIP.to_owned(), path("/w/.venv/bin/python3")),
            ("distlib", DISTLIB.to_owned(), path("/w/.venv/bin/python")),
            ("uv", UV.to_owned(), path("/w/.venv/bin/python")),
            (
                "long path",
                LONG.to_owned(),
                path("/very/long/.venv/bin/python3"),
            ),
            (
                "env",
                PIP.replacen("/w/.venv/bin/python3", "/usr/bin/env python3", 1),
                Some(Launch::Name("python3".into())),
            ),
            ("a shell script", "#!/bin/sh\nexit 0\n".into(), None),
            (
                "no shebang",
                PIP.replacen("#!/w/.venv/bin/python3\n", "", 1),
                None,
            ),
            (
                "an extra statement",
                PIP.replacen("import sys\n", "import sys\nimport os; os._exit(0)\n", 1),
                None,
            ),
            (
                "a call with arguments",
                PIP.replacen("console_main())", "console_main(0))", 1),
                None,
            ),
            (
                "two calls",
                PIP.replacen("    sys.exit(", "    sys.exit(exit())\n    sys.exit(", 1),
                None,
            ),
            (
                "no call",
                PIP.replacen("    sys.exit(console_main())\n", "", 1),
                None,
            ),
            (
                "a relative interpreter",
                PIP.replacen("/w/.venv/bin/python3", "python3", 1),
                None,
            ),
            (
                "env with a flag",
                PIP.replacen("/w/.venv/bin/python3", "/usr/bin/env -S sh -c 'exit 0'", 1),
                None,
            ),
            (
                "a flag",
                PIP.replacen("python3\n", "python3 -I\n", 1),
                path("/w/.venv/bin/python3"),
            ),
            (
                "a command flag",
                PIP.replacen("python3\n", "python3 -c\n", 1),
                None,
            ),
            (
                "an env of the workspace",
                PIP.replacen("/w/.venv/bin/python3", "/w/.venv/bin/env python3", 1),
                None,
            ),
            (
                "a trampoline to a shell command",
                LONG.replacen("\"$0\" \"$@\"", "-c 'exit 0'", 1),
                None,
            ),
        ];
        for (name, script, want) in cases {
            assert_eq!(&launched_by(script.as_bytes()), want, "{name}");
        }
    }
}
