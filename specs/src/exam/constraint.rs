//! Go build constraints as `go test` evaluates them: the `//go:build` line
//! (or, without one, the `// +build` lines) of a file's header, the
//! `_GOOS`/`_GOARCH` suffixes of its name, and the `_`/`.` that make the
//! go command skip a file.
//!
//! A tag is true, false or not known from the command line (`cgo` when
//! `CGO_ENABLED` is not set there, a release tag newer than go.mod's `go`
//! line, a variable set through an expansion). A file is left out of a
//! build only when its constraint is false whatever the unknown tags are:
//! what the gate cannot tell stays in the exam.

use std::collections::BTreeSet;

/// The values `GOOS` takes (go/build's `knownOS`).
const KNOWN_OS: [&str; 18] = [
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];

/// The operating systems the `unix` tag covers (go/build's `unixOS`).
const UNIX_OS: [&str; 13] = [
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "linux",
    "netbsd",
    "openbsd",
    "solaris",
    "zos",
];

/// The values `GOARCH` takes (go/build's `knownArch`).
const KNOWN_ARCH: [&str; 24] = [
    "386",
    "amd64",
    "amd64p32",
    "arm",
    "armbe",
    "arm64",
    "arm64be",
    "loong64",
    "mips",
    "mipsle",
    "mips64",
    "mips64le",
    "mips64p32",
    "mips64p32le",
    "ppc",
    "ppc64",
    "ppc64le",
    "riscv",
    "riscv64",
    "s390",
    "s390x",
    "sparc",
    "sparc64",
    "wasm",
];

/// A value of three-valued logic: a tag or expression is true, false or
/// not known.
type Truth = Option<bool>;

/// What one `go test` command builds with.
#[derive(Debug, Clone)]
pub(super) struct Build {
    /// `GOOS`, `None` when not known.
    goos: Option<String>,
    /// `GOARCH`, `None` when not known.
    goarch: Option<String>,
    /// `CGO_ENABLED`'s value, `None` when the command does not set it.
    cgo: Option<bool>,
    /// The tags `-tags` gives; `None` when they are not known.
    tags: Option<BTreeSet<String>>,
    /// The newest `go1.N` release tag known true: go.mod's `go` line.
    release: u32,
}

impl Build {
    /// The machine's `GOOS` and `GOARCH`, no tags, `cgo` not known, and the
    /// release tags up to `go1.{release}` true.
    pub(super) fn host(release: u32) -> Self {
        Self {
            goos: Some(go_os(std::env::consts::OS).to_owned()),
            goarch: go_arch(std::env::consts::ARCH).map(str::to_owned),
            cgo: None,
            tags: Some(BTreeSet::new()),
            release,
        }
    }

    /// Takes the release tags up to `go1.{minor}` as true (go.mod's `go`
    /// line: no older go command builds the module).
    pub(super) fn release(&mut self, minor: u32) {
        self.release = self.release.max(minor);
    }

    /// Applies a variable the command line sets (`GOOS=windows go test`);
    /// `value` is `None` when the shell expands it.
    pub(super) fn variable(&mut self, name: &str, value: Option<&str>) {
        match name {
            "GOOS" => self.goos = value.map(str::to_owned),
            "GOARCH" => self.goarch = value.map(str::to_owned),
            "CGO_ENABLED" => self.cgo = value.map(|v| v == "1"),
            "GOFLAGS" => match value {
                Some(flags) => {
                    for flag in flags.split_whitespace() {
                        if let Some(tags) = flag
                            .strip_prefix("-tags=")
                            .or_else(|| flag.strip_prefix("--tags="))
                        {
                            self.tags(Some(tags));
                        }
                    }
                }
                None => self.tags = None,
            },
            _ => {}
        }
    }

    /// Applies `-tags LIST` (comma-separated; space-separated as older go
    /// commands took it); `None` when the shell expands it.
    pub(super) fn tags(&mut self, list: Option<&str>) {
        self.tags = list.map(|l| {
            l.split([',', ' '])
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()
        });
    }

