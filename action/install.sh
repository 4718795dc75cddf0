#!/usr/bin/env bash
# Installs pneuma for pneuma's GitHub Action (action.yml): a release binary
# for the runner's OS and architecture, or a build from source at the
# action's own ref (version: source, the default; needs Go on the runner).
# The binary goes to $RUNNER_TEMP/pneuma-bin, which is added to $GITHUB_PATH.
#
#   install.sh            install (PNEUMA_VERSION: source, latest or 1.2.3)
#   install.sh platform   print the release platform (linux_amd64, ...)
set -euo pipefail

platform() {
  local os arch
  case "${RUNNER_OS:-}" in
    Linux) os=linux ;;
    macOS) os=darwin ;;
    Windows)
      echo "::error::pneuma does not run on Windows runners yet (it stops jobs as Unix process groups); use ubuntu-latest or macos-latest" >&2
      return 1 ;;
    *)
      echo "::error::unknown RUNNER_OS '${RUNNER_OS:-}' (want Linux or macOS)" >&2
      return 1 ;;
  esac
  case "${RUNNER_ARCH:-}" in
    X64) arch=amd64 ;;
    ARM64) arch=arm64 ;;
    *)
      echo "::error::pneuma has no build for RUNNER_ARCH '${RUNNER_ARCH:-}' (X64 and ARM64 only)" >&2
      return 1 ;;
  esac
  echo "${os}_${arch}"
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | awk '{print $1}'
}

from_release() {
  local version=$1 plat=$2 bin=$3 url tmp want got
  url="https://github.com/pneuma-cli/pneuma/releases/download/v${version#v}"
  if [ "$version" = latest ]; then
    url="https://github.com/pneuma-cli/pneuma/releases/latest/download"
  fi
  tmp=$(mktemp -d)
  curl -fsSL --retry 3 -o "$tmp/pneuma_${plat}.tar.gz" "$url/pneuma_${plat}.tar.gz"
  curl -fsSL --retry 3 -o "$tmp/checksums.txt" "$url/checksums.txt"
  want=$(awk -v f="pneuma_${plat}.tar.gz" '$2 == f {print $1}' "$tmp/checksums.txt")
  got=$(sha256 "$tmp/pneuma_${plat}.tar.gz")
  if [ -z "$want" ] || [ "$want" != "$got" ]; then
    echo "::error::pneuma_${plat}.tar.gz does not match checksums.txt of $url (want '${want}', got '${got}')" >&2
    return 1
  fi
  tar -xzf "$tmp/pneuma_${plat}.tar.gz" -C "$bin" pneuma
  rm -rf "$tmp"
}

from_source() {
  local bin=$1
  if ! command -v go >/dev/null 2>&1; then
    echo "::error::building pneuma from source needs Go: add actions/setup-go before this action, or set its version input to a release" >&2
    return 1
  fi
  (cd "${GITHUB_ACTION_PATH:?}" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X github.com/pneuma-cli/pneuma/cmd.Version=${GITHUB_ACTION_REF:-source}" \
    -o "$bin/pneuma" .)
}

main() {
  local plat bin version
  plat=$(platform)
  if [ "${1:-}" = platform ]; then
    echo "$plat"
    return 0
  fi
  bin="${RUNNER_TEMP:?}/pneuma-bin"
  mkdir -p "$bin"
  version="${PNEUMA_VERSION:-source}"
  if [ "$version" = source ]; then
    from_source "$bin"
  else
    from_release "$version" "$plat" "$bin"
  fi
  echo "$bin" >> "${GITHUB_PATH:?}"
  "$bin/pneuma" version
}

main "$@"
