"""Each service natively at low load for a few seconds: right answers, complete records."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from pimcloud.analysis.results import read_lats_bin
from pimcloud.workloads.latency import RunOutput, read_live
from pimcloud.workloads.run import run_service, service_command

THREADS = 4


Need = Callable[[str], Path]


def run(
    name: str, tmp_path: Path, data: Path, rps: float, seconds: float, **kw: object
) -> RunOutput:
    return run_service(
        name,
        rps,
        seconds,
        out=tmp_path,
        data=data,
        threads=THREADS,
        warmup=20,
        check_every=1,
        timeout_s=600,
        **kw,
    )


def assert_complete(out: RunOutput, client_view: bool = False) -> None:
    """Every measured request has a record, in lats.bin and the CSV alike, and adds up.

    In TCP client mode sojourn ends when the answer is back, so it also holds the return
    trip: queue + service <= sojourn there, equal in integrated mode.
    """
    s = out.summary
    assert s["failed"] == 0
    assert s["checked"] == s["generated"] > 0
    frame = out.requests
    assert len(frame) == s["requests"] == s["generated"] - s["warmup"]
    assert list(frame["request_id"]) == list(range(s["warmup"], s["generated"]))
    assert (frame["sojourn_ns"] >= frame["service_ns"]).all()
    total = frame["queue_ns"] + frame["service_ns"]
    if client_view:
        assert (total <= frame["sojourn_ns"]).all()
    else:
        assert (total == frame["sojourn_ns"]).all()
    assert (frame["start_ns"] >= frame["scheduled_ns"]).all()
    assert frame["thread"].between(0, THREADS - 1).all()
    lats = read_lats_bin(out.folder / "lats.bin")
    assert len(lats) == len(frame)
    assert np.array_equal(lats["sojourn_ns"], frame["sojourn_ns"].to_numpy())
    assert np.array_equal(lats["queue_ns"], frame["queue_ns"].to_numpy())
    live = read_live(out.folder / "live.jsonl")
    assert sum(int(line["count"]) for line in live) == s["generated"]


def test_kvstore_answers_and_stays_consistent(tmp_path: Path, need: Need) -> None:
    need("pimcloud-kvstore")
    out = run("kvstore", tmp_path, Path("/nonexistent"), 500, 2)
    assert_complete(out)
    assert out.summary["service"]["consistent"] is True
    assert out.summary["service"]["keys_found"] == out.summary["service"]["keys"]
    assert (out.requests["serial_ns"] == 0).all()  # no serial section of its own
    # Released into the queue at or after its scheduled arrival, before a worker took it.
    frame = out.requests
    assert (frame["scheduled_ns"] <= frame["released_ns"]).all()
    assert (frame["released_ns"] <= frame["start_ns"]).all()
    # The whole process's CPU over the measured region: at least the services it ran.
    assert out.summary["measured_cpu_ns"] >= 0.5 * out.requests["service_ns"].sum() > 0
    assert 0 < out.summary["generator_cpu_ns"] < out.summary["measured_cpu_ns"]


def test_oltp_transactions_keep_the_database_consistent(tmp_path: Path, need: Need) -> None:
    need("pimcloud-oltp")
    out = run("oltp", tmp_path, Path("/nonexistent"), 200, 3)
    assert_complete(out)
    service = out.summary["service"]
    assert service["consistent"] is True, service
    assert service["orders"] > 3000  # NewOrders were committed on top of the initial 3000
    # NewOrder, Payment and Delivery (92 % of the mix) hold SQLite's one writer, and say
    # for how long (serial_ns, for the model); OrderStatus and StockLevel do not.
    frame = out.requests
    writers = frame["serial_ns"] > 0
    assert 0.8 < writers.mean() < 0.99, writers.mean()
    assert (frame["serial_ns"] + frame["serial_wait_ns"] <= frame["service_ns"]).all()
    assert (frame.loc[~writers, "serial_wait_ns"] == 0).all()
    assert frame.loc[writers, "serial_ns"].sum() > 0.5 * frame.loc[writers, "service_ns"].sum()


def test_search_finds_the_document_its_query_came_from(
    tmp_path: Path, data_dir: Path, need: Need
) -> None:
    need("pimcloud-search")
    out = run("search", tmp_path / "run", data_dir, 200, 2)
    assert_complete(out)
    # A query made of every word of one known fortune must return that fortune.
    corpus = (data_dir / "search" / "corpus.tsv").read_text().splitlines()
    doc_id, _, text = corpus[1234].split("\t", 2)
    words = sorted({w.lower() for w in text.replace("\\n", " ").split() if w.isalpha()})
    mine = tmp_path / "data"
    (mine / "search").mkdir(parents=True)
    (mine / "search" / "db").symlink_to(data_dir / "search" / "db")
    (mine / "search" / "queries.tsv").write_text(f"{doc_id}\t{' '.join(words)}\n")
    run_service(
        "search",
        50,
        0.5,
        out=tmp_path / "one",
        data=mine,
        threads=1,
        warmup=0,
        check_every=1,
        extra=["--log-answers"],
    )
    answers = (tmp_path / "one" / "answers.tsv").read_text().splitlines()[1:]
    assert answers
    for line in answers:
        _, verdict, _, response = line.split("\t")
        assert verdict == "ok"
        assert doc_id in response.split("\\t")[1].split()


def test_imgdnn_classifies_held_out_images(tmp_path: Path, data_dir: Path, need: Need) -> None:
    need("pimcloud-imgdnn")
    out = run("imgdnn", tmp_path, data_dir, 300, 2)
    assert_complete(out)
    # Stated bar: 80% on held-out Fashion-MNIST (an MLP reaches about 87%).
    assert out.summary["service"]["accuracy"] >= 0.80
    manifest = json.loads((data_dir / "manifest.json").read_text())
    assert manifest["imgdnn"]["held_out_accuracy"] >= 0.80


SPANISH = set(
    [
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "de",
        "en",
        "es",
        "y",
        "que",
        "del",
        "al",
        "no",
        "se",
        "su",
        "por",
        "para",
        "con",
        "lo",
        "me",
        "te",
        "mi",
        "tu",
        "más",
        "como",
        "pero",
        "son",
        "está",
        "hay",
        "nunca",
        "yo",
        "tú",
        "muy",
        "si",
    ]
)


def test_translate_returns_spanish(tmp_path: Path, data_dir: Path, need: Need) -> None:
    need("pimcloud-translate")
    out = run("translate", tmp_path, data_dir, 40, 2, extra=["--log-answers"])
    assert_complete(out)
    answers = (tmp_path / "answers.tsv").read_text().splitlines()[1:]
    spanish = 0
    for line in answers:
        _, _, english, translated = line.split("\t")
        if english == "The cat is in the house.":
            assert "gato" in translated and "casa" in translated
        spanish += bool(SPANISH & set(re.findall(r"\w+", translated.lower())))
    assert spanish >= 0.8 * len(answers)


def test_translate_draws_short_requests_only_when_asked(
    tmp_path: Path, data_dir: Path, need: Need
) -> None:
    need("pimcloud-translate")
    out = run("translate", tmp_path, data_dir, 40, 2,
              extra=["--log-answers", "--opt", "max_words=3"])
    assert_complete(out)
    english = [line.split("\t")[2] for line in
               (tmp_path / "answers.tsv").read_text().splitlines()[1:]]
    assert english and max(len(s.split()) for s in english) <= 3
    assert 0 < out.summary["service"]["sentences"] < 100  # the short ones of the 520
    with pytest.raises(RuntimeError, match="must be 0"):
        run("translate", tmp_path / "bad", data_dir, 40, 1, extra=["--opt", "max_words=-1"])


def _parents() -> dict[int, int]:
    parents = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents


def _exe(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name
    except OSError:
        return ""


def forked_stages(out_folder: Path) -> int:
    """In the process tree of the service writing to ``out_folder``: processes whose
    parent runs the same program (a stage's copy, prefork.c)."""
    parents = _parents()
    service = [pid for pid in parents
               if _exe(pid) == "pimcloud-translate" and str(out_folder).encode()
               in Path(f"/proc/{pid}/cmdline").read_bytes()] if parents else []
    tree, grew = set(service), True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(1 for pid in tree - set(service)
               if parents.get(pid) in tree and _exe(pid) == _exe(parents[pid]))


@pytest.mark.parametrize(("prefork", "copies"), [("1", THREADS - 1), ("0", 0)])
def test_translate_workers_share_one_pipeline_start_up(
    tmp_path: Path, data_dir: Path, need: Need, prefork: str, copies: int
) -> None:
    """With prefork (the default) worker 0's 11 stages each fork a copy for every other
    worker after loading (each copy answered "Hello." as worker 0 did, or the service
    would not start); every worker serves. Without it, no stage forks."""
    need("pimcloud-translate")
    seen: list[int] = []
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run, "translate", tmp_path, data_dir, 40, 3,
                              extra=["--log-answers", "--opt", f"prefork={prefork}"])
        while not running.done():
            seen.append(forked_stages(tmp_path))
            time.sleep(0.1)
        out = running.result()
    assert_complete(out)
    assert set(out.requests["thread"]) == set(range(THREADS))
    assert max(seen) == copies * 11  # the eng-spa mode's 11 stages
    for line in (tmp_path / "answers.tsv").read_text().splitlines()[1:]:
        _, _, english, translated = line.split("\t")
        if english == "The cat is in the house.":
            assert "gato" in translated and "casa" in translated