    /// Whether `tag` is satisfied.
    fn has(&self, tag: &str) -> Truth {
        if let Some(minor) = tag.strip_prefix("go1.") {
            return match minor.parse::<u32>() {
                Ok(n) if n <= self.release => Some(true),
                Ok(_) => None,
                Err(_) => Some(false),
            };
        }
        let os = self.goos.as_deref();
        let arch = self.goarch.as_deref();
        let named = self.tags.as_ref().map(|t| t.contains(tag));
        let own = match tag {
            "gc" => Some(true),
            "gccgo" | "ignore" => Some(false),
            "cgo" => self.cgo,
            "unix" => os.map(|o| UNIX_OS.contains(&o)),
            // GOOS=android matches linux, illumos solaris, ios darwin.
            "linux" => os.map(|o| o == "linux" || o == "android"),
            "solaris" => os.map(|o| o == "solaris" || o == "illumos"),
            "darwin" => os.map(|o| o == "darwin" || o == "ios"),
            t if KNOWN_OS.contains(&t) => os.map(|o| o == t),
            t if KNOWN_ARCH.contains(&t) => arch.map(|a| a == t),
            _ => Some(false),
        };
        or(own, named)
    }

    /// Whether the go command builds the file `name` (its base name) with
    /// `text`: `Some(false)` only when it surely does not.
    pub(super) fn builds(&self, name: &str, text: &str) -> Truth {
        if name.starts_with(['_', '.']) {
            return Some(false);
        }
        and(self.name_matches(name), self.header_matches(text))
    }

    /// The `_GOOS`, `_GOARCH`, `_GOOS_GOARCH` suffixes (before `_test`).
    fn name_matches(&self, name: &str) -> Truth {
        let stem = name.split('.').next().unwrap_or(name);
        let Some((_, rest)) = stem.split_once('_') else {
            return Some(true);
        };
        let mut parts: Vec<&str> = rest.split('_').collect();
        if parts.last() == Some(&"test") {
            parts.pop();
        }
        let os = |p: &str| self.has(p);
        let is_os = |p: &str| KNOWN_OS.contains(&p);
        let is_arch = |p: &str| KNOWN_ARCH.contains(&p);
        let arch = |p: &str| self.goarch.as_deref().map(|a| a == p);
        match parts[..] {
            [.., o, a] if is_os(o) && is_arch(a) => and(os(o), arch(a)),
            [.., o] if is_os(o) => os(o),
            [.., a] if is_arch(a) => arch(a),
            _ => Some(true),
        }
    }

    /// The header's `//go:build` line, else its `// +build` lines.
    fn header_matches(&self, text: &str) -> Truth {
        let header = header(text);
        if let Some(expr) = header.go_build {
            return eval(expr, &|t| self.has(t)).unwrap_or(None);
        }
        let mut all = Some(true);
        for line in header.plus_build {
            // Fields are or-ed, a field's comma-separated terms and-ed.
            let mut any = Some(false);
            for field in line.split_whitespace() {
                let mut every = Some(true);
                for term in field.split(',') {
                    let value = match term.strip_prefix('!') {
                        Some(t) if valid_tag(t) => self.has(t).map(|v| !v),
                        None if valid_tag(term) => self.has(term),
                        _ => Some(false),
                    };
                    every = and(every, value);
                }
                any = or(any, every);
            }
            all = and(all, any);
        }
        all
    }
}

/// Go's name for the operating system Rust calls `os`.
fn go_os(os: &str) -> &str {
    match os {
        "macos" => "darwin",
        other => other,
    }
}

/// Go's name for the architecture Rust calls `arch`.
fn go_arch(arch: &str) -> Option<&'static str> {
    Some(match arch {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "arm" => "arm",
        "riscv64" => "riscv64",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "loongarch64" => "loong64",
        "mips64" => "mips64le",
        "wasm32" => "wasm",
        _ => return None,
    })
}

/// The constraint lines of a Go file's header: the comments and blank
/// lines before the package clause, as go/build reads them.
struct Header<'a> {
    go_build: Option<&'a str>,
    /// `// +build` lines followed by a blank line before the code.
    plus_build: Vec<&'a str>,
}

