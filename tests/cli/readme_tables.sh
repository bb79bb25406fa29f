#!/usr/bin/env bash
# scripts/readme_tables.py: a table between its markers is regenerated from one short bench run
# (its command written beside it) and nothing else in the file changes; --all reruns each
# table's recorded command; bad input is one error line and leaves the file as it was. The file
# is docs/performance.md unless --file (or its old name, --readme) names another: here, temporary
# copies, and at the end the repository's own file is regenerated into a copy.
set -u
bin=${1:?usage: readme_tables.sh PATH_TO_TXPATH}
. "$(dirname "$0")/lib/common.bash"  # fail, tmp (removed on exit)
# A Python script's text and statuses: the bench it runs is checked sanitized by the other tests.
release_only "the README table script"
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/readme_tables.py"
repo_tables="$(dirname "$script")/../docs/performance.md"

# The file with every marked block's inside removed (what must not change), and one block's inside.
outside() { python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
print(re.sub(r"(<!-- txpath-table:([\w.-]+) -->\n).*?(<!-- /txpath-table:\2 -->)", r"\1\3", text, flags=re.S), end="")
EOF
}
inside() { sed -n "/^<!-- txpath-table:$2 -->\$/,/^<!-- \/txpath-table:$2 -->\$/p" "$1"; }
# expect_error STATUS FILE ARGS...: exits STATUS with one error line, FILE unchanged.
expect_error() {
  local want=$1 file=$2; shift 2
  cp "$file" "$tmp/before"
  python3 "$script" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || { echo "FAIL: exit $rc, not $want: $*"; cat "$tmp/err"; fail=1; }
  # One error line of ours (a bench it ran says its own first, and "running ...").
  [ "$(grep -c '^readme_tables: error: ' "$tmp/err")" -eq 1 ] && [ "$(grep -vc '^readme_tables: running \|^txpath: error: ' "$tmp/err")" -eq 1 ] ||
    { echo "FAIL: not one error line: $*"; cat "$tmp/err"; fail=1; }
  cmp -s "$file" "$tmp/before" || { echo "FAIL: the file changed on error: $*"; fail=1; }
}

cat >"$tmp/README.md" <<'EOF'
# A project

Prose before.
<!-- txpath-table:small -->
Command: `txpath bench --device null --threads 1 --strategy floor,busylock --duration 0.02 --repeat 1 --json small.json` (old)

| old | table |
<!-- /txpath-table:small -->
Prose between.
<!-- txpath-table:other -->
left alone
<!-- /txpath-table:other -->
Prose after.
EOF
chmod 640 "$tmp/README.md"
cp "$tmp/README.md" "$tmp/orig.md"

cmd=(--device null --threads 1,2 --strategy floor,busylock --duration 0.02 --repeat 1)
"$bin" bench "${cmd[@]}" --quiet --json "$tmp/run.json" >/dev/null 2>&1 ||
  { echo "FAIL: the short bench run failed"; fail=1; }
python3 "$script" small --file "$tmp/README.md" --json "$tmp/run.json" \
  --command "txpath bench ${cmd[*]} --json run.json" || { echo "FAIL: --json run"; fail=1; }
[ "$(outside "$tmp/README.md")" = "$(outside "$tmp/orig.md")" ] ||
  { echo "FAIL: text outside the markers changed"; diff <(outside "$tmp/orig.md") <(outside "$tmp/README.md"); fail=1; }
[ "$(inside "$tmp/README.md" other)" = "$(inside "$tmp/orig.md" other)" ] || { echo "FAIL: another table changed"; fail=1; }
[ "$(inside "$tmp/README.md" small)" != "$(inside "$tmp/orig.md" small)" ] || { echo "FAIL: the table did not change"; fail=1; }
inside "$tmp/README.md" small | grep -qF "Command: \`txpath bench ${cmd[*]} --json run.json\`" ||
  { echo "FAIL: the command is not beside the table"; inside "$tmp/README.md" small; fail=1; }
for row in '^| `floor` | 1 |' '^| `floor` | 2 |' '^| `busylock` | 1 |' '^| `busylock` | 2 |' '^| strategy | senders | Mpps | CPU ns/pkt | drop% | CPU vs floor |'; do
  inside "$tmp/README.md" small | grep -q "$row" || { echo "FAIL: no row $row"; inside "$tmp/README.md" small; fail=1; }
