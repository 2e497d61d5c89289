"""One run's guest scenario: the folder the guest init unpacks and runs (guest/init/README.md).

    run.sh          starts the manager (pimcloud-agent), the best-effort jobs and every LC
                    service (the harness in integrated mode), waits for the services,
                    stops the rest; exit 0 only when every service finished (or was
                    killed by the scenario, or by the kernel's OOM killer: oom-killed.txt)
    scenario.json   the run's parameters (also copied into the results)
    agent.json      the agent's config (guest/pimcloud-agent/config): policy, placement, apps
    bin/, lib/      our programs from the host's CMake build and the shared libraries they
                    need beyond the C/C++ runtime, for images that lack them; the guest
                    prefers /opt/pimcloud/bin (the image's own copies). gem5 runs with app
                    checkpoints ship none: the project image has them, and m5 readfile of
                    20 MB would cost simulated (detailed-core) time

Results the guest leaves in /results, as analysis reads them (analysis/README.md):
``<app>/lats.bin``, ``<app>/requests.csv``, ``decisions.jsonl``, ``<job>/progress.jsonl``
(pimcloud.workloads.besteffort), ``events.jsonl``, ``<app>|<job>/numa_maps.start|last``,
``cgroups.txt`` (each cgroup's cpus and cpu.max), ``oom-killed.txt`` (the kernel's
"Killed process" line of each service its OOM killer ended), ``node-meminfo.start|end``
(every node's meminfo, in runs with tiering: the page cache per node).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.guest.hw_counters import HOTTEST_FILE
from pimcloud.paths import program_candidates
from pimcloud.topology import load_topology
from pimcloud.topology.layout import node_of_cluster, slow_tier_node
from pimcloud.topology.model import Topology, stack_cluster
from pimcloud.workloads.besteffort import PROGRAM as BE_PROGRAM
from pimcloud.workloads.besteffort import be_command
from pimcloud.workloads.harness_args import LaunchArgs, RunArgs
from pimcloud.workloads.services import SERVICES

from .spec import TIERING_MODES, Run

GUEST_RESULTS = "/results"  # PIMCLOUD_RESULTS in the guest init
LATENCY_FILE = "/run/pimcloud/latency.jsonl"  # harness --stats-file = the agent's "latency"
PLACED_FILE = "/run/pimcloud/placed"  # the agent's "placed": its initial allocation is made
CONTROL_FILE = "/run/pimcloud/control.jsonl"  # the agent's requests (profiling), as it writes
CGROUP_ROOT = "/sys/fs/cgroup/pimcloud"  # the agent's cgroup tree (its config's default)
OOM_FILE = "oom-killed.txt"  # the kernel's "Killed process" line of each OOM-killed service
NODE_MEMINFO = "node-meminfo"  # .start, .end: each node's meminfo, for tiering runs
NUMA_MAPS_PERIOD_S = 0.5  # how often run.sh keeps each service's latest numa_maps


# Simulated seconds allowed for a restored guest to start its services before the
# warm-up begins (kvstore and oltp fill their tables in simulated time).
STARTUP_ALLOWANCE_S = 1.0
# gem5 runs: services still running this many times their requests' span (warm-up plus
# measured) after they started are hung; the scenario prints their threads and ends them.
HANG_FACTOR = 3.0
HANG_SLACK_S = 0.2  # for the drain of the last requests, when set-up is fast-forwarded
HANG_EXIT = 4  # run.sh's exit status when its watchdog ended hung services
HANG_MARK = "pimcloud-hang"  # the watchdog's console lines, one per service thread
HANG_NOTICE = "services still running after"  # its headline (a pimcloud-run line)
# Guest seconds more the watchdog allows once every service's measured requests are done
# and the run wraps up on the atomic cores: kvstore's end-of-run check reads each of its
# keys (200,000 took 72 ms natively, more than 0.42 s on mini's atomic cores), and the
# services then write their outputs. The measured part's bound would call that a hang.
WRAPUP_ALLOWANCE_S = 2.0
WRAPUP_FILE = "/run/pimcloud/wrapping-up"  # made when the wrap-up begins


def fast_forwarded(run: Run, backend: str) -> bool:
    """Whether the run's services load on the atomic cores and start after a switch."""
    return backend == "gem5" and run.spec.gem5.fast_forward and not app_checkpointed(run,
                                                                                     backend)


def part_switches_at_start(run: Run, backend: str) -> bool:
    """Whether a run restored from an app checkpoint starts on the atomic cores (with
    caches) and switches to the detailed ones just before its start signal: its own part
    (manager, cgroups, start files) then costs atomic speed, as fast-forwarded set-ups do."""
    return app_checkpointed(run, backend) and run.spec.gem5.fast_forward


WRAPUP_JOIN_S = 10  # guest seconds the wrap-up waits for the switch back, at most
DONE_FIFO = "/run/pimcloud/done.fifo"  # each service writes a line once its requests are done
# The best-effort jobs' pids, for the wrap-up to stop them: their work after the measured
# part counts for nothing, and on the atomic cores it would cost host time.
BE_PIDS = "/run/pimcloud/be.pids"


def wraps_up_atomic(run: Run, backend: str) -> bool:
    """Whether a gem5 run leaves the detailed cores once every service's measured requests
    are done: its outputs, checks and results are then written at atomic speed (a
    service's end-of-run check, e.g. kvstore's scan of every key, is no measurement)."""
    return (backend == "gem5" and run.spec.gem5.fast_forward
            and synchronised_start(run, backend))


def wrapup_allowance_s(run: Run, backend: str) -> float:
    """Guest seconds the watchdog and gem5's limit allow for the run's wrap-up."""
    return WRAPUP_ALLOWANCE_S if wraps_up_atomic(run, backend) else 0.0


def waited_services(run: Run) -> list[str]:
    """The services whose lines the switcher waits for, each once: its own done line
    (harness --done-file: "<app> <pid>"), or the line a kill event writes for it (it may
    kill an app before or after that app's done line)."""
    return list(run.scenario.apps)


