#!/usr/bin/env bash
# paper/build.sh OUT: build OUT/paper.pdf from paper/main.tex with latexmk (pdflatex + bibtex).
#
# Inputs: the figures in OUT/figures (plots/fig_*.py) and the generated macros and tables in
# OUT/generated (paper/gen_numbers.py). Missing figures become visible placeholders and missing
# numbers a red [n/a: key] marker, so the paper always builds; the log lists what was missing.
# Exit code: latexmk's (non-zero on a LaTeX or BibTeX error).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:-$here/../out}" && cd "${1:-$here/../out}" && pwd)"
build="$out/paper-build"
mkdir -p "$build"
export TEXINPUTS="$out/figures:$out/generated:$here:"
export BIBINPUTS="$here:"
latexmk -pdf -interaction=nonstopmode -halt-on-error -quiet -outdir="$build" "$here/main.tex" >"$build/latexmk.out" 2>&1 || {
  echo "paper/build.sh: latexmk failed; last lines of $build/main.log:" >&2
  tail -n 30 "$build/main.log" >&2 || cat "$build/latexmk.out" >&2
  exit 1
}
cp "$build/main.pdf" "$out/paper.pdf"

undef=$(grep -c "Citation .* undefined\|Reference .* undefined" "$build/main.log" || true)
echo "paper/build.sh: wrote $out/paper.pdf (undefined references or citations: $undef)"
