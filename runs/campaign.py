"""A campaign: a spec bound to a folder, a backend and its inputs (kernel, image, gem5).

``prepare_campaign`` is what ``campaign run`` does first: choose the backend, build the
kernel and image when the spec says "project" and they are missing, and write
campaign.json.  ``open_campaign`` is what every worker, ``status`` and ``resume`` do: read
it all back from the folder, so a Slurm task needs nothing but the folder's path.
"""

from __future__ import annotations

import os
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimcloud.file_digest import file_digest
from pimcloud.workloads.services import gem5_caveat

from .backends import FUNCTIONAL_NOTE, Checkpoints, Gem5Backend, QemuBackend
from .layout import DEFAULT_OUT, CampaignDir, default_checkpoint_root
from .spec import CampaignSpec, Run, SpecError, load_spec, parse_spec, resolve_spec_path

Log = Any  # Callable[[str], None]


class CampaignError(ValueError):
    """The campaign cannot start or go on: the message says what to do."""


@dataclass
class Campaign:
    dir: CampaignDir
    spec: CampaignSpec
    record: dict[str, Any]

    @property
    def backend_name(self) -> str:
        return str(self.record["backend"])

    @property
    def max_attempts(self) -> int:
        return self.spec.limits.retries + 1 + int(self.record.get("extra_attempts", 0))

    def runs(self) -> list[Run]:
        """The spec's runs, then the runs added later (max-load probes)."""
        runs = self.spec.runs()
        known = {run.run_id for run in runs}
        for point in self.record.get("extra_points", []):
            run = self.spec.run_at(point)
            if run.run_id not in known:
                runs.append(run)
                known.add(run.run_id)
        return runs

    def run(self, run_id: str) -> Run:
        for run in self.runs():
            if run.run_id == run_id:
                return run
        raise CampaignError(f"{self.dir.root}: no run {run_id!r} in this campaign")

    def add_points(self, points: list[dict[str, Any]]) -> None:
        extra = self.record.setdefault("extra_points", [])
        for point in points:
            if point not in extra:
                extra.append(point)
        self.dir.write_record(self.record)

    def grant_retries(self) -> int:
        """Give the runs that used up their attempts (a host-time limit each attempt met,
        say) a fresh set on top of those used; how many such runs there were."""
        from .status import campaign_status

        exhausted = [s for s in campaign_status(self).runs if s.state == "failed"]
        if exhausted:
            self.record["extra_attempts"] = max(s.attempts for s in exhausted)
            self.dir.write_record(self.record)
        return len(exhausted)

    def price_runs(self, seconds_per_run: float) -> None:
        """Record a run's host seconds as a better-informed plan prices it (a study's, by
        the service's measured CPU a request): the ETA of `status` and of the runner's
        progress lines then uses it instead of the generic speed table."""
        if self.record.get("estimate_per_run_s") != round(seconds_per_run, 1):
            self.record["estimate_per_run_s"] = round(seconds_per_run, 1)
            self.dir.write_record(self.record)

    def check_inputs(self) -> None:
        """Every run of a campaign uses the same kernel and image: refuse to go on when
        either file was rebuilt since the campaign started (its runs would mix two
        guests).  A campaign folder made before digests were recorded pins them now."""
        from pimcloud.guest.image import note_image_use

        now = input_digests_of(self.record["inputs"], self.dir.root / ".digests.json")
        pinned = self.record.get("input_sha256")
        if pinned is None:
            self.record["input_sha256"] = now
            self.dir.write_record(self.record)
            pinned = now
        changed = [name for name in sorted(pinned) if now.get(name) != pinned[name]]
        if changed:
            detail = "; ".join(
                f"{name} {self.record['inputs'][name]}: sha256 {pinned[name][:12]}... when "
                f"the campaign started, {(now.get(name) or 'missing')[:12]}... now"
                for name in changed)
            raise CampaignError(
                f"{self.dir.root}: the campaign's inputs changed ({detail}); its finished "
                "runs used the old ones, so new runs would mix two guests. Put the old "
                "files back, or start a new campaign with another --out folder")
        if self.record["inputs"].get("image"):
            note_image_use(Path(self.record["inputs"]["image"]))

    def backend(self) -> Gem5Backend | QemuBackend:
        self.check_inputs()
        inputs = self.record["inputs"]
        if self.backend_name == "gem5":
            return Gem5Backend(self.checkpoints(), progress_root=self.dir.progress)
        return QemuBackend(Path(inputs["kernel"]) if inputs.get("kernel") else None,
                           Path(inputs["image"]) if inputs.get("image") else None)

    def checkpoints(self) -> Checkpoints:
        inputs = self.record["inputs"]
        return Checkpoints(Path(self.record["checkpoint_root"]), Path(self.record["gem5"]),
                           self.record.get("gem5_version") or "", self.spec,
                           Path(inputs["kernel"]), Path(inputs["image"]))


def input_digests_of(inputs: dict[str, str | None], cache: Path) -> dict[str, str]:
    """sha256 of the campaign's kernel and image files (those it names and that exist)."""
    digests = {}
    for name in ("kernel", "image"):
        path = inputs.get(name)
        if path and Path(path).is_file():
            digests[name] = file_digest(Path(path), cache)
    return digests


