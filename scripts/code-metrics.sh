#!/usr/bin/env bash
# Prints the figures that describe the code's shape at one revision, so that a before and an
# after can be taken the same way (issue 14's closing note):
#
#   scripts/code-metrics.sh                 # the work tree as it is on disk
#   scripts/code-metrics.sh dbfb2c9         # any git revision
#   scripts/code-metrics.sh HEAD dbfb2c9    # also: the duplicates the change since dbfb2c9 adds
#
# How each figure is taken (all of them over the Swift, C and header files of Sources/*):
# - lines: non-blank lines per module (a module is a folder of Sources/); "code" leaves out
#   lines that are only a `//` comment as well.
# - @inline: occurrences of `@inline(` outside `//` comment lines, per module and in total.
# - public declarations: lines of Swift code whose leading modifiers (attributes such as
#   `@discardableResult` and keywords such as `final`, `nonisolated`, `private(set)` may come
#   first) include `public` or `open`, leaving out `public import` lines. One line counts
#   once (`public private(set) var` is one); an enum case or a protocol requirement, which
#   takes its access from its parent without saying so, does not count. `package` does not
#   count: it is invisible outside this package.
# - longest functions (Core and Timers): every `func`, `init`, `deinit` and `subscript` with a
#   body, measured from its declaration line to the line of the brace that closes the body,
#   by counting braces line by line. Limits: braces inside string literals and `/* */`
#   comments are counted as code (`//` comments and one-line "..." strings are stripped
#   first); a nested function is measured on its own and also inside its parent; closures
#   stored in properties and computed properties are not functions here.
# - duplicates: the `duplicates` command's pair count (6 or more shared lines, same text or
#   same shape) over the whole revision and over Sources/ alone; with a second revision BASE,
#   also `duplicates --change` for what BASE..REV adds.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=${1:-}
base=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "$rev" ]; then
  root="$tmp/tree"
  mkdir -p "$root"
  git archive "$rev" | tar -x -C "$root"
  echo "revision: $(git log -1 --format='%h %cd %s' --date=iso "$rev" | cut -c1-100)"
else
  root=$PWD
  echo "revision: work tree (HEAD $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', with uncommitted changes'))"
fi

modules=()
for dir in "$root"/Sources/*/; do modules+=("$(basename "$dir")"); done

# The source files of one module, one a line.
sources() { find "$root/Sources/$1" -type f \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) | sort; }

# Reads file names on stdin; prints the count of lines matching the extended regex $1 after
# `//` comment lines are dropped (or of all non-blank lines when $1 is empty).
count() {
  local files
  files=$(cat)
  [ -z "$files" ] && { echo 0; return; }
  # shellcheck disable=SC2086 # file names have no spaces here
  cat $files | awk -v re="$1" '
    /^[ \t]*$/ { next }
    { if (re == "") { n++; next } }
    /^[ \t]*\/\// { next }
    $0 ~ re { n++ }
    END { print n + 0 }'
}

public_re='^[ \t]*((@[A-Za-z_]+(\([^)]*\))?|[a-z]+(\([a-z]+\))?)[ \t]+)*(public|open)[ \t]'

printf '\n%-18s %8s %8s %8s %8s\n' module lines code '@inline' public
total_lines=0 total_code=0 total_inline=0 total_public=0
for m in "${modules[@]}"; do
  lines=$(sources "$m" | count '')
  code=$(sources "$m" | count '.')
  inline=$(sources "$m" | grep '\.swift$' | count '@inline\(' || true)
  public=$(sources "$m" | grep '\.swift$' | count "$public_re" || true)
  # `public import` lines match the pattern too; take them back out.
  imports=$(sources "$m" | grep '\.swift$' | count '^[ \t]*(@[A-Za-z_]+[ \t]+)*public[ \t]+import[ \t]' || true)
  public=$((public - imports))
  printf '%-18s %8d %8d %8d %8d\n' "$m" "$lines" "$code" "$inline" "$public"
  total_lines=$((total_lines + lines)) total_code=$((total_code + code))
  total_inline=$((total_inline + inline)) total_public=$((total_public + public))
done
printf '%-18s %8d %8d %8d %8d\n' total "$total_lines" "$total_code" "$total_inline" "$total_public"

echo
echo "15 longest functions in Core and Timers (lines from declaration to closing brace):"
for m in Core Timers; do
  [ -d "$root/Sources/$m" ] && sources "$m" | grep '\.swift$'
done | while read -r file; do
  awk -v file="${file#"$root"/Sources/}" '
    { line[NR] = $0 }
    END {
      for (i = 1; i <= NR; i++) {
        decl = line[i]
        sub(/\/\/.*/, "", decl)
        if (decl !~ /(^|[ \t])(func[ \t]+[^ \t(<]+|init[?!]?[ \t]*[(<]|deinit([ \t{]|$)|subscript[ \t]*[(<])/) continue
        name = decl
        if (match(name, /func[ \t]+[^ \t(<]+/)) { name = substr(name, RSTART + 5, RLENGTH - 5); gsub(/^[ \t]+/, "", name) }
        else if (name ~ /deinit/) name = "deinit"
        else if (name ~ /subscript/) name = "subscript"
        else name = "init"
        depth = 0; opened = 0; end = 0
        for (j = i; j <= NR; j++) {
          text = line[j]
          sub(/\/\/.*/, "", text)
          gsub(/"([^"\\]|\\.)*"/, "", text)
          # A declaration without a body (a protocol requirement) ends before any brace opens:
          # at the next declaration or at the closing brace of its parent.
          if (!opened && j > i && text ~ /^[ \t]*(}|((@[A-Za-z_]+|[a-z]+)[ \t]+)*(func|var|let|init|case|associatedtype|subscript|static|mutating)([ \t]|\())/) break
          n = length(text)
          for (k = 1; k <= n; k++) {
            c = substr(text, k, 1)
            if (c == "{") { depth++; opened = 1 }
            else if (c == "}") { depth--; if (opened && depth == 0) { end = j; break } }
          }
          if (end) break
        }
        if (end) printf "%d\t%s\t%s:%d\n", end - i + 1, name, file, i
      }
    }' "$file"
done | sort -t$'\t' -k1,1nr -k3,3 | head -15 | awk -F'\t' '{ printf "  %4d  %-40s %s\n", $1, $2, $3 }'

echo
pairs() { awk 'NR == 1 { print ($1 ~ /^[0-9]+$/) ? $1 : 0 }'; }
whole=$(duplicates --repo "$root" --most 1 --seconds 300 | pairs)
only_sources=$(duplicates --repo "$root/Sources" --most 1 --seconds 300 | pairs)
echo "duplicates pairs: whole tree $whole, Sources/ alone $only_sources"

if [ -n "$base" ]; then
  # A scratch repository holding BASE as its one commit and REV (or the work tree) as the
  # uncommitted change: `duplicates --change` then reads exactly what BASE..REV adds.
  scratch="$tmp/change"
  mkdir -p "$scratch"
  git archive "$base" | tar -x -C "$scratch"
  git -C "$scratch" init -q
  git -C "$scratch" add -A
  git -C "$scratch" -c user.name=metrics -c user.email=metrics@localhost commit -qm base
  find "$scratch" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
  if [ -n "$rev" ]; then
    git archive "$rev" | tar -x -C "$scratch"
  else
    git ls-files -co --exclude-standard | while read -r f; do [ -e "$f" ] && echo "$f"; done \
      | tar -cf - -T - | tar -x -C "$scratch"
  fi
  echo "duplicates --change --base $base: $(cd "$scratch" && duplicates --change --most 1 --seconds 300 | pairs) pairs added"
fi