def wrapup_lines(run: Run, backend: str) -> list[str]:
    """Before the switch to the detailed cores: a FIFO the services write to when their
    requests are done (harness --done-file) and a reader blocked on it (no polling: it costs
    no detailed-core time) that stops the best-effort jobs (SIGSTOP; continued before they
    are ended) and switches back to the atomic cores after the last one."""
    if not wraps_up_atomic(run, backend):
        return ['SWITCHER=""']
    ending = len(waited_services(run))
    return [
        # The script keeps the FIFO open too (fd 9, read-write: the open never waits), so
        # that the lines wrapup_join_lines writes are kept whatever the switcher's state.
        f"rm -f {DONE_FIFO} {WRAPUP_FILE}; mkfifo {DONE_FIFO}; exec 9<>{DONE_FIFO}",
        # A line counts once per app: a killed app's may come twice (done, then killed).
        f'( exec 3<>{DONE_FIFO}; seen=" "; n=0; while [ $n -lt {ending} ] && '
        'read -r app _ <&3; do case "$seen" in *" $app "*) ;; '
        '*) seen="$seen$app "; n=$((n+1)) ;; esac; done; '
        f"touch {WRAPUP_FILE}; "
        'say "measured requests done: the wrap-up on the atomic cores"; '
        f"for pid in $(cat {BE_PIDS} 2>/dev/null); do kill -STOP $pid 2>/dev/null; done; "
        "m5 switchcpu ) &",
        "SWITCHER=$!",
    ]


def wrapup_join_lines(run: Run, backend: str) -> list[str]:
    """Right after the services ended: the switch back to the atomic cores is made before
    the wrap-up, not left to the switcher's next turn on a core (a service that exits right
    after its done line used to have the switcher killed unscheduled, and its whole
    wrap-up ran on the detailed cores). A service that ended without its line (the OOM
    killer, the watchdog) must not leave the switcher waiting: until the switcher has
    begun (WRAPUP_FILE), one line for every service it waits for is written beside theirs
    (on the script's own descriptor of the FIFO); it reads as many as it waits for, so the
    extra lines change nothing. A switcher that still has not ended after
    WRAPUP_JOIN_S (stopped, its FIFO gone) is killed, and the wrap-up goes on where it is.
    The guard naps killably (killable_nap_lines): a plain sleep would outlive the killed
    guard and keep the script's output open for WRAPUP_JOIN_S after its end."""
    if not wraps_up_atomic(run, backend):
        return []
    lines = "".join(f"{app} ended\\n" for app in waited_services(run))
    guard = killable_subshell([f"nap {WRAPUP_JOIN_S}", "kill -KILL $SWITCHER"])
    return [f'if [ -n "$SWITCHER" ]; then [ -e {WRAPUP_FILE} ] || printf \'{lines}\' >&9; '
            f"{guard} & JOIN_GUARD=$!; "
            "wait $SWITCHER; kill $JOIN_GUARD 2>/dev/null; fi; exec 9>&-"]


def app_checkpointed(run: Run, backend: str) -> bool:
    """Whether the run restores an app checkpoint: its services were launched and loaded
    once for its app set (setup_script), and it brings only its own part (run_part_script)."""
    return backend == "gem5" and run.spec.gem5.app_checkpoint


def synchronised_start(run: Run, backend: str) -> bool:
    """Whether every service loads first and starts its requests on a signal (its start
    file, which carries the run's own options): with fast-forward or an app checkpoint,
    and whenever scenario events are timed from that start."""
    return (fast_forwarded(run, backend) or app_checkpointed(run, backend)
            or bool(run.scenario.events) or waits_placed(run))


def waits_placed(run: Run) -> bool:
    """Whether the requests wait for the manager's initial allocation (wait_placed with
    a manager that runs the agent)."""
    return run.scenario.wait_placed and run.scenario.manager != "none"


def placed_lines(run: Run) -> list[str]:
    """Wait until the agent says its initial allocation is made (PLACED_FILE), at most
    50 of its intervals and at least 1 s; a run goes on without it, and says so."""
    if not waits_placed(run):
        return []
    steps = max(100, math.ceil(50 * run.scenario.interval_s / 0.01))
    return [
        'if [ -n "$AGENT" ]; then',
        "  n=0",
        f"  while [ ! -e {PLACED_FILE} ] && [ $n -lt {steps} ] && kill -0 $AGENT 2>/dev/null; do",
        "    sleep 0.01; n=$((n + 1))",
        "  done",
        f'  if [ -e {PLACED_FILE} ]; then say "manager placed the apps"; '
        'elif ! kill -0 $AGENT 2>/dev/null; then say "manager exited before it placed the apps"; '
        f'else say "manager did not place the apps in {steps * 0.01:g} s: starting anyway"; fi',
        "fi",
    ]


def start_file_of(app: str) -> str:
    """The file whose creation starts ``app``'s requests (with the run's options in it)."""
    return f"/run/pimcloud/start-{app}"


def interval_ms(run: Run) -> str:
    """The monitoring interval (agent) and the live-statistics interval (harness)."""
    return f"{run.scenario.interval_s * 1e3:g}"


def resident_stack(run: Run, index: int) -> int:
    """The stack (1..M) the ``index``-th app's memory prefers under CC: its own setting,
    or the apps in turn over the stacks."""
    app = run.apps[index]
    if app.resident is not None:
        return app.resident
    return index % len(load_topology(run.topology).stacks) + 1


def first_stack_node(topology: Topology) -> int:
    """The NUMA node of stack 1: 1 after the host node, 0 on a PIM-only system (arch9),
    whose kernel numbers the first stack node 0."""
    return node_of_cluster(topology, stack_cluster(0))


