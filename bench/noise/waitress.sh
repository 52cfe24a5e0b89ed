#!/usr/bin/env bash
# A correct change to Pylons/waitress, as a planner and an agent would make
# it: the planner's spec committed on `main`, then on `feature` two tasks:
# a limit on the number of request header lines (431 past it), and the
# runner's option and help for it. Two attempts, as an agent makes them:
# the first (branch `attempt-1`) leaves the option out of the runner's
# help, so the help criterion fails; the second (`attempt-2`, where
# `feature` is left) adds it. The tests run in a virtual environment
# made with `pip install -e '.[testing]'` as the project's contributing
# guide says (which leaves `src/waitress.egg-info` in the workspace, ignored),
# outside the workspace and shown to the items with `[sandbox] readable`:
# a base run's checkout holds only what git tracks, so a virtual
# environment inside the workspace is not there on the base. The targeted criteria say --no-cov: the project's
# addopts asks for coverage, and criteria running at once would share one
# .coverage file; the suite keeps it.
#   usage: bench/noise/waitress.sh CLONE VENV
set -euo pipefail
venv=$(realpath -m "$2")
cd "$1"
git checkout -q -f 4a378915f6fef264c6aaf03f059bd992287ba8ba
git branch -q -D feature attempt-1 attempt-2 2>/dev/null || true
git checkout -q -B main
git clean -q -fdx
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q -e '.[testing]'
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_AUTHOR_DATE=2026-12-01T00:00:00Z GIT_COMMITTER_DATE=2026-12-01T00:00:00Z

cat > gate.toml <<EOF
[spec]
id = "waitress-header-count"
summary = "Refuse requests with too many header lines"

[sandbox]
readable = ["$venv"]

[[task]]
id = "limit"
paths = [
    "src/waitress/adjustments.py",
    "src/waitress/parser.py",
    "tests/test_parser.py",
    "tests/test_adjustments.py",
    "tests/test_channel.py",
]

[[task.criterion]]
id = "too-many-headers-431"
text = "A request with more header lines than max_request_header_count is refused with 431"
run = "python -m pytest --no-cov tests/test_parser.py -k too_many_headers"
expect = "fail-to-pass"

[[task.criterion]]
id = "adjustment"
text = "max_request_header_count is an integer adjustment, 100 by default"
run = "python -m pytest --no-cov tests/test_adjustments.py -k header_count"
expect = "fail-to-pass"

[[task.criterion]]
id = "suite"
text = "The test suite still passes"
run = "python -m pytest"
expect = "pass-to-pass"

[[task]]
id = "cli"
paths = ["src/waitress/runner.py", "tests/test_runner.py", "docs/arguments.rst"]
after = ["limit"]

[[task.criterion]]
id = "runner-option"
text = "waitress-serve takes --max-request-header-count"
run = "python -m pytest --no-cov tests/test_runner.py -k header_count"
expect = "fail-to-pass"

[[task.criterion]]
id = "help-lists-option"
text = "waitress-serve --help lists --max-request-header-count"
run = 'n=\$(python -m waitress --help 2>&1 | grep -c -- --max-request-header-count); [ \$n -ge 1 ]'
EOF
printf '.gate/\n' >> .gitignore
git add -A
git commit -q -m "plan: a limit on request header lines"

git checkout -q -b feature
python3 - <<'EOF'
import pathlib


def edit(path, old, new):
    p = pathlib.Path(path)
    text = p.read_text()
    assert text.count(old) == 1, (path, old)
    p.write_text(text.replace(old, new))