def test_translate_names_a_stage_that_never_forks_and_leaves_no_copy_behind(
    tmp_path: Path, data_dir: Path, need: Need
) -> None:
    """A stage that reads without the preload (here `env -u LD_PRELOAD cat`) never forks:
    the service stops with an error naming the copy, within its wait, and the copies the
    other stages made end instead of waiting for their FIFOs."""
    need("pimcloud-translate")
    mode = tmp_path / "cats.mode"
    mode.write_text("cat | env -u LD_PRELOAD cat | cat\n")
    with pytest.raises(RuntimeError, match="worker 1's copy of the Apertium pipeline did not "
                                           "start: no answer through its stages"):
        run("translate", tmp_path / "out", data_dir, 40, 1,
            extra=["--opt", f"mode={mode}", "--opt", "prefork_wait_ms=2000"])
    time.sleep(0.5)
    left = [pid for pid in _parents() if _exe(pid) == "cat" and b"PIMCLOUD_PREFORK=" in
            _environ(pid)]
    assert left == []


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


@pytest.mark.slow
def test_speech_decodes_the_synthesised_sentences(
    tmp_path: Path, data_dir: Path, need: Need
) -> None:
    need("pimcloud-speech")
    # Each of the 20 utterances once, in turn.
    out = run_service(
        "speech",
        5,
        4,
        out=tmp_path,
        data=data_dir,
        threads=2,
        warmup=0,
        check_every=1,
        extra=["--log-answers", "--requests", "20", "--opt", "pick=cycle"],
        timeout_s=900,
    )
    assert out.summary["failed"] == 0 and out.summary["requests"] == 20
    # The default decoder searches the request set's JSGF grammar, as a deployed command
    # recogniser does: measured WER 0.000 over the 20 utterances (0.795 with the general
    # en-us LM, 0.262 with the sentences' trigram LM). Stated bar: WER below 0.2 and no
    # empty answer, which the general LM, a broken grammar or pruned searches fail.
    assert out.summary["service"]["lm"] == "grammar"
    assert out.summary["service"]["word_error_rate"] < 0.2
    answers = (tmp_path / "answers.tsv").read_text().splitlines()[1:]
    assert answers and all(line.split("\t")[3] for line in answers)