def placement_prefix(run: Run, index: int) -> list[str]:
    """``pimcloud-agent exec`` that starts a service under the run's static placement
    (CC: preferred on its resident stack; IL: interleaved over the stacks; FT: as is).
    The agent takes nodes: stack k is node k, or k - 1 on a PIM-only system (arch9)."""
    placement = run.scenario.placement
    if placement == "ft":
        return []
    topology = load_topology(run.topology)
    slow = slow_tier_node(topology)
    first = first_stack_node(topology)
    return ["pimcloud-agent", "exec", "--placement", placement,
            "--resident", str(first + resident_stack(run, index) - 1),
            "--stacks", str(len(topology.stacks)),
            *(["--first-stack", str(first)] if first != 1 else []),
            *(["--slow-node", str(slow)] if slow else []), "--"]


def measured_seconds(run: Run, app: str) -> float:
    """An app measures until the run ends, from its arrival when it arrives later, to
    its exit when it exits earlier (events are timed from the start, warm-up included)."""
    length = run.spec.length
    arrive = run.scenario.event_of(app, "arrive")
    leave = run.scenario.event_of(app, "exit")
    begin = arrive.at_s if arrive else 0.0
    end = leave.at_s if leave else length.warmup_s + length.measured_s
    return max(end - begin - length.warmup_s, 1e-3)
# Libraries every Debian root has: never shipped.
BASE_LIBRARIES = re.compile(r"^(linux-vdso|ld-linux|libc\.|libm\.|libstdc\+\+|libgcc_s|"
                            r"libpthread|libdl|librt)")


