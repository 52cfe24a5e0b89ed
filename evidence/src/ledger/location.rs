//! Where a ledger lives: a SQLite file or a PostgreSQL URL, and how each is
//! named in messages (a URL never shows its password).

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::LedgerError;

/// A ledger's location.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database, as a `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// Parses `postgres://…`/`postgresql://…`, `sqlite://PATH`, `sqlite:PATH`
    /// or a plain file path. A relative path stays relative: the caller
    /// decides what it is relative to.
    pub fn parse(text: &str) -> Result<Self, LedgerError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(LedgerError::BadLocation(
                "an empty ledger location".to_owned(),
            ));
        }
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            super::postgres::tls::split(text).map_err(|e| {
                LedgerError::BadLocation(format!("{} is not a PostgreSQL URL: {e}", redact(text)))
            })?;
            return Ok(Self::Postgres(text.to_owned()));
        }
        let path = lower
            .strip_prefix("sqlite://")
            .or_else(|| lower.strip_prefix("sqlite:"))
            .map_or(text, |rest| &text[text.len() - rest.len()..]);
        if path.is_empty() {
            return Err(LedgerError::BadLocation(format!(
                "{text} names no SQLite file"
            )));
        }
        if let Some((scheme, _)) = path.split_once("://") {
            return Err(LedgerError::BadLocation(format!(
                "{}: unknown ledger scheme `{scheme}`; use postgres://…, sqlite://PATH or a file path",
                redact(text)
            )));
        }
        Ok(Self::Sqlite(PathBuf::from(path)))
    }

    /// A relative SQLite path, or a PostgreSQL URL's relative TLS file
    /// paths, taken from `base`; anything else unchanged.
    #[must_use]
    pub fn relative_to(self, base: &Path) -> Self {
        match self {
            Self::Sqlite(p) if p.is_relative() => Self::Sqlite(base.join(p)),
            Self::Postgres(url) => {
                Self::Postgres(super::postgres::tls::files_relative_to(&url, base))
            }
            sqlite @ Self::Sqlite(_) => sqlite,
        }
    }

    /// The TLS files a PostgreSQL URL names (`sslrootcert`, `sslcert`,
    /// `sslkey`); none for SQLite.
    pub fn tls_files(&self) -> Vec<PathBuf> {
        match self {
            Self::Postgres(url) => super::postgres::tls::files(url),
            Self::Sqlite(_) => Vec::new(),
        }
    }

    /// True for a shared PostgreSQL ledger.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Self::Sqlite(path.to_path_buf())
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Self::Sqlite(path)
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Self::Sqlite(path.clone())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(p) => write!(f, "{}", p.display()),
            Self::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// Debug shows what Display shows: a password never reaches a log.
impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(p) => write!(f, "Sqlite({})", p.display()),
            Self::Postgres(_) => write!(f, "Postgres({self})"),
        }
    }
}

/// A URL with the password in its user part and any `password=` parameter
/// replaced by `***`.
pub fn redact(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => authority.to_owned(),
                },
                None => authority.to_owned(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => head.to_owned(),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                // `password`, libpq's `sslpassword` (the client key's), and
                // either spelled with escapes.
                Some((k, _))
                    if percent_encoding::percent_decode_str(k)
                        .decode_utf8_lossy()
                        .to_ascii_lowercase()
                        .contains("password") =>
                {
                    format!("{k}=***")
                }
                _ => kv.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_form() {
        let cases: &[(&str, Result<Location, &str>)] = &[
            (
                "postgres://gate@db:5432/gate",
                Ok(Location::Postgres("postgres://gate@db:5432/gate".into())),
            ),
            (
                "postgresql://gate@db/gate?connect_timeout=2",
                Ok(Location::Postgres(
                    "postgresql://gate@db/gate?connect_timeout=2".into(),
                )),
            ),
            (
                "sqlite:///var/gate/ledger.db",
                Ok(Location::Sqlite("/var/gate/ledger.db".into())),
            ),
            (
                "sqlite://rel/ledger.db",
                Ok(Location::Sqlite("rel/ledger.db".into())),
            ),
            ("SQLite:x.db", Ok(Location::Sqlite("x.db".into()))),
            (
                " .gate/ledger.db ",
                Ok(Location::Sqlite(".gate/ledger.db".into())),
            ),
            ("", Err("empty")),
            ("sqlite://", Err("names no SQLite file")),
            ("mysql://db/gate", Err("unknown ledger scheme `mysql`")),
            (
                "postgres://u:hunter2@db/gate?sslmode=bogus",
                Err("postgres://u:***@db/gate?sslmode=bogus is not a PostgreSQL URL"),
            ),
        ];
        for (text, want) in cases {
            match (Location::parse(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want, "{text}"),
                (Err(e), Err(needle)) => {
                    let msg = e.to_string();
                    assert!(msg.contains(needle), "{text}: {msg}");
                    assert!(!msg.contains("hunter2"), "{msg}");
                    assert!(!e.is_unavailable(), "{text}");
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn passwords_never_show() {
        let cases = [
            (
                "postgres://gate:s3cret@db:5432/gate",
                "postgres://gate:***@db:5432/gate",
            ),
            ("postgres://gate@db/gate", "postgres://gate@db/gate"),
            (
                "postgres://db/gate?user=gate&password=s3cret&sslmode=disable",
                "postgres://db/gate?user=gate&password=***&sslmode=disable",
            ),
            ("postgres://a:b:c@h/d", "postgres://a:***@h/d"),
            (
                "postgres://h/d?sslpassword=s3cret&pass%77ord=s3cret",
                "postgres://h/d?sslpassword=***&pass%77ord=***",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(redact(url), want);
            let location = Location::Postgres(url.to_owned());
            assert!(!location.to_string().contains("s3cret"));
            assert!(!format!("{location:?}").contains("s3cret"));
        }
    }

    #[test]
    fn relative_sqlite_paths_take_a_base() {
        let base = Path::new("/ws");
        assert_eq!(
            Location::Sqlite("l.db".into()).relative_to(base),
            Location::Sqlite("/ws/l.db".into())
        );
        assert_eq!(
            Location::Sqlite("/abs/l.db".into()).relative_to(base),
            Location::Sqlite("/abs/l.db".into())
        );
        let pg = Location::Postgres("postgres://h/d".into());
        assert_eq!(pg.clone().relative_to(base), pg);
    }
}
