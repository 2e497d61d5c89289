"""The six services inside the guest image: QEMU boots the project kernel and root image
(engines from disk-images/packages.txt, data sets from workloads/image-hooks), runs each
service at low load from /opt/pimcloud, and the answers are checked as natively."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from pimcloud.guest import qemu
from pimcloud.guest.image import build_image
from pimcloud.guest.kernel import build_kernel

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which(qemu.QEMU) is None, reason="needs qemu-system-x86"),
]

# service -> harness arguments: low load, small generated tables (TCG is slow), every
# answer checked. Data sets come from the image's default /opt/pimcloud/workload-data.
RUNS = {
    "kvstore": "--rps 50 --seconds 2 --warmup 10 --opt keys=20000",
    "oltp": "--rps 20 --seconds 2 --warmup 10 --opt customers=100 --opt items=2000",
    "imgdnn": "--rps 50 --seconds 2 --warmup 10",
    "search": "--rps 20 --seconds 2 --warmup 10",
    "translate": "--rps 5 --seconds 2 --warmup 2",
    "speech": "--rps 1 --requests 4 --warmup 0 --opt pick=cycle --opt decoders=2",
}
SPANISH = {"el", "la", "los", "las", "un", "una", "de", "en", "es", "y", "que", "del", "al",
           "no", "se", "su", "por", "para", "con", "lo", "mi", "muy", "está", "hay"}


def _scenario(folder: Path) -> Path:
    folder.mkdir()
    lines = ['R="$PIMCLOUD_RESULTS"', "status=0",
             "ls -d /opt/pimcloud/workload-data/* > \"$R/data-sets.txt\""]
    for name, args in RUNS.items():
        lines += [f'mkdir -p "$R/{name}"',
                  'start=$(cut -d" " -f1 /proc/uptime)',
                  f'pimcloud-{name} {args} --threads 2 --check-every 1 --log-answers '
                  f'--out "$R/{name}" > "$R/{name}.log" 2>&1',
                  f'code=$?; echo "service {name} exit $code from $start to '
                  '$(cut -d" " -f1 /proc/uptime) s"',
                  '[ $code -eq 0 ] || status=1']
    lines.append("exit $status")
    (folder / "run.sh").write_text("\n".join(lines) + "\n")
    return folder


def test_each_service_answers_correctly_inside_the_guest(tmp_path: Path) -> None:
    image = build_image().path
    result = qemu.run_scenario("arch1", _scenario(tmp_path / "scenario"),
                               kernel=build_kernel().bzimage, image=image,
                               out=tmp_path / "run", timeout=2400)
    results = tmp_path / "run" / "results"
    assert result.cause == "exit", (result.problems, result.console_tail)
    console = (tmp_path / "run" / "console.log").read_text(errors="replace")
    failed = {m[0]: (results / f"{m[0]}.log").read_text()[-1500:]
              for m in re.findall(r"service (\w+) exit ([1-9]\d*)", console)}
    assert not failed and result.scenario_exit == 0, failed or result.console_tail
    summaries = {n: json.loads((results / n / "summary.json").read_text()) for n in RUNS}
    for name, s in summaries.items():
        assert s["failed"] == 0 and s["requests"] > 0, (name, s)
        assert s["checked"] == s["generated"], (name, s)
        assert (results / name / "lats.bin").stat().st_size == 24 * s["requests"], name
        print(f"{name}: {s['requests']} requests, service p50 "
              f"{s['service_p50_ns'] / 1e6:.1f} ms in the guest; {json.dumps(s['service'])}")
    assert summaries["kvstore"]["service"]["consistent"] is True
    assert summaries["oltp"]["service"]["consistent"] is True
    assert summaries["imgdnn"]["service"]["accuracy"] >= 0.80
    speech = summaries["speech"]["service"]
    assert speech["lm"] == "grammar" and speech["word_error_rate"] < 0.2, speech
    answers = (results / "translate" / "answers.tsv").read_text().splitlines()[1:]
    spanish = [bool(SPANISH & set(re.findall(r"\w+", line.split("\t")[3].lower())))
               for line in answers]
    assert answers and sum(spanish) >= 0.8 * len(answers), answers[:5]
