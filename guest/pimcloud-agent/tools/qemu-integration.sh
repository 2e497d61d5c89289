#!/bin/sh
# Runs the agent's guest integration test (guest-integration.sh) and the migration
# benchmark in a QEMU guest of the `paper` topology, from the static builds in BUILD:
#   nice cmake --build build --target pimcloud-agent-static pimcloud-memhog-static \
#       pimcloud_agent_demo_service_static pimcloud_agent_migration_bench_static -j2
#   sh guest/pimcloud-agent/tools/qemu-integration.sh [BUILD=build] [OUT=runs/out/qemu/agent-it]
# Exit status: the guest test's. Results (decisions, summary, migration.txt) in OUT/results.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
BUILD=${1:-$REPO/build}
OUT=${2:-$REPO/runs/out/qemu/agent-it-$(date -u +%Y%m%dT%H%M%SZ)}
BIN=$BUILD/guest/pimcloud-agent
SCN=$(mktemp -d /tmp/pimcloud-agent-scn-XXXXXX)
trap 'rm -rf "$SCN"' EXIT
cp "$BIN/pimcloud-agent-static" "$SCN/pimcloud-agent"
cp "$BIN/pimcloud_agent_demo_service_static" "$SCN/pimcloud_agent_demo_service"
cp "$BIN/pimcloud_agent_migration_bench_static" "$SCN/pimcloud_agent_migration_bench"
cp "$BUILD/workloads/services/memhog/pimcloud-memhog-static" "$SCN/pimcloud-memhog"
cp "$HERE/guest-integration.sh" "$SCN/"
cat > "$SCN/run.sh" <<'RUN'
cd "$PIMCLOUD_SCENARIO_DIR"
chmod +x pimcloud-agent pimcloud_agent_demo_service pimcloud_agent_migration_bench pimcloud-memhog
BIN=$PIMCLOUD_SCENARIO_DIR OUT=$PIMCLOUD_RESULTS/agent SECONDS_RUN=25 sh ./guest-integration.sh
rc=$?
./pimcloud_agent_migration_bench 64 1 2 > "$PIMCLOUD_RESULTS/migration.txt" 2>&1
echo "integration rc=$rc"
exit $rc
RUN
"$REPO/.venv/bin/python" -m pimcloud.cli qemu run --topology paper --scenario "$SCN" --initramfs-only \
  --out "$OUT" --timeout 900
grep -E '^(PASS|FAIL)' "$OUT/results/scenario.log"
cat "$OUT/results/migration.txt"
! grep -q '^FAIL' "$OUT/results/scenario.log" && grep -q 'integration rc=0' "$OUT/results/scenario.log"
