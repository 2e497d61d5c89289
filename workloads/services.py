"""The six latency-critical services and the best-effort jobs, as the rest of pimcloud sees them.

QoS targets follow the paper's Table II where our engine does comparable work, and are
otherwise set at a few times our engine's native p99 service time (noted per service). The
paper defines QoS as the knee of the tail-latency curve on the main CPU: a campaign can
re-derive it in simulation with a load sweep; these are the defaults until it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    paper_name: str  # the Tailbench application it stands for (Table II)
    domain: str
    engine: str
    binary: str
    qos_ns: int  # target p99 sojourn
    paper_qos_ns: int
    request_mix: str
    data_set: str  # sub-folder of the data folder, or "" when generated at start
    # Why the service does not run correctly under gem5 (v24.0.0.1), or "" when it does.
    gem5_caveat: str = ""
    # Whether it keeps shared read-only data it can copy to a node when asked (the
    # harness's replicate command; the others decline: their read-only data live in
    # engine-owned files, and Linux cannot bind page-cache pages per node).
    replicates: bool = False
    # User-space instructions of the service's start-up natively with one worker, and what
    # each further worker adds (workloads/bench/bench_startup.py): what prices a gem5
    # set-up beyond its fixed part (0: within the fixed part).
    startup_instructions: float = 0.0
    worker_startup_instructions: float = 0.0
    # The --opt KEY=VALUE with which each further worker starts up as the first did
    # (translate: "prefork=0", every pipeline loading on its own).
    unshared_startup: str = ""
    # Files built beside the program that it needs at run time (a run ships them with it).
    companions: tuple[str, ...] = ()

    @property
    def needs_data(self) -> bool:
        return bool(self.data_set)

    def startup_instructions_of(self, workers: int, options: Mapping[str, str]) -> float:
        """The start-up's instructions with ``workers`` workers and these --opt options."""
        key, _, value = self.unshared_startup.partition("=")
        further = (self.startup_instructions if key and options.get(key) == value
                   else self.worker_startup_instructions)
        return self.startup_instructions + (workers - 1) * further


MS = 1_000_000
SERVICES: dict[str, ServiceSpec] = {
    s.name: s
    for s in (
        ServiceSpec(
            "oltp",
            "Silo",
            "in-memory database",
            "SQLite 3.40 (Debian's source, doubles; WAL, tmpfs)",
            "pimcloud-oltp",
            5 * MS,
            1 * MS,
            "TPC-C: 45% NewOrder (1% roll back), 43% Payment, 4% OrderStatus, "
            "4% Delivery, 4% StockLevel; 1 warehouse, 10 districts x 300 customers, 10k items",
            "",
            # Debian 12's libsqlite3 computes with x87 long double, which gem5 v24.0.0.1
            # leaves unimplemented; the service compiles in Debian's SQLite source with
            # LONGDOUBLE_TYPE=double instead (guest/sqlite_source.py).
        ),
        ServiceSpec(
            "kvstore",
            "Masstree",
            "key-value store",
            "LMDB (tmpfs)",
            "pimcloud-kvstore",
            1 * MS,
            1 * MS,
            "90% get / 10% put, Zipf 0.99 over 200k keys, 100-byte values",
            "",
        ),
        ServiceSpec(
            "imgdnn",
            "ImgDNN",
            "image recognition",
            "MLP 784-256-128-10 (ours)",
            "pimcloud-imgdnn",
            7 * MS,
            7 * MS,
            "one held-out Fashion-MNIST image per request, uniform",
            "imgdnn",
            replicates=True,  # its weights, in a ReplicatedRegion
        ),
        ServiceSpec(
            "search",
            "Xapian",
            "web search",
            "Xapian",
            "pimcloud-search",
            10 * MS,
            10 * MS,
            "1-3 words of a random document, all required, top 10 by BM25",
            "search",
        ),
        ServiceSpec(
            "translate",
            "Moses",
            "real-time translation",
            "Apertium eng-spa",
            "pimcloud-translate",
            50 * MS,
            10 * MS,
            "one English sentence (4-16 words) per request, uniform",
            "translate",
            # one Apertium pipeline (11 processes) loads; each further worker's is a
            # copy of it (prefork.c, preloaded into the stages: the companion file)
            startup_instructions=702e6,
            worker_startup_instructions=6.8e6,
            unshared_startup="prefork=0",
            companions=("libpimcloud-prefork.so",),
        ),
        ServiceSpec(
            "speech",
            "Sphinx",
            "speech recognition",
            "PocketSphinx en-us",
            "pimcloud-speech",
            500 * MS,  # about 5x the grammar decoder's native p99 (~100 ms)
            6_000 * MS,
            "one 1.5-3.5 s utterance per request, uniform over 20",
            "speech",
        ),
    )
}

BEST_EFFORT_JOBS = ("compute", "membw")  # pimcloud-be compute|membw


def service(name: str) -> ServiceSpec:
    """The service called `name`; the error lists the known ones."""
    try:
        return SERVICES[name]
    except KeyError:
        raise ValueError(
            f"unknown service {name!r}; choose one of {', '.join(sorted(SERVICES))}"
        ) from None


def gem5_caveat(app: str) -> str:
    """Why ``app`` misbehaves under gem5, or "" (also for apps that are not ours)."""
    known = SERVICES.get(app)
    return known.gem5_caveat if known else ""
