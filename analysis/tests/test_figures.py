from __future__ import annotations

from pathlib import Path


def test_timeline_gives_each_app_one_colour_in_both_panels() -> None:
    import pandas as pd
    from pimcloud.analysis.figures import timeline

    windows = pd.DataFrame({"app": ["a", "a", "b", "b"], "t_s": [0.0, 0.1, 0.0, 0.1],
                            "p99_ns": [1e6, 2e6, 3e6, 4e6]})
    # The agent's start event has no app; it must not shift the colours.
    cores = pd.DataFrame({"app": ["", "a", "b"], "t_s": [0.0, 0.0, 0.05],
                          "cores": [0, 4, 8]})
    figure = timeline(windows, cores)
    top, bottom = figure.axes[:2]
    top_colours = {line.get_label(): line.get_color() for line in top.get_lines()
                   if not line.get_label().startswith("_")}
    bottom_colours = {line.get_label(): line.get_color() for line in bottom.get_lines()
                      if not line.get_label().startswith("_")}
    assert set(bottom_colours) == {"a", "b"}
    assert top_colours == bottom_colours


def test_tails_over_time_draws_each_run_of_a_variant_as_its_own_line() -> None:
    import pandas as pd
    from pimcloud.analysis.figures import tails_over_time

    windows = pd.DataFrame({"run_id": ["r1", "r1", "r2", "r2", "r3"],
                            "label": ["balm", "balm", "balm", "balm", "mba"],
                            "app": "kv", "t_s": [0.0, 0.1, 0.0, 0.1, 0.0],
                            "p99_ns": [1e6, 2e6, 3e6, 4e6, 5e6]})
    (ax,) = tails_over_time(windows, {"kv": 1e6}).axes
    lines = [line for line in ax.get_lines() if line.get_linestyle() != "--"]
    assert [list(line.get_ydata()) for line in lines] == [[1, 2], [3, 4], [5]]
    assert lines[0].get_color() == lines[1].get_color() != lines[2].get_color()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["balm", "mba"]


def test_timeline_marks_the_scenarios_events_on_both_panels(tmp_path: Path) -> None:
    import json

    import pandas as pd
    from pimcloud.analysis.campaign import load_campaign
    from pimcloud.analysis.figures import timeline

    run = tmp_path / "r1"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "r1"}))
    (run / "events.jsonl").write_text(
        '{"at_s":0.3,"kind":"kill","target":"imgdnn","uptime_s":12.5}\n'
        '{"at_s":0.1,"kind":"fill","target":"stack2","uptime_s":12.3}\n')
    events = load_campaign(tmp_path).events
    assert events[["at_s", "kind", "target"]].values.tolist() == [
        [0.1, "fill", "stack2"], [0.3, "kill", "imgdnn"]]
    windows = pd.DataFrame({"app": ["a", "a"], "t_s": [0.0, 0.5], "p99_ns": [1e6, 2e6]})
    figure = timeline(windows, None, events=events)
    top, bottom = figure.axes[:2]
    for ax in (top, bottom):
        xs = sorted(line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == ":")
        assert xs == [0.1, 0.3]
    assert {t.get_text() for t in top.texts} == {"fill stack2", "kill imgdnn"}


def test_events_sit_on_the_requests_clock_by_the_uptime_they_happened() -> None:
    import pandas as pd
    from pimcloud.analysis.metrics import event_times

    events = pd.DataFrame({"at_s": [3.0, 0.5], "kind": ["kill", "arrive"],
                           "target": ["imgdnn", "kv"], "uptime_s": [18.68, None]})
    placed = event_times(events, origin_ns=15.5e9)
    assert placed["t_s"].round(6).tolist() == [3.18, 0.5]  # measured; else as scheduled
    assert event_times(events, None)["t_s"].tolist() == [3.0, 0.5]


def test_memory_queue_bars_put_each_stack_of_each_placement_in_its_apps_panels() -> None:
    import pandas as pd
    from pimcloud.analysis.figures import memory_queue_bars

    frame = pd.DataFrame({"app": "kv", "policy": ["il", "il", "ft", "ft"],
                          "memory": ["stack0", "stack1", "stack0", "stack1"],
                          "queue_ns": [30.0, 25.0, 65.0, 5.0],
                          "read_gbps": [2.0, 1.5, 3.0, 0.1]})
    wait, reads = memory_queue_bars(frame).axes
    # Bars by memory, then by policy in Fig. 3's order (ft before il).
    assert [bar.get_height() for bar in wait.patches] == [65.0, 30.0, 5.0, 25.0]
    assert [bar.get_height() for bar in reads.patches] == [3.0, 2.0, 0.1, 1.5]
    assert [t.get_text() for t in wait.get_xticklabels()] == ["ft", "il"]


def test_fig4_bars_are_in_fig3s_order_per_app() -> None:
    import pandas as pd
    from pimcloud.analysis.characterisation import _page_type_figure

    cells = [("search", "cc", "migration"), ("kvstore", "il", "migration"),
             ("kvstore", "ft", "migration"), ("kvstore", "cc", "migration"),
             ("search", "ft", "none"), ("search", "ft", "migration")]
    frame = pd.DataFrame([
        {"arch": "arch9", "app": app, "placement": placement, "dynamic": dynamic,
         "page_type": kind, "share": 0.5}
        for app, placement, dynamic in cells for kind in ("shared ro", "private rw")])
    figure = _page_type_figure(frame)
    labels = [text.get_text() for text in figure.axes[0].get_xticklabels()]
    assert labels == ["kvstore arch9 ft+mig", "kvstore arch9 cc+mig", "kvstore arch9 il+mig",
                      "search arch9 ft", "search arch9 ft+mig", "search arch9 cc+mig"]
    heights = [patch.get_height() for patch in figure.axes[0].patches]
    assert heights == [50.0] * 12
