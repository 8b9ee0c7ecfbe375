#!/usr/bin/env bash
# Install the Debian 12 packages ioattn needs; does nothing when they are all there.
# Used by `make test` and `make figures`; safe to run by hand. Needs root or sudo for installs.
set -euo pipefail

packages=(
  cmake make g++ pkg-config
  libeigen3-dev libomp-dev librapidcheck-dev libgtest-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libcsv-dev
  hipcc libamdhip64-dev                     # AMD compile check (compiled, not run)
  python3-matplotlib python3-numpy          # plots (Debian's /usr/bin/python3)
  latexmk texlive-latex-base texlive-latex-recommended texlive-latex-extra
  texlive-fonts-recommended texlive-science # paper
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
