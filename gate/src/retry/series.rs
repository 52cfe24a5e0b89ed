//! Which attempt series a run belongs to: the key a pipeline's line of work
//! on a spec is known by (a pull or merge request, else a branch), so that
//! parallel lines of work on one spec keep their own attempts.

use crate::environment::Environment;
use crate::errors::GateError;
use crate::record::Series;

/// Where the key came from when `--series` gave it.
pub(crate) const FROM_FLAG: &str = "--series";
/// Where the key came from when it is the branch the run verified.
pub(crate) const FROM_BRANCH: &str = "branch";
/// The longest key `--series` takes, in characters.
const MAX_KEY: usize = 200;

/// The CI variables a pull or merge request's id is read from, in order:
/// the variable and the key's prefix. Each CI sets only its own.
const REQUESTS: [(&str, &str); 3] = [
    // GitHub Actions: `refs/pull/N/merge` on `pull_request` events.
    ("GITHUB_REF", "pr"),
    // GitLab: set in merge request pipelines only.
    ("CI_MERGE_REQUEST_IID", "mr"),
    // Buildkite: the number, or `false` for a build of no pull request.
    ("BUILDKITE_PULL_REQUEST", "pr"),
];

/// GitHub Actions' name for a pull request's head branch, set on
/// `pull_request` and `pull_request_target` events only (where `GITHUB_REF`
/// is the base branch's ref, with no number in it).
const GITHUB_HEAD_REF: &str = "GITHUB_HEAD_REF";

/// The run's series: `--series` as given; else the pull or merge request
/// the CI names; else the pull request's head branch GitHub names; else
/// `branch`, the branch the run verified (`HEAD`'s, or on a detached
/// checkout the CI's name for it); else none (the spec's own series). A
/// blank, overlong or unprintable `--series` is a usage error.
pub(crate) fn choose(
    flag: Option<&str>,
    env: &Environment,
    branch: Option<&str>,
) -> Result<Option<Series>, GateError> {
    if let Some(given) = flag {
        let key = given.trim();
        if key.is_empty() || key.chars().count() > MAX_KEY || key.chars().any(char::is_control) {
            return Err(GateError::Usage(format!(
                "--series {given:?}: give a key of 1 to {MAX_KEY} printable characters \
                 (a pull or merge request, a branch)"
            )));
        }
        return Ok(Some(Series {
            key: key.to_owned(),
            from: FROM_FLAG.to_owned(),
        }));
    }
    if let Some(found) = request(env) {
        return Ok(Some(found));
    }
    if let Some(head) = env
        .var(GITHUB_HEAD_REF)
        .map(str::trim)
        .filter(|b| !b.is_empty())
    {
        return Ok(Some(Series {
            key: format!("branch:{head}"),
            from: GITHUB_HEAD_REF.to_owned(),
        }));
    }
    Ok(branch
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(|b| Series {
            key: format!("branch:{b}"),
            from: FROM_BRANCH.to_owned(),
        }))
}

/// The pull or merge request the CI's own variables name, if any.
fn request(env: &Environment) -> Option<Series> {
    REQUESTS.iter().find_map(|&(name, prefix)| {
        let value = env.var(name)?.trim();
        let id = if name == "GITHUB_REF" {
            value
                .strip_prefix("refs/pull/")
                .and_then(|rest| rest.split_once('/'))
                .filter(|(_, tail)| matches!(*tail, "merge" | "head"))
                .map(|(n, _)| n)?
        } else {
            value
        };
        // An id is a number: `false`, empty or anything else names none.
        (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| Series {
            key: format!("{prefix}:{id}"),
            from: name.to_owned(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_comes_from_the_flag_then_the_request_then_the_branch() {
        // (what, --series, environment, the branch verified, key and source)
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
            Option<(&'a str, &'a str)>,
        );
        let cases: &[Case<'_>] = &[
            ("nothing at all", None, &[], None, None),
            (
                "a branch",
                None,
                &[],
                Some("feature/ttl"),
                Some(("branch:feature/ttl", "branch")),
            ),
            (
                "the flag wins over everything",
                Some(" 42 "),
                &[("GITHUB_REF", "refs/pull/7/merge")],
                Some("main"),
                Some(("42", "--series")),
            ),
            (
                "a GitHub pull request",
                None,
                &[
                    ("GITHUB_REF", "refs/pull/7/merge"),
                    ("GITHUB_HEAD_REF", "feature/ttl"),
                ],
                Some("feature/ttl"),
                Some(("pr:7", "GITHUB_REF")),
            ),
            (
                "a GitHub push: the branch",
                None,
                &[("GITHUB_REF", "refs/heads/feature/ttl")],
                Some("feature/ttl"),
                Some(("branch:feature/ttl", "branch")),
            ),
            (
                "pull_request_target: the base's ref, and the head branch",
                None,
                &[
                    ("GITHUB_REF", "refs/heads/main"),
                    ("GITHUB_HEAD_REF", "feature/ttl"),
                ],
                Some("main"),
                Some(("branch:feature/ttl", "GITHUB_HEAD_REF")),
            ),
            (
                "a malformed pull ref names none",
                None,
                &[("GITHUB_REF", "refs/pull/x7/merge")],
                Some("b"),
                Some(("branch:b", "branch")),
            ),
            (
                "a GitLab merge request",
                None,
                &[
                    ("CI_MERGE_REQUEST_IID", "12"),
                    ("CI_COMMIT_REF_NAME", "feature/ttl"),
                ],
                None,
                Some(("mr:12", "CI_MERGE_REQUEST_IID")),
            ),
            (
                "a GitLab branch pipeline",
                None,
                &[("CI_MERGE_REQUEST_IID", "")],
                Some("feature/ttl"),
                Some(("branch:feature/ttl", "branch")),
            ),
            (
                "a Buildkite pull request",
                None,
                &[("BUILDKITE_PULL_REQUEST", "301")],
                Some("feature/ttl"),
                Some(("pr:301", "BUILDKITE_PULL_REQUEST")),
            ),
            (
                "a Buildkite build of no pull request",
                None,
                &[("BUILDKITE_PULL_REQUEST", "false")],
                Some("main"),
                Some(("branch:main", "branch")),
            ),
            ("a blank branch names none", None, &[], Some("  "), None),
        ];
        for &(what, flag, vars, branch, want) in cases {
            let env = Environment::from_pairs(vars.iter().copied());
            let got = choose(flag, &env, branch).unwrap();
            let got = got.as_ref().map(|s| (s.key.as_str(), s.from.as_str()));
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_blank_or_unprintable_flag_is_refused() {
        let env = Environment::default();
        for bad in ["", "  ", "a\nb", &"k".repeat(MAX_KEY + 1)] {
            let err = choose(Some(bad), &env, Some("main")).unwrap_err();
            assert!(err.to_string().contains("--series"), "{bad:?}: {err}");
        }
        assert!(choose(Some(&"k".repeat(MAX_KEY)), &env, None).is_ok());
    }
}