def choose_backend(choice: str, log: Log, binary: str | None = None, counters: bool = False
                   ) -> tuple[str, Path | None, str | None, str | None]:
    """(backend, gem5 path, gem5 version, gem5 build: opt or fast): ``auto`` takes gem5
    when $GEM5 (or the spec's ``gem5.binary``) is usable (and holds PimCounters when the
    spec asks for them)."""
    from pimcloud.gem5_runner import FAST_BUILD_NOTE, Gem5Missing, require_usable_gem5

    if choice == "qemu":
        return "qemu", None, None, None
    if choice == "auto" and not (binary or os.environ.get("GEM5")):
        return "qemu", None, None, None
    try:
        info = require_usable_gem5(binary)
        if counters and "PimCounters" not in info.present:
            raise Gem5Missing(f"{info.path} lacks PimCounters, which [gem5] counters = true "
                              "needs: build gem5 with this checkout's scons-extra (README, "
                              "'What you need')")
    except Gem5Missing as error:
        if choice == "gem5":
            raise CampaignError(f"backend gem5: {error}") from None
        log(f"gem5 is not usable ({error}); using the QEMU functional backend")
        return "qemu", None, None, None
    if not info.assertions:
        log(f"note: {info.path} is {FAST_BUILD_NOTE}")
    return "gem5", info.path, info.version, info.build


def resolve_inputs(spec: CampaignSpec, backend: str, log: Log) -> dict[str, str | None]:
    """Kernel and image paths, building the project's own when the spec says "project"."""
    inputs: dict[str, str | None] = {}
    if spec.kernel == "project":
        from pimcloud.guest.kernel import build_kernel

        artifacts = build_kernel(log=log)
        inputs["kernel"] = str(artifacts.vmlinux if backend == "gem5" else artifacts.bzimage)
    else:
        inputs["kernel"] = spec.kernel
    if spec.image == "project":
        from pimcloud.guest.image import build_image

        inputs["image"] = str(build_image(log=log).path)
    else:
        from pimcloud.guest.image import note_image_use

        inputs["image"] = spec.image
        note_image_use(Path(spec.image))
    return inputs


def prepare_campaign(spec_path: str | Path, out: Path | None = None,
                     backend: str | None = None, checkpoint_root: Path | None = None,
                     log: Log = print) -> Campaign:
    """Create the campaign folder (or check that it holds this spec) and its inputs."""
    path = resolve_spec_path(spec_path)
    spec = load_spec(path)
    root = (out or DEFAULT_OUT / spec.name).resolve()
    folder = CampaignDir(root)
    if folder.record_path.is_file():
        record = folder.read_record()
        if record["spec_hash"] != spec.spec_hash:
            raise CampaignError(
                f"{root} holds campaign {record['name']!r} of another spec (hash "
                f"{record['spec_hash']}, this one {spec.spec_hash}): something other than "
                "the axes, limits or executor changed; give a new --out folder")
        if backend and backend != "auto" and backend != record["backend"]:
            raise CampaignError(f"{root} was started with backend {record['backend']}; "
                                f"give a new --out folder for {backend}")
        record["spec_text"] = path.read_text(encoding="utf-8")  # new axes, limits
        record["spec_source"] = str(path.resolve())
        folder.write_record(record)
        campaign = Campaign(folder, spec, record)
        campaign.check_inputs()
        return campaign
    chosen, gem5, version, build = choose_backend(backend or spec.backend, log,
                                                  spec.gem5.binary, spec.gem5.counters)
    if chosen == "gem5":
        if not spec.gem5.counters and any("migration" in run.scenario.dynamic
                                          for run in spec.runs()):
            raise CampaignError(f"{path}: dynamic migration reads the board's page-access "
                                "counters, and this campaign runs in gem5 without them: add "
                                "[gem5] counters = true")
        for app in sorted({app for run in spec.runs() for app in run.scenario.apps}):
            caveat = gem5_caveat(app)
            if caveat:
                log(f"warning: app {app}: {caveat}")
    inputs = resolve_inputs(spec, chosen, log)
    root.mkdir(parents=True, exist_ok=True)
    record = {
        "name": spec.name,
        "spec_hash": spec.spec_hash,
        "spec_source": str(path.resolve()),
        "spec_text": path.read_text(encoding="utf-8"),
        "backend": chosen,
        "timing": "architectural (gem5)" if chosen == "gem5" else FUNCTIONAL_NOTE,
        "gem5": str(gem5) if gem5 else None,
        "gem5_version": version,
        "gem5_build": build,
        "inputs": inputs,
        "input_sha256": input_digests_of(inputs, root / ".digests.json"),
        "checkpoint_root": str((checkpoint_root or default_checkpoint_root()).resolve()),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "extra_points": [],
    }
    folder.write_record(record)
    return Campaign(folder, spec, record)


def open_campaign(root: Path, *, to_run: bool = True) -> Campaign:
    """A campaign folder. ``to_run=False`` to read one (its status, its results): its
    kernel and image need not exist any more (an image cache keeps only the newest)."""
    folder = CampaignDir(Path(root).resolve())
    record = folder.read_record()
    source = record["spec_source"]
    try:
        raw = tomllib.loads(record["spec_text"])
    except tomllib.TOMLDecodeError as error:
        raise SpecError(source, "(file)", str(error), "fix the TOML syntax") from None
    spec = parse_spec(raw, source=source, default_name=Path(source).stem,
                      base_dir=Path(source).parent, inputs_must_exist=to_run)
    return Campaign(folder, spec, record)