def shared_libraries(program: Path) -> list[Path]:
    """The shared libraries ``program`` needs beyond the C/C++ runtime (from ldd)."""
    try:
        listing = subprocess.run(["ldd", str(program)], capture_output=True, text=True,
                                 check=False, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    libraries = []
    for line in listing.splitlines():
        name, _, rest = line.strip().partition(" => ")
        path = rest.split(" (")[0].strip()
        if rest and path.startswith("/") and not BASE_LIBRARIES.match(name):
            libraries.append(Path(path))
    return libraries


class AgentConfigError(ValueError):
    """The agent rejected the config a run would give it (its message says why)."""


def check_agent_config(path: Path) -> None:
    """Let the host's build of pimcloud-agent validate the config before a guest boots,
    so a bad config fails in a second instead of as an unmanaged run."""
    agents = program_candidates("pimcloud-agent")
    if not agents:
        return
    done = subprocess.run([str(agents[0]), "check", "--config", str(path)],
                          capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        raise AgentConfigError(f"{path}: pimcloud-agent check failed: "
                               f"{(done.stdout + done.stderr).strip()}")


def agent_config(run: Run) -> dict[str, Any]:
    s = run.scenario
    topology = load_topology(run.topology)
    # A far-memory node is the slow tier, and not a stack, for every manager.
    slow = slow_tier_node(topology)
    # The agent reads a PIM-only system's nodes as stacks from node 0 only when told.
    first = first_stack_node(topology)
    apps = []
    for app in run.apps:
        entry: dict[str, Any] = {"name": app.name, "threads": app.threads or s.threads}
        if app.qos_ns is not None:
            entry["qos_ms"] = app.qos_ns / 1e6
        if app.max_rps_host_core is not None and app.max_rps_pim_core is not None:
            entry["max_rps_host"] = app.max_rps_host_core
            entry["max_rps_pim"] = app.max_rps_pim_core
        if s.event_of(app.name, "arrive"):
            entry["arrives"] = True
        apps.append(entry)
    return {
        "policy": s.manager,
        "options": s.options_of(s.manager),
        "interval_ms": s.interval_s * 1e3,
        **s.control.agent_config(),
        "topology": "sysfs",
        "placement": {"static": s.placement,
                      **({"tiering_pages": s.tiering_pages, "tiering": TIERING_MODES[s.tiering]}
                         if s.tiering != "none" else {}),
                      **({"reserve_mib": s.reserve_bytes / 2**20}
                         if s.reserve_bytes is not None else {}),
                      **({"slow_node": slow} if slow else {}),
                      **({"first_stack": first} if first != 1 else {}),
                      **({"locality_pages": s.tiering_pages} if "migration" in s.dynamic
                         else {}),
                      **({"replicate": True} if "replication" in s.dynamic else {})},
        "apps": apps,
        "latency": LATENCY_FILE,
        "control": CONTROL_FILE,
        "log": f"{GUEST_RESULTS}/decisions.jsonl",
        "summary": f"{GUEST_RESULTS}/agent-summary.json",
        **({"hotness": s.hotness} if s.hotness != "idle" else {}),
        **({"hotness_shadow": True} if s.hotness_shadow else {}),
        **({"placed": PLACED_FILE} if s.wait_placed else {}),
    }


def launch_args(run: Run, index: int, backend: str) -> LaunchArgs:
    """What the ``index``-th LC app is launched with: its service as loaded (program,
    workers, data, engine options) and, with a synchronised start, its ready/start files."""
    s = run.scenario
    app = run.apps[index]
    synchronised = synchronised_start(run, backend)
    return LaunchArgs(program=f"pimcloud-{app.name}", threads=app.threads or s.threads,
                      data=app.data, options=tuple(sorted(app.options.items())),
                      ready_file=f"/run/pimcloud/ready-{app.name}" if synchronised else None,
                      start_file=start_file_of(app.name) if synchronised else None,
                      prewarm=app.prewarm)


def run_args(run: Run, index: int, backend: str) -> RunArgs:
    """The ``index``-th LC app's options of this run (load, lengths, seed, statistics)."""
    s = run.scenario
    app = run.apps[index]
    return RunArgs(
        rps=s.rps_of(app), seconds=measured_seconds(run, app.name),
        warmup_s=run.spec.length.warmup_s, seed=s.seed + index,
        out=f"{GUEST_RESULTS}/{app.name}", stats_file=LATENCY_FILE,
        interval_ms=float(interval_ms(run)),
        # One dump of gem5's statistics per monitoring interval is enough for the whole
        # run; when every app asked, the dumps would multiply.
        gem5_hooks=backend == "gem5" and run.spec.gem5.harness_hooks and index == 0,
        # gem5 records each app's requests as its own work item type
        # (system.work_item_type<index>), in the order of the run's apps.
        gem5_work_type=index if backend == "gem5" else None,
        # The agent profiles apps it has no max loads for: the harness answers there.
        control_file=CONTROL_FILE if s.manager != "none" else None,
        done_file=DONE_FIFO if wraps_up_atomic(run, backend) else None,
        extra=run.spec.early_stop.harness_args(app.qos_ns))


def harness_command(run: Run, index: int, backend: str) -> list[str]:
    """The whole harness command of the ``index``-th LC app (what scenario.json records):
    the static placement, the launch options, the run's options (in the start file when
    the start is synchronised)."""
    return [*placement_prefix(run, index), *launch_args(run, index, backend).args(),
            *run_args(run, index, backend).args()]


def shell_words(words: list[str]) -> str:
    """``words`` quoted for run.sh, with guest result paths under $R (the init's folder)."""
    return " ".join(shlex.quote(part) if not part.startswith(GUEST_RESULTS) else
                    f'"$R{part[len(GUEST_RESULTS):]}"' for part in words)


def hang_after_s(run: Run, backend: str) -> float | None:
    """Guest seconds after which run.sh's watchdog declares the services hung, counted
    from the start signal (fast-forward) or the services' launch; None: no watchdog.

    Only gem5 runs have one: there a hung guest idles for hours of host time until the
    simulated-time limit, while QEMU runs are bounded by their host-time limit."""
    if backend != "gem5":
        return None
    length = run.spec.length
    # Counted from the start signal when the services loaded before it.
    slack = HANG_SLACK_S if synchronised_start(run, backend) else STARTUP_ALLOWANCE_S
    return HANG_FACTOR * (length.warmup_s + length.measured_s) + slack


def watchdog_lines(hang_s: float, wrapup_s: float = 0.0) -> list[str]:
    """Shell lines that start the watchdog (its pid in WATCHDOG): after ``hang_s`` seconds
    (``wrapup_s`` more if the wrap-up has begun by then: WRAPUP_FILE) it prints state, CPU,
    kernel wait channel and current system call of every thread of every LC service, then
    kills them; run.sh then exits with HANG_EXIT."""
    extend = ([f"  if [ -e {WRAPUP_FILE} ]; then nap {wrapup_s:.3f}; "
               f"waited=\"{hang_s:.3f} s and {wrapup_s:.3f} s of wrap-up\"; fi"]
              if wrapup_s > 0 else [])
    return [
        "(",
        *killable_nap_lines(),
        f"  nap {hang_s:.3f}",
        f'  waited="{hang_s:.3f} s"',
        *extend,
        # Services that ended but are not reaped yet are zombies (state Z), not hung.
        '  alive=""',
        '  for pid in $LC; do [ "$(cut -d" " -f3 /proc/$pid/stat 2>/dev/null)" = Z ] || '
        '{ [ -e /proc/$pid ] && alive=1; }; done',
        '  [ -n "$alive" ] || exit 0',
        "  touch /run/pimcloud/hung",
        f'  say "{HANG_NOTICE} $waited: hung; their threads follow"',
        "  for pid in $LC; do",
        "    for t in /proc/$pid/task/*; do",
        '      [ -r "$t/stat" ] || continue',
        # stat fields 3 and 39: state and the CPU it last ran on (comm has no spaces).
        f'      echo "{HANG_MARK} pid $pid tid ${{t##*/}} state $(cut -d" " -f3 "$t/stat")'
        ' cpu $(cut -d" " -f39 "$t/stat") wchan $(cat "$t/wchan" 2>/dev/null)'
        ' syscall $(cat "$t/syscall" 2>/dev/null)"',
        "    done",
        "  done",
        "  kill -KILL $LC 2>/dev/null",
        ") &",
        "WATCHDOG=$!",
    ]


def hog_command(stack: int | None, free_bytes: int | None) -> str:
    free_mib = (free_bytes or 0) // (1 << 20)
    return (f'pimcloud-memhog --node {stack} --free-mib {free_mib} '
            f'> "$R/memhog-stack{stack}.log" 2>&1')


def prefill_lines(run: Run) -> list[str]:
    """Fill events at time 0: the stack is full when the services start, so the hog runs
    (and has filled) before the start signal, and in gem5 before the switch to the
    detailed cores: filling is set-up, and on the detailed cores a fill of most of a stack
    cost more simulated time than the measured requests (0.22 of 0.27 s a run)."""
    lines = ['TIMERS=""']
    for event in run.scenario.events:
        if event.kind != "fill" or event.at_s > 0:
            continue
        log = f'"$R/memhog-stack{event.stack}.log"'
        lines += [f"{hog_command(event.stack, event.free_bytes)} &", 'TIMERS="$TIMERS $!"',
                  f"while ! grep -q filled {log} 2>/dev/null; do",
                  '  kill -0 $! 2>/dev/null || { say "the memory hog failed: see its log"; '
                  "exit 3; }",
                  "  sleep 0.05",
                  "done",
                  f"event 0 fill stack{event.stack}"]
    return lines


def killable_nap_lines() -> list[str]:
    """For a background subshell of run.sh: ``nap SECONDS`` sleeps in a child that goes
    with the subshell when run.sh ends it (SIGTERM). A plain ``sleep`` would outlive it,
    holding the scenario's output pipe open, and the guest init waits for that pipe's end
    before it sends the results: up to the sleep's length of simulated time for nothing
    (0.36 s of a 0.55 s gem5 run before this, most of its host time)."""
    # A TERM between the sleep's start and ``napping=$!`` finds no pid to kill: the sleep
    # holds none of the script's descriptors, so one left behind keeps nothing open.
    return ["  trap 'kill $napping 2>/dev/null; exit 0' TERM",
            '  nap() { sleep "$1" </dev/null >/dev/null 2>&1 & napping=$!; wait $napping; }']


def killable_subshell(commands: list[str]) -> str:
    """``commands`` in a one-line subshell that can nap (killable_nap_lines)."""
    return "( " + "; ".join([*(line.strip() for line in killable_nap_lines()), *commands]) + " )"


def kernel_file_lines(run: Run) -> list[str]:
    """Each service's and best-effort job's numa_maps at the start and its latest while it
    runs (a sampler every NUMA_MAPS_PERIOD_S), so pages moved can be checked against the
    kernel's own count. The jobs were started before (best_effort_lines: BE_<k>)."""
    processes = [(f"$PID_{index}", app) for index, app in enumerate(run.scenario.apps)]
    processes += [(f"$BE_{index}", job) for index, job in enumerate(run.scenario.be)]
    lines = ["(", *killable_nap_lines(), "  while :; do"]
    for pid, name in processes:
        lines.append(f'    cat /proc/{pid}/numa_maps > "$R/{name}/numa_maps.tmp" '
                     f'2>/dev/null && [ -s "$R/{name}/numa_maps.tmp" ] && '
                     f'mv "$R/{name}/numa_maps.tmp" "$R/{name}/numa_maps.last"')
    lines += [f"    nap {NUMA_MAPS_PERIOD_S}", "  done", ") >/dev/null 2>&1 &", 'SAMPLER=$!']
    for pid, name in processes:
        lines.append(f'cat /proc/{pid}/numa_maps > "$R/{name}/numa_maps.start" 2>/dev/null')
    if run.scenario.tiering != "none":
        lines.append(node_meminfo_line("start"))
    return lines


def node_meminfo_line(when: str) -> str:
    """Each node's meminfo (FilePages: the page cache, which no process's numa_maps shows,
    and HeteroOS-LRU moves) into node-meminfo.<when>."""
    return f'cat /sys/devices/system/node/node*/meminfo > "$R/{NODE_MEMINFO}.{when}" 2>/dev/null'


def cgroup_snapshot_lines() -> list[str]:
    """``cgroups FILE``: the agent's cgroups as the kernel has them, one line each; run.sh
    writes cgroups.txt when the services are done, and cgroups-after-<app>.txt two
    intervals after an app that exits or is killed has gone. Shell builtins only: in gem5
    every fork and exec costs detailed-core time (milliseconds of it)."""
    return ["cgroups() {",
            f"  for d in {CGROUP_ROOT}/*/; do",
            '    [ -e "$d/cpuset.cpus" ] || continue',
            '    name=${d%/}; name=${name##*/}; cpus=""; eff=""; procs=""; max=""',
            '    read -r cpus < "$d/cpuset.cpus"',
            '    read -r eff < "$d/cpuset.cpus.effective" 2>/dev/null',
            # cpu.max as "quota/period" (the BE jobs' CPU quota; "max/100000": none).
            '    read -r q per < "$d/cpu.max" 2>/dev/null && max="$q/$per"',
            '    while read -r p; do procs="$procs$p "; done < "$d/cgroup.procs"',
            '    echo "$name cpus=$cpus effective=$eff cpu.max=$max procs=$procs"',
            '  done > "$1" 2>/dev/null',
            "}",
            # A process that exited is gone, or a zombie until run.sh waits for it (the
            # third field of its stat: our services' names have no spaces).
            'gone() { s=""; read -r _ _ s _ < /proc/$1/stat 2>/dev/null; '
            '[ -z "$s" ] || [ "$s" = Z ]; }']


def best_effort_lines(run: Run) -> list[str]:
    """Start the scenario's best-effort jobs (pids in BE) and put them in the agent's BE
    cgroup, where the agent gives them the cores no LC app holds."""
    s = run.scenario
    lines = []
    for job in s.be:
        command = " ".join(be_command(job, f'"$R/{job}"', "$(nproc)", s.interval_s * 1e3))
        lines += [f'mkdir -p "$R/{job}"', f'{command} > "$R/{job}.log" 2>&1 &', 'BE="$BE $!"',
                  f"BE_{s.be.index(job)}=$!"]
    if s.be:
        lines.append(f"echo $BE > {BE_PIDS}")
    if s.be and s.manager != "none":
        # The agent creates the BE cgroup when it starts.
        # A counted loop of shell builtins, not $(seq 1 200): Debian's seq computes in x87
        # long double, which gem5 leaves unimplemented, and never ends there
        # (gem5-configs/README.md); in gem5 the jobs then never started.
        lines += ["tries=0; while [ ! -e " + f"{CGROUP_ROOT}/be/cgroup.procs ] && "
                  "[ $tries -lt 200 ]; do sleep 0.01; tries=$((tries + 1)); done",
                  f"for pid in $BE; do echo $pid > {CGROUP_ROOT}/be/cgroup.procs || "
                  'say "best-effort pid $pid: not in the BE cgroup"; done']
    return lines


def event_lines(run: Run, backend: str) -> list[str]:
    """Shell lines that do the scenario's events at their times after the start signal,
    each in a timer process (their pids in TIMERS, ended with the run), and record each
    in ``$R/events.jsonl`` with the guest's uptime when it happened."""
    lines = []
    index_of = {app: i for i, app in enumerate(run.scenario.apps)}
    for event in run.scenario.events:
        if event.kind == "fill" and event.at_s <= 0:
            continue  # done before the start (prefill_lines)
        at = f"{event.at_s:.6f}"
        if event.kind == "arrive":
            action = [start_command(run, index_of[event.app or ""], backend),
                      f"event {at} arrive {event.app}"]
        elif event.kind in ("exit", "kill"):
            pid = f"$PID_{index_of[event.app or '']}"
            if event.kind == "exit":
                # The service ends its measured region then; the timer records it.
                action = [f"event {at} exit {event.app}"]
            else:
                action = [f"touch /run/pimcloud/killed-{pid}", "read -r up _ < /proc/uptime",
                          f"kill -KILL {pid}", f"event {at} kill {event.app} $up"]
                if wraps_up_atomic(run, backend):  # it writes no done line after this
                    action.append(f"printf '%s killed\\n' {event.app} 1<>{DONE_FIFO}")
            # The kernel's view once the manager has had two intervals to react, counted
            # from its logging the exit (an interval may start late: QEMU's TCG delayed
            # one by 0.9 s behind a page move, and the snapshot came before the agent).
            action += [f"while ! gone {pid}; do nap 0.01; done"]
            if run.scenario.manager != "none":
                action += [f"n=0; while [ $n -lt 50 ] && ! grep -q "
                           f"'\"app\":\"{event.app}\",\"event\":\"exit\"' "
                           f'"{GUEST_RESULTS}/decisions.jsonl" 2>/dev/null; do '
                           f"nap {run.scenario.interval_s:g}; n=$((n + 1)); done"]
            action += [f"nap {2 * run.scenario.interval_s:g}",
                       f'cgroups "$R/cgroups-after-{event.app}.txt"']
        else:
            # The hog replaces the timer process, so it ends with the run's timers.
            action = [f"event {at} fill stack{event.stack}",
                      f"exec {hog_command(event.stack, event.free_bytes)}"]
        # The nap goes with the timer when run.sh ends it (killable_nap_lines).
        lines += [killable_subshell([f"nap {at}", *action]) + " &", 'TIMERS="$TIMERS $!"']
    return lines


def start_command(run: Run, index: int, backend: str) -> str:
    """Start the ``index``-th app: write its start file, atomically, with the run's options
    (the harness reads them when the file appears)."""
    path = start_file_of(run.apps[index].name)
    return (f"echo {shell_words(run_args(run, index, backend).args())} > {path}.tmp && "
            f"mv {path}.tmp {path}")


def header_lines() -> list[str]:
    """What every scenario script (and the run part an app checkpoint sources) sets up."""
    return [
        'R="${PIMCLOUD_RESULTS:-' + GUEST_RESULTS + '}"',
        'export PATH="/opt/pimcloud/bin:$HERE/bin:$PATH"',
        'export LD_LIBRARY_PATH="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"',
        'say() { echo "pimcloud-run $*"; }',
        'have() { command -v "$1" >/dev/null 2>&1; }',
        "mkdir -p /run/pimcloud",
    ]


def require_lines(programs: list[str]) -> list[str]:
    return [f'have {program} || {{ say "missing {program}: build the workloads (make cxx) '
            f'and rebuild the image"; exit 3; }}' for program in programs]


def launch_lines(run: Run, backend: str) -> list[str]:
    """The app set: check its programs, launch every LC service (pids in LC, PID_<i>) and,
    with a synchronised start, wait until each has loaded its data."""
    needed = [f"pimcloud-{app.name}" for app in run.apps]
    if placement_prefix(run, 0):
        needed.append("pimcloud-agent")  # starts the services under the static placement
    lines = [*require_lines(needed), 'LC=""']
    synchronised = synchronised_start(run, backend)
    for index, app in enumerate(run.apps):
        words = [*placement_prefix(run, index), *launch_args(run, index, backend).args()]
        if not synchronised:
            words += run_args(run, index, backend).args()
        lines += [f'mkdir -p "$R/{app.name}"',
                  f'{shell_words(words)} > "$R/{app.name}.log" 2>&1 &', 'LC="$LC $!"',
                  f"PID_{index}=$!"]
    if synchronised:
        ready = " ".join(f"/run/pimcloud/ready-{app.name}" for app in run.apps)
        lines += [
            f"for f in {ready}; do",
            '  while [ ! -e "$f" ]; do',
            '    for pid in $LC; do kill -0 $pid 2>/dev/null || { say "service pid $pid '
            'ended before it was ready"; exit 3; }; done',
            "    sleep 0.01",
            "  done",
            "done",
        ]
    return lines


def announce_lines(run: Run) -> list[str]:
    """Each running service's pid to the manager, as a start line on the statistics file
    it reads, once the service and the manager run. Without it the manager learns a pid
    from the service's first statistics line, after the start signal: memory it manages
    before the requests (HeteroOS's eviction from a stack filled at time 0) would wait
    for the measured part, tens of ms in gem5. Apps that arrive later announce themselves."""
    if run.scenario.manager == "none":
        return []
    arriving = {e.app for e in run.scenario.events if e.kind == "arrive"}
    lines = []
    for index, app in enumerate(run.apps):
        if app.name in arriving or not app.qos_ns:
            continue
        line = ('{\\"app\\":\\"' + app.name + '\\",\\"event\\":\\"start\\",'
                f'\\"pid\\":$PID_{index},\\"qos_ns\\":{app.qos_ns:.0f}}}')
        lines.append(f'echo "{line}" >> {LATENCY_FILE}')
    return lines


def manager_lines(run: Run) -> list[str]:
    """Start the manager (pid in AGENT), and record events (``event``, ``cgroups``)."""
    s = run.scenario
    # event AT KIND TARGET [UPTIME]: one JSON line in events.jsonl, with the uptime read
    # (a shell builtin, no fork) when the event happened, or now.
    record = ('{\\"at_s\\":$1,\\"kind\\":\\"$2\\",\\"target\\":\\"$3\\",'
              '\\"uptime_s\\":$up}')
    # From here on each line the run says carries the guest's uptime (a builtin read), so
    # the console shows where a run's simulated time goes.
    lines = ['say() { read -r up _ < /proc/uptime; echo "pimcloud-run $* (uptime $up)"; }',
             'cp "$HERE/scenario.json" "$R/scenario.json"',
             'event() { up=$4; [ -n "$up" ] || read -r up _ < /proc/uptime; '
             f'echo "{record}" >> "$R/events.jsonl"; say "event $2 $3 at $1 s"; }}']
    lines += cgroup_snapshot_lines()
    lines.append('AGENT=""')
    if s.manager != "none":
        lines += [
            "if have pimcloud-agent; then",
            '  pimcloud-agent run --config "$HERE/agent.json" > "$R/agent.log" 2>&1 &',
            "  AGENT=$!",
            f'  say "manager {s.manager} pid $AGENT"',
        ]
        if s.manager == "default":
            lines += ["else", '  say "no pimcloud-agent in the guest: default is plain Linux '
                      'scheduling, run without its log"', "fi"]
        else:
            lines += ["else", f'  say "missing pimcloud-agent: manager {s.manager} needs it"',
                      "  exit 3", "fi"]
    lines.append('BE=""')
    if s.be:
        lines += require_lines([BE_PROGRAM])
    if any(e.kind == "fill" for e in s.events):
        lines += require_lines(["pimcloud-memhog"])
    return lines


def counted(run: Run, backend: str) -> bool:
    """Whether the run's board counts (gem5 with [gem5] counters, and counting on)."""
    return backend == "gem5" and run.spec.gem5.counters and run.scenario.counting


def hot_pages_lines() -> list[str]:
    """Each counted memory's hottest frames with their types, as the driver answers the
    paper's hot-page call (as many as one query returns), once the measured requests are
    done (in gem5 on the atomic cores): Fig. 4's page-access breakdown by page type."""
    out = '"$R/' + HOTTEST_FILE.format(node="$node") + '"'
    return [
        "if have pimcloud-hw; then",
        "  most=$(pimcloud-hw info | awk 'NR == 1 { for (i = 1; i < NF; i++) "
        "if ($i == \"max_query\") print $(i + 1) }')",
        "  for node in $(pimcloud-hw info | awk '$1 == \"stack\" { print $4 }'); do",
        f"    pimcloud-hw hottest \"$most\" \"$node\" > {out} 2>&1",
        "  done",
        "fi",
    ]


def started_lines(run: Run, backend: str) -> list[str]:
    """From the start on: start signals, best-effort jobs, samplers, events, the
    watchdog, then wait for the services and end the rest; exit 0 when all finished."""
    lines = []
    if synchronised_start(run, backend):
        arriving = {e.app for e in run.scenario.events if e.kind == "arrive"}
        lines += [start_command(run, index, backend) for index, app in enumerate(run.apps)
                  if app.name not in arriving]
        # With a start signal the jobs start with the services' requests (in gem5 after
        # the switch, so that set-up on the atomic cores does not share them with the jobs).
        lines += best_effort_lines(run)
    lines += kernel_file_lines(run) + event_lines(run, backend)
    hang_s = hang_after_s(run, backend)
    lines += (watchdog_lines(hang_s, wrapup_allowance_s(run, backend)) if hang_s is not None
              else ['WATCHDOG=""'])
    lines += [
        'say "started"',
        "status=0",
        "for pid in $LC; do",
        # A service the scenario killed is expected to end by its signal. One the kernel's
        # OOM killer ended (slow-always on a full slow tier, as seed 004 warns) is a
        # result, not a failure to retry: OOM_FILE names it with the kernel's own line.
        "  wait $pid || { code=$?; if [ -e /run/pimcloud/killed-$pid ]; then "
        "say \"service pid $pid killed by the scenario\"; "
        f"elif [ $code -eq 137 ] && dmesg | grep \"Killed process $pid \" >> \"$R/{OOM_FILE}\"; "
        "then say \"service pid $pid killed by the kernel's OOM killer\"; else "
        "say \"service pid $pid exit $code\"; status=1; fi; }",
        "done",
        'say "services done"',
        *wrapup_join_lines(run, backend),
        *([node_meminfo_line("end")] if run.scenario.tiering != "none" else []),
        *(hot_pages_lines() if counted(run, backend) else []),
        "for pid in $TIMERS $SAMPLER $SWITCHER; do kill $pid 2>/dev/null; done",
        'cgroups "$R/cgroups.txt"',
        # The services' statistics as the manager read them (their exit lines included).
        f'cp {LATENCY_FILE} "$R/latency.jsonl" 2>/dev/null',
        'if [ -n "$WATCHDOG" ]; then kill $WATCHDOG 2>/dev/null; wait $WATCHDOG 2>/dev/null; fi',
        f"if [ -e /run/pimcloud/hung ]; then status={HANG_EXIT}; fi",
        # A manager that died early (bad config, crash) would leave the run unmanaged
        # while looking fine: that run fails, with the agent's log in the results.
        'if [ -n "$AGENT" ] && ! kill -0 $AGENT 2>/dev/null; then',
        '  say "manager exited before the services: see agent.log"; status=1',
        "fi",
        'say "kept the statistics"',
        "for pid in $BE; do kill -CONT $pid 2>/dev/null; done",  # stopped for the wrap-up
        "for pid in $BE $AGENT; do kill $pid 2>/dev/null; done",
        "for pid in $BE $AGENT; do wait $pid 2>/dev/null; done",
        'say "done status $status"',
        "exit $status",
    ]
    return lines


def run_script(run: Run, backend: str) -> str:
    """The whole scenario of a run that launches its own services (QEMU; gem5 without an
    app checkpoint, fast-forwarding their set-up on the atomic cores)."""
    lines = ["#!/bin/sh",
             f"# pimcloud campaign {run.spec.name}, run {run.run_id}: written by pimcloud.runs",
             'HERE="${PIMCLOUD_SCENARIO_DIR:-$(pwd)}"', *header_lines(), *manager_lines(run)]
    if not synchronised_start(run, backend):
        lines += best_effort_lines(run)
    lines += launch_lines(run, backend)
    lines += announce_lines(run)
    lines += prefill_lines(run)
    lines += placed_lines(run)
    lines += wrapup_lines(run, backend)
    if fast_forwarded(run, backend):
        # Set-up ran on the atomic cores; the measured part runs on the detailed ones.
        lines += ['say "services ready: switching to the detailed cores"', "m5 switchcpu"]
    lines += started_lines(run, backend)
    return "\n".join(lines) + "\n"


RUN_PART_DIR = "/tmp/run-part"  # where the app checkpoint's script unpacks a run's part


def setup_script(run: Run) -> str:
    """The app set's scenario (gem5 ``setup``): launch and load the services, ask for the
    app checkpoint, then, in every run restored from it, fetch that run's own part with
    m5 readfile and source it (it sees LC and PID_<i>). Nothing of one run is in here:
    the app checkpoint's key is this folder's digest."""
    lines = ["#!/bin/sh", "# pimcloud app set: written by pimcloud.runs (one app checkpoint)",
             'HERE="${PIMCLOUD_SCENARIO_DIR:-$(pwd)}"', *header_lines(),
             *launch_lines(run, "gem5"),
             'say "services ready: app checkpoint"',
             "m5 checkpoint",
             "m5 readfile /tmp/run-part.tar || { say \"m5 readfile failed: no run part\"; "
             "exit 3; }",
             f"mkdir -p {RUN_PART_DIR} && tar -xf /tmp/run-part.tar -C {RUN_PART_DIR} || "
             '{ say "cannot unpack the run part"; exit 3; }',
             f'say "app checkpoint restored: run $(cat {RUN_PART_DIR}/run-id)"',
             f". {RUN_PART_DIR}/run.sh"]
    return "\n".join(lines) + "\n"


def run_part_script(run: Run) -> str:
    """One run's part, sourced by the app set's script after the restore."""
    lines = ["# sourced by the app set's script (setup_script) in the restored guest",
             f"# pimcloud campaign {run.spec.name}, run {run.run_id}: written by pimcloud.runs",
             f"HERE={RUN_PART_DIR}", *header_lines(), *manager_lines(run),
             *announce_lines(run), *prefill_lines(run), *placed_lines(run),
             *wrapup_lines(run, "gem5")]
    if part_switches_at_start(run, "gem5"):
        lines += ['say "run part ready: switching to the detailed cores"', "m5 switchcpu"]
    lines += started_lines(run, "gem5")
    return "\n".join(lines) + "\n"


def ship_programs_to(folder: Path, names: list[str]) -> list[str]:
    """Copy the host's builds of ``names`` (and the libraries they need) into
    ``folder``/bin and lib; the names shipped."""
    shipped = []
    for name in names:
        candidates = program_candidates(name)
        if not candidates:
            continue
        (folder / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(candidates[0], folder / "bin" / name)
        shipped.append(name)
        for library in shared_libraries(candidates[0]):
            (folder / "lib").mkdir(exist_ok=True)
            shutil.copy2(library, folder / "lib" / library.name)
    return shipped


def service_programs(run: Run) -> list[str]:
    """What launching the app set runs: its services (with the files each needs beside
    it), and the agent for static placement."""
    programs = []
    for app in run.apps:
        service = SERVICES.get(app.name)
        programs += [f"pimcloud-{app.name}", *(service.companions if service else ())]
    return programs + (["pimcloud-agent"] if placement_prefix(run, 0) else [])


def run_programs(run: Run) -> list[str]:
    """What a run's own part runs: the manager, best-effort jobs, the memory hog."""
    names = []
    if run.scenario.be:
        names.append(BE_PROGRAM)
    if run.scenario.manager != "none":
        names.append("pimcloud-agent")
    if any(e.kind == "fill" for e in run.scenario.events):
        names.append("pimcloud-memhog")
    return names


def write_setup(run: Run, folder: Path, ship_programs: bool = True) -> None:
    """Write the app set's set-up scenario folder (gem5 ``setup``, app checkpoints): the
    same bytes for every run of the set, so its digest keys the app checkpoint."""
    folder.mkdir(parents=True, exist_ok=True)
    if ship_programs:
        ship_programs_to(folder, service_programs(run))
    atomic_write_text(folder / "run.sh", setup_script(run))
    (folder / "run.sh").chmod(0o755)


def write_scenario(run: Run, folder: Path, backend: str, ship_programs: bool = True
                   ) -> dict[str, Any]:
    """Write the run's scenario folder; returns what went into scenario.json. With an app
    checkpoint it is the run's own part (run_part_script), sourced after the restore."""
    folder.mkdir(parents=True, exist_ok=True)
    part_only = app_checkpointed(run, backend)
    shipped: list[str] = []
    if ship_programs:
        names = list(dict.fromkeys(
            ([] if part_only else service_programs(run)) + run_programs(run)))
        shipped = ship_programs_to(folder, names)
    parameters = {
        "campaign": run.spec.name,
        "run_id": run.run_id,
        "backend": backend,
        "topology": run.topology,
        "apps": {app.name: {"rps": run.scenario.rps_of(app), "qos_ns": app.qos_ns,
                            "command": harness_command(run, i, backend)}
                 for i, app in enumerate(run.apps)},
        "manager": run.scenario.manager,
        "placement": run.scenario.placement,
        "seed": run.scenario.seed,
        "be": list(run.scenario.be),
        "interval_s": run.scenario.interval_s,
        "control": asdict(run.scenario.control),
        "events": [asdict(event) for event in run.scenario.events],
        "warmup_s": run.spec.length.warmup_s,
        "measured_s": run.spec.length.measured_s,
        "shipped_programs": shipped,
        "app_checkpoint": part_only,
    }
    atomic_write_text(folder / "scenario.json", json.dumps(parameters, indent=1) + "\n")
    atomic_write_text(folder / "agent.json", json.dumps(agent_config(run), indent=1) + "\n")
    if run.scenario.manager != "none":
        check_agent_config(folder / "agent.json")
    if part_only:
        atomic_write_text(folder / "run-id", f"{run.run_id}\n")
        atomic_write_text(folder / "run.sh", run_part_script(run))
    else:
        atomic_write_text(folder / "run.sh", run_script(run, backend))
    (folder / "run.sh").chmod(0o755)
    return parameters
