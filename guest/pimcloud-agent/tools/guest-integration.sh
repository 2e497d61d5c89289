#!/bin/sh
# Integration test of the agent inside the guest (QEMU or gem5, `paper` topology: CPUs 0-3
# on node 0, 4-11 on stack node 1, 12-19 on stack node 2; root; cgroup v2).
# Two stand-in services and a busy best-effort job; the agent (PIMCloud) changes their
# cores and migrates pages between stacks, onto a stack a memory hog has nearly filled;
# one service is killed mid-run. Checks the effect in the kernel's own files (cpusets,
# cgroups, /proc/<pid>/numa_maps), not only in the log. Prints PASS/FAIL lines; exits 1
# on any failure.
#   BIN=/usr/local/bin OUT=/tmp/agent-it sh guest-integration.sh
set -u
BIN=${BIN:-/usr/local/bin}
OUT=${OUT:-/tmp/agent-it}
CG=/sys/fs/cgroup
ROOT=$CG/pimcloud
SECONDS_RUN=${SECONDS_RUN:-25}
fail=0
check() {  # check NAME CONDITION-EXIT-CODE DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1 ($3)"; else echo "FAIL $1 ($3)"; fail=1; fi
}
cpus_in() {  # number of CPUs in a cpulist like 0-3,12
  echo "$1" | tr ',' '\n' | awk -F- 'NF==2{n+=$2-$1+1;next} NF==1&&$1!=""{n++} END{print n+0}'
}
cpu_list_has_any() {  # cpu_list_has_any LIST LOW HIGH: 1 if some CPU of LIST is in [LOW, HIGH]
  echo "$1" | tr ',' '\n' | awk -F- -v lo="$2" -v hi="$3" \
    '{a=$1; b=(NF==2)?$2:$1; if ($1 != "" && a <= hi && b >= lo) hit=1} END{print hit+0}'
}
node_pages() {  # node_pages PID NODE: pages of the process on NODE
  awk -v k="N$2=" '{for(i=1;i<=NF;i++) if(index($i,k)==1){split($i,a,"="); n+=a[2]}} END{print n+0}' \
    "/proc/$1/numa_maps"
}

mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl "$OUT"/summary.json
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none $CG
cat > "$OUT/agent.json" <<JSON
{
  "policy": "pimcloud",
  "topology": "sysfs",
  "latency": "$OUT/latency.jsonl",
  "control": "$OUT/control.jsonl",
  "log": "$OUT/decisions.jsonl",
  "summary": "$OUT/summary.json",
  "cgroup": {"root": "$ROOT", "mode": "cpuset"},
  "placement": {"static": "cc", "reserve_mib": 16},
  "hotness_scan_intervals": 5,
  "apps": [
    {"name": "a", "qos_ms": 1, "max_rps_host": 300, "max_rps_pim": 100, "threads": 4},
    {"name": "b", "qos_ms": 1, "max_rps_host": 100, "max_rps_pim": 200, "threads": 4}
  ]
}
JSON
"$BIN/pimcloud-agent" check --config "$OUT/agent.json" || exit 1

# The services outlive the agent's run (the memory hog's fill takes a while under TCG);
# the script ends them. a prefers host cores (rank 1: host group, resident stack 2) and needs 14 CPUs: all host,
# all of stack 2 and two remote cores of stack 1. b (stack 1) needs only 2.
"$BIN/pimcloud-agent" exec --placement cc --resident 2 -- \
  "$BIN/pimcloud_agent_demo_service" --name a --need 14 --qos-ns 1000000 --mib 64 \
  --threads 4 --seconds $((SECONDS_RUN + 60)) --stats "$OUT/latency.jsonl" &
A=$!
"$BIN/pimcloud-agent" exec --placement cc --resident 1 -- \
  "$BIN/pimcloud_agent_demo_service" --name b --need 2 --qos-ns 1000000 --mib 32 \
  --threads 4 --seconds $((SECONDS_RUN + 60)) --stats "$OUT/latency.jsonl" &
B=$!
sh -c 'while :; do :; done' &
BE=$!
sleep 1
# Memory pressure: stack 1, where a's pages go with its remote cores, keeps 24 MiB free,
# 8 MiB above the agent's reserve: a's threads' shares (16 MiB each) do not fit.
HOG=""
if [ -x "$BIN/pimcloud-memhog" ]; then
  "$BIN/pimcloud-memhog" --node 1 --free-mib 24 > "$OUT/memhog.log" 2>&1 &
  HOG=$!
  for _ in $(seq 1 600); do grep -q filled "$OUT/memhog.log" 2>/dev/null && break; sleep 0.1; done
fi
a_n1_before=$(node_pages $A 1)
a_n2_before=$(node_pages $A 2)

"$BIN/pimcloud-agent" run --config "$OUT/agent.json" --duration-s "$SECONDS_RUN" &
AGENT=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "$ROOT/be" ] && break; sleep 0.2; done
echo $BE > "$ROOT/be/cgroup.procs"
sleep $((SECONDS_RUN / 2))
b_cpus=$(cat "$ROOT/lc-b/cpuset.cpus")
# b is killed: the agent must notice within one interval and give its cores back.
# The kill happens between these two clock reads: under TCG one read (a fork and exec of
# cut) can take tens of ms, and the agent may log the exit before the second returns.
b_kill_from_s=$(cut -d" " -f1 /proc/uptime)
kill -KILL $B
b_killed_s=$(cut -d" " -f1 /proc/uptime)
sleep $((SECONDS_RUN / 2 - 3))