edit(
    "src/waitress/adjustments.py",
    '        ("max_request_header_size", int),\n',
    '        ("max_request_header_size", int),\n        ("max_request_header_count", int),\n',
)
edit(
    "src/waitress/adjustments.py",
    "    max_request_header_size = 262144\n",
    "    max_request_header_size = 262144\n\n"
    "    # maximum number of request header lines (100 default)\n"
    "    max_request_header_count = 100\n",
)
edit(
    "src/waitress/parser.py",
    "                if not header_plus:\n"
    "                    self.empty = True\n"
    "                    self.completed = True\n",
    "                if not header_plus:\n"
    "                    self.empty = True\n"
    "                    self.completed = True\n"
    "                elif (\n"
    '                    header_plus.rstrip().count(b"\\n")\n'
    "                    > self.adj.max_request_header_count\n"
    "                ):\n"
    '                    self.parse_header(b"GET / HTTP/1.0\\r\\n")\n'
    "                    self.error = RequestHeaderFieldsTooLarge(\n"
    '                        "exceeds max_request_header_count of %s"\n'
    "                        % self.adj.max_request_header_count\n"
    "                    )\n"
    "                    self.completed = True\n",
)
edit(
    "docs/arguments.rst",
    "max_request_body_size\n",
    "max_request_header_count\n"
    "    maximum number of request header lines; a request with more is\n"
    "    refused with 431 Request Header Fields Too Large (integer).\n\n"
    "    Default: ``100``\n\n"
    "    .. versionadded:: 3.0.3\n\n"
    "max_request_body_size\n",
)
edit(
    "tests/test_parser.py",
    "    def test_received_body_too_large(self):\n",
    "    def test_received_too_many_headers(self):\n"
    "        self.parser.adj.max_request_header_count = 2\n"
    '        data = b"GET /foobar HTTP/1.1\\r\\nX-A: 1\\r\\nX-B: 2\\r\\nX-C: 3\\r\\n\\r\\n"\n'
    "        self.parser.received(data)\n"
    "        self.assertTrue(self.parser.completed)\n"
    "        self.assertIsInstance(self.parser.error, RequestHeaderFieldsTooLarge)\n\n"
    "    def test_received_as_many_headers_as_allowed(self):\n"
    "        self.parser.adj.max_request_header_count = 2\n"
    '        data = b"GET /foobar HTTP/1.1\\r\\nX-A: 1\\r\\nX-B: 2\\r\\n\\r\\n"\n'
    "        self.parser.received(data)\n"
    "        self.assertTrue(self.parser.completed)\n"
    "        self.assertIsNone(self.parser.error)\n"
    '        self.assertEqual(self.parser.headers["X_B"], "2")\n\n'
    "    def test_received_body_too_large(self):\n",
)
p = pathlib.Path("tests/test_adjustments.py")
p.write_text(
    p.read_text()
    + "\n\nclass TestHeaderCount(unittest.TestCase):\n"
    "    def test_header_count_default(self):\n"
    "        from waitress.adjustments import Adjustments\n\n"
    "        self.assertEqual(Adjustments().max_request_header_count, 100)\n\n"
    "    def test_header_count_from_string(self):\n"
    "        from waitress.adjustments import Adjustments\n\n"
    '        adj = Adjustments(max_request_header_count="7")\n'
    "        self.assertEqual(adj.max_request_header_count, 7)\n"
)
edit(
    "tests/test_channel.py",
    "    max_request_header_size = 10000\n",
    "    max_request_header_size = 10000\n    max_request_header_count = 100\n",
)
edit(
    "tests/test_runner.py",
    "    def test_bad_app_object(self):\n",
    "    def test_max_request_header_count(self):\n"
    "        def check_server(app, **kw):\n"
    '            self.assertEqual(kw["max_request_header_count"], "7")\n\n'
    "        argv = [\n"
    '            "waitress-serve",\n'
    '            "--max-request-header-count=7",\n'
    '            "tests.fixtureapps.runner:app",\n'
    "        ]\n"
    "        self.assertEqual(runner.run(argv=argv, _serve=check_server), 0)\n\n"
    "    def test_bad_app_object(self):\n",
)
EOF
git add -A
git commit -q -m "parser: refuse more than max_request_header_count header lines with 431; the runner's option"
git branch -q -f attempt-1
python3 - <<'EOF'
import pathlib

p = pathlib.Path("src/waitress/runner.py")
text = p.read_text()
old = "    --max-request-body-size=INT\n"
assert text.count(old) == 1
p.write_text(
    text.replace(
        old,
        "    --max-request-header-count=INT\n"
        "        Maximum number of request header lines. Default is 100.\n\n" + old,
    )
)
EOF
git commit -q -am "runner: --max-request-header-count in the help"
git branch -q -f attempt-2