done
[ "$(stat -c %a "$tmp/README.md")" = 640 ] || { echo "FAIL: the file's mode was not kept"; fail=1; }
ls -A "$tmp" | grep -q '^\.README' && { echo "FAIL: a temporary file was left"; fail=1; }

# --all: each table's recorded command is run again (here: the one table that has one... and
# "other" has none, which is an error that replaces nothing).
expect_error 2 "$tmp/README.md" --all --txpath "$bin" --readme "$tmp/README.md"
python3 - "$tmp/README.md" <<'EOF'
import sys
p = sys.argv[1]
t = open(p).read().replace("<!-- txpath-table:other -->\nleft alone\n<!-- /txpath-table:other -->\n", "")
open(p, "w").write(t)
EOF
cp "$tmp/README.md" "$tmp/before_all.md"
python3 "$script" --all --txpath "$bin" --readme "$tmp/README.md" 2>/dev/null || { echo "FAIL: --all"; fail=1; }
[ "$(outside "$tmp/README.md")" = "$(outside "$tmp/before_all.md")" ] || { echo "FAIL: --all changed text outside"; fail=1; }
inside "$tmp/README.md" small | grep -qF "Command: \`txpath bench ${cmd[*]} --json small.json\`" ||
  { echo "FAIL: --all did not keep the recorded command"; inside "$tmp/README.md" small; fail=1; }

# Errors: one line, exit status, nothing replaced.
expect_error 2 "$tmp/README.md" nosuch --readme "$tmp/README.md" --json "$tmp/run.json" --command x
expect_error 2 "$tmp/README.md" small --readme "$tmp/README.md" --json "$tmp/nosuch.json" --command x
expect_error 2 "$tmp/README.md" small --readme "$tmp/README.md" --json "$tmp/run.json"
expect_error 2 "$tmp/README.md" --readme "$tmp/README.md"
echo '{"partial": true, "results": []}' >"$tmp/partial.json"
expect_error 1 "$tmp/README.md" small --readme "$tmp/README.md" --json "$tmp/partial.json" --command x
jq '.results[0].conserved = false' "$tmp/run.json" >"$tmp/lost.json"
expect_error 1 "$tmp/README.md" small --readme "$tmp/README.md" --json "$tmp/lost.json" --command x
echo 'not json' >"$tmp/bad.json"
expect_error 2 "$tmp/README.md" small --readme "$tmp/README.md" --json "$tmp/bad.json" --command x
expect_error 1 "$tmp/README.md" small --readme "$tmp/README.md" --txpath "$bin" -- --device nosuch
printf 'a\n<!-- txpath-table:x -->\nb\n' >"$tmp/open.md"
expect_error 2 "$tmp/open.md" x --readme "$tmp/open.md" --json "$tmp/run.json" --command x
ln -s README.md "$tmp/link.md"
expect_error 2 "$tmp/README.md" small --readme "$tmp/link.md" --json "$tmp/run.json" --command x

# The repository's docs/performance.md: its tables regenerate from a bench JSON with nothing else
# changed.
if grep -q '^<!-- txpath-table:' "$repo_tables"; then
  cp "$repo_tables" "$tmp/repo.md"
  for name in $(sed -n 's/^<!-- txpath-table:\([A-Za-z0-9_.-]*\) -->$/\1/p' "$repo_tables"); do
    python3 "$script" "$name" --file "$tmp/repo.md" --json "$tmp/run.json" --command "txpath bench ${cmd[*]} --json run.json" ||
      { echo "FAIL: docs/performance.md table $name"; fail=1; }
    [ "$(inside "$tmp/repo.md" "$name")" != "$(inside "$repo_tables" "$name")" ] || { echo "FAIL: docs/performance.md table $name unchanged"; fail=1; }
  done
  [ "$(outside "$tmp/repo.md")" = "$(outside "$repo_tables")" ] || { echo "FAIL: docs/performance.md text outside the tables changed"; fail=1; }
else
  echo "FAIL: docs/performance.md has no generated table"; fail=1
fi

[ "$fail" -eq 0 ] && echo "readme_tables: all checks passed"
exit "$fail"
