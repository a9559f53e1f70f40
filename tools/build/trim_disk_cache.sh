#!/usr/bin/env bash
# Keeps Bazel's disk cache (.bazelrc: --disk_cache=~/.cache/ember/bazel-disk-cache) under a
# size limit: above EMBER_DISK_CACHE_MAX_GB (default 30), deletes the least recently used
# entries until it is under EMBER_DISK_CACHE_KEEP_GB (default 20). Bazel 4 never trims it
# itself, and every configuration (host, ASan, TSan, opt, Arm64) adds a copy of the tree.
# Safe at any time no Bazel command runs: a missing entry is rebuilt. Prints a line only
# when it deletes something.
set -euo pipefail
cache="$HOME/.cache/ember/bazel-disk-cache"
max_gb=${EMBER_DISK_CACHE_MAX_GB:-30}
keep_gb=${EMBER_DISK_CACHE_KEEP_GB:-20}
[ -d "$cache" ] || exit 0
used_kb=$(du -sk "$cache" | cut -f1)
[ "$used_kb" -gt $((max_gb * 1024 * 1024)) ] || exit 0
target_kb=$((keep_gb * 1024 * 1024))
# Oldest access first (Bazel reads an entry on every hit, so atime or mtime is its last use).
find "$cache" -type f -printf '%A@ %k %p\n' | sort -n | while read -r _ kb path; do
  [ "$used_kb" -gt "$target_kb" ] || break
  rm -f "$path"
  used_kb=$((used_kb - kb))
done
echo "trim_disk_cache: $cache trimmed to $(du -sh "$cache" | cut -f1)"