def test_loopback_tcp_mode_gives_complete_records(tmp_path: Path, need: Need) -> None:
    need("pimcloud-kvstore")
    out = run("kvstore", tmp_path, Path("/nonexistent"), 300, 1, extra=["--mode", "tcp"])
    assert_complete(out, client_view=True)
    assert len(read_live(out.folder / "live.jsonl")) >= 5  # the server side published too


def test_live_statistics_reach_a_stats_file(tmp_path: Path, need: Need) -> None:
    need("pimcloud-kvstore")
    stats = tmp_path / "live.jsonl"
    out = run(
        "kvstore",
        tmp_path / "out",
        Path("/nonexistent"),
        300,
        1,
        extra=["--stats-file", str(stats), "--tids-file", str(tmp_path / "tids.json")],
    )
    lines = read_live(stats)
    # The last line announces the app's normal end to the manager.
    exit_line = lines.pop()
    assert exit_line["event"] == "exit" and exit_line["app"] == "kvstore"
    assert exit_line["pid"] > 0 and exit_line["t_ns"] >= max(line["t_ns"] for line in lines)
    assert len(lines) >= 5  # 100 ms intervals over more than a second
    for line in lines:
        for field in ("app", "t_ns", "p99_ns", "mean_ns", "count", "rps", "tids", "threads"):
            assert field in line
        assert line["app"] == "kvstore"
        assert len(line["tids"]) == THREADS
    assert [line["seq"] for line in lines] == list(range(len(lines)))
    assert json.loads((tmp_path / "tids.json").read_text())["tids"] == lines[0]["tids"]
    assert out.summary["failed"] == 0


def test_missing_data_set_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pimcloud workload data"):
        service_command("search", 10, 1, tmp_path, data=tmp_path / "nothing")


@pytest.mark.parametrize(("job", "unit"), [("compute", "GFLOP"), ("membw", "GB")])
def test_best_effort_jobs_report_throughput(job: str, unit: str, need: Need) -> None:
    binary = need("pimcloud-be")
    done = subprocess.run(
        [
            str(binary),
            job,
            "--threads",
            "2",
            "--seconds",
            "1",
            "--mib",
            "16",
            "--interval-ms",
            "250",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert lines[-1]["final"] is True and lines[-1]["unit"] == unit
    assert lines[-1]["rate"] > 0 and len(lines[-1]["tids"]) == 2
    assert len(lines) >= 4