fn header(text: &str) -> Header<'_> {
    let mut go_build = None;
    let mut plus: Vec<&str> = Vec::new();
    let mut kept = 0;
    let mut in_block = false;
    for raw in text.lines() {
        let line = raw.trim();
        if in_block {
            if let Some((_, after)) = line.split_once("*/") {
                in_block = false;
                if !after.trim().is_empty() {
                    break;
                }
            }
            continue;
        }
        if line.is_empty() {
            // Only `+build` lines followed by a blank line count.
            kept = plus.len();
            continue;
        }
        if let Some(rest) = line.strip_prefix("//") {
            if let Some(expr) = rest.strip_prefix("go:build")
                && (expr.is_empty() || expr.starts_with([' ', '\t']))
            {
                go_build = go_build.or(Some(expr.trim()));
            } else if let Some(tags) = rest.trim_start().strip_prefix("+build")
                && (tags.is_empty() || tags.starts_with([' ', '\t']))
            {
                plus.push(tags.trim());
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("/*") {
            match rest.split_once("*/") {
                Some((_, after)) if after.trim().is_empty() => continue,
                Some(_) => break,
                None => {
                    in_block = true;
                    continue;
                }
            }
        }
        break;
    }
    plus.truncate(kept);
    Header {
        go_build,
        plus_build: plus,
    }
}

fn valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

fn and(a: Truth, b: Truth) -> Truth {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or(a: Truth, b: Truth) -> Truth {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// A `//go:build` expression (`!`, `&&`, `||`, parentheses, tags) under
/// `has`; `None` when it does not parse (the go command refuses the file,
/// so what it would build is not known).
pub(super) fn eval(expr: &str, has: &dyn Fn(&str) -> Truth) -> Option<Truth> {
    let tokens = tokens(expr)?;
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        has,
    };
    let value = parser.or()?;
    (parser.at == tokens.len()).then_some(value)
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Not,
    And,
    Or,
    Open,
    Close,
    Tag(&'a str),
}

fn tokens(expr: &str) -> Option<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut rest = expr;
    loop {
        rest = rest.trim_start();
        let Some(c) = rest.chars().next() else {
            return Some(out);
        };
        let (token, len) = match c {
            '!' => (Token::Not, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            '&' if rest.starts_with("&&") => (Token::And, 2),
            '|' if rest.starts_with("||") => (Token::Or, 2),
            c if c.is_alphanumeric() || c == '_' || c == '.' => {
                let len = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .unwrap_or(rest.len());
                (Token::Tag(&rest[..len]), len)
            }
            _ => return None,
        };
        out.push(token);
        rest = &rest[len..];
    }
}

/// Recursive descent: `or := and ("||" and)*`, `and := not ("&&" not)*`,
/// `not := "!" not | "(" or ")" | tag`.
struct Parser<'a, 'b> {
    tokens: &'b [Token<'a>],
    at: usize,
    has: &'b dyn Fn(&str) -> Truth,
}

impl Parser<'_, '_> {
    fn or(&mut self) -> Option<Truth> {
        let mut value = self.and()?;
        while self.tokens.get(self.at) == Some(&Token::Or) {
            self.at += 1;
            value = or(value, self.and()?);
        }
        Some(value)
    }

    fn and(&mut self) -> Option<Truth> {
        let mut value = self.not()?;
        while self.tokens.get(self.at) == Some(&Token::And) {
            self.at += 1;
            value = and(value, self.not()?);
        }
        Some(value)
    }

    fn not(&mut self) -> Option<Truth> {
        let token = self.tokens.get(self.at)?;
        self.at += 1;
        match token {
            Token::Not => Some(self.not()?.map(|v| !v)),
            Token::Open => {
                let value = self.or()?;
                (self.tokens.get(self.at) == Some(&Token::Close)).then(|| {
                    self.at += 1;
                    value
                })
            }
            Token::Tag(tag) => Some((self.has)(tag)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_as_go_build_constraint_reads_them() {
        // From go/build/constraint's documentation and its tests; `x` is
        // not known.
        let has = |t: &str| match t {
            "linux" | "amd64" | "go1.21" | "a" | "b" => Some(true),
            "x" => None,
            _ => Some(false),
        };
        let cases: &[(&str, Option<Truth>)] = &[
            ("linux", Some(Some(true))),
            ("linux && amd64", Some(Some(true))),
            ("linux && !cgo", Some(Some(true))),
            ("(linux && 386) || (darwin && !cgo)", Some(Some(false))),
            ("darwin || linux", Some(Some(true))),
            ("!linux", Some(Some(false))),
            ("!!linux", Some(Some(true))),
            ("a || b && c", Some(Some(true))),
            ("(a || b) && c", Some(Some(false))),
            ("!a || !b", Some(Some(false))),
            ("go1.21 && !windows", Some(Some(true))),
            ("e2e", Some(Some(false))),
            ("ignore", Some(Some(false))),
            ("x", Some(None)),
            ("x || linux", Some(Some(true))),
            ("x && e2e", Some(Some(false))),
            ("!x", Some(None)),
            ("x && linux", Some(None)),
            ("", None),
            ("linux &&", None),
            ("(linux", None),
            ("linux)", None),
            ("linux & amd64", None),
            ("linux amd64", None),
            ("!", None),
            ("linux,amd64", None),
        ];
        for (expr, want) in cases {
            assert_eq!(eval(expr, &has), *want, "{expr}");
        }
    }

    fn linux() -> Build {
        let mut b = Build::host(21);
        b.goos = Some("linux".to_owned());
        b.goarch = Some("amd64".to_owned());
        b
    }

    fn tagged() -> Build {
        let mut b = linux();
        b.tags(Some("e2e,slow"));
        b
    }

    fn windows() -> Build {
        let mut b = linux();
        b.variable("GOOS", Some("windows"));
        b.variable("GOARCH", Some("386"));
        b.variable("CGO_ENABLED", Some("0"));
        b
    }

    fn unknown_os() -> Build {
        let mut b = linux();
        b.variable("GOOS", None);
        b
    }

    #[test]
    fn what_a_build_leaves_out() {
        let pkg = "package p\n";
        // (build, file name, text, built)
        let cases: Vec<(Build, &str, String, Truth)> = vec![
            (linux(), "a_test.go", pkg.into(), Some(true)),
            (linux(), "_a_test.go", pkg.into(), Some(false)),
            (linux(), ".a.go", pkg.into(), Some(false)),
            (linux(), "a_linux.go", pkg.into(), Some(true)),
            (linux(), "a_windows_test.go", pkg.into(), Some(false)),
            (linux(), "a_linux_arm64.go", pkg.into(), Some(false)),
            (linux(), "a_amd64_test.go", pkg.into(), Some(true)),
            (linux(), "linux.go", pkg.into(), Some(true)),
            (linux(), "a_unknownword.go", pkg.into(), Some(true)),
            (windows(), "a_windows_386.go", pkg.into(), Some(true)),
            (windows(), "a_linux.go", pkg.into(), Some(false)),
            (unknown_os(), "a_windows.go", pkg.into(), None),
            (
                linux(),
                "a.go",
                format!("//go:build e2e\n\n{pkg}"),
                Some(false),
            ),
            (
                tagged(),
                "a.go",
                format!("//go:build e2e\n\n{pkg}"),
                Some(true),
            ),
            (
                tagged(),
                "a.go",
                format!("//go:build !slow\n{pkg}"),
                Some(false),
            ),
            (
                linux(),
                "a.go",
                format!("// Doc.\n//go:build ignore\n{pkg}"),
                Some(false),
            ),
            (
                linux(),
                "a.go",
                format!("//go:build unix && go1.20\n\n{pkg}"),
                Some(true),
            ),
            (linux(), "a.go", format!("//go:build go1.30\n\n{pkg}"), None),
            (linux(), "a.go", format!("//go:build cgo\n\n{pkg}"), None),
            (
                windows(),
                "a.go",
                format!("//go:build cgo\n\n{pkg}"),
                Some(false),
            ),
            (
                windows(),
                "a.go",
                format!("//go:build !unix\n\n{pkg}"),
                Some(true),
            ),
            (
                linux(),
                "a.go",
                format!("//go:build linux &&\n\n{pkg}"),
                None,
            ),
            // A constraint after the package clause is not one.
            (
                linux(),
                "a.go",
                format!("{pkg}//go:build e2e\n"),
                Some(true),
            ),
            (
                linux(),
                "a.go",
                format!("/* x */\n//go:build e2e\n{pkg}"),
                Some(false),
            ),
            // `// +build`: lines and-ed, fields or-ed, commas and-ed; only
            // before a blank line.
            (
                linux(),
                "a.go",
                format!("// +build e2e linux\n\n{pkg}"),
                Some(true),
            ),
            (
                linux(),
                "a.go",
                format!("// +build e2e,linux\n\n{pkg}"),
                Some(false),
            ),
            (
                linux(),
                "a.go",
                format!("// +build linux\n// +build !amd64\n\n{pkg}"),
                Some(false),
            ),
            (linux(), "a.go", format!("// +build e2e\n{pkg}"), Some(true)),
            // `//go:build` wins over `// +build`.
            (
                linux(),
                "a.go",
                format!("//go:build linux\n// +build e2e\n\n{pkg}"),
                Some(true),
            ),
        ];
        for (build, name, text, want) in cases {
            assert_eq!(build.builds(name, &text), want, "{name}: {text:?}");
        }
        let mut flags = linux();
        flags.variable("GOFLAGS", Some("-count=1 -tags=e2e"));
        assert_eq!(
            flags.builds("a.go", "//go:build e2e\npackage p\n"),
            Some(true)
        );
        let mut expanded = linux();
        expanded.tags(None);
        assert_eq!(expanded.builds("a.go", "//go:build e2e\npackage p\n"), None);
    }
}