a_cpus=$(cat "$ROOT/lc-a/cpuset.cpus")
be_cpus=$(cat "$ROOT/be/cpuset.cpus" 2>/dev/null)
a_n1_after=$(node_pages $A 1)
a_in_cg=$(grep -c "^$A\$" "$ROOT/lc-a/cgroup.procs")
wait $AGENT
agent_rc=$?
b_cgroup_left=$([ -d "$ROOT/lc-b" ] && echo yes || echo no)
kill $A $BE $HOG 2>/dev/null
wait 2>/dev/null

check "agent exit" $agent_rc "rc=$agent_rc"
check "a in its cgroup" $([ "$a_in_cg" -eq 1 ]; echo $?) "pid $A"
# Convergence to all 14 takes longer on a loaded host: what must hold is the upsize order,
# all host cores and the resident stack first, then a remote PIM core of stack 1 (4-11).
a_remote=$(cpu_list_has_any "$a_cpus" 4 11)
check "a upsized onto a remote PIM core" $([ "$(cpus_in "$a_cpus")" -ge 13 ] && [ "$a_remote" -eq 1 ]; echo $?) "cpuset.cpus=$a_cpus"
check "b downsized" $([ "$(cpus_in "$b_cpus")" -lt 8 ]; echo $?) "cpuset.cpus=$b_cpus"
check "CC placed a on stack 2" $([ "$a_n2_before" -gt "$a_n1_before" ]; echo $?) \
  "N1=$a_n1_before N2=$a_n2_before pages at start"
check "a's pages migrated to stack 1" $([ "$a_n1_after" -gt "$a_n1_before" ]; echo $?) \
  "N1 $a_n1_before -> $a_n1_after pages"
# Pages booked are pages the kernel moved: never more than numa_maps' gain on stack 1 (a
# has no pages moved back while it keeps its remote cores; booking the plan instead of the
# kernel's answer made phantom pages). Equal within 1% without transparent huge pages;
# with them (Debian's stock kernel) a huge page also takes base pages the plan left out,
# so the gain can exceed what was booked: both figures are printed.
moved=$(grep '"app":"a"' "$OUT/decisions.jsonl" | grep -o '"pages_moved":[0-9]*' |
  awk -F: '{s+=$2} END{print s+0}')
gained=$((a_n1_after - a_n1_before))
# With THP always (the stock kernel) khugepaged may also collapse moved base pages into a
# huge page allocated on another node, taking them back off stack 1 after they were booked
# (a CI run saw 28 booked, 11 gained): the bound holds only without it, and is reported
# there.
booked_ok=$(awk -v m="$moved" -v g="$gained" 'BEGIN{exit !(m>0 && m<=g+0.01*g+1)}'; echo $?)
if grep -q '\[always\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
  echo "INFO log books no page numa_maps did not see move: $([ "$booked_ok" -eq 0 ] &&
    echo yes || echo "no, with THP always") (pages_moved total $moved, N1 gained $gained)"
  check "the log books pages moved" $([ "$moved" -gt 0 ]; echo $?) "pages_moved total $moved"
else
  check "log books no page numa_maps did not see move" "$booked_ok" \
    "pages_moved total $moved, N1 gained $gained"
fi
echo "INFO booked and moved within 1%: $(awk -v m="$moved" -v g="$gained" \
  'BEGIN{d=m-g; if(d<0)d=-d; print (d<=0.01*g+1) ? "yes" : "no"}') (THP: $(cat \
  /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo absent))"
if [ -n "$HOG" ]; then
  # The agent stops at its reserve, or earlier where the kernel's watermarks say ENOMEM.
  check "moves stop at the nearly full stack, and say why" \
    $(grep -qE 'at its reserve|ENOMEM' "$OUT/decisions.jsonl"; echo $?) "$(cat "$OUT/memhog.log")"
fi
exit_t=$(grep '"app":"b","event":"exit"' "$OUT/decisions.jsonl" | head -1 |
  sed 's/.*"t_ns":\([0-9]*\).*/\1/')
# The exit is seen by the first interval after the kill: within 100 ms (+20 ms for the
# log's own clock reads) when the loop keeps time, within the loop's largest measured gap
# when TCG's vCPU scheduling delays an interval (a CI run: 126 ms with a 592 ms gap).
gap=$(grep -o '"interval_gap_max_ms": *[0-9.]*' "$OUT/summary.json" | awk -F: '{print $2+0}')
check "b's exit logged by the first interval after the kill" \
  $(awk -v t="${exit_t:-0}" -v f="$b_kill_from_s" -v k="$b_killed_s" -v g="${gap:-0}" \
    'BEGIN{b=(g/1e3>0.1 ? g/1e3 : 0.1)+0.02; exit !(t>0 && t/1e9>=f-0.01 && t/1e9-k<=b)}'
    echo $?) \
  "killed between ${b_kill_from_s} and ${b_killed_s} s, exit logged at ${exit_t:-none} ns, largest interval gap ${gap:-?} ms"
check "b's cgroup removed" $([ "$b_cgroup_left" = no ]; echo $?) "lc-b present: $b_cgroup_left"
b_first=$(echo "$b_cpus" | cut -d, -f1 | cut -d- -f1)
check "b's cores recycled" \
  $(cpu_list_has_any "$be_cpus,$a_cpus" "$b_first" "$b_first" | grep -q 1; echo $?) \
  "b had $b_cpus; be=$be_cpus a=$a_cpus"
# The loop's period is a figure, not a check: TCG's vCPU scheduling sets it as much as the
# agent does (the summary's interval_phase_max_ms says which step took the time).
echo "INFO largest gap between intervals ${gap} ms (3 intervals: 300 ms)"
check "BE job has the leftover CPUs" $([ -n "$be_cpus" ]; echo $?) "be cpuset.cpus=$be_cpus"
check "summary written" $([ -s "$OUT/summary.json" ]; echo $?) "$OUT/summary.json"
exit $fail
